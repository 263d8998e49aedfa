//! A transcript slice: the entries of one fuzz turn, preceded by the connection's handshake, in
//! the transcript format every check reads ([`Entry`], as `acp_vocab::transcript::Recorder`
//! writes it). The long-lived driver keeps one connection for thousands of turns; grading each
//! turn over "handshake + this turn" keeps the checks' cost per turn constant and makes every
//! finding a self-contained case.
//!
//! Unlike the shared `Recorder` (an `Arc<Mutex<…>>` for tasks that record concurrently), a slice
//! is owned by the single task that plays the turn, and hands back the parsed JSON of what it
//! recorded, so a frame is parsed once.

use std::time::Instant;

use acp_vocab::transcript::{Direction, Entry};
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Slice {
    entries: Vec<Entry>,
    started: Instant,
}

impl Slice {
    /// A slice that starts with `prefix` (already numbered from 0).
    pub fn new(started: Instant, prefix: &[Entry]) -> Self {
        let mut entries = Vec::with_capacity(prefix.len() + 24);
        entries.extend_from_slice(prefix);
        Slice { entries, started }
    }

    /// Records raw bytes as received (without the newline), parsing them the way `Recorder`
    /// does: lossy text and no JSON for invalid UTF-8. Returns the index.
    pub fn push_raw(&mut self, conn: u32, direction: Direction, raw: &[u8]) -> usize {
        let (raw, json, invalid_utf8) = acp_vocab::transcript::decode_frame(raw);
        self.push(conn, direction, raw, json, invalid_utf8)
    }

    /// Records a frame the harness sends; returns the index and the line to write.
    pub fn push_sent(&mut self, conn: u32, direction: Direction, json: Value) -> (usize, String) {
        let raw = json.to_string();
        let index = self.push(conn, direction, raw.clone(), Some(json), false);
        (index, raw)
    }

    /// Records a harness note.
    pub fn note(&mut self, json: Value) -> usize {
        let raw = json.to_string();
        self.push(0, Direction::Note, raw, Some(json), false)
    }

    fn push(
        &mut self,
        conn: u32,
        direction: Direction,
        raw: String,
        json: Option<Value>,
        invalid_utf8: bool,
    ) -> usize {
        let index = self.entries.len();
        self.entries.push(Entry {
            index,
            at_us: self.started.elapsed().as_micros() as u64,
            conn,
            direction,
            raw,
            json,
            invalid_utf8,
            fault: None,
        });
        index
    }

    /// The parsed JSON of entry `index`.
    pub fn json(&self, index: usize) -> Option<&Value> {
        self.entries.get(index)?.json.as_ref()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    pub fn into_entries(self) -> Vec<Entry> {
        self.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_after_the_prefix_and_parses_like_the_recorder() {
        let mut first = Slice::new(Instant::now(), &[]);
        first.push_raw(
            1,
            Direction::ClientToAgent,
            br#"{"jsonrpc":"2.0","method":"x"}"#,
        );
        let prefix = first.into_entries();
        let mut s = Slice::new(Instant::now(), &prefix);
        let a = s.push_raw(1, Direction::ClientToAgent, b"not json");
        let b = s.push_raw(1, Direction::ClientToAgent, &[0xff]);
        let (c, line) = s.push_sent(
            1,
            Direction::AgentToClient,
            json!({"id": 1, "result": null}),
        );
        assert_eq!((a, b, c), (1, 2, 3));
        assert!(s.json(a).is_none());
        assert!(s.entries()[b].invalid_utf8);
        assert_eq!(line, r#"{"id":1,"result":null}"#);
        assert_eq!(s.json(0).and_then(|j| j.get("method")), Some(&json!("x")));
    }
}
