//! `acp-harness fuzz-to-scenario`: a permission_mapping fuzz input written as a regression
//! scenario (the writing itself is `acp_harness::fuzz::scenario`'s).

use std::path::PathBuf;
use std::process::ExitCode;

use acp_harness::fuzz::scenario;
use acp_harness::suite;
use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct FuzzToScenarioArgs {
    /// The fuzz input, e.g. fuzz/artifacts/permission_mapping/crash-….
    artifact: PathBuf,
    /// Scenario id [default: `fuzz-` and a hash of the input].
    #[arg(long, value_name = "ID")]
    id: Option<String>,
    /// A line for the scenario's header comment (where and against what it was found).
    #[arg(long, value_name = "TEXT")]
    note: Option<String>,
    /// Scenario directory [default: ./scenarios, else the workspace's].
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
}

/// Writes the scenario and prints where, and the command that replays it.
pub fn command(args: FuzzToScenarioArgs) -> Result<ExitCode> {
    let dir = suite::scenarios_dir(args.scenarios.as_deref())?;
    let regressions = dir.join(scenario::AGENT);
    let path = scenario::write_regression(
        &args.artifact,
        &regressions,
        args.id.as_deref(),
        args.note.as_deref(),
    )?;
    let id = path.file_stem().unwrap_or_default().to_string_lossy();
    acp_harness::outln!("wrote:  {}", path.display());
    acp_harness::outln!(
        "replay: acp-harness replay 'regressions@fuzz/{id}' --scenarios {}",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}
