//! `unknown-messages` — what the client does not know must not break it (R88, R180, R181).
//!
//! Requirement: an agent message the client does not recognize — a `session/update` of a
//! variant the pinned schema does not define (newer and unstable schema versions add variants),
//! a `_`-prefixed extension notification, a `_`-prefixed extension request, or a request or
//! notification of a method outside every ACP namespace (qwen-code 0.21.10 sends the request
//! `craft/drainMidTurnQueue` after every tool and waits for its answer, and the notifications
//! `qwen/notify/session/*`) — leaves the client running and processing what follows; such a
//! request is answered with its id (a result, or `-32601 Method not found`), and promptly: the
//! agent waits for it.
//!
//! Why: a Rust client whose typed parser rejected `usage_update` marked the session failed
//! (RyderFreeman4Logos/cli-sub-agent#2585), xenodium/agent-shell#455 stopped showing a turn after
//! an update it did not know, and an editor that answered no unrecognized request stranded the
//! agent, which waits for the id (carlos-algms/agentic.nvim#314; QwenLM/qwen-code#4925, whose
//! agent hung on a client that ignored its request). Without this check such a client shows only
//! as `crash` or `timeout` trials that say nothing about why.
//!
//! Grading (not applicable when the agent sent nothing of the kind):
//! * an extension request never answered, or answered with an error other than `-32601`: `fail`
//!   (R180; R7 for a request of a foreign method, which JSON-RPC answers -32601 as well);
//! * such a request answered only after the agent went on without the answer (an agent frame on
//!   its connection came between the request and the answer: the fake agent waits for it, as
//!   qwen-code does, and gives up after a while): `fail` (same rules) — an agent that waits
//!   longer hangs the turn;
//! * the client died, or closed the agent connection, after the first unknown message, or (a run
//!   complete on the wire) exited by itself with a failure status, no user cancel in the case: `warn`
//!   naming that frame and the client's stderr tail (R181 for an update variant, R88 for an
//!   extension notification, R180 for a request) — the spec words ignoring as a SHOULD;
//! * with a control plane: a tool call the agent announced after the first unknown message that
//!   never got a timeline row, i.e. the client stopped processing updates: `warn` (same rules).

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use serde_json::Value;

use super::schema::is_foreign_method;
use super::{Check, Finding, Problems, client_exit, connection_closed, reports, with_stderr};
use crate::record::{CaseRecord, RunEnd};
use crate::surface::is_known_update;
use crate::wire_model::{MsgKind, Side, WireModel};

pub struct UnknownMessages;

/// The JSON-RPC "Method not found" code.
const METHOD_NOT_FOUND: i64 = -32601;

/// One agent message the client cannot be expected to know.
struct Unknown {
    index: usize,
    /// "session/update variant `agent_activity_update`", "extension notification `_x/y`", …
    what: String,
    /// The variant or the method alone, as a client's error message would name it.
    name: String,
    /// The rule that tells the client what to do with it.
    rule: RuleId,
    request: bool,
}

