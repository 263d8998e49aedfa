//! Checks: one module per check, each a pure function of a [`CaseRecord`].
//!
//! A check returns a [`Finding`]; [`grade_case`] turns findings into graded trials, applying the
//! rules that do not belong to any single check (an incomplete run cannot pass, a crash is
//! reported as such, a harness error is never blamed on the client).
//!
//! Every check reads the case through one shared [`WireModel`] (built once per case by
//! [`grade_case`]), so no check re-derives pairing, sessions or tool-call state.

mod agent_death;
mod authenticate;
mod auto_approval;
mod cancel_stop;
mod fs;
mod initialize;
mod jsonrpc;
mod offered_options;
mod plan;
mod schema;
mod session_cwd;
mod session_isolation;
mod session_load;
mod session_mode;
mod session_open;
mod stable_item_type;
mod subject_kind;
mod terminal;
mod tool_call_row;
mod tool_call_status;
mod tool_call_title;
mod turn_end;
mod unknown_messages;

pub use agent_death::AgentDeath;
pub use authenticate::Authenticate;
pub use auto_approval::{AutoApproval, declared_policy};
pub use cancel_stop::CancelStop;
pub use fs::Fs;
pub use initialize::Initialize;
pub use jsonrpc::JsonRpc;
pub use offered_options::OfferedOptions;
pub use plan::Plan;
pub use schema::Schema;
pub use session_cwd::SessionCwd;
pub use session_isolation::SessionIsolation;
pub use session_load::SessionLoad;
pub use session_mode::SessionMode;
pub use session_open::SessionOpen;
pub use stable_item_type::StableItemType;
pub use subject_kind::SubjectKind;
pub use terminal::Terminal;
pub use tool_call_row::ToolCallRow;
pub use tool_call_status::ToolCallStatus;
pub use tool_call_title::ToolCallTitle;
pub use turn_end::TurnEnd;
pub use unknown_messages::UnknownMessages;

use crate::rules::RuleId;
use serde::{Deserialize, Serialize};

use crate::acp_schema::truncate_chars;
use crate::record::{CaseRecord, RunEnd};
use crate::rules;
use crate::wire_model::{WireModel, note_of};
use acp_vocab::note::Note;

/// The grade of one trial: the one outcome vocabulary of the project (vocab/src/grade.rs).
pub use acp_vocab::grade::Grade;

/// What a check found: its grade, a message, the transcript indices that prove it, and the
/// rule it breaks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub grade: Grade,
    /// Empty on pass; otherwise "Expected … / Actual …" in plain sentences.
    pub message: String,
    /// Transcript indices of the offending frames (cited and highlighted in reports).
    pub frames: Vec<usize>,
    /// The rule broken (`R<n>` of `judge/rules.toml`, one of the check's [`Check::rules`]): set
    /// on every `fail` and `warn` of a check; `None` for grades no rule decides (pass,
    /// not_applicable, error, timeout, crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<u16>,
}

impl Finding {
    pub fn pass() -> Self {
        Finding {
            grade: Grade::Pass,
            message: String::new(),
            frames: Vec::new(),
            rule: None,
        }
    }

    /// A finding no rule decides (a harness error, an unfinished run, a pass note).
    pub fn new(grade: Grade, message: impl Into<String>, frames: Vec<usize>) -> Self {
        Finding {
            grade,
            message: message.into(),
            frames,
            rule: None,
        }
    }

    /// A finding that breaks rule `R<rule>`.
    pub fn broke(
        grade: Grade,
        rule: RuleId,
        message: impl Into<String>,
        frames: Vec<usize>,
    ) -> Self {
        Finding {
            rule: Some(rule.number()),
            ..Self::new(grade, message, frames)
        }
    }

    pub fn not_applicable(reason: impl Into<String>) -> Self {
        Self::new(Grade::NotApplicable, reason, Vec::new())
    }
}

