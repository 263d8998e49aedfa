//! `acp-harness merge`: the run.json files of `run --shard K/N` runs as one run.json. The
//! loading and merging of shards ([`merged_runs`]) is `report`'s too.

use std::path::PathBuf;
use std::process::ExitCode;

use acp_reports::words::counted;
use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct MergeArgs {
    /// run.json files of the shards.
    #[arg(required = true, value_name = "RUN_JSON")]
    runs: Vec<PathBuf>,
    /// A new directory for the merged run.json and its transcripts.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
}

/// Exits 2 (an error) when the files are not the shards of one run.
pub fn command(args: MergeArgs) -> Result<ExitCode> {
    let merged = merged_runs(&args.runs)?;
    let count = merged.len();
    let Ok([run]) = <[_; 1]>::try_from(merged) else {
        anyhow::bail!(
            "these {} run.json files are {} runs, not the shards of one: shards share --client, harness version and N (see `acp-harness merge --help`)",
            args.runs.len(),
            count
        );
    };
    let path = acp_reports::merge::write_run(&run.into_memory()?, &args.out)?;
    acp_harness::outln!("run.json: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

/// The runs in `paths`, the shards of each run merged into one (saying so). A run that is not
/// merged keeps its cases on disk (the report reads them one at a time).
pub fn merged_runs(paths: &[PathBuf]) -> Result<Vec<acp_reports::LoadedRun>> {
    let loaded = acp_reports::open_runs(paths)?;
    let given = loaded.len();
    let merged = acp_reports::merge::merge_shards(loaded)?;
    for run in merged.iter().filter(|r| r.is_merged()) {
        let whole = run
            .run
            .config
            .shard
            .as_ref()
            .map_or_else(|| "every slice".to_owned(), |s| format!("slices {s} only"));
        acp_harness::outln!(
            "merged shards of {} ({whole}): {} cases",
            run.run.client.display_name(),
            run.case_count()
        );
    }
    if merged.len() < given {
        let n = merged.len();
        acp_harness::outln!("{given} run.json files, {}", counted(n, "run"));
    }
    Ok(merged)
}
