//! The control plane as the judge sees it: commands the harness sent the adapter and events the
//! adapter (or an observer) reported, parsed leniently (harness/CONTROL.md), and the queries over
//! them.

use acp_vocab::control::{Command, Event, Item, Message};
use acp_vocab::method::Method;
use acp_vocab::note::Note;
use serde::Deserialize;
use serde_json::Value;

use super::{Side, WireModel};

/// A control message with its transcript index. The message itself is the vocabulary's
/// ([`acp_vocab::control`]), parsed once by the entry ([`Entry::control`]) and borrowed from it.
///
/// [`Entry::control`]: acp_vocab::transcript::Entry::control
#[derive(Debug, Clone)]
pub struct ControlMsg<'a> {
    pub index: usize,
    /// True for harness → adapter commands.
    pub command: bool,
    /// True for an event a client profile's observer derived (direction `o2h`), not one an
    /// adapter reported.
    pub observed: bool,
    /// `None` for a line that is no valid message of its direction (a transcript recorded
    /// elsewhere; the harness itself ends a run at the first invalid control line).
    pub message: Option<&'a Message>,
}

impl<'a> ControlMsg<'a> {
    /// The event, for an adapter's or observer's message.
    pub fn event(&self) -> Option<&'a Event> {
        match self.message? {
            Message::Event(event) => Some(event),
            Message::Command(_) => None,
        }
    }

    /// The `item` event, if this is one.
    pub fn item(&self) -> Option<&'a Item> {
        match self.event()? {
            Event::Item(item) => Some(item),
            _ => None,
        }
    }

    /// The command, for a harness → adapter message.
    pub fn command(&self) -> Option<&'a Command> {
        match self.message? {
            Message::Command(command) => Some(command),
            Message::Event(_) => None,
        }
    }
}

/// A user cancel: a control `cancel` command, or a `{"type":"user_cancel","sessionId":…}` note
/// for wire-only clients.
#[derive(Debug, Clone, PartialEq)]
pub struct UserCancel<'a> {
    /// Transcript index of the command or note.
    pub index: usize,
    /// The ACP session it targets (resolved from the handle via `session_opened`), if known.
    pub session_id: Option<&'a str>,
    /// The control handle (`"s1"`) for a control command.
    pub handle: Option<&'a str>,
    pub seq: Option<u64>,
}

impl<'a> WireModel<'a> {
    pub fn control_at(&self, index: usize) -> Option<&ControlMsg<'a>> {
        let p = self.controls.partition_point(|c| c.index < index);
        self.controls.get(p).filter(|c| c.index == index)
    }

    /// Control messages with transcript index >= `from`.
    pub fn controls_from(&self, from: usize) -> &[ControlMsg<'a>] {
        let start = self.controls.partition_point(|c| c.index < from);
        &self.controls[start..]
    }

    /// True if a client profile's observer declared (note `{"type":"observer","reports":[…]}`)
    /// that it reports control events of this `type` for a client without an adapter.
    pub fn observer_reports(&self, event: &str) -> bool {
        self.notes.iter().any(|(_, note)| {
            matches!(Note::deserialize(*note), Ok(Note::Observer { reports, .. }) if reports.iter().any(|r| r == event))
        })
    }

    /// Every user cancel, in order.
    pub fn user_cancels(&self) -> Vec<UserCancel<'a>> {
        let mut out = Vec::new();
        let mut controls = self.controls.iter().peekable();
        let push_control = |c: &ControlMsg<'a>, out: &mut Vec<UserCancel<'a>>| {
            if let Some(Command::Cancel { seq, session }) = c.command() {
                out.push(UserCancel {
                    index: c.index,
                    session_id: self.session_for_handle(session, c.index),
                    handle: Some(session),
                    seq: Some(*seq),
                });
            }
        };
        for &(index, note) in &self.notes {
            while let Some(c) = controls.next_if(|c| c.index < index) {
                push_control(c, &mut out);
            }
            if matches!(Note::deserialize(note), Ok(Note::UserCancel { .. })) {
                out.push(UserCancel {
                    index,
                    session_id: note.get("sessionId").and_then(Value::as_str),
                    handle: note.get("session").and_then(Value::as_str),
                    seq: None,
                });
            }
        }
        for c in controls {
            push_control(c, &mut out);
        }
        out
    }

    /// The ACP session a user cancel targets: its own, or, for a wire-only note without one, the
    /// session of the last `session/prompt` before it (the only session if there was none).
    /// `None` for a control command whose handle never opened a session.
    pub fn cancel_target(&self, cancel: &UserCancel<'a>) -> Option<&'a str> {
        if let Some(sid) = cancel.session_id.filter(|s| !s.is_empty()) {
            return Some(sid);
        }
        if cancel.handle.is_some() && cancel.seq.is_some() {
            return None;
        }
        self.msgs[..self.msgs.partition_point(|m| m.index < cancel.index)]
            .iter()
            .rev()
            .find(|m| m.from == Side::Client && m.is_request_for(Method::SessionPrompt))
            .and_then(|m| m.params_session_id())
            .or(match self.session_ids.as_slice() {
                [only] => Some(*only),
                _ => None,
            })
    }

    /// `item` events per (sessionId, toolCallId): (transcript index, itemType), in order.
    pub fn items(&self) -> impl Iterator<Item = ((&'a str, &'a str), Vec<(usize, &'a str)>)> + '_ {
        self.items
            .iter()
            .map(|(key, list)| (*key, self.item_list(list)))
    }

    fn item_list(&self, list: &[usize]) -> Vec<(usize, &'a str)> {
        list.iter()
            .filter_map(|&p| {
                let item = self.controls[p].item()?;
                Some((self.controls[p].index, item.item_type.as_str()))
            })
            .collect()
    }

    /// The client's latest item type for a tool call strictly before transcript index `at`.
    pub fn item_type_before(
        &self,
        session_id: &str,
        tool_call_id: &str,
        at: usize,
    ) -> Option<(usize, &'a str)> {
        let list = self.items.get(&(session_id, tool_call_id))?;
        let n = list.partition_point(|&p| self.controls[p].index < at);
        let p = *list.get(n.checked_sub(1)?)?;
        let item = self.controls[p].item()?;
        Some((self.controls[p].index, item.item_type.as_str()))
    }

    /// `item` events of one (sessionId, toolCallId), in order.
    pub fn item_events(&self, session_id: &str, tool_call_id: &str) -> Vec<&ControlMsg<'a>> {
        self.items
            .get(&(session_id, tool_call_id))
            .map(|list| list.iter().map(|&p| &self.controls[p]).collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire_model::test_support::*;
    use acp_vocab::transcript::Recorder;
    use serde_json::json;

    #[test]
    fn items_are_indexed_per_tool_call() {
        let rec = Recorder::new();
        let a = ev(
            &rec,
            json!({"type":"item","sessionId":"s","toolCallId":"c","itemType":"file_change","status":"pending","title":"t"}),
        );
        let b = ev(
            &rec,
            json!({"type":"item","sessionId":"s","toolCallId":"c","itemType":"command","status":"pending","title":"t"}),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.item_type_before("s", "c", b), Some((a, "file_change")));
        assert_eq!(m.item_type_before("s", "c", b + 1), Some((b, "command")));
        assert_eq!(m.item_type_before("s", "c", a), None);
        let all: Vec<_> = m.items().collect();
        assert_eq!(
            all,
            vec![(("s", "c"), vec![(a, "file_change"), (b, "command")])]
        );
    }
}
