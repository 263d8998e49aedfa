//! `acp-harness list`: the trial names of the suite, one a line, without launching anything.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use acp_harness::suite;
use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct ListArgs {
    /// Scenario directory [default: ./scenarios, else the workspace's].
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
    /// Only trials whose name contains this text (repeatable; any match selects).
    #[arg(long, value_name = "TEXT")]
    filter: Vec<String>,
}

pub fn command(args: ListArgs) -> Result<ExitCode> {
    let dir = suite::scenarios_dir(args.scenarios.as_deref())?;
    let mut out = std::io::stdout().lock();
    for name in suite::trial_names(&dir, &args.filter)? {
        // A closed pipe (`acp-harness list | head`) ends the listing quietly.
        if writeln!(out, "{name}").is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}
