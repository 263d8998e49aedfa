//! Tests of [`grade_case`]: the RunEnd rules, the control-plane rule and the message format.

use crate::rules::id::*;
use serde_json::json;

use super::testkit::{Case, SID, buttons3, opts3};
use super::*;

/// A run where every check passes or is not applicable.
fn passing() -> Case {
    let c = Case::new();
    c.handshake();
    c.prompt();
    c.update(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"t","kind":"execute"}));
    c.item("c", "command");
    c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
    c.approval(json!(0), "c", "command", buttons3());
    c.cmd(json!({"type":"choose","seq":3,"requestId":0,"optionId":"once"}));
    c.select(json!(0), "once");
    c.prompt_result("end_turn");
    c.ev(json!({"type":"turn","sessionId":SID,"state":"completed","stopReason":"end_turn"}));
    c
}

fn trial<'t>(trials: &'t [Trial], id: &str) -> &'t Trial {
    trials.iter().find(|t| t.check == id).expect("trial")
}

#[test]
fn all_checks_have_stable_ids_in_fixed_order() {
    let ids: Vec<&str> = all_checks().iter().map(|c| c.id()).collect();
    assert_eq!(
        ids,
        [
            "subject-kind",
            "offered-options",
            "cancel-stop",
            "stable-item-type",
            "jsonrpc",
            "schema",
            "session-cwd",
            "fs",
            "initialize",
            "session-isolation",
            "turn-end",
            "tool-call-row",
            "auto-approval",
            "session-load",
            "terminal",
            "unknown-messages",
            "session-mode",
            "authenticate",
            "session-open",
            "plan",
            "tool-call-status",
            "tool-call-title",
            "agent-death"
        ]
    );
    for check in all_checks() {
        assert!(!check.rules().is_empty(), "{}", check.id());
        assert!(check.requirement().ends_with('.'), "{}", check.id());
    }
}

#[test]
fn completed_run_grades_each_check() {
    let trials = grade_case(&passing().record());
    let grades: Vec<(&str, Grade)> = trials.iter().map(|t| (t.check, t.grade)).collect();
    assert_eq!(
        grades,
        [
            ("subject-kind", Grade::Pass),
            ("offered-options", Grade::Pass),
            ("cancel-stop", Grade::NotApplicable),
            ("stable-item-type", Grade::Pass),
            ("jsonrpc", Grade::Pass),
            ("schema", Grade::Pass),
            ("session-cwd", Grade::Pass),
            ("fs", Grade::NotApplicable),
            ("initialize", Grade::Pass),
            ("session-isolation", Grade::NotApplicable),
            ("turn-end", Grade::Pass),
            ("tool-call-row", Grade::Pass),
            ("auto-approval", Grade::Pass),
            ("session-load", Grade::NotApplicable),
            ("terminal", Grade::NotApplicable),
            ("unknown-messages", Grade::NotApplicable),
            ("session-mode", Grade::NotApplicable),
            ("authenticate", Grade::NotApplicable),
            ("session-open", Grade::NotApplicable),
            ("plan", Grade::NotApplicable),
            ("tool-call-status", Grade::Pass),
            ("tool-call-title", Grade::Pass),
            ("agent-death", Grade::NotApplicable),
        ]
    );
    assert_eq!(
        trial(&trials, "cancel-stop").message,
        "scenario never cancels"
    );
    assert_eq!(
        trial(&trials, "jsonrpc").rules,
        &[R1, R2, R3, R4, R6, R7, R52]
    );
}

#[test]
fn not_applicable_run_makes_every_trial_not_applicable() {
    let mut c = passing();
    c.end = RunEnd::NotApplicable {
        reason: "client does not advertise fs.writeTextFile".into(),
    };
    for t in grade_case(&c.record()) {
        assert_eq!(t.grade, Grade::NotApplicable, "{}", t.check);
        assert_eq!(t.message, "client does not advertise fs.writeTextFile");
    }
}

#[test]
fn harness_error_makes_every_trial_error_with_repro() {
    let mut c = passing();
    c.end = RunEnd::HarnessError {
        reason: "socket bind failed".into(),
    };
    for t in grade_case(&c.record()) {
        assert_eq!(t.grade, Grade::Error, "{}", t.check);
        assert!(t.message.contains("socket bind failed"));
        assert!(t.message.ends_with("repro: acp-harness replay test@1/case"));
    }
}

