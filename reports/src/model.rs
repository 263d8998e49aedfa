//! What every output shows, computed once from the runs: per run (one client) and agent
//! version, the grade counts, the scenarios × checks matrix and the trials that need attention.
//! The HTML, JUnit and Markdown writers only format this.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::BTreeMap;

use acp_vocab::family::Family;

use crate::causes::{self, Cause};
use crate::grade::{GRADES, Grade};
use crate::load::{LoadedRun, ReportError};
use crate::message;
use crate::run::{CaseJson, CheckInfo, ProfileInfo, RunJson, TrialJson, scenario_of};
use crate::slug::Unique;

/// Grades the index always shows a count for, even when zero.
const ALWAYS_COUNTED: &[&str] = &["pass", "fail", "warn", "expected", "not_applicable"];

/// Trial counts per grade.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    by_grade: BTreeMap<String, usize>,
}

/// One count, ready to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chip {
    pub name: String,
    pub label: String,
    pub css: &'static str,
    pub meaning: &'static str,
    pub n: usize,
}

impl Counts {
    pub fn of<'a>(trials: impl IntoIterator<Item = &'a TrialJson>) -> Counts {
        let mut counts = Counts::default();
        for t in trials {
            counts.add(&t.grade, 1);
        }
        counts
    }

    pub fn add(&mut self, grade: &str, n: usize) {
        *self.by_grade.entry(grade.to_owned()).or_default() += n;
    }

    pub fn get(&self, grade: &str) -> usize {
        self.by_grade.get(grade).copied().unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.by_grade.values().sum()
    }

    /// Trials that fail the run.
    pub fn failing(&self, strict: bool) -> usize {
        self.by_grade
            .iter()
            .filter(|(g, _)| Grade::of(g).is_failing(strict))
            .map(|(_, n)| n)
            .sum()
    }

    /// Every grade with a count: the known ones in table order (the always-counted ones even at
    /// zero), then unknown ones by name.
    pub fn chips(&self) -> Vec<Chip> {
        let known = GRADES
            .iter()
            .filter(|g| self.get(g.name) > 0 || ALWAYS_COUNTED.contains(&g.name))
            .map(|g| Grade::of(g.name));
        let unknown = self
            .by_grade
            .keys()
            .map(|name| Grade::of(name))
            .filter(|g| !g.is_known());
        known
            .chain(unknown)
            .map(|g| Chip {
                n: self.get(&g.name),
                label: g.label().to_owned(),
                css: g.css(),
                meaning: g.info.meaning,
                name: g.name,
            })
            .collect()
    }

    /// Only the grades with a non-zero count.
    pub fn nonzero_chips(&self) -> Vec<Chip> {
        self.chips().into_iter().filter(|c| c.n > 0).collect()
    }
}

/// Compares `agent@version` keys: by agent, then by version numerically (`0.9` < `0.14`).
pub fn cmp_agent_versions(a: &str, b: &str) -> Ordering {
    let split = |k: &str| {
        let (agent, version) = k.split_once('@').unwrap_or((k, ""));
        let parts: Vec<(u64, String)> = version
            .split(['.', '-'])
            .map(|p| (p.parse::<u64>().unwrap_or(u64::MAX), p.to_owned()))
            .collect();
        (agent.to_owned(), parts)
    };
    split(a).cmp(&split(b))
}

/// The worst grade among trials (by rank), or `None` for no trials.
pub fn worst<'a>(trials: impl IntoIterator<Item = &'a TrialJson>) -> Option<Grade> {
    trials
        .into_iter()
        .map(|t| Grade::of(&t.grade))
        .max_by_key(|g| g.info.rank)
}

