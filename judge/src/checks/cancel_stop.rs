//! `cancel-stop` — a user cancel stops the turn the way ACP says (docs/architecture.md §5.3; R42–R44,
//! #46–#48, #50).
//!
//! Requirement: when the user cancels a turn in progress, the client sends `session/cancel` for
//! that session, answers every pending `session/request_permission` of the session with
//! `{"outcome":"cancelled"}` and answers none `selected` until the turn ends, keeps accepting the
//! agent's updates, and — when the agent then returns `stopReason: "cancelled"` — shows the turn
//! as cancelled (not failed, completed or refused).
//!
//! How the case is read:
//! * A user cancel is a control `cancel` command (handle → sessionId via `session_opened`) or a
//!   harness note `{"type":"user_cancel","sessionId":…}` (wire-only clients). A note without a
//!   session id targets the session whose `session/prompt` was last sent before it.
//! * The cancelled turn is the `session/prompt` of that session in progress at the cancel; it ends
//!   with the agent's response to it (or the client's next `session/prompt`). A cancel while no
//!   prompt is in progress asks for nothing on the wire.
//! * `session/cancel` missing is `fail`; sent as a request (with an id) it is `fail` with that
//!   said (R182: it is a notification); if the client instead answered a pending request with a
//!   `reject_*` option, the message says exactly that (the ZERO #915 bug).
//! * Pending requests answered `selected`, with a JSON-RPC error, or never, are `fail` (R43/R44);
//!   so is a request arriving later in the cancelled turn (after the Stop, before the agent's
//!   stop reason) answered `selected`, with an error, or never: the client answers it
//!   `cancelled` by itself. "Never" includes a
//!   run that ended incomplete or timed out: the harness waited at least one step timeout after
//!   the cancel, so the answer is missing, not late (a crash is reported as the death instead).
//! * #50: a client error response that answers no request (a rejected update) during the
//!   cancelled turn, or the client dying before the cancelled turn ended, is `fail`. Not when
//!   the agent sent it, in that turn before the cancel, a request it never answered (other than
//!   a permission request the cancel settles; a `terminal/wait_for_exit`, say) or a message it
//!   cannot be expected to know: it may have died of that frame before it read the cancel,
//!   which is the machine's race, so neither the death nor a missing `session/cancel` is put on
//!   the cancel (`jsonrpc` or `unknown-messages` names the frame). What the client did send
//!   before dying is judged as usual.
//! * #42 (marking tool calls cancelled) is client display state with no fixed vocabulary in the
//!   control protocol (item `status` is free text), so it is not graded.
//! * The turn state needs the control plane (or a client profile's observer that reports `turn`
//!   events, e.g. from the client's exit status); without it that part is skipped and the pass
//!   message says so. A reported end other than `cancelled` is `fail`. The runner waits for every turn's
//!   end before it shuts a completed case down, so a completed case whose cancelled turn was never
//!   reported as ended fails too; on an unfinished run that absence is only noted.
//! * A pending request whose agent the harness killed before it was answered (note
//!   `agent_killed`, a scenario's `fault = "crash"`) is not required to be answered.

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use std::collections::HashMap;

use acp_vocab::control::{Command, Event, Turn, TurnState};

use super::{Check, Finding, Problems};
use crate::record::{CaseRecord, RunEnd};
use crate::wire_model::{PermissionAnswer, PermissionRequest, Side, WireModel};

pub struct CancelStop;

