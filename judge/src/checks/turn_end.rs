//! `turn-end` — every turn the agent ends is shown ended, in the state the agent ended it in
//! (R38, R46, R48: the
//! agent ends every turn with a `StopReason`; showing that end is the client's half).
//!
//! Requirement: when the agent answers a `session/prompt` with a `stopReason`, the client reports
//! (control `turn` event) that the turn of that session ended, before the harness's settle time
//! runs out, and in the state that stop reason means:
//!
//! | stopReason | state the client must show |
//! |---|---|
//! | `end_turn` | `completed`; `completed` or `failed` when the client denied a tool in the turn (below) (a denied tool may well make the client call the turn failed: acpx `exec` exits 5, PERMISSION_DENIED) |
//! | `cancelled` | `cancelled`; also `failed` when the user did not press Stop and the client denied a tool in the turn (codex-acp 0.13 ends the turn `cancelled` after an abort) |
//! | `refusal` | `refused` |
//! | `max_tokens`, `max_turn_requests` | `completed` or `failed`: the turn ended normally as far as the protocol goes, but a client may well present a cut-off answer as a failure; both say "ended", the others do not |
//! | none: the agent process died first | `failed`; also `cancelled` when the user had pressed Stop in the turn |
//!
//! An agent that dies mid-turn (a `fault = "crash"` step: the harness killed the agent process
//! while its `session/prompt` was unanswered, note `agent_killed`) ended the turn as surely as a
//! stop reason does: nothing will ever answer that prompt. ACP says nothing of it, so this is the
//! field's rule, not the spec's: a client that keeps the turn running shows a spinner that never
//! stops (xenodium/acp.el#10: agent-shell stuck "pending" after claude-agent-acp exited with
//! 143), and one that shows it completed reports work as done that never was.
//!
//! Why: a client that stops processing after one update it does not understand
//! (xenodium/agent-shell#455), or simply never shows the end of a turn (the stuck spinner of
//! pingdotgg/t3code#7484; JetBrains stuck in "running", agentclientprotocol/claude-agent-acp#694)
//! leaves the user waiting for a turn that is over.
//!
//! Reading:
//! * The client denied a tool in the turn when it answered a permission request of the turn with
//!   a reject option or `cancelled`, or answered an `fs/*` or `terminal/*` request of the turn
//!   with an error. The latter is how a client refuses a tool by its own policy (acpx
//!   `--deny-all` answers a file read `Permission denied for fs/read_text_file`, then exits 5);
//!   ACP gives no way to tell such a refusal from a failure (a missing file), so either counts.
//! * A turn's end is the last `turn` event for the session with a state other than `running`
//!   after the `session/prompt` and before the session's next prompt (the control `prompt`
//!   command or the next `session/prompt` on the wire). One shown before the agent's answer counts
//!   if its state is right (a client may show a Stop at once).
//! * The runner waits up to one step timeout for every turn's end before it sends `shutdown`
//!   (note `{"type":"settle_timeout"}` when it gave up): an end reported only after the
//!   `shutdown` command came too late, and none at all is `fail` on a completed run. On a run that
//!   did not finish, a missing end proves nothing (the run's end is the verdict).
//! * A `session/prompt` answered with an error, or with a stop reason ACP v1 does not define, is
//!   not judged here. One answered after the client had closed the agent connection (engine
//!   note `connection_closed`) is judged like any other: whether the client's exit beat the
//!   agent's writes is the machine's race (the frames may sit unread in a pipe instead), and a
//!   verdict must not depend on it.
//! * A turn the user stopped may be shown `cancelled` whatever the agent answered: the user asked
//!   for it, and an agent that finishes the turn anyway (codex-acp 0.13 ends it `end_turn` after
//!   a late permission request) does not make the client's Stop wrong.
//! * Needs the control plane, or a client profile's observer that reports `turn`.

use super::{Check, Finding, Problems};
use crate::record::{CaseRecord, RunEnd};
use crate::rules::{RuleId, id::*};
use acp_vocab::control::{Command, Event, Turn};
use acp_vocab::method::Method;

use crate::wire_model::{PermissionAnswer, Side, WireModel, WireMsg, note_of};
use acp_vocab::note::Note;

pub struct TurnEnd;