/// `142 ms`, `1.25 s`, `2 min 5 s`.
pub fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{:.2} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// A Unix time in milliseconds as RFC 3339 UTC, to the second.
pub fn timestamp(unix_ms: u64) -> String {
    i64::try_from(unix_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map(|t| format!("{t:.0}"))
        .unwrap_or_else(|| format!("{unix_ms} ms after 1970"))
}

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

/// The cases of one scenario with their rows (made from the cases, one scenario at a time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioGroup {
    pub scenario: String,
    pub family: Option<Family>,
    pub title: String,
    pub file: String,
    pub rows: Vec<Row>,
    /// True if any of its cases needs attention.
    pub attention: bool,
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

/// A cause of failures (crate::causes), with links into the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CauseView {
    pub cause: Cause,
    /// Its first trial on its case page, relative to the run's directory.
    pub href: String,
    /// The first frame that trial cites, highlighted on the case page (relative to the run's
    /// directory), if it cites one.
    pub frame_href: Option<String>,
    pub css: &'static str,
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
    failing_cases: Vec<u32>,
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

    /// The rows of one scenario, from its cases read from `run`.
    pub fn scenario(
        &self,
        run: &LoadedRun,
        span: &ScenarioSpan,
    ) -> Result<ScenarioGroup, ReportError> {
        let mut group: Option<ScenarioGroup> = None;
        for pos in span.cases.clone() {
            let slot = self.cases[pos as usize];
            let case = self.case(run, slot)?;
            let row = row(&case, &slot.page(&case), &self.columns, pos as usize);
            let group = group.get_or_insert_with(|| ScenarioGroup {
                scenario: case.scenario().to_owned(),
                family: case.family,
                title: case.title.clone(),
                file: case.file.clone(),
                rows: Vec::new(),
                attention: span.attention,
            });
            group.rows.push(row);
        }
        Ok(group.unwrap_or(ScenarioGroup {
            scenario: String::new(),
            family: None,
            title: String::new(),
            file: String::new(),
            rows: Vec::new(),
            attention: span.attention,
        }))
    }
}

/// One run: one client.
#[derive(Debug, Clone)]
pub struct RunView {
    /// Index into the loaded runs.
    pub run: usize,
    /// Directory of this run's pages, relative to the report root.
    pub dir: String,
    pub client: String,
    pub client_version: Option<String>,
    /// The declared auto-approval policy, in words.
    pub policy: String,
    pub source: String,
    pub harness: String,
    pub acp_schema: String,
    pub started: String,
    pub duration: String,
    pub strict: bool,
    pub filter: Option<String>,
    pub path: String,
    pub counts: Counts,
    pub failing: usize,
    pub agents: Vec<AgentView>,
    /// The failures of every agent version grouped by cause (links relative to `dir`).
    pub causes: Vec<CauseView>,
    /// Set when every failing case shares one case-level cause: the client command or profile
    /// is the likely culprit (with the first case's stderr).
    pub single_cause_hint: Option<String>,
}

impl RunView {
    pub fn agent(&self, key: &str) -> Option<&AgentView> {
        self.agents.iter().find(|a| a.key == key)
    }

    /// `acp-reference-client 0.1.0`, or just the name.
    pub fn client_label(&self) -> String {
        match &self.client_version {
            Some(v) => format!("{} {v}", self.client),
            None => self.client.clone(),
        }
    }
}

/// Everything the outputs show. It keeps a few bytes a case ([`CaseSlot`]), the counts, and
/// what needs attention; the writers read each case again when they write it.
#[derive(Debug, Clone)]
pub struct Model {
    pub runs: Vec<RunView>,
    /// Every agent version of any run, sorted.
    pub agent_versions: Vec<String>,
    /// Profile of each agent version (from whichever run names it).
    pub profiles: BTreeMap<String, ProfileInfo>,
}

impl Model {
    /// Reads every case of `runs` twice (to sort them, then to count them), one at a time.
    pub fn new(runs: &[LoadedRun]) -> Result<Model, ReportError> {
        let mut dirs = Unique::default();
        let views: Vec<RunView> = runs
            .iter()
            .enumerate()
            .map(|(i, loaded)| run_view(i, loaded, &mut dirs))
            .collect::<Result<_, _>>()?;
        let mut agent_versions: Vec<String> = views
            .iter()
            .flat_map(|r| r.agents.iter().map(|a| a.key.clone()))
            .collect();
        agent_versions.sort_by(|a, b| cmp_agent_versions(a, b));
        agent_versions.dedup();
        let profiles = runs
            .iter()
            .flat_map(|r| r.run.profiles.iter())
            .map(|p| (p.key.clone(), p.clone()))
            .collect();
        Ok(Model {
            runs: views,
            agent_versions,
            profiles,
        })
    }

    /// Trials that fail their run, over all runs.
    pub fn failing(&self) -> usize {
        self.runs.iter().map(|r| r.failing).sum()
    }
}

