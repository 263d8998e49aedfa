//! What every output shows, computed once from the runs: per run (one client) and agent
//! version, the grade counts, the scenarios × checks matrix and the trials that need attention.
//! The HTML, JUnit and Markdown writers only format this.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use acp_vocab::family::Family;

use crate::causes::{self, Cause};
use crate::grade::{GRADES, Grade};
use crate::load::LoadedRun;
use crate::message;
use crate::run::{CaseJson, CheckInfo, ProfileInfo, RunJson, TrialJson};
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
    pub scenarios: Vec<ScenarioGroup>,
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

/// The cases of one scenario (expanded `each` runs share one).
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

/// The causes of `cases`' failures, linked to the first trial of each on its case page.
fn cause_views<'a: 'b, 'b>(
    cases: impl IntoIterator<Item = &'b (&'a CaseJson, String)> + Clone,
) -> Vec<CauseView> {
    causes::group(cases.clone().into_iter().map(|(c, _)| *c))
        .into_iter()
        .map(|cause| {
            let found = cases.clone().into_iter().find_map(|(case, page)| {
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
            CauseView {
                css: Grade::of(&cause.grade).css(),
                cause,
                href,
                frame_href,
            }
        })
        .collect()
}

/// One agent version of one run (its cases borrowed from the loaded run).
#[derive(Debug, Clone)]
pub struct AgentView<'a> {
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
    /// The cases in row order, with the page each one gets (relative to the run directory).
    pub cases: Vec<(&'a CaseJson, String)>,
}

/// One run: one client.
#[derive(Debug, Clone)]
pub struct RunView<'a> {
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
    pub agents: Vec<AgentView<'a>>,
    /// The failures of every agent version grouped by cause (links relative to `dir`).
    pub causes: Vec<CauseView>,
    /// Set when every failing case shares one case-level cause: the client command or profile
    /// is the likely culprit (with the first case's stderr).
    pub single_cause_hint: Option<String>,
}

impl<'a> RunView<'a> {
    pub fn agent(&self, key: &str) -> Option<&AgentView<'a>> {
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

/// Everything the outputs show, borrowing the runs' cases.
#[derive(Debug, Clone)]
pub struct Model<'a> {
    pub runs: Vec<RunView<'a>>,
    /// Every agent version of any run, sorted.
    pub agent_versions: Vec<String>,
    /// Profile of each agent version (from whichever run names it).
    pub profiles: BTreeMap<String, ProfileInfo>,
}

impl<'a> Model<'a> {
    pub fn new(runs: &'a [LoadedRun]) -> Model<'a> {
        let mut dirs = Unique::default();
        let views: Vec<RunView<'a>> = runs
            .iter()
            .enumerate()
            .map(|(i, loaded)| run_view(i, loaded, &mut dirs))
            .collect();
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
        Model {
            runs: views,
            agent_versions,
            profiles,
        }
    }

    /// Trials that fail their run, over all runs.
    pub fn failing(&self) -> usize {
        self.runs.iter().map(|r| r.failing).sum()
    }
}

fn client_version(run: &RunJson) -> Option<String> {
    run.client.reported_version().map(str::to_owned)
}

fn run_view<'a>(index: usize, loaded: &'a LoadedRun, dirs: &mut Unique) -> RunView<'a> {
    let run = &loaded.run;
    let client = run.client.display_name().to_owned();
    let version = client_version(run);
    let dir = dirs.take(&match &version {
        Some(v) => format!("{client}-{v}"),
        None => client.clone(),
    });
    let strict = run.config.strict;
    let mut by_agent: BTreeMap<String, Vec<&'a CaseJson>> = BTreeMap::new();
    for case in &run.cases {
        by_agent.entry(case.agent_version()).or_default().push(case);
    }
    let mut pages = Unique::default();
    let mut agents: Vec<AgentView<'a>> = by_agent
        .into_iter()
        .map(|(key, cases)| agent_view(run, key, cases, &mut pages))
        .collect();
    agents.sort_by(|a, b| cmp_agent_versions(&a.key, &b.key));
    let counts = Counts::of(run.cases.iter().flat_map(|c| &c.trials));
    let causes = cause_views(agents.iter().flat_map(|a| &a.cases));
    let plain: Vec<causes::Cause> = causes.iter().map(|c| c.cause.clone()).collect();
    let single_cause_hint = causes::single_cause_hint(&plain, &run.cases);
    RunView {
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
    }
}

