//! The transcript: every frame of a case, in order, with direction, connection and a monotonic
//! timestamp. It is the single source of truth for checks and reports (docs/architecture.md §3).
//!
//! Frames are recorded as raw bytes first and parsed second, so a frame that is not JSON (or not
//! UTF-8) is still recorded verbatim and can be blamed precisely.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::control::{Command, Event, Message};
use crate::note::{FaultKind, Note};

/// Who sent a frame to whom.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Direction {
    /// ACP wire plane: the client under test wrote this to the agent's stdin.
    #[serde(rename = "c2a")]
    ClientToAgent,
    /// ACP wire plane: the (fake) agent wrote this to its stdout.
    #[serde(rename = "a2c")]
    AgentToClient,
    /// Control plane: the harness (playing the user) wrote this to the adapter.
    #[serde(rename = "h2c")]
    HarnessToAdapter,
    /// Control plane: the client's adapter reported this to the harness.
    #[serde(rename = "c2h")]
    AdapterToHarness,
    /// A note by the harness itself (step timeout, fault injected, signal sent, process exit).
    #[serde(rename = "note")]
    Note,
    /// Control plane, observed: an event a client profile's observer derived from what a client
    /// without an adapter exposes itself (its stdout, its terminal, its exit status), in the
    /// shape of an adapter event plus an `observed` field naming the evidence.
    #[serde(rename = "o2h")]
    ObserverToHarness,
}

impl Direction {
    /// Arrow used in numbered wire logs.
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::ClientToAgent => "client → agent",
            Direction::AgentToClient => "agent → client",
            Direction::HarnessToAdapter => "harness → adapter",
            Direction::AdapterToHarness => "adapter → harness",
            Direction::Note => "harness note",
            Direction::ObserverToHarness => "observer → harness",
        }
    }

    /// True for the two ACP wire-plane directions.
    pub fn is_wire(self) -> bool {
        matches!(self, Direction::ClientToAgent | Direction::AgentToClient)
    }
}

/// One recorded frame.
///
/// A frame is kept as its text; its JSON is parsed when first asked for ([`Entry::json`]) and
/// kept from then on. Recording a frame costs a copy of its bytes, and a reader that needs a few
/// facts of many frames (the judge's wire model) can read them from the text without keeping a
/// tree of every frame ([`Entry::parse_json`]; docs/performance.md, "Frames per scenario").
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "EntryLine")]
pub struct Entry {
    /// Position in the transcript, starting at 0. Failure messages cite frames by this index.
    pub index: usize,
    /// Microseconds since the case started (monotonic clock).
    pub at_us: u64,
    /// Agent connection id (1 = first connection the client opened); 0 for control frames and
    /// notes.
    pub conn: u32,
    pub direction: Direction,
    /// The frame as it travelled, without its trailing newline (lossy UTF-8 if it was not UTF-8).
    pub raw: String,
    /// Set when the raw bytes were not valid UTF-8 (rule #1).
    pub invalid_utf8: bool,
    /// Set on a frame the harness broke on purpose (a scenario's `fault` step): a check must
    /// not blame the client for it, nor call it the harness's schema bug. Left out when none.
    pub fault: Option<FaultKind>,
    /// The frame parsed as JSON: empty until [`Entry::json`] is first called, or set when the
    /// entry was built from a parsed value (a note, a transcript file's `json`).
    /// Boxed: most entries of a long transcript never keep a parse, and an unboxed `Value`
    /// would make every entry 72 bytes larger.
    parsed_json: OnceLock<Option<Box<Value>>>,
    /// The control message this entry holds, parsed once on first use ([`Entry::control`]), so
    /// that a reader (the judge) can hand out references into it that live as long as the entry.
    pub parsed_control: ParsedControl,
}

/// The cache behind [`Entry::control`]: empty until first asked; never part of the entry's
/// value (two entries are equal whether or not either was parsed yet).
#[derive(Debug, Clone, Default)]
pub struct ParsedControl(OnceLock<Option<Box<Message>>>);

impl ParsedControl {
    /// A cache already holding `message`: for an entry built from a typed message, so the
    /// reader does not parse back what the writer had.
    pub fn parsed(message: Message) -> Self {
        ParsedControl(OnceLock::from(Some(Box::new(message))))
    }
}

