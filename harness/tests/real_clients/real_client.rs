//! Shared by the tests of real clients (the modules beside this one): finding or
//! installing the client named by a profile's `[install]`, and running cases against it.
//!
//! Where a client comes from: `$<ENV>` if set; else the harness's cache, installed there once
//! when missing (`acp_harness::client_spec::install`, the same code as `acp-harness install`,
//! which `.ci/run` runs first). A client that cannot be installed is skipped with the command
//! that installs it; with the client's name (or `*`) in `ACP_HARNESS_REQUIRE` (set by .ci/run)
//! the test fails instead.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use acp_harness::baseline::Baseline;
use acp_harness::client_spec::{ClientSpec, install};
use acp_harness::runner::{self, CaseResult, RunConfig};
use acp_harness::suite;
use acp_judge::checks::Grade;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// True if `ACP_HARNESS_REQUIRE` (comma-separated names, `*` for all) names `name`.
fn required(name: &str) -> bool {
    std::env::var("ACP_HARNESS_REQUIRE")
        .is_ok_and(|v| v.split(',').any(|s| s.trim() == name || s.trim() == "*"))
}

/// Finds or installs the client of `profile`. `Ok(None)`: not installable here (why printed).
fn locate(name: &str, profile: &Path, env: &str) -> Result<Option<PathBuf>, String> {
    if let Some(path) = std::env::var_os(env).filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return if path.exists() {
            Ok(Some(path))
        } else {
            Err(format!("{env}={} does not exist", path.display()))
        };
    }
    let spec =
        ClientSpec::from_profile_with_program(profile, "client").map_err(|e| format!("{e:#}"))?;
    let install = spec
        .wire
        .install
        .ok_or_else(|| format!("{} has no [install]", profile.display()))?;
    let cache = install::cache_dir().ok_or("no cache directory: set ACP_HARNESS_CACHE or HOME")?;
    // Progress straight to stderr: libtest captures eprintln! of a passing test.
    match install::ensure(&install, &cache, &mut std::io::stderr()) {
        Ok(program) => Ok(Some(program)),
        Err(e) => {
            let why = format!(
                "{name} cannot be installed here: {e}\n  to install it by hand: {}\n  (or set \
                 {env} to its program; ACP_HARNESS_REQUIRE={name} turns this skip into a failure)",
                install.command_line(&cache)
            );
            if required(name) {
                return Err(why);
            }
            let _ = writeln!(std::io::stderr(), "SKIPPED: {why}");
            Ok(None)
        }
    }
}

/// The outcome of locating each client in this process, so that two tests of one client
/// install it (and report a failed install) once.
static LOCATED: Mutex<BTreeMap<String, Result<Option<PathBuf>, String>>> =
    Mutex::new(BTreeMap::new());

/// The client's program, or `None` after printing why the test is skipped. Panics when the
/// client is required (`ACP_HARNESS_REQUIRE` names `name`) and cannot be installed, or when
/// `$<env>` names a missing program.
pub fn program(name: &str, profile: &Path, env: &str) -> Option<PathBuf> {
    let mut located = LOCATED.lock().unwrap_or_else(|e| e.into_inner());
    let first = !located.contains_key(name);
    let outcome = located
        .entry(name.to_owned())
        .or_insert_with(|| locate(name, profile, env))
        .clone();
    drop(located);
    match outcome {
        Ok(found) => found,
        Err(e) if first => panic!("{name}: {e}"),
        Err(_) => panic!("{name}: cannot be installed (reported by the first test that tried)"),
    }
}

pub fn client(profile: &Path, program: &Path) -> ClientSpec {
    ClientSpec::from_profile_with_program(profile, &program.to_string_lossy())
        .unwrap_or_else(|e| panic!("{}: {e:#}", profile.display()))
}

pub fn config() -> RunConfig {
    RunConfig::new(suite::scenarios_dir(None).expect("scenarios")).expect("run config")
}

