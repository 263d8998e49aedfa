//! The causes of failures ([`crate::causes`]) linked into the report: each to its first trial
//! and the first frame that trial cites.

use std::borrow::Cow;

use super::agent_view::AgentView;
use super::format::{check_anchor, frame_anchor};
use crate::causes::Cause;
use crate::load::{LoadedRun, ReportError};
use crate::run::CaseJson;

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

/// The failing case `id` of `agents` and its page, read from `run`.
pub(super) fn find_failing<'r>(
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
pub(super) fn cause_views(
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
                css: cause.grade.css(),
                cause,
                href,
                frame_href,
            })
        })
        .collect()
}