fn client_version(run: &RunJson) -> Option<String> {
    run.client.reported_version().map(str::to_owned)
}

/// A case's place in report order: by family (in report order, scenarios without one last),
/// then scenario and case id.
type SortKey = (bool, Option<Family>, Box<str>);

/// Compares two sort keys as (family, scenario, id).
fn cmp_keys(a: &SortKey, b: &SortKey) -> Ordering {
    (a.0, a.1, scenario_of(&a.2), &a.2).cmp(&(b.0, b.1, scenario_of(&b.2), &b.2))
}

fn run_view(index: usize, loaded: &LoadedRun, dirs: &mut Unique) -> Result<RunView, ReportError> {
    let run = &loaded.run;
    let client = run.client.display_name().to_owned();
    let version = client_version(run);
    let dir = dirs.take(&match &version {
        Some(v) => format!("{client}-{v}"),
        None => client.clone(),
    });
    let strict = run.config.strict;
    // First pass: which agent version each case is of, and its place in report order.
    let mut by_agent: BTreeMap<String, Vec<(SortKey, u32)>> = BTreeMap::new();
    for i in 0..loaded.case_count() {
        let case = loaded.case_key(i)?;
        let position = u32::try_from(i).expect("fewer than 2³² cases");
        by_agent.entry(case.agent_version()).or_default().push((
            (case.family.is_none(), case.family, case.id.into()),
            position,
        ));
    }
    // Second pass, agent by agent in report order: everything but the rows.
    let mut pages = Unique::default();
    let mut counts = Counts::default();
    let mut judged = 0;
    let mut agents = Vec::new();
    for (key, mut cases) in by_agent {
        cases.sort_by(|a, b| cmp_keys(&a.0, &b.0));
        let order: Vec<u32> = cases.into_iter().map(|(_, i)| i).collect();
        let agent = agent_view(loaded, key, order, &mut pages, &mut counts, &mut judged)?;
        agents.push(agent);
    }
    agents.sort_by(|a, b| cmp_agent_versions(&a.key, &b.key));
    // The run's causes, over its agent versions in report order; only failing cases are read.
    let mut grouper = causes::Grouper::default();
    for agent in &agents {
        for &pos in &agent.failing_cases {
            grouper.add(&*agent.case(loaded, agent.cases[pos as usize])?);
        }
    }
    let plain = grouper.finish();
    let causes = cause_views(loaded, &agents, plain.clone())?;
    let single_cause_hint = causes::hint_for(&plain, judged, |id| {
        find_failing(loaded, &agents, id)
            .ok()
            .flatten()
            .map(|(c, _)| c)
    });
    Ok(RunView {
        run: index,
        dir,
        client,
        client_version: version,
        policy: run.client.policy_words(),
        source: run.client.source.clone(),
        harness: format!("{} {}", run.harness.name, run.harness.version),
        acp_schema: run.acp_schema.clone(),
        started: timestamp(run.started_unix_ms),
        duration: duration(run.duration_ms),
        strict,
        filter: run.config.filter.clone(),
        path: loaded.path.display().to_string(),
        failing: counts.failing(strict),
        counts,
        agents,
        causes,
        single_cause_hint,
    })
}

/// The failing case `id` of `agents` and its page, read from `run`.
fn find_failing<'r>(
    run: &'r LoadedRun,
    agents: &[AgentView],
    id: &str,
) -> Result<Option<(Cow<'r, CaseJson>, String)>, ReportError> {
    for agent in agents {
        for &pos in &agent.failing_cases {
            let slot = agent.cases[pos as usize];
            let case = agent.case(run, slot)?;
            if case.id == id {
                let page = slot.page(&case);
                return Ok(Some((case, page)));
            }
        }
    }
    Ok(None)
}

