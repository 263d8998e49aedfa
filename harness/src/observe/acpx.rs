//! The acpx observer (acpx 0.19.x, npm; ../shared/reference/clients.md §2.2 and §3.1).
//!
//! acpx has no adapter, but it shows three things a person (or script) sees:
//!
//! * **stdout** with `--format json`: every JSON-RPC frame in both directions, one per line. Under
//!   a permission policy that escalates (`--permission-policy '{"escalate":["*"]}'`) and without a
//!   terminal, acpx rejects the request and its answer carries
//!   `_meta.acpx.permissionEscalation.toolKind`: the kind acpx believes the tool has, which is the
//!   subject its `y/N` prompt would have shown (`[permission] Allow <title> [<kind>]?`;
//!   `src/permissions.ts` `buildEscalationEvent` and `promptForToolPermission` both use
//!   `inferToolKind`). That becomes an `approval` event with the subject of that kind (CONTROL.md
//!   vocabulary; `other` and an absent kind show as `generic`), then an `approval_resolved` by
//!   `policy`.
//! * **its terminal** (`tty = true`): the prompt `[permission] Allow <title> [<kind>]? (y/N)` is
//!   the approval card itself. It becomes an `approval` event for the oldest unanswered request
//!   with that title; its buttons are the options the profile's `[[choose]]` inputs select.
//! * **its exit status**: 0 means the turn ended as the agent said (its `stopReason` is on stdout);
//!   130 is an interrupt; 5 is PERMISSION_DENIED, which acpx also returns when every permission
//!   request of the run was cancelled (`src/cli/command-handlers.ts` `applyPermissionExitCode`);
//!   anything else is an error. That becomes the `turn` event of the prompt's session.
//!
//! Every other answer to a permission request becomes `approval_resolved` (by `user` or `cancel`
//! after a prompt the user answered or cancelled, else by `policy`).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::{Rules, UserAct, observed};
use crate::client_spec::ChooseInput;
use crate::launch::ExitInfo;
use crate::wire_model::{Subject, id_key};

pub const NAME: &str = "acpx";

/// acpx's exit codes (`src/types.ts` `EXIT_CODES`).
const EXIT_PERMISSION_DENIED: i32 = 5;
const EXIT_INTERRUPTED: i32 = 130;

/// Terminal text kept while looking for a prompt.
const MAX_TERMINAL_TEXT: usize = 64 << 10;

/// A permission request acpx printed, not yet answered.
struct Pending {
    id: Value,
    session_id: String,
    tool_call_id: Option<String>,
    /// `toolCall.title`, as acpx's prompt prints it.
    title: Option<String>,
    options: Value,
    /// True once an approval was observed for it.
    shown: bool,
}

/// A `y/N` prompt seen on the terminal and not yet matched to a request.
struct Prompt {
    title: String,
    kind: String,
    text: String,
}

pub struct Acpx {
    choose: Vec<ChooseInput>,
    /// Unanswered permission requests, oldest first.
    pending: Vec<Pending>,
    prompts: Vec<Prompt>,
    terminal: String,
    /// The client's `session/prompt` requests: id key → sessionId.
    prompt_ids: HashMap<String, String>,
    /// Session and stopReason of the last prompt response.
    last_turn: Option<(String, Option<String>)>,
    /// The session of the last `session/prompt`.
    prompt_session: Option<String>,
    /// What the user did last, until an answer consumes it.
    user_act: Option<UserAct>,
    /// True once the user cancelled.
    cancelled: bool,
}

impl Acpx {
    pub fn new(choose: Vec<ChooseInput>) -> Self {
        Acpx {
            choose,
            pending: Vec::new(),
            prompts: Vec::new(),
            terminal: String::new(),
            prompt_ids: HashMap::new(),
            last_turn: None,
            prompt_session: None,
            user_act: None,
            cancelled: false,
        }
    }

    /// A permission request or a response to one; the client's prompts and their responses.
    fn frame(&mut self, frame: &Value) -> Vec<Value> {
        let method = frame.get("method").and_then(Value::as_str);
        let id = frame.get("id");
        match (method, id) {
            (Some("session/request_permission"), Some(id)) => {
                let params = frame.get("params").unwrap_or(&Value::Null);
                let tool = params.get("toolCall").unwrap_or(&Value::Null);
                let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
                self.pending.push(Pending {
                    id: id.clone(),
                    session_id: text(params, "sessionId").unwrap_or_default(),
                    tool_call_id: text(tool, "toolCallId"),
                    title: text(tool, "title"),
                    options: params.get("options").cloned().unwrap_or(Value::Null),
                    shown: false,
                });
                self.match_prompts()
            }
            (Some("session/prompt"), Some(id)) => {
                let sid = frame
                    .pointer("/params/sessionId")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                self.prompt_session = Some(sid.clone());
                self.prompt_ids.insert(id_key(id), sid);
                Vec::new()
            }
            (None, Some(id)) => self.response(id, frame),
            _ => Vec::new(),
        }
    }

