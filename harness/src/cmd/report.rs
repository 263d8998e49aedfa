//! `acp-harness report`: the HTML report, junit.xml and summary.md of one or more runs, the
//! shards of a run merged first (by [`merged_runs`]).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::merge::merged_runs;

#[derive(Args)]
pub struct ReportArgs {
    /// run.json files, e.g. acp-results/run.json.
    #[arg(required = true, value_name = "RUN_JSON")]
    runs: Vec<PathBuf>,
    /// Where the report goes.
    #[arg(long, value_name = "DIR", default_value = "acp-report")]
    out: PathBuf,
    /// Exit 1 when a trial fails, as `run` does (for a CI job that reports merged shards).
    #[arg(long)]
    exit_code: bool,
}

pub fn command(args: ReportArgs) -> Result<ExitCode> {
    let loaded = merged_runs(&args.runs)?;
    let written = acp_reports::write_report(&loaded, &args.out)?;
    acp_harness::outln!("report:  {}", written.index.display());
    acp_harness::outln!("junit:   {}", written.junit.display());
    acp_harness::outln!("summary: {}", written.summary.display());
    acp_harness::outln!("{} failing trials", written.failing);
    Ok(if args.exit_code && written.failing > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
