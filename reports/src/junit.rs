//! JUnit XML: a `<testsuite>` per agent version (per client, when several runs are reported), a
//! `<testcase>` per trial with `classname` = scenario case and `name` = check.
//!
//! Grades map as CI tools expect: pass → success; fail, timeout, crash, stale → `<failure>` with
//! the check's message; error (the harness's fault) → `<error>`; not applicable and expected
//! failures → `<skipped>` with the reason; warn → success with the message on `system-out`, or a
//! failure under `--strict`. A grade this crate does not know becomes an `<error>` naming it.
//!
//! The document is written as it is made, test case by test case, with the counts the model
//! already has for the `<testsuites>` and `<testsuite>` attributes: nothing of it is kept in
//! memory. Each test case is a quick_junit [`TestCase`] (its strings cleaned the way
//! quick_junit cleans them), written with quick_xml's escaping and indentation exactly as
//! quick_junit's own serialiser writes a whole report.

use std::io::Write;
use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, XmlString};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::grade::{Grade, Outcome};
use crate::load::{LoadedRun, ReportError};
use crate::message;
use crate::model::Model;
use crate::run::TrialJson;

/// The JUnit name of the whole report.
const REPORT_NAME: &str = "acp-harness";

/// What a trial becomes in JUnit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Success,
    Failure,
    Error,
    Skipped,
}

/// What a trial of `grade` becomes in JUnit (`strict`: warn fails).
pub fn kind(grade: &str, strict: bool) -> Kind {
    let grade = Grade::of(grade);
    match grade.info.outcome {
        Outcome::Pass => Kind::Success,
        Outcome::Soft if !strict => Kind::Success,
        Outcome::Soft | Outcome::Fail => Kind::Failure,
        Outcome::Error => Kind::Error,
        Outcome::Skip => Kind::Skipped,
    }
}

/// Writes the JUnit XML of all runs to `out`, reading each case from its run as it goes.
pub fn write(runs: &[LoadedRun], model: &Model, out: impl Write) -> Result<(), ReportError> {
    let mut writer = Writer::new_with_indent(out, b' ', 4);
    let xml = ReportError::Junit;
    writer
        .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .map_err(xml)?;
    let suites = model.runs.iter().flat_map(|r| &r.agents);
    let total = |f: fn(&crate::model::SuiteCounts) -> usize| -> String {
        suites
            .clone()
            .map(|a| f(&a.junit))
            .sum::<usize>()
            .to_string()
    };
    let mut tag = BytesStart::new("testsuites");
    tag.push_attribute(("name", XmlString::new(REPORT_NAME).as_str()));
    tag.extend_attributes([
        ("tests", total(|c| c.tests).as_str()),
        ("skipped", total(|c| c.skipped).as_str()),
        ("failures", total(|c| c.failures).as_str()),
        ("errors", total(|c| c.errors).as_str()),
    ]);
    writer.write_event(Event::Start(tag)).map_err(xml)?;
    let several = model.runs.len() > 1;
    for view in &model.runs {
        let loaded = &runs[view.run];
        let strict = loaded.run.config.strict;
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
        for agent in &view.agents {
            let name = if several {
                format!("{} / {}", view.client_label(), agent.key)
            } else {
                agent.key.clone()
            };
            let counts = &agent.junit;
            let mut tag = BytesStart::new("testsuite");
            tag.extend_attributes([
                ("name", XmlString::new(name).as_str()),
                ("tests", counts.tests.to_string().as_str()),
                ("skipped", counts.skipped.to_string().as_str()),
                ("errors", counts.errors.to_string().as_str()),
                ("failures", counts.failures.to_string().as_str()),
            ]);
            let time = Duration::from_millis(counts.duration_ms).as_secs_f64();
            tag.push_attribute(("time", format!("{time:.3}").as_str()));
            // Never childless: the properties below are always there.
            writer.write_event(Event::Start(tag)).map_err(xml)?;
            start(&mut writer, "properties").map_err(xml)?;
            let mut properties = vec![
                ("client", view.client_label()),
                ("harness", view.harness.clone()),
            ];
            if let Some(profile) = &agent.profile {
                properties.push(("agent-profile", profile.title.clone()));
            }
            for (name, value) in properties {
                let mut tag = BytesStart::new("property");
                tag.extend_attributes([
                    ("name", XmlString::new(name).as_str()),
                    ("value", XmlString::new(value).as_str()),
                ]);
                writer.write_event(Event::Empty(tag)).map_err(xml)?;
            }
            end(&mut writer, "properties").map_err(xml)?;
            for &slot in &agent.cases {
                let case = agent.case(loaded, slot)?;
                for trial in &case.trials {
                    let cause = cause_of.get(trial.name.as_str()).copied();
                    let mut test = TestCase::new(trial.check.clone(), status(trial, strict, cause));
                    test.set_classname(case.short_id());
                    if Grade::of(&trial.grade).info.outcome == Outcome::Soft && !strict {
                        test.set_system_out(trial.failure_text());
                    }
                    test_case(&mut writer, &test).map_err(xml)?;
                }
            }
            end(&mut writer, "testsuite").map_err(xml)?;
        }
    }
    end(&mut writer, "testsuites").map_err(xml)?;
    writer.write_event(Event::Eof).map_err(xml)?;
    // A trailing newline.
    writer.write_indent().map_err(xml)?;
    writer.into_inner().flush().map_err(xml)
}

