//! The suite: scenarios × checks, as trial names, as filtered cases, and as the libtest-mimic
//! entry that `cargo test` runs (harness/tests/conformance.rs).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use acp_fake_agents::scenario::{self, Case};
use anyhow::{Context, Result, bail};
use libtest_mimic::{Arguments, Failed, Trial};

use crate::baseline::Baseline;
use crate::client_spec::ClientSpec;
use crate::nextest_cache::{RunCache, Verdict};
use crate::runner::{self, CaseResult, RunConfig};
use acp_judge::checks::{Grade, all_checks};

/// Shards live in their own module (no cycle with `nextest_cache`); the suite's callers name
/// them here.
pub use crate::shard::{Shard, case_hash};

/// `--scenarios`, else `./scenarios`, else the workspace's `scenarios/`.
pub fn scenarios_dir(arg: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = arg {
        if !dir.is_dir() {
            bail!("--scenarios {} is not a directory", dir.display());
        }
        return Ok(dir.canonicalize()?);
    }
    let candidates = [
        PathBuf::from("scenarios"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios"),
    ];
    for dir in candidates {
        if dir.is_dir() {
            return Ok(dir.canonicalize()?);
        }
    }
    bail!("no scenarios directory found; pass --scenarios DIR")
}

/// Every case of every scenario under `dir`, or every parse error (nothing runs if any).
pub fn load_cases(dir: &Path) -> Result<Vec<Case>> {
    let (scenarios, errors) = scenario::load_dir(dir);
    if !errors.is_empty() {
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        bail!(
            "{} scenario file(s) are invalid; nothing was run:\n{}",
            errors.len(),
            text.join("\n")
        );
    }
    Ok(scenarios.iter().flat_map(|s| s.cases()).collect())
}

fn selected(name: &str, filter: &[String]) -> bool {
    filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()))
}

/// Trial names, `<case>::<check>`, that the filter selects.
pub fn trial_names(dir: &Path, filter: &[String]) -> Result<Vec<String>> {
    let checks = all_checks();
    Ok(load_cases(dir)?
        .iter()
        .flat_map(|case| {
            checks
                .iter()
                .map(move |c| format!("{}::{}", case.id, c.id()))
        })
        .filter(|name| selected(name, filter))
        .collect())
}

/// Cases with at least one selected trial.
pub fn select_cases(dir: &Path, filter: &[String]) -> Result<Vec<Case>> {
    let checks = all_checks();
    Ok(load_cases(dir)?
        .into_iter()
        .filter(|case| {
            checks
                .iter()
                .any(|c| selected(&format!("{}::{}", case.id, c.id()), filter))
        })
        .collect())
}

/// Drops the trials of a finished case that the filter does not select.
pub fn retain_selected(result: &mut CaseResult, filter: &[String]) {
    retain_selected_trials(&result.record.meta.case_id, &mut result.trials, filter);
}

/// Drops the trials of case `case_id` that the filter does not select.
pub fn retain_selected_trials(
    case_id: &str,
    trials: &mut Vec<acp_judge::checks::Trial>,
    filter: &[String],
) {
    trials.retain(|t| selected(&format!("{case_id}::{}", t.check), filter));
}

/// The case with this id.
pub fn find_case(dir: &Path, case_id: &str) -> Result<Case> {
    let cases = load_cases(dir)?;
    let ids: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    cases
        .into_iter()
        .find(|c| c.id == case_id)
        .with_context(|| format!("no case {case_id:?}; known cases: {}", ids.join(", ")))
}

/// What every trial of the conformance suite shares: the client, the config and a runtime,
/// created on first use so that `--list` launches and builds nothing.
struct Shared {
    client: ClientSpec,
    cfg: RunConfig,
    runtime: tokio::runtime::Runtime,
    strict: bool,
    /// `ACP_HARNESS_BASELINE`: expected failures (crate::baseline).
    baseline: Option<Baseline>,
    /// Under cargo-nextest, where every trial is a process: the verdicts the run's processes
    /// share, so each case is played once (crate::nextest_cache).
    run_cache: Option<RunCache>,
}

