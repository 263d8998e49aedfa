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
                    b.validate_for_suite(dir)?;
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
    let args = Arguments::from_args();
    let dir = match scenarios_dir(None) {
        Ok(d) => d,
        Err(e) => return single_failure("scenarios::load", format!("{e:#}"), &args),
    };
    let cases = match load_cases(&dir) {
        Ok(c) => c,
        Err(e) => return single_failure("scenarios::parse", format!("{e:#}"), &args),
    };
    let mut trials = Vec::new();
    for case in cases {
        let case = Arc::new(case);
        let cell: Arc<OnceLock<Vec<Verdict>>> = Arc::new(OnceLock::new());
        for check in all_checks() {
            let name = format!("{}::{}", case.id, check.id());
            let (case, cell, dir) = (Arc::clone(&case), Arc::clone(&cell), dir.clone());
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

/// One of N deterministic slices of the cases (`acp-harness run --shard K/N`), for splitting a run
/// across CI runners. A case's slice comes from a stable hash of its id (FNV-1a), so it stays in
/// the same slice when other cases are added or removed, and the N slices partition the cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 1-based.
    pub k: u32,
    pub n: u32,
}

impl Shard {
    /// Reads `K/N` (1 ≤ K ≤ N).
    pub fn parse(text: &str) -> Result<Shard, String> {
        let (k, n) = text
            .split_once('/')
            .ok_or_else(|| format!("--shard takes K/N (e.g. 2/4), got {text:?}"))?;
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("--shard takes K/N with whole numbers, got {text:?}"))
        };
        let (k, n) = (number(k)?, number(n)?);
        if n == 0 || k == 0 || k > n {
            return Err(format!(
                "--shard {text}: K must be between 1 and N, and N at least 1"
            ));
        }
        Ok(Shard { k, n })
    }

    /// True if the case `id` belongs to this slice.
    pub fn contains(&self, id: &str) -> bool {
        case_hash(id) % u64::from(self.n) == u64::from(self.k - 1)
    }
}

/// A stable hash of a case id: FNV-1a, 64 bits, the same across Rust versions and platforms
/// (unlike the std hasher), so shards and cache file names stay put.
pub fn case_hash(id: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.k, self.n)
    }
}

#[cfg(test)]
mod shard_tests {
    use super::Shard;

    #[test]
    fn the_slices_partition_the_cases_and_stay_put() {
        let ids: Vec<String> = (0..500).map(|i| format!("agent@1/scenario-{i}")).collect();
        for n in [1, 2, 3, 7] {
            let shards: Vec<Shard> = (1..=n).map(|k| Shard { k, n }).collect();
            for id in &ids {
                let owners = shards.iter().filter(|s| s.contains(id)).count();
                assert_eq!(owners, 1, "{id} in {owners} of {n} shards");
            }
            // No slice is empty or holds nearly everything.
            for s in &shards {
                let mine = ids.iter().filter(|id| s.contains(id)).count();
                assert!(mine > ids.len() / (2 * n as usize), "{s}: {mine}");
            }
        }
        // A case's slice depends on its id alone (fixed here so a change of hash is seen).
        assert!(Shard { k: 1, n: 1 }.contains("x"));
        let slice_of = |id: &str| (1..=4).find(|&k| Shard { k, n: 4 }.contains(id)).unwrap();
        assert_eq!(
            slice_of("opencode@1.18/edit-permission[once]"),
            slice_of("opencode@1.18/edit-permission[once]")
        );
    }

    #[test]
    fn bad_shards_are_refused_with_the_reason() {
        assert_eq!(Shard::parse("2/4"), Ok(Shard { k: 2, n: 4 }));
        for bad in ["0/2", "3/2", "1/0", "2", "a/b", "-1/2"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
        assert!(Shard::parse("5/4").unwrap_err().contains("between 1 and N"));
    }
}
