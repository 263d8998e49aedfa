//! Permission requests: shown as approvals, answered by the harness's choice, by the Stop of
//! their turn, or (wire only) by the client's own policy.

use acp_vocab::control::{
    Approval, ApprovalResolved, Event, Outcome, PresentedOption, ResolvedBy, Subject,
};
use acp_vocab::method::Method;
use serde_json::{Value, json};

use super::Mini;
use crate::Mode;

impl Mini {
    /// A `session/request_permission`: shown as a `command` approval with one button per option.
    pub(super) fn ask_permission(&mut self, id: Value, params: Option<&Value>) {
        let params = params.cloned().unwrap_or(Value::Null);
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let buttons: Vec<PresentedOption> = params["options"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| {
                let option_id = o.get("optionId")?.as_str()?;
                let label = o.get("name").and_then(Value::as_str).unwrap_or(option_id);
                Some(PresentedOption {
                    option_id: option_id.to_owned(),
                    label: label.to_owned(),
                })
            })
            .collect();
        self.show(Event::Approval(Approval {
            session_id: session_id.clone(),
            request_id: id.clone(),
            // A request without a toolCallId breaks the schema's `toolCallId` (a string): the
            // harness is then told "" as the row, as this client always showed it.
            tool_call_id: Some(
                params["toolCall"]["toolCallId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ),
            subject: Subject::Command,
            options: Some(buttons),
            observed: None,
        }));
        // Wire only there is no user to ask: the client's own policy answers.
        let by_policy = (!self.adapter).then(|| policy_choice(&params)).flatten();
        let stopped = self.stopped_turns.contains(&session_id);
        self.approvals.push((id.clone(), session_id.clone()));
        if stopped {
            self.cancel_approvals(&session_id);
        } else if let Some(option_id) = by_policy {
            self.choose(None, id, &option_id);
        }
    }

    pub(super) fn choose(&mut self, seq: Option<u64>, request_id: Value, option_id: &str) {
        let Some(pos) = self.approvals.iter().position(|(id, _)| *id == request_id) else {
            self.error(seq, "no pending approval with that requestId");
            return;
        };
        let (request_id, session_id) = self.approvals.remove(pos);
        let answer = json!({"jsonrpc": "2.0", "id": request_id,
                            "result": {"outcome": {"outcome": "selected", "optionId": option_id}}});
        if self.mode == Mode::BadIds {
            // An id the agent never used, then the right answer twice.
            let mut stray = answer.clone();
            stray["id"] = json!("chaos-no-such-request");
            self.send(&stray);
            self.send(&answer);
        }
        self.send(&answer);
        self.show(Event::ApprovalResolved(ApprovalResolved {
            session_id,
            request_id,
            outcome: Outcome::Selected,
            option_id: Some(option_id.to_owned()),
            by: Some(ResolvedBy::User),
            observed: None,
        }));
    }

    pub(super) fn cancel(&mut self, session_id: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "method": Method::SessionCancel.as_str(),
                          "params": {"sessionId": session_id}}),
        );
        if self.mode == Mode::Echo {
            self.stopped_turns.push(session_id.to_owned());
        }
        self.cancel_approvals(session_id);
    }

    /// Answers every open approval of the session `cancelled`, as the turn's Stop does.
    pub(super) fn cancel_approvals(&mut self, session_id: &str) {
        self.resolve_approvals(|(_, sid)| sid == session_id);
    }

    /// Answers the open approvals that `which` picks `cancelled`, and closes their cards.
    pub(super) fn resolve_approvals(&mut self, which: impl Fn(&(Value, String)) -> bool) {
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.approvals)
            .into_iter()
            .partition(which);
        self.approvals = others;
        for (request_id, sid) in mine {
            self.send(&json!({"jsonrpc": "2.0", "id": request_id,
                              "result": {"outcome": {"outcome": "cancelled"}}}));
            self.show(Event::ApprovalResolved(ApprovalResolved {
                session_id: sid,
                request_id,
                outcome: Outcome::Cancelled,
                option_id: None,
                by: Some(ResolvedBy::Cancel),
                observed: None,
            }));
        }
    }
}

/// The option a wire-only client picks by itself: the first `allow_once`, else the first.
fn policy_choice(params: &Value) -> Option<String> {
    let options = params["options"].as_array()?;
    options
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .or_else(|| options.first())
        .and_then(|o| o["optionId"].as_str())
        .map(str::to_owned)
}
