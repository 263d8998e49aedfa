//! One agent version of one run ([`AgentView`]): its counts, the scenarios × checks matrix
//! (columns, families, scenario spans, rows made on demand) and the trials that need attention.

use std::borrow::Cow;

use acp_vocab::family::Family;

use super::cause_views::{CauseView, cause_views};
use super::format::{Counts, check_anchor, duration, frame_anchor, rules_text, worst};
use crate::causes;
use crate::grade::Grade;
use crate::load::{LoadedRun, ReportError};
use crate::message;
use crate::run::{CaseJson, CheckInfo, EndKind, ProfileInfo, RunJson, TrialJson};
use crate::slug::Unique;

/// One check column of a matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub id: String,
    pub requirement: String,
    /// `#56 #57`, or empty.
    pub rules: String,
    /// Known from the run's check catalog: true if the check needs the adapter.
    pub needs_adapter: Option<bool>,
}

/// A header cell spanning check columns of one family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnGroup {
    pub label: &'static str,
    pub span: usize,
}

/// One cell of the matrix: a trial, or nothing if the case has no trial for that check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub label: String,
    pub css: &'static str,
    /// Link to the trial on its case page; empty when there is no trial.
    pub href: String,
    /// The first line of the message (tooltip).
    pub tip: String,
}

/// One case: a row of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Index into [`AgentView::cases`].
    pub case: usize,
    /// What distinguishes this case within its scenario (`[cancel]`), or the scenario id.
    pub label: String,
    pub page: String,
    pub worst_css: &'static str,
    pub attention: bool,
    pub cells: Vec<Cell>,
    pub duration: String,
    /// How the run ended, when it did not complete.
    pub end: String,
}

/// The scenarios of one family on an agent page (scenarios whose file names none form the last
/// group, "Other scenarios").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyGroup {
    /// The family's id (anchor `family-<id>`), `other` for the scenarios without one.
    pub id: &'static str,
    pub title: &'static str,
    pub scenarios: Vec<ScenarioSpan>,
    /// True if any of its cases needs attention.
    pub attention: bool,
}

impl FamilyGroup {
    fn of(family: Option<Family>) -> FamilyGroup {
        FamilyGroup {
            id: family.map_or("other", Family::id),
            title: family.map_or("Other scenarios", Family::title),
            scenarios: Vec::new(),
            attention: false,
        }
    }
}

/// Where the cases of one scenario are in [`AgentView::cases`] (expanded `each` runs share
/// one). Its rows are made when the page is written ([`AgentView::scenario`]), from the cases
/// read then: the model keeps no row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioSpan {
    pub cases: std::ops::Range<u32>,
    /// True if any of its cases needs attention.
    pub attention: bool,
}

/// The cases of one scenario: what its header shows (from its first case) and its first row;
/// the other rows are made one at a time as the page is written ([`AgentView::row`]), since a
/// scenario can have any number of cases (an `each` expansion, or the same options run again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioGroup {
    pub scenario: String,
    pub family: Option<Family>,
    pub title: String,
    pub file: String,
    /// The row of the scenario's first case (`None` for a scenario without cases).
    pub first: Option<Row>,
    /// Positions in [`AgentView::cases`] of its other cases.
    pub rest: std::ops::Range<u32>,
    /// True if any of its cases needs attention.
    pub attention: bool,
}

impl ScenarioGroup {
    /// How many cases (rows) the scenario has.
    pub fn case_count(&self) -> usize {
        usize::from(self.first.is_some()) + self.rest.len()
    }
}

/// A trial a person should look at, with direct links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attention {
    pub trial: String,
    pub case_label: String,
    pub check: String,
    pub label: String,
    pub css: &'static str,
    /// The grade's rank (worse first in lists).
    pub rank: u8,
    pub headline: String,
    /// The trial on its case page.
    pub href: String,
    /// The cited frames on the case page: (`#12`, href).
    pub frames: Vec<(String, String)>,
}