impl Check for TurnEnd {
    fn id(&self) -> &'static str {
        "turn-end"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R38, R46, R48]
    }

    fn requirement(&self) -> &'static str {
        "Every turn the agent ends with a stopReason is shown ended, within the settle time, in the state that stop reason means; a turn whose agent died before answering is shown failed."
    }

    fn needs_control_plane(&self) -> bool {
        true
    }

    fn observable_with(&self) -> &'static [&'static str] {
        &["turn"]
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut problems = Problems::new();
        let mut judged = 0;
        let shutdown = model
            .controls
            .iter()
            .find(|c| matches!(c.command(), Some(Command::Shutdown { .. })))
            .map(|c| c.index);
        let settle_note = model
            .notes
            .iter()
            .find(|(_, n)| matches!(note_of(n), Some(Note::SettleTimeout { .. })))
            .map(|(i, _)| *i);
        // Both in transcript order: each turn looks at its own stretch of them (a scan of every
        // cancel for every turn was quadratic in the turns).
        let cancels = model.user_cancels();
        let prompts = model
            .msgs
            .iter()
            .filter(|m| m.from == Side::Client && m.is_request_for(Method::SessionPrompt));
        for prompt in prompts {
            let Some(sid) = prompt.params_session_id() else {
                continue;
            };
            let Some((response, end)) = end_of(model, prompt) else {
                continue;
            };
            // The user's own Stop in the turn, before the agent ended it.
            let user_stopped = cancels[cancels.partition_point(|c| c.index <= prompt.index)..]
                .iter()
                .take_while(|c| c.index < response)
                .any(|c| c.session_id == Some(sid));
            // A dead agent gave no stop reason ("").
            let (stop_reason, mut accepted) = match end {
                AgentEnd::Stop(reason) => match states_for(reason) {
                    Some(states) if user_stopped => (reason, or_cancelled(states)),
                    Some(states) => (reason, states),
                    None => continue,
                },
                AgentEnd::Killed(_) => ("", AFTER_DEATH[usize::from(user_stopped)]),
            };
            // A tool the client denied may make it call the turn failed, unless the user's own
            // Stop ended it (then `cancelled` it is: cancel-stop's rule too).
            if matches!(stop_reason, "end_turn" | "cancelled")
                && !user_stopped
                && (denied_in_turn(model, sid, prompt.index, response)
                    || refused_in_turn(model, sid, prompt.index, response))
            {
                accepted = AFTER_DENIAL[usize::from(stop_reason == "cancelled")];
            }
            judged += 1;
            let bound = next_prompt(model, sid, response);
            let ends: Vec<(usize, &str)> = model
                .controls_from(prompt.index + 1)
                .iter()
                .take_while(|c| c.index < bound)
                .filter_map(|c| match c.event() {
                    Some(Event::Turn(Turn {
                        session_id, state, ..
                    })) if session_id == sid && state.is_end() => Some((c.index, state.as_str())),
                    _ => None,
                })
                .collect();
            let expected = accepted
                .iter()
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(" or ");
            // Showing a cancelled end is the client's half of R48; any other end, of R38.
            let rule = if stop_reason == "cancelled" { R48 } else { R38 };
            match ends.last() {
                Some(&(at, state)) if !accepted.contains(&state) => problems.fail(
                    rule,
                    format!(
                        "the agent ended the turn of session \"{sid}\" {end} (#{response}), but the client shows the turn as \"{state}\" (#{at}). Expected {expected}."
                    ),
                    &[response, at],
                ),
                // Only a completed run settled before its shutdown; otherwise the harness shut
                // the client down at once, and an end after that is not late.
                Some(&(at, _))
                    if case.end == RunEnd::Completed && shutdown.is_some_and(|s| s < at) =>
                {
                    let shutdown = shutdown.unwrap_or_default();
                    problems.fail(
                        rule,
                        format!(
                            "the agent ended the turn of session \"{sid}\" {end} (#{response}), but the client reported the end (#{at}) only after the settle time ran out and the harness had sent shutdown (#{shutdown}). Expected the turn shown ended at once."
                        ),
                        &[response, shutdown, at],
                    )
                }
                Some(_) => {}
                None if case.end == RunEnd::Completed => {
                    let mut frames = vec![prompt.index, response];
                    frames.extend(settle_note);
                    problems.fail(
                        rule,
                        format!(
                            "the agent ended the turn of session \"{sid}\" {end} (#{response}), but the client never reported that the turn ended{}. Expected a turn event with state {expected}.",
                            match settle_note {
                                Some(n) => format!(" (the harness waited for it until #{n})"),
                                None => String::new(),
                            }
                        ),
                        &frames,
                    );
                }
                // An unfinished run is graded by its end.
                None => {}
            }
        }
        if judged == 0 {
            return Finding::not_applicable(
                "the agent ended no turn with a stopReason, and died during none",
            );
        }
        problems.finish("")
    }
}

