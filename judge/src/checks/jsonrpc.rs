//! `jsonrpc` — the client speaks JSON-RPC 2.0 correctly (R1–R4, R6, R7).
//!
//! Requirement: every line the client writes is a UTF-8 JSON-RPC 2.0 message (`"jsonrpc":"2.0"`;
//! a request has a string `method` and a string/number/null `id`; a notification a `method`; a
//! response an `id` and exactly one of `result`/`error`; an error an integer `code` and a string
//! `message`); every agent request is answered exactly once with the same id (same value and JSON
//! type); no response goes to an unknown id or to a notification; and the client never reuses the
//! id of one of its own requests that is still pending.
//!
//! Reading: "never answered" is judged on a run that completed, and on a run that stopped waiting
//! for the client (runner note `run_stopped`) for every request that had waited at least one step
//! timeout by then, or that was pending when the client closed the agent connection: a client
//! that drops agent requests fails here by name, not only with `timeout`. On a run that ended
//! in a crash every request the client left pending is named too, a `terminal/wait_for_exit` on
//! a live command included, as on a connection the client closed. A request the agent withdrew with `$/cancel_request` must still be answered (R52:
//! a result or -32800), and a missing answer cites that rule; a withdrawn permission request
//! answered afterwards with a selected option fails R52 too: the agent gave the tool call up
//! (claude-agent-acp 0.85.1 withdraws the pending request when the user presses Stop, recorded),
//! so the only meaningful answers are `cancelled` or -32800, and "allow" approves what nobody is
//! asking any more. A frame the harness duplicated on purpose (note `{"type":"fault","kind":
//! "duplicate"}`) may be answered once or twice. An error response with id `null` after the
//! agent wrote garbage on that connection is the JSON-RPC answer to garbage (-32700), not a
//! response to an unknown id. A line over the harness's frame limit (note `frame_too_long`, 16 MiB
//! by default) was discarded unread and fails like any other line that is not a message. A
//! request still pending when the harness killed its agent (note `agent_killed`, a scenario's
//! `fault = "crash"`) is not required to be answered: there is nobody left to answer.

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use std::collections::HashMap;

use super::{Check, Finding, Problems};
use crate::record::{CaseRecord, RunEnd};
use crate::wire_model::{MsgKind, Side, WireModel, describe_id, id_key, note_of};
use acp_vocab::control::{Command, Event, Message};
use acp_vocab::note::Note;

pub struct JsonRpc;

