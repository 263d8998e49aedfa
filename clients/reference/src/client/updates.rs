//! `session/update` notifications: the timeline, tool-call rows and what the user is shown.

use serde_json::Value;

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
}
