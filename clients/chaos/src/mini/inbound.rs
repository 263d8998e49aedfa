//! What the agent sends us: its requests answered (or handed on), its responses routed to what
//! they answer.

use acp_vocab::method::Method;
use serde_json::{Value, json};

use super::{Mini, log};
use crate::Mode;

impl Mini {
    pub(super) fn on_agent(&mut self, line: &str) {
        let Ok(Value::Object(frame)) = serde_json::from_str::<Value>(line) else {
            log("ignoring a line from the agent that is not a JSON object");
            return;
        };
        let method = frame.get("method").and_then(Value::as_str);
        let id = frame.get("id").cloned();
        match (method, id) {
            (Some(method), Some(id)) => self.on_request(method, id, frame.get("params")),
            // The agent withdraws a request: `echo` closes the card, answering it `cancelled`.
            (Some(method), None)
                if Method::parse(method) == Some(Method::CancelRequest)
                    && self.mode == Mode::Echo =>
            {
                if let Some(request_id) = frame.get("params").and_then(|p| p.get("requestId")) {
                    self.resolve_approvals(|(id, _)| id == request_id);
                }
            }
            (Some(_), None) => {} // notifications: nothing in this client's model
            (None, Some(id)) => {
                let purpose = id.as_u64().and_then(|n| self.pending.remove(&n));
                if let Some(purpose) = purpose {
                    self.on_response(purpose, frame.get("result"), frame.get("error"));
                }
            }
            (None, None) => {}
        }
    }

    fn on_request(&mut self, method: &str, id: Value, params: Option<&Value>) {
        if method.starts_with("terminal/") && crate::terminal::advertises_terminal(self.mode) {
            match self.terminals.answer(self.mode, method, &id, params) {
                crate::terminal::Reply::Json(answer) => self.send(&answer),
                crate::terminal::Reply::Raw(line) => self.write(&line),
                crate::terminal::Reply::Nothing => log("not answering terminal/wait_for_exit"),
            }
            return;
        }
        if method != Method::SessionRequestPermission.as_str() {
            let response = match (self.mode, Method::parse(method)) {
                // No model, no disk: the cheapest answer the agent accepts.
                (Mode::Echo, Some(Method::FsReadTextFile)) => {
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": ""}})
                }
                (Mode::Echo, _) => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                _ => json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "Method not found"}}),
            };
            self.send(&response);
            return;
        }
        if self.misbehave_on_permission() {
            return;
        }
        self.ask_permission(id, params);
    }
}
