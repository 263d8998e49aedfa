//! Normalisation at recording time: what differs from run to run and says nothing about the
//! agent is replaced, so that two recordings of one version differ only where the agent did.
//!
//! * paths: the run's folders become `<proj>`, `<outside>`, `<home>`, `<run>` (its bare name
//!   `<run-name>`), the install
//!   folder `<install>`, the install root `<agents>`, the model server's URL `<model-url>`
//!   (Claude Code's per-project folder name, the project path with `/` and `.` as `-`, becomes
//!   `<proj-dashed>`);
//! * session ids: the ids `session/new` answered become `<session-1>`, `<session-2>`, … wherever
//!   they appear;
//! * UUIDs (request ids, tool-call ids, message ids the agent mints) become
//!   `00000000-0000-4000-8000-00000000000N`, numbered by first appearance, so they keep their
//!   shape and their identity within a recording; opencode's minted ids (`msg_`, `prt_`, `ses_`
//!   + 12 hex digits + 14 letters or digits) become `msg_000…N` the same way;
//! * timestamps: ISO-8601 date-times become `1970-01-01T00:00:00.000Z`; numbers under keys that
//!   name a time (`…At`, `…AtMs`, `…timestamp…`, `…durationMs`, `duration_ms`, `…TimeMs`, `elapsed…`) and `pid`
//!   become 0, and `PGID: N` in text becomes `PGID: 0`;
//! * token counts: numbers under keys ending in `tokens` (any case) and a `usage_update`'s
//!   `used` become 1 when not zero (zero stays zero: "nothing counted" stays visible).
//!
//! Frames that are JSON are re-serialised compactly after normalisation (key order kept).

use std::collections::HashMap;

use regex::Regex;
use serde_json::{Map, Value};

pub struct Normaliser {
    /// Literal replacements, longest first.
    literals: Vec<(String, String)>,
    sessions: Vec<(String, String)>,
    uuids: HashMap<String, String>,
    uuid: Regex,
    minted: Regex,
    minted_ids: HashMap<String, String>,
    time: Regex,
    pgid: Regex,
}

impl Normaliser {
    /// `literals`: (text, placeholder) pairs such as (`/…/run-1/proj`, `<proj>`).
    pub fn new(literals: Vec<(String, String)>) -> Normaliser {
        let mut literals: Vec<_> = literals
            .into_iter()
            .filter(|(from, _)| from.len() > 1)
            .collect();
        literals.sort_by_key(|(from, _)| std::cmp::Reverse(from.len()));
        Normaliser {
            literals,
            sessions: Vec::new(),
            uuids: HashMap::new(),
            uuid: Regex::new(
                r"(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b",
            )
            .expect("uuid regex"),
            minted: Regex::new(r"\b([a-z]{3})_[0-9a-f]{12}[0-9A-Za-z]{14}\b").expect("id regex"),
            minted_ids: HashMap::new(),
            time: Regex::new(
                r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?",
            )
            .expect("time regex"),
            pgid: Regex::new(r"PGID: \d+").expect("pgid regex"),
        }
    }

    /// A session id `session/new` answered: `<session-N>` from now on.
    pub fn add_session(&mut self, id: &str) {
        if id.is_empty() || self.sessions.iter().any(|(s, _)| s == id) {
            return;
        }
        let name = format!("<session-{}>", self.sessions.len() + 1);
        self.sessions.push((id.to_string(), name));
    }

