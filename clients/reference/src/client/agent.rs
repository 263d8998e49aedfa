//! What the client does with every message of the agent: the dispatch, responses to its own
//! requests, and the agent going away. Permission requests are in `permissions.rs`, session
//! updates in `updates.rs`; the user's side is `client.rs`.

use serde_json::Value;

use acp_vocab::method::Method;

use acp_vocab::control::{Event, TurnState};

use super::*;

impl Client {
    /// The next message from the agent (never resolves while there is no agent). Deferred
    /// answers (`terminal/wait_for_exit`) are sent meanwhile.
    pub async fn next_from_agent(&mut self) -> Incoming<Purpose> {
        loop {
            let Some(conn) = &mut self.conn else {
                return std::future::pending().await;
            };
            let (id, result) = tokio::select! {
                incoming = conn.recv() => return incoming,
                answer = self.terminals.next_answer() => answer,
            };
            if let Some(conn) = &mut self.conn {
                conn.respond(&id, result);
            }
        }
    }

    pub async fn on_agent(&mut self, incoming: Incoming<Purpose>) {
        // The first segments of ACP's methods (`late-unknown-request` answers the others late).
        const ACP_NAMESPACES: &[&str] = &["session", "fs", "terminal", "elicitation", "$"];
        // MUTANT late-unknown-request: the held answers go out once the agent's next message
        // has arrived.
        let held = std::mem::take(&mut self.held_answers);
        if let Some(conn) = &mut self.conn {
            for (id, error) in held {
                conn.respond(&id, Err(error));
            }
        }
        match incoming {
            Incoming::Request { id, method, params } => {
                let result = match Method::parse(&method) {
                    Some(Method::SessionRequestPermission) => {
                        // Answered now (an error, or cancelled during a cancel) or on choose/cancel.
                        match self.on_permission_request(&id, &params) {
                            Ok(None) => return,
                            Ok(Some(answer)) => Ok(answer),
                            Err(e) => Err(e),
                        }
                    }
                    Some(Method::FsReadTextFile) => self.on_fs(params, false).await,
                    Some(Method::FsWriteTextFile) => self.on_fs(params, true).await,
                    // MUTANT die-on-wait-for-exit: the client dies while the agent waits for a
                    // command's exit (a handler that aborts the process), so that request and
                    // any other pending one are never answered.
                    Some(Method::TerminalWaitForExit)
                        if self.mutant == Some(Mutant::DieOnWaitForExit) =>
                    {
                        eprintln!("acp-reference-client: aborting in terminal/wait_for_exit {id}");
                        std::process::exit(101);
                    }
                    _ if method.starts_with("terminal/") => {
                        let cwd = params
                            .get("sessionId")
                            .and_then(Value::as_str)
                            .and_then(|id| self.session_by_id(id))
                            .map(|s| s.cwd.clone());
                        match self.terminals.serve(&method, &id, &params, cwd.as_deref()) {
                            Ok(None) => return, // answered when the command exits
                            Ok(Some(answer)) => Ok(answer),
                            Err(e) => Err(e),
                        }
                    }
                    // MUTANT ignore-extension-request (carlos-algms/agentic.nvim#314): an
                    // unrecognized request is dropped unanswered; the agent waits for its id.
                    _ if self.mutant == Some(Mutant::IgnoreExtensionRequest)
                        && method.starts_with('_') =>
                    {
                        log!("ignoring the agent's request {id} ({method})");
                        return;
                    }
                    // MUTANT late-unknown-request (QwenLM/qwen-code#4925): a request of no ACP
                    // method and no `_` prefix is answered only once the agent sends something
                    // else, i.e. after an agent that waits for it has given up waiting.
                    _ if self.mutant == Some(Mutant::LateUnknownRequest)
                        && !method.starts_with('_')
                        && !ACP_NAMESPACES.contains(&method.split('/').next().unwrap_or("")) =>
                    {
                        log!("holding the answer to the agent's request {id} ({method})");
                        self.held_answers
                            .push((id, RpcError::method_not_found(&method)));
                        return;
                    }
                    // We advertise no elicitation; extensions are unknown too.
                    _ => Err(RpcError::method_not_found(&method)),
                };
                if let Some(conn) = &mut self.conn {
                    conn.respond(&id, result);
                }
            }
            Incoming::Notification { method, params } => match Method::parse(&method) {
                Some(Method::SessionUpdate) => self.on_session_update(params),
                // MUTANT ignore-cancel-request (mrmans0n/alas#1380 review): the agent's
                // withdrawal of a request is lost; the card stays and nobody answers it.
                Some(Method::CancelRequest) if self.mutant == Some(Mutant::IgnoreCancelRequest) => {
                    log!("ignoring $/cancel_request {params}");
                }
                Some(Method::CancelRequest) => self.on_cancel_request(&params),
                // Spec #88: unrecognized notifications are ignored.
                _ => {}
            },
            Incoming::ToolUpdate(update) => self.on_tool_update(update),
            Incoming::Response { purpose, result } => self.on_response(purpose, result).await,
            Incoming::Closed => self.on_agent_closed().await,
        }
    }