#[test]
fn a_request_the_scenario_left_unanswered_makes_every_trial_error_naming_the_step() {
    // The client asks something no step takes and the fake agent has no answer for, then
    // (waiting for it) never shows the turn ended: the scenario's fault, not the client's.
    let c = Case::new();
    c.handshake();
    c.prompt();
    let asked = c.c2a(json!({"jsonrpc":"2.0","id":9,"method":"session/set_mode",
        "params":{"sessionId":SID,"modeId":"plan"}}));
    c.note(Note::UnmatchedRequest {
        step: "7".into(),
        line: Some(41),
        method: "session/set_mode".into(),
        frame: asked,
        error: None,
        result: None,
    });
    c.prompt_result("end_turn");
    let trials = grade_case(&c.record());
    assert_eq!(trial(&trials, "turn-end").grade, Grade::Error);
    assert_eq!(trial(&trials, "session-mode").grade, Grade::Fail);
    for t in &trials {
        // A finding about the request itself stands (session-mode: an unoffered mode).
        if t.grade != Grade::Error {
            assert!(
                matches!(t.grade, Grade::Fail | Grade::Warn) && t.frames.contains(&asked),
                "{}: {:?} {}",
                t.check,
                t.grade,
                t.message
            );
            continue;
        }
        assert!(
            t.message.contains("not the client's fault")
                && t.message.contains("session/set_mode")
                && t.message.contains("step 7 (line 41)")
                && t.message.contains(&format!("#{asked} ")),
            "{}",
            t.message
        );
    }

    // A finding about the unanswered request itself stands (a second initialize, R197).
    let c = passing();
    let again = c.c2a(json!({"jsonrpc":"2.0","id":9,"method":"initialize",
        "params":{"protocolVersion":1,"clientCapabilities":{}}}));
    c.note(Note::UnmatchedRequest {
        step: "6".into(),
        line: None,
        method: "initialize".into(),
        frame: again,
        error: None,
        result: None,
    });
    let trials = grade_case(&c.record());
    let init = trial(&trials, "initialize");
    assert_eq!(init.grade, Grade::Warn, "{}", init.message);
    assert!(
        init.message.contains("initialize again"),
        "{}",
        init.message
    );
    assert_eq!(trial(&trials, "turn-end").grade, Grade::Error);

    // Answered by the fake agent (the profile's error, or -32601): the checks judge as usual.
    let c = passing();
    let asked = c.c2a(json!({"jsonrpc":"2.0","id":9,"method":"_x/unknown","params":{}}));
    c.note(Note::UnmatchedRequest {
        step: "5".into(),
        line: None,
        method: "_x/unknown".into(),
        frame: asked,
        error: Some(json!({"code":-32601,"message":"Method not found"})),
        result: None,
    });
    c.a2c(json!({"jsonrpc":"2.0","id":9,"error":{"code":-32601,"message":"Method not found"}}));
    for t in grade_case(&c.record()) {
        assert_ne!(t.grade, Grade::Error, "{}: {}", t.check, t.message);
    }
}

#[test]
fn adapter_error_makes_every_trial_error_and_blames_the_adapter() {
    let mut c = passing();
    c.end = RunEnd::AdapterError {
        reason: "control message #3 is invalid".into(),
    };
    for t in grade_case(&c.record()) {
        assert_eq!(t.grade, Grade::Error, "{}", t.check);
        assert!(
            t.message
                .contains("the client's adapter broke control protocol v1")
        );
        assert!(t.message.contains("control message #3 is invalid"));
        assert!(
            !t.message.contains("not the client's fault"),
            "{}",
            t.message
        );
    }
}

#[test]
fn control_plane_checks_are_not_applicable_without_adapter_even_on_timeout() {
    let mut c = Case::wire_only();
    c.handshake();
    c.end = RunEnd::Timeout {
        after_ms: 30_000,
        reason: "case budget exceeded".into(),
    };
    let trials = grade_case(&c.record());
    for id in ["subject-kind", "stable-item-type"] {
        let t = trial(&trials, id);
        assert_eq!(t.grade, Grade::NotApplicable, "{id}");
        assert_eq!(t.message, "client has no control-plane adapter");
    }
    // Wire checks on an unfinished run cannot pass.
    let t = trial(&trials, "jsonrpc");
    assert_eq!(t.grade, Grade::Timeout);
    assert!(
        t.message
            .starts_with("the run did not finish: case budget exceeded")
    );
    assert!(t.message.ends_with("repro: acp-harness replay test@1/case"));
}