/// An entry as a transcript file's line holds it: the text and, when it is JSON, the parse.
#[derive(Serialize, Deserialize)]
struct EntryLine<'a> {
    #[serde(rename = "i")]
    index: usize,
    #[serde(rename = "t_us")]
    at_us: u64,
    conn: u32,
    #[serde(rename = "dir")]
    direction: Direction,
    raw: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    json: Option<Cow<'a, Value>>,
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    invalid_utf8: bool,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    fault: Option<FaultKind>,
}

impl Serialize for Entry {
    /// Writes the kept parse if there is one, else parses the text for the moment.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let json = self.parse_json();
        EntryLine {
            index: self.index,
            at_us: self.at_us,
            conn: self.conn,
            direction: self.direction,
            raw: Cow::Borrowed(&self.raw),
            json,
            invalid_utf8: self.invalid_utf8,
            fault: self.fault,
        }
        .serialize(serializer)
    }
}

impl From<EntryLine<'_>> for Entry {
    /// A line's `json` is kept as it is (a hand-edited transcript may disagree with its `raw`,
    /// and its `json` is what a reader of the file sees); without one, `raw` is parsed on demand.
    fn from(line: EntryLine<'_>) -> Self {
        let mut entry = Entry::text(
            line.index,
            line.at_us,
            line.conn,
            line.direction,
            line.raw.into_owned(),
            line.invalid_utf8,
        );
        entry.fault = line.fault;
        if let Some(json) = line.json {
            entry.parsed_json = OnceLock::from(Some(Box::new(json.into_owned())));
        }
        entry
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
            && self.at_us == other.at_us
            && self.conn == other.conn
            && self.direction == other.direction
            && self.raw == other.raw
            && self.invalid_utf8 == other.invalid_utf8
            && self.fault == other.fault
            && self.json() == other.json()
    }
}

impl Entry {
    /// An entry holding a frame's text (its JSON parsed on demand).
    pub fn text(
        index: usize,
        at_us: u64,
        conn: u32,
        direction: Direction,
        raw: String,
        invalid_utf8: bool,
    ) -> Self {
        Entry {
            index,
            at_us,
            conn,
            direction,
            raw,
            invalid_utf8,
            fault: None,
            parsed_json: OnceLock::new(),
            parsed_control: ParsedControl::default(),
        }
    }

    /// An entry built from a parsed value, whatever its `raw` (a note the harness wrote, a
    /// synthetic transcript): [`Entry::json`] is `json`.
    pub fn parsed(
        index: usize,
        at_us: u64,
        conn: u32,
        direction: Direction,
        raw: String,
        json: Value,
    ) -> Self {
        let mut entry = Entry::text(index, at_us, conn, direction, raw, false);
        entry.parsed_json = OnceLock::from(Some(Box::new(json)));
        entry
    }

    /// The frame parsed as JSON, or `None` if it is not JSON (or not UTF-8). Parsed on the first
    /// call and kept with the entry: for frames read many times, or few. A reader of every frame
    /// of a large transcript that needs only facts of it reads [`Entry::parse_json`] or the text.
    pub fn json(&self) -> Option<&Value> {
        self.parsed_json
            .get_or_init(|| parse_text(&self.raw, self.invalid_utf8).map(Box::new))
            .as_deref()
    }

