//! acp-reports: everything a person or a CI reads after an acp-harness run, made from `run.json`
//! (and the transcripts it references) alone.
//!
//! * [`write_report`]: a static HTML report (`index.html`: clients × agent versions; a page per
//!   agent version: scenarios × checks; a page per case: the checks, the cited frames and the
//!   numbered wire log), `junit.xml` and `summary.md` (for `$GITHUB_STEP_SUMMARY`).
//! * [`merge`]: the shards of one run (`run --shard K/N`) as one run, for the report and `diff`.
//! * [`diff`]: what changed between two runs, as text and as an HTML page that links each
//!   changed trial into both runs' reports ([`report_pages`]) when they are on disk.
//!
//! The run.json format itself is defined here ([`run`]); the harness writes it with these types.
//! This crate does not depend on the harness.

pub mod causes;
pub mod diff;
pub mod end_kind;
pub mod grade;
pub mod html;
pub mod junit;
pub mod load;
pub mod markdown;
pub mod merge;
pub mod message;
pub mod model;
pub mod report_pages;
pub mod run;
pub mod slug;
pub mod transcript;
pub mod words;

use std::path::{Path, PathBuf};

pub use load::{LoadedRun, ReportError, load_run, load_runs, open_run, open_runs};
pub use model::Model;

/// Where [`write_report`] put things.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    pub index: PathBuf,
    pub junit: PathBuf,
    pub summary: PathBuf,
    /// Trials that fail their run, over all runs.
    pub failing: usize,
    /// The failures grouped by cause, run after run ([`causes`]).
    pub causes: Vec<causes::Cause>,
    /// The first run's sentence when every failing case of it shares one case-level cause.
    pub single_cause_hint: Option<String>,
}

/// What every index.html this crate writes carries (base.html), so an earlier report is known.
const GENERATOR_MARKER: &str = "<meta name=\"generator\" content=\"acp-reports ";

/// Writes the HTML report, `junit.xml` and `summary.md` into `out` (created if needed). An
/// earlier report in `out` is replaced whole (no case page of it is left behind); a non-empty
/// directory that holds no report is refused, so a mistyped path never mixes pages into, or
/// deletes, someone's files.
pub fn write_report(runs: &[LoadedRun], out: &Path) -> Result<Written, ReportError> {
    clear_earlier_report(out)?;
    let model = Model::new(runs)?;
    let index = html::write_index(&model, out)?;
    let junit = out.join("junit.xml");
    let file = std::fs::File::create(&junit).map_err(|source| ReportError::Write {
        path: junit.clone(),
        source,
    })?;
    let mut junit_xml = junit::JunitWriter::start(&model, std::io::BufWriter::new(file))?;
    // One pass over the cases, agent page by agent page: each case is read once for its page
    // and its JUnit test cases.
    for view in &model.runs {
        let loaded = &runs[view.run];
        for agent in &view.agents {
            html::write_agent_page(loaded, view, agent, out)?;
            junit_xml.suite(view, agent)?;
            for &slot in &agent.cases {
                let case = agent.case(loaded, slot)?;
                html::write_case_page(loaded, &model, (view, agent), slot, &case, out)?;
                junit_xml.case(&case)?;
            }
        }
    }
    junit_xml.finish()?;
    let summary = out.join("summary.md");
    let hint = "The HTML report (index.html) and junit.xml are next to this summary.";
    write_file(&summary, &markdown::render(&model, hint)?)?;
    Ok(Written {
        index,
        junit,
        summary,
        failing: model.failing(),
        causes: model
            .runs
            .iter()
            .flat_map(|r| r.causes.iter().map(|c| c.cause.clone()))
            .collect(),
        single_cause_hint: model.runs.iter().find_map(|r| r.single_cause_hint.clone()),
    })
}

/// Empties `out` if it holds an earlier report (its index.html names this crate as generator);
/// refuses any other non-empty directory. A missing or empty `out` is left as it is.
fn clear_earlier_report(out: &Path) -> Result<(), ReportError> {
    let read = |source| ReportError::Read {
        path: out.to_owned(),
        source,
    };
    let mut entries = match std::fs::read_dir(out) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(read(e)),
    };
    if entries.next().is_none() {
        return Ok(());
    }
    if !report_pages::is_report(out) {
        return Err(ReportError::NotAReportDir {
            path: out.to_owned(),
        });
    }
    for entry in std::fs::read_dir(out).map_err(read)? {
        let path = entry.map_err(read)?.path();
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
    }
    Ok(())
}

fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    std::fs::write(path, text).map_err(|source| ReportError::Write {
        path: path.to_owned(),
        source,
    })
}