/// `causes` linked to the first trial of each on its case page (links relative to the run's
/// directory, or to the agent page's when `agents` is that one agent).
fn cause_views(
    run: &LoadedRun,
    agents: &[AgentView],
    causes: Vec<Cause>,
) -> Result<Vec<CauseView>, ReportError> {
    causes
        .into_iter()
        .map(|cause| {
            let found = find_failing(run, agents, &cause.cases[0])?;
            let found = found.as_ref().and_then(|(case, page)| {
                let trial = case.trials.iter().find(|t| t.name == cause.first_trial)?;
                Some((case, page, trial))
            });
            let (href, frame_href) = match found {
                // A case that did not finish is explained by its stderr, not by any one check.
                Some((case, page, _)) if cause.check.is_none() => {
                    let at = if case.stderr_tail.is_empty() {
                        "checks"
                    } else {
                        "stderr"
                    };
                    (format!("{page}#{at}"), None)
                }
                Some((_, page, trial)) => (
                    format!("{page}#{}", check_anchor(&trial.check)),
                    trial
                        .frames
                        .first()
                        .map(|f| format!("{page}#{}", frame_anchor(*f))),
                ),
                None => (String::new(), None),
            };
            Ok(CauseView {
                css: Grade::of(&cause.grade).css(),
                cause,
                href,
                frame_href,
            })
        })
        .collect()
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

/// `#56 #57 #58`.
pub fn rules_text(rules: &[u16]) -> String {
    rules
        .iter()
        .map(|r| format!("R{r}"))
        .collect::<Vec<_>>()
        .join(" ")
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

/// Anchor of a trial on its case page.
pub fn check_anchor(check: &str) -> String {
    format!("check-{}", crate::slug::page_stem(check))
}

/// Anchor of a frame on its case page.
pub fn frame_anchor(index: usize) -> String {
    format!("f{index}")
}

/// The matrix row of `case` (at position `index` of its agent page), its page `case_page`.
fn row(case: &CaseJson, case_page: &str, columns: &[Column], index: usize) -> Row {
    let cells = columns
        .iter()
        .map(|col| match case.trials.iter().find(|t| t.check == col.id) {
            Some(t) => {
                let g = Grade::of(&t.grade);
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
        worst_css: worst.as_ref().map_or("none", Grade::css),
        attention: worst.as_ref().is_some_and(Grade::needs_attention),
        cells,
        duration: duration(case.duration_ms),
        end: if case.end.kind == "completed" {
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
            let g = Grade::of(&t.grade);
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
fn agent_view(
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
        if case.end.kind != "not_applicable" {
            *judged += 1;
        }
        if profile_key.is_none() {
            profile_key = case.profile.clone();
        }
        let found = attention_of(&case, &case_page);
        let needs_attention = worst(&case.trials)
            .as_ref()
            .is_some_and(Grade::needs_attention);
        if !found.is_empty() {
            attention.extend(found);
            failing_cases.push(position);
            failing_trials.extend(
                case.trials
                    .iter()
                    .filter(|t| Grade::of(&t.grade).needs_attention())
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
    fn count(&mut self, grade: &str, strict: bool) {
        self.tests += 1;
        match crate::junit::kind(grade, strict) {
            crate::junit::Kind::Success => {}
            crate::junit::Kind::Failure => self.failures += 1,
            crate::junit::Kind::Error => self.errors += 1,
            crate::junit::Kind::Skipped => self.skipped += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_numerically_within_an_agent() {
        let mut keys = vec![
            "qwen-code@0.21",
            "opencode@1.18",
            "qwen-code@0.14",
            "opencode@1.9",
            "codex-acp@1.6",
        ];
        keys.sort_by(|a, b| cmp_agent_versions(a, b));
        assert_eq!(
            keys,
            vec![
                "codex-acp@1.6",
                "opencode@1.9",
                "opencode@1.18",
                "qwen-code@0.14",
                "qwen-code@0.21"
            ]
        );
    }

    #[test]
    fn counts_always_show_the_main_grades_and_any_unknown_one() {
        let mut counts = Counts::default();
        counts.add("pass", 3);
        counts.add("crash", 1);
        counts.add("flaky", 2);
        let names: Vec<String> = counts.chips().into_iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            vec![
                "pass",
                "fail",
                "warn",
                "expected",
                "not_applicable",
                "crash",
                "flaky"
            ]
        );
        assert_eq!(counts.failing(false), 3);
        assert_eq!(counts.nonzero_chips().len(), 3);
    }

    #[test]
    fn durations_and_timestamps_read_well() {
        assert_eq!(duration(142), "142 ms");
        assert_eq!(duration(1250), "1.25 s");
        assert_eq!(duration(125_000), "2 min 5 s");
        assert_eq!(timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(timestamp(u64::MAX), format!("{} ms after 1970", u64::MAX));
    }
}