impl Check for JsonRpc {
    fn id(&self) -> &'static str {
        "jsonrpc"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R1, R2, R3, R4, R6, R7, R52]
    }

    fn requirement(&self) -> &'static str {
        "Every client line is a JSON-RPC 2.0 message and every agent request is answered exactly once with its own id."
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut problems = Problems::new();
        // 1. Every client line is JSON-RPC 2.0 (R1, R2, R4).
        for msg in model.msgs.iter().filter(|m| m.from == Side::Client) {
            if let MsgKind::Invalid { reason } = &msg.kind {
                problems.fail(
                    if msg.entry.invalid_utf8 { R1 } else { R4 },
                    format!(
                        "client frame #{} is not a JSON-RPC 2.0 message: {reason} (R4).",
                        msg.index
                    ),
                    &[msg.index],
                );
            }
        }
        // 1a. An ACP method sent as the wrong kind of message: a `session/cancel` with an id
        // waits for an answer the agent never sends; a `session/prompt` without one never gets
        // its stop reason (R1, R2).
        for msg in model.msgs.iter().filter(|m| m.from == Side::Client) {
            if let Some(why) = super::schema::wrong_kind(msg) {
                problems.fail(
                    R4,
                    format!("client frame #{} was {why} (R1, R2).", msg.index),
                    &[msg.index],
                );
            }
        }
        // 1b. A line longer than the frame limit was discarded unread: it cannot have been a
        // message the agent could use (R2, R4).
        for &(index, note) in &model.notes {
            if !matches!(note_of(note), Some(Note::FrameTooLong { .. })) {
                continue;
            }
            let number = |key: &str| note.get(key).and_then(serde_json::Value::as_u64);
            problems.fail(
                R4,
                format!(
                    "the client wrote a line of {} bytes to the agent (connection {}), over the frame limit of {} bytes; the harness discarded it unread (R4).",
                    number("bytes").map_or("?".to_owned(), |n| n.to_string()),
                    number("conn").map_or("?".to_owned(), |n| n.to_string()),
                    number("max").map_or("?".to_owned(), |n| n.to_string()),
                ),
                &[index],
            );
        }
        // 2. Every agent request answered exactly once (R7).
        let mut duplicated: HashMap<(u32, String), (usize, Vec<usize>)> = HashMap::new();
        for msg in model.msgs.iter().filter(|m| m.from == Side::Agent) {
            let MsgKind::Request { id, method } = msg.kind else {
                continue;
            };
            let answers = model.answers_to(msg.index);
            if msg.fault == Some("duplicate") {
                let group = duplicated
                    .entry((msg.conn, id_key(id)))
                    .or_insert((msg.index, Vec::new()));
                group.1.extend(answers);
                continue;
            }
            if let Some(&answer) = answers.first()
                && method == Method::SessionRequestPermission.as_str()
                && let Some(withdrawn) = withdrawal(model, msg.conn, id, msg.index)
                && withdrawn < answer
                && waited_for_the_user(case, model, msg.index)
                && let Some(option) = model
                    .msg(answer)
                    .and_then(|m| m.json())
                    .and_then(|j| j.pointer("/result/outcome"))
                    .filter(|o| o.get("outcome").and_then(|v| v.as_str()) == Some("selected"))
                    .and_then(|o| o.get("optionId"))
            {
                problems.fail(
                    R52,
                    format!(
                        "permission request #{} (id {}) was withdrawn by the agent's $/cancel_request at #{withdrawn}, and the client then answered it at #{answer} with the option {option}. Expected the cancelled outcome (or the error -32800): the agent no longer asks, and an approval after the withdrawal approves a tool call it gave up.",
                        msg.index,
                        describe_id(id),
                    ),
                    &[msg.index, withdrawn, answer],
                );
            }
            if answers.len() > 1 {
                let mut frames = vec![msg.index];
                frames.extend(&answers);
                problems.fail(
                    R7,
                    format!(
                        "agent request #{} ({method}, id {}) was answered {} times. Expected exactly one response.",
                        msg.index,
                        describe_id(id),
                        answers.len()
                    ),
                    &frames,
                );
            } else if answers.is_empty()
                && unanswered_counts(case, model, msg.index)
                && (lost_with_the_client(case, model, msg.index)
                    || !waits_on_a_live_command(model, msg.conn, msg.index))
                // Its agent was killed while it waited: no answer can reach a dead agent.
                && super::agent_killed_after(model, msg.conn, msg.index).is_none()
            {
                if let Some(withdrawn) = withdrawal(model, msg.conn, id, msg.index) {
                    // R52: a request the agent withdrew is still answered, -32800 or a result.
                    problems.fail(
                        R52,
                        format!(
                            "agent request #{} ({method}, id {}) was withdrawn by the agent's $/cancel_request at #{withdrawn} and then never answered{}. Expected the receiver to still answer it: a result, or the error -32800 (Request cancelled).",
                            msg.index,
                            describe_id(id),
                            super::before_the_end(case, model),
                        ),
                        &[msg.index, withdrawn],
                    );
                    continue;
                }
                problems.fail(
                    R7,
                    format!(
                        "agent request #{} ({method}, id {}) was never answered{}.{}",
                        msg.index,
                        describe_id(id),
                        super::before_the_end(case, model),
                        near_miss(model, msg.conn, id, msg.index)
                    ),
                    &[msg.index],
                );
            }
        }
        for ((_, _), (first, answers)) in duplicated {
            if answers.len() > 2 {
                let mut frames = vec![first];
                frames.extend(&answers);
                problems.fail(
                    R7,
                    format!(
                        "the duplicated agent request #{first} was answered {} times. Expected at most one response per copy.",
                        answers.len()
                    ),
                    &frames,
                );
            } else if answers.is_empty() && unanswered_counts(case, model, first) {
                problems.fail(
                    R7,
                    format!(
                        "the duplicated agent request #{first} was never answered{}.",
                        super::before_the_end(case, model)
                    ),
                    &[first],
                );
            }
        }
        // 3. No response to an unknown id or to a notification (R6, R7).
        for &pos in &model.unpaired_responses {
            let msg = &model.msgs[pos];
            if msg.from != Side::Client || model.is_reply_to_garbage(msg.index) {
                continue;
            }
            let Some(id) = msg.id() else { continue };
            problems.fail(
                R7,
                format!(
                    "client response #{} has id {}, which matches no request the agent sent on this connection (an unknown id, or a reply to a notification) (R6, R7).",
                    msg.index,
                    describe_id(id)
                ),
                &[msg.index],
            );
        }
        // 4. Client request ids are not reused while pending.
        for &(new, old) in &model.reused_ids {
            let id = model
                .msg(new)
                .and_then(|m| m.id())
                .map_or("?".to_owned(), describe_id);
            problems.fail(
                R7,
                format!(
                    "client request #{new} reuses id {id} while its request #{old} with that id is still pending. Expected unique ids among pending requests."
                ),
                &[old, new],
            );
        }
        problems.finish("")
    }
}