/// One case of an agent page: where it is in the run, and the number its page name got
/// (`cases/<stem>.html`, `cases/<stem>-2.html`, …: [`Unique`]). Eight bytes a case is all the
/// model keeps of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaseSlot {
    /// Index into the run's cases ([`LoadedRun::case`]).
    pub case: u32,
    pub page_n: u32,
}

impl CaseSlot {
    /// The case's page, relative to the run's directory (`case` is the case at this slot).
    pub fn page(&self, case: &CaseJson) -> String {
        format!("cases/{}.html", Unique::numbered(&case.id, self.page_n))
    }
}

/// How the JUnit suite of an agent version counts its test cases (quick_junit's attributes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SuiteCounts {
    pub tests: usize,
    pub failures: usize,
    pub errors: usize,
    pub skipped: usize,
    pub duration_ms: u64,
}

/// One agent version of one run.
#[derive(Debug, Clone)]
pub struct AgentView {
    /// `agent@version`.
    pub key: String,
    /// File name of the agent page (inside the run's directory).
    pub page: String,
    pub profile: Option<ProfileInfo>,
    pub counts: Counts,
    pub failing: usize,
    pub columns: Vec<Column>,
    pub column_groups: Vec<ColumnGroup>,
    /// The matrix's rows: scenarios by family, in [`Family::ALL`] order.
    pub families: Vec<FamilyGroup>,
    pub attention: Vec<Attention>,
    /// The failures grouped by cause, the security check's first.
    pub causes: Vec<CauseView>,
    /// The cases in row order.
    pub cases: Vec<CaseSlot>,
    /// The trials that need attention, in row order (for the summary).
    pub failing_trials: Vec<TrialJson>,
    /// Positions in `cases` of the cases with a trial that needs attention.
    pub(super) failing_cases: Vec<u32>,
    pub junit: SuiteCounts,
}

impl AgentView {
    /// Case `slot` of `run` (the run this view was made from).
    pub fn case<'r>(
        &self,
        run: &'r LoadedRun,
        slot: CaseSlot,
    ) -> Result<Cow<'r, CaseJson>, ReportError> {
        run.case(slot.case as usize)
    }

    /// The header and first row of one scenario, from its first case read from `run`.
    pub fn scenario(
        &self,
        run: &LoadedRun,
        span: &ScenarioSpan,
    ) -> Result<ScenarioGroup, ReportError> {
        let mut rest = span.cases.clone();
        let Some(pos) = rest.next() else {
            return Ok(ScenarioGroup {
                scenario: String::new(),
                family: None,
                title: String::new(),
                file: String::new(),
                first: None,
                rest,
                attention: span.attention,
            });
        };
        let slot = self.cases[pos as usize];
        let case = self.case(run, slot)?;
        Ok(ScenarioGroup {
            scenario: case.scenario().to_owned(),
            family: case.family,
            title: case.title.clone(),
            file: case.file.clone(),
            first: Some(row(&case, &slot.page(&case), &self.columns, pos as usize)),
            rest,
            attention: span.attention,
        })
    }

    /// The row of the case at position `pos` of [`AgentView::cases`], read from `run`.
    pub fn row(&self, run: &LoadedRun, pos: u32) -> Result<Row, ReportError> {
        let slot = self.cases[pos as usize];
        let case = self.case(run, slot)?;
        Ok(row(&case, &slot.page(&case), &self.columns, pos as usize))
    }
}

/// The checks of an agent page, as first met in its cases: `(id, requirement, rules)` of the
/// first trial of each.
#[derive(Default)]
struct SeenChecks {
    seen: Vec<(String, String, Vec<u16>)>,
}

impl SeenChecks {
    fn add(&mut self, trial: &TrialJson) {
        if !self.seen.iter().any(|(id, _, _)| id == &trial.check) {
            self.seen.push((
                trial.check.clone(),
                trial.requirement.clone(),
                trial.rules.clone(),
            ));
        }
    }

