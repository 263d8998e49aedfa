//! The user's actions ([`UserAction`]) as control commands: each sent when what it needs is
//! shown (an open session, an approval card), then waited on until the client shows its
//! effect or reports an error. Where the client leaves nothing to do (no card, a session it
//! could not open), the action is skipped with a note in the transcript instead.

use std::time::Duration;

use acp_fake_agents::engine::{UserAction, UserDriver, UserFailure};
use acp_vocab::control::Command;
use acp_vocab::envelope::Shape;
use acp_vocab::note::Note;
use acp_vocab::transcript::{Direction, Entry};
use serde_json::Value;

use super::{ControlPlane, note_choose_skipped};

/// How often a wait that also reads the wire ([`ControlPlane::card`]) looks at it again.
const WIRE_POLL: Duration = Duration::from_millis(50);

/// Whether the user gets a card to click for an agent request.
enum Card {
    Shown,
    /// The client answered without one; why, for the note that skips the click.
    NotShown(String),
}

/// A client → agent response (result or error) to agent request `request_id`.
fn is_answer_to(entry: &Entry, request_id: &Value) -> bool {
    entry.direction == Direction::ClientToAgent
        && entry
            .json()
            .is_some_and(|j| Shape::of(j).response_id() == Some(request_id))
}

impl UserDriver for ControlPlane {
    async fn act(&mut self, action: UserAction, timeout: Duration) -> Result<(), UserFailure> {
        // The adapter does what the user does, or says it cannot: never a premise that fails.
        self.perform(action, timeout)
            .await
            .map_err(UserFailure::Failed)
    }
}

impl ControlPlane {
    async fn perform(&mut self, action: UserAction, timeout: Duration) -> Result<(), String> {
        // Half the step: a blocked write is then reported as such, before the step gives up.
        self.write_limit = timeout / 2;
        match action {
            UserAction::NewSession { session, cwd } => {
                self.send(Command::NewSession {
                    seq: 0,
                    session,
                    cwd,
                })
                .await?;
                Ok(())
            }
            UserAction::Prompt {
                session,
                text,
                agent_killed,
            } => {
                // After the agent's death the user waits half a step, inside the step's own
                // deadline, so that giving up is a note and not a failed step.
                let wait = if agent_killed { timeout / 2 } else { timeout };
                let refused = match self.opening_refused(&session, wait).await {
                    Ok(refused) => refused,
                    // The agent is dead: whether the client ever says so is `session-open`'s
                    // to judge, and the user stops waiting to type.
                    Err(silence) if agent_killed => Some(silence),
                    Err(e) => return Err(e),
                };
                if let Some(reason) = refused {
                    // As a user would: no prompt goes into a session the client said it could
                    // not open (`session-open` judges that error).
                    self.rec.note(&Note::UserPromptSkipped {
                        session,
                        reason: format!("the session did not open: {reason}"),
                    });
                    return Ok(());
                }
                self.send(Command::Prompt {
                    seq: 0,
                    session,
                    text,
                })
                .await?;
                Ok(())
            }
            UserAction::Choose {
                request_id,
                option_id,
                ..
            } => {
                if let Card::NotShown(reason) = self.card(&request_id, timeout).await? {
                    // The client answered by itself (CONTROL.md, `policy` in hello): there is
                    // no card to click, and the checks judge the answer.
                    note_choose_skipped(&self.rec, &request_id, &option_id, &reason);
                    return Ok(());
                }
                let seq = self
                    .send(Command::Choose {
                        seq: 0,
                        request_id: request_id.clone(),
                        option_id: option_id.clone(),
                    })
                    .await?;
                let what = format!("approval_resolved for request {request_id}");
                let rid = request_id.clone();
                let answer = self
                    .wait_for(timeout, &what, |s| {
                        if let Some(msg) = s.error_for(seq) {
                            return Some(Err(msg));
                        }
                        s.resolved
                            .iter()
                            .any(|r| r.request_id == rid)
                            .then_some(Ok(()))
                    })
                    .await?;
                answer.map_err(|msg| {
                    format!("the client could not choose option {option_id:?} of request {request_id}: {msg}")
                })
            }
            UserAction::Cancel {
                session,
                pending_request,
            } => {
                if let Some(request_id) = pending_request
                    && let Card::NotShown(reason) = self.card(&request_id, timeout).await?
                {
                    // As for a choose: the approval the user meant to Stop on was answered by
                    // the client itself and never pending (the fuzz driver does the same).
                    self.rec.note(&Note::UserCancelSkipped {
                        request_id: request_id.clone(),
                        reason,
                    });
                    return Ok(());
                }
                self.send(Command::Cancel { seq: 0, session }).await?;
                Ok(())
            }
            // ----- session lifecycle: each command waits for its event, or for the client's
            // `error` about it (a load the agent refused is the client's to show, and the
            // `session-load` check's to grade, not a failed user action).
            UserAction::LoadSession {
                session,
                session_id,
                cwd,
            } => {
                let seq = self
                    .send(Command::LoadSession {
                        seq: 0,
                        session: session.clone(),
                        session_id,
                        cwd,
                    })
                    .await?;
                self.opened_or_error(&session, seq, timeout).await
            }
            UserAction::ResumeSession {
                session,
                session_id,
                cwd,
            } => {
                let seq = self
                    .send(Command::ResumeSession {
                        seq: 0,
                        session: session.clone(),
                        session_id,
                        cwd,
                    })
                    .await?;
                self.opened_or_error(&session, seq, timeout).await
            }
            UserAction::ListSessions { cwd } => {
                let seq = self.send(Command::ListSessions { seq: 0, cwd }).await?;
                let what = format!("sessions_listed (or an error) for list_sessions #{seq}");
                self.wait_for(timeout, &what, |s| {
                    (s.listed.contains(&seq) || s.error_for(seq).is_some()).then_some(())
                })
                .await
            }
            UserAction::CloseSession { session } => {
                self.session_opened(&session, timeout).await?;
                let seq = self
                    .send(Command::CloseSession {
                        seq: 0,
                        session: session.clone(),
                    })
                    .await?;
                let what = format!("session_closed (or an error) for session {session:?}");
                self.wait_for(timeout, &what, |s| {
                    (s.closed.contains(&session) || s.error_for(seq).is_some()).then_some(())
                })
                .await
            }
            // ---- modes and config options ----
            // Like a prompt: the command goes out once the session is open, and what the client
            // then shows (`mode`, `config_option`) is for the session-mode check to judge, not a
            // condition of the run: a mode the agent refuses must stay unshown.
            UserAction::SetMode { session, mode_id } => {
                self.session_opened(&session, timeout).await?;
                self.send(Command::SetMode {
                    seq: 0,
                    session,
                    mode_id,
                })
                .await?;
                Ok(())
            }
            UserAction::SetConfigOption {
                session,
                config_id,
                value,
            } => {
                self.session_opened(&session, timeout).await?;
                self.send(Command::SetConfigOption {
                    seq: 0,
                    session,
                    config_id,
                    value,
                })
                .await?;
                Ok(())
            }
        }
    }

