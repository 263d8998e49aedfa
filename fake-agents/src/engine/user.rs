//! `user` steps: resolved against what was sent, queued, and carried out one after another in
//! the background (see the engine's module doc for why they do not block the wire steps).

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::{Connector, Engine, StepResult, Stop, UserAction, UserDriver, UserFailure};
use crate::scenario::{Choice, Step, UserStep};

pub(super) struct Queued {
    action: UserAction,
    timeout: Duration,
    step: usize,
    step_ref: String,
}

#[derive(Debug, Default, Clone)]
pub(super) struct UserProgress {
    pub(super) done: usize,
    /// The step whose action was not done, and how the run ends for it.
    pub(super) failed: Option<(usize, Ended)>,
}

/// How a user action that was not done ends the run.
#[derive(Debug, Clone)]
pub(super) enum Ended {
    Incomplete(String),
    NotApplicable(String),
}

impl Ended {
    fn stop(self, step: usize) -> Stop {
        match self {
            Ended::Incomplete(reason) => Stop::Incomplete { step, reason },
            Ended::NotApplicable(reason) => Stop::NotApplicable(reason),
        }
    }
}

/// Runs queued user actions one after another; never returns (the engine's future ends the
/// race in [`run`](super::run)).
pub(super) async fn drive_user<U: UserDriver>(
    user: &mut U,
    mut queue: mpsc::UnboundedReceiver<Queued>,
    progress: watch::Sender<UserProgress>,
) -> Infallible {
    while let Some(q) = queue.recv().await {
        let result =
            match crate::machine_time::timeout(q.timeout, user.act(q.action, q.timeout)).await {
                Ok(r) => r,
                Err(waited) => Err(format!(
                    "the user action did not finish within {}",
                    waited.describe(q.timeout)
                )
                .into()),
            };
        let ended = match result {
            Ok(()) => {
                progress.send_modify(|p| p.done += 1);
                continue;
            }
            Err(UserFailure::Failed(message)) => {
                Ended::Incomplete(format!("{}: {message}", q.step_ref))
            }
            Err(UserFailure::NotApplicable(reason)) => Ended::NotApplicable(reason),
        };
        progress.send_modify(|p| p.failed = Some((q.step, ended)));
        break;
    }
    std::future::pending().await
}

/// Waits for `fut`, unless a user action fails first.
pub(super) async fn guard<F: Future>(
    mut progress: watch::Receiver<UserProgress>,
    fut: F,
) -> Result<F::Output, Stop> {
    let failed = async move {
        let failed = match progress.wait_for(|p| p.failed.is_some()).await {
            Ok(p) => p.failed.clone(),
            Err(_) => None,
        };
        match failed {
            Some(f) => f,
            // The driver is gone without a failure: nothing to report, let `fut` decide.
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        out = fut => Ok(out),
        (step, ended) = failed => Err(ended.stop(step)),
    }
}

impl<'a, C: Connector> Engine<'a, C> {
    pub(super) fn check_user(&self) -> StepResult {
        match &self.progress.borrow().failed {
            Some((step, ended)) => Err(ended.clone().stop(*step)),
            None => Ok(()),
        }
    }

    /// Resolves a user step and queues it; it runs in the background (see the module doc).
    pub(super) fn user(&mut self, step: &Step, u: &UserStep, timeout: Duration) -> StepResult {
        let fill = |s: &str| self.vars.fill_str(s).map_err(|m| self.harness(step, m));
        let sent = |alias: &str| {
            self.sent.get(alias).cloned().ok_or_else(|| {
                self.harness(
                    step,
                    format!("request `{alias}` was never sent (its step did not run)"),
                )
            })
        };
        let action = match u {
            UserStep::NewSession { session, cwd } => UserAction::NewSession {
                session: fill(session)?,
                cwd: fill(cwd)?,
            },
            UserStep::Prompt { session, text } => UserAction::Prompt {
                session: fill(session)?,
                text: fill(text)?,
                agent_killed: self.agent_killed,
            },
            UserStep::Cancel { session, pending } => UserAction::Cancel {
                session: fill(session)?,
                pending_request: match pending {
                    Some(alias) => Some(sent(alias)?.id),
                    None => None,
                },
            },
            // ----- session lifecycle
            UserStep::LoadSession {
                session,
                session_id,
                cwd,
            } => UserAction::LoadSession {
                session: fill(session)?,
                session_id: fill(session_id)?,
                cwd: fill(cwd)?,
            },
            UserStep::ResumeSession {
                session,
                session_id,
                cwd,
            } => UserAction::ResumeSession {
                session: fill(session)?,
                session_id: fill(session_id)?,
                cwd: fill(cwd)?,
            },
            UserStep::ListSessions { cwd } => UserAction::ListSessions {
                cwd: match cwd {
                    Some(c) => Some(fill(c)?),
                    None => None,
                },
            },
            UserStep::CloseSession { session } => UserAction::CloseSession {
                session: fill(session)?,
            },
            // -----
            // modes and config options
            UserStep::SetMode { session, mode } => UserAction::SetMode {
                session: fill(session)?,
                mode_id: fill(mode)?,
            },
            UserStep::SetConfigOption {
                session,
                config,
                value,
            } => UserAction::SetConfigOption {
                session: fill(session)?,
                config_id: fill(config)?,
                value: fill(value)?,
            },
            UserStep::Choose { request, choice } => {
                let sent = sent(request)?;
                let offered = sent.options.clone().unwrap_or(Value::Null);
                let options: Vec<(&str, Option<&str>)> = offered
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|o| {
                                Some((
                                    o.get("optionId")?.as_str()?,
                                    o.get("kind").and_then(Value::as_str),
                                ))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let option_id = match choice {
                    Choice::Kind(kind) => options
                        .iter()
                        .find(|(_, k)| *k == Some(kind.as_str()))
                        .map(|(id, _)| id.to_string())
                        .ok_or_else(|| {
                            self.harness(
                                step,
                                format!("request `{request}` offers no option of kind {kind}"),
                            )
                        })?,
                    Choice::Option(id) => {
                        if !options.iter().any(|(o, _)| o == id) {
                            return Err(self.harness(
                                step,
                                format!("request `{request}` does not offer option {id}"),
                            ));
                        }
                        id.clone()
                    }
                    Choice::Each => self.case.each_option.clone().ok_or_else(|| {
                        self.harness(
                            step,
                            "`each = true` but this case was not expanded (use Scenario::cases)",
                        )
                    })?,
                };
                UserAction::Choose {
                    request_id: sent.id,
                    option_id,
                    offered,
                }
            }
        };
        self.queued += 1;
        self.queue
            .send(Queued {
                action,
                timeout,
                step: step.top,
                step_ref: self.step_ref(step),
            })
            .map_err(|_| self.harness(step, "the user driver stopped"))
    }

    /// At the end, every queued user action must have finished.
    pub(super) async fn wait_user_idle(&mut self) -> StepResult {
        let queued = self.queued;
        let mut progress = self.progress.clone();
        let state = match progress
            .wait_for(|p| p.failed.is_some() || p.done >= queued)
            .await
        {
            Ok(p) => p.clone(),
            Err(_) => return Err(Stop::Harness("the user driver stopped".into())),
        };
        match state.failed {
            Some((step, ended)) => Err(ended.stop(step)),
            None => Ok(()),
        }
    }
}
