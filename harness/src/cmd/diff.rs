//! `acp-harness diff`: two runs compared (the comparison is `acp_reports::diff`'s); here the
//! flags, the optional HTML page with its links into both reports, and the exit status, which
//! a baseline's intermittent entries may excuse.

use std::path::PathBuf;
use std::process::ExitCode;

use acp_harness::baseline::Baseline;
use acp_reports::diff::TrialChange;
use acp_reports::report_pages::ReportPages;
use anyhow::{Context, Result};
use clap::Args;

#[derive(Args)]
pub struct DiffArgs {
    /// The earlier run.json.
    old: PathBuf,
    /// The later run.json.
    new: PathBuf,
    /// Also write the diff as an HTML page to this file. Each changed trial links to its case
    /// page in both runs' reports, when they are on disk (see --old-report, --new-report).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The earlier run's report, for the HTML page's links [default: the `report/` folder next
    /// to OLD, if it holds one].
    #[arg(long, value_name = "DIR", requires = "html")]
    old_report: Option<PathBuf>,
    /// The later run's report [default: the `report/` folder next to NEW, if it holds one].
    #[arg(long, value_name = "DIR", requires = "html")]
    new_report: Option<PathBuf>,
    /// A case is slower if it took this many percent longer…
    #[arg(long, value_name = "PERCENT", default_value_t = 50.0)]
    slower_pct: f64,
    /// …and at least this many milliseconds longer.
    #[arg(long, value_name = "MS", default_value_t = 250)]
    slower_ms: u64,
    /// Exit 1 on any trial whose grade differs between the runs, either way (a fix, a new
    /// failure, pass ↔ warn ↔ not_applicable): for comparing two runs of the same client and
    /// corpus, e.g. idle against a loaded machine (ci/load-proof).
    #[arg(long)]
    same_grades: bool,
    /// A client's baseline: with --same-grades, a trial that one of its `intermittent = true`
    /// entries names may change grade (the entry documents a race in the client itself, whose
    /// bug shows in some runs only). Such trials are still listed.
    #[arg(long, value_name = "BASELINE", requires = "same_grades")]
    intermittent: Option<PathBuf>,
}

/// Prints the diff (and writes the page); exits 1 on new failures, or with --same-grades on any
/// grade that moved, unless an intermittent entry of the --intermittent baseline names it.
pub fn command(args: DiffArgs) -> Result<ExitCode> {
    if !(args.slower_pct.is_finite() && args.slower_pct >= 0.0) {
        anyhow::bail!("--slower-pct must be a number >= 0");
    }
    let old = acp_reports::load_run(&args.old)?;
    let new = acp_reports::load_run(&args.new)?;
    let thresholds = acp_reports::diff::Thresholds {
        slower_pct: args.slower_pct,
        slower_ms: args.slower_ms,
    };
    let mut d = acp_reports::diff::diff(&old, &new, thresholds);
    acp_harness::out!("{}", acp_reports::diff::text(&d));
    if let Some(path) = &args.html {
        let old_report = ReportPages::locate(&old, args.old_report.as_deref())?;
        let new_report = ReportPages::locate(&new, args.new_report.as_deref())?;
        let page_dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        };
        acp_reports::diff::link_reports(
            &mut d,
            old_report.as_ref(),
            new_report.as_ref(),
            &page_dir,
        );
        for (side, report, run) in [
            ("old", &old_report, &args.old),
            ("new", &new_report, &args.new),
        ] {
            if report.is_none() {
                acp_harness::outln!(
                    "note: no report next to the {side} run ({}): its trials are not linked (--{side}-report DIR names one)",
                    run.display()
                );
            }
        }
        let html = acp_reports::diff::html(&d)?;
        std::fs::write(path, html).with_context(|| format!("cannot write {}", path.display()))?;
        acp_harness::outln!("html: {}", path.display());
    }
    let intermittent = match &args.intermittent {
        Some(path) => Some(Baseline::load(path)?),
        None => None,
    };
    // Trials whose grade moved, but that an intermittent entry names: listed, not counted.
    let excused = |change: &TrialChange| {
        intermittent.as_ref().is_some_and(|b| {
            change
                .trial
                .rsplit_once("::")
                .is_some_and(|(case, check)| b.intermittent(case, check))
        })
    };
    let moved: Vec<&TrialChange> = d
        .new_failures
        .iter()
        .chain(&d.fixed)
        .chain(&d.regraded)
        .chain(d.changed.iter().filter(|c| c.old_grade != c.new_grade))
        .collect();
    for change in moved.iter().filter(|c| excused(c)) {
        acp_harness::outln!(
            "note: {} moved, as an intermittent entry of the baseline allows",
            change.trial
        );
    }
    let grades_moved = moved.iter().any(|c| !excused(c));
    let new_failures = d.new_failures.iter().filter(|c| !excused(c)).count();
    Ok(
        if new_failures == 0 && !(args.same_grades && grades_moved) {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        },
    )
}
