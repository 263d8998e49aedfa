//! The control plane as the judge sees it: commands the harness sent the adapter and events the
//! adapter (or an observer) reported, parsed leniently (harness/CONTROL.md), and the queries over
//! them.

use acp_vocab::note::Note;
use serde::Deserialize;
use serde_json::Value;

use super::WireModel;

/// One option button of an approval card.
#[derive(Debug, Clone, PartialEq)]
pub struct PresentedOption<'a> {
    pub option_id: &'a str,
    pub label: &'a str,
}

/// A control-plane command (harness → adapter) or event (adapter → harness), parsed leniently:
/// a message without the fields its type needs is [`Control::Malformed`].
#[derive(Debug, Clone, PartialEq)]
pub enum Control<'a> {
    NewSession {
        seq: Option<u64>,
        session: &'a str,
        cwd: &'a str,
    },
    Prompt {
        seq: Option<u64>,
        session: &'a str,
    },
    Choose {
        seq: Option<u64>,
        request_id: &'a Value,
        option_id: &'a str,
    },
    Cancel {
        seq: Option<u64>,
        session: &'a str,
    },
    Shutdown {
        seq: Option<u64>,
    },
    Hello,
    SessionOpened {
        session: &'a str,
        session_id: &'a str,
    },
    Item {
        session_id: &'a str,
        tool_call_id: &'a str,
        item_type: &'a str,
        status: Option<&'a str>,
        title: Option<&'a str>,
    },
    Approval {
        session_id: &'a str,
        request_id: &'a Value,
        tool_call_id: Option<&'a str>,
        subject: &'a str,
        /// The card's buttons; `None` when they were not seen (an observed card: the schema
        /// lets only observed events leave `options` out).
        options: Option<Vec<PresentedOption<'a>>>,
    },
    ApprovalResolved {
        session_id: &'a str,
        request_id: &'a Value,
        outcome: &'a str,
        option_id: Option<&'a str>,
        by: Option<&'a str>,
    },
    Turn {
        session_id: &'a str,
        state: &'a str,
        stop_reason: Option<&'a str>,
    },
    Error {
        seq: Option<u64>,
        message: &'a str,
    },
    /// A type this model does not know, or a known type missing a field.
    Malformed,
}

/// A control message with its transcript index.
#[derive(Debug, Clone)]
pub struct ControlMsg<'a> {
    pub index: usize,
    /// True for harness → adapter commands.
    pub command: bool,
    /// True for an event a client profile's observer derived (direction `o2h`), not one an
    /// adapter reported.
    pub observed: bool,
    pub control: Control<'a>,
}

pub(super) fn parse_control(json: &Value) -> Control<'_> {
    let s = |k: &str| json.get(k).and_then(Value::as_str);
    let seq = json.get("seq").and_then(Value::as_u64);
    let parsed = match s("type") {
        Some("new_session") => (|| {
            Some(Control::NewSession {
                seq,
                session: s("session")?,
                cwd: s("cwd")?,
            })
        })(),
        Some("prompt") => s("session").map(|session| Control::Prompt { seq, session }),
        Some("choose") => (|| {
            Some(Control::Choose {
                seq,
                request_id: json.get("requestId")?,
                option_id: s("optionId")?,
            })
        })(),
        Some("cancel") => s("session").map(|session| Control::Cancel { seq, session }),
        Some("shutdown") => Some(Control::Shutdown { seq }),
        Some("hello") => Some(Control::Hello),
        // A reopened session (session lifecycle) maps its handle like a new one.
        Some("session_opened" | "session_loaded") => (|| {
            Some(Control::SessionOpened {
                session: s("session")?,
                session_id: s("sessionId")?,
            })
        })(),
        Some("item") => (|| {
            Some(Control::Item {
                session_id: s("sessionId")?,
                tool_call_id: s("toolCallId")?,
                item_type: s("itemType")?,
                status: s("status"),
                title: s("title"),
            })
        })(),
        Some("approval") => (|| {
            let options = match json.get("options") {
                None => None,
                Some(options) => Some(
                    options
                        .as_array()?
                        .iter()
                        .map(|o| {
                            Some(PresentedOption {
                                option_id: o.get("optionId")?.as_str()?,
                                label: o.get("label").and_then(Value::as_str).unwrap_or(""),
                            })
                        })
                        .collect::<Option<Vec<_>>>()?,
                ),
            };
            Some(Control::Approval {
                session_id: s("sessionId")?,
                request_id: json.get("requestId")?,
                tool_call_id: s("toolCallId"),
                subject: s("subject")?,
                options,
            })
        })(),
        Some("approval_resolved") => (|| {
            Some(Control::ApprovalResolved {
                session_id: s("sessionId")?,
                request_id: json.get("requestId")?,
                outcome: s("outcome")?,
                option_id: s("optionId"),
                by: s("by"),
            })
        })(),
        Some("turn") => (|| {
            Some(Control::Turn {
                session_id: s("sessionId")?,
                state: s("state")?,
                stop_reason: s("stopReason"),
            })
        })(),
        Some("error") => Some(Control::Error {
            seq,
            message: s("message").unwrap_or(""),
        }),
        _ => None,
    };
    parsed.unwrap_or(Control::Malformed)
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
            if let Control::Cancel { seq, session } = c.control {
                out.push(UserCancel {
                    index: c.index,
                    session_id: self.session_for_handle(session, c.index),
                    handle: Some(session),
                    seq,
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

    /// `item` events per (sessionId, toolCallId): (transcript index, itemType), in order.
    pub fn items(&self) -> impl Iterator<Item = ((&'a str, &'a str), Vec<(usize, &'a str)>)> + '_ {
        self.items
            .iter()
            .map(|(key, list)| (*key, self.item_list(list)))
    }

    fn item_list(&self, list: &[usize]) -> Vec<(usize, &'a str)> {
        list.iter()
            .filter_map(|&p| match self.controls[p].control {
                Control::Item { item_type, .. } => Some((self.controls[p].index, item_type)),
                _ => None,
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
        match self.controls[p].control {
            Control::Item { item_type, .. } => Some((self.controls[p].index, item_type)),
            _ => None,
        }
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