/// One check. Implementations live in their own module and cite the rules they enforce (`R<n>`,
/// [`crate::rules`]) in their doc comment and in [`Check::rules`].
pub trait Check: Send + Sync {
    /// Stable id, the last part of a trial name (`…::subject-kind`).
    fn id(&self) -> &'static str;
    /// Numbers `<n>` of the rules `R<n>` (judge/rules.toml) this check enforces; every `fail` or
    /// `warn` it returns names one of them.
    fn rules(&self) -> &'static [RuleId];
    /// One sentence: what the client must do to pass.
    fn requirement(&self) -> &'static str;
    /// True if the check needs the control plane (it then grades `not_applicable` without one).
    fn needs_control_plane(&self) -> bool {
        false
    }
    /// Control events (CONTROL.md `type`s) that are enough to grade this check when a client
    /// without an adapter has a profile observer reporting them (docs/architecture.md §1, wire-only clients).
    /// Empty: only an adapter will do.
    fn observable_with(&self) -> &'static [&'static str] {
        &[]
    }
    /// Grades one case. Builds the shared [`WireModel`]; [`grade_case`] builds it once for all
    /// checks and calls [`Check::evaluate_with`] directly.
    fn evaluate(&self, case: &CaseRecord) -> Finding {
        let model = WireModel::new(&case.transcript);
        self.evaluate_with(case, &model)
    }
    /// Grades one case given the shared model of its transcript.
    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding;
}

/// Every check, in the fixed order trials are listed in.
pub fn all_checks() -> Vec<Box<dyn Check>> {
    vec![
        Box::new(SubjectKind),
        Box::new(OfferedOptions),
        Box::new(CancelStop),
        Box::new(StableItemType),
        Box::new(JsonRpc),
        Box::new(Schema),
        Box::new(SessionCwd),
        Box::new(Fs),
        Box::new(Initialize),
        Box::new(SessionIsolation),
        Box::new(TurnEnd),
        Box::new(ToolCallRow),
        Box::new(AutoApproval),
        Box::new(SessionLoad),
        Box::new(Terminal),
        Box::new(UnknownMessages),
        // modes, config options and authentication
        Box::new(SessionMode),
        Box::new(Authenticate),
        Box::new(SessionOpen),
        Box::new(Plan),
        Box::new(ToolCallStatus),
        Box::new(ToolCallTitle),
        Box::new(AgentDeath),
    ]
}

/// One graded check of one case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trial {
    pub check: &'static str,
    pub rules: &'static [RuleId],
    pub requirement: &'static str,
    pub grade: Grade,
    /// The rule the finding breaks (`R<n>`), on `fail`/`warn` (and the baseline grades derived
    /// from them).
    pub rule: Option<u16>,
    /// Empty on pass. Otherwise the finding, then the offending frames (one line each,
    /// `#<index> <arrow> <raw>`), then `repro: <command>`. The rule is not part of it (baseline
    /// entries match the finding's first words): [`Trial::failure_text`] puts it in front.
    pub message: String,
    pub frames: Vec<usize>,
}

impl Trial {
    /// The rule this trial's finding breaks, from the catalogue.
    pub fn broken_rule(&self) -> Option<&'static rules::Rule> {
        self.rule.and_then(rules::get)
    }

    /// What a failure prints: `R43 (MUST) <sentence> <link>` on a line of its own (when the
    /// finding breaks a rule), then the message with its Expected and Actual.
    pub fn failure_text(&self) -> String {
        match self.broken_rule() {
            Some(rule) => format!("{rule}\n{}", self.message),
            None => self.message.clone(),
        }
    }
}

/// Longest raw frame quoted in a failure message (characters).
const FRAME_CHARS: usize = 300;

