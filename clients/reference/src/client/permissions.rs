//! Permission requests from the agent: shown as approval cards, answered by the client's own
//! policy or by the user, and withdrawn by the agent (`$/cancel_request`).

use serde_json::Value;

use acp_vocab::control::{
    Approval as ShownApproval, ApprovalResolved, Event, Outcome, PresentedOption, ResolvedBy,
};

use super::*;

impl Client {
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
        // MUTANT require-raw-input (tiann/hapi#1781): the client's own type of a tool call
        // requires its input, so codex-acp 1.6's sparse request (`"rawInput": null`, valid ACP)
        // is refused as invalid and never shown.
        if self.mutant == Some(Mutant::RequireRawInput)
            && tool_call.get("rawInput").is_some_and(Value::is_null)
        {
            return Err(RpcError::invalid_params(
                "`toolCall.rawInput`: expected an object, got null",
            ));
        }
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

    /// `$/cancel_request {requestId}`: the agent withdraws a request. A pending approval is
    /// answered `cancelled` (a valid result, spec #52) and its card closes.
    pub(super) fn on_cancel_request(&mut self, params: &Value) {
        let Some(request_id) = params.get("requestId") else {
            return;
        };
        if let Some(approval) = self.approvals.take(request_id) {
            // MUTANT select-withdrawn (https://agentclientprotocol.com/protocol/v1/cancellation):
            // the withdrawn card is closed with its first allow button, so the agent gets an
            // approval of the tool call it gave up.
            if self.mutant == Some(Mutant::SelectWithdrawn)
                && let Some(option) = approval.options.iter().find(|o| o.is_allow()).cloned()
            {
                log!(
                    "closing withdrawn approval {request_id} with {:?}",
                    option.option_id
                );
                self.approvals.add(approval);
                self.choose(0, request_id, &option.option_id);
                return;
            }
            self.answer_cancelled(approval);
        }
    }
}
