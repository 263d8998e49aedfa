//! Tool calls as the agent described them: the effective tool call (every `tool_call` /
//! `tool_call_update` merged, then a permission request's own `toolCall`), its effective kind
//! and the subject a client is expected to show for it.

use super::{PermissionRequest, ToolFields, WireModel};
use acp_vocab::method::Method;

/// Approval subjects and timeline item types are the vocabulary's words (CONTROL.md).
pub use acp_vocab::control::Subject;

/// True for a tool kind that names what the tool does (everything but `other`/unknown).
pub fn is_specific_kind(kind: &str) -> bool {
    Subject::of_kind(kind).is_some()
}

/// What the agent had told the client about one tool call at a point in time: every
/// `tool_call`/`tool_call_update` merged in order (present fields replace; `content` and
/// `locations` replace the collection), then the permission request's own `toolCall`. A kind of
/// `other` (or an unknown word) never overrides a specific kind announced earlier.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EffectiveToolCall<'a> {
    pub tool_call_id: &'a str,
    pub title: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub status: Option<&'a str>,
    /// What the expected subject reads of the last `content`, `locations` and `rawInput`
    /// merged: whether a content item is a diff, the locations are a non-empty array, and
    /// `rawInput.command` is a string.
    has_diff: bool,
    has_locations: bool,
    has_command: bool,
    /// How many frames were merged.
    pub merged: usize,
    /// The last frame merged.
    pub last_frame: Option<usize>,
    /// The frame whose `kind` is the effective kind.
    pub kind_frame: Option<usize>,
}

impl<'a> EffectiveToolCall<'a> {
    pub fn new(tool_call_id: &'a str) -> Self {
        EffectiveToolCall {
            tool_call_id,
            ..Default::default()
        }
    }

    /// Merges one `ToolCall`/`ToolCallUpdate` object (a `null` field counts as absent).
    pub fn merge(&mut self, fields: ToolFields<'a>, index: usize) {
        self.title = fields.title.or(self.title);
        if let Some(kind) = fields.kind {
            self.merge_kind(kind, index);
        }
        self.status = fields.status.or(self.status);
        self.has_diff = fields.content_has_diff.unwrap_or(self.has_diff);
        self.has_locations = fields.locations_non_empty.unwrap_or(self.has_locations);
        self.has_command = fields.raw_input_has_command.unwrap_or(self.has_command);
        self.merged += 1;
        self.last_frame = Some(index);
    }

    /// A kind of `other` (or an unknown word) never overrides a specific kind.
    fn merge_kind(&mut self, kind: &'a str, index: usize) {
        let keep_previous = !is_specific_kind(kind) && self.kind.is_some_and(is_specific_kind);
        if !keep_previous {
            self.kind = Some(kind);
            self.kind_frame = Some(index);
        }
    }

    /// `rawInput.command` is a string.
    pub fn has_command(&self) -> bool {
        self.has_command
    }

    /// Some content item is a diff.
    pub fn has_diff(&self) -> bool {
        self.has_diff
    }

    /// At least one file location.
    pub fn has_locations(&self) -> bool {
        self.has_locations
    }

    /// True when showing `shown` instead of the expected subject is only a weaker deviation
    /// (`warn`): the kind is `other`/absent and `shown` is `generic` or something the tool call
    /// also supports (a command with a `rawInput.command`, a file change with a diff or locations).
    pub fn weakly_supports(&self, shown: Subject) -> bool {
        self.subject_and_why().1.is_some()
            && match shown {
                Subject::Generic => true,
                Subject::Command => self.has_command(),
                Subject::FileChange => self.has_diff() || self.has_locations(),
                _ => false,
            }
    }

    /// The subject an approval (and timeline item) for this tool call must show (docs/architecture.md §5.1).
    pub fn expected_subject(&self) -> ExpectedSubject {
        let (subject, why) = self.subject_and_why();
        let reason = match (why, self.kind) {
            (None, kind) => format!("kind \"{}\"", kind.unwrap_or_default()),
            (Some(why), Some(kind)) => format!("kind \"{kind}\" and {why}"),
            (Some(why), None) => format!("no kind and {why}"),
        };
        ExpectedSubject {
            subject,
            from_specific_kind: why.is_none(),
            reason,
        }
    }

    /// The subject of [`Self::expected_subject`], without writing its reason.
    pub fn subject(&self) -> Subject {
        self.subject_and_why().0
    }

    /// [`Self::expected_subject`] without its sentence: the subject, and what decided it when
    /// not a specific kind. Callers that need no message use it (`subject_changes` runs per
    /// frame, `weakly_supports` per approval), so no reason is formatted for them.
    fn subject_and_why(&self) -> (Subject, Option<&'static str>) {
        if let Some(subject) = self.kind.and_then(Subject::of_kind) {
            return (subject, None);
        }
        let (subject, why) = if self.has_command() {
            (Subject::Command, "rawInput.command is a string")
        } else if self.has_diff() {
            (Subject::FileChange, "it has diff content")
        } else if self.has_locations() {
            (Subject::FileChange, "it has file locations")
        } else {
            (Subject::Generic, "nothing more specific is known")
        };
        (subject, Some(why))
    }
}

