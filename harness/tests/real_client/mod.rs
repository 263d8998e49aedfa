//! Shared by the tests of real clients without an adapter (acpx.rs, chuk_acp.rs): finding or
//! installing the client named by a profile's `[install]`, and running cases against it.
//!
//! Where a client comes from: `$<ENV>` if set; else `<cache>/<package>/<bin>` (cache:
//! `$ACP_HARNESS_CACHE`, else `$XDG_CACHE_HOME/acp-harness`, else `~/.cache/acp-harness`),
//! installed there when missing (npm: `npm install --prefix`; PyPI: `python3 -m venv` and its
//! pip). Without the installer the tests skip and say so; with the client's name in
//! `ACP_HARNESS_REQUIRE` (set by .ci/run) they fail instead.

#![allow(dead_code)] // each test file uses its own part

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_harness::baseline::Baseline;
use acp_harness::client_spec::ClientSpec;
use acp_harness::output::is_failing;
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

fn required(name: &str) -> bool {
    std::env::var("ACP_HARNESS_REQUIRE").is_ok_and(|v| v.split(',').any(|s| s.trim() == name))
}

fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("ACP_HARNESS_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("acp-harness")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/acp-harness")))
}

/// True if `program --version` runs.
fn runs(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs an install step, bounded.
fn install_step(mut cmd: tokio::process::Command, what: &str) -> Result<(), String> {
    cmd.kill_on_drop(true);
    let status = runtime()
        .block_on(async { tokio::time::timeout(Duration::from_secs(600), cmd.status()).await })
        .map_err(|_| format!("{what} did not finish within 10 minutes"))?
        .map_err(|e| format!("cannot run {what}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

/// Finds or installs the client of `profile`. `Ok(None)`: skip (no installer); `Err`: it
/// should have worked.
fn locate(profile: &Path, env: &str) -> Result<Option<PathBuf>, String> {
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
    let cache = cache_dir().ok_or("no cache directory: set ACP_HARNESS_CACHE or HOME")?;
    let prefix = cache.join(install.package());
    let program = prefix.join(&install.bin);
    if program.exists() {
        return Ok(Some(program));
    }
    eprintln!(
        "installing {} into {} …",
        install.package(),
        prefix.display()
    );
    if let Some(npm_spec) = &install.npm {
        if !runs("node") || !runs("npm") {
            return Ok(None);
        }
        std::fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
        let mut npm = tokio::process::Command::new("npm");
        npm.args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&prefix)
            .arg(npm_spec);
        install_step(npm, &format!("npm install {npm_spec}"))?;
    } else if let Some(requirement) = &install.pypi {
        if !runs("python3") {
            return Ok(None);
        }
        let mut venv = tokio::process::Command::new("python3");
        venv.args(["-m", "venv"]).arg(&prefix);
        install_step(venv, "python3 -m venv")?;
        let mut pip = tokio::process::Command::new(prefix.join("bin/pip"));
        pip.args([
            "install",
            "--disable-pip-version-check",
            "--quiet",
            requirement,
        ])
        .args(&install.pip_args);
        install_step(pip, &format!("pip install {requirement}"))?;
    } else if let Some((name, version)) = install.cargo_crate() {
        // Built from source by the cargo that runs this test: a few minutes, once per cache.
        let mut cargo = tokio::process::Command::new(env!("CARGO"));
        cargo
            .args(["install", "--locked", "--quiet", "--root"])
            .arg(&prefix)
            .args([name, "--version", version]);
        install_step(cargo, &format!("cargo install {name}@{version}"))?;
    }
    if !program.exists() {
        return Err(format!(
            "installing {} left no {}",
            install.package(),
            program.display()
        ));
    }
    Ok(Some(program))
}

/// The client's program, or `None` after printing why the test is skipped. Panics when the
/// client is required (`ACP_HARNESS_REQUIRE` names `name`) or should have been found.
pub fn program(name: &str, profile: &Path, env: &str) -> Option<PathBuf> {
    match locate(profile, env) {
        Ok(Some(path)) => Some(path),
        Ok(None) if required(name) => {
            panic!("ACP_HARNESS_REQUIRE={name}, but there is no installer for {name} here")
        }
        Ok(None) => {
            // Straight to stderr: libtest captures eprintln! of a passing test, and a skip must
            // be seen.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: {name} cannot be installed here (no node/npm or python3; or set {env} to \
                 its program; ACP_HARNESS_REQUIRE={name} turns this skip into a failure)"
            );
            None
        }
        Err(e) => panic!("{name}: {e}"),
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
/// instead of 255 s at two, still under a core. One whose startup is heavy cannot: acpx's
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
    let ids: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let baseline = Baseline::load(baseline_file).expect("baseline");
    baseline.validate_cases(&ids).expect("baseline ids exist");
    let mut results = runtime().block_on(runner::run_cases(cases, spec, &cfg, |_| {}));
    assert_eq!(results.len(), ids.len(), "every case ran");
    baseline.apply(&mut results);
    let failing: Vec<String> = results
        .iter()
        .flat_map(|r| {
            r.trials
                .iter()
                .filter(|t| is_failing(t.grade, false))
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
