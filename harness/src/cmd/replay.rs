//! `acp-harness replay`: one case run again, with its full numbered wire log and every check's
//! verdict.

use std::path::PathBuf;
use std::process::ExitCode;

use acp_harness::baseline::Baseline;
use acp_harness::output::wire_log;
use acp_harness::{runner, suite};
use anyhow::Result;
use clap::Args;

use super::common::{CommonArgs, config, indent, runtime};

#[derive(Args)]
pub struct ReplayArgs {
    /// Case id, e.g. `opencode@1.18/edit-permission` (see `acp-harness list`).
    case_id: String,
    /// Expected failures (TOML; clients/README.md, "Baselines"), as for `run`: a listed
    /// failure of this case grades `expected` and does not make the exit status 1.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    #[command(flatten)]
    common: CommonArgs,
}

/// Exits 1 when a trial of the case fails (a baseline's expected failures do not).
pub fn command(args: ReplayArgs) -> Result<ExitCode> {
    let (cfg, client) = config(&args.common)?;
    let case = suite::find_case(&cfg.scenarios_dir, &args.case_id)?;
    let baseline = args.baseline.as_deref().map(Baseline::load).transpose()?;
    if let Some(b) = &baseline {
        suite::validate_baseline(b, &cfg.scenarios_dir)?;
    }
    let mut result = runtime()?.block_on(runner::run_case(&case, &client, &cfg));
    if let Some(b) = &baseline {
        b.apply_case(&result.record.meta.case_id, &mut result.trials);
    }
    acp_harness::outln!("{}", wire_log(&result.record.transcript));
    acp_harness::outln!("end: {:?}", result.record.end);
    if !result.record.stderr_tail.is_empty() {
        acp_harness::outln!(
            "client stderr (tail):\n{}",
            indent(&result.record.stderr_tail)
        );
    }
    let mut failing = false;
    for t in &result.trials {
        acp_harness::outln!("{:>15}  {}", t.grade.as_str(), t.check);
        if !t.message.is_empty() {
            acp_harness::outln!("{}", indent(&t.failure_text()));
        }
        failing |= t.grade.is_failing(false);
    }
    Ok(if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