/// The agent's `$/cancel_request` for its request `id` on `conn` sent after `request`, if any.
fn withdrawal(
    model: &WireModel<'_>,
    conn: u32,
    id: &serde_json::Value,
    request: usize,
) -> Option<usize> {
    model
        .msgs_from(request + 1)
        .iter()
        .find(|m| {
            m.from == Side::Agent
                && m.conn == conn
                && m.is_notification_for(Method::CancelRequest)
                && m.params().and_then(|p| p.get("requestId")) == Some(id)
        })
        .map(|m| m.index)
}

/// True if the client held permission request `request` open for its user: its adapter showed
/// the card, and the user never clicked on it. Only then is an option answered after the agent's
/// withdrawal the client's own choice, made with the withdrawal in hand. A client that answers
/// by itself (a policy, a remembered grant, a wire-only client) decides as it reads the request,
/// and a click may be on its way as the withdrawal comes: either answer may have crossed the
/// withdrawal on the pipe, which one the client read first is not on the wire, and machine load
/// decides it, so those answers are not graded here (`auto-approval` judges the policy).
/// Read without comparing indices across the two pipes: the grade must not depend on which
/// pipe the harness read first.
/// A card no user could click was never held for one: a client without an adapter and without
/// profile inputs that answer its prompt (acpx `--format json`, whose observer builds the card
/// from the automatic answer itself) decides by itself, and under load that answer crossed the
/// withdrawal on the pipe. So the harness must have had a way to choose (`choose` among
/// `control_supports`: the adapter's `hello`, or a wire-only profile's `[[choose]]` inputs).
fn waited_for_the_user(case: &CaseRecord, model: &WireModel<'_>, request: usize) -> bool {
    if !case.control_supports.iter().any(|s| s == "choose") {
        return false;
    }
    let Some(msg) = model.msg(request) else {
        return false;
    };
    let (Some(id), session) = (msg.id(), msg.params_session_id()) else {
        return false;
    };
    let mut shown = false;
    for c in &model.controls {
        match c.message {
            Some(Message::Event(Event::Approval(card)))
                if &card.request_id == id && Some(card.session_id.as_str()) == session =>
            {
                shown = true;
            }
            Some(Message::Command(Command::Choose { request_id, .. })) if request_id == id => {
                return false;
            }
            _ => {}
        }
    }
    shown
}

/// True if a request without an answer counts as never answered: on a completed run always; on a
/// run that stopped (runner note `run_stopped`) when the client closed the agent connection after
/// it, or it had waited at least one step timeout by then (the run stopped waiting for the client,
/// perhaps for this very answer). A crash is graded as the death; a request that was pending for
/// less than a step when something else stopped the run may just not have been answered yet.
fn unanswered_counts(case: &CaseRecord, model: &WireModel<'_>, request: usize) -> bool {
    match case.end {
        RunEnd::Completed => true,
        RunEnd::Incomplete { .. } | RunEnd::Timeout { .. } => {
            let Some((stopped, note)) = model
                .notes
                .iter()
                .find(|(_, n)| matches!(note_of(n), Some(Note::RunStopped { .. })))
            else {
                return false;
            };
            if request > *stopped {
                return false;
            }
            if super::connection_closed(model) || waited_through_a_timed_out_step(model, request) {
                return true;
            }
            // A step waits in machine time; the transcript's clock is the wall's. Without a
            // step timeout that says when its wait began, the case's average stretch converts.
            let stretch = note
                .get("stretch")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(1.0)
                .max(1.0);
            let step_us = note
                .get("step_timeout_ms")
                .and_then(serde_json::Value::as_u64)
                .map_or(u64::MAX, |ms| (ms as f64 * 1000.0 * stretch) as u64);
            let at = |i: usize| model.entry(i).map_or(0, |e| e.at_us);
            at(*stopped).saturating_sub(at(request)) >= step_us
        }
        // The client died: what it had not answered, it never will (README: every agent request
        // pending when the client went away is named).
        RunEnd::Crash { .. } => true,
        _ => false,
    }
}