    /// The columns: the catalog's order when the run has one, then any check that only appears
    /// in trials (in the order met); only the checks that occur here.
    fn columns(self, run: &RunJson) -> Vec<Column> {
        let in_catalog = run
            .checks
            .iter()
            .filter(|c| self.seen.iter().any(|(id, _, _)| id == &c.id))
            .map(|c| Column {
                id: c.id.clone(),
                requirement: c.requirement.clone(),
                rules: rules_text(&c.rules),
                needs_adapter: Some(c.needs_adapter),
            });
        let catalog: Vec<Column> = in_catalog.collect();
        let rest: Vec<Column> = self
            .seen
            .into_iter()
            .filter(|(id, _, _)| !run.checks.iter().any(|c: &CheckInfo| &c.id == id))
            .map(|(id, requirement, rules)| Column {
                id,
                requirement,
                rules: rules_text(&rules),
                needs_adapter: None,
            })
            .collect();
        catalog.into_iter().chain(rest).collect()
    }
}

/// Adapter checks first, then wire checks, when the catalog says which is which.
fn group_columns(columns: &mut [Column]) -> Vec<ColumnGroup> {
    if columns.iter().any(|c| c.needs_adapter.is_none()) {
        return Vec::new();
    }
    // Stable: keeps the catalog order within each family.
    columns.sort_by_key(|c| c.needs_adapter != Some(true));
    let adapter = columns
        .iter()
        .filter(|c| c.needs_adapter == Some(true))
        .count();
    [
        ColumnGroup {
            label: "what the user saw (adapter)",
            span: adapter,
        },
        ColumnGroup {
            label: "on the wire",
            span: columns.len() - adapter,
        },
    ]
    .into_iter()
    .filter(|g| g.span > 0)
    .collect()
}

/// The matrix row of `case` (at position `index` of its agent page), its page `case_page`.
fn row(case: &CaseJson, case_page: &str, columns: &[Column], index: usize) -> Row {
    let cells = columns
        .iter()
        .map(|col| match case.trials.iter().find(|t| t.check == col.id) {
            Some(t) => {
                let g = &t.grade;
                Cell {
                    label: g.label().to_owned(),
                    css: g.css(),
                    href: format!("{case_page}#{}", check_anchor(&t.check)),
                    tip: message::headline(&t.message),
                }
            }
            None => Cell {
                label: String::new(),
                css: "none",
                href: String::new(),
                tip: String::new(),
            },
        })
        .collect();
    let worst = worst(&case.trials);
    Row {
        case: index,
        label: match case.short_id().strip_prefix(case.scenario()) {
            Some(option) if !option.is_empty() => option.to_owned(),
            _ => case.scenario().to_owned(),
        },
        page: case_page.to_owned(),
        worst_css: worst.map_or("none", Grade::css),
        attention: worst.is_some_and(Grade::needs_attention),
        cells,
        duration: duration(case.duration_ms),
        end: if case.end.kind == EndKind::Completed {
            String::new()
        } else {
            case.end.describe()
        },
    }
}

/// The trials of `case` that need attention, linked into its page.
fn attention_of(case: &CaseJson, case_page: &str) -> Vec<Attention> {
    case.trials
        .iter()
        .filter_map(|t| {
            let g = &t.grade;
            g.needs_attention().then(|| Attention {
                trial: t.name.clone(),
                case_label: case.short_id().to_owned(),
                check: t.check.clone(),
                label: g.label().to_owned(),
                css: g.css(),
                rank: g.info.rank,
                headline: message::headline(&t.message),
                href: format!("{case_page}#{}", check_anchor(&t.check)),
                frames: t
                    .frames
                    .iter()
                    .map(|f| (format!("#{f}"), format!("{case_page}#{}", frame_anchor(*f))))
                    .collect(),
            })
        })
        .collect()
}