    fn response(&mut self, id: &Value, frame: &Value) -> Vec<Value> {
        let result = frame.get("result");
        // Both sides number requests from 0, so an id alone does not say whose response this is;
        // the result's shape does.
        if let Some(stop) = result.and_then(|r| r.get("stopReason")) {
            if let Some(sid) = self.prompt_ids.remove(&id_key(id)) {
                self.last_turn = Some((sid, stop.as_str().map(str::to_owned)));
            }
            return Vec::new();
        }
        let is_answer = result.is_some_and(|r| r.get("outcome").is_some())
            || (frame.get("error").is_some() && !self.prompt_ids.contains_key(&id_key(id)));
        if !is_answer {
            return Vec::new();
        }
        let Some(pos) = self.pending.iter().position(|p| p.id == *id) else {
            return Vec::new();
        };
        let request = self.pending.remove(pos);
        let mut events = Vec::new();
        let escalation = result.and_then(|r| r.pointer("/_meta/acpx/permissionEscalation"));
        if let (Some(esc), false) = (escalation, request.shown) {
            let kind = esc.get("toolKind").and_then(Value::as_str);
            let tool_call_id = esc
                .get("toolCallId")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or(request.tool_call_id.clone());
            events.push(json!({
                "type": "approval",
                "sessionId": esc.get("sessionId").and_then(Value::as_str).unwrap_or(&request.session_id),
                "requestId": request.id,
                "toolCallId": tool_call_id,
                "subject": subject(kind),
                "acpKind": kind,
                "observed": observed(NAME, "stdout", format!(
                    "answer to request {} carries _meta.acpx.permissionEscalation.toolKind = {}",
                    request.id,
                    kind.map_or("(absent)".to_owned(), |k| format!("\"{k}\""))
                )),
            }));
        }
        let outcome = match result.and_then(|r| r.pointer("/outcome/outcome")) {
            Some(Value::String(s)) => s.clone(),
            _ => "error".to_owned(),
        };
        let by = match (request.shown, self.user_act.take()) {
            (true, Some(UserAct::Chose)) => "user",
            (true, Some(UserAct::Cancelled)) => "cancel",
            (false, _) if outcome == "cancelled" && self.cancelled => "cancel",
            _ => "policy",
        };
        let option_id = result
            .and_then(|r| r.pointer("/outcome/optionId"))
            .and_then(Value::as_str);
        events.push(json!({
            "type": "approval_resolved",
            "sessionId": request.session_id,
            "requestId": request.id,
            "outcome": outcome,
            "optionId": option_id,
            "by": by,
            "observed": observed(NAME, "stdout", format!("acpx answered request {}", request.id)),
        }));
        events
    }

    /// Pairs terminal prompts with printed requests, in order.
    fn match_prompts(&mut self) -> Vec<Value> {
        let mut events = Vec::new();
        while !self.prompts.is_empty() {
            let prompt = &self.prompts[0];
            let unshown = || self.pending.iter().enumerate().filter(|(_, p)| !p.shown);
            let found = unshown()
                .find(|(_, p)| p.title.as_deref().unwrap_or("tool") == prompt.title)
                .or_else(|| unshown().next())
                .map(|(i, _)| i);
            let Some(i) = found else { break };
            let prompt = self.prompts.remove(0);
            let request = &mut self.pending[i];
            request.shown = true;
            let options: Vec<Value> = self
                .choose
                .iter()
                .filter_map(|c| {
                    let id = c.selected(&request.options)?;
                    Some(json!({"optionId": id, "label": c.input.trim()}))
                })
                .collect();
            events.push(json!({
                "type": "approval",
                "sessionId": request.session_id,
                "requestId": request.id,
                "toolCallId": request.tool_call_id,
                "subject": subject(Some(&prompt.kind)),
                "acpKind": prompt.kind,
                "options": options,
                "observed": observed(NAME, "terminal", prompt.text),
            }));
        }
        events
    }
}