impl Check for CancelStop {
    fn id(&self) -> &'static str {
        "cancel-stop"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R42, R43, R44, R46, R47, R48, R50, R182, R192]
    }

    fn requirement(&self) -> &'static str {
        "A user cancel sends session/cancel, answers every pending permission request with the cancelled outcome, keeps accepting updates, and ends the turn as cancelled."
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let cancels = model.user_cancels();
        if cancels.is_empty() {
            return Finding::not_applicable("scenario never cancels");
        }
        let mut problems = Problems::new();
        let mut unchecked: Vec<&str> = Vec::new();
        let targets: Vec<Option<&str>> = cancels.iter().map(|c| model.cancel_target(c)).collect();
        // The next user cancel of the same session bounds the search for this cancel's effects.
        let mut next_same: Vec<usize> = vec![usize::MAX; cancels.len()];
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for (k, target) in targets.iter().enumerate().rev() {
            if let Some(sid) = target {
                if let Some(&next) = seen.get(sid) {
                    next_same[k] = next;
                }
                seen.insert(sid, cancels[k].index);
            }
        }
        // Sweep: permission requests open (sent, not yet answered) at each cancel.
        let mut open: Vec<&PermissionRequest<'_>> = Vec::new();
        let mut next_request = 0;
        for (k, cancel) in cancels.iter().enumerate() {
            let at = cancel.index;
            while let Some(p) = model.permissions.get(next_request).filter(|p| p.index < at) {
                open.push(p);
                next_request += 1;
            }
            open.retain(|p| p.answers.iter().all(|&a| a > at));
            let Some(sid) = targets[k] else {
                problems.fail(
                    R43,
                    format!(
                        "cannot tell which session the user cancel #{} targets: handle {} was never reported by a session_opened event.",
                        cancel.index,
                        cancel.handle.map_or("(none)".to_owned(), |h| format!("\"{h}\""))
                    ),
                    &[cancel.index],
                );
                continue;
            };
            let pending: Vec<&PermissionRequest<'_>> = open
                .iter()
                .copied()
                .filter(|p| p.session_id == Some(sid))
                .collect();
            let scope = Scope {
                at,
                sid,
                next_cancel: next_same[k],
                pending,
            };
            if let Some(why) = check_cancel(case, model, &scope, &mut problems) {
                if !unchecked.contains(&why) {
                    unchecked.push(why);
                }
            }
        }
        problems.finish(&unchecked.join("; "))
    }
}

const NO_CONTROL_PLANE: &str = "turn state not checked: client has no control-plane adapter";
const NOT_REPORTED: &str = "turn state not checked: the client reported no turn end after the agent's cancelled stopReason before the case ended";

/// One user cancel to grade.
struct Scope<'p, 'a> {
    /// Transcript index of the cancel.
    at: usize,
    sid: &'a str,
    /// Index of the next user cancel of the same session (or `usize::MAX`).
    next_cancel: usize,
    /// Permission requests of the session sent before the cancel and not answered before it.
    pending: Vec<&'p PermissionRequest<'a>>,
}

const DIED_OF_EARLIER_FRAME: &str = "the client's death is not put on the cancel: before the cancel the agent sent it a request it never answered (jsonrpc names it) or a message it cannot be expected to know (unknown-messages names it), and it may have died of that before it read the cancel";

/// Whether the client may have died of an agent frame of the cancelled turn (sent after its
/// `session/prompt`, before the user cancel at `at`) rather than of the cancel: a request it
/// never answered that the cancel does not settle (not a permission request of the cancelled
/// session; a `terminal/wait_for_exit`, say), or a message it cannot be expected to know. Which
/// it read first, that frame or the cancel, is the machine's race: the harness wrote the cancel
/// to the adapter while the frame may still have sat unread in the agent pipe. So the death is
/// not judged as the cancel's (R50); `jsonrpc` or `unknown-messages` names the frame.
fn frame_it_may_have_died_of(
    model: &WireModel<'_>,
    sid: &str,
    prompt: usize,
    at: usize,
) -> Option<&'static str> {
    let in_turn = |i: usize| prompt < i && i < at;
    let unanswered = model
        .msgs_from(prompt + 1)
        .iter()
        .take_while(|m| m.index < at)
        .filter(|m| m.from == Side::Agent && m.is_request())
        .filter(|m| {
            !(m.is_request_for(Method::SessionRequestPermission)
                && m.params_session_id() == Some(sid))
        })
        .any(|m| model.answers_to(m.index).is_empty());
    let unknown = || {
        super::unknown_messages::unknown_message_indices(model)
            .into_iter()
            .any(in_turn)
    };
    (unanswered || unknown()).then_some(DIED_OF_EARLIER_FRAME)
}

