//! Hand-built cases for the checks' unit tests.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;

use acp_vocab::note::{FaultKind, Note};
use acp_vocab::transcript::{Direction, Recorder};
use serde_json::{Value, json};

use super::{Check, Finding, Grade};
use crate::record::{CaseMeta, CaseRecord, RunEnd};

pub const WS: &str = "/tmp/case/work";
pub const SID: &str = "ses_1";

/// A transcript under construction plus the non-frame facts of the run.
pub struct Case {
    pub rec: Recorder,
    pub control_plane: bool,
    pub end: RunEnd,
    pub files_after: BTreeMap<PathBuf, Option<Vec<u8>>>,
    /// Symlinks in the case directory at the end (`CaseRecord::symlinks`).
    pub symlinks: BTreeMap<PathBuf, PathBuf>,
    /// The client's stderr tail (`CaseRecord::stderr_tail`).
    pub stderr_tail: String,
    /// What the adapter's `hello` supports, or a wire-only profile's `choose`
    /// (`CaseRecord::control_supports`).
    pub control_supports: Vec<String>,
    /// Set by [`Case::fault_next`]: the fault and how many more agent frames carry it.
    faulted: Cell<Option<(FaultKind, usize)>>,
}

impl Default for Case {
    fn default() -> Self {
        Self::new()
    }
}

impl Case {
    pub fn new() -> Self {
        Case {
            rec: Recorder::new(),
            control_plane: true,
            end: RunEnd::Completed,
            files_after: BTreeMap::new(),
            symlinks: BTreeMap::new(),
            stderr_tail: "last words".into(),
            control_supports: ["new_session", "prompt", "choose", "cancel"]
                .map(String::from)
                .to_vec(),
            faulted: Cell::new(None),
        }
    }

    /// A client without an adapter; `control_supports` stays empty unless a test gives it the
    /// `choose` of profile inputs that answer the client's prompt.
    pub fn wire_only() -> Self {
        let mut c = Self::new();
        c.control_plane = false;
        c.control_supports = Vec::new();
        c
    }

    pub fn c2a(&self, v: Value) -> usize {
        self.rec
            .record(1, Direction::ClientToAgent, v.to_string().as_bytes())
    }

    pub fn a2c(&self, v: Value) -> usize {
        self.a2c_raw(v.to_string().as_bytes())
    }

    /// An agent frame as bytes; marked with a fault while [`Case::fault_next`] says so.
    pub fn a2c_raw(&self, raw: &[u8]) -> usize {
        match self.faulted.get() {
            Some((kind, n)) => {
                self.faulted.set((n > 1).then_some((kind, n - 1)));
                self.rec
                    .record_fault(1, Direction::AgentToClient, raw, kind)
            }
            None => self.rec.record(1, Direction::AgentToClient, raw),
        }
    }

    /// The next `frames` agent frames are ones the harness broke on purpose: recorded as the
    /// engine records a `fault` step (its note, then each frame marked with the fault).
    pub fn fault_next(&self, kind: FaultKind, frames: usize) {
        self.rec.note(&Note::Fault {
            kind,
            step: Some("1".into()),
            conn: None,
        });
        self.faulted.set((frames > 0).then_some((kind, frames)));
    }

    pub fn c2a_raw(&self, raw: &[u8]) -> usize {
        self.rec.record(1, Direction::ClientToAgent, raw)
    }

    /// Adapter event (client → harness).
    pub fn ev(&self, v: Value) -> usize {
        self.rec
            .record(0, Direction::AdapterToHarness, v.to_string().as_bytes())
    }

    /// Harness command (harness → adapter).
    pub fn cmd(&self, v: Value) -> usize {
        self.rec
            .record(0, Direction::HarnessToAdapter, v.to_string().as_bytes())
    }

    pub fn note(&self, note: Note) -> usize {
        self.rec.note(note)
    }

