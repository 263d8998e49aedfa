//! What the client does with every message of the agent: permission requests, session updates,
//! responses to its own requests, and the agent going away. (The user's side is `client.rs`.)

use serde_json::Value;

use acp_vocab::control::{
    Approval as ShownApproval, ApprovalResolved, Event, Outcome, PresentedOption, ResolvedBy,
    TurnState,
};

use super::*;
use crate::tool_update::{ToolUpdate, Variant};

/// The `sessionUpdate` variants of ACP schema 1.20.0 (stable), the ones this client parses; only
/// the `*-unknown-update` mutants treat any other as more than an update to ignore.
const KNOWN_UPDATES: &[&str] = &[
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "plan_update",
    "plan_removed",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "notice",
    "compaction_update",
    "compaction_summary_chunk",
];

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
        match incoming {
            Incoming::Request { id, method, params } => {
                let result = match method.as_str() {
                    "session/request_permission" => {
                        // Answered now (an error, or cancelled during a cancel) or on choose/cancel.
                        match self.on_permission_request(&id, &params) {
                            Ok(None) => return,
                            Ok(Some(answer)) => Ok(answer),
                            Err(e) => Err(e),
                        }
                    }
                    "fs/read_text_file" => self.on_fs(params, false).await,
                    "fs/write_text_file" => self.on_fs(params, true).await,
                    m if m.starts_with("terminal/") => {
                        let cwd = params
                            .get("sessionId")
                            .and_then(Value::as_str)
                            .and_then(|id| self.session_by_id(id))
                            .map(|s| s.cwd.clone());
                        match self.terminals.serve(m, &id, &params, cwd.as_deref()) {
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
                    // We advertise no elicitation; extensions are unknown too.
                    _ => Err(RpcError::method_not_found(&method)),
                };
                if let Some(conn) = &mut self.conn {
                    conn.respond(&id, result);
                }
            }
            Incoming::Notification { method, params } => match method.as_str() {
                "session/update" => self.on_session_update(params),
                // MUTANT ignore-cancel-request (mrmans0n/alas#1380 review): the agent's
                // withdrawal of a request is lost; the card stays and nobody answers it.
                "$/cancel_request" if self.mutant == Some(Mutant::IgnoreCancelRequest) => {
                    log!("ignoring $/cancel_request {params}");
                }
                "$/cancel_request" => self.on_cancel_request(&params),
                // Spec #88: unrecognized notifications are ignored.
                _ => {}
            },
            Incoming::ToolUpdate(update) => self.on_tool_update(update),
            Incoming::Response { purpose, result } => self.on_response(purpose, result).await,
            Incoming::Closed => self.on_agent_closed().await,
        }
    }

    /// Show a permission request. `Ok(None)`: it waits for the user; `Ok(Some(answer))`: answer
    /// it now; `Err`: the request is invalid.
    pub(super) fn on_permission_request(
        &mut self,
        request_id: &Value,
        params: &Value,
    ) -> Result<Option<Value>, RpcError> {
        let session_id = params
            .get("sessionId")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("`sessionId` (string) is required"))?;
        let (turn, cancelling) = match self.session_by_id(session_id) {
            Some(session) => (session.turn, session.cancelling),
            None => {
                return Err(RpcError::invalid_params(format!(
                    "unknown sessionId {session_id:?}"
                )));
            }
        };
        let tool_call = params
            .get("toolCall")
            .and_then(Value::as_object)
            .ok_or_else(|| RpcError::invalid_params("`toolCall` (object) is required"))?;
        let tool_call_id = tool_call
            .get("toolCallId")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                RpcError::invalid_params("`toolCall.toolCallId` (string) is required")
            })?;
        let offered = params
            .get("options")
            .and_then(Value::as_array)
            .ok_or_else(|| RpcError::invalid_params("`options` (array) is required"))?;
        let (mut options, skipped) = approvals::parse_options(offered);
        for option in skipped {
            log!(
                "permission {request_id}: cannot show an option without a string optionId: {option}"
            );
        }

        // The request's toolCall is one more announcement of the tool call.
        self.announce(session_id, tool_call_id, tool_call.clone(), turn);
        if !cancelling {
            if let Some(option_id) = self.own_answer(session_id, tool_call, &options) {
                // Decided without the user: no card, the harness sees `by: policy`.
                self.events.push(Event::ApprovalResolved(ApprovalResolved {
                    session_id: session_id.to_owned(),
                    request_id: request_id.clone(),
                    outcome: Outcome::Selected,
                    option_id: Some(option_id.clone()),
                    by: Some(ResolvedBy::Policy),
                    observed: None,
                }));
                let allows = options
                    .iter()
                    .any(|o| o.option_id == option_id && o.is_allow());
                if allows {
                    self.grant_fs(session_id, tool_call_id);
                }
                return Ok(Some(selected(&option_id)));
            }
        }
        let effective = self.timeline.call(session_id, tool_call_id);
        // Without a row (only `no-row-for-request-only`) the request's own toolCall is all there is.
        let mut subject = classify(effective.unwrap_or(tool_call));
        // MUTANT always-command (bb #1719 before #1803): every approval is a command approval
        // (its command: rawInput.command, else the title, else the kind), whatever the kind.
        if self.mutant == Some(Mutant::AlwaysCommand) {
            let shown = effective.and_then(|call| {
                call.get("rawInput")
                    .and_then(|input| input.get("command"))
                    .or_else(|| call.get("title"))
                    .or_else(|| call.get("kind"))
            });
            log!(
                "approval {request_id} shown as command {}",
                shown.unwrap_or(&Value::Null)
            );
            subject = Subject::Command;
        }
        // MUTANT kind-from-request (acpx inferToolKind, t3code `toolCall.kind ?? "other"`,
        // CodeCompanion): the subject comes from the request's own kind only, never merged with
        // the earlier tool_call; `other` or no kind at all is shown as a generic approval.
        if self.mutant == Some(Mutant::KindFromRequest) {
            let mut kind_only = serde_json::Map::new();
            if let Some(kind) = tool_call.get("kind") {
                kind_only.insert("kind".into(), kind.clone());
            }
            subject = classify(&kind_only);
        }
        // MUTANT collapse-by-kind (bb buildAcpApprovalDecisions, t3code selectPermissionOptionId,
        // CodeCompanion build_kind_map): one button per decision — the first allow_once, the
        // first allow_always, the first reject_once; every other option has no button.
        if self.mutant == Some(Mutant::CollapseByKind) {
            let mut kinds_shown: Vec<String> = Vec::new();
            options.retain(|o| {
                let decision = matches!(
                    o.kind.as_str(),
                    "allow_once" | "allow_always" | "reject_once"
                );
                let first = !kinds_shown.contains(&o.kind);
                kinds_shown.push(o.kind.clone());
                decision && first
            });
        }

        let mut labels = approvals::labels(&options);
        // MUTANT duplicate-labels (ZERO #915 "two buttons a user cannot tell apart",
        // CodeCompanion "&2 Allow"): a button says what kind it is, not which option it is.
        if self.mutant == Some(Mutant::DuplicateLabels) {
            labels = options
                .iter()
                .map(|o| if o.is_allow() { "Allow" } else { "Reject" }.to_owned())
                .collect();
        }
        // MUTANT global-approval-handler (Nano-Collective/nanocoder#1080): the approval handler is
        // one global slot that the last prompt installed, so the card appears in (and is
        // cancelled with) the session prompted last, whatever session asked.
        let mut shown_session = session_id.to_owned();
        if self.mutant == Some(Mutant::GlobalApprovalHandler) {
            if let Some(last) = &self.last_prompted {
                shown_session = last.clone();
            }
        }
        self.events.push(Event::Approval(ShownApproval {
            session_id: shown_session.clone(),
            request_id: request_id.clone(),
            tool_call_id: Some(tool_call_id.to_owned()),
            subject,
            options: Some(
                options
                    .iter()
                    .zip(labels)
                    .map(|(o, label)| PresentedOption {
                        option_id: o.option_id.clone(),
                        label,
                    })
                    .collect(),
            ),
            observed: None,
        }));
        // MUTANT flip-on-approval (bb #1719 timeline): the approval retypes the row to a command
        // row; `Timeline` shows its real type again once the agent reports it finished.
        if self.mutant == Some(Mutant::FlipOnApproval) {
            let view =
                self.timeline
                    .retype_while_running(session_id, tool_call_id, Subject::Command);
            self.show_item(view);
        }
        let approval = Approval {
            request_id: request_id.clone(),
            session_id: shown_session,
            tool_call_id: tool_call_id.to_owned(),
            options,
        };
        let mut answer_cancelled = cancelling;
        // MUTANT request-after-stop-to-user (ACP tool-calls, #44): a request that arrives after
        // Stop waits on its card like any other, for a user who already said stop.
        if self.mutant == Some(Mutant::RequestAfterStopToUser) {
            answer_cancelled = false;
        }
        if answer_cancelled {
            // Spec #44: the turn is cancelled, so a request arriving now is answered cancelled.
            self.events.push(resolved_by_cancel(approval));
            return Ok(Some(cancelled()));
        }
        // MUTANT overwrite-same-tool-call (jupyter-ai-acp-client permission_manager): pending
        // approvals are keyed by (session, toolCallId); a second request for the same tool call
        // replaces the first, whose JSON-RPC request is then never answered, even on cancel.
        if self.mutant == Some(Mutant::OverwriteSameToolCall) {
            for dropped in self
                .approvals
                .take_tool_call(&approval.session_id, &approval.tool_call_id)
            {
                log!(
                    "approval {} replaced by {request_id} (same toolCallId)",
                    dropped.request_id
                );
            }
        }
        self.approvals.add(approval);
        Ok(None)
    }

    /// The option the client picks by itself for this request (policy or remembered grant), if
    /// any.
    pub(super) fn own_answer(
        &self,
        session_id: &str,
        request: &serde_json::Map<String, Value>,
        options: &[approvals::PermissionOption],
    ) -> Option<String> {
        let workspace = self.session_by_id(session_id).map(|s| s.cwd.clone())?;
        self.decider.answer_for(
            &self.timeline,
            session_id,
            Path::new(&workspace),
            request,
            options,
        )
    }

    /// Takes the notification's params by value: the timeline keeps the update's fields
    /// (moved, not copied: a tool call's content is replaced by every update that has one).
    pub(super) fn on_session_update(&mut self, mut params: Value) {
        let update = params
            .get_mut("update")
            .and_then(Value::as_object_mut)
            .map(std::mem::take);
        let Some(session_id) = params.get("sessionId").and_then(Value::as_str) else {
            log!("ignoring session/update without a sessionId");
            return;
        };
        let Some(turn) = self.session_by_id(session_id).map(|s| s.turn) else {
            log!("ignoring session/update for unknown session {session_id:?}");
            return;
        };
        let Some(update) = update else {
            log!("ignoring session/update without an update object");
            return;
        };
        let variant = update.get("sessionUpdate").and_then(Value::as_str);
        let unknown = variant.is_some_and(|v| !KNOWN_UPDATES.contains(&v));
        // MUTANT crash-on-unknown-update (RyderFreeman4Logos/cli-sub-agent#2585): a typed parser
        // that rejects a variant it does not know, and a client that dies of the decode error.
        if unknown && self.mutant == Some(Mutant::CrashOnUnknownUpdate) {
            eprintln!(
                "acp-reference-client: error: failed to decode session/update: unknown variant `{}`",
                variant.unwrap_or_default()
            );
            std::process::exit(1);
        }
        // MUTANT stop-after-unknown-update (xenodium/agent-shell#455): the update loop stops at
        // the first update it does not understand and processes nothing after it.
        if self.mutant == Some(Mutant::StopAfterUnknownUpdate) {
            if unknown {
                self.deaf_to_updates = true;
            }
            if self.deaf_to_updates {
                log!("ignoring session/update after an unknown variant");
                return;
            }
        }
        let mutant = self.mutant;
        if let Some(session) = self.session_by_id_mut(session_id) {
            session.history.apply(&update, mutant);
        }
        // Modes and config options the agent changed itself (client/modes.rs).
        if let Some("current_mode_update" | "config_option_update") = variant {
            self.on_settings_update(session_id, &update);
            return;
        }
        if variant == Some("plan") {
            self.on_plan_update(session_id, &update);
            return;
        }
        // Message chunks, usage, …: not part of this client's model.
        if let Some("tool_call" | "tool_call_update") =
            update.get("sessionUpdate").and_then(Value::as_str)
        {
            let Some(tool_call_id) = update
                .get("toolCallId")
                .and_then(Value::as_str)
                .map(str::to_owned)
            else {
                log!("ignoring a tool call update without a string toolCallId");
                return;
            };
            // MUTANT card-dropped-on-progress (xenodium/agent-shell#369): the card is shown only
            // while the tool call is `pending`, so an update that moves it on (or retitles it)
            // before the grant takes the card away, and nobody can answer the request.
            if self.mutant == Some(Mutant::CardDroppedOnProgress)
                && update.get("sessionUpdate").and_then(Value::as_str) == Some("tool_call_update")
                && (update.get("title").is_some()
                    || update.get("status").and_then(Value::as_str) != Some("pending"))
            {
                for dropped in self.approvals.take_tool_call(session_id, &tool_call_id) {
                    log!(
                        "approval {} hidden: its tool call moved on",
                        dropped.request_id
                    );
                }
            }
            self.announce(session_id, &tool_call_id, update, turn);
        }
    }

    /// [`Self::on_session_update`] of a tool call's update read from its line (`tool_update.rs`):
    /// the same steps, for a `tool_call`/`tool_call_update` with a string `toolCallId`.
    pub(super) fn on_tool_update(&mut self, update: ToolUpdate) {
        let session_id = update.session_id();
        let Some(turn) = self.session_by_id(session_id).map(|s| s.turn) else {
            log!("ignoring session/update for unknown session {session_id:?}");
            return;
        };
        // stop-after-unknown-update: a known variant, but the loop may have stopped already.
        if self.mutant == Some(Mutant::StopAfterUnknownUpdate) && self.deaf_to_updates {
            log!("ignoring session/update after an unknown variant");
            return;
        }
        let tool_call_id = update.tool_call_id();
        if let Some(session) = self.session_by_id_mut(session_id) {
            session.history.tool_call(tool_call_id);
        }
        // MUTANT card-dropped-on-progress: as in `on_session_update`.
        if self.mutant == Some(Mutant::CardDroppedOnProgress)
            && update.variant() == Variant::ToolCallUpdate
            && (update.title().is_some() || update.status() != Some("pending"))
        {
            for dropped in self.approvals.take_tool_call(session_id, tool_call_id) {
                log!(
                    "approval {} hidden: its tool call moved on",
                    dropped.request_id
                );
            }
        }
        // MUTANT no-row-for-request-only: as in `announce`.
        if self.mutant == Some(Mutant::NoRowForRequestOnly)
            && !self.timeline.knows(session_id, tool_call_id)
            && update.variant() != Variant::ToolCall
        {
            return;
        }
        let view = self.timeline.announce_update(update, turn);
        self.show_item(view);
    }

    /// One announcement of a tool call (an update, or a permission request's `toolCall`) reaches
    /// the timeline, which creates the row if the id is new.
    pub(super) fn announce(
        &mut self,
        session_id: &str,
        tool_call_id: &str,
        fields: serde_json::Map<String, Value>,
        turn: u64,
    ) {
        // MUTANT no-row-for-request-only (rows built from `tool_call` alone; the shape of
        // google-gemini/gemini-cli#21783): an id first seen in a permission request or an update
        // gets no row.
        if self.mutant == Some(Mutant::NoRowForRequestOnly)
            && !self.timeline.knows(session_id, tool_call_id)
            && fields.get("sessionUpdate").and_then(Value::as_str) != Some("tool_call")
        {
            return;
        }
        let view = self
            .timeline
            .announce_moved(session_id, tool_call_id, fields, turn);
        self.show_item(view);
    }

    /// `$/cancel_request {requestId}`: the agent withdraws a request. A pending approval is
    /// answered `cancelled` (a valid result, spec #52) and its card closes.
    pub(super) fn on_cancel_request(&mut self, params: &Value) {
        let Some(request_id) = params.get("requestId") else {
            return;
        };
        if let Some(approval) = self.approvals.take(request_id) {
            self.answer_cancelled(approval);
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