/// Grades every check on one case (docs/architecture.md §5):
///
/// * `RunEnd::NotApplicable` → every trial `not_applicable` with the reason;
///   `RunEnd::HarnessError` → every trial `error` (never the client's fault);
///   `RunEnd::AdapterError` → every trial `error`, blaming the client's adapter; for a client
///   without an adapter (its profile's observer failed) only the checks that need the control
///   plane are `error`, the wire checks are graded as usual.
/// * A check that needs the control plane on a client without an adapter → `not_applicable`
///   ("client has no control-plane adapter"); this stays so whatever the run's end, since no run
///   could make it applicable.
/// * Otherwise the check is evaluated. `fail`, `warn` and `error` stand. `pass` or
///   `not_applicable` on a run that did not finish become `timeout` (incomplete or timed-out
///   run, with its reason) or `crash` (exit code, signal, stderr tail): a run that did not finish
///   cannot pass.
pub fn grade_case(record: &CaseRecord) -> Vec<Trial> {
    let checks = all_checks();
    let model = WireModel::new(&record.transcript);
    let unanswered = left_unanswered(&model);
    checks
        .iter()
        .map(|check| {
            let finding = match &record.end {
                RunEnd::NotApplicable { reason } => Finding::not_applicable(reason.clone()),
                RunEnd::HarnessError { reason } => Finding::new(
                    Grade::Error,
                    format!("harness error (not the client's fault): {reason}"),
                    Vec::new(),
                ),
                // The scenario left a request of the client unanswered: what the client did while
                // it waited cannot be judged. A finding about that very request (a second
                // `initialize`, R197) still stands: it grades the request, not the answer.
                _ if unanswered.is_some() => {
                    let (frame, message) = unanswered.clone().unwrap_or_default();
                    let finding = check.evaluate_with(record, &model);
                    let about_it = matches!(finding.grade, Grade::Fail | Grade::Warn)
                        && finding.frames.contains(&frame);
                    if about_it {
                        finding
                    } else {
                        Finding::new(Grade::Error, message, vec![frame])
                    }
                }
                // A wire-only client's observer failed: the wire is still the client's own.
                RunEnd::AdapterError { .. }
                    if !record.control_plane && !check.needs_control_plane() =>
                {
                    check.evaluate_with(record, &model)
                }
                RunEnd::AdapterError { reason } if !record.control_plane => Finding::new(
                    Grade::Error,
                    format!("the case cannot be judged from observed events: {reason}"),
                    Vec::new(),
                ),
                RunEnd::AdapterError { reason } => Finding::new(
                    Grade::Error,
                    format!(
                        "the client's adapter broke control protocol v1 (harness/CONTROL.md), so the case cannot be judged: {reason}"
                    ),
                    Vec::new(),
                ),
                _ if check.needs_control_plane()
                    && !record.control_plane
                    && !observed(check.as_ref(), &model) =>
                {
                    Finding::not_applicable(without_adapter(check.as_ref(), &model))
                }
                end => {
                    let finding = check.evaluate_with(record, &model);
                    match (finding.grade, end) {
                        // Nothing timed out: the client walked away from the agent.
                        (Grade::Pass | Grade::NotApplicable, RunEnd::Incomplete { reason, .. })
                            if connection_closed(&model) =>
                        {
                            Finding::new(
                                Grade::Crash,
                                with_stderr(
                                    format!(
                                        "the run did not finish, and nothing timed out: {reason}; the agent was left without its client"
                                    ),
                                    &record.stderr_tail,
                                ),
                                Vec::new(),
                            )
                        }
                        (Grade::Pass | Grade::NotApplicable, RunEnd::Incomplete { reason, .. })
                        | (Grade::Pass | Grade::NotApplicable, RunEnd::Timeout { reason, .. }) => {
                            Finding::new(
                                Grade::Timeout,
                                format!("the run did not finish: {reason}"),
                                Vec::new(),
                            )
                        }
                        (
                            Grade::Pass | Grade::NotApplicable,
                            RunEnd::Crash {
                                exit_code,
                                signal,
                                reason,
                            },
                        ) => Finding::new(
                            Grade::Crash,
                            crash_message(
                                *exit_code,
                                signal.as_deref(),
                                reason,
                                &record.stderr_tail,
                            ),
                            Vec::new(),
                        ),
                        _ => finding,
                    }
                }
            };
            let message = match finding.grade {
                Grade::Pass | Grade::NotApplicable => finding.message,
                _ => failure_message(&finding, &model, &record.repro),
            };
            Trial {
                check: check.id(),
                rules: check.rules(),
                requirement: check.requirement(),
                grade: finding.grade,
                rule: finding.rule,
                message,
                frames: finding.frames,
            }
        })
        .collect()
}

/// The first client request the scenario left unanswered (engine note `unmatched_request`
/// without an `error` or a `result`: no step took it and the profile says nothing of its method), as its
/// transcript index and the message blaming the scenario. Whatever the client did after it
/// waited on an answer the real agent would have given, so no check can grade it.
pub fn left_unanswered(model: &WireModel<'_>) -> Option<(usize, String)> {
    model.notes.iter().find_map(|(_, n)| match note_of(n) {
        Some(Note::UnmatchedRequest {
            step,
            line,
            method,
            frame,
            error: None,
            result: None,
        }) => {
            let at = match line {
                Some(line) => format!("step {step} (line {line})"),
                None => format!("step {step}"),
            };
            Some((
                frame,
                format!(
                    "scenario error (not the client's fault): the client's {method} request (frame #{frame}) was left unanswered: no step from {at} on takes it, and the agent profile has no [errors] entry for {method}, so the case cannot be judged (add a step for it to the scenario, or the real agent's answer to the profile's [errors] or [results])"
                ),
            ))
        }
        _ => None,
    })
}

/// True if the run stopped because the client closed the agent connection (engine note
/// `connection_closed`), not because a wait ran out.
pub fn connection_closed(model: &WireModel<'_>) -> bool {
    closed_within(model, 0..usize::MAX)
}

