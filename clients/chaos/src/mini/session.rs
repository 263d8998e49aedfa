//! Sessions and turns: `initialize`, `session/new` (with `echo`'s authentication retry),
//! `session/prompt`, and what their responses mean.

use std::sync::atomic::Ordering;

use acp_vocab::control::{Event, TurnState};
use acp_vocab::method::Method;
use serde_json::{Value, json};

use super::control::turn;
use super::{Mini, Purpose, SessionAsk, log};
use crate::Mode;

impl Mini {
    pub(super) fn new_session(&mut self, seq: Option<u64>, handle: String, cwd: String) {
        if self.agent.is_none() {
            if let Err(message) = self.spawn_agent() {
                self.error(seq, &message);
                if !self.adapter {
                    self.exit = Some(1);
                }
                return;
            }
            // `echo` advertises what the reference client does, so that no scenario stops at
            // `initialize` for a missing capability and the baseline plays the same frames.
            let fs = self.mode == Mode::Echo;
            self.request(
                Method::Initialize.as_str(),
                json!({"protocolVersion": 1,
                       "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs},
                                              "terminal": crate::terminal::advertises_terminal(self.mode)},
                       "clientInfo": {"name": "acp-chaos-client", "version": env!("CARGO_PKG_VERSION")}}),
                Purpose::Initialize,
            );
        }
        let ask = SessionAsk { seq, handle, cwd };
        if self.initialized {
            self.open_session(ask);
        } else {
            self.waiting.push(ask);
        }
    }

    pub(super) fn open_session(&mut self, ask: SessionAsk) {
        self.request(
            Method::SessionNew.as_str(),
            json!({"cwd": ask.cwd, "mcpServers": []}),
            Purpose::NewSession(ask),
        );
    }

    pub(super) fn prompt(&mut self, session_id: String, text: String) {
        self.show(turn(&session_id, TurnState::Running));
        self.request(
            Method::SessionPrompt.as_str(),
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
            Purpose::Prompt { session_id },
        );
        if self.mode == Mode::StopReadingAgent {
            self.agent_paused.store(true, Ordering::SeqCst);
        }
    }

    pub(super) fn on_response(
        &mut self,
        purpose: Purpose,
        result: Option<&Value>,
        error: Option<&Value>,
    ) {
        match purpose {
            Purpose::Initialize => {
                self.initialized = true;
                self.auth_methods = result
                    .and_then(|r| r.get("authMethods"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|m| Some(m.get("id")?.as_str()?.to_owned()))
                    .collect();
                self.misbehave_after_initialize();
                for ask in std::mem::take(&mut self.waiting) {
                    self.open_session(ask);
                }
            }
            Purpose::NewSession(ask) => {
                let Some(session_id) = result
                    .and_then(|r| r.get("sessionId"))
                    .and_then(Value::as_str)
                else {
                    let method = auth_method(error, &self.auth_methods);
                    match method.filter(|_| self.mode == Mode::Echo) {
                        Some(method_id) => self.request(
                            Method::Authenticate.as_str(),
                            json!({"methodId": method_id}),
                            Purpose::Authenticate(ask),
                        ),
                        None => self.error(ask.seq, "session/new failed"),
                    }
                    return;
                };
                self.sessions
                    .push((ask.handle.clone(), session_id.to_owned()));
                self.show(Event::SessionOpened {
                    session: ask.handle,
                    session_id: session_id.to_owned(),
                });
                if let Some(text) = self.prompt.take() {
                    self.prompt(session_id.to_owned(), text);
                }
            }
            Purpose::Authenticate(ask) => match result {
                Some(_) => self.open_session(ask),
                None => self.error(ask.seq, "authenticate failed"),
            },
            Purpose::Prompt { session_id } => {
                self.stopped_turns.retain(|stopped| *stopped != session_id);
                let stop = result
                    .and_then(|r| r.get("stopReason"))
                    .and_then(Value::as_str);
                let state = match stop {
                    Some("cancelled") => TurnState::Cancelled,
                    Some("refusal") => TurnState::Refused,
                    Some(_) => TurnState::Completed,
                    None => TurnState::Failed,
                };
                self.show(turn(&session_id, state));
                if !self.adapter {
                    log(&format!(
                        "the turn ended: {}",
                        stop.unwrap_or("no stopReason")
                    ));
                    self.exit = Some(0);
                }
            }
        }
    }
}

/// For an "authentication required" error (-32000, ACP's `auth_required`): the first method its
/// `data.authMethods` offers, else the first of `initialize`'s — what a client that authenticates
/// without asking picks. None for any other error, or when no method is offered.
fn auth_method(error: Option<&Value>, from_initialize: &[String]) -> Option<String> {
    let error = error?;
    if error.get("code").and_then(Value::as_i64) != Some(-32000) {
        return None;
    }
    let offered = error
        .pointer("/data/authMethods")
        .and_then(Value::as_array)
        .and_then(|methods| methods.first()?.get("id")?.as_str());
    offered
        .map(str::to_owned)
        .or_else(|| from_initialize.first().cloned())
}