    /// The frame parsed as JSON without keeping it: the kept parse if there is one, else a
    /// parse for the moment (not shrunk: it is dropped soon).
    pub fn parse_json(&self) -> Option<Cow<'_, Value>> {
        match self.parsed_json.get() {
            Some(json) => json.as_deref().map(Cow::Borrowed),
            None if self.invalid_utf8 => None,
            None => serde_json::from_str(&self.raw).ok().map(Cow::Owned),
        }
    }

    /// True once the frame's JSON is kept with the entry (parsed, or given when built).
    pub fn json_is_kept(&self) -> bool {
        self.parsed_json.get().is_some()
    }

    /// Replaces the frame's JSON (a synthetic transcript filling in what a finding shows).
    pub fn set_json(&mut self, json: Option<Value>) {
        self.parsed_json = OnceLock::from(json.map(Box::new));
    }

    /// `method` of a JSON-RPC request/notification, or of nothing.
    pub fn method(&self) -> Option<&str> {
        self.json()?.get("method")?.as_str()
    }

    /// The harness note this entry holds (`None` for frames, and for a note this vocabulary
    /// cannot read).
    pub fn note(&self) -> Option<Note> {
        if self.direction != Direction::Note {
            return None;
        }
        Note::deserialize(self.json()?).ok()
    }

    /// True for the control plane's directions: commands (`h2c`), adapter events (`c2h`) and
    /// observed events (`o2h`).
    pub fn is_control(&self) -> bool {
        matches!(
            self.direction,
            Direction::HarnessToAdapter
                | Direction::AdapterToHarness
                | Direction::ObserverToHarness
        )
    }

    /// The control message this entry holds, by its direction: a command for `h2c`, an event
    /// for `c2h` and `o2h`. `None` for other directions and for a line that is not a valid
    /// message of its direction. Parsed once; later calls return the same reference.
    pub fn control(&self) -> Option<&Message> {
        self.parsed_control
            .0
            .get_or_init(|| {
                if !self.is_control() {
                    return None;
                }
                // Read from the text when it can be (no tree is kept); a text the typed reading
                // refuses (e.g. a repeated key, which a tree resolves) is read from its tree.
                let from_text = match self.parsed_json.get() {
                    None if !self.invalid_utf8 => match self.direction {
                        Direction::HarnessToAdapter => {
                            serde_json::from_str(&self.raw).ok().map(Message::Command)
                        }
                        _ => serde_json::from_str(&self.raw).ok().map(Message::Event),
                    },
                    _ => None,
                };
                from_text
                    .or_else(|| self.control_from(self.parse_json()?.as_ref()))
                    .map(Box::new)
            })
            .as_deref()
    }

    /// The control message of this entry's direction that `json` reads as, if any.
    fn control_from(&self, json: &Value) -> Option<Message> {
        Some(match self.direction {
            Direction::HarnessToAdapter => Message::Command(Command::deserialize(json).ok()?),
            _ => Message::Event(Event::deserialize(json).ok()?),
        })
    }

    /// The control-plane event this entry holds: an adapter's (`c2h`) or an observer's (`o2h`).
    /// `None` for other directions and for a line that is not a valid event.
    pub fn event(&self) -> Option<&Event> {
        match self.control()? {
            Message::Event(event) => Some(event),
            Message::Command(_) => None,
        }
    }

    /// The control-plane command this entry holds (`h2c`), if it is a valid one.
    pub fn command(&self) -> Option<&Command> {
        match self.control()? {
            Message::Command(command) => Some(command),
            Message::Event(_) => None,
        }
    }
}

/// What [`Recorder::note`] takes: a [`Note`], owned or borrowed.
pub trait IntoNote {
    fn into_note_json(self) -> Value;
}

impl IntoNote for &Note {
    fn into_note_json(self) -> Value {
        self.to_json()
    }
}

impl IntoNote for Note {
    fn into_note_json(self) -> Value {
        self.to_json()
    }
}

#[derive(Debug)]
struct Inner {
    started: Instant,
    entries: Vec<Entry>,
    /// Entries moved out by [`Recorder::take`]; indices go on from there.
    taken: usize,
}

/// A shared, append-only transcript. Cloning shares the same transcript.
#[derive(Debug, Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

/// A frame's text parsed as JSON (never for invalid UTF-8), every object and array given
/// exactly its entries' room: a parse kept with its entry lives as long as the transcript.
fn parse_text(raw: &str, invalid_utf8: bool) -> Option<Value> {
    if invalid_utf8 {
        return None;
    }
    let mut json = serde_json::from_str(raw).ok()?;
    shrink_to_fit(&mut json);
    Some(json)
}

/// A received frame's text (lossy for invalid UTF-8) and whether it was invalid UTF-8.
fn decode_text(raw: &[u8]) -> (String, bool) {
    match std::str::from_utf8(raw) {
        Ok(s) => (s.to_owned(), false),
        Err(_) => (String::from_utf8_lossy(raw).into_owned(), true),
    }
}