/// How the agent ended a turn.
#[derive(Clone, Copy)]
enum AgentEnd<'a> {
    /// It answered the prompt with this `stopReason`.
    Stop(&'a str),
    /// Its process was killed (with this signal) before it answered the prompt.
    Killed(&'a str),
}

impl std::fmt::Display for AgentEnd<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentEnd::Stop(reason) => write!(f, "with stopReason \"{reason}\""),
            AgentEnd::Killed(signal) => write!(
                f,
                "by dying before it answered the prompt (the harness killed the agent process with {signal})"
            ),
        }
    }
}

/// Where and how the agent ended the turn `prompt` began: its first answer that carries a
/// string `stopReason`, or else the killing of its process after the prompt (on the prompt's
/// connection), if the prompt was never answered.
fn end_of<'a>(model: &WireModel<'a>, prompt: &WireMsg<'a>) -> Option<(usize, AgentEnd<'a>)> {
    let answers = model.answers_to(prompt.index);
    let stop = answers.iter().find_map(|&a| {
        let stop = model.msg(a)?.result()?.get("stopReason")?.as_str()?;
        Some((a, AgentEnd::Stop(stop)))
    });
    if stop.is_some() || !answers.is_empty() {
        return stop;
    }
    super::agent_killed_after(model, prompt.conn, prompt.index)
        .map(|(at, signal)| (at, AgentEnd::Killed(signal)))
}

/// The turn states that show a turn ended with this stop reason (`None`: not ACP v1's).
fn states_for(stop_reason: &str) -> Option<&'static [&'static str]> {
    Some(match stop_reason {
        "end_turn" => &["completed"],
        "cancelled" => &["cancelled"],
        "refusal" => &["refused"],
        "max_tokens" | "max_turn_requests" => &["completed", "failed"],
        _ => return None,
    })
}

/// `states`, and `cancelled`: how a turn the user stopped may be shown.
fn or_cancelled(states: &'static [&'static str]) -> &'static [&'static str] {
    match states {
        ["completed"] => &["completed", "cancelled"],
        ["refused"] => &["refused", "cancelled"],
        ["completed", "failed"] => &["completed", "failed", "cancelled"],
        cancelled => cancelled,
    }
}

/// `end_turn` / `cancelled` (the agent's own, no user Stop) after the client denied a tool in
/// that turn: `failed` is an honest summary too (acpx `exec` exits 5, PERMISSION_DENIED, when its
/// policy rejected a request; codex-acp 0.13 ends a turn `cancelled` after an abort).
const AFTER_DENIAL: [&[&str]; 2] = [&["completed", "failed"], &["cancelled", "failed"]];

/// A turn whose agent died before it answered: `failed`, or `cancelled` too when the user had
/// pressed Stop in it (the turn was being cancelled; that the agent died meanwhile is no reason
/// to call the user's Stop a failure).
const AFTER_DEATH: [&[&str]; 2] = [&["failed"], &["failed", "cancelled"]];

/// True if a permission request of session `sid` between `from` and `to` was answered with a
/// `reject_*` option or `cancelled`.
fn denied_in_turn(model: &WireModel<'_>, sid: &str, from: usize, to: usize) -> bool {
    // Permissions are in transcript order.
    let first = model.permissions.partition_point(|p| p.index <= from);
    model.permissions[first..]
        .iter()
        .take_while(|p| p.index < to)
        .filter(|p| p.session_id == Some(sid))
        .any(|p| {
            p.answers.iter().any(|&a| match model.permission_answer(a) {
                PermissionAnswer::Cancelled => true,
                PermissionAnswer::Selected(id) => p
                    .option(id)
                    .and_then(|o| o.kind)
                    .is_some_and(|k| k.starts_with("reject")),
                _ => false,
            })
        })
}

/// True if the client answered an `fs/*` or `terminal/*` request of session `sid` between `from`
/// and `to` with an error: a tool it did not do, by its policy or because it could not.
fn refused_in_turn(model: &WireModel<'_>, sid: &str, from: usize, to: usize) -> bool {
    model
        .session_msgs_from(sid, from + 1)
        .take_while(|m| m.index < to)
        .filter(|m| m.from == Side::Agent)
        .filter(|m| {
            m.method()
                .is_some_and(|method| method.starts_with("fs/") || method.starts_with("terminal/"))
        })
        .any(|m| {
            model
                .answers_to(m.index)
                .into_iter()
                .any(|a| model.msg(a).is_some_and(|r| r.is_error_response()))
        })
}