#[test]
fn incomplete_run_turns_pass_and_not_applicable_into_timeout_but_fail_stands() {
    let mut c = Case::new();
    c.handshake();
    c.prompt();
    c.permission(json!(0), json!({"toolCallId":"c","kind":"edit"}), opts3());
    c.approval(json!(0), "c", "command", buttons3());
    c.end = RunEnd::Incomplete {
        step: 6,
        reason: "step 6: client sent no response within 5000 ms".into(),
    };
    let trials = grade_case(&c.record());
    assert_eq!(trial(&trials, "subject-kind").grade, Grade::Fail);
    for id in ["offered-options", "cancel-stop", "jsonrpc", "fs"] {
        let t = trial(&trials, id);
        assert_eq!(t.grade, Grade::Timeout, "{id}");
        assert!(
            t.message.contains("step 6: client sent no response"),
            "{id}"
        );
    }
}

#[test]
fn a_closed_agent_connection_is_not_called_a_timeout() {
    let mut c = Case::new();
    c.handshake();
    c.prompt();
    c.note(Note::ConnectionClosed { step: "6".into() });
    c.end = RunEnd::Incomplete {
        step: 6,
        reason: "client closed the agent connection at step 6 (t.toml:30) while waiting".into(),
    };
    let trials = grade_case(&c.record());
    for id in ["offered-options", "jsonrpc", "fs"] {
        let t = trial(&trials, id);
        assert_eq!(t.grade, Grade::Crash, "{id}");
        assert!(
            t.message.contains("nothing timed out"),
            "{id}: {}",
            t.message
        );
        assert!(!t.message.contains("gave up waiting"), "{id}");
    }
}

#[test]
fn crash_reports_exit_code_signal_and_stderr() {
    let mut c = passing();
    c.end = RunEnd::Crash {
        exit_code: None,
        signal: Some("SIGSEGV".into()),
        reason: "client died at step 4".into(),
    };
    let trials = grade_case(&c.record());
    let t = trial(&trials, "schema");
    assert_eq!(t.grade, Grade::Crash);
    assert!(
        t.message.starts_with(
            "the client crashed (exit code none, signal SIGSEGV): client died at step 4"
        ),
        "{}",
        t.message
    );
    assert!(t.message.contains("stderr tail:\nlast words"));
    assert!(t.message.ends_with("repro: acp-harness replay test@1/case"));
}

#[test]
fn failure_message_lists_frames_then_repro() {
    let c = Case::wire_only();
    c.handshake();
    c.prompt();
    let req = c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
    let long = "x".repeat(1000);
    let ans = c.select(json!(0), &long);
    let trials = grade_case(&c.record());
    let t = trial(&trials, "offered-options");
    assert_eq!(t.grade, Grade::Fail);
    assert_eq!(t.frames, vec![req, ans]);
    let lines: Vec<&str> = t.message.lines().collect();
    let n = lines.len();
    assert!(lines[n - 3].starts_with(&format!("#{req} agent → client {{")));
    assert!(lines[n - 2].starts_with(&format!("#{ans} client → agent {{")));
    assert!(
        lines[n - 2].chars().count() < 340,
        "frame lines are truncated"
    );
    assert!(lines[n - 2].ends_with('…'));
    assert_eq!(lines[n - 1], "repro: acp-harness replay test@1/case");
    assert!(t.message.contains(SID) || t.message.contains("did not offer"));
}