/// Gives every object and array of `value` exactly the room its entries take. A parsed object
/// grows its room in steps (a 4-key object gets room for 7 entries of 112 bytes each): about a
/// quarter of a small frame's tree is room nothing uses (docs/performance.md, "Frames per
/// scenario").
fn shrink_to_fit(value: &mut Value) {
    match value {
        Value::Array(items) => {
            items.shrink_to_fit();
            items.iter_mut().for_each(shrink_to_fit);
        }
        Value::Object(map) => {
            let entries = std::mem::take(map);
            let mut exact = serde_json::Map::with_capacity(entries.len());
            for (key, mut item) in entries {
                shrink_to_fit(&mut item);
                exact.insert(key, item);
            }
            *map = exact;
        }
        _ => {}
    }
}

impl Recorder {
    pub fn new() -> Self {
        Recorder {
            inner: Arc::new(Mutex::new(Inner {
                started: Instant::now(),
                entries: Vec::new(),
                taken: 0,
            })),
        }
    }

    /// Records one frame (raw bytes without the newline) and returns its index. The frame is
    /// kept as text; its JSON is parsed when a reader asks ([`Entry::json`]).
    pub fn record(&self, conn: u32, direction: Direction, raw: &[u8]) -> usize {
        let (raw, invalid_utf8) = decode_text(raw);
        self.push(|index, at_us| Entry::text(index, at_us, conn, direction, raw, invalid_utf8))
    }

    /// Records a frame the harness altered on purpose (fault injection), marked with its fault.
    pub fn record_fault(
        &self,
        conn: u32,
        direction: Direction,
        raw: &[u8],
        fault: FaultKind,
    ) -> usize {
        let (raw, invalid_utf8) = decode_text(raw);
        self.push(|index, at_us| {
            let mut entry = Entry::text(index, at_us, conn, direction, raw, invalid_utf8);
            entry.fault = Some(fault);
            entry
        })
    }

    /// Records a harness note (kept parsed: notes are few, and read by every check that
    /// looks for one).
    pub fn note(&self, note: impl IntoNote) -> usize {
        let note = note.into_note_json();
        let raw = note.to_string();
        self.push(|index, at_us| Entry::parsed(index, at_us, 0, Direction::Note, raw, note))
    }

    /// Records a control-plane command as the harness writes it.
    pub fn command(&self, command: &Command) -> usize {
        self.record(0, Direction::HarnessToAdapter, command.to_line().as_bytes())
    }

    /// Appends the entry `build` makes of the next index and the time now.
    fn push(&self, build: impl FnOnce(usize, u64) -> Entry) -> usize {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let index = inner.taken + inner.entries.len();
        let at_us = inner.started.elapsed().as_micros() as u64;
        inner.entries.push(build(index, at_us));
        index
    }

    /// Number of entries recorded so far.
    pub fn len(&self) -> usize {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        inner.taken + inner.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of every entry recorded so far.
    pub fn snapshot(&self) -> Vec<Entry> {
        self.inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .clone()
    }

    /// Calls `f` on every entry from index `from` on, without copying the transcript (entries
    /// already moved out by [`Self::take`] are skipped). Returns the index after the last one.
    /// The transcript is locked meanwhile: `f` must not record.
    pub fn visit_from(&self, from: usize, mut f: impl FnMut(&Entry)) -> usize {
        let inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let start = from.saturating_sub(inner.taken).min(inner.entries.len());
        for entry in &inner.entries[start..] {
            f(entry);
        }
        inner.taken + inner.entries.len()
    }

    /// Moves out every entry recorded since the last `take`, without copying: for the end of a
    /// case, when the transcript is complete (a copy of a 10⁵-frame transcript is about 300 MB;
    /// docs/performance.md). Anything recorded later keeps counting indices on.
    pub fn take(&self) -> Vec<Entry> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let entries = std::mem::take(&mut inner.entries);
        inner.taken += entries.len();
        entries
    }