impl Check for UnknownMessages {
    fn id(&self) -> &'static str {
        "unknown-messages"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R7, R88, R180, R181]
    }

    fn requirement(&self) -> &'static str {
        "An unknown session/update variant, a _-prefixed extension notification or a message of a foreign method leaves the client running and processing what follows; a _-prefixed extension request or a request of a foreign method is answered at once (a result or -32601 Method not found)."
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut unknown = unknown_messages(model);
        if unknown.is_empty() {
            // An ACP variant the client's SDK does not know (yopo 11.0.0 and usage_update): the
            // client names it as it goes away. That is the variant it died of (R181), not "none".
            unknown.extend(unknown_to_the_client(case, model));
        }
        let Some(first) = unknown.first() else {
            return Finding::not_applicable(
                "the agent sent no unknown session/update variant and no extension method",
            );
        };
        let mut problems = Problems::new();

        for u in unknown.iter().filter(|u| u.request) {
            let answers = model.answers_to(u.index);
            let Some(&answer) = answers.first() else {
                if case.end == RunEnd::Completed {
                    problems.fail(
                        u.rule,
                        format!(
                            "the agent's {} at #{} was never answered. Expected a response with its id: a result, or {{\"code\":-32601,\"message\":\"Method not found\"}}; an agent waits for it.",
                            u.what, u.index
                        ),
                        &[u.index],
                    );
                }
                continue;
            };
            let code = model
                .msg(answer)
                .and_then(|m| m.json())
                .and_then(|j| j.pointer("/error/code"))
                .and_then(Value::as_i64);
            let conn = model.msg(u.index).map(|m| m.conn);
            if let Some(went_on) = model
                .msgs_from(u.index + 1)
                .iter()
                .take_while(|m| m.index < answer)
                .find(|m| m.from == Side::Agent && Some(m.conn) == conn)
            {
                problems.fail(
                    u.rule,
                    format!(
                        "the client answered the agent's {} at #{} only at #{answer}, after the agent had gone on without the answer (#{}). Expected an answer at once (a result, or -32601 Method not found): the agent waits for it.",
                        u.what, u.index, went_on.index
                    ),
                    &[u.index, went_on.index, answer],
                );
            }
            if let Some(code) = code.filter(|&c| c != METHOD_NOT_FOUND) {
                problems.fail(
                    u.rule,
                    format!(
                        "the client answered the agent's {} at #{} with error {code} at #{answer}. Expected a result, or -32601 Method not found for a method it does not implement.",
                        u.what, u.index
                    ),
                    &[u.index, answer],
                );
            }
        }

        if let Some(end) = went_away(case, model, &first.name) {
            // Going away is judged as what it is, not answering: the SHOULD to ignore what one
            // does not know and keep going (R88; R181 for session/update variants). A request
            // left unanswered already failed its MUST above.
            let keep_going = if first.request { R88 } else { first.rule };
            problems.warn(
                keep_going,
                with_stderr(
                    format!(
                        "{end} after the agent's {} at #{}. Expected the client to ignore what it does not know and keep processing the messages after it.",
                        first.what, first.index
                    ),
                    &case.stderr_tail,
                ),
                &[first.index],
            );
        } else if reports(case, model, "item") {
            for (sid, tcid, announced) in announced_after(model, first.index) {
                if model.item_events(sid, tcid).is_empty() {
                    // The stderr tail says whether it stopped or died of it (a client that
                    // exits after the agent's last frame still leaves the run complete).
                    problems.warn(
                        first.rule,
                        with_stderr(
                            format!(
                                "the client stopped processing updates after the agent's {} at #{}: tool call \"{tcid}\" (session \"{sid}\"), announced at #{announced}, got no timeline item.",
                                first.what, first.index
                            ),
                            &case.stderr_tail,
                        ),
                        &[first.index, announced],
                    );
                }
            }
        }
        problems.finish("")
    }
}

/// Transcript indices of the agent messages a client cannot be expected to know (unknown
/// session/update variants, extension and foreign methods), in order.
pub(super) fn unknown_message_indices(model: &WireModel<'_>) -> Vec<usize> {
    unknown_messages(model).iter().map(|u| u.index).collect()
}

/// Every agent message of an unknown session/update variant or an extension method, in order.
fn unknown_messages(model: &WireModel<'_>) -> Vec<Unknown> {
    let mut out = Vec::new();
    for m in model.msgs.iter().filter(|m| m.from == Side::Agent) {
        let Some(method) = m.method() else { continue };
        let request = matches!(m.kind, MsgKind::Request { .. });
        if method.starts_with('_') {
            let kind = if request { "request" } else { "notification" };
            out.push(Unknown {
                index: m.index,
                what: format!("extension {kind} `{method}`"),
                name: method.to_owned(),
                rule: if request { R180 } else { R88 },
                request,
            });
        } else if is_foreign_method(method) {
            let kind = if request { "request" } else { "notification" };
            out.push(Unknown {
                index: m.index,
                what: format!("{kind} `{method}` (no ACP method)"),
                name: method.to_owned(),
                rule: if request { R7 } else { R88 },
                request,
            });
        } else if method == Method::SessionUpdate.as_str() && !request {
            if let Some(variant) = m.update_variant().filter(|v| !is_known_update(v)) {
                out.push(Unknown {
                    index: m.index,
                    what: format!("session/update of the unknown variant `{variant}`"),
                    name: variant.to_owned(),
                    rule: R181,
                    request: false,
                });
            }
        }
    }
    out
}