    pub(super) async fn on_response(&mut self, purpose: Purpose, result: Result<Value, RpcError>) {
        match purpose {
            Purpose::CancelRequest => log!("the agent answered session/cancel: {result:?}"),
            Purpose::Initialize => {
                let waiting = match std::mem::replace(&mut self.agent, AgentState::Ready) {
                    AgentState::Initializing(waiting) => waiting,
                    other => {
                        self.agent = other;
                        return;
                    }
                };
                let failure = match &result {
                    Err(e) => Some(format!("initialize failed: {} ({})", e.message, e.code)),
                    Ok(r) => match r.get("protocolVersion") {
                        Some(v) if v.as_u64() == Some(PROTOCOL_VERSION) => None,
                        // MUTANT any-protocol-version (acpx 0.19.1): the chosen version is
                        // never compared with ours.
                        _ if self.mutant == Some(Mutant::AnyProtocolVersion) => None,
                        other => Some(format!(
                            "the agent chose protocolVersion {}; this client speaks only {PROTOCOL_VERSION}",
                            other.unwrap_or(&Value::Null)
                        )),
                    },
                };
                if let Ok(r) = &result {
                    self.agent_caps = r.get("agentCapabilities").cloned().unwrap_or(Value::Null);
                    self.remember_auth_methods(r);
                }
                match failure {
                    None => {
                        for handle in waiting {
                            self.send_session_new(&handle);
                        }
                    }
                    Some(reason) => {
                        // Spec #14: close the connection and inform the user.
                        self.report_error(None, reason.clone());
                        self.agent = AgentState::Gone(reason);
                        if let Some(conn) = self.conn.take() {
                            conn.shutdown().await;
                        }
                        self.fail_sessions_opening();
                        // MUTANT local-session-after-failed-start (the shape of
                        // different-ai-studio/teamclu#548): the tab opened for the session stays
                        // open under a local id although the agent never opened it.
                        if self.mutant == Some(Mutant::LocalSessionAfterFailedStart) {
                            for handle in waiting {
                                self.events.push(Event::SessionOpened {
                                    session_id: format!("local-{handle}"),
                                    session: handle,
                                });
                            }
                        }
                    }
                }
            }
            Purpose::NewSession { seq, handle } => {
                let session_id = result
                    .as_ref()
                    .ok()
                    .and_then(|r| r.get("sessionId"))
                    .and_then(Value::as_str);
                match session_id {
                    Some(id) if self.session_by_id(id).is_none() => {
                        let id = id.to_owned();
                        if let Some(session) = self.sessions.iter_mut().find(|s| s.handle == handle)
                        {
                            session.id = Some(id.clone());
                        }
                        self.events.push(Event::SessionOpened {
                            session: handle,
                            session_id: id.clone(),
                        });
                        if let Ok(r) = &result {
                            self.adopt_settings(&id, r);
                        }
                    }
                    // The agent wants authentication first (client/auth.rs).
                    None if matches!(&result, Err(e) if e.code == auth::AUTH_REQUIRED)
                        && self.on_auth_required(&handle) => {}
                    _ => {
                        self.sessions.retain(|s| s.handle != handle);
                        let why = match &result {
                            Err(e) => format!("{} ({})", e.message, e.code),
                            Ok(r) => match r.get("sessionId").and_then(Value::as_str) {
                                Some(id) => format!("the agent reused sessionId {id:?}"),
                                None => format!("no sessionId in the response {r}"),
                            },
                        };
                        self.report_error(Some(seq), format!("session/new failed: {why}"));
                    }
                }
            }
            // session lifecycle (sessions.rs)
            Purpose::Reopen { seq, handle } => self.on_reopened(seq, handle, result),
            Purpose::ListSessions { seq } => self.on_listed(seq, result),
            Purpose::CloseSession { seq, handle } => self.on_closed(seq, handle, result),
            // modes, config options and authentication
            Purpose::SetMode {
                seq,
                session_id,
                mode_id,
            } => self.on_set_mode_answer(seq, &session_id, &mode_id, result),
            Purpose::SetConfigOption {
                seq,
                session_id,
                config_id,
                value,
            } => self.on_set_config_answer(seq, &session_id, &config_id, &value, result),
            Purpose::Authenticate { handle } => self.on_authenticate_answer(&handle, result),
            Purpose::Prompt { session_id } => match result {
                Ok(r) => {
                    let stop_reason = r
                        .get("stopReason")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    let (state, message) = match stop_reason.as_deref() {
                        Some("end_turn" | "max_tokens" | "max_turn_requests") => {
                            (TurnState::Completed, None)
                        }
                        // MUTANT cancel-as-failed (ZERO #915): the cancellation surfaces as an
                        // internal error, and the turn is shown as failed.
                        Some("cancelled") if self.mutant == Some(Mutant::CancelAsFailed) => (
                            TurnState::Failed,
                            Some("internal error: the turn was aborted".to_owned()),
                        ),
                        Some("cancelled") => (TurnState::Cancelled, None),
                        Some("refusal") => (TurnState::Refused, None),
                        _ => (
                            TurnState::Failed,
                            Some(format!(
                                "the agent ended the turn with no known stopReason: {r}"
                            )),
                        ),
                    };
                    self.end_turn(&session_id, state, stop_reason, message);
                }
                Err(e) => {
                    let message = format!("{} ({})", e.message, e.code);
                    self.end_turn(&session_id, TurnState::Failed, None, Some(message));
                }
            },
        }
    }

