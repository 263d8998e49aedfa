//! Recorded agent traffic, and what our fake agent sent, as one comparable list of frames.
//!
//! Two recording formats exist (see `recordings/*/README.md`):
//! * codex-acp fixtures (`*.json`): one or more JSON documents `{"method": "sessionUpdate" |
//!   "requestPermission", "args": [params]}` (or arrays of them), or a bare `PromptResponse`.
//!   Each file is a *fragment* of a turn: its frames must appear, in order, among ours.
//! * claude-agent-acp golden files (`*.jsonl`): `{"kind", "payload"}` per line, the whole outbound
//!   traffic of one scenario. Ours must be the same list, frame for frame (results of
//!   `initialize`/`session/new` count only when the recording has them).

use std::path::Path;

use acp_vocab::transcript::{Direction, Entry};
use serde_json::Value;

/// How a recording's frames relate to the frames of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The recorded frames appear in this order among ours (other frames may sit in between).
    Fragment,
    /// Ours are exactly the recorded frames, in order.
    Whole,
}

/// One agent → client message, reduced to what can be compared.
#[derive(Debug, Clone)]
pub struct Frame {
    /// `session/update`, `session/request_permission`, `session/prompt → result`, …
    pub label: String,
    /// `params` of a request/notification, `result` of a response.
    pub payload: Value,
    /// Where it came from: `file record 3` or `transcript #12`.
    pub origin: String,
}

impl Frame {
    /// The label plus the update type, e.g. `session/update tool_call`: frames with different
    /// tags are never candidates for each other.
    pub fn tag(&self) -> String {
        match self
            .payload
            .pointer("/update/sessionUpdate")
            .and_then(Value::as_str)
        {
            Some(kind) => format!("{} {kind}", self.label),
            None => self.label.clone(),
        }
    }
}

pub const INITIALIZE: &str = "initialize → result";
pub const SESSION_NEW: &str = "session/new → result";

/// Reads a recording; `Err` says what is wrong with the file.
pub fn load(path: &Path) -> Result<(Mode, Vec<Frame>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}"))?;
    let name = path.display().to_string();
    if name.ends_with(".jsonl") {
        let mut frames = Vec::new();
        for (n, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let record: Value =
                serde_json::from_str(line).map_err(|e| format!("line {}: not JSON: {e}", n + 1))?;
            frames.push(claude_record(&record, format!("line {}", n + 1))?);
        }
        Ok((Mode::Whole, frames))
    } else {
        let mut frames = Vec::new();
        let stream = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
        for (n, doc) in stream.enumerate() {
            let doc = doc.map_err(|e| format!("document {}: not JSON: {e}", n + 1))?;
            let records = match doc {
                Value::Array(items) => items,
                other => vec![other],
            };
            for record in records {
                let origin = format!("record {}", frames.len() + 1);
                frames.push(codex_record(&record, origin)?);
            }
        }
        Ok((Mode::Fragment, frames))
    }
}

/// `{"kind": …, "payload": …}` of a claude-agent-acp golden file.
fn claude_record(record: &Value, origin: String) -> Result<Frame, String> {
    let kind = record
        .get("kind")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{origin}: no \"kind\""))?;
    let payload = record
        .get("payload")
        .cloned()
        .ok_or_else(|| format!("{origin}: no \"payload\""))?;
    let (label, payload) = match kind {
        "extNotification" => (
            payload
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or("?")
                .to_owned(),
            payload.get("params").cloned().unwrap_or(Value::Null),
        ),
        other => (
            sdk_label(other).ok_or_else(|| format!("{origin}: unknown kind {other:?}"))?,
            payload,
        ),
    };
    Ok(Frame {
        label,
        payload,
        origin,
    })
}

/// `{"method": …, "args": [params]}` of a codex-acp fixture, or a bare `PromptResponse`.
fn codex_record(record: &Value, origin: String) -> Result<Frame, String> {
    if record.get("stopReason").is_some() {
        return Ok(Frame {
            label: "session/prompt → result".into(),
            payload: record.clone(),
            origin,
        });
    }
    let method = record
        .get("method")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{origin}: neither a \"method\" record nor a prompt response"))?;
    let label = sdk_label(method).ok_or_else(|| format!("{origin}: unknown method {method:?}"))?;
    let payload = record
        .pointer("/args/0")
        .cloned()
        .ok_or_else(|| format!("{origin}: no args[0]"))?;
    Ok(Frame {
        label,
        payload,
        origin,
    })
}

/// The wire label of an SDK call name used by the recorders.
fn sdk_label(name: &str) -> Option<String> {
    Some(
        match name {
            "sessionUpdate" => "session/update",
            "requestPermission" => "session/request_permission",
            "createElicitation" => "elicitation/create",
            "completeElicitation" => "elicitation/complete",
            "promptResponse" => "session/prompt → result",
            "initialize" => INITIALIZE,
            "newSession" => SESSION_NEW,
            "loadSession" => "session/load → result",
            _ => return None,
        }
        .to_owned(),
    )
}

/// Every frame the agent sent in a transcript, labelled like recordings: requests and
/// notifications by method, responses as `<method of the client's request> → result`.
pub fn emitted(transcript: &[Entry]) -> Vec<Frame> {
    let mut asked: Vec<(u32, String, String)> = Vec::new();
    let mut frames = Vec::new();
    for entry in transcript {
        let Some(json) = entry.json() else {
            continue;
        };
        let method = json.get("method").and_then(Value::as_str);
        let id = json.get("id").map(Value::to_string);
        match entry.direction {
            Direction::ClientToAgent => {
                if let (Some(method), Some(id)) = (method, id) {
                    asked.push((entry.conn, id, method.to_owned()));
                }
            }
            Direction::AgentToClient => {
                let origin = format!("transcript #{}", entry.index);
                if let Some(method) = method {
                    frames.push(Frame {
                        label: method.to_owned(),
                        payload: json.get("params").cloned().unwrap_or(Value::Null),
                        origin,
                    });
                } else if let (Some(result), Some(id)) = (json.get("result"), id) {
                    let method = asked
                        .iter()
                        .rev()
                        .find(|(conn, asked_id, _)| *conn == entry.conn && *asked_id == id)
                        .map_or("?", |(_, _, m)| m.as_str());
                    frames.push(Frame {
                        label: format!("{method} → result"),
                        payload: result.clone(),
                        origin,
                    });
                }
            }
            _ => {}
        }
    }
    frames
}
