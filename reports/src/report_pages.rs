//! Where a run's case pages are in a report written earlier, so another page (the run diff) can
//! link a trial into them. The page names are the ones [`crate::write_report`] gives a report of
//! this run alone (as `acp-harness run` writes next to its run.json); a page that is not on disk
//! gets no link, so a report written from several runs, or from another run, never yields a
//! dead link.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::load::{LoadedRun, ReportError};
use crate::model::{Model, check_anchor};

/// A written report of one run: its directory and each case's page in it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportPages {
    /// The report's directory, absolute.
    root: PathBuf,
    /// Case id → its page, relative to `root`.
    pages: BTreeMap<String, String>,
}

impl ReportPages {
    /// The report of `run` in `dir`, or else in the `report/` folder next to its run.json (where
    /// `acp-harness run` writes it). `Ok(None)` when no `dir` is given and there is no report
    /// next to the run; an error when `dir` is given and holds no report.
    pub fn locate(run: &LoadedRun, dir: Option<&Path>) -> Result<Option<ReportPages>, ReportError> {
        let root = match dir {
            Some(dir) if is_report(dir) => dir.to_owned(),
            Some(dir) => {
                return Err(ReportError::NotAReport {
                    path: dir.to_owned(),
                });
            }
            // A merged run's run.json files each sit next to the report of one shard only.
            None if run.is_merged() => return Ok(None),
            None => match run.path.parent().map(|p| p.join("report")) {
                Some(next_to_run) if is_report(&next_to_run) => next_to_run,
                _ => return Ok(None),
            },
        };
        let root = root.canonicalize().map_err(|source| ReportError::Read {
            path: root.clone(),
            source,
        })?;
        let model = Model::new(std::slice::from_ref(run))?;
        let mut pages = BTreeMap::new();
        for view in &model.runs {
            for agent in &view.agents {
                for &slot in &agent.cases {
                    let case = agent.case(run, slot)?;
                    let page = format!("{}/{}", view.dir, slot.page(&case));
                    if root.join(&page).is_file() {
                        pages.insert(case.id.clone(), page);
                    }
                }
            }
        }
        Ok(Some(ReportPages { root, pages }))
    }

    /// A link from a page in directory `from` to the trial `<case>::<check>` on its case page,
    /// if that page exists.
    pub fn trial_href(&self, trial: &str, from: &Path) -> Option<String> {
        let (case, check) = trial.split_once("::")?;
        let page = self.pages.get(case)?;
        let from = from.canonicalize().ok()?;
        let relative = pathdiff::diff_paths(self.root.join(page), from)?;
        let path: Vec<String> = relative
            .components()
            .map(|c| url_segment(&c.as_os_str().to_string_lossy()))
            .collect();
        Some(format!("{}#{}", path.join("/"), check_anchor(check)))
    }
}

/// True if `dir` holds a report this crate wrote (its index.html names the generator).
pub(crate) fn is_report(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("index.html"))
        .is_ok_and(|t| t.contains(crate::GENERATOR_MARKER))
}

/// A path segment as a URL path segment: the characters that would end or change it escaped.
fn url_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for c in segment.chars() {
        match c {
            '%' => out.push_str("%25"),
            ' ' => out.push_str("%20"),
            '#' => out.push_str("%23"),
            '?' => out.push_str("%3F"),
            '"' => out.push_str("%22"),
            _ => out.push(c),
        }
    }
    out
}
