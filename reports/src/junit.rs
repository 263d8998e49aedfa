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

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use quick_junit::{NonSuccessKind, TestCase, TestCaseStatus, XmlString};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::causes::Cause;
use crate::grade::{Grade, Outcome};
use crate::load::ReportError;
use crate::message;
use crate::model::{AgentView, Model, RunView, SuiteCounts};
use crate::run::{CaseJson, TrialJson};
use crate::words::counted;

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
pub fn kind(grade: &Grade, strict: bool) -> Kind {
    match grade.info.outcome {
        Outcome::Pass => Kind::Success,
        Outcome::Soft if !strict => Kind::Success,
        Outcome::Soft | Outcome::Fail => Kind::Failure,
        Outcome::Error => Kind::Error,
        Outcome::Skip => Kind::Skipped,
    }
}

/// The JUnit document, written while the report goes through the cases: [`JunitWriter::suite`]
/// for each agent version of each run, in the model's order, then [`JunitWriter::case`] for
/// each of its cases in row order, then [`JunitWriter::finish`].
pub struct JunitWriter<'m, W: Write> {
    writer: Writer<W>,
    model: &'m Model,
    /// The run of the open suite ([`RunView::run`]): whether it is strict, and which cause each
    /// failing trial has (crate::causes: CI views list trials, people read causes).
    run: Option<usize>,
    strict: bool,
    cause_of: HashMap<&'m str, (usize, &'m Cause)>,
    suite_open: bool,
}

impl<'m, W: Write> JunitWriter<'m, W> {
    /// Starts the document: its declaration and `<testsuites>` with the totals of `model`.
    pub fn start(model: &'m Model, out: W) -> Result<Self, ReportError> {
        let mut writer = Writer::new_with_indent(out, b' ', 4);
        writer
            .write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
            .map_err(ReportError::Junit)?;
        let suites = model.runs.iter().flat_map(|r| &r.agents);
        let total = |f: fn(&SuiteCounts) -> usize| -> String {
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
        writer
            .write_event(Event::Start(tag))
            .map_err(ReportError::Junit)?;
        Ok(JunitWriter {
            writer,
            model,
            run: None,
            strict: false,
            cause_of: HashMap::new(),
            suite_open: false,
        })
    }

    /// Opens the suite of `agent` of `view` (closing the one before), with its properties.
    pub fn suite(&mut self, view: &'m RunView, agent: &AgentView) -> Result<(), ReportError> {
        self.end_suite()?;
        if self.run != Some(view.run) {
            self.run = Some(view.run);
            self.cause_of = view
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
        }
        self.strict = view.strict;
        let name = if self.model.runs.len() > 1 {
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
        let writer = &mut self.writer;
        // Never childless: the properties below are always there.
        writer
            .write_event(Event::Start(tag))
            .map_err(ReportError::Junit)?;
        start(writer, "properties").map_err(ReportError::Junit)?;
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
            writer
                .write_event(Event::Empty(tag))
                .map_err(ReportError::Junit)?;
        }
        end(writer, "properties").map_err(ReportError::Junit)?;
        self.suite_open = true;
        Ok(())
    }

    /// The test cases of `case` (one per trial) in the open suite.
    pub fn case(&mut self, case: &CaseJson) -> Result<(), ReportError> {
        let strict = self.strict;
        for trial in &case.trials {
            let cause = self.cause_of.get(trial.name.as_str()).copied();
            let mut test = TestCase::new(trial.check.clone(), status(trial, strict, cause));
            test.set_classname(case.short_id());
            if trial.grade.info.outcome == Outcome::Soft && !strict {
                test.set_system_out(trial.failure_text());
            }
            test_case(&mut self.writer, &test).map_err(ReportError::Junit)?;
        }
        Ok(())
    }

    fn end_suite(&mut self) -> Result<(), ReportError> {
        if std::mem::take(&mut self.suite_open) {
            end(&mut self.writer, "testsuite").map_err(ReportError::Junit)?;
        }
        Ok(())
    }

    /// Ends the document (a trailing newline, as quick_junit writes it) and flushes it.
    pub fn finish(mut self) -> Result<(), ReportError> {
        self.end_suite()?;
        let writer = &mut self.writer;
        end(writer, "testsuites").map_err(ReportError::Junit)?;
        writer.write_event(Event::Eof).map_err(ReportError::Junit)?;
        writer.write_indent().map_err(ReportError::Junit)?;
        self.writer.into_inner().flush().map_err(ReportError::Junit)
    }
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

fn status(trial: &TrialJson, strict: bool, cause: Option<(usize, &Cause)>) -> TestCaseStatus {
    let grade = &trial.grade;
    let headline = message::headline(&trial.message);
    let non_success = |kind: NonSuccessKind, ty: &str| {
        let mut status = TestCaseStatus::non_success(kind);
        status.set_type(ty);
        let mut message = if headline.is_empty() {
            grade.name.clone()
        } else {
            headline.clone()
        };
        let mut description = trial.failure_text();
        if let Some((n, cause)) = cause {
            let cases = cause.cases.len();
            message.push_str(&format!(" [cause #{n}: {}]", counted(cases, "case")));
            description = format!("cause #{n}: {}\n{description}", cause.line());
        }
        status.set_message(message);
        status.set_description(description);
        status
    };
    match kind(grade, strict) {
        Kind::Success => TestCaseStatus::success(),
        Kind::Failure => non_success(NonSuccessKind::Failure, &grade.name),
        Kind::Error if grade.is_known() => non_success(NonSuccessKind::Error, &grade.name),
        Kind::Error => non_success(
            NonSuccessKind::Error,
            &format!("unknown grade {:?}", grade.name),
        ),
        Kind::Skipped => {
            let mut status = TestCaseStatus::skipped();
            status.set_type(&grade.name);
            status.set_message(format!("{}: {}", grade.label(), headline));
            status
        }
    }
}