/// True if the client closed an agent connection (engine note `connection_closed`) at a
/// transcript index in `range`: what the agent wrote after it never reached the client.
pub fn closed_within(model: &WireModel<'_>, range: std::ops::Range<usize>) -> bool {
    let first = model.notes.partition_point(|(i, _)| *i < range.start);
    model.notes[first..]
        .iter()
        .take_while(|(i, _)| *i < range.end)
        .any(|(_, n)| matches!(note_of(n), Some(Note::ConnectionClosed { .. })))
}

/// The first time after transcript index `after` that the harness killed the agent process of
/// connection `conn` (engine note `agent_killed`, a scenario's `fault = "crash"`): its index and
/// the signal. What the agent had not answered by then it never will, and what it asked the
/// client by then nobody can answer any more.
pub fn agent_killed_after<'a>(
    model: &WireModel<'a>,
    conn: u32,
    after: usize,
) -> Option<(usize, &'a str)> {
    let first = model.notes.partition_point(|(i, _)| *i <= after);
    model.notes[first..].iter().find_map(|(i, note)| {
        let killed = note.get("type")?.as_str()? == "agent_killed"
            && note.get("conn")?.as_u64()? == u64::from(conn);
        let signal = note.get("signal")?.as_str()?;
        killed.then_some((*i, signal))
    })
}