fn start(writer: &mut Writer<impl Write>, name: &str) -> std::io::Result<()> {
    writer.write_event(Event::Start(BytesStart::new(name)))
}

fn end(writer: &mut Writer<impl Write>, name: &str) -> std::io::Result<()> {
    writer.write_event(Event::End(BytesEnd::new(name)))
}

/// One `<testcase>`: its name, classname, status and system-out (all this report sets).
fn test_case(writer: &mut Writer<impl Write>, test: &TestCase) -> std::io::Result<()> {
    let mut tag = BytesStart::new("testcase");
    tag.push_attribute(("name", test.name.as_str()));
    if let Some(classname) = &test.classname {
        tag.push_attribute(("classname", classname.as_str()));
    }
    let status = match &test.status {
        TestCaseStatus::Success { .. } => None,
        TestCaseStatus::NonSuccess {
            kind,
            message,
            ty,
            description,
            ..
        } => Some((
            match kind {
                NonSuccessKind::Failure => "failure",
                NonSuccessKind::Error => "error",
            },
            message,
            ty,
            description,
        )),
        TestCaseStatus::Skipped {
            message,
            ty,
            description,
        } => Some(("skipped", message, ty, description)),
    };
    if status.is_none() && test.system_out.is_none() {
        return writer.write_event(Event::Empty(tag));
    }
    writer.write_event(Event::Start(tag))?;
    if let Some((name, message, ty, description)) = status {
        let mut tag = BytesStart::new(name);
        if let Some(message) = message {
            tag.push_attribute(("message", message.as_str()));
        }
        if let Some(ty) = ty {
            tag.push_attribute(("type", ty.as_str()));
        }
        match description {
            Some(description) => {
                writer.write_event(Event::Start(tag))?;
                writer.write_event(Event::Text(BytesText::new(description)))?;
                end(writer, name)?;
            }
            None => writer.write_event(Event::Empty(tag))?,
        }
    }
    if let Some(out) = &test.system_out {
        start(writer, "system-out")?;
        writer.write_event(Event::Text(BytesText::new(out)))?;
        end(writer, "system-out")?;
    }
    end(writer, "testcase")
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
    match kind(&trial.grade, strict) {
        Kind::Success => TestCaseStatus::success(),
        Kind::Failure => non_success(NonSuccessKind::Failure, &trial.grade),
        Kind::Error if grade.is_known() => non_success(NonSuccessKind::Error, &trial.grade),
        Kind::Error => non_success(
            NonSuccessKind::Error,
            &format!("unknown grade {:?}", trial.grade),
        ),
        Kind::Skipped => {
            let mut status = TestCaseStatus::skipped();
            status.set_type(&trial.grade);
            status.set_message(format!("{}: {}", grade.label(), headline));
            status
        }
    }
}