    /// initialize + session/new (id 1, 2) answered with session `SID`, with the control plane's
    /// `new_session` / `session_opened` around it when there is one.
    pub fn handshake(&self) {
        if self.control_plane {
            self.cmd(json!({"type":"new_session","seq":1,"session":"s1","cwd":WS}));
        }
        self.c2a(
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
            "clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":false},
            "clientInfo":{"name":"t","version":"1"}}}),
        );
        self.a2c(
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}),
        );
        self.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        self.a2c(json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":SID}}));
        if self.control_plane {
            self.ev(json!({"type":"session_opened","session":"s1","sessionId":SID}));
        }
    }

    /// `session/prompt` with id 2 (and the control `prompt` command before it).
    /// After the handshake and a prompt, the agent asks (request id 0) to run a command: tool
    /// call `c`, kind `execute`, the options of [`opts3`].
    pub fn asking_to_run() -> Case {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.permission(
            json!(0),
            json!({"toolCallId":"c","kind":"execute"}),
            opts3(),
        );
        c
    }

    pub fn prompt(&self) -> usize {
        if self.control_plane {
            self.cmd(json!({"type":"prompt","seq":2,"session":"s1","text":"go"}));
        }
        self.c2a(
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":SID,
            "prompt":[{"type":"text","text":"go"}]}}),
        )
    }

    pub fn prompt_result(&self, stop_reason: &str) -> usize {
        self.a2c(json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":stop_reason}}))
    }

    pub fn update(&self, update: Value) -> usize {
        self.a2c(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":SID,"update":update}}))
    }

    pub fn permission(&self, id: Value, tool_call: Value, options: Value) -> usize {
        self.a2c(
            json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission",
            "params":{"sessionId":SID,"toolCall":tool_call,"options":options}}),
        )
    }

    pub fn select(&self, id: Value, option_id: &str) -> usize {
        self.c2a(json!({"jsonrpc":"2.0","id":id,"result":{"outcome":{"outcome":"selected","optionId":option_id}}}))
    }

    pub fn cancelled(&self, id: Value) -> usize {
        self.c2a(json!({"jsonrpc":"2.0","id":id,"result":{"outcome":{"outcome":"cancelled"}}}))
    }

    pub fn approval(&self, id: Value, tool_call_id: &str, subject: &str, options: Value) -> usize {
        self.ev(
            json!({"type":"approval","sessionId":SID,"requestId":id,"toolCallId":tool_call_id,
            "subject":subject,"options":options}),
        )
    }

    pub fn item(&self, tool_call_id: &str, item_type: &str) -> usize {
        self.ev(
            json!({"type":"item","sessionId":SID,"toolCallId":tool_call_id,"itemType":item_type,
            "status":"pending","title":"t"}),
        )
    }

    pub fn record(&self) -> CaseRecord {
        CaseRecord {
            meta: CaseMeta {
                case_id: "test@1/case".into(),
                title: "t".into(),
                agent: "test".into(),
                version: "1".into(),
                provenance: Vec::new(),
                file: "test/1/case.toml".into(),
            },
            transcript: self.rec.snapshot(),
            control_plane: self.control_plane,
            control_supports: self.control_supports.clone(),
            workspace: PathBuf::from(WS),
            outside: PathBuf::from("/tmp/case/outside"),
            files_after: self.files_after.clone(),
            symlinks: self.symlinks.clone(),
            end: self.end.clone(),
            stderr_tail: self.stderr_tail.clone(),
            repro: "acp-harness replay test@1/case".into(),
        }
    }

    /// Grades the case with one check, and proves the finding names its rule
    /// ([`assert_names_its_rule`]): every check test is also a test of its rule ids. It also
    /// proves that the grade does not depend on which pipe the harness read first
    /// ([`assert_one_grade_in_every_order`]): every check test is a determinism test too.
    #[track_caller]
    pub fn grade(&self, check: &dyn Check) -> Finding {
        let record = self.record();
        let finding = check.evaluate(&record);
        assert_names_its_rule(check, &finding);
        assert_one_grade_in_every_order(check, &record, &finding);
        finding
    }

    /// [`Case::grade`] without the arrival-order proof: for a test of a transcript whose order
    /// across the two pipes is itself what it is about.
    #[track_caller]
    pub fn grade_as_recorded(&self, check: &dyn Check) -> Finding {
        let finding = check.evaluate(&self.record());
        assert_names_its_rule(check, &finding);
        finding
    }
}

/// opencode's three options.
pub fn opts3() -> Value {
    json!([{"optionId":"once","kind":"allow_once","name":"Allow once"},
           {"optionId":"always","kind":"allow_always","name":"Always allow"},
           {"optionId":"reject","kind":"reject_once","name":"Reject"}])
}