/// One agent version: its cases (`order`: indices into the run, in report order) read one at a
/// time. `run_counts` and `judged` (cases that were not `not_applicable`) add up over the run.
pub(super) fn agent_view(
    loaded: &LoadedRun,
    key: String,
    order: Vec<u32>,
    pages: &mut Unique,
    run_counts: &mut Counts,
    judged: &mut usize,
) -> Result<AgentView, ReportError> {
    let run = &loaded.run;
    let strict = run.config.strict;
    let page = format!("{}.html", pages.take(&key));
    let mut slots = Vec::with_capacity(order.len());
    let mut families: Vec<FamilyGroup> = Vec::new();
    // The scenario of the last span, to know when the next case starts another one.
    let mut last_scenario: Option<String> = None;
    let mut attention = Vec::new();
    let mut failing_trials = Vec::new();
    let mut failing_cases = Vec::new();
    let mut counts = Counts::default();
    let mut junit = SuiteCounts::default();
    let mut seen = SeenChecks::default();
    let mut grouper = causes::Grouper::default();
    let mut profile_key = None;
    for (pos, &case_index) in order.iter().enumerate() {
        let position = u32::try_from(pos).expect("fewer than 2³² cases");
        let case = loaded.case(case_index as usize)?;
        let slot = CaseSlot {
            case: case_index,
            page_n: pages.take_n(&case.id),
        };
        slots.push(slot);
        let case_page = slot.page(&case);
        for t in &case.trials {
            seen.add(t);
            counts.add(&t.grade, 1);
            run_counts.add(&t.grade, 1);
            junit.count(&t.grade, strict);
        }
        junit.duration_ms += case.duration_ms;
        if case.end.kind != EndKind::NotApplicable {
            *judged += 1;
        }
        if profile_key.is_none() {
            profile_key = case.profile.clone();
        }
        let found = attention_of(&case, &case_page);
        let needs_attention = worst(&case.trials).is_some_and(Grade::needs_attention);
        if !found.is_empty() {
            attention.extend(found);
            failing_cases.push(position);
            failing_trials.extend(
                case.trials
                    .iter()
                    .filter(|t| t.grade.needs_attention())
                    .cloned(),
            );
            grouper.add(&case);
        }
        let family = match families.last_mut() {
            Some(f) if f.id == case.family.map_or("other", Family::id) => f,
            _ => {
                families.push(FamilyGroup::of(case.family));
                last_scenario = None;
                families.last_mut().expect("just pushed")
            }
        };
        family.attention |= needs_attention;
        match family.scenarios.last_mut() {
            Some(span) if last_scenario.as_deref() == Some(case.scenario()) => {
                span.cases.end = position + 1;
                span.attention |= needs_attention;
            }
            _ => {
                family.scenarios.push(ScenarioSpan {
                    cases: position..position + 1,
                    attention: needs_attention,
                });
                last_scenario = Some(case.scenario().to_owned());
            }
        }
    }
    let mut columns = seen.columns(run);
    let column_groups = group_columns(&mut columns);
    // Failing grades first (crash, fail, …), then warn and stale.
    attention.sort_by_key(|a| std::cmp::Reverse(a.rank));
    let mut view = AgentView {
        profile: run
            .profiles
            .iter()
            .find(|p| Some(&p.key) == profile_key.as_ref() || p.key == key)
            .cloned(),
        failing: counts.failing(strict),
        counts,
        key,
        page,
        columns,
        column_groups,
        families,
        attention,
        causes: Vec::new(),
        cases: slots,
        failing_trials,
        failing_cases,
        junit,
    };
    view.causes = cause_views(loaded, std::slice::from_ref(&view), grouper.finish())?;
    Ok(view)
}

impl SuiteCounts {
    /// Counts one trial as the JUnit writer writes it ([`crate::junit`]).
    fn count(&mut self, grade: &Grade, strict: bool) {
        self.tests += 1;
        match crate::junit::kind(grade, strict) {
            crate::junit::Kind::Success => {}
            crate::junit::Kind::Failure => self.failures += 1,
            crate::junit::Kind::Error => self.errors += 1,
            crate::junit::Kind::Skipped => self.skipped += 1,
        }
    }
}