#[test]
fn a_failing_trial_names_its_rule_and_prints_it_first() {
    let c = Case::new();
    c.handshake();
    c.prompt();
    c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
    c.select(json!(0), "not-offered");
    let trials = grade_case(&c.record());
    let t = trial(&trials, "offered-options");
    assert_eq!(t.grade, Grade::Fail);
    assert_eq!(t.rule, Some(59));
    let rule = t.broken_rule().expect("R59 is in the catalogue");
    let text = t.failure_text();
    let first = text.lines().next().unwrap_or("");
    assert_eq!(
        first,
        format!("R59 (MUST) {} {}", rule.requirement, rule.link)
    );
    assert!(
        text.ends_with(&t.message),
        "the finding follows the rule line"
    );
    // The rule stays out of the message itself: baseline entries match its first words.
    assert!(!t.message.starts_with("R59"));
    // A trial no rule decides names none.
    for t in grade_case(&passing().record()) {
        assert_eq!(t.rule, None, "{}", t.check);
        assert_eq!(t.failure_text(), t.message);
    }
}

#[test]
fn grading_never_panics_on_garbage() {
    let c = Case::new();
    c.c2a_raw(b"\x00\x01garbage");
    c.rec
        .record(7, acp_vocab::transcript::Direction::AgentToClient, b"[1,2]");
    c.ev(json!({"type":"approval"}));
    c.ev(json!({"type":"item","sessionId":1}));
    c.cmd(json!({"type":"cancel","seq":1,"session":"nope"}));
    c.note(Note::UserCancel {
        session_id: String::new(),
        by: None,
    });
    c.c2a(json!({"jsonrpc":"2.0","id":[1],"result":{}}));
    c.a2c(json!({"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"toolCall":7,"options":"x"}}));
    c.a2c(json!({"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"path":"/tmp/case/work/a","line":-1}}));
    c.c2a(json!({"jsonrpc":"2.0","id":1,"result":{"content":"x"}}));
    let trials = grade_case(&c.record());
    assert_eq!(trials.len(), all_checks().len());
}

/// A large transcript is graded like a small one: ~100k frames of many turns that reuse one
/// toolCallId (each with a card, a choice and a cancel) all pass, and the one wrong turn at the
/// end fails `turn-end`, citing its own frames. (How fast it grades is the bench's business:
/// `acp-harness bench --only large`, docs/performance.md.)
#[test]
fn a_large_transcript_passes_but_its_one_wrong_turn_at_the_end() {
    let c = Case::new();
    c.handshake();
    for turn in 0..7_000u64 {
        let id = 1_000 + turn;
        c.c2a(
            json!({"jsonrpc":"2.0","id":id,"method":"session/prompt","params":{"sessionId":SID,
            "prompt":[{"type":"text","text":"go"}]}}),
        );
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"ls","kind":"execute"}),
        );
        c.item("c", "command");
        c.permission(json!(turn), json!({"toolCallId":"c"}), opts3());
        c.approval(json!(turn), "c", "command", buttons3());
        c.cmd(json!({"type":"choose","seq":10 + turn,"requestId":turn,"optionId":"once"}));
        c.select(json!(turn), "once");
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}));
        c.ev(
            json!({"type":"item","sessionId":SID,"toolCallId":"c","itemType":"command",
            "status":"completed","title":"t"}),
        );
        c.cmd(json!({"type":"cancel","seq":100_000 + turn,"session":"s1"}));
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.a2c(json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"cancelled"}}));
        c.ev(json!({"type":"turn","sessionId":SID,"state":"cancelled"}));
        c.update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}),
        );
        c.update(
            json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"y"}}),
        );
    }
    // The last turn ends normally, and the client shows it failed.
    c.c2a(
        json!({"jsonrpc":"2.0","id":999_999,"method":"session/prompt","params":{"sessionId":SID,
        "prompt":[{"type":"text","text":"go"}]}}),
    );
    let answer = c.a2c(json!({"jsonrpc":"2.0","id":999_999,"result":{"stopReason":"end_turn"}}));
    let shown = c.ev(json!({"type":"turn","sessionId":SID,"state":"failed"}));
    let record = c.record();
    assert!(record.transcript.len() > 95_000);
    let trials = grade_case(&record);
    for t in trials.iter().filter(|t| t.check != "turn-end") {
        assert!(
            matches!(t.grade, Grade::Pass | Grade::NotApplicable),
            "{}: {:?} {}",
            t.check,
            t.grade,
            t.message
        );
    }
    let turn_end = trial(&trials, "turn-end");
    assert_eq!(turn_end.grade, Grade::Fail, "{}", turn_end.message);
    assert_eq!(turn_end.frames, vec![answer, shown], "{}", turn_end.message);
}
