//! A turn played as a one-case scenario run, for a client without a control-plane adapter: a
//! client profile with `control = "none"` (clients/README.md, "Client profiles"), such as acpx or
//! chuk-acp. The long-lived driver ([`super::live`]) plays the user through the adapter over one
//! connection; such a client has none to play it through. It is started per case with the prompt
//! on its command line, answers permission requests by its own policy, and what it shows comes
//! from its profile's observer. So each input becomes the regression scenario
//! `acp-harness fuzz-to-scenario` writes for it (the same frames, the same branches on the
//! client's answer) and runs through the scenario runner as `acp-harness replay` runs it: one
//! client process per input, graded by every check. Slow (a real client starts for every input:
//! about 1.7 s for acpx), but it is the same verdict a scenario run would give, so a finding
//! replays as a regression scenario exactly.

use std::path::PathBuf;
use std::time::Duration;

use acp_fake_agents::profile::Profiles;
use acp_fake_agents::scenario::Case;
use acp_judge::checks::{Trial, grade_case};
use acp_judge::record::CaseRecord;

use super::driver::DriverConfig;
use super::input::PermissionTurn;
use super::scenario::{AGENT, VERSION, to_scenario};
use crate::runner::{RunConfig, run_owned_case};

/// How long a whole case may take: the runner's default (a real client starts for every input).
const CASE_TIMEOUT: Duration = Duration::from_secs(30);

/// Plays turn `n` as a one-case run against the client of `cfg`: the record and its trials.
pub(super) async fn play(
    turn: &PermissionTurn,
    n: u64,
    cfg: &DriverConfig,
) -> (CaseRecord, Vec<Trial>) {
    let mut record = match case_of(turn, n) {
        Ok(case) => {
            run_owned_case(case, &cfg.client, &run_config(cfg))
                .await
                .record
        }
        // `to_scenario` writes what the parser reads (harness/tests/fuzz_seeds.rs); an input it
        // cannot write is the harness's bug, graded `error` like a client that cannot start.
        Err(reason) => super::live::failed_start(cfg, reason),
    };
    // The runner's repro line would replay this generated case, which no scenario directory
    // holds; a finding's is every fuzz finding's: the artifact written as a scenario, replayed.
    record.repro = super::live::repro(cfg);
    let trials = grade_case(&record);
    (record, trials)
}

/// The turn's regression scenario, parsed, as its one case.
fn case_of(turn: &PermissionTurn, n: u64) -> Result<Case, String> {
    let id = format!("fuzz-turn-{n}");
    let text = to_scenario(turn, &id, "a fuzz input, played as a case");
    let file = format!("{AGENT}/{VERSION}/{id}.toml (generated from the fuzz input)");
    let scenario = Profiles::embedded()
        .map_err(|errors| errors[0].clone())
        .and_then(|profiles| acp_fake_agents::scenario::parse(&file, &text, profiles))
        .map_err(|e| format!("harness bug: the scenario of the fuzz input does not parse: {e}"))?;
    scenario
        .into_cases()
        .into_iter()
        .next()
        .ok_or_else(|| "harness bug: the scenario of the fuzz input has no case".to_owned())
}

fn run_config(cfg: &DriverConfig) -> RunConfig {
    RunConfig {
        step_timeout: cfg.step_timeout,
        case_timeout: CASE_TIMEOUT.max(cfg.step_timeout * 4),
        settle_timeout: None,
        max_frame: 16 << 20,
        jobs: 1,
        scenarios_dir: PathBuf::from("scenarios"),
        fake_agent: cfg.fake_agent.clone(),
        // The caller grades, once the record names how to replay it.
        grade: false,
    }
}
