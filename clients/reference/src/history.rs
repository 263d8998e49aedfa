//! A session's conversation as this client shows it: messages (their chunks joined in order) and
//! tool calls (one entry per `toolCallId`), oldest first. Every `session/update` of the session
//! is folded in, live or replayed by `session/load`, so a reopened session shows what it showed
//! before (the `session_loaded` event reports it).

use std::collections::HashSet;

use crate::mutation::Mutant;
use acp_vocab::control::{HistoryEntry, HistoryKind};
use serde_json::{Map, Value};

#[derive(Debug, Default, Clone)]
pub struct History {
    entries: Vec<HistoryEntry>,
    /// The `messageId` of the last entry, when it is a message that had one: a chunk with the
    /// same kind and id continues it, another id starts a new message.
    last_message_id: Option<String>,
    /// The `toolCallId`s that have their entry: every update of a tool call asks, and a long
    /// session has thousands of tool calls (a scan of the entries made that quadratic).
    tool_calls: HashSet<String>,
}

impl History {
    pub fn entries(&self) -> &[HistoryEntry] {
        &self.entries
    }

    /// Folds one `update` object of a `session/update` in; updates that are not part of the
    /// conversation (plans, usage, commands, modes, unknown variants) leave it as it is.
    pub fn apply(&mut self, update: &Map<String, Value>, mutant: Option<Mutant>) {
        let kind = match update.get("sessionUpdate").and_then(Value::as_str) {
            // MUTANT replay-user-as-agent (raphaeltm/simple-agent-manager#79): the user's
            // replayed words are not shown as the user's.
            Some("user_message_chunk") if mutant == Some(Mutant::ReplayUserAsAgent) => {
                HistoryKind::AgentMessage
            }
            Some("user_message_chunk") => HistoryKind::UserMessage,
            Some("agent_message_chunk") => HistoryKind::AgentMessage,
            Some("agent_thought_chunk") => HistoryKind::AgentThought,
            Some("tool_call" | "tool_call_update") => {
                let Some(id) = update.get("toolCallId").and_then(Value::as_str) else {
                    return;
                };
                self.tool_call(id);
                return;
            }
            _ => return,
        };
        let text = update
            .get("content")
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|c| c.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let message_id = update
            .get("messageId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        self.chunk(kind, text, message_id);
    }

    fn chunk(&mut self, kind: HistoryKind, text: &str, message_id: Option<String>) {
        let continues = self.entries.last().is_some_and(|last| {
            last.kind == kind
                && match (&self.last_message_id, &message_id) {
                    (Some(a), Some(b)) => a == b,
                    // Without ids (older agents), consecutive chunks of one kind are one message.
                    (None, None) => true,
                    _ => false,
                }
        });
        if continues {
            if let Some(last) = self.entries.last_mut() {
                last.text.get_or_insert_with(String::new).push_str(text);
            }
        } else {
            // An empty chunk that starts nothing (qwen-code's usage carrier) is not a message.
            if text.is_empty() {
                return;
            }
            self.entries.push(HistoryEntry {
                kind,
                text: Some(text.to_owned()),
                tool_call_id: None,
            });
        }
        self.last_message_id = message_id;
    }

    /// A tool call's announcement: its entry, if the id is new (`apply` of a `tool_call` or
    /// `tool_call_update`).
    pub fn tool_call(&mut self, id: &str) {
        if !self.tool_calls.contains(id) {
            self.tool_calls.insert(id.to_owned());
            self.entries.push(HistoryEntry {
                kind: HistoryKind::ToolCall,
                text: None,
                tool_call_id: Some(id.to_owned()),
            });
            self.last_message_id = None;
        }
    }

    /// Appends `other`'s entries (the `replay-shown-twice` mutant only).
    pub fn extend_from(&mut self, other: &History) {
        self.entries.extend(other.entries.iter().cloned());
        self.tool_calls.extend(other.tool_calls.iter().cloned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(h: &mut History, v: Value) {
        h.apply(v.as_object().unwrap(), None);
    }

    #[test]
    fn chunks_join_per_message_and_tool_calls_appear_once() {
        let mut h = History::default();
        apply(
            &mut h,
            json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"Fix"}}),
        );
        apply(
            &mut h,
            json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":" it"}}),
        );
        apply(
            &mut h,
            json!({"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"A"}}),
        );
        apply(
            &mut h,
            json!({"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":"B"}}),
        );
        apply(
            &mut h,
            json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"ls"}),
        );
        apply(
            &mut h,
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}),
        );
        apply(
            &mut h,
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}),
        );
        apply(&mut h, json!({"sessionUpdate":"plan","entries":[]}));
        let got: Vec<(HistoryKind, Option<&str>)> = h
            .entries()
            .iter()
            .map(|e| (e.kind, e.text.as_deref().or(e.tool_call_id.as_deref())))
            .collect();
        assert_eq!(
            got,
            vec![
                (HistoryKind::UserMessage, Some("Fix it")),
                (HistoryKind::AgentMessage, Some("A")),
                (HistoryKind::AgentMessage, Some("B")),
                (HistoryKind::ToolCall, Some("t")),
            ]
        );
    }

    /// Each tool call has one entry, in the order first announced, however its updates
    /// interleave with another's and with messages.
    #[test]
    fn interleaved_tool_calls_keep_one_entry_each() {
        let mut h = History::default();
        for (kind, id) in [
            ("tool_call", "a"),
            ("tool_call_update", "b"),
            ("tool_call_update", "a"),
            ("tool_call", "b"),
            ("tool_call_update", "c"),
            ("tool_call_update", "a"),
        ] {
            apply(&mut h, json!({"sessionUpdate":kind,"toolCallId":id}));
        }
        let ids: Vec<_> = h
            .entries()
            .iter()
            .map(|e| e.tool_call_id.as_deref())
            .collect();
        assert_eq!(ids, [Some("a"), Some("b"), Some("c")]);
    }
}