    /// Writes the transcript as JSON Lines (one [`Entry`] per line).
    pub fn write_jsonl(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        for entry in self.snapshot() {
            serde_json::to_writer(&mut *out, &entry)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_raw_bytes_and_parses_json_when_possible() {
        let rec = Recorder::new();
        let a = rec.record(
            1,
            Direction::ClientToAgent,
            br#"{"jsonrpc":"2.0","method":"x"}"#,
        );
        let b = rec.record(1, Direction::ClientToAgent, b"not json");
        let c = rec.record(1, Direction::ClientToAgent, &[0xff, 0xfe]);
        let entries = rec.snapshot();
        assert_eq!((a, b, c), (0, 1, 2));
        assert_eq!(entries[0].method(), Some("x"));
        assert!(entries[1].json().is_none());
        assert!(entries[2].json().is_none());
        assert!(entries[2].invalid_utf8);
        assert!(entries[0].at_us <= entries[2].at_us);
    }

    #[test]
    fn a_frame_is_kept_parsed_with_its_keys_in_order() {
        let raw = br#"{"b":1,"a":{"d":[1,{"z":0,"y":[]}],"c":null,"e":"x","f":2}}"#;
        let rec = Recorder::new();
        rec.record(1, Direction::AgentToClient, raw);
        let entry = rec.take().remove(0);
        assert_eq!(entry.raw.as_bytes(), raw);
        assert!(!entry.invalid_utf8);
        assert!(!entry.json_is_kept(), "recorded as text");
        assert_eq!(entry.parse_json().as_deref(), entry.json());
        assert!(entry.json_is_kept(), "kept once asked for");
        let json = entry.json().expect("JSON");
        assert_eq!(json.to_string().as_bytes(), raw, "same keys, same order");
        assert_eq!(json, &serde_json::from_slice::<Value>(raw).unwrap());
    }

    #[test]
    fn take_moves_the_entries_out_and_indices_go_on() {
        let rec = Recorder::new();
        rec.record(1, Direction::ClientToAgent, b"{}");
        let taken = rec.take();
        assert_eq!(taken.len(), 1);
        assert!(rec.snapshot().is_empty());
        assert_eq!(rec.len(), 1);
        assert_eq!(rec.record(1, Direction::ClientToAgent, b"{}"), 1);
    }

    #[test]
    fn jsonl_round_trips() {
        let rec = Recorder::new();
        rec.record(2, Direction::AgentToClient, br#"{"id":1,"result":null}"#);
        rec.note(&Note::SettleTimeout { waited_ms: 5 });
        rec.record_fault(1, Direction::AgentToClient, b"{}", FaultKind::Duplicate);
        let mut buf = Vec::new();
        rec.write_jsonl(&mut buf).unwrap();
        let back: Vec<Entry> = String::from_utf8(buf)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(back, rec.snapshot());
        assert_eq!(back[1].note(), Some(Note::SettleTimeout { waited_ms: 5 }));
        assert_eq!(back[2].fault, Some(FaultKind::Duplicate));
        assert!(!back[0].raw.contains("fault") && !lines_of(&back[0]).contains("fault"));
    }

    fn lines_of(entry: &Entry) -> String {
        serde_json::to_string(entry).unwrap()
    }

    #[test]
    fn typed_accessors_read_only_their_own_direction() {
        let rec = Recorder::new();
        let line = br#"{"type":"turn","sessionId":"s","state":"completed"}"#;
        rec.record(0, Direction::AdapterToHarness, line);
        rec.record(0, Direction::ClientToAgent, line);
        rec.command(&Command::Shutdown { seq: 4 });
        rec.record(
            0,
            Direction::AdapterToHarness,
            br#"{"type":"turn","sessionId":"s","state":"exploded"}"#,
        );
        let entries = rec.snapshot();
        assert!(matches!(entries[0].event(), Some(Event::Turn(_))));
        assert_eq!(entries[1].event(), None);
        assert_eq!(entries[2].command(), Some(&Command::Shutdown { seq: 4 }));
        assert_eq!(entries[2].raw, r#"{"type":"shutdown","seq":4}"#);
        assert_eq!(
            entries[3].event(),
            None,
            "an unknown turn state is not an event"
        );
        assert_eq!(entries[0].note(), None);
    }
}