/// True if request `request` was pending through a whole step wait that ran out: sent before
/// the wait began (a `step_timeout` note says how long it lasted), unanswered when it ended.
/// Decided by order on one clock, not by comparing durations across clocks, so the verdict is the
/// same on a busy machine as on an idle one.
fn waited_through_a_timed_out_step(model: &WireModel<'_>, request: usize) -> bool {
    let at = |i: usize| model.entry(i).map_or(0, |e| e.at_us);
    model.notes.iter().any(|(index, note)| {
        *index > request
            && matches!(note_of(note), Some(Note::StepTimeout { .. }))
            && note
                .get("waited_us")
                .and_then(serde_json::Value::as_u64)
                .is_some_and(|waited| at(request) <= at(*index).saturating_sub(waited))
            && !model
                .answers_to(request)
                .iter()
                .any(|&answer| answer < *index)
    })
}

/// True if the client went away with the request pending: it died, or it closed the agent
/// connection after the request. Then even a `terminal/wait_for_exit` on a live command is lost.
fn lost_with_the_client(case: &CaseRecord, model: &WireModel<'_>, request: usize) -> bool {
    matches!(case.end, RunEnd::Crash { .. }) || super::closed_within(model, request..usize::MAX)
}

/// A `terminal/wait_for_exit` answers when the command exits: one whose terminal the agent
/// never killed nor released may rightly be pending when the run ends (a watcher runs until
/// stopped). Whether the client reported a command's end correctly is the `terminal` check's.
fn waits_on_a_live_command(model: &WireModel<'_>, conn: u32, request: usize) -> bool {
    let Some(msg) = model.msg(request) else {
        return false;
    };
    if msg.method() != Some(Method::TerminalWaitForExit.as_str()) {
        return false;
    }
    let terminal = msg.params().and_then(|p| p.get("terminalId"));
    !model.msgs_from(request).iter().any(|m| {
        m.from == Side::Agent
            && m.conn == conn
            && matches!(
                m.method().and_then(Method::parse),
                Some(Method::TerminalKill | Method::TerminalRelease)
            )
            && m.params().and_then(|p| p.get("terminalId")) == terminal
    })
}

