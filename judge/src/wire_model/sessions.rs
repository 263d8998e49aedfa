//! ACP sessions: which session each frame belongs to, the control handles behind them, and the
//! prompt turn in progress at a point in time.

use super::{Side, WireModel, WireMsg};
use acp_vocab::method::Method;

impl<'a> WireModel<'a> {
    /// The ACP session a message belongs to.
    pub fn session_of(&self, index: usize) -> Option<&'a str> {
        self.msg_pos.get(index).and_then(|p| self.msg_session[p])
    }

    /// Messages of one session (either direction), in transcript order.
    pub fn session_msgs(&self, session_id: &str) -> impl Iterator<Item = &WireMsg<'a>> + '_ {
        self.by_session
            .get(session_id)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(|&p| &self.msgs[p])
    }

    /// Messages of one session with transcript index >= `from`.
    pub fn session_msgs_from(
        &self,
        session_id: &str,
        from: usize,
    ) -> impl Iterator<Item = &WireMsg<'a>> + '_ {
        let list = self
            .by_session
            .get(session_id)
            .map(|v| v.as_slice())
            .unwrap_or(&[]);
        let start = list.partition_point(|&p| self.msgs[p].index < from);
        list[start..].iter().map(|&p| &self.msgs[p])
    }

    /// The client's `session/prompt` for `session_id` that was in progress at `at`: the latest
    /// one sent before `at`, if the agent had not answered it before `at`.
    pub fn prompt_in_progress(&self, session_id: &str, at: usize) -> Option<&WireMsg<'a>> {
        let list = self.by_session.get(session_id)?;
        let end = list.partition_point(|&p| self.msgs[p].index < at);
        let prompt = list[..end]
            .iter()
            .rev()
            .map(|&p| &self.msgs[p])
            .find(|m| m.from == Side::Client && m.is_request_for(Method::SessionPrompt))?;
        let answered_before = self
            .answers_to(prompt.index)
            .first()
            .is_some_and(|&a| a < at);
        (!answered_before).then_some(prompt)
    }

    /// The ACP session id behind a control handle as of `at`: the latest `session_opened` for
    /// it before `at`, else the first one after.
    pub fn session_for_handle(&self, handle: &str, at: usize) -> Option<&'a str> {
        let opened = self.handles.get(handle)?;
        opened
            .iter()
            .rev()
            .find(|(i, _)| *i < at)
            .or_else(|| opened.first())
            .map(|(_, sid)| *sid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire_model::test_support::*;
    use acp_vocab::note::Note;
    use acp_vocab::transcript::{Direction, Recorder};
    use serde_json::json;

    #[test]
    fn sessions_handles_and_cancels() {
        let rec = Recorder::new();
        rec.record(
            0,
            Direction::HarnessToAdapter,
            br#"{"type":"new_session","seq":1,"session":"s1","cwd":"/w"}"#,
        );
        c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
        );
        let created = a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"ses_A"}}),
        );
        ev(
            &rec,
            json!({"type":"session_opened","session":"s1","sessionId":"ses_A"}),
        );
        let cancel = rec.record(
            0,
            Direction::HarnessToAdapter,
            br#"{"type":"cancel","seq":2,"session":"s1"}"#,
        );
        let note = rec.note(&Note::UserCancel {
            session_id: "ses_B".into(),
            by: None,
        });
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.session_ids, vec!["ses_A"]);
        assert_eq!(m.session_of(created), Some("ses_A"));
        let cancels = m.user_cancels();
        assert_eq!(cancels.len(), 2);
        assert_eq!(
            (cancels[0].index, cancels[0].session_id),
            (cancel, Some("ses_A"))
        );
        assert_eq!(
            (cancels[1].index, cancels[1].session_id),
            (note, Some("ses_B"))
        );
    }
}