    /// Normalises one string.
    pub fn string(&mut self, s: &str) -> String {
        let mut out = s.to_string();
        for (from, to) in &self.sessions {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        for (from, to) in &self.literals {
            if out.contains(from.as_str()) {
                out = out.replace(from.as_str(), to);
            }
        }
        if self.uuid.is_match(&out) {
            let found: Vec<String> = self
                .uuid
                .find_iter(&out)
                .map(|m| m.as_str().to_string())
                .collect();
            for id in found {
                let n = self.uuids.len() + 1;
                let to = self
                    .uuids
                    .entry(id.to_ascii_lowercase())
                    .or_insert_with(|| format!("00000000-0000-4000-8000-{n:012}"))
                    .clone();
                out = out.replace(&id, &to);
            }
        }
        if self.minted.is_match(&out) {
            let found: Vec<(String, String)> = self
                .minted
                .captures_iter(&out)
                .map(|c| (c[0].to_string(), c[1].to_string()))
                .collect();
            for (id, prefix) in found {
                let n = self.minted_ids.len() + 1;
                let to = self
                    .minted_ids
                    .entry(id.clone())
                    .or_insert_with(|| format!("{prefix}_{n:026}"))
                    .clone();
                out = out.replace(&id, &to);
            }
        }
        let out = self.time.replace_all(&out, "1970-01-01T00:00:00.000Z");
        self.pgid.replace_all(&out, "PGID: 0").into_owned()
    }

    /// Normalises a JSON value (`key`: the key it sits under, `update`: inside a usage_update).
    pub fn value(&mut self, v: &Value) -> Value {
        self.walk(v, None, false)
    }

    fn walk(&mut self, v: &Value, key: Option<&str>, usage_update: bool) -> Value {
        match v {
            Value::String(s) => Value::String(self.string(s)),
            Value::Number(n) => match key {
                Some(k) if is_time_key(k) => Value::from(0),
                Some(k) if is_token_key(k) || (usage_update && k == "used") => {
                    if n.as_f64() == Some(0.0) {
                        v.clone()
                    } else {
                        Value::from(1)
                    }
                }
                _ => v.clone(),
            },
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| self.walk(i, key, usage_update))
                    .collect(),
            ),
            Value::Object(map) => {
                let usage_update = usage_update
                    || map.get("sessionUpdate").and_then(Value::as_str) == Some("usage_update");
                let mut out = Map::new();
                for (k, item) in map {
                    let nk = self.string(k);
                    let nv = self.walk(item, Some(k), usage_update);
                    out.insert(nk, nv);
                }
                Value::Object(out)
            }
            _ => v.clone(),
        }
    }

    /// Normalises one frame's text: JSON is normalised and re-serialised, other text gets the
    /// string replacements.
    pub fn frame(&mut self, raw: &str) -> (String, Option<Value>) {
        match serde_json::from_str::<Value>(raw) {
            Ok(v) => {
                let n = self.value(&v);
                (n.to_string(), Some(n))
            }
            Err(_) => (self.string(raw), None),
        }
    }
}

fn is_time_key(k: &str) -> bool {
    let l = k.to_ascii_lowercase();
    (k.ends_with("At") && k.len() > 2)
        || l.ends_with("_at")
        || l.ends_with("atms")
        || l.ends_with("_at_ms")
        || l.contains("timestamp")
        || l.ends_with("durationms")
        || l.ends_with("duration_ms")
        || l.ends_with("timems")
        || l.starts_with("elapsed")
        || l == "pid"
}

fn is_token_key(k: &str) -> bool {
    k.to_ascii_lowercase().ends_with("tokens")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn n() -> Normaliser {
        let mut n = Normaliser::new(vec![
            ("/r/run-7".into(), "<run>".into()),
            ("/r/run-7/proj".into(), "<proj>".into()),
        ]);
        n.add_session("ses_abc");
        n
    }

    #[test]
    fn paths_sessions_ids() {
        let mut n = n();
        assert_eq!(
            n.string("/r/run-7/proj/a.md in /r/run-7/home"),
            "<proj>/a.md in <run>/home"
        );
        assert_eq!(n.string("session ses_abc"), "session <session-1>");
        let a = n.string("id 7F3A0A5E-1111-4222-8333-444455556666");
        assert_eq!(a, "id 00000000-0000-4000-8000-000000000001");
        assert_eq!(
            n.string("11111111-1111-4111-8111-111111111111"),
            "00000000-0000-4000-8000-000000000002"
        );
        assert_eq!(
            n.string("7f3a0a5e-1111-4222-8333-444455556666"),
            "00000000-0000-4000-8000-000000000001"
        );
        assert_eq!(
            n.string("msg_2480dd94d001bHym1MWQHb8yxu msg_2480dd94d001bHym1MWQHb8yxu"),
            "msg_00000000000000000000000001 msg_00000000000000000000000001"
        );
    }

    #[test]
    fn times_and_tokens() {
        let mut n = n();
        let v = n.value(
            &json!({"updatedAt": "2026-12-05T21:01:51.123Z", "createdAt": 1796457732,
            "usage": {"inputTokens": 100, "outputTokens": 0, "cachedReadTokens": 7},
            "update": {"sessionUpdate": "usage_update", "used": 3040, "size": 200000},
            "text": "Process Group PGID: 12345", "durationMs": 17, "apiTimeMs": 112, "count": 5,
            "startedAtMs": 1796524838982_u64}),
        );
        assert_eq!(
            v,
            json!({"updatedAt": "1970-01-01T00:00:00.000Z", "createdAt": 0,
            "usage": {"inputTokens": 1, "outputTokens": 0, "cachedReadTokens": 1},
            "update": {"sessionUpdate": "usage_update", "used": 1, "size": 200000},
            "text": "Process Group PGID: 0", "durationMs": 0, "apiTimeMs": 0, "count": 5, "startedAtMs": 0})
        );
    }

    #[test]
    fn non_json_frames_keep_their_text() {
        let mut n = n();
        assert_eq!(n.frame("not json /r/run-7/proj").0, "not json <proj>");
        let (raw, json) = n.frame(r#"{"a": "/r/run-7/proj"}"#);
        assert_eq!(raw, r#"{"a":"<proj>"}"#);
        assert!(json.is_some());
    }
}