    /// Session lifecycle: waits until the reopened session `handle` is shown, or the client
    /// reported an error for command `seq`.
    async fn opened_or_error(
        &self,
        handle: &str,
        seq: u64,
        timeout: Duration,
    ) -> Result<(), String> {
        let what = format!("session_loaded (or an error) for session {handle:?}");
        self.wait_for(timeout, &what, |s| {
            (s.session_id(handle).is_some() || s.error_for(seq).is_some()).then_some(())
        })
        .await
    }

    /// Waits until session `handle` is open (`None`) or the client has answered its
    /// `new_session` with an error (`Some(message)`).
    async fn opening_refused(
        &self,
        handle: &str,
        timeout: Duration,
    ) -> Result<Option<String>, String> {
        let what = format!("session_opened for session {handle:?}");
        self.wait_for(timeout, &what, |s| {
            if s.session_id(handle).is_some() {
                return Some(None);
            }
            s.opens_sent
                .iter()
                .filter(|(h, _)| h == handle)
                .find_map(|(_, seq)| s.error_for(*seq))
                .map(Some)
        })
        .await
    }

    /// Waits until the approval card of agent request `request_id` is shown, or the client
    /// answered that request without one: by its policy (`approval_resolved` by policy), or
    /// straight on the wire (an error for a request it refused to show, a bare answer). The wire
    /// is not the control plane's to watch, so it is re-read every [`WIRE_POLL`]: a refusal
    /// ends the wait there, not a step timeout later.
    async fn card(&self, request_id: &Value, timeout: Duration) -> Result<Card, String> {
        let what = format!("approval for request {request_id}");
        let mut wire_from = 0;
        self.wait_polling(timeout, &what, Some(WIRE_POLL), |s| {
            if s.approval_shown(request_id) {
                return Some(Card::Shown);
            }
            if s.decided_by_client(request_id) {
                return Some(Card::NotShown(
                    "the client answered this request by itself (approval_resolved by policy) and showed no card".into(),
                ));
            }
            let mut answered = None;
            wire_from = self.rec.visit_from(wire_from, |e| {
                if answered.is_none() && is_answer_to(e, request_id) {
                    answered = Some(e.index);
                }
            });
            answered.map(|index| {
                Card::NotShown(format!(
                    "the client answered this request on the wire (#{index}) and showed no card"
                ))
            })
        })
        .await
    }
}
