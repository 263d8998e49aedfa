//! `session-open` — a session the agent never opened is reported to the user as not opened
//! (R168), and a protocol version the client does not speak ends the connection (R14).
//!
//! Requirement: when the agent answers the client's `initialize` or `session/new` with an error,
//! or its process dies before it answered either, the session the user asked for does not exist.
//! The client must say so (a control `error` event, from its adapter or observed: a client
//! without an adapter that exits showing a failed turn) and must not show the session as open
//! (`session_opened` with an id the agent never gave).
//!
//! Why: the user otherwise waits on a session that will never answer, or reads a failed start as
//! success. acp-cli 0.3.1 (motosan-dev/acp-cli, `src/cli/prompt.rs` `run_exec`) drops its bridge's
//! error when the agent dies before it answers `initialize`, prints `{"type":"done"}` and, in most
//! runs, exits 0; claude-agent-acp answers `session/new` with `auth_required` and no way to
//! authenticate when its config file is missing (the client "must tell the user and open no
//! session"). ACP says what the client sends to open a session (agentclientprotocol.com,
//! "Session Setup"); that a refused or dead opening is shown as such is the field's rule, the
//! same one R143 states for `session/load`.
//!
//! Reading:
//! * An opening fails at the agent's error answer to `initialize` or `session/new`, or at the
//!   `agent_killed` note (a scenario's `fault = "crash"`) of a connection whose `initialize` or
//!   `session/new` was still unanswered.
//! * A failure after which the client sent another `session/new` on that connection is not
//!   judged: the client is still opening the session (after authenticating, say), and that
//!   request is judged in its own right. Nor is one that a later successful `session/new` made
//!   good (also on a new connection: the client started the agent again): the user got a
//!   session after all.
//! * Reported: any `error` event after the failure. Shown open: a `session_opened` after the
//!   failure whose `sessionId` no `session/new` answer of the agent gave.
//! * A missing report is a `fail` on a completed run only (the runner waits for every
//!   `new_session` to be answered, and for a client without an adapter to exit); on a run that
//!   did not finish, the run's end is the verdict.
//! * A session shown open with an id the agent never gave is R168's (`fail`) after any failure,
//!   a protocol version above the client's included: closing the connection and saying so does
//!   not make a session that was never opened open.
//! * R14 (SHOULD, so `warn`): the agent answered `initialize` with a `protocolVersion` above the
//!   one the client asked for. The client must ask for the latest version it supports (R12), so
//!   that version is one it does not speak, and the spec says the client should close the
//!   connection and tell the user. Judged: any request the client sends on that connection after
//!   the answer (it kept talking in a protocol it does not know), and, on a completed run, no
//!   `error` after it. A lower version is not judged (the client may speak older versions); a
//!   successful `session/new` on another connection (the client restarted the agent) makes it
//!   good, as above.
//! * Needs the control plane, or an observer that reports `error` (one whose rules report `turn`
//!   does: a failed turn of a launch whose prompt never reached the agent is its `error`).

use super::{Check, Finding, Problems, client_exit};
use crate::record::{CaseRecord, RunEnd};
use crate::rules::{RuleId, id::*};
use crate::wire_model::{Side, WireModel, WireMsg};
use acp_vocab::control::Event;
use acp_vocab::method::Method;

pub struct SessionOpen;

