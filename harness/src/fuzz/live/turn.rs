//! One permission turn on the running client:
//!
//! ```text
//! prompt → session/prompt → [tool_call] → [tool_call_update] → session/request_permission
//!   [→ $/cancel_request] → the user: choose / Stop (once the card is shown) → the client's answer
//!   [→ session/cancel] → tool_call_update → stopReason → the client shows the turn's end
//! ```
//!
//! The user's actions are the control plane's ([`UserAction`]), so a click waits for the card
//! and is skipped when the client's policy answered first, exactly as in a scenario run.

use std::time::Duration;

use acp_fake_agents::engine::UserAction;
use acp_vocab::envelope::Shape;
use acp_vocab::method::Method;
use acp_vocab::note::Note;
use acp_vocab::transcript::{Direction, Entry};
use serde_json::Value;

use super::{HANDLE, Live, SESSION_ID, Stop, is_request, reply};
use crate::fuzz::driver::DriverConfig;
use crate::fuzz::frames::{self, Answer, Names};
use crate::fuzz::input::{Action, OptionKind, PermissionTurn};
use acp_judge::record::{CaseRecord, RunEnd};

impl Live {
    /// Plays one turn; returns its case record and whether the client must be restarted.
    pub(in crate::fuzz) async fn play(
        &mut self,
        turn: &PermissionTurn,
        n: u64,
        cfg: &DriverConfig,
    ) -> (CaseRecord, bool) {
        self.turns += 1;
        // A new, self-contained exchange: what the client sent before it is already recorded.
        if let Some(link) = &self.link {
            link.mailbox().clear();
        }
        self.plane.forget_approvals();
        let (end, grant) = match self.turn(turn, n, cfg.step_timeout).await {
            Ok(grant) => (RunEnd::Completed, grant),
            Err(stop) => (self.end_of(stop).await, None),
        };
        let restart = end != RunEnd::Completed;
        let own = self.rec.take();
        // The user's click counts as a grant only if the card it was meant for was shown (a
        // client whose policy answered first showed none, and nothing was clicked).
        let granted = grant.is_some_and(|request_id| card_shown(&own, &request_id));
        let entries = self.slice(own, n, granted);
        (self.record(entries, end, n, cfg), restart)
    }

    /// The turn's exchange. `Ok(Some(request id))`: the user chose an option whose id is also an
    /// `allow_always` option's (ids collide, and the client may take the click for that one).
    async fn turn(
        &mut self,
        turn: &PermissionTurn,
        n: u64,
        timeout: Duration,
    ) -> Result<Option<Value>, Stop> {
        let prompt = UserAction::Prompt {
            session: HANDLE.into(),
            text: format!("fuzz turn {n}"),
            agent_killed: false,
        };
        self.act(prompt, timeout).await?;
        let prompt = self
            .wait_wire(timeout, Method::SessionPrompt.as_str(), |j| {
                is_request(j, Method::SessionPrompt)
            })
            .await?;

        let tool_call_id = format!("call_{n}");
        let (cwd, outside) = (self.workspace.clone(), self.outside.clone());
        let names = Names {
            session_id: SESSION_ID,
            tool_call_id: &tool_call_id,
            cwd: &cwd,
            outside: &outside,
            template: false,
        };
        let request_id = frames::request_id(turn.request_id, n);
        let mut out = Vec::new();
        out.extend(turn.announce.as_ref().map(|s| names.announce(s)));
        out.extend(turn.progress.as_ref().map(|s| names.progress(s)));
        out.push(names.request(turn, &request_id));
        if turn.action == Action::Leave {
            out.push(names.withdraw(&request_id));
        }
        self.send(out, timeout).await?;

        let mut grant = None;
        let user = match (turn.action, turn.chosen()) {
            (Action::Leave, _) => None,
            (Action::Choose(_), Some(option)) => {
                if turn
                    .options
                    .iter()
                    .any(|o| o.id == option.id && o.kind == OptionKind::AllowAlways)
                {
                    grant = Some(request_id.clone());
                }
                Some(UserAction::Choose {
                    request_id: request_id.clone(),
                    option_id: option.id.as_str().to_owned(),
                    offered: Value::Null,
                })
            }
            // Stop, or a click on an option that is not there: the user presses Stop.
            _ => Some(UserAction::Cancel {
                session: HANDLE.into(),
                pending_request: Some(request_id.clone()),
            }),
        };
        if let Some(action) = user {
            // Waits for the card (or the client's own answer, then does nothing).
            self.act(action, timeout).await?;
        }
        let answer = self
            .wait_wire(timeout, "the answer to the permission request", |j| {
                is_response(j, &request_id)
            })
            .await?;
        let answer = frames::answer_of(turn, &answer.json);
        let cancelled = turn.action == Action::Cancel && answer == Answer::Cancelled;
        if cancelled {
            self.wait_wire(timeout, Method::SessionCancel.as_str(), |j| {
                j.get("method").and_then(Value::as_str) == Some(Method::SessionCancel.as_str())
            })
            .await?;
        }
        let mut out = Vec::new();
        out.extend(names.finish(
            turn,
            answer == Answer::Allowed && turn.action != Action::Cancel,
        ));
        out.push(reply(&prompt, frames::prompt_result(cancelled)));
        self.send(out, timeout).await?;
        // Every prompt's turn shown ended (one prompt per turn, so this one's).
        if !self.plane.settle(timeout).await {
            self.rec.note(&Note::StepTimeout {
                step: None,
                label: None,
                reason: None,
                waiting_for: Some("the end of the turn".to_owned()),
                // The control plane's settle wait: its length is not the driver's to tell.
                waited_us: None,
            });
            return Err(self.plane_stop(format!(
                "the client reported no end of the turn within {} ms",
                timeout.as_millis()
            )));
        }
        Ok(grant)
    }
}

/// A response (result or error) to request `id`.
fn is_response(json: &Value, id: &Value) -> bool {
    Shape::of(json).response_id() == Some(id)
}

/// The adapter showed the approval card of `request_id` among these entries.
fn card_shown(entries: &[Entry], request_id: &Value) -> bool {
    entries.iter().any(|e| {
        e.direction == Direction::AdapterToHarness
            && e.json().is_some_and(|j| {
                j.get("type").and_then(Value::as_str) == Some("approval")
                    && j.get("requestId") == Some(request_id)
            })
    })
}