/// How an unfinished run ended, as words to append to "… was never answered": nothing on a
/// completed run.
pub fn before_the_end(case: &CaseRecord, model: &WireModel<'_>) -> &'static str {
    match case.end {
        RunEnd::Completed => "",
        RunEnd::Crash { .. } => " before the client died",
        _ if connection_closed(model) => " before the client closed the agent connection",
        _ => " before the run gave up waiting",
    }
}

/// True if the client's profile observer reports every event the check can be graded from.
fn observed(check: &dyn Check, model: &WireModel<'_>) -> bool {
    let events = check.observable_with();
    !events.is_empty() && events.iter().all(|e| model.observer_reports(e))
}

/// Why a control-plane check does not apply to a client without an adapter.
fn without_adapter(check: &dyn Check, model: &WireModel<'_>) -> String {
    let has_observer = model
        .notes
        .iter()
        .any(|(_, n)| matches!(note_of(n), Some(Note::Observer { .. })));
    match check.observable_with() {
        events if has_observer && !events.is_empty() => format!(
            "client has no control-plane adapter, and its profile's observer does not report {}",
            quoted_list(events.iter().copied())
        ),
        _ => "client has no control-plane adapter".to_owned(),
    }
}

/// The client's exit from the harness's `client_exited` note, if the transcript has one: in words
/// ("exit code 1", "killed by SIGKILL"), and its exit code when it exited by itself.
pub fn client_exit(model: &WireModel<'_>) -> Option<(String, Option<i32>)> {
    model
        .notes
        .iter()
        .rev()
        .find_map(|(_, n)| match note_of(n) {
            Some(acp_vocab::note::Note::ClientExited { status, exit_code }) => {
                Some((status, exit_code))
            }
            _ => None,
        })
}

/// True if the client's own model reports control events of this `type`: through its adapter,
/// or through its profile's observer.
pub fn reports(case: &CaseRecord, model: &WireModel<'_>, event: &str) -> bool {
    case.control_plane || model.observer_reports(event)
}

fn crash_message(
    exit_code: Option<i32>,
    signal: Option<&str>,
    reason: &str,
    stderr: &str,
) -> String {
    let code = exit_code.map_or("none".to_owned(), |c| c.to_string());
    let signal = signal.unwrap_or("none");
    with_stderr(
        format!("the client crashed (exit code {code}, signal {signal}): {reason}"),
        stderr,
    )
}

/// `message`, then the client's stderr tail.
pub(crate) fn with_stderr(mut message: String, stderr: &str) -> String {
    let tail = stderr.trim_end();
    if tail.is_empty() {
        message.push_str("\nstderr: (empty)");
    } else {
        message.push_str("\nstderr tail:\n");
        message.push_str(tail);
    }
    message
}

/// The finding's message, then its frames one per line, then the repro command.
fn failure_message(finding: &Finding, model: &WireModel<'_>, repro: &str) -> String {
    let mut out = finding.message.trim_end().to_owned();
    let mut seen = std::collections::HashSet::new();
    for &index in &finding.frames {
        if seen.insert(index) {
            out.push('\n');
            out.push_str(&frame_line(model, index));
        }
    }
    out.push_str("\nrepro: ");
    out.push_str(repro);
    out
}

/// `#<index> <arrow> <raw, truncated>` for one transcript entry.
pub fn frame_line(model: &WireModel<'_>, index: usize) -> String {
    match model.entry(index) {
        Some(entry) => format!(
            "#{index} {} {}",
            entry.direction.arrow(),
            truncate_chars(&entry.raw, FRAME_CHARS)
        ),
        None => format!("#{index} (not in the transcript)"),
    }
}

/// Collects the problems one check finds and turns them into one [`Finding`]: the worst grade
/// wins (`error` > `fail` > `warn`), every problem is one line of the message.
#[derive(Debug, Default)]
pub struct Problems {
    /// (grade, rule broken, message).
    items: Vec<(Grade, Option<u16>, String)>,
    frames: Vec<usize>,
}

/// At most this many problems are spelled out; the rest are counted.
const MAX_PROBLEMS: usize = 12;

impl Problems {
    pub fn new() -> Self {
        Self::default()
    }

    /// One problem; `rule` is the `R<n>` it breaks (`None` only for `error`, which no rule
    /// decides).
    pub fn add(
        &mut self,
        grade: Grade,
        rule: Option<RuleId>,
        message: impl Into<String>,
        frames: &[usize],
    ) {
        let rule = rule.map(RuleId::number);
        // Issue 42, must-4: a grade follows the keyword of the rule it cites (a fail a MUST or
        // one of the harness's invariants, a warn a SHOULD or a MAY).
        if let Some(level) = rule.and_then(rules::get).map(|r| r.level) {
            debug_assert!(
                match grade {
                    Grade::Fail => level == rules::Level::Must,
                    Grade::Warn => level != rules::Level::Must,
                    _ => true,
                },
                "a {} cites R{} ({})",
                grade.as_str(),
                rule.unwrap_or_default(),
                level.as_str()
            );
        }
        // Only the problems spelled out in the message cite their frames: a client that floods
        // the wire with 10^5 violations gets 12 quoted frames, not 10^5 (and no quadratic scan).
        if self.items.len() < MAX_PROBLEMS {
            for &f in frames {
                if !self.frames.contains(&f) {
                    self.frames.push(f);
                }
            }
        }
        self.items.push((grade, rule, message.into()));
    }

    /// A broken MUST (or a decision outside what a MAY allows) of rule `R<rule>`.
    pub fn fail(&mut self, rule: RuleId, message: impl Into<String>, frames: &[usize]) {
        self.add(Grade::Fail, Some(rule), message, frames);
    }

    /// A broken SHOULD of rule `R<rule>`.
    pub fn warn(&mut self, rule: RuleId, message: impl Into<String>, frames: &[usize]) {
        self.add(Grade::Warn, Some(rule), message, frames);
    }

    /// The case cannot be judged (no rule decides that).
    pub fn error(&mut self, message: impl Into<String>, frames: &[usize]) {
        self.add(Grade::Error, None, message, frames);
    }

    /// The finding: `pass` (with `pass_note` as its message) when nothing was found.
    pub fn finish(self, pass_note: &str) -> Finding {
        let rank = |g: Grade| match g {
            Grade::Error => 3,
            Grade::Fail => 2,
            Grade::Warn => 1,
            _ => 0,
        };
        let Some(grade) = self.items.iter().map(|(g, ..)| *g).max_by_key(|g| rank(*g)) else {
            return Finding::new(Grade::Pass, pass_note, Vec::new());
        };
        // The finding names the rule of its first problem of the grade it has.
        let rule = self
            .items
            .iter()
            .find(|(g, ..)| *g == grade)
            .and_then(|(_, rule, _)| *rule);
        let mut lines: Vec<String> = self
            .items
            .iter()
            .take(MAX_PROBLEMS)
            .map(|(g, _, m)| {
                if self.items.len() == 1 {
                    m.clone()
                } else {
                    format!("- [{}] {m}", g.as_str())
                }
            })
            .collect();
        if self.items.len() > MAX_PROBLEMS {
            lines.push(format!("… and {} more", self.items.len() - MAX_PROBLEMS));
        }
        let mut frames = self.frames;
        frames.sort_unstable();
        Finding {
            rule,
            ..Finding::new(grade, lines.join("\n"), frames)
        }
    }
}

/// `"a", "b"` for a list of ids.
pub fn quoted_list<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let v: Vec<String> = items.into_iter().map(|s| format!("\"{s}\"")).collect();
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.join(", ")
    }
}

#[cfg(test)]
mod grade_tests;
/// Hand-built cases, for this crate's tests and for the harness's (feature `testkit`).
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