impl Check for SessionOpen {
    fn id(&self) -> &'static str {
        "session-open"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R14, R168]
    }

    fn requirement(&self) -> &'static str {
        "A session the agent refused to open (an error answer to initialize or session/new) or died before opening is reported to the user as not opened, never shown open; after a protocol version above its own, the client closes the connection and tells the user."
    }

    fn needs_control_plane(&self) -> bool {
        true
    }

    fn observable_with(&self) -> &'static [&'static str] {
        &["error"]
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let failures = failures(model);
        if failures.is_empty() {
            return Finding::not_applicable(
                "the agent answered every initialize and session/new it was sent, in no protocol version above the client's, and died before none",
            );
        }
        let opened = openings(model);
        let mut problems = Problems::new();
        let mut judged = 0;
        for failure in &failures {
            let made_good = opened.iter().any(|o| {
                o.at > failure.at
                    && !(failure.kind == FailureKind::UnsupportedVersion && o.conn == failure.conn)
            });
            if made_good {
                continue; // a later session/new succeeded (for R14: with another agent process)
            }
            judged += 1;
            let events = model.controls_from(failure.at + 1);
            let shown_open = events.iter().find_map(|c| match c.event() {
                Some(Event::SessionOpened { session_id, .. })
                    if !opened
                        .iter()
                        .any(|o| o.session_id == Some(session_id.as_str())) =>
                {
                    Some((c.index, session_id.as_str()))
                }
                _ => None,
            });
            if let Some((at, sid)) = shown_open {
                // Whatever the client said before, a session shown open that the agent never
                // opened is R168's, after a protocol version the client does not speak too.
                problems.fail(
                    R168,
                    format!(
                        "{} (#{}), but the client shows a session open (session_opened #{at}, sessionId \"{sid}\", an id the agent never gave). Expected an error event and no open session.",
                        failure.what, failure.at
                    ),
                    &[failure.request, failure.at, at],
                );
                continue;
            }
            if failure.kind == FailureKind::UnsupportedVersion {
                judge_unsupported_version(case, model, failure, &mut problems);
                continue;
            }
            if !told_the_user(model, failure.at) && case.end == RunEnd::Completed {
                problems.fail(
                    R168,
                    format!(
                        "{} (#{}), but the client never told the user that the session could not be opened{}. Expected an error event.",
                        failure.what,
                        failure.at,
                        exit_words(model)
                    ),
                    &[failure.request, failure.at],
                );
            }
        }
        if judged == 0 {
            return Finding::not_applicable(
                "every session the agent refused or died before opening was opened after all by a later session/new",
            );
        }
        problems.finish("")
    }
}

/// R14: after the agent chose a protocol version the client does not speak, the client should
/// say nothing more on that connection and tell the user.
fn judge_unsupported_version(
    case: &CaseRecord,
    model: &WireModel<'_>,
    failure: &Failure,
    problems: &mut Problems,
) {
    let kept_talking = model
        .msgs_from(failure.at + 1)
        .iter()
        .find(|m| m.conn == failure.conn && m.from == Side::Client && m.is_request());
    if let Some(next) = kept_talking {
        problems.warn(
            R14,
            format!(
                "{} (#{}), but the client kept the connection and sent {} #{}. Expected it to close the connection and tell the user.",
                failure.what,
                failure.at,
                next.method().unwrap_or("a request"),
                next.index
            ),
            &[failure.request, failure.at, next.index],
        );
        return;
    }
    if !told_the_user(model, failure.at) && case.end == RunEnd::Completed {
        problems.warn(
            R14,
            format!(
                "{} (#{}), and the client stopped there but never told the user why{}. Expected an error event.",
                failure.what,
                failure.at,
                exit_words(model)
            ),
            &[failure.request, failure.at],
        );
    }
}

/// True if the client reported an `error` after transcript index `after`.
fn told_the_user(model: &WireModel<'_>, after: usize) -> bool {
    model
        .controls_from(after + 1)
        .iter()
        .any(|c| matches!(c.event(), Some(Event::Error { .. })))
}

/// Where and how an opening failed.
struct Failure {
    conn: u32,
    /// The client's `initialize` or `session/new`.
    request: usize,
    /// The agent's error answer, its answer in a version the client does not speak, or the
    /// `agent_killed` note.
    at: usize,
    /// The agent's part, in words ("the agent answered initialize #3 with an error").
    what: String,
    kind: FailureKind,
}

/// What the agent did: refused or died (R168, `fail`), or chose a protocol version the client
/// does not speak (R14, `warn`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum FailureKind {
    Refused,
    UnsupportedVersion,
}