/// The first `session/update` of an ACP variant that the client went away on naming it in its
/// stderr: a variant ACP defines but the client's SDK does not (usage_update,
/// session_info_update in an SDK pinned before them).
fn unknown_to_the_client(case: &CaseRecord, model: &WireModel<'_>) -> Option<Unknown> {
    let m = model.msgs.iter().find(|m| {
        m.from == Side::Agent
            && m.method() == Some(Method::SessionUpdate.as_str())
            && m.update_variant()
                .is_some_and(|v| case.stderr_tail.contains(&format!("`{v}`")))
    })?;
    let variant = m.update_variant()?;
    went_away(case, model, variant)?;
    Some(Unknown {
        index: m.index,
        what: format!(
            "session/update of the variant `{variant}` (an ACP variant, but one the client does not know: its stderr names it)"
        ),
        name: variant.to_owned(),
        rule: R181,
        request: false,
    })
}

/// How the client went away, if it did: it crashed, or it closed the agent connection; or, on a
/// run complete on the wire, it exited by itself with a failure status and its stderr names the
/// unknown message `name`. The last is a one-shot client that died of the message after the
/// agent's last frame, too late to make the run a crash (yopo 11.0.0 exits 1 with "unknown variant
/// `agent_activity_update`"). The harness itself only ever kills with SIGKILL, so an exit code is
/// the client's own; but a one-shot client may exit 1 for reasons of its own (chuk-acp 0.3.2 does
/// when the agent wrote no text), so the failure must name the message to count as a death of it.
fn went_away(case: &CaseRecord, model: &WireModel<'_>, name: &str) -> Option<String> {
    match &case.end {
        RunEnd::Crash { reason, .. } => Some(format!("the client died ({reason})")),
        RunEnd::Incomplete { .. } if connection_closed(model) => {
            Some("the client closed the agent connection".to_owned())
        }
        RunEnd::Completed if model.user_cancels().is_empty() => {
            let (status, code) = client_exit(model)?;
            let code = code?;
            let named = case.stderr_tail.contains(name);
            (code != 0 && named).then(|| {
                format!("the client exited by itself with {status}, its stderr naming `{name}`,")
            })
        }
        _ => None,
    }
}

