//! JUnit XML: a `<testsuite>` per agent version (per client, when several runs are reported), a
//! `<testcase>` per trial with `classname` = scenario case and `name` = check.
//!
//! Grades map as CI tools expect: pass → success; fail, timeout, crash, stale → `<failure>` with
//! the check's message; error (the harness's fault) → `<error>`; not applicable and expected
//! failures → `<skipped>` with the reason; warn → success with the message on `system-out`, or a
//! failure under `--strict`. A grade this crate does not know becomes an `<error>` naming it.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use crate::grade::{Grade, Outcome};
use crate::load::{LoadedRun, ReportError};
use crate::message;
use crate::model::Model;
use crate::run::TrialJson;

/// The JUnit XML of all runs.
pub fn render(runs: &[LoadedRun], model: &Model<'_>) -> Result<String, ReportError> {
    let mut report = Report::new("acp-harness");
    let several = model.runs.len() > 1;
    for view in &model.runs {
        let strict = runs[view.run].run.config.strict;
        for agent in &view.agents {
            let name = if several {
                format!("{} / {}", view.client_label(), agent.key)
            } else {
                agent.key.clone()
            };
            // Each failing trial names its cause (crate::causes): CI views list trials, people
            // read causes.
            let cause_of: std::collections::HashMap<&str, (usize, &crate::causes::Cause)> = view
                .causes
                .iter()
                .enumerate()
                .flat_map(|(i, c)| {
                    c.cause
                        .members
                        .iter()
                        .map(move |m| (m.as_str(), (i + 1, &c.cause)))
                })
                .collect();
            let mut suite = TestSuite::new(name);
            let mut ms = 0u64;
            for (case, _) in &agent.cases {
                ms += case.duration_ms;
                for trial in &case.trials {
                    let cause = cause_of.get(trial.name.as_str()).copied();
                    let mut test = TestCase::new(trial.check.clone(), status(trial, strict, cause));
                    test.set_classname(case.short_id());
                    if Grade::of(&trial.grade).info.outcome == Outcome::Soft && !strict {
                        test.set_system_out(trial.failure_text());
                    }
                    suite.add_test_case(test);
                }
            }
            suite.set_time(Duration::from_millis(ms));
            suite.add_property(("client", view.client_label().as_str()));
            suite.add_property(("harness", view.harness.as_str()));
            if let Some(profile) = &agent.profile {
                suite.add_property(("agent-profile", profile.title.as_str()));
            }
            report.add_test_suite(suite);
        }
    }
    Ok(report.to_string()?)
}

fn status(
    trial: &TrialJson,
    strict: bool,
    cause: Option<(usize, &crate::causes::Cause)>,
) -> TestCaseStatus {
    let grade = Grade::of(&trial.grade);
    let headline = message::headline(&trial.message);
    let non_success = |kind: NonSuccessKind, ty: &str| {
        let mut status = TestCaseStatus::non_success(kind);
        status.set_type(ty);
        let mut message = if headline.is_empty() {
            trial.grade.clone()
        } else {
            headline.clone()
        };
        let mut description = trial.failure_text();
        if let Some((n, cause)) = cause {
            let cases = cause.cases.len();
            message.push_str(&format!(
                " [cause #{n}: {cases} case{}]",
                if cases == 1 { "" } else { "s" }
            ));
            description = format!("cause #{n}: {}\n{description}", cause.line());
        }
        status.set_message(message);
        status.set_description(description);
        status
    };
    match grade.info.outcome {
        Outcome::Pass => TestCaseStatus::success(),
        Outcome::Soft if !strict => TestCaseStatus::success(),
        Outcome::Soft | Outcome::Fail => non_success(NonSuccessKind::Failure, &trial.grade),
        Outcome::Error if grade.is_known() => non_success(NonSuccessKind::Error, &trial.grade),
        Outcome::Error => non_success(
            NonSuccessKind::Error,
            &format!("unknown grade {:?}", trial.grade),
        ),
        Outcome::Skip => {
            let mut status = TestCaseStatus::skipped();
            status.set_type(&trial.grade);
            status.set_message(format!("{}: {}", grade.label(), headline));
            status
        }
    }
}
