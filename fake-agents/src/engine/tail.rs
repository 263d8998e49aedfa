//! A client that leaves after its turn. Many clients end a one-shot run as soon as their last
//! prompt is answered (ralph-any `-m 1`, acpx `exec`), while the real agent still has a few
//! notifications to write (claude-agent-acp's `session_info_update` comes after the prompt's
//! answer). Whether the client's exit beats those writes is a race; when it does, the client
//! has done everything the scenario asked of it, so the run is complete, not abandoned.
//!
//! The run ends so only when the write fails in the scenario's *send-only tail* (its last
//! top-level steps, all notifications or delays: nothing left to wait for or answer; or the
//! same at the end of an `await` case with `end = true` or an `on_timeout`, after which the
//! scenario ends) and every `session/prompt` the client sent on the connection has been
//! answered.

use std::collections::HashSet;

use acp_vocab::transcript::{Direction, Recorder};

use crate::scenario::{Step, StepKind};

/// The first top-level step (1-based) of the send-only tail of `steps`: the run of `send`
/// steps without `as` (notifications) and `delay`s that ends the scenario. `None` when the last
/// step is anything else.
pub(super) fn send_only_tail_from(steps: &[Step]) -> Option<usize> {
    let tail = steps
        .iter()
        .rev()
        .take_while(|step| match &step.kind {
            StepKind::Send { alias, .. } => alias.is_none(),
            StepKind::Delay(_) => true,
            _ => false,
        })
        .count();
    (tail > 0).then(|| steps.len() - tail + 1)
}

/// True if every `session/prompt` request the client sent on connection `conn` has been
/// answered in the transcript so far.
pub(super) fn every_prompt_answered(rec: &Recorder, conn: u32) -> bool {
    let mut open = HashSet::new();
    rec.visit_from(0, |entry| {
        if entry.conn != conn || !entry.direction.is_wire() {
            return;
        }
        let Some(json) = entry.parse_json() else {
            return;
        };
        let Some(id) = json.get("id").map(|id| id.to_string()) else {
            return;
        };
        let method = json.get("method").and_then(|m| m.as_str());
        match (entry.direction, method) {
            (Direction::ClientToAgent, Some("session/prompt")) => {
                open.insert(id);
            }
            (Direction::AgentToClient, None) => {
                open.remove(&id);
            }
            _ => {}
        }
    });
    open.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn step(top: usize, kind: StepKind) -> Step {
        Step {
            label: top.to_string(),
            top,
            line: top,
            timeout: None,
            kind,
        }
    }

    fn send(top: usize, alias: Option<&str>) -> Step {
        let frame = crate::scenario::JsonText::new(r#"{"jsonrpc":"2.0","method":"x"}"#);
        step(
            top,
            StepKind::Send {
                frame,
                alias: alias.map(str::to_owned),
            },
        )
    }

    #[test]
    fn the_tail_is_the_closing_run_of_notifications_and_delays() {
        let steps = vec![
            step(1, StepKind::Handshake),
            send(2, None),
            step(3, StepKind::Handshake),
            send(4, None),
            step(5, StepKind::Delay(Duration::from_millis(1))),
            send(6, None),
        ];
        assert_eq!(send_only_tail_from(&steps), Some(4));
    }

    #[test]
    fn a_request_or_a_wait_at_the_end_leaves_no_tail() {
        let request_last = vec![step(1, StepKind::Handshake), send(2, Some("perm"))];
        assert_eq!(send_only_tail_from(&request_last), None);
        let wait_last = vec![send(1, None), step(2, StepKind::Handshake)];
        assert_eq!(send_only_tail_from(&wait_last), None);
        assert_eq!(send_only_tail_from(&[]), None);
    }

    #[test]
    fn a_prompt_is_open_until_the_agent_answers_its_id() {
        let rec = Recorder::new();
        let prompt = br#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{}}"#;
        rec.record(1, Direction::ClientToAgent, prompt);
        // A request of the agent's with the same id answers nothing of the client's.
        let perm = br#"{"jsonrpc":"2.0","id":2,"method":"session/request_permission"}"#;
        rec.record(1, Direction::AgentToClient, perm);
        // Nor does an answer on another connection.
        rec.record(
            2,
            Direction::AgentToClient,
            br#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
        );
        assert!(!every_prompt_answered(&rec, 1));
        rec.record(
            1,
            Direction::AgentToClient,
            br#"{"jsonrpc":"2.0","id":2,"result":{}}"#,
        );
        assert!(every_prompt_answered(&rec, 1));
    }
}