impl Rules for Acpx {
    fn reports(&self) -> &'static [&'static str] {
        &["approval", "approval_resolved", "turn"]
    }

    fn sources(&self) -> &'static str {
        "acpx stdout (--format json: frames with _meta.acpx.permissionEscalation), its y/N prompt on the terminal, its exit status"
    }

    fn stdout_line(&mut self, line: &str) -> Vec<Value> {
        match serde_json::from_str::<Value>(line) {
            Ok(frame) => self.frame(&frame),
            Err(_) => Vec::new(),
        }
    }

    fn terminal(&mut self, text: &str) -> Vec<Value> {
        self.terminal.push_str(&strip_escapes(text));
        while let Some((prompt, end)) = find_prompt(&self.terminal) {
            self.prompts.push(prompt);
            self.terminal.drain(..end);
        }
        if self.terminal.len() > MAX_TERMINAL_TEXT {
            let cut = self.terminal.len() - MAX_TERMINAL_TEXT;
            let cut = (cut..self.terminal.len())
                .find(|&i| self.terminal.is_char_boundary(i))
                .unwrap_or(self.terminal.len());
            self.terminal.drain(..cut);
        }
        self.match_prompts()
    }

    fn exited(&mut self, exit: &ExitInfo) -> Vec<Value> {
        let Some(code) = exit.code else {
            return Vec::new(); // killed: acpx showed nothing
        };
        let (session_id, stop_reason) = match self.last_turn.clone() {
            Some((sid, stop)) => (sid, stop),
            None => match self.prompt_session.clone() {
                Some(sid) => (sid, None),
                None => return Vec::new(), // no turn ever started
            },
        };
        let (state, meaning) = match code {
            0 => (
                match stop_reason.as_deref() {
                    Some("cancelled") => "cancelled",
                    Some("refusal") => "refused",
                    _ => "completed",
                },
                "success; the turn ended as the agent's stopReason says",
            ),
            EXIT_INTERRUPTED => ("cancelled", "INTERRUPTED"),
            EXIT_PERMISSION_DENIED => (
                "failed",
                "PERMISSION_DENIED: \"Permission request denied or cancelled\"",
            ),
            _ => ("failed", "an error"),
        };
        let mut event = json!({
            "type": "turn",
            "sessionId": session_id,
            "state": state,
            "message": format!("acpx exited with code {code} ({meaning})"),
            "observed": observed(NAME, "exit status", format!("exit code {code}")),
        });
        if let Some(stop) = stop_reason {
            event["stopReason"] = Value::String(stop);
        }
        vec![event]
    }

    fn user(&mut self, act: UserAct) {
        self.user_act = Some(act);
        if act == UserAct::Cancelled {
            self.cancelled = true;
        }
    }
}

/// The subject acpx shows for a kind: its prompt prints the ACP kind it inferred, so the subject
/// is that kind's (DESIGN §5.1); `other` or no kind at all is shown as a bare `[other]`.
fn subject(kind: Option<&str>) -> &'static str {
    kind.and_then(Subject::of_kind)
        .unwrap_or(Subject::Generic)
        .as_str()
}