/// Grades one cancel; returns why the turn state was left unchecked, if it was.
fn check_cancel(
    case: &CaseRecord,
    model: &WireModel<'_>,
    scope: &Scope<'_, '_>,
    problems: &mut Problems,
) -> Option<&'static str> {
    let Scope {
        at,
        sid,
        next_cancel,
        ref pending,
    } = *scope;
    let prompt = model.prompt_in_progress(sid, at);
    let prompt_response =
        prompt.and_then(|p| model.answers_to(p.index).into_iter().find(|&a| a > at));
    let next_prompt = model
        .session_msgs_from(sid, at + 1)
        .find(|m| m.from == Side::Client && m.is_request_for(Method::SessionPrompt))
        .map(|m| m.index);
    let turn_end = prompt_response.or(next_prompt).unwrap_or(usize::MAX);

    // Permission requests of this session: pending at the cancel, or arriving in the cancelled
    // turn.
    let first_later = model.permissions.partition_point(|p| p.index <= at);
    let later: Vec<&PermissionRequest<'_>> = model.permissions[first_later..]
        .iter()
        .take_while(|p| p.index < turn_end)
        .filter(|p| p.session_id == Some(sid))
        .collect();

    // What the client never did because it died may be owed to an earlier request, not to
    // the cancel; what it did do is judged all the same.
    let died_of_earlier = match (&case.end, prompt, prompt_response) {
        (RunEnd::Crash { .. }, Some(p), None) => frame_it_may_have_died_of(model, sid, p.index, at),
        _ => None,
    };

    // 1. session/cancel (R43 context, docs/architecture.md §5.3).
    if prompt.is_some() || !pending.is_empty() {
        let sent = model
            .session_msgs_from(sid, at)
            .take_while(|m| m.index < next_cancel)
            .any(|m| m.from == Side::Client && m.is_notification_for(Method::SessionCancel));
        let as_request = || {
            model
                .session_msgs_from(sid, at)
                .take_while(|m| m.index < next_cancel)
                .find(|m| m.from == Side::Client && m.is_request_for(Method::SessionCancel))
        };
        if let Some(request) = (!sent).then(as_request).flatten() {
            problems.fail(
                R182,
                format!(
                    "after the user cancel #{at} the client sent session/cancel for session \"{sid}\" as a request (id {}) at #{}, but session/cancel is a notification: it must have no id. An agent that handles the notification answers the request -32601 or not at all, and the turn may run on.",
                    request.id().map_or("?".to_owned(), |id| id.to_string()),
                    request.index
                ),
                &[at, request.index],
            );
        } else if !sent && died_of_earlier.is_none() {
            let rejected = pending.iter().find_map(|p| {
                let answer = p.answers.first().copied()?;
                match model.permission_answer(answer) {
                    PermissionAnswer::Selected(id) => {
                        let kind = p.option(id).and_then(|o| o.kind)?;
                        kind.starts_with("reject")
                            .then_some((p.index, answer, id, kind))
                    }
                    _ => None,
                }
            });
            match rejected {
                Some((request, answer, id, kind)) => problems.fail(
                    R43,
                    format!(
                        "cancel answered with reject and no session/cancel: after the user cancel #{at} the client answered request #{request} with option \"{id}\" ({kind}) at #{answer} and never sent session/cancel for session \"{sid}\". Expected session/cancel and {{\"outcome\":\"cancelled\"}}."
                    ),
                    &[at, request, answer],
                ),
                None => {
                    let mut frames = vec![at];
                    frames.extend(prompt.map(|p| p.index));
                    problems.fail(
                        R43,
                        format!(
                            "after the user cancel #{at} the client never sent session/cancel for session \"{sid}\"{}.",
                            prompt.map_or(String::new(), |p| format!(
                                " while its session/prompt #{} was in progress",
                                p.index
                            ))
                        ),
                        &frames,
                    );
                }
            }
        }
    }

    // 2. Pending requests are answered cancelled (R43, R44).
    for request in pending {
        let answer = request.answers.first().copied();
        match answer.map(|a| (a, model.permission_answer(a))) {
            Some((_, PermissionAnswer::Cancelled)) => {}
            Some((a, other)) => problems.fail(
                R43,
                format!(
                    "request #{} was pending at the user cancel #{at} and was answered {} (#{a}). Expected {{\"outcome\":{{\"outcome\":\"cancelled\"}}}} (R43).",
                    request.index,
                    other.describe()
                ),
                &[at, request.index, a],
            ),
            None if !matches!(case.end, RunEnd::Crash { .. })
                && super::agent_killed_after(model, request.conn, request.index).is_none() =>
            {
                problems.fail(
                R43,
                format!(
                    "request #{} was pending at the user cancel #{at} and was never answered{}. Expected {{\"outcome\":{{\"outcome\":\"cancelled\"}}}} (R43).",
                    request.index,
                    super::before_the_end(case, model)
                ),
                &[at, request.index],
            )
            }
            None => {}
        }
    }
    for request in later.iter().filter(|_| prompt.is_some()) {
        // A request that arrives after the Stop, before the agent's cancelled stop, is the
        // client's to answer `cancelled` by itself: the user already said stop (R44).
        match request.answers.first() {
            None if !matches!(case.end, RunEnd::Crash { .. })
                && super::agent_killed_after(model, request.conn, request.index).is_none() =>
            {
                problems.fail(
                R44,
                format!(
                    "request #{} arrived after the user cancel #{at}, in the cancelled turn, and was never answered{}. Expected the client to answer it {{\"outcome\":{{\"outcome\":\"cancelled\"}}}} by itself, without asking the user (R44).",
                    request.index,
                    super::before_the_end(case, model)
                ),
                &[at, request.index],
            )
            }
            Some(&a) if model.permission_answer(a) == PermissionAnswer::Error => problems.fail(
                R44,
                format!(
                    "request #{} arrived in the turn the user cancelled at #{at} and was answered with an error (#{a}). Expected the cancelled outcome (R44).",
                    request.index
                ),
                &[at, request.index, a],
            ),
            _ => {}
        }
        for &a in &request.answers {
            if let PermissionAnswer::Selected(id) = model.permission_answer(a) {
                problems.fail(
                    R44,
                    format!(
                        "request #{} arrived in the turn the user cancelled at #{at} and was answered selected \"{id}\" (#{a}). Expected the cancelled outcome (R44).",
                        request.index
                    ),
                    &[at, request.index, a],
                );
            }
        }
    }

    // 3. Updates after the cancel are still accepted (R50).
    for m in model.msgs_from(at + 1) {
        if m.index >= turn_end.min(next_cancel) {
            break;
        }
        if m.from == Side::Client
            && m.is_error_response()
            && model.request_of(m.index).is_none()
            && !model.is_reply_to_garbage(m.index)
        {
            problems.fail(
                R192,
                format!(
                    "after the user cancel #{at} the client sent error #{} that answers no request: it rejected an update of the cancelled turn. Expected updates to be accepted silently (R50).",
                    m.index
                ),
                &[at, m.index],
            );
        }
    }
    if let RunEnd::Crash { .. } = case.end {
        if prompt.is_some() && prompt_response.is_none() && died_of_earlier.is_none() {
            problems.fail(
                R192,
                format!(
                    "the client died after the user cancel #{at}, before the agent ended the cancelled turn. Expected it to keep accepting updates until the session/prompt response (R50)."
                ),
                &[at],
            );
        }
    }

    // 4. The client shows the turn as cancelled when the agent says so (R46–R48).
    let Some(response) = prompt_response else {
        return died_of_earlier;
    };
    let stop_reason = model
        .msg(response)
        .and_then(|m| m.result())
        .and_then(|r| r.get("stopReason"))
        .and_then(|s| s.as_str());
    if stop_reason != Some("cancelled") {
        return None;
    }
    if !super::reports(case, model, "turn") {
        return Some(NO_CONTROL_PLANE);
    }
    let next_wire_prompt = model
        .session_msgs_from(sid, response + 1)
        .find(|m| m.from == Side::Client && m.is_request_for(Method::SessionPrompt))
        .map(|m| m.index);
    let bound = next_wire_prompt.unwrap_or(usize::MAX).min(next_cancel);
    let next_user_prompt = model
        .controls_from(at + 1)
        .iter()
        .take_while(|c| c.index < bound)
        .find(|c| match c.command() {
            Some(Command::Prompt { session, .. }) => {
                model.session_for_handle(session, c.index) == Some(sid)
            }
            _ => false,
        })
        .map(|c| c.index);
    let boundary = next_user_prompt.unwrap_or(usize::MAX).min(bound);
    let mut ended = false;
    for c in model.controls_from(at + 1) {
        if c.index >= boundary {
            break;
        }
        let Some(Event::Turn(Turn {
            session_id, state, ..
        })) = c.event()
        else {
            continue;
        };
        if session_id != sid || !state.is_end() {
            continue;
        }
        ended = true;
        if *state != TurnState::Cancelled {
            problems.fail(
                R48,
                format!(
                    "the agent ended the cancelled turn with stopReason \"cancelled\" (#{response}) but the client shows the turn as \"{state}\" (#{}). Expected \"cancelled\".",
                    c.index
                ),
                &[at, response, c.index],
            );
        }
    }
    if !ended {
        // The runner lets a completed case settle (waits for every turn's end) before it shuts
        // the client down, so a missing end is the client's; on an unfinished run it proves
        // nothing and is only noted.
        if case.end == RunEnd::Completed {
            problems.fail(
                R48,
                format!(
                    "the agent ended the cancelled turn with stopReason \"cancelled\" (#{response}) but the client never reported the turn's end. Expected a turn event with state \"cancelled\"."
                ),
                &[at, response],
            );
            return None;
        }
        return Some(NOT_REPORTED);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, assert_grade, buttons3, opts3};
    use acp_vocab::note::Note;
    use serde_json::json;

    /// Prompt, a pending permission request with its card, the user cancels.
    fn cancelled_turn(c: &Case) {
        c.handshake();
        c.prompt();
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"rm","kind":"execute"}),
        );
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        if c.control_plane {
            c.approval(json!(0), "c", "command", buttons3());
            c.cmd(json!({"type":"cancel","seq":3,"session":"s1"}));
        } else {
            c.note(Note::UserCancel {
                session_id: SID.into(),
                by: Some("SIGINT".into()),
            });
        }
    }

    fn good(c: &Case) {
        cancelled_turn(c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed"}));
        c.prompt_result("cancelled");
    }

    #[test]
    fn correct_cancel_passes() {
        let c = Case::new();
        good(&c);
        c.ev(json!({"type":"turn","sessionId":SID,"state":"cancelled","stopReason":"cancelled"}));
        assert_eq!(c.grade(&CancelStop), Finding::pass());
    }

    #[test]
    fn wire_only_cancel_passes_and_says_turn_unchecked() {
        let c = Case::wire_only();
        good(&c);
        let f = c.grade(&CancelStop);
        assert_grade(&f, Grade::Pass, "turn state not checked");
    }

    #[test]
    fn cancel_as_reject_without_session_cancel_fails() {
        let c = Case::new();
        cancelled_turn(&c);
        c.select(json!(0), "reject");
        c.prompt_result("end_turn");
        let f = c.grade(&CancelStop);
        assert_grade(
            &f,
            Grade::Fail,
            "cancel answered with reject and no session/cancel",
        );
        assert!(
            f.message.contains("was pending at the user cancel"),
            "{}",
            f.message
        );
    }

    #[test]
    fn missing_session_cancel_fails() {
        let c = Case::new();
        cancelled_turn(&c);
        c.cancelled(json!(0));
        c.prompt_result("end_turn");
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "never sent session/cancel",
        );
    }

    #[test]
    fn session_cancel_sent_as_a_request_fails_saying_so() {
        let c = Case::new();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","id":7,"method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        c.prompt_result("cancelled");
        let f = c.grade(&CancelStop);
        assert_grade(&f, Grade::Fail, "as a request (id 7)");
        assert_eq!(f.rule, Some(182));
    }

    /// A request pending at the Stop whose agent the harness then killed cannot be answered.
    #[test]
    fn a_pending_request_whose_agent_was_killed_need_not_be_answered() {
        for (conn, grade) in [(1, Grade::Pass), (2, Grade::Fail)] {
            let c = Case::new();
            cancelled_turn(&c);
            c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
            c.note(Note::AgentKilled {
                conn,
                signal: "SIGTERM".into(),
                step: Some("9".into()),
            });
            assert_eq!(c.grade(&CancelStop).grade, grade, "connection {conn}");
        }
    }

    #[test]
    fn pending_request_selected_or_unanswered_fails() {
        let c = Case::new();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.select(json!(0), "once");
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "answered selected \"once\"",
        );

        let mut c = Case::new();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        assert_grade(&c.grade(&CancelStop), Grade::Fail, "was never answered");
        c.end = RunEnd::Incomplete {
            step: 9,
            reason: "waiting".into(),
        };
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "never answered before the run gave up waiting",
        );
        c.end = RunEnd::Crash {
            exit_code: Some(1),
            signal: None,
            reason: "died".into(),
        };
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "the client died after the user cancel",
        );
        assert!(!c.grade(&CancelStop).message.contains("never answered"));
    }

    #[test]
    fn later_request_in_cancelled_turn_must_not_be_selected() {
        let c = Case::wire_only();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        c.permission(json!(1), json!({"toolCallId":"d"}), opts3());
        c.select(json!(1), "always");
        c.prompt_result("cancelled");
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "arrived in the turn the user cancelled",
        );
    }

    #[test]
    fn a_request_after_the_stop_must_be_answered_cancelled_by_the_client() {
        let c = Case::wire_only();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        let late = c.permission(json!(1), json!({"toolCallId":"d"}), opts3());
        c.prompt_result("cancelled");
        let f = c.grade(&CancelStop);
        assert_grade(&f, Grade::Fail, "arrived after the user cancel");
        assert!(f.message.contains("by itself"), "{f:?}");
        assert!(f.frames.contains(&late));

        let c = Case::wire_only();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        c.permission(json!(1), json!({"toolCallId":"d"}), opts3());
        c.cancelled(json!(1));
        c.prompt_result("cancelled");
        assert_ne!(c.grade(&CancelStop).grade, Grade::Fail);
    }

    #[test]
    fn turn_shown_failed_after_cancelled_stop_reason_fails() {
        let c = Case::new();
        good(&c);
        c.ev(json!({"type":"turn","sessionId":SID,"state":"failed","message":"Cancelled"}));
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "shows the turn as \"failed\"",
        );
        // An optimistic "cancelled" followed by "completed" still fails.
        let c = Case::new();
        good(&c);
        c.ev(json!({"type":"turn","sessionId":SID,"state":"cancelled"}));
        c.ev(json!({"type":"turn","sessionId":SID,"state":"completed","stopReason":"cancelled"}));
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "shows the turn as \"completed\"",
        );
        // No turn end reported in a completed (settled) case: the client never showed it.
        let c = Case::new();
        good(&c);
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "never reported the turn's end",
        );
        // On an unfinished run the absence proves nothing: noted, and graded by the run's end.
        let mut c = Case::new();
        good(&c);
        c.end = RunEnd::Incomplete {
            step: 9,
            reason: "step 9 timed out".into(),
        };
        assert_grade(&c.grade(&CancelStop), Grade::Pass, "reported no turn end");
    }

    #[test]
    fn turn_after_end_turn_stop_reason_is_not_judged() {
        let c = Case::new();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        c.prompt_result("end_turn");
        c.ev(json!({"type":"turn","sessionId":SID,"state":"completed","stopReason":"end_turn"}));
        assert_eq!(c.grade(&CancelStop).grade, Grade::Pass);
    }

    #[test]
    fn rejecting_updates_or_dying_after_cancel_fails() {
        let c = Case::new();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed"}));
        c.c2a(json!({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"turn is over"}}));
        c.prompt_result("end_turn");
        assert_grade(&c.grade(&CancelStop), Grade::Fail, "rejected an update");

        let mut c = Case::wire_only();
        cancelled_turn(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"failed"}));
        c.end = RunEnd::Crash {
            exit_code: Some(130),
            signal: None,
            reason: "exited".into(),
        };
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "the client died after the user cancel",
        );
    }

    /// Prompt, an allowed command whose `terminal/wait_for_exit` is open, the user cancels.
    fn cancel_while_waiting_for_a_command(c: &Case) {
        c.handshake();
        c.prompt();
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        c.select(json!(0), "once");
        c.a2c(json!({"jsonrpc":"2.0","id":1,"method":"terminal/wait_for_exit","params":{"sessionId":SID,"terminalId":"t"}}));
        c.cmd(json!({"type":"cancel","seq":3,"session":"s1"}));
    }

    #[test]
    fn a_death_with_an_earlier_request_unanswered_is_not_put_on_the_cancel() {
        let died = RunEnd::Crash {
            exit_code: Some(101),
            signal: None,
            reason: "exited".into(),
        };
        // The client died before it read the cancel: no session/cancel.
        let mut c = Case::new();
        cancel_while_waiting_for_a_command(&c);
        c.end = died.clone();
        let f = c.grade(&CancelStop);
        assert_grade(&f, Grade::Pass, "may have died of that");
        // It read the cancel first, then the request: the same grade.
        let mut c = Case::new();
        cancel_while_waiting_for_a_command(&c);
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.end = died.clone();
        assert_grade(&c.grade(&CancelStop), Grade::Pass, "may have died of that");
        // What it did do before dying is judged all the same.
        let mut c = Case::new();
        cancel_while_waiting_for_a_command(&c);
        c.c2a(json!({"jsonrpc":"2.0","id":7,"method":"session/cancel","params":{"sessionId":SID}}));
        c.end = died.clone();
        assert_grade(&c.grade(&CancelStop), Grade::Fail, "as a request");
        // With that request answered, the death is the cancelled turn's.
        let mut c = Case::new();
        cancel_while_waiting_for_a_command(&c);
        c.c2a(json!({"jsonrpc":"2.0","id":1,"result":{"exitCode":0}}));
        c.end = died;
        assert_grade(
            &c.grade(&CancelStop),
            Grade::Fail,
            "never sent session/cancel",
        );
    }

    #[test]
    fn a_death_after_an_unknown_update_is_not_put_on_the_cancel() {
        let mut c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"agent_activity_update","activity":"thinking"}));
        c.cmd(json!({"type":"cancel","seq":3,"session":"s1"}));
        c.end = RunEnd::Crash {
            exit_code: Some(1),
            signal: None,
            reason: "died".into(),
        };
        assert_grade(&c.grade(&CancelStop), Grade::Pass, "may have died of that");
    }

    #[test]
    fn no_cancel_is_not_applicable() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.prompt_result("end_turn");
        assert_grade(
            &c.grade(&CancelStop),
            Grade::NotApplicable,
            "scenario never cancels",
        );
    }

    #[test]
    fn note_without_session_targets_the_last_prompt() {
        let c = Case::wire_only();
        c.handshake();
        c.prompt();
        c.note(Note::UserCancel {
            session_id: String::new(),
            by: Some("SIGINT".into()),
        });
        c.prompt_result("end_turn");
        assert_grade(&c.grade(&CancelStop), Grade::Fail, "session \"ses_1\"");
    }
}