    pub(super) async fn on_agent_closed(&mut self) {
        log!("the agent closed its stdout");
        // MUTANT hang-on-agent-death (issue 42 item 11's notebook-kernel client: an SDK that
        // never fails its pending requests at EOF): the dead agent is not noticed; the client
        // neither reports it nor exits, and waits for ever.
        if self.mutant == Some(Mutant::HangOnAgentDeath) {
            self.conn.take();
            return;
        }
        // The agent's commands die with it.
        self.terminals.shutdown().await;
        if let Some(conn) = self.conn.take() {
            if let Some(status) = conn.shutdown().await {
                log!("the agent exited: {status}");
            }
        }
        self.agent = AgentState::Gone("the agent exited".into());
        self.fail_sessions_opening();
        // Nobody is left to answer: the cards close (a later choose is an error).
        for approval in self.approvals.take_all() {
            log!(
                "approval {} closed unanswered: the agent exited",
                approval.request_id
            );
        }
        let running: Vec<String> = self
            .sessions
            .iter()
            .filter(|s| s.running)
            .filter_map(|s| s.id.clone())
            .collect();
        // MUTANT agent-death-as-completed (acp-cli 0.3.1, src/cli/prompt.rs): the lost
        // connection is taken for the end of the turn, and the turn shows done.
        let state = if self.mutant == Some(Mutant::AgentDeathAsCompleted) {
            TurnState::Completed
        } else {
            TurnState::Failed
        };
        for session_id in running {
            self.end_turn(
                &session_id,
                state,
                None,
                Some("the agent exited during the turn".into()),
            );
        }
    }

    /// Close the agent's stdin, wait for it briefly, kill it if needed.
    pub async fn shutdown(&mut self) {
        if let Some(conn) = self.conn.take() {
            conn.shutdown().await;
        }
        // No command outlives the client.
        self.terminals.shutdown().await;
    }
}
