//! What every output shows, computed once from the runs: per run (one client) and agent
//! version, the grade counts, the scenarios × checks matrix and the trials that need attention.
//! The HTML, JUnit and Markdown writers only format this.

use std::collections::BTreeMap;

use crate::load::{LoadedRun, ReportError};
use crate::run::ProfileInfo;
use crate::slug::Unique;

mod agent_view;
mod cause_views;
mod format;
mod run_view;

pub use agent_view::{
    AgentView, Attention, CaseSlot, Cell, Column, ColumnGroup, FamilyGroup, Row, ScenarioGroup,
    ScenarioSpan, SuiteCounts,
};
pub use cause_views::CauseView;
pub use format::{
    Chip, Counts, check_anchor, cmp_agent_versions, duration, frame_anchor, rules_text, timestamp,
    worst,
};
pub use run_view::RunView;
use run_view::run_view;

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