/// Tool calls first announced (by a frame that is not a deliberate fault) after `index`, with
/// that frame.
fn announced_after<'a>(model: &WireModel<'a>, index: usize) -> Vec<(&'a str, &'a str, usize)> {
    model
        .announced_tool_calls()
        .into_iter()
        .filter_map(|(sid, tcid, _)| {
            let first = model
                .tool_frames(sid, tcid)
                .iter()
                .copied()
                .find(|&i| model.fault_at(i).is_none())?;
            (first > index).then_some((sid, tcid, first))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, assert_grade};
    use serde_json::json;

    fn with_unknown_update(c: &Case) -> usize {
        c.fault_next(acp_vocab::note::FaultKind::Invalid, 1);
        c.update(json!({"sessionUpdate":"agent_activity_update","activity":"reading"}))
    }

    /// Issue 42 item 10: a client that dies of an ACP variant its SDK does not know is told
    /// which, not "the agent sent no unknown session/update variant".
    #[test]
    fn a_death_on_an_acp_variant_the_client_does_not_know_names_it() {
        let mut c = Case::wire_only();
        c.handshake();
        c.prompt();
        let at = c.update(json!({"sessionUpdate":"usage_update","used":10,"size":100}));
        c.stderr_tail = "Error: Parse error: unknown variant `usage_update`".into();
        c.end = RunEnd::Crash {
            exit_code: Some(1),
            signal: None,
            reason: "exit code 1".into(),
        };
        let f = c.grade(&UnknownMessages);
        assert_grade(
            &f,
            Grade::Warn,
            "the client died (exit code 1) after the agent's session/update of the variant `usage_update` (an ACP variant, but one the client does not know",
        );
        assert_eq!(f.frames, vec![at]);
        // Not named in its stderr: nothing to say.
        c.stderr_tail = "Error: broken pipe".into();
        assert_eq!(c.grade(&UnknownMessages).grade, Grade::NotApplicable);
    }

    #[test]
    fn nothing_unknown_is_not_applicable() {
        let c = Case::new();
        c.handshake();
        assert_eq!(c.grade(&UnknownMessages).grade, Grade::NotApplicable);
    }

    #[test]
    fn a_foreign_request_is_answered_at_once_and_a_foreign_notification_is_tolerated() {
        let drain = json!({"jsonrpc":"2.0","id":4,"method":"craft/drainMidTurnQueue","params":{"sessionId":SID,"todoStopGuardWatchQueuedPrompt":true}});
        let not_found =
            json!({"jsonrpc":"2.0","id":4,"error":{"code":-32601,"message":"Method not found"}});
        // Answered at once: pass.
        let c = Case::new();
        c.handshake();
        c.a2c(json!({"jsonrpc":"2.0","method":"qwen/notify/session/prompt-suggestion","params":{"v":1,"sessionId":SID}}));
        c.a2c(drain.clone());
        c.c2a(not_found.clone());
        c.update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}),
        );
        let f = c.grade(&UnknownMessages);
        assert_eq!(f.grade, Grade::Pass, "{f:?}");
        // Never answered: fail, R7, naming the method.
        let c = Case::new();
        c.handshake();
        c.a2c(drain.clone());
        let f = c.grade(&UnknownMessages);
        assert_eq!(f.grade, Grade::Fail, "{f:?}");
        assert_eq!(f.rule, Some(7));
        assert!(
            f.message.contains("`craft/drainMidTurnQueue`"),
            "{}",
            f.message
        );
        // Answered only after the agent went on without it: fail.
        let c = Case::new();
        c.handshake();
        let req = c.a2c(drain);
        let went_on = c.update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"done"}}),
        );
        c.c2a(not_found);
        let f = c.grade(&UnknownMessages);
        assert_eq!(f.grade, Grade::Fail, "{f:?}");
        assert!(
            f.message.contains(&format!("at #{req} only at"))
                && f.message
                    .contains(&format!("without the answer (#{went_on})")),
            "{}",
            f.message
        );
    }

    #[test]
    fn an_unanswered_extension_request_fails() {
        let c = Case::new();
        c.handshake();
        c.a2c(json!({"jsonrpc":"2.0","id":"ext-1","method":"_vendor/ask","params":{}}));
        let f = c.grade(&UnknownMessages);
        assert_eq!(f.grade, Grade::Fail, "{f:?}");
        assert_eq!(f.rule, Some(180));
        assert!(f.message.contains("`_vendor/ask`"), "{}", f.message);
    }

    #[test]
    fn method_not_found_or_a_result_passes_another_error_fails() {
        for (answer, grade) in [
            (
                json!({"error":{"code":-32601,"message":"Method not found"}}),
                Grade::Pass,
            ),
            (json!({"result":{}}), Grade::Pass),
            (
                json!({"error":{"code":-32603,"message":"boom"}}),
                Grade::Fail,
            ),
        ] {
            let c = Case::new();
            c.handshake();
            c.a2c(json!({"jsonrpc":"2.0","id":"ext-1","method":"_vendor/ask","params":{}}));
            let mut reply = json!({"jsonrpc":"2.0","id":"ext-1"});
            for (k, v) in answer.as_object().unwrap() {
                reply[k] = v.clone();
            }
            c.c2a(reply);
            assert_eq!(c.grade(&UnknownMessages).grade, grade, "{answer}");
        }
    }

    #[test]
    fn a_crash_after_an_unknown_variant_is_named_with_the_stderr_tail() {
        let mut c = Case::new();
        c.handshake();
        c.prompt();
        with_unknown_update(&c);
        c.end = RunEnd::Crash {
            exit_code: Some(1),
            signal: None,
            reason: "exited".into(),
        };
        let f = c.grade(&UnknownMessages);
        assert_eq!(f.grade, Grade::Warn, "{f:?}");
        assert_eq!(f.rule, Some(181));
        assert!(f.message.contains("agent_activity_update"), "{}", f.message);
        assert!(f.message.contains("last words"), "{}", f.message);
    }

    /// A one-shot client (no adapter) that dies of the variant after the agent's last frame: the
    /// run is complete on the wire, and only its own exit status says it died (yopo 11.0.0).
    #[test]
    fn a_failure_exit_of_its_own_after_a_complete_run_is_a_death() {
        let named = "Error: Parse error: unknown variant `agent_activity_update`";
        for (status, exit_code, stderr, cancelled, grade) in [
            ("exit code 1", Some(1), named, false, Grade::Warn),
            // A failure of its own (chuk-acp 0.3.2 exits 1 when the agent wrote no text).
            (
                "exit code 1",
                Some(1),
                "(No response from agent)",
                false,
                Grade::Pass,
            ),
            ("exit code 0", Some(0), named, false, Grade::Pass),
            ("killed by SIGKILL", None, named, false, Grade::Pass),
            ("exit code 130", Some(130), named, true, Grade::Pass),
        ] {
            let mut c = Case::wire_only();
            c.stderr_tail = stderr.into();
            c.handshake();
            c.prompt();
            with_unknown_update(&c);
            if cancelled {
                c.cmd(json!({"type":"cancel","seq":3,"session":"s1"}));
            }
            c.prompt_result("end_turn");
            c.note(acp_vocab::note::Note::ClientExited {
                status: status.into(),
                exit_code,
            });
            let f = c.grade(&UnknownMessages);
            assert_eq!(f.grade, grade, "{status}: {f:?}");
            if grade == Grade::Warn {
                assert_eq!(f.rule, Some(181));
                assert!(
                    f.message
                        .starts_with("the client exited by itself with exit code 1, its stderr naming `agent_activity_update`, after the agent's session/update of the unknown variant `agent_activity_update`"),
                    "{}",
                    f.message
                );
            }
        }
    }

    #[test]
    fn a_crash_after_an_extension_notification_names_it() {
        let mut c = Case::new();
        c.handshake();
        c.a2c(json!({"jsonrpc":"2.0","method":"_vendor/status","params":{"sessionId":SID}}));
        c.end = RunEnd::Crash {
            exit_code: None,
            signal: Some("SIGABRT".into()),
            reason: "killed".into(),
        };
        let f = c.grade(&UnknownMessages);
        assert_eq!((f.grade, f.rule), (Grade::Warn, Some(88)), "{f:?}");
        assert!(f.message.contains("`_vendor/status`"), "{}", f.message);
    }

    /// ralph-any 0.2.0 answers qwen-code's `craft/drainMidTurnQueue` and then exits 1: going
    /// away after a request is the SHOULD to keep going (R88), never a warn citing the MUST to
    /// answer (which the grading asserts: a grade follows its rule's keyword).
    #[test]
    fn a_crash_after_an_answered_foreign_request_warns_with_the_should() {
        for method in ["craft/drainMidTurnQueue", "_vendor/ask"] {
            let mut c = Case::new();
            c.handshake();
            c.prompt();
            c.a2c(json!({"jsonrpc":"2.0","id":"q1","method":method,"params":{"sessionId":SID}}));
            c.c2a(json!({"jsonrpc":"2.0","id":"q1","result":{}}));
            c.end = RunEnd::Crash {
                exit_code: Some(1),
                signal: None,
                reason: "exited".into(),
            };
            let f = c.grade(&UnknownMessages);
            assert_eq!(
                (f.grade, f.rule),
                (Grade::Warn, Some(88)),
                "{method}: {f:?}"
            );
            assert!(f.message.contains(method), "{}", f.message);
        }
    }

    #[test]
    fn no_row_for_a_tool_call_after_the_unknown_variant_is_a_warn() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        with_unknown_update(&c);
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"call_1","title":"read","kind":"read"}),
        );
        let f = c.grade(&UnknownMessages);
        assert_eq!(f.grade, Grade::Warn, "{f:?}");
        assert!(f.message.contains("stopped processing"), "{}", f.message);

        c.item("call_1", "read");
        assert_eq!(c.grade(&UnknownMessages).grade, Grade::Pass);
    }

    #[test]
    fn a_known_variant_is_not_unknown() {
        let c = Case::new();
        c.handshake();
        c.update(json!({"sessionUpdate":"usage_update","used":1,"size":2}));
        assert_eq!(c.grade(&UnknownMessages).grade, Grade::NotApplicable);
    }
}
