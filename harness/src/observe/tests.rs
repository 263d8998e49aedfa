use super::*;
use acp_judge::checks::testkit::{Case, SID, opts3};
use acp_judge::checks::{Grade, Trial, grade_case};

fn observed(by: &str, from: &str, evidence: &str) -> Value {
    json!({"by": by, "from": from, "evidence": evidence})
}

fn observe(c: &Case, v: Value) -> usize {
    c.rec
        .record(0, Direction::ObserverToHarness, v.to_string().as_bytes())
}

fn observer_note(c: &Case, reports: &[&str]) {
    c.rec.note(&Note::Observer {
        name: "acpx".into(),
        reports: reports.iter().map(|r| r.to_string()).collect(),
        from: "test".into(),
    });
}

fn trial<'a>(trials: &'a [Trial], check: &str) -> &'a Trial {
    trials.iter().find(|t| t.check == check).unwrap()
}

/// A wire-only run: execute tool call, request without kind, answered reject by policy.
fn run(c: &Case) {
    c.handshake();
    c.prompt();
    c.update(
        json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"cat x","kind":"execute"}),
    );
    c.permission(json!(0), json!({"toolCallId":"c","title":"cat x"}), opts3());
}

#[test]
fn observed_approvals_are_graded_like_an_adapters() {
    let c = Case::wire_only();
    observer_note(&c, &["approval", "approval_resolved", "turn"]);
    run(&c);
    let seen = observe(
        &c,
        json!({"type":"approval","sessionId":SID,"requestId":0,"toolCallId":"c","subject":"read",
               "observed":observed("acpx","stdout","toolKind read")}),
    );
    c.select(json!(0), "reject");
    c.prompt_result("end_turn");
    let trials = grade_case(&c.record());
    let t = trial(&trials, "subject-kind");
    assert_eq!(t.grade, Grade::Fail, "{}", t.message);
    assert!(
        t.message.contains("shows subject \"read\""),
        "{}",
        t.message
    );
    assert!(
        t.message.contains(&format!("#{seen} observer → harness")),
        "{}",
        t.message
    );
    // An observed card without buttons is not held to the offered set.
    assert_eq!(trial(&trials, "offered-options").grade, Grade::Pass);
    let t = trial(&trials, "stable-item-type");
    assert_eq!(t.grade, Grade::NotApplicable);
    assert!(
        t.message.contains("observer does not report \"item\""),
        "{}",
        t.message
    );
}

#[test]
fn an_observer_that_saw_no_card_makes_subject_kind_not_applicable() {
    let c = Case::wire_only();
    observer_note(&c, &["approval", "approval_resolved", "turn"]);
    run(&c);
    c.select(json!(0), "reject");
    c.prompt_result("end_turn");
    let trials = grade_case(&c.record());
    let t = trial(&trials, "subject-kind");
    assert_eq!(t.grade, Grade::NotApplicable, "{}", t.message);
    assert!(
        t.message
            .starts_with("the observer reported no approval for request #"),
        "{}",
        t.message
    );
}

#[test]
fn without_an_observer_control_checks_stay_not_applicable() {
    let c = Case::wire_only();
    run(&c);
    c.select(json!(0), "reject");
    c.prompt_result("end_turn");
    let trials = grade_case(&c.record());
    let t = trial(&trials, "subject-kind");
    assert_eq!(t.grade, Grade::NotApplicable);
    assert_eq!(t.message, "client has no control-plane adapter");
}

#[test]
fn observed_buttons_and_turn_end_are_checked() {
    let c = Case::wire_only();
    observer_note(&c, &["approval", "approval_resolved", "turn"]);
    run(&c);
    observe(
        &c,
        json!({"type":"approval","sessionId":SID,"requestId":0,"toolCallId":"c","subject":"command",
               "options":[{"optionId":"once","label":"y"},{"optionId":"reject","label":"n"}],
               "observed":observed("acpx","terminal","[permission] Allow cat x [execute]? (y/N)")}),
    );
    c.rec.note(&Note::UserCancel {
        session_id: SID.into(),
        by: Some("SIGINT".into()),
    });
    c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
    c.cancelled(json!(0));
    c.prompt_result("cancelled");
    observe(
        &c,
        json!({"type":"turn","sessionId":SID,"state":"failed","message":"acpx exited with code 5",
               "observed":observed("acpx","exit status","exit code 5")}),
    );
    let trials = grade_case(&c.record());
    let t = trial(&trials, "offered-options");
    assert_eq!(t.grade, Grade::Fail);
    assert!(
        t.message
            .contains("does not present offered option(s) \"always\""),
        "{}",
        t.message
    );
    let t = trial(&trials, "cancel-stop");
    assert_eq!(t.grade, Grade::Fail);
    assert!(
        t.message.contains("shows the turn as \"failed\""),
        "{}",
        t.message
    );
    assert_eq!(trial(&trials, "subject-kind").grade, Grade::Pass);
}