fn columns(run: &RunJson, cases: &[&CaseJson]) -> Vec<Column> {
    // The catalog's order when the run has one; trial order otherwise; then any check that only
    // appears in trials.
    let mut ids: Vec<String> = run.checks.iter().map(|c| c.id.clone()).collect();
    for case in cases {
        for t in &case.trials {
            if !ids.contains(&t.check) {
                ids.push(t.check.clone());
            }
        }
    }
    // Keep only the checks that occur here.
    ids.retain(|id| {
        cases
            .iter()
            .any(|c| c.trials.iter().any(|t| &t.check == id))
    });
    ids.into_iter()
        .map(|id| {
            let info: Option<&CheckInfo> = run.checks.iter().find(|c| c.id == id);
            let trial = cases.iter().flat_map(|c| &c.trials).find(|t| t.check == id);
            let rules = info
                .map(|c| c.rules.clone())
                .or_else(|| trial.map(|t| t.rules.clone()))
                .unwrap_or_default();
            Column {
                requirement: info
                    .map(|c| c.requirement.clone())
                    .or_else(|| trial.map(|t| t.requirement.clone()))
                    .unwrap_or_default(),
                rules: rules_text(&rules),
                needs_adapter: info.map(|c| c.needs_adapter),
                id,
            }
        })
        .collect()
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

fn agent_view<'a>(
    run: &RunJson,
    key: String,
    mut cases: Vec<&'a CaseJson>,
    pages: &mut Unique,
) -> AgentView<'a> {
    let strict = run.config.strict;
    // By family (in report order, scenarios without one last), then scenario and case.
    cases.sort_by(|a, b| {
        (a.family.is_none(), a.family, a.scenario(), &a.id).cmp(&(
            b.family.is_none(),
            b.family,
            b.scenario(),
            &b.id,
        ))
    });
    let mut columns = columns(run, &cases);
    let column_groups = group_columns(&mut columns);
    let page = format!("{}.html", pages.take(&key));
    let mut case_pages = Vec::new();
    let mut groups: Vec<ScenarioGroup> = Vec::new();
    let mut attention = Vec::new();
    for case in &cases {
        let case_page = format!("cases/{}.html", pages.take(&case.id));
        let index = case_pages.len();
        case_pages.push((*case, case_page.clone()));
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
        for t in &case.trials {
            let g = Grade::of(&t.grade);
            if g.needs_attention() {
                attention.push(Attention {
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
                });
            }
        }
        let worst = worst(&case.trials);
        let row = Row {
            case: index,
            label: match case.short_id().strip_prefix(case.scenario()) {
                Some(option) if !option.is_empty() => option.to_owned(),
                _ => case.scenario().to_owned(),
            },
            page: case_page,
            worst_css: worst.as_ref().map_or("none", Grade::css),
            attention: worst.as_ref().is_some_and(Grade::needs_attention),
            cells,
            duration: duration(case.duration_ms),
            end: if case.end.kind == "completed" {
                String::new()
            } else {
                case.end.describe()
            },
        };
        match groups.last_mut() {
            Some(group) if group.scenario == case.scenario() => {
                group.attention |= row.attention;
                group.rows.push(row);
            }
            _ => groups.push(ScenarioGroup {
                scenario: case.scenario().to_owned(),
                family: case.family,
                title: case.title.clone(),
                file: case.file.clone(),
                attention: row.attention,
                rows: vec![row],
            }),
        }
    }
    // Failing grades first (crash, fail, …), then warn and stale.
    attention.sort_by_key(|a| std::cmp::Reverse(a.rank));
    let counts = Counts::of(cases.iter().flat_map(|c| &c.trials));
    let profile_key = cases.iter().find_map(|c| c.profile.clone());
    AgentView {
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
        families: by_family(groups),
        attention,
        causes: cause_views(&case_pages),
        cases: case_pages,
    }
}

/// Consecutive scenario groups of one family, as one family group each (the cases arrive sorted
/// by family).
fn by_family(groups: Vec<ScenarioGroup>) -> Vec<FamilyGroup> {
    let mut families: Vec<FamilyGroup> = Vec::new();
    for group in groups {
        let family = match families.last_mut() {
            Some(f) if f.id == group.family.map_or("other", Family::id) => f,
            _ => {
                families.push(FamilyGroup::of(group.family));
                families.last_mut().expect("just pushed")
            }
        };
        family.attention |= group.attention;
        family.scenarios.push(group);
    }
    families
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
