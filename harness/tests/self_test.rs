//! Self-tests (DESIGN §6): the reference client passes every check on every scenario, and each
//! field-bug mutant fails exactly the check that its bug breaks — so every check is shown to bite.

use std::collections::BTreeSet;

use acp_harness::checks::{Grade, all_checks};
use acp_harness::client_spec::ClientSpec;
use acp_harness::runner::{CaseResult, RunConfig, run_cases};
use acp_harness::suite;

fn run_suite(client: &ClientSpec) -> Vec<CaseResult> {
    let dir = suite::scenarios_dir(None).expect("scenarios directory");
    let cfg = RunConfig::new(dir.clone()).expect("run config");
    let cases = suite::load_cases(&dir).expect("scenarios parse");
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_cases(cases, client, &cfg, |_| {}))
}

/// Check ids graded fail or warn anywhere, and every trial that did not run to a verdict.
fn failed_checks(results: &[CaseResult]) -> (BTreeSet<&'static str>, Vec<String>) {
    let mut failed = BTreeSet::new();
    let mut broken = Vec::new();
    for r in results {
        for t in &r.trials {
            match t.grade {
                Grade::Fail | Grade::Warn => {
                    failed.insert(t.check);
                }
                Grade::Error | Grade::Timeout | Grade::Crash => broken.push(format!(
                    "{}::{} [{}] {}",
                    r.record.meta.case_id,
                    t.check,
                    t.grade.as_str(),
                    t.message
                )),
                Grade::Pass | Grade::NotApplicable => {}
            }
        }
    }
    (failed, broken)
}

fn describe(results: &[CaseResult]) -> String {
    results
        .iter()
        .flat_map(|r| {
            r.trials
                .iter()
                .filter(|t| !matches!(t.grade, Grade::Pass | Grade::NotApplicable))
                .map(move |t| {
                    format!(
                        "{}::{} [{}]\n{}",
                        r.record.meta.case_id,
                        t.check,
                        t.grade.as_str(),
                        t.message
                    )
                })
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[test]
fn reference_client_passes_every_check_of_every_scenario() {
    let results = run_suite(&ClientSpec::reference().unwrap());
    assert!(!results.is_empty());
    let (failed, broken) = failed_checks(&results);
    assert!(
        failed.is_empty() && broken.is_empty(),
        "the reference client must pass everything:\n{}",
        describe(&results)
    );
    // Every check must have passed somewhere, or the corpus does not exercise it.
    for check in all_checks() {
        assert!(
            results
                .iter()
                .flat_map(|r| &r.trials)
                .any(|t| t.check == check.id() && t.grade == Grade::Pass),
            "no scenario exercises {}",
            check.id()
        );
    }
}

/// Each mutant reproduces one field bug and must fail exactly its check.
const MUTANTS: &[(&str, &[&str])] = &[
    ("always-command", &["subject-kind"]),
    ("unoffered-option", &["offered-options"]),
    ("cancel-as-reject", &["cancel-stop"]),
    ("flip-on-approval", &["stable-item-type"]),
];

fn assert_mutant(name: &str) {
    let expected: BTreeSet<&str> = MUTANTS
        .iter()
        .find(|(m, _)| *m == name)
        .map(|(_, checks)| checks.iter().copied().collect())
        .unwrap();
    let results = run_suite(&ClientSpec::mutant(name).unwrap());
    let (failed, broken) = failed_checks(&results);
    assert!(
        broken.is_empty(),
        "mutant {name}: trials without a verdict:\n{}",
        broken.join("\n")
    );
    assert_eq!(
        failed,
        expected,
        "mutant {name} must fail exactly {expected:?}:\n{}",
        describe(&results)
    );
}

#[test]
fn mutant_always_command_fails_subject_kind() {
    assert_mutant("always-command");
}

#[test]
fn mutant_unoffered_option_fails_offered_options() {
    assert_mutant("unoffered-option");
}

#[test]
fn mutant_cancel_as_reject_fails_cancel_stop() {
    assert_mutant("cancel-as-reject");
}

#[test]
fn mutant_flip_on_approval_fails_stable_item_type() {
    assert_mutant("flip-on-approval");
}

#[test]
fn every_invariant_check_is_failed_by_some_mutant() {
    for check in [
        "subject-kind",
        "offered-options",
        "cancel-stop",
        "stable-item-type",
    ] {
        assert!(
            MUTANTS.iter().any(|(_, checks)| checks.contains(&check)),
            "no mutant fails {check}"
        );
    }
}