/// Cases in flight at once for a real client's whole suite: `per_core` per core, chosen by each
/// client's test from what its suite costs. A client that mostly waits (on step timeouts where
/// it never answers a request, on settle times) can take many: chuk-acp 0.3.2's suite used 9 %
/// of two cores with one case per core (33 s of CPU in 339 s), and with six per core 79 s
/// instead of 255 s at two, still under a core; at twenty per core 111 s instead of 157 s at
/// six. One whose startup is heavy cannot: acpx's
/// suite keeps two cores busy at two per core (Node), and at eight cases on two busy cores acpx
/// did not start the agent within the 5 s step timeout. `ACP_REAL_CLIENT_JOBS=<n>` overrides.
fn suite_jobs(per_core: usize) -> usize {
    std::env::var("ACP_REAL_CLIENT_JOBS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()) * per_core)
        .max(1)
}

pub fn run_one(client: &ClientSpec, case_id: &str) -> CaseResult {
    let cfg = config();
    let case = suite::find_case(&cfg.scenarios_dir, case_id).expect("case exists");
    runtime().block_on(runner::run_case(&case, client, &cfg))
}

pub fn grade<'a>(result: &'a CaseResult, check: &str) -> (&'a Grade, &'a str) {
    let t = result
        .trials
        .iter()
        .find(|t| t.check == check)
        .unwrap_or_else(|| panic!("no {check} trial"));
    (&t.grade, &t.message)
}

/// The client's version (`version_command`), checked to start with `prefix`.
pub fn version(spec: &ClientSpec, prefix: &str) -> String {
    let version = runtime()
        .block_on(spec.probe_version(Duration::from_secs(30)))
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("{}: no version", spec.name));
    assert!(
        version.contains(prefix),
        "the profile describes {} {prefix}; the program is {version}",
        spec.name
    );
    version
}

/// Runs the whole suite with `baseline` applied, `jobs_per_core` cases in flight per core
/// ([`suite_jobs`]), and asserts that no trial still fails (a failure not in the baseline, or a
/// stale entry); returns the results.
pub fn assert_suite_green(
    spec: &ClientSpec,
    baseline_file: &Path,
    jobs_per_core: usize,
) -> Vec<CaseResult> {
    let cfg = RunConfig {
        jobs: suite_jobs(jobs_per_core),
        ..config()
    };
    let cases = suite::load_cases(&cfg.scenarios_dir).expect("scenarios");
    assert_cases_green(spec, baseline_file, cases, &cfg)
}

/// [`assert_suite_green`] on the cases a CPU-heavy client plays in `cargo test`: each agent's
/// newest release and the regressions, which is what agents send today, in about a quarter of
/// the suite's time (ralph-any's whole suite is 3½ minutes of Python starts on two cores, and
/// `.ci/run` must stay under 25). `ACP_REAL_CLIENT_CORPUS=full` plays the whole suite, as
/// `ci/load-proof` and `acp-harness run` always do. Every baseline entry must still name a case
/// of the whole suite; entries of the versions not played are not judged. `also`: cases of older
/// releases the test reads findings from, played too.
pub fn assert_current_suite_green(
    spec: &ClientSpec,
    baseline_file: &Path,
    jobs_per_core: usize,
    also: &[&str],
) -> Vec<CaseResult> {
    if std::env::var("ACP_REAL_CLIENT_CORPUS").is_ok_and(|v| v == "full") {
        return assert_suite_green(spec, baseline_file, jobs_per_core);
    }
    let cfg = RunConfig {
        jobs: suite_jobs(jobs_per_core),
        ..config()
    };
    let cases = suite::load_cases(&cfg.scenarios_dir).expect("scenarios");
    let ids: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let newest = newest_versions(ids.iter().map(String::as_str));
    let current: Vec<_> = cases
        .into_iter()
        .filter(|c| {
            also.contains(&c.id.as_str())
                || agent_version(&c.id).is_some_and(|(agent, version)| {
                    agent == "regressions" || newest.get(agent).is_some_and(|v| *v == version)
                })
        })
        .collect();
    assert!(!current.is_empty(), "no case of a newest agent release");
    assert_cases_green(spec, baseline_file, current, &cfg)
}

/// `("claude-agent-acp", "0.101")` of `claude-agent-acp@0.101/edit-file`.
fn agent_version(case_id: &str) -> Option<(&str, &str)> {
    let (profile, _) = case_id.split_once('/')?;
    profile.split_once('@')
}