/// The failed openings the client did not try again on the same connection.
fn failures(model: &WireModel<'_>) -> Vec<Failure> {
    let mut out: Vec<Failure> = Vec::new();
    for msg in &model.msgs {
        let method = match msg.method() {
            Some(m)
                if matches!(
                    Method::parse(m),
                    Some(Method::Initialize | Method::SessionNew)
                ) =>
            {
                m
            }
            _ => continue,
        };
        if msg.from != Side::Client || !msg.is_request() {
            continue;
        }
        let answers = model.answers_to(msg.index);
        let failure = match answers.first().and_then(|&a| model.msg(a)) {
            Some(answer) if answer.is_error_response() => Some(Failure {
                conn: msg.conn,
                request: msg.index,
                at: answer.index,
                what: format!("the agent answered {method} #{} with an error", msg.index),
                kind: FailureKind::Refused,
            }),
            Some(answer) => unsupported_version(msg, answer),
            None => super::agent_killed_after(model, msg.conn, msg.index).map(|(at, signal)| {
                Failure {
                    conn: msg.conn,
                    request: msg.index,
                    at,
                    what: format!(
                        "the agent died before it answered {method} #{} (the harness killed its process with {signal})",
                        msg.index
                    ),
                    kind: FailureKind::Refused,
                }
            }),
        };
        out.extend(failure);
    }
    // A `session/new` sent after a refusal on its connection is the client trying again (after
    // an unsupported version it is what R14 judges).
    out.retain(|f| {
        f.kind == FailureKind::UnsupportedVersion
            || !model.msgs_from(f.at).iter().any(|m| {
                m.conn == f.conn && m.from == Side::Client && m.is_request_for(Method::SessionNew)
            })
    });
    out
}

/// The agent's answer to `initialize` as an R14 failure when it chose a protocol version above
/// the one the client asked for. Both must be integers; anything else is `initialize`'s to judge.
fn unsupported_version(request: &WireMsg<'_>, answer: &WireMsg<'_>) -> Option<Failure> {
    if !request.is_request_for(Method::Initialize) {
        return None;
    }
    let asked = request.params()?.get("protocolVersion")?.as_u64()?;
    let answered = answer.result()?.get("protocolVersion")?.as_u64()?;
    (answered > asked).then(|| Failure {
        conn: request.conn,
        request: request.index,
        at: answer.index,
        what: format!(
            "the agent answered initialize #{} with protocolVersion {answered}, above the {asked} the client asked for (its latest, R12), so a version it does not speak",
            request.index
        ),
        kind: FailureKind::UnsupportedVersion,
    })
}

/// A successful answer of the agent to `session/new`.
struct Opening<'a> {
    at: usize,
    conn: u32,
    session_id: Option<&'a str>,
}

/// The agent's successful answers to `session/new`, in order.
fn openings<'a>(model: &WireModel<'a>) -> Vec<Opening<'a>> {
    model
        .msgs
        .iter()
        .filter(|m| m.from == Side::Agent)
        .filter_map(|m| {
            let result = m.result()?;
            model
                .request_msg_of(m)?
                .is_request_for(Method::SessionNew)
                .then(|| Opening {
                    at: m.index,
                    conn: m.conn,
                    session_id: result.get("sessionId").and_then(|v| v.as_str()),
                })
        })
        .collect()
}

