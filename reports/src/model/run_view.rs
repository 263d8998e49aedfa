//! One run, one client ([`RunView`]): its agent versions in report order, its counts and
//! the causes of its failures.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use acp_vocab::family::Family;

use super::agent_view::{AgentView, agent_view};
use super::cause_views::{CauseView, cause_views, find_failing};
use super::format::{Counts, cmp_agent_versions, duration, timestamp};
use crate::causes;
use crate::load::{LoadedRun, ReportError};
use crate::run::{RunJson, scenario_of};
use crate::slug::Unique;

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

pub(super) fn run_view(
    index: usize,
    loaded: &LoadedRun,
    dirs: &mut Unique,
) -> Result<RunView, ReportError> {
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