/// The buttons an adapter shows for [`opts3`].
pub fn buttons3() -> Value {
    json!([{"optionId":"once","label":"Allow once"},
           {"optionId":"always","label":"Always allow"},
           {"optionId":"reject","label":"Reject"}])
}

#[track_caller]
pub fn assert_grade(finding: &Finding, grade: Grade, needle: &str) {
    assert_eq!(
        finding.grade, grade,
        "expected {grade:?} containing {needle:?}, got {finding:?}"
    );
    assert!(
        finding.message.contains(needle),
        "message {:?} does not contain {needle:?}",
        finding.message
    );
}

/// A `fail` or `warn` names exactly one rule, one of the check's own [`Check::rules`], and
/// that rule is in the catalogue; any other grade names none.
#[track_caller]
pub fn assert_names_its_rule(check: &dyn Check, finding: &Finding) {
    match (finding.grade, finding.rule) {
        (Grade::Fail | Grade::Warn, Some(rule)) => {
            assert!(
                check.rules().iter().any(|r| r.number() == rule),
                "{}: a {:?} names R{rule}, which is not one of the check's rules {:?}",
                check.id(),
                finding.grade,
                check.rules()
            );
            assert!(
                crate::rules::get(rule).is_some(),
                "{}: R{rule} is not in judge/rules.toml",
                check.id()
            );
        }
        (Grade::Fail | Grade::Warn, None) => panic!(
            "{}: a {:?} names no rule: {}",
            check.id(),
            finding.grade,
            finding.message
        ),
        (_, Some(rule)) => panic!(
            "{}: a {:?} names R{rule}, but only fail and warn break rules",
            check.id(),
            finding.grade
        ),
        (_, None) => {}
    }
}

/// True for an entry whose place relative to the wire frames depends on which pipe the harness
/// read first: an event the client's adapter (or its observer) reported. The harness's own
/// commands and notes are written in the order it acted, so they stay where they are.
fn floats(direction: Direction) -> bool {
    matches!(
        direction,
        Direction::AdapterToHarness | Direction::ObserverToHarness
    )
}

/// Every order in which the harness could have read the same client behaviour. The client
/// writes to two pipes, its agent's stdin (the relay's socket) and its adapter's stdout, and the
/// harness reads both: an event may be read before client frames written before it, or after
/// client frames written after it. Agent frames are the harness's own, recorded when sent, so an
/// event can be read later than an agent frame sent after it was written, but never earlier than
/// one it was recorded after (it may be the client's reaction to it). The harness's commands and
/// notes stay where they are: what follows them in a stretch depends on them.
///
/// Between two fixed entries each variant moves every event `d` frames later (wire frames of
/// both directions) or `d` client frames earlier (stopping at an agent frame), for `d` in 1, 2,
/// 3 and all the way; the order within each pipe is kept. The entries are renumbered and keep
/// the times of the places they land in.
pub fn arrival_orders(
    transcript: &[acp_vocab::transcript::Entry],
) -> Vec<Vec<acp_vocab::transcript::Entry>> {
    const SHIFTS: [i64; 8] = [-1_000_000, -3, -2, -1, 1, 2, 3, 1_000_000];
    let mut variants = Vec::new();
    for d in SHIFTS {
        let mut order: Vec<&acp_vocab::transcript::Entry> = Vec::with_capacity(transcript.len());
        let mut start = 0;
        while start < transcript.len() {
            if !is_wire_or_event(transcript[start].direction) {
                order.push(&transcript[start]);
                start += 1;
                continue;
            }
            let end = (start..transcript.len())
                .find(|&i| !is_wire_or_event(transcript[i].direction))
                .unwrap_or(transcript.len());
            let stretch = &transcript[start..end];
            let wire: Vec<_> = stretch.iter().filter(|e| !floats(e.direction)).collect();
            // Each event with the number of wire frames read before it, shifted: later past any
            // frame, earlier only back to the last agent frame before it.
            let mut seen = 0usize;
            let mut last_agent = 0usize; // wire frames up to and including the last agent frame
            let mut events = Vec::new();
            for e in stretch {
                if floats(e.direction) {
                    let at = if d > 0 {
                        (seen + d as usize).min(wire.len())
                    } else {
                        seen.saturating_sub((-d) as usize).max(last_agent)
                    };
                    events.push((at, e));
                } else {
                    seen += 1;
                    if e.direction == Direction::AgentToClient {
                        last_agent = seen;
                    }
                }
            }
            // Shifting keeps the events in order, except where an earlier event was held at an
            // agent frame: keep each event at or after the one before it.
            let mut floor = 0;
            for (at, _) in &mut events {
                *at = (*at).max(floor);
                floor = *at;
            }
            let mut next = events.into_iter().peekable();
            for (k, w) in wire.iter().enumerate() {
                while let Some((_, e)) = next.next_if(|(at, _)| *at <= k) {
                    order.push(e);
                }
                order.push(w);
            }
            order.extend(next.map(|(_, e)| e));
            start = end;
        }
        let moved = order
            .iter()
            .zip(transcript)
            .any(|(a, b)| !std::ptr::eq(*a, b));
        if !moved {
            continue;
        }
        variants.push(
            order
                .into_iter()
                .zip(transcript)
                .enumerate()
                .map(|(index, (e, place))| {
                    let mut e = e.clone();
                    e.index = index;
                    e.at_us = place.at_us;
                    e
                })
                .collect(),
        );
    }
    variants
}