/// The expected subject of an effective tool call and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedSubject {
    pub subject: Subject,
    /// True when a specific tool kind decided it (contradicting it is a `fail`); false when it
    /// was inferred from `other`/absent kind (a deviation is weaker).
    pub from_specific_kind: bool,
    /// Plain words: `kind "edit"`, `kind "other" and it has file locations`.
    pub reason: String,
}

impl<'a> WireModel<'a> {
    /// Every (sessionId, toolCallId) the agent described in a `tool_call`, a `tool_call_update`
    /// or a permission request's `toolCall`, with the first such frame, in order of that frame.
    pub fn announced_tool_calls(&self) -> Vec<(&'a str, &'a str, usize)> {
        let mut out: Vec<(&'a str, &'a str, usize)> = self
            .tool_frames
            .iter()
            .flat_map(|(sid, by_id)| {
                by_id
                    .iter()
                    .filter_map(|(tcid, frames)| Some((*sid, *tcid, *frames.first()?)))
            })
            .collect();
        out.sort_by_key(|(_, _, first)| *first);
        out
    }

    /// Agent frames (transcript indices) that describe a tool call: updates and permission
    /// requests, on any connection, in order.
    pub fn tool_frames(&self, session_id: &str, tool_call_id: &str) -> &[usize] {
        self.tool_frames
            .get(session_id)
            .and_then(|by_id| by_id.get(tool_call_id))
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }

    /// The `ToolCall`/`ToolCallUpdate` object carried by an agent frame: the `update` of a
    /// `session/update`, or the `toolCall` of a permission request.
    pub fn tool_fields(&self, index: usize) -> Option<ToolFields<'a>> {
        self.msg(index)?.tool_fields()
    }

    /// The effective tool call for (conn, sessionId, toolCallId) as of transcript index `at`:
    /// every `tool_call`/`tool_call_update` before `at` merged, then — if `at` is a permission
    /// request for that tool call — the request's own `toolCall`. `conn: None` merges frames of
    /// every connection.
    pub fn effective_tool_call(
        &self,
        conn: Option<u32>,
        session_id: &str,
        tool_call_id: &'a str,
        at: usize,
    ) -> EffectiveToolCall<'a> {
        let mut effective = EffectiveToolCall::new(tool_call_id);
        let frames = self.tool_frames(session_id, tool_call_id);
        let n = frames.partition_point(|&i| i < at);
        for &i in &frames[..n] {
            let Some(msg) = self.msg(i) else { continue };
            if conn.is_some_and(|c| c != msg.conn)
                || !msg.is_notification_for(Method::SessionUpdate)
            {
                continue;
            }
            if let Some(fields) = self.tool_fields(i) {
                effective.merge(fields, i);
            }
        }
        if let Some(request) = self.permission_at(at) {
            if request.tool_call_id == Some(tool_call_id) && conn.is_none_or(|c| c == request.conn)
            {
                if let Some(fields) = request.tool_call {
                    effective.merge(ToolFields::from_tree(fields), at);
                }
            }
        }
        effective
    }

    /// What the agent had said about a tool call before transcript index `at`, counting every
    /// frame that describes it (updates and permission requests' `toolCall`, any connection):
    /// what a row for it shows at `at`.
    pub fn described_before(
        &self,
        session_id: &str,
        tool_call_id: &'a str,
        at: usize,
    ) -> EffectiveToolCall<'a> {
        let mut call = EffectiveToolCall::new(tool_call_id);
        for &i in self.tool_frames(session_id, tool_call_id) {
            if i >= at {
                break;
            }
            if let Some(fields) = self.tool_fields(i) {
                call.merge(fields, i);
            }
        }
        call
    }

    /// The effective tool call a permission request is about.
    pub fn effective_for_request(&self, request: &PermissionRequest<'a>) -> EffectiveToolCall<'a> {
        request.effective.clone()
    }

    /// Points where the agent changed a tool call's effective kind on the wire, across all
    /// connections: (frame index, kind before, kind after). Follows the merge rule, so `other`
    /// after a specific kind is no change.
    pub fn kind_changes(
        &self,
        session_id: &str,
        tool_call_id: &str,
    ) -> Vec<(usize, &'a str, &'a str)> {
        let mut out = Vec::new();
        let mut current: Option<&'a str> = None;
        for &i in self.tool_frames(session_id, tool_call_id) {
            let Some(fields) = self.tool_fields(i) else {
                continue;
            };
            let Some(kind) = fields.kind else {
                continue;
            };
            if !is_specific_kind(kind) && current.is_some_and(is_specific_kind) {
                continue;
            }
            if let Some(before) = current {
                if before != kind {
                    out.push((i, before, kind));
                }
            }
            current = Some(kind);
        }
        out
    }

    /// Points where what the agent said about a tool call changed its expected subject
    /// (docs/architecture.md §5.1): a new specific kind, or — with kind `other` or none — a `rawInput.command`,
    /// diff or locations that came or went: (frame index, subject before, subject after).
    pub fn subject_changes(
        &self,
        session_id: &str,
        tool_call_id: &str,
    ) -> Vec<(usize, Subject, Subject)> {
        let mut out = Vec::new();
        let mut call = EffectiveToolCall::new(tool_call_id);
        let mut current: Option<Subject> = None;
        for &i in self.tool_frames(session_id, tool_call_id) {
            let Some(fields) = self.tool_fields(i) else {
                continue;
            };
            call.merge(fields, i);
            let subject = call.subject();
            if current.is_some_and(|before| before != subject) {
                out.push((i, current.unwrap_or(subject), subject));
            }
            current = Some(subject);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire_model::test_support::*;
    use acp_vocab::transcript::Recorder;
    use serde_json::{Value, json};

    #[test]
    fn effective_tool_call_merges_and_keeps_specific_kind() {
        let rec = Recorder::new();
        let upd = |v: Value| json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":v}});
        let announce = a2c(
            &rec,
            upd(
                json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"Editing","kind":"edit","status":"pending",
            "content":[{"type":"diff","path":"/w/a","oldText":null,"newText":"x"}]}),
            ),
        );
        a2c(
            &rec,
            upd(
                json!({"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"other","title":"t2"}),
            ),
        );
        // Another session's tool call with the same id must not leak in.
        a2c(
            &rec,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"other","update":
            {"sessionUpdate":"tool_call","toolCallId":"c","title":"x","kind":"execute"}}}),
        );
        let req = a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s",
            "toolCall":{"toolCallId":"c","kind":"other","status":"pending","locations":[]},
            "options":[{"optionId":"a","name":"A","kind":"allow_once"}]}}),
        );
        let later = a2c(
            &rec,
            upd(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute"})),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        let p = m.permission_at(req).unwrap();
        let e = m.effective_for_request(p);
        assert_eq!(e.kind, Some("edit"));
        assert_eq!(e.kind_frame, Some(announce));
        assert_eq!(e.title, Some("t2"));
        assert!(e.has_diff());
        assert!(
            !e.has_locations(),
            "request's locations [] replaced the collection"
        );
        assert_eq!(e.merged, 3);
        assert_eq!(e, m.effective_tool_call(Some(1), "s", "c", req));
        assert_eq!(e.expected_subject().subject, Subject::FileChange);
        assert!(e.expected_subject().from_specific_kind);
        // As of before the announcement nothing is known.
        let empty = m.effective_tool_call(Some(1), "s", "c", announce);
        assert_eq!(empty.kind, None);
        assert_eq!(empty.expected_subject().subject, Subject::Generic);
        assert_eq!(m.kind_changes("s", "c"), vec![(later, "edit", "execute")]);
    }

    #[test]
    fn expected_subject_vocabulary() {
        let cases = [
            (json!({"kind":"execute"}), Subject::Command, true),
            (json!({"kind":"delete"}), Subject::FileChange, true),
            (json!({"kind":"move"}), Subject::FileChange, true),
            (json!({"kind":"read"}), Subject::Read, true),
            (json!({"kind":"search"}), Subject::Search, true),
            (json!({"kind":"fetch"}), Subject::Fetch, true),
            (json!({"kind":"think"}), Subject::Think, true),
            (json!({"kind":"switch_mode"}), Subject::ModeSwitch, true),
            (
                json!({"kind":"other","rawInput":{"command":"ls"}}),
                Subject::Command,
                false,
            ),
            (
                json!({"rawInput":{"command":["ls"]}}),
                Subject::Generic,
                false,
            ),
            (
                json!({"kind":"other","locations":[{"path":"/etc/hosts"},{"path":"/etc"}]}),
                Subject::FileChange,
                false,
            ),
            (
                json!({"content":[{"type":"diff","path":"/a","newText":""}]}),
                Subject::FileChange,
                false,
            ),
            (json!({"kind":"weird"}), Subject::Generic, false),
            (json!({}), Subject::Generic, false),
        ];
        for (fields, subject, specific) in cases {
            let mut e = EffectiveToolCall::new("c");
            e.merge(ToolFields::from_tree(&fields), 0);
            let x = e.expected_subject();
            assert_eq!(
                (x.subject, x.from_specific_kind),
                (subject, specific),
                "{fields}"
            );
        }
    }
}
