//! Agent `session/request_permission` requests with everything linked to them: the client's
//! answers, the approval cards the adapter showed, the user's clicks and the resolutions.

use serde_json::Value;

use super::{EffectiveToolCall, MsgKind, ResponseBody, WireModel};

/// One option offered in a `session/request_permission`.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedOption<'a> {
    pub option_id: &'a str,
    pub name: Option<&'a str>,
    pub kind: Option<&'a str>,
}

impl OfferedOption<'_> {
    /// `allow_once` or `allow_always`.
    pub fn is_allow(&self) -> bool {
        matches!(self.kind, Some("allow_once" | "allow_always"))
    }

    /// `reject_once` or `reject_always`.
    pub fn is_reject(&self) -> bool {
        matches!(self.kind, Some("reject_once" | "reject_always"))
    }
}

/// An agent `session/request_permission` with everything linked to it.
#[derive(Debug, Clone)]
pub struct PermissionRequest<'a> {
    pub index: usize,
    pub conn: u32,
    pub id: &'a Value,
    pub session_id: Option<&'a str>,
    /// `params.toolCall` (a ToolCallUpdate).
    pub tool_call: Option<&'a Value>,
    pub tool_call_id: Option<&'a str>,
    pub options: Vec<OfferedOption<'a>>,
    /// Transcript indices of the client's responses, in order.
    pub answers: Vec<usize>,
    /// Transcript indices of matching control `approval` events.
    pub approvals: Vec<usize>,
    /// Transcript indices of matching control `approval_resolved` events.
    pub resolutions: Vec<usize>,
    /// Transcript indices of `choose` commands aimed at this request.
    pub chooses: Vec<usize>,
    /// Fault kind if the frame was a deliberate fault.
    pub fault: Option<&'a str>,
    /// The effective tool call the request is about (computed in the model's single pass).
    pub effective: EffectiveToolCall<'a>,
}

impl<'a> PermissionRequest<'a> {
    pub fn offers(&self, option_id: &str) -> bool {
        self.options.iter().any(|o| o.option_id == option_id)
    }

    pub fn option(&self, option_id: &str) -> Option<&OfferedOption<'a>> {
        self.options.iter().find(|o| o.option_id == option_id)
    }

    /// The options offered with this id (more than one when the agent broke ACP's "unique
    /// identifier for this option").
    pub fn options_with(&self, option_id: &str) -> impl Iterator<Item = &OfferedOption<'a>> {
        self.options
            .iter()
            .filter(move |o| o.option_id == option_id)
    }

    /// True if the agent offered this id for an allow and a reject option alike: an answer with
    /// it has no one meaning.
    pub fn id_allows_and_rejects(&self, option_id: &str) -> bool {
        self.options_with(option_id).any(OfferedOption::is_allow)
            && self.options_with(option_id).any(OfferedOption::is_reject)
    }

    pub fn offered_ids(&self) -> Vec<&'a str> {
        self.options.iter().map(|o| o.option_id).collect()
    }
}

/// What a client's response to a permission request says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PermissionAnswer<'a> {
    Selected(&'a str),
    Cancelled,
    /// A JSON-RPC error response.
    Error,
    /// A result that is neither outcome.
    Malformed,
}

impl PermissionAnswer<'_> {
    pub fn describe(&self) -> String {
        match self {
            PermissionAnswer::Selected(id) => format!("selected \"{id}\""),
            PermissionAnswer::Cancelled => "cancelled".to_owned(),
            PermissionAnswer::Error => "a JSON-RPC error".to_owned(),
            PermissionAnswer::Malformed => "a malformed outcome".to_owned(),
        }
    }
}

impl<'a> WireModel<'a> {
    pub fn permission_at(&self, index: usize) -> Option<&PermissionRequest<'a>> {
        self.perm_at.get(&index).map(|&p| &self.permissions[p])
    }

    /// What the response at `index` says as a permission answer.
    pub fn permission_answer(&self, index: usize) -> PermissionAnswer<'a> {
        let Some(msg) = self.msg(index) else {
            return PermissionAnswer::Malformed;
        };
        match msg.kind {
            MsgKind::Response {
                body: ResponseBody::Error { .. },
                ..
            } => PermissionAnswer::Error,
            MsgKind::Response {
                body: ResponseBody::Result(result),
                ..
            } => {
                let outcome = result.get("outcome");
                match outcome
                    .and_then(|o| o.get("outcome"))
                    .and_then(Value::as_str)
                {
                    Some("cancelled") => PermissionAnswer::Cancelled,
                    Some("selected") => match outcome
                        .and_then(|o| o.get("optionId"))
                        .and_then(Value::as_str)
                    {
                        Some(id) => PermissionAnswer::Selected(id),
                        None => PermissionAnswer::Malformed,
                    },
                    _ => PermissionAnswer::Malformed,
                }
            }
            _ => PermissionAnswer::Malformed,
        }
    }
}

/// Among candidate permission positions (ascending), the latest one that satisfies `prefer`,
/// else the latest one.
pub(super) fn pick(
    permissions: &[PermissionRequest<'_>],
    candidates: Option<&Vec<usize>>,
    prefer: impl Fn(&PermissionRequest<'_>) -> bool,
) -> Option<usize> {
    let candidates = candidates?;
    candidates
        .iter()
        .rev()
        .find(|&&p| prefer(&permissions[p]))
        .or_else(|| candidates.last())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire_model::test_support::*;
    use acp_vocab::control::{Approval, Event};
    use acp_vocab::transcript::{Direction, Recorder};
    use serde_json::json;

    #[test]
    fn permission_requests_link_answers_and_control_events() {
        let rec = Recorder::new();
        let req = a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s",
            "toolCall":{"toolCallId":"c"},"options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"rej","name":"No","kind":"reject_once"}]}}),
        );
        let approval = ev(
            &rec,
            json!({"type":"approval","sessionId":"s","requestId":7,"toolCallId":"c","subject":"generic",
            "options":[{"optionId":"once","label":"Allow"},{"optionId":"rej","label":"No"}]}),
        );
        let choose = rec.record(
            0,
            Direction::HarnessToAdapter,
            br#"{"type":"choose","seq":3,"requestId":7,"optionId":"rej"}"#,
        );
        let answer = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"rej"}}}),
        );
        let resolved = ev(
            &rec,
            json!({"type":"approval_resolved","sessionId":"s","requestId":7,"outcome":"selected","optionId":"rej","by":"user"}),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        let p = m.permission_at(req).unwrap();
        assert_eq!(p.offered_ids(), vec!["once", "rej"]);
        assert_eq!(p.answers, vec![answer]);
        assert_eq!(p.approvals, vec![approval]);
        assert_eq!(p.chooses, vec![choose]);
        assert_eq!(p.resolutions, vec![resolved]);
        assert_eq!(
            m.permission_answer(answer),
            PermissionAnswer::Selected("rej")
        );
        assert!(matches!(
            m.control_at(approval).and_then(|c| c.event()),
            Some(Event::Approval(Approval { options: Some(options), .. })) if options.len() == 2
        ));
    }
}
