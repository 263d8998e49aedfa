//! What `run` and `replay` share: the flags that say which client runs against which
//! scenarios and how long it may take ([`CommonArgs`]), the run configuration and client they
//! resolve to, the async runtime, and the indentation of multi-line texts under a heading.

use std::path::PathBuf;
use std::time::Duration;

use acp_harness::client_spec::ClientSpec;
use acp_harness::runner::RunConfig;
use acp_harness::suite;
use anyhow::{Context, Result};
use clap::Args;

/// The client under test, the scenarios and the time and size limits of a run.
#[derive(Args)]
pub struct CommonArgs {
    /// Client under test: a JSON argv array (`'["./client","--adapter"]'`), a client profile
    /// path, `reference` (default) or `mutant:<name>`. Also read from ACP_HARNESS_CLIENT.
    #[arg(long, value_name = "CLIENT")]
    client: Option<String>,
    /// Scenario directory [default: ./scenarios, else the workspace's].
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
    /// How long one scenario step may wait for the client.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    step_timeout_ms: u64,
    /// How long one case may take in total.
    #[arg(long, value_name = "MS", default_value_t = 30000)]
    case_timeout_ms: u64,
    /// Longest line accepted from the client; a longer one is discarded unread (and fails
    /// `jsonrpc`), so a client cannot exhaust the harness's memory.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_frame_bytes: usize,
}

/// The run configuration and the client that `common` names; fails before anything runs when
/// the scenarios cannot be found or the client cannot be started.
pub fn config(common: &CommonArgs) -> Result<(RunConfig, ClientSpec)> {
    let scenarios = suite::scenarios_dir(common.scenarios.as_deref())?;
    let mut cfg = RunConfig::new(scenarios)?;
    cfg.step_timeout = Duration::from_millis(common.step_timeout_ms);
    cfg.case_timeout = Duration::from_millis(common.case_timeout_ms);
    cfg.max_frame = common.max_frame_bytes.max(1);
    let client = ClientSpec::resolve(common.client.as_deref())?;
    client.check_startable()?;
    Ok((cfg, client))
}

pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

/// `text` with every line indented by four spaces, to sit under the line that names it.
pub fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