fn shared(dir: &Path) -> Result<&'static Shared, String> {
    static SHARED: OnceLock<Result<Shared, String>> = OnceLock::new();
    SHARED
        .get_or_init(|| {
            let setup = || -> Result<Shared> {
                let mut cfg = RunConfig::new(dir.to_path_buf())?;
                if let Some(ms) = env_ms("ACP_HARNESS_STEP_TIMEOUT_MS")? {
                    cfg.step_timeout = ms;
                }
                if let Some(ms) = env_ms("ACP_HARNESS_CASE_TIMEOUT_MS")? {
                    cfg.case_timeout = ms;
                }
                let baseline = Baseline::from_env()?;
                if let Some(b) = &baseline {
                    validate_baseline(b, dir)?;
                }
                Ok(Shared {
                    baseline,
                    client: ClientSpec::resolve(None)?,
                    cfg,
                    runtime: tokio::runtime::Builder::new_multi_thread()
                        .enable_all()
                        .build()?,
                    strict: std::env::var("ACP_HARNESS_STRICT").is_ok_and(|v| v == "1"),
                    run_cache: RunCache::from_env(),
                })
            };
            setup().map_err(|e| format!("{e:#}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn env_ms(name: &str) -> Result<Option<std::time::Duration>> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v) => {
            let ms: u64 = v
                .parse()
                .with_context(|| format!("{name}={v:?} is not a number of milliseconds"))?;
            Ok(Some(std::time::Duration::from_millis(ms)))
        }
    }
}

/// `cargo test` entry: one libtest trial per scenario × check, against the client named by
/// `ACP_HARNESS_CLIENT` (default: the reference client). Trials of one case share one run.
/// `ACP_HARNESS_BASELINE` names a baseline file: its failures pass as expected, and a trial that
/// a one-trial entry names fails as stale when it passes (an entry covering several trials is
/// judged only by `acp-harness run --baseline`, which sees them all); an unknown id fails every
/// trial.
pub fn conformance_main() -> std::process::ExitCode {
    let mut args = Arguments::from_args();
    // A case mostly waits (on pipes, on its client's start), and trials of one case share its
    // one play: many cases in flight keep the cores busy. Check-major order below puts
    // different cases, not one case's checks, on the threads that start together.
    args.test_threads
        .get_or_insert(std::thread::available_parallelism().map_or(2, |n| n.get()) * 6);
    let dir = match scenarios_dir(None) {
        Ok(d) => d,
        Err(e) => return single_failure("scenarios::load", format!("{e:#}"), &args),
    };
    let cases = match load_cases(&dir) {
        Ok(c) => c,
        Err(e) => return single_failure("scenarios::parse", format!("{e:#}"), &args),
    };
    // Each case with the cell its trials share its one play through.
    let cases: Vec<_> = cases
        .into_iter()
        .map(|case| (Arc::new(case), Arc::new(OnceLock::<Vec<Verdict>>::new())))
        .collect();
    let mut trials = Vec::new();
    for check in all_checks() {
        for (case, cell) in &cases {
            let name = format!("{}::{}", case.id, check.id());
            let (case, cell, dir) = (Arc::clone(case), Arc::clone(cell), dir.clone());
            let check_id = check.id();
            trials.push(Trial::test(name, move || {
                let shared = shared(&dir).map_err(Failed::from)?;
                let play = || play_case(&case, shared);
                let verdicts = match &shared.run_cache {
                    Some(cache) => cache.get_or_play(&case.id, play)?,
                    None => cell.get_or_init(play).clone(),
                };
                let verdict = verdicts
                    .into_iter()
                    .find(|v| v.check == check_id)
                    .ok_or_else(|| Failed::from(format!("check {check_id} produced no trial")))?;
                if verdict.grade.is_failing(shared.strict) {
                    Err(format!("[{}]\n{}", verdict.grade.as_str(), verdict.text).into())
                } else {
                    if matches!(verdict.grade, Grade::Warn | Grade::Expected) {
                        eprintln!(
                            "{}: {}::{check_id}: {}",
                            verdict.grade.as_str(),
                            case.id,
                            verdict.text
                        );
                    }
                    Ok(())
                }
            }));
        }
    }
    libtest_mimic::run(&args, trials).exit_code()
}

/// Plays a case and grades it: every check's verdict, after the baseline.
fn play_case(case: &Case, shared: &Shared) -> Vec<Verdict> {
    let result = shared
        .runtime
        .block_on(runner::run_case(case, &shared.client, &shared.cfg));
    result
        .trials
        .into_iter()
        .map(|mut trial| {
            if let Some(b) = &shared.baseline {
                b.apply_trial(&case.id, &mut trial);
            }
            Verdict {
                check: trial.check.to_string(),
                grade: trial.grade,
                text: trial.failure_text(),
            }
        })
        .collect()
}

fn single_failure(name: &str, message: String, args: &Arguments) -> std::process::ExitCode {
    let trial = Trial::test(name, move || Err(message.into()));
    libtest_mimic::run(args, vec![trial]).exit_code()
}

/// Fails if an entry of `baseline` names no known check, scenario or trial of the scenarios in
/// `dir` (all of them, not just a run's selection).
pub fn validate_baseline(baseline: &Baseline, dir: &Path) -> Result<()> {
    let cases: Vec<String> = load_cases(dir)?.into_iter().map(|c| c.id).collect();
    baseline.validate_cases(&cases)
}
