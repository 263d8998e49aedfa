//! What an observer knows from the ACP wire itself (the harness relays it, so this needs nothing
//! from the client): the permission requests the agent sent, to match an observed card to its
//! request, and the client's last `session/prompt` with the agent's `stopReason`, for `{session}`
//! and `{stop_reason}`.
//!
//! The engine records a frame to the client before writing it, so a request is always in the
//! transcript by the time the client can show it.

use acp_vocab::method::Method;
use acp_vocab::transcript::{Direction, Entry, Recorder};
use serde_json::Value;

use acp_judge::wire_model::id_key;

/// A `session/request_permission` the agent sent.
#[derive(Debug, Clone)]
pub struct AcpRequest {
    pub id: Value,
    pub session_id: String,
    pub tool_call_id: Option<String>,
    pub title: Option<String>,
    /// The offered options, verbatim.
    pub options: Value,
}

/// The wire so far, read incrementally from the transcript.
#[derive(Debug, Default)]
pub struct WireView {
    next: usize,
    pub requests: Vec<AcpRequest>,
    /// The last `session/prompt`: (id key, sessionId).
    prompt: Option<(String, String)>,
    pub stop_reason: Option<String>,
    /// How many of those requests the client answered so far.
    pub answers: usize,
}

impl WireView {
    /// Reads what was recorded since the last call; calls `frame` on each new wire frame.
    pub fn refresh(&mut self, rec: &Recorder, mut frame: impl FnMut(&Entry)) {
        let mut seen = Vec::new();
        self.next = rec.visit_from(self.next, |e| {
            if e.direction.is_wire() {
                seen.push(e.clone());
            }
        });
        for entry in &seen {
            self.learn(entry);
            frame(entry);
        }
    }

    fn learn(&mut self, entry: &Entry) {
        let Some(json) = entry.json() else { return };
        let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
        match (
            entry.direction,
            entry.method().and_then(Method::parse),
            json.get("id"),
        ) {
            (Direction::AgentToClient, Some(Method::SessionRequestPermission), Some(id)) => {
                self.requests.push(AcpRequest {
                    id: id.clone(),
                    session_id: text(json, "/params/sessionId").unwrap_or_default(),
                    tool_call_id: text(json, "/params/toolCall/toolCallId"),
                    title: text(json, "/params/toolCall/title"),
                    options: json.pointer("/params/options").cloned().unwrap_or_default(),
                })
            }
            (Direction::ClientToAgent, Some(Method::SessionPrompt), Some(id)) => {
                let session = text(json, "/params/sessionId").unwrap_or_default();
                self.prompt = Some((id_key(id), session));
                self.stop_reason = None;
            }
            (Direction::ClientToAgent, None, Some(id))
                if self.requests.iter().any(|r| id_key(&r.id) == id_key(id)) =>
            {
                self.answers += 1;
            }
            (Direction::AgentToClient, None, Some(id))
                if self.prompt.as_ref().is_some_and(|(k, _)| *k == id_key(id)) =>
            {
                self.stop_reason = text(json, "/result/stopReason");
            }
            _ => {}
        }
    }

    /// The session of the client's last `session/prompt`.
    pub fn session(&self) -> Option<&str> {
        self.prompt.as_ref().map(|(_, s)| s.as_str())
    }
}