/// A hint for an unanswered request: a client response on the same connection whose id equals
/// the request's id as text but not as JSON (`"0"` for `0`).
fn near_miss(model: &WireModel<'_>, conn: u32, id: &serde_json::Value, after: usize) -> String {
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let want = text(id);
    model
        .unpaired_responses
        .iter()
        .map(|&p| &model.msgs[p])
        .filter(|m| m.from == Side::Client && m.conn == conn && m.index > after)
        .find(|m| m.id().is_some_and(|got| text(got) == want))
        .map_or(String::new(), |m| {
            format!(
                " Response #{} echoes id {} instead of {} (R7: the same value and type).",
                m.index,
                m.id().map_or("?".to_owned(), describe_id),
                describe_id(id)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, assert_grade, buttons3, opts3};
    use acp_vocab::note::FaultKind;
    use serde_json::json;

    fn base() -> Case {
        let c = Case::wire_only();
        c.handshake();
        c.prompt();
        c
    }

    #[test]
    fn clean_exchange_passes() {
        let c = base();
        c.permission(json!("abc-1"), json!({"toolCallId":"c"}), opts3());
        c.select(json!("abc-1"), "once");
        c.prompt_result("end_turn");
        assert_eq!(c.grade(&JsonRpc), Finding::pass());
    }

    #[test]
    fn a_withdrawn_request_must_still_be_answered() {
        let c = base();
        c.permission(json!(5), json!({"toolCallId":"c"}), opts3());
        c.a2c(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}));
        c.prompt_result("end_turn");
        let f = c.grade(&JsonRpc);
        assert_grade(&f, Grade::Fail, "withdrawn by the agent's $/cancel_request");
        assert_eq!(f.rule, Some(52));
        c.c2a(
            json!({"jsonrpc":"2.0","id":5,"error":{"code":-32800,"message":"Request cancelled"}}),
        );
        assert_eq!(c.grade(&JsonRpc), Finding::pass());
    }

    #[test]
    fn a_withdrawn_permission_request_is_not_answered_with_an_option() {
        let answer = |outcome: serde_json::Value, card: bool| {
            let c = if card { Case::new() } else { Case::wire_only() };
            c.handshake();
            c.prompt();
            c.permission(json!(5), json!({"toolCallId":"c"}), opts3());
            if card {
                c.approval(json!(5), "c", "command", buttons3());
            }
            c.a2c(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}));
            c.c2a(json!({"jsonrpc":"2.0","id":5,"result":{"outcome":outcome}}));
            c.prompt_result("cancelled");
            c.grade(&JsonRpc)
        };
        let selected = || json!({"outcome":"selected","optionId":"once"});
        let f = answer(selected(), true);
        assert_grade(&f, Grade::Fail, "with the option \"once\"");
        assert_eq!(f.rule, Some(52));
        assert_eq!(
            answer(json!({"outcome":"cancelled"}), true),
            Finding::pass()
        );
        // No card: the client answered as it read the request, and the answer may have crossed
        // the withdrawal on the pipe.
        assert_eq!(answer(selected(), false), Finding::pass());
        // A card on a wire-only client, and an option after the withdrawal: graded only when the
        // harness could have clicked it (profile inputs that answer the prompt, `choose`).
        let wire_only_card = |supports: Vec<String>| {
            let mut c = Case::wire_only();
            c.control_supports = supports;
            c.handshake();
            c.prompt();
            c.permission(json!(5), json!({"toolCallId":"c"}), opts3());
            c.approval(json!(5), "c", "command", buttons3());
            c.a2c(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}));
            c.select(json!(5), "once");
            c.prompt_result("cancelled");
            c.grade(&JsonRpc)
        };
        // Nobody could click (the observer read the card off the client's own automatic answer):
        // the answer may have crossed the withdrawal, as above.
        assert_eq!(wire_only_card(Vec::new()), Finding::pass());
        // Held for the user: an option after the withdrawal is the client's choice.
        assert_grade(
            &wire_only_card(vec!["choose".into()]),
            Grade::Fail,
            "with the option \"once\"",
        );
        // A card the user clicked: the click may have crossed the withdrawal too.
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.permission(json!(5), json!({"toolCallId":"c"}), opts3());
        c.approval(json!(5), "c", "command", buttons3());
        c.cmd(json!({"type":"choose","seq":3,"requestId":5,"optionId":"once"}));
        c.a2c(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}));
        c.select(json!(5), "once");
        c.prompt_result("cancelled");
        assert_eq!(c.grade(&JsonRpc), Finding::pass());
        // An option chosen before the withdrawal arrived is a race the agent resolves, not this.
        let c = base();
        c.permission(json!(5), json!({"toolCallId":"c"}), opts3());
        c.select(json!(5), "once");
        c.a2c(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}));
        c.prompt_result("cancelled");
        assert_eq!(c.grade(&JsonRpc), Finding::pass());
    }

    #[test]
    fn garbage_from_client_fails() {
        let c = base();
        c.c2a_raw(b"Loading config...");
        assert_grade(
            &c.grade(&JsonRpc),
            Grade::Fail,
            "is not a JSON-RPC 2.0 message: not JSON",
        );
        let c = base();
        c.c2a(json!({"id":5,"result":{}}));
        assert_grade(&c.grade(&JsonRpc), Grade::Fail, "no \"jsonrpc\":\"2.0\"");
        let c = base();
        c.c2a_raw(&[b'{', 0xff, b'}']);
        assert_grade(&c.grade(&JsonRpc), Grade::Fail, "not valid UTF-8");
    }

    #[test]
    fn a_line_over_the_frame_limit_fails() {
        let c = base();
        let note = c.note(Note::FrameTooLong {
            conn: Some(1),
            bytes: 52428800,
            max: Some(16777216),
            wire: None,
        });
        let f = c.grade(&JsonRpc);
        assert_grade(
            &f,
            Grade::Fail,
            "a line of 52428800 bytes to the agent (connection 1), over the frame limit of 16777216 bytes",
        );
        assert_eq!(f.frames, [note]);
    }

    #[test]
    fn unanswered_request_fails_with_type_hint() {
        let c = base();
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        c.select(json!("0"), "once");
        let f = c.grade(&JsonRpc);
        assert_grade(&f, Grade::Fail, "was never answered. Response #");
        assert!(
            f.message
                .contains("echoes id \"0\" (string) instead of 0 (number)"),
            "{}",
            f.message
        );
        assert!(f.message.contains("matches no request"), "{}", f.message);
    }

    /// A request pending when the harness killed its agent cannot be answered any more; a kill
    /// of another connection's agent excuses nothing.
    #[test]
    fn a_request_pending_when_its_agent_was_killed_need_not_be_answered() {
        for (conn, grade) in [(1, Grade::Pass), (2, Grade::Fail)] {
            let c = base();
            c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
            c.note(Note::AgentKilled {
                conn,
                signal: "SIGKILL".into(),
                step: Some("7".into()),
            });
            assert_eq!(
                c.grade(&JsonRpc).grade,
                grade,
                "agent of connection {conn} killed"
            );
        }
    }

    /// The client died (or closed the connection) with a `terminal/wait_for_exit` pending on a
    /// command still running: the answer is lost, and named.
    #[test]
    fn requests_pending_when_the_client_died_are_named() {
        let wait = |c: &Case| {
            c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"terminal/wait_for_exit","params":{"sessionId":"ses_1","terminalId":"term_0"}}))
        };
        let mut c = base();
        let w = wait(&c);
        c.end = RunEnd::Crash {
            exit_code: Some(1),
            signal: None,
            reason: "the client exited".into(),
        };
        let f = c.grade(&JsonRpc);
        assert_grade(
            &f,
            Grade::Fail,
            "(terminal/wait_for_exit, id 7 (number)) was never answered before the client died",
        );
        assert_eq!(f.frames, vec![w]);

        let mut c = base();
        wait(&c);
        c.note(Note::ConnectionClosed { step: "4".into() });
        stopped(&mut c, 3_600_000);
        assert_grade(
            &c.grade(&JsonRpc),
            Grade::Fail,
            "never answered before the client closed the agent connection",
        );

        // A completed run may end with a watcher on a live command pending.
        let c = base();
        wait(&c);
        assert_eq!(c.grade(&JsonRpc).grade, Grade::Pass);
    }

    #[test]
    fn unanswered_request_in_unfinished_run_is_left_to_the_run_end() {
        let mut c = base();
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        c.end = RunEnd::Incomplete {
            step: 1,
            reason: "x".into(),
        };
        assert_eq!(c.grade(&JsonRpc).grade, Grade::Pass);
    }

    #[test]
    fn answered_twice_fails_unless_duplicated_by_fault() {
        let c = base();
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        c.select(json!(0), "once");
        c.select(json!(0), "once");
        assert_grade(&c.grade(&JsonRpc), Grade::Fail, "answered 2 times");

        let c = base();
        c.fault_next(FaultKind::Duplicate, 2);
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        c.select(json!(0), "once");
        assert_eq!(c.grade(&JsonRpc).grade, Grade::Pass);
        c.select(json!(0), "once");
        assert_eq!(c.grade(&JsonRpc).grade, Grade::Pass);
        c.select(json!(0), "once");
        assert_grade(&c.grade(&JsonRpc), Grade::Fail, "duplicated agent request");
    }

    #[test]
    fn reply_to_notification_fails_but_parse_error_reply_to_garbage_passes() {
        let c = base();
        c.update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}),
        );
        c.c2a(json!({"jsonrpc":"2.0","id":null,"result":{}}));
        assert_grade(
            &c.grade(&JsonRpc),
            Grade::Fail,
            "an unknown id, or a reply to a notification",
        );

        let c = base();
        c.fault_next(FaultKind::Raw, 1);
        c.a2c_raw(b"oops");
        c.c2a(json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}));
        assert_eq!(c.grade(&JsonRpc).grade, Grade::Pass);
    }

    #[test]
    fn reused_pending_id_fails() {
        let c = base();
        c.c2a(json!({"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{"sessionId":"ses_1","modeId":"x"}}));
        assert_grade(&c.grade(&JsonRpc), Grade::Fail, "reuses id 2 (number)");
    }

    fn stopped(c: &mut Case, step_timeout_ms: u64) {
        c.note(Note::RunStopped {
            step_timeout_ms,
            stretch: 1.0,
        });
        c.end = RunEnd::Incomplete {
            step: 5,
            reason: "client sent no answer to request `perm` within 5000 ms".into(),
        };
    }

    #[test]
    fn a_request_that_waited_a_step_is_never_answered_even_when_the_run_stopped() {
        let mut c = base();
        let p = c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"ses_1","path":"/a"}}));
        stopped(&mut c, 0);
        let f = c.grade(&JsonRpc);
        assert_grade(
            &f,
            Grade::Fail,
            "was never answered before the run gave up waiting",
        );
        assert_eq!(f.frames, vec![p]);

        // Pending for less than a step when something else stopped the run: not judged.
        let mut c = base();
        c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"ses_1","path":"/a"}}));
        stopped(&mut c, 3_600_000);
        assert_eq!(c.grade(&JsonRpc).grade, Grade::Pass);

        // The client closed the agent connection: pending requests are lost, whatever the time.
        let mut c = base();
        c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"x/unknown","params":{}}));
        c.note(Note::ConnectionClosed { step: "4".into() });
        stopped(&mut c, 3_600_000);
        assert_grade(
            &c.grade(&JsonRpc),
            Grade::Fail,
            "never answered before the client closed the agent connection",
        );
    }

    #[test]
    fn a_step_timeout_is_stretched_by_the_load_the_run_saw() {
        // The same 30 ms of wall clock: a whole step of 20 ms on an idle machine, well under
        // one on a machine so busy that its wall clock ran 1000 times machine time.
        for (stretch, grade) in [(1.0, Grade::Fail), (1000.0, Grade::Pass)] {
            let mut c = base();
            c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"ses_1","path":"/a"}}));
            std::thread::sleep(std::time::Duration::from_millis(30));
            c.note(Note::RunStopped {
                step_timeout_ms: 20,
                stretch,
            });
            c.end = RunEnd::Incomplete {
                step: 5,
                reason: "stopped".into(),
            };
            assert_eq!(c.grade(&JsonRpc).grade, grade, "stretch {stretch}");
        }
    }

    /// yopo 11.0.0 and a request with id null, on a machine so busy that the case's average
    /// stretch covered the wait: the step timeout says its wait began after the request, so the
    /// request waited the whole step, whatever the clocks' ratio. A request sent after the wait
    /// began is left to the stretch rule. Timestamps are set, not slept: the test is about the
    /// order on the transcript's clock, which sleeps on a busy machine would blur.
    #[test]
    fn a_request_pending_through_a_timed_out_step_is_never_answered_under_any_load() {
        for (request_at_ms, grade) in [(100, Grade::Fail), (900, Grade::Pass)] {
            let mut c = base();
            let request = c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{"sessionId":"ses_1","path":"/a"}}));
            let timed_out = c.note(Note::StepTimeout {
                step: Some(5),
                label: Some("8".into()),
                reason: Some("client sent no answer".into()),
                waiting_for: None,
                // The wait began at 1000 ms − 500 ms.
                waited_us: Some(500_000),
            });
            c.note(Note::RunStopped {
                step_timeout_ms: 5,
                stretch: 1000.0,
            });
            c.end = RunEnd::Incomplete {
                step: 5,
                reason: "stopped".into(),
            };
            let mut record = c.record();
            record.transcript[request].at_us = request_at_ms * 1000;
            record.transcript[timed_out].at_us = 1_000_000;
            record.transcript[timed_out + 1].at_us = 1_000_000;
            let f = JsonRpc.evaluate(&record);
            assert_eq!(f.grade, grade, "request at {request_at_ms} ms: {f:?}");
        }
    }

    #[test]
    fn a_notification_sent_as_a_request_is_named() {
        let c = base();
        let m = c.c2a(json!({"jsonrpc":"2.0","id":5,"method":"session/cancel","params":{"sessionId":"ses_1"}}));
        let f = c.grade(&JsonRpc);
        assert_grade(
            &f,
            Grade::Fail,
            "was sent as a request, but `session/cancel` is a notification",
        );
        assert!(f.frames.contains(&m));
        let schema = c.grade(&crate::checks::Schema);
        assert_grade(
            &schema,
            Grade::Fail,
            "sent as a request, but `session/cancel` is a notification",
        );
    }
}