/// Where the next turn of `sid` begins after `after`: the user's next prompt in that session
/// (control command) or the client's next `session/prompt` for it, whichever comes first.
fn next_prompt(model: &WireModel<'_>, sid: &str, after: usize) -> usize {
    let wire = model
        .session_msgs_from(sid, after + 1)
        .find(|m| m.from == Side::Client && m.is_request_for(Method::SessionPrompt))
        .map_or(usize::MAX, |m| m.index);
    let user = model
        .controls_from(after + 1)
        .iter()
        .take_while(|c| c.index < wire)
        .find(|c| match c.command() {
            Some(Command::Prompt { session, .. }) => {
                model.session_for_handle(session, c.index) == Some(sid)
            }
            _ => false,
        })
        .map_or(usize::MAX, |c| c.index);
    wire.min(user)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, assert_grade};
    use serde_json::json;

    fn turn(c: &Case, state: &str) -> usize {
        c.ev(json!({"type":"turn","sessionId":SID,"state":state}))
    }

    fn shutdown(c: &Case) -> usize {
        c.cmd(json!({"type":"shutdown","seq":9}))
    }

    #[test]
    fn each_stop_reason_shown_as_its_state_passes() {
        for (reason, state) in [
            ("end_turn", "completed"),
            ("cancelled", "cancelled"),
            ("refusal", "refused"),
            ("max_tokens", "completed"),
            ("max_turn_requests", "failed"),
        ] {
            let c = Case::new();
            c.handshake();
            c.prompt();
            turn(&c, "running");
            c.prompt_result(reason);
            turn(&c, state);
            shutdown(&c);
            assert_eq!(c.grade(&TurnEnd), Finding::pass(), "{reason}");
        }
    }

    #[test]
    fn a_turn_never_shown_ended_fails_citing_the_stop_reason() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        turn(&c, "running");
        let r = c.prompt_result("end_turn");
        let n = c.note(Note::SettleTimeout { waited_ms: 5000 });
        shutdown(&c);
        let f = c.grade(&TurnEnd);
        assert_grade(&f, Grade::Fail, "never reported that the turn ended");
        assert!(f.frames.contains(&r) && f.frames.contains(&n), "{f:?}");
    }

    fn killed(c: &Case, conn: u32) -> usize {
        c.note(Note::AgentKilled {
            conn,
            signal: "SIGTERM".into(),
            step: Some("9".into()),
        })
    }

    /// The agent died with the prompt unanswered: only `failed` shows that (a `cancelled` also
    /// after the user's Stop); `completed` and no end at all fail, naming the kill.
    #[test]
    fn a_turn_whose_agent_died_must_be_shown_failed() {
        for (state, grade) in [
            (Some("failed"), Grade::Pass),
            (Some("completed"), Grade::Fail),
            (Some("cancelled"), Grade::Fail),
            (None, Grade::Fail),
        ] {
            let c = Case::new();
            c.handshake();
            c.prompt();
            turn(&c, "running");
            let k = killed(&c, 1);
            if let Some(state) = state {
                turn(&c, state);
            }
            shutdown(&c);
            let f = c.grade(&TurnEnd);
            assert_eq!(f.grade, grade, "{state:?}: {f:?}");
            if grade == Grade::Fail {
                assert!(f.frames.contains(&k), "{f:?}");
                assert!(
                    f.message.contains("by dying before it answered the prompt")
                        && f.message.contains("SIGTERM"),
                    "{f:?}"
                );
            }
        }
    }

    #[test]
    fn a_turn_the_user_stopped_before_the_agent_died_may_be_shown_cancelled() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.cmd(json!({"type":"cancel","seq":3,"session":"s1"}));
        killed(&c, 1);
        turn(&c, "cancelled");
        shutdown(&c);
        assert_eq!(c.grade(&TurnEnd), Finding::pass());
    }

    /// A one-shot client that quits on the user's Ctrl-C closes the agent connection; the
    /// answer the agent writes after that is judged as if the client had read it, for whether
    /// the write beat the exit is the machine's race. A turn the user stopped may be shown
    /// cancelled whatever the agent answered (ralph-any 0.2.0 under
    /// codex-acp@0.13/permission-after-stop shows "cancelled"; the agent answers end_turn).
    #[test]
    fn a_turn_the_user_stopped_may_be_shown_cancelled_whatever_the_agent_answered() {
        // Shown cancelled, the Stop is honoured; shown failed, it is a crash to the user:
        // closed connection or not.
        for (shown, expected) in [("cancelled", Grade::Pass), ("failed", Grade::Fail)] {
            for closed_first in [true, false] {
                let c = Case::new();
                c.handshake();
                c.prompt();
                c.note(Note::UserCancel {
                    session_id: SID.into(),
                    by: Some("SIGINT".into()),
                });
                if closed_first {
                    c.note(Note::ConnectionClosed { step: "7".into() });
                }
                c.prompt_result("end_turn");
                turn(&c, shown);
                shutdown(&c);
                let finding = c.grade(&TurnEnd);
                assert_eq!(
                    finding.grade, expected,
                    "{shown}, closed first: {closed_first}"
                );
                if expected == Grade::Fail {
                    assert_grade(
                        &finding,
                        Grade::Fail,
                        "Expected \"completed\" or \"cancelled\"",
                    );
                }
            }
        }
        // Without the user's Stop, cancelled is no way to show an end_turn.
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.prompt_result("end_turn");
        c.note(Note::ConnectionClosed { step: "7".into() });
        turn(&c, "cancelled");
        shutdown(&c);
        assert_grade(&c.grade(&TurnEnd), Grade::Fail, "Expected \"completed\"");
    }

    /// A kill only ends the turns it left unanswered: an answered prompt is judged by its stop
    /// reason, and another connection's agent dying ends nothing here.
    #[test]
    fn a_kill_after_the_answer_or_on_another_connection_changes_nothing() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.prompt_result("end_turn");
        killed(&c, 1);
        turn(&c, "completed");
        shutdown(&c);
        assert_eq!(c.grade(&TurnEnd), Finding::pass());

        let c = Case::new();
        c.handshake();
        c.prompt();
        killed(&c, 2);
        shutdown(&c);
        assert_eq!(c.grade(&TurnEnd).grade, Grade::NotApplicable);
    }

    #[test]
    fn end_turn_may_be_shown_failed_only_after_a_denied_tool() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.prompt_result("end_turn");
        turn(&c, "failed");
        assert_grade(&c.grade(&TurnEnd), Grade::Fail, "Expected \"completed\"");

        let c = Case::new();
        c.handshake();
        c.prompt();
        c.permission(
            json!(0),
            json!({"toolCallId":"t"}),
            crate::checks::testkit::opts3(),
        );
        c.select(json!(0), "reject");
        c.prompt_result("end_turn");
        turn(&c, "failed");
        assert_eq!(c.grade(&TurnEnd), Finding::pass());
    }

    /// A client that refuses a file read by its own policy answers it with an error and may
    /// call the turn failed (acpx `--deny-all` exits 5); a read it served is no denial.
    #[test]
    fn end_turn_may_be_shown_failed_after_the_client_refused_a_file_read() {
        for (answer, grade) in [
            (
                json!({"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error","data":{"details":"Permission denied for fs/read_text_file (--deny-all)"}}}),
                Grade::Pass,
            ),
            (
                json!({"jsonrpc":"2.0","id":7,"result":{"content":"x"}}),
                Grade::Fail,
            ),
        ] {
            let c = Case::new();
            c.handshake();
            c.prompt();
            c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":SID,"path":"/w/a.txt"}}));
            c.c2a(answer);
            c.prompt_result("end_turn");
            turn(&c, "failed");
            let f = c.grade(&TurnEnd);
            assert_eq!(f.grade, grade, "{f:?}");
        }
    }

    #[test]
    fn a_wrong_state_or_a_late_end_fails() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.prompt_result("refusal");
        turn(&c, "completed");
        assert_grade(
            &c.grade(&TurnEnd),
            Grade::Fail,
            "shows the turn as \"completed\"",
        );

        let c = Case::new();
        c.handshake();
        c.prompt();
        c.prompt_result("end_turn");
        shutdown(&c);
        turn(&c, "completed");
        assert_grade(
            &c.grade(&TurnEnd),
            Grade::Fail,
            "only after the settle time",
        );
    }

    #[test]
    fn unfinished_runs_and_unknown_reasons_are_not_judged_here() {
        let mut c = Case::new();
        c.handshake();
        c.prompt();
        c.prompt_result("end_turn");
        c.end = RunEnd::Incomplete {
            step: 3,
            reason: "x".into(),
        };
        assert_eq!(c.grade(&TurnEnd).grade, Grade::Pass);

        let c = Case::new();
        c.handshake();
        c.prompt();
        c.prompt_result("exploded");
        assert_eq!(c.grade(&TurnEnd).grade, Grade::NotApplicable);
    }
}