/// " (the client's exit: exit code 0)" from the harness's `client_exited` note, for a client
/// without an adapter whose exit status is what it shows.
fn exit_words(model: &WireModel<'_>) -> String {
    if !model.observer_reports("error") {
        return String::new();
    }
    client_exit(model).map_or(String::new(), |(s, _)| format!(" (the client's exit: {s})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, WS, assert_grade, assert_names_its_rule};
    use acp_vocab::note::Note;
    use serde_json::json;

    fn open_command(c: &Case) -> usize {
        c.cmd(json!({"type":"new_session","seq":1,"session":"s1","cwd":WS}))
    }

    fn initialize(c: &Case) -> usize {
        c.c2a(
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
            "clientCapabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
        )
    }

    fn killed(c: &Case) -> usize {
        c.note(Note::AgentKilled {
            conn: 1,
            signal: "SIGTERM".into(),
            step: Some("3".into()),
        })
    }

    /// The agent died before it answered initialize: an error passes; nothing, or a session
    /// shown open with an id the agent never gave, fails and cites the request and the kill.
    #[test]
    fn a_session_whose_agent_died_first_must_be_reported() {
        for (shown, grade, needle) in [
            (
                Some(json!({"type":"error","seq":1,"message":"agent exited"})),
                Grade::Pass,
                "",
            ),
            (
                None,
                Grade::Fail,
                "never told the user that the session could not be opened",
            ),
            (
                Some(json!({"type":"session_opened","session":"s1","sessionId":"made-up"})),
                Grade::Fail,
                "an id the agent never gave",
            ),
        ] {
            let c = Case::new();
            open_command(&c);
            let request = initialize(&c);
            let kill = killed(&c);
            if let Some(event) = shown {
                c.ev(event);
            }
            let f = c.grade(&SessionOpen);
            assert_grade(&f, grade, needle);
            if grade == Grade::Fail {
                assert!(
                    f.message.contains("died before it answered initialize"),
                    "{f:?}"
                );
                assert!(
                    f.frames.contains(&request) && f.frames.contains(&kill),
                    "{f:?}"
                );
                assert_names_its_rule(&SessionOpen, &f);
            }
        }
    }

    /// An error answer to session/new (or initialize) is a refused opening too; a later
    /// successful session/new (after authenticating, say) makes it good.
    #[test]
    fn a_refused_session_new_must_be_reported_unless_a_later_one_succeeded() {
        let refused = |c: &Case| {
            open_command(c);
            initialize(c);
            c.a2c(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}));
            c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
            c.a2c(json!({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Authentication required"}}))
        };
        let c = Case::new();
        refused(&c);
        assert_grade(
            &c.grade(&SessionOpen),
            Grade::Fail,
            "the agent answered session/new #",
        );
        let c = Case::new();
        refused(&c);
        c.c2a(json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        c.a2c(json!({"jsonrpc":"2.0","id":2,"result":{"sessionId":SID}}));
        c.ev(json!({"type":"session_opened","session":"s1","sessionId":SID}));
        assert_eq!(c.grade(&SessionOpen).grade, Grade::NotApplicable);
        // Asked again and still waiting for the agent: the client is opening, not silent.
        let c = Case::new();
        refused(&c);
        c.c2a(json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        assert_eq!(c.grade(&SessionOpen).grade, Grade::NotApplicable);
        // Asked again and refused again: that second refusal is the one to report.
        c.a2c(json!({"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"Authentication required"}}));
        assert_grade(
            &c.grade(&SessionOpen),
            Grade::Fail,
            "the agent answered session/new #",
        );
        c.ev(json!({"type":"error","seq":1,"message":"session/new failed"}));
        assert_eq!(c.grade(&SessionOpen).grade, Grade::Pass);
    }

    /// A run that did not finish proves nothing by a missing error; a shown session still fails.
    #[test]
    fn an_unfinished_run_is_graded_by_its_end() {
        let mut c = Case::new();
        c.end = crate::record::RunEnd::Incomplete {
            step: 4,
            reason: "x".into(),
        };
        open_command(&c);
        initialize(&c);
        killed(&c);
        assert_eq!(c.grade(&SessionOpen).grade, Grade::Pass);
    }

    /// A client without an adapter: the observer's `error` (its exit said so) is the report; its
    /// silence fails and quotes the client's exit.
    #[test]
    fn an_observed_error_is_the_report_of_a_client_without_an_adapter() {
        for (observed, grade) in [(true, Grade::Pass), (false, Grade::Fail)] {
            let c = Case::wire_only();
            c.note(Note::Observer {
                name: "cli".into(),
                reports: vec!["turn".into(), "error".into()],
                from: "exit status".into(),
            });
            initialize(&c);
            killed(&c);
            if observed {
                c.rec.record(
                    0,
                    acp_vocab::transcript::Direction::ObserverToHarness,
                    json!({"type":"error","message":"cli exited with code 1","observed":
                        {"by":"cli","from":"exit status","evidence":"exit code 1"}})
                    .to_string()
                    .as_bytes(),
                );
            }
            c.note(Note::ClientExited {
                status: "exit code 0".into(),
                exit_code: Some(0),
            });
            let f = c.grade(&SessionOpen);
            assert_grade(
                &f,
                grade,
                if observed {
                    ""
                } else {
                    "(the client's exit: exit code 0)"
                },
            );
        }
    }

    /// R14: an answer in a version above the client's own. Closing and telling the user passes;
    /// going on with session/new, or stopping silently, is a `warn`; a lower version, or a later
    /// session opened with a restarted agent, is not judged.
    #[test]
    fn a_protocol_version_the_client_does_not_speak_ends_the_connection() {
        let answered = |c: &Case, version: u64| {
            open_command(c);
            let request = initialize(c);
            let answer = c.a2c(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":version,"agentCapabilities":{}}}));
            (request, answer)
        };
        let c = Case::new();
        answered(&c, 2);
        c.ev(json!({"type":"error","seq":1,"message":"the agent speaks protocol version 2"}));
        assert_eq!(c.grade(&SessionOpen).grade, Grade::Pass);

        let c = Case::new();
        let (request, answer) = answered(&c, 2);
        let next = c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        c.a2c(json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":SID}}));
        c.ev(json!({"type":"session_opened","session":"s1","sessionId":SID}));
        let f = c.grade(&SessionOpen);
        assert_grade(&f, Grade::Warn, "kept the connection and sent session/new");
        assert!(
            f.message.contains("protocolVersion 2, above the 1"),
            "{f:?}"
        );
        assert!(
            [request, answer, next].iter().all(|i| f.frames.contains(i)),
            "{f:?}"
        );
        assert_eq!(f.rule, Some(14), "{f:?}");
        assert_names_its_rule(&SessionOpen, &f);

        let c = Case::new();
        answered(&c, 2);
        assert_grade(
            &c.grade(&SessionOpen),
            Grade::Warn,
            "never told the user why",
        );

        // Closed and told the user, then shown a session open anyway, with an id the agent
        // never gave: R168, as after a refused session/new.
        let c = Case::new();
        let (request, answer) = answered(&c, 2);
        c.ev(json!({"type":"error","seq":1,"message":"the agent speaks protocol version 2"}));
        let shown = c.ev(json!({"type":"session_opened","session":"s1","sessionId":"local-s1"}));
        let f = c.grade(&SessionOpen);
        assert_grade(&f, Grade::Fail, "shows a session open (session_opened #");
        assert_eq!(f.rule, Some(168), "{f:?}");
        assert!(
            [request, answer, shown]
                .iter()
                .all(|i| f.frames.contains(i)),
            "{f:?}"
        );

        // An older version may be one the client speaks: nothing to judge.
        let c = Case::new();
        answered(&c, 0);
        assert_eq!(c.grade(&SessionOpen).grade, Grade::NotApplicable);

        // The client started the agent again and got a session there: made good.
        let c = Case::new();
        answered(&c, 2);
        c.rec.record(
            2,
            acp_vocab::transcript::Direction::ClientToAgent,
            json!({"jsonrpc":"2.0","id":0,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}})
                .to_string()
                .as_bytes(),
        );
        c.rec.record(
            2,
            acp_vocab::transcript::Direction::AgentToClient,
            json!({"jsonrpc":"2.0","id":0,"result":{"sessionId":SID}})
                .to_string()
                .as_bytes(),
        );
        assert_eq!(c.grade(&SessionOpen).grade, Grade::NotApplicable);
    }

    #[test]
    fn nothing_to_judge_when_every_opening_was_answered() {
        let c = Case::new();
        c.handshake();
        assert_eq!(c.grade(&SessionOpen).grade, Grade::NotApplicable);
    }
}