/// Removes ANSI escape sequences (CSI `ESC [ … final`, and two-byte `ESC x`) and carriage returns.
fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                if chars.next_if_eq(&'[').is_some() {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// The first complete `[permission] Allow <title> [<kind>]? (y/N)` prompt in `text`, and the
/// byte offset just after it.
fn find_prompt(text: &str) -> Option<(Prompt, usize)> {
    const HEAD: &str = "[permission] Allow ";
    const TAIL: &str = "]? (y/N)";
    let start = text.find(HEAD)?;
    let tail = start + text[start..].find(TAIL)?;
    let body = &text[start + HEAD.len()..tail];
    let open = body.rfind(" [")?;
    let prompt = Prompt {
        title: body[..open].to_owned(),
        kind: body[open + 2..].to_owned(),
        text: text[start..tail + TAIL.len()].to_owned(),
    };
    Some((prompt, tail + TAIL.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REQUEST: &str = r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"tc1","title":"cat ~/.ssh/id_rsa","rawInput":{"command":"cat ~/.ssh/id_rsa"}},"options":[{"optionId":"allow_always","kind":"allow_always","name":"Always Allow"},{"optionId":"allow","kind":"allow_once","name":"Allow"},{"optionId":"reject","kind":"reject_once","name":"Reject"}]}}"#;

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    #[test]
    fn escalation_meta_is_an_observed_approval_then_a_policy_answer() {
        let mut acpx = Acpx::new(Vec::new());
        assert!(acpx.stdout_line(REQUEST).is_empty());
        let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"reject"},"_meta":{"acpx":{"permissionEscalation":{"type":"permission_escalation","sessionId":"s1","toolCallId":"tc1","toolKind":"read","action":"escalate"}}}}}"#;
        let events = acpx.stdout_line(answer);
        assert_eq!(types(&events), ["approval", "approval_resolved"]);
        assert_eq!(events[0]["subject"], "read");
        assert_eq!(events[0]["toolCallId"], "tc1");
        assert_eq!(events[0]["requestId"], 0);
        assert!(events[0].get("options").is_none());
        assert!(
            events[0]["observed"]["evidence"]
                .as_str()
                .unwrap()
                .contains("toolKind = \"read\"")
        );
        assert_eq!(events[1]["by"], "policy");
        assert_eq!(events[1]["optionId"], "reject");
    }

    #[test]
    fn a_prompt_response_is_not_a_permission_answer() {
        let mut acpx = Acpx::new(Vec::new());
        acpx.stdout_line(
            r#"{"jsonrpc":"2.0","id":0,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#,
        );
        acpx.stdout_line(REQUEST);
        // id 0 both ways: the agent's prompt response must not resolve the permission request.
        assert!(
            acpx.stdout_line(r#"{"jsonrpc":"2.0","id":0,"result":{"stopReason":"cancelled"}}"#)
                .is_empty()
        );
        assert_eq!(acpx.pending.len(), 1);
        let turn = acpx.exited(&ExitInfo {
            code: Some(5),
            signal: None,
        });
        assert_eq!(turn[0]["state"], "failed");
        assert_eq!(turn[0]["stopReason"], "cancelled");
        assert_eq!(turn[0]["sessionId"], "s1");
    }

    #[test]
    fn exit_codes_map_to_turn_states() {
        let state = |code: Option<i32>, stop: &str| {
            let mut acpx = Acpx::new(Vec::new());
            acpx.last_turn = Some(("s".into(), Some(stop.into())));
            acpx.exited(&ExitInfo { code, signal: None })
                .first()
                .map(|e| e["state"].as_str().unwrap().to_owned())
        };
        assert_eq!(state(Some(0), "end_turn").as_deref(), Some("completed"));
        assert_eq!(state(Some(0), "cancelled").as_deref(), Some("cancelled"));
        assert_eq!(state(Some(0), "refusal").as_deref(), Some("refused"));
        assert_eq!(state(Some(130), "cancelled").as_deref(), Some("cancelled"));
        assert_eq!(state(Some(5), "cancelled").as_deref(), Some("failed"));
        assert_eq!(state(Some(1), "end_turn").as_deref(), Some("failed"));
        assert_eq!(state(None, "end_turn"), None);
    }

    #[test]
    fn terminal_prompt_is_the_card_with_the_reachable_buttons() {
        let choose = vec![
            ChooseInput {
                input: "y\r".into(),
                selects: vec!["allow_once".into(), "allow_always".into()],
            },
            ChooseInput {
                input: "n\r".into(),
                selects: vec!["reject_once".into(), "reject_always".into()],
            },
        ];
        let mut acpx = Acpx::new(choose);
        // The prompt may be read before the request line: it waits for it.
        let text = "\u{1b}[1G\u{1b}[0J\r\n[permission] Allow cat ~/.ssh/id_rsa [re";
        assert!(acpx.terminal(text).is_empty());
        assert!(acpx.terminal("ad]? (y/N) \u{1b}[59G").is_empty());
        let events = acpx.stdout_line(REQUEST);
        assert_eq!(types(&events), ["approval"]);
        assert_eq!(events[0]["subject"], "read");
        assert_eq!(
            events[0]["options"],
            json!([{"optionId":"allow","label":"y"},{"optionId":"reject","label":"n"}])
        );
        assert_eq!(events[0]["observed"]["from"], "terminal");
        acpx.user(UserAct::Cancelled);
        let resolved = acpx.stdout_line(
            r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}"#,
        );
        assert_eq!(types(&resolved), ["approval_resolved"]);
        assert_eq!(resolved[0]["by"], "cancel");
    }

    #[test]
    fn strip_escapes_keeps_text() {
        assert_eq!(strip_escapes("\u{1b}[59Gy\r\r\nok"), "y\nok");
        assert_eq!(subject(None), "generic");
        assert_eq!(subject(Some("other")), "generic");
        assert_eq!(subject(Some("execute")), "command");
    }
}