fn is_wire_or_event(direction: Direction) -> bool {
    floats(direction)
        || matches!(
            direction,
            Direction::AgentToClient | Direction::ClientToAgent
        )
}

/// The check gives `finding`'s grade on every [`arrival_orders`] variant of the case (must-2 of
/// issue 42: a verdict never depends on which pipe the harness read first).
#[track_caller]
pub fn assert_one_grade_in_every_order(check: &dyn Check, record: &CaseRecord, finding: &Finding) {
    for (n, transcript) in arrival_orders(&record.transcript).into_iter().enumerate() {
        let variant = CaseRecord {
            transcript,
            ..record.clone()
        };
        let other = check.evaluate(&variant);
        assert_eq!(
            other.grade,
            finding.grade,
            "{}: the grade depends on the arrival order of events and wire frames (variant {n}): {:?} as recorded, {:?} in:\n{}\nas recorded: {}\nthen: {}",
            check.id(),
            finding.grade,
            other.grade,
            variant
                .transcript
                .iter()
                .map(|e| format!("#{} {:?} {}", e.index, e.direction, e.raw))
                .collect::<Vec<_>>()
                .join("\n"),
            finding.message,
            other.message
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The client's event, its request and the agent's answer: the event may be read after the
    /// request, or after the answer too, but the answer never moves, nor does the command.
    #[test]
    fn events_move_across_client_frames_and_later_past_agent_frames() {
        let c = Case::new();
        c.cmd(json!({"type":"set_mode","seq":2,"session":"s1","modeId":"plan"}));
        c.ev(json!({"type":"mode","sessionId":SID,"modeId":"plan"}));
        c.c2a(json!({"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{"sessionId":SID,"modeId":"plan"}}));
        c.a2c(json!({"jsonrpc":"2.0","id":2,"result":{}}));
        let record = c.record();
        let shape = |t: &[acp_vocab::transcript::Entry]| -> String {
            t.iter()
                .map(|e| match e.direction {
                    Direction::HarnessToAdapter => 'H',
                    Direction::AdapterToHarness => 'E',
                    Direction::ClientToAgent => 'C',
                    Direction::AgentToClient => 'A',
                    _ => 'N',
                })
                .collect()
        };
        let mut shapes: Vec<String> = arrival_orders(&record.transcript)
            .iter()
            .map(|t| shape(t))
            .collect();
        shapes.sort();
        shapes.dedup();
        assert_eq!(shapes, ["HCAE", "HCEA"]);
        // Renumbered, with the times of the places they land in.
        for t in arrival_orders(&record.transcript) {
            assert!(t.iter().enumerate().all(|(i, e)| e.index == i));
            assert!(t.windows(2).all(|w| w[0].at_us <= w[1].at_us));
        }
        // An event after an agent frame is never read before it.
        let c = Case::new();
        c.a2c(json!({"jsonrpc":"2.0","id":2,"result":{}}));
        c.ev(json!({"type":"mode","sessionId":SID,"modeId":"plan"}));
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        let shapes: Vec<String> = arrival_orders(&c.record().transcript)
            .iter()
            .map(|t| shape(t))
            .collect();
        assert!(shapes.iter().all(|s| s == "ACE"), "{shapes:?}");
    }
}