/// The newest version of each agent among `case_ids`, by numeric components.
fn newest_versions<'a>(case_ids: impl Iterator<Item = &'a str>) -> BTreeMap<&'a str, &'a str> {
    let numeric = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    let mut newest: BTreeMap<&str, &str> = BTreeMap::new();
    for (agent, version) in case_ids.filter_map(agent_version) {
        let entry = newest.entry(agent).or_insert(version);
        if numeric(version) > numeric(entry) {
            *entry = version;
        }
    }
    newest
}

/// Runs `cases` with `baseline_file` applied and asserts that no trial still fails; returns the
/// results.
pub fn assert_cases_green(
    spec: &ClientSpec,
    baseline_file: &Path,
    cases: Vec<acp_fake_agents::scenario::Case>,
    cfg: &RunConfig,
) -> Vec<CaseResult> {
    let ids: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let baseline = Baseline::load(baseline_file).expect("baseline");
    let every_case: Vec<String> = suite::load_cases(&cfg.scenarios_dir)
        .expect("scenarios")
        .into_iter()
        .map(|c| c.id)
        .collect();
    baseline
        .validate_cases(&every_case)
        .expect("baseline ids exist");
    let mut results = runtime().block_on(runner::run_cases(cases, spec, cfg, |_| {}));
    assert_eq!(results.len(), ids.len(), "every case ran");
    baseline.apply(&mut results);
    let failing: Vec<String> = results
        .iter()
        .flat_map(|r| {
            r.trials
                .iter()
                .filter(|t| t.grade.is_failing(false))
                .map(move |t| {
                    format!(
                        "{}::{} [{}]\n{}",
                        r.record.meta.case_id,
                        t.check,
                        t.grade.as_str(),
                        t.message
                    )
                })
        })
        .collect();
    assert!(
        failing.is_empty(),
        "{} trial(s) fail against {} beyond {}:\n\n{}",
        failing.len(),
        spec.name,
        baseline_file.display(),
        failing.join("\n\n")
    );
    results
}

/// True if the observer reported, in `result`, an event whose raw line contains `needle`.
pub fn observed(result: &CaseResult, needle: &str) -> bool {
    result.record.transcript.iter().any(|e| {
        e.direction == acp_vocab::transcript::Direction::ObserverToHarness && e.raw.contains(needle)
    })
}

/// The case's transcript, one entry a line (direction, then the raw text): for the message of
/// an assertion about what a real client did.
pub fn transcript(result: &CaseResult) -> String {
    result
        .record
        .transcript
        .iter()
        .map(|e| format!("{:?} {}\n", e.direction, e.raw))
        .collect()
}

/// The exit code in the harness's `client_exited` note, if the client exited by itself.
pub fn exit_code(result: &CaseResult) -> Option<i64> {
    result.record.transcript.iter().find_map(|e| {
        let json = e.json()?;
        (e.direction == acp_vocab::transcript::Direction::Note
            && json.get("type")?.as_str()? == "client_exited")
            .then(|| json.get("exit_code")?.as_i64())?
    })
}

/// True if the client wrote a frame to the agent whose `method` is `method`.
pub fn client_sent(result: &CaseResult, method: &str) -> bool {
    result.record.transcript.iter().any(|e| {
        e.direction == acp_vocab::transcript::Direction::ClientToAgent
            && e.json()
                .and_then(|j| j.get("method"))
                .and_then(|m| m.as_str())
                == Some(method)
    })
}

/// Asserts what backs a whole-case "no cancel" baseline entry: the user pressed Stop in the case
/// and the client sent no `session/cancel`.
pub fn assert_stop_sent_no_cancel(result: &CaseResult, client: &str) {
    let id = &result.record.meta.case_id;
    let user_cancel = result
        .record
        .transcript
        .iter()
        .any(|e| matches!(e.note(), Some(acp_vocab::note::Note::UserCancel { .. })));
    assert!(user_cancel, "{id}: the user never cancelled");
    assert!(
        !client_sent(result, "session/cancel"),
        "{id}: {client} sent session/cancel"
    );
}
