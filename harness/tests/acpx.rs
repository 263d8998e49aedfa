//! acpx 0.19.x, a real ACP client without an adapter (npm `acpx`), under the whole suite and
//! under the probes that need its terminal prompt.
//!
//! Where acpx comes from: `$ACPX` if set; else `<cache>/acpx@<version>/node_modules/.bin/acpx`
//! (cache: `$ACP_HARNESS_CACHE`, else `$XDG_CACHE_HOME/acp-harness`, else
//! `~/.cache/acp-harness`; version: `[install]` of clients/acpx/acpx.toml), installed there with
//! npm when missing. Without node and npm the tests skip and say so; with
//! `ACP_HARNESS_REQUIRE=acpx` (set by .ci/run) they fail instead.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use acp_harness::baseline::Baseline;
use acp_harness::checks::{Grade, all_checks};
use acp_harness::client_spec::ClientSpec;
use acp_harness::output::is_failing;
use acp_harness::record::RunEnd;
use acp_harness::runner::{self, CaseResult, RunConfig};
use acp_harness::suite;

/// acpx runs are heavy (node): one test at a time, so that step timeouts measure acpx and not
/// the machine's load.
static SERIAL: Mutex<()> = Mutex::new(());

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn profile(name: &str) -> PathBuf {
    workspace().join("clients/acpx").join(name)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

fn required() -> bool {
    std::env::var("ACP_HARNESS_REQUIRE").is_ok_and(|v| v.split(',').any(|s| s.trim() == "acpx"))
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

/// Finds or installs acpx. `Ok(None)`: skip (node/npm missing); `Err`: it should have worked.
fn locate() -> Result<Option<PathBuf>, String> {
    if let Some(path) = std::env::var_os("ACPX").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        return if path.exists() {
            Ok(Some(path))
        } else {
            Err(format!("ACPX={} does not exist", path.display()))
        };
    }
    let spec = ClientSpec::from_profile_with_program(&profile("acpx.toml"), "acpx")
        .map_err(|e| format!("{e:#}"))?;
    let install = spec
        .wire
        .install
        .ok_or("clients/acpx/acpx.toml has no [install]")?;
    let cache = cache_dir().ok_or("no cache directory: set ACP_HARNESS_CACHE or HOME")?;
    let prefix = cache.join(&install.npm);
    let program = prefix.join(&install.bin);
    if program.exists() {
        return Ok(Some(program));
    }
    if !runs("node") || !runs("npm") {
        return Ok(None);
    }
    eprintln!("installing {} into {} …", install.npm, prefix.display());
    std::fs::create_dir_all(&prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    let mut npm = tokio::process::Command::new("npm");
    npm.args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&prefix)
        .arg(&install.npm)
        .kill_on_drop(true);
    let status = runtime()
        .block_on(async { tokio::time::timeout(Duration::from_secs(600), npm.status()).await })
        .map_err(|_| "npm install did not finish within 10 minutes".to_owned())?
        .map_err(|e| format!("cannot run npm: {e}"))?;
    if !status.success() || !program.exists() {
        return Err(format!(
            "npm install {} failed ({status}); {} is missing",
            install.npm,
            program.display()
        ));
    }
    Ok(Some(program))
}

/// The acpx program, or `None` after printing why the test is skipped. Panics when acpx is
/// required or should have been found.
fn acpx() -> Option<PathBuf> {
    static FOUND: OnceLock<Result<Option<PathBuf>, String>> = OnceLock::new();
    match FOUND.get_or_init(locate) {
        Ok(Some(path)) => Some(path.clone()),
        Ok(None) if required() => {
            panic!("ACP_HARNESS_REQUIRE=acpx, but node and npm were not found to install acpx")
        }
        Ok(None) => {
            // Once, and straight to stderr: libtest captures eprintln! of a passing test, and a
            // skip must be seen.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| {
                let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: node and npm were not found, so acpx cannot be installed (install Node 20+ \
                 and npm, or set ACPX to an acpx 0.19 binary; ACP_HARNESS_REQUIRE=acpx turns this \
                 skip into a failure)"
                );
            });
            None
        }
        Err(e) => panic!("acpx: {e}"),
    }
}

fn client(program: &Path, name: &str) -> ClientSpec {
    ClientSpec::from_profile_with_program(&profile(name), &program.to_string_lossy())
        .unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

fn config() -> RunConfig {
    RunConfig::new(suite::scenarios_dir(None).expect("scenarios")).expect("run config")
}

fn run_one(client: &ClientSpec, case_id: &str) -> CaseResult {
    let cfg = config();
    let case = suite::find_case(&cfg.scenarios_dir, case_id).expect("case exists");
    runtime().block_on(runner::run_case(&case, client, &cfg))
}

fn grade<'a>(result: &'a CaseResult, check: &str) -> (&'a Grade, &'a str) {
    let t = result
        .trials
        .iter()
        .find(|t| t.check == check)
        .unwrap_or_else(|| panic!("no {check} trial"));
    (&t.grade, &t.message)
}

/// The whole suite against acpx.toml is green once clients/acpx/baseline.toml is applied: every
/// failure is a known, listed one, and no listed one has gone away.
#[test]
fn acpx_passes_the_suite_with_its_baseline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = acpx() else { return };
    let spec = client(&program, "acpx.toml");
    let rt = runtime();
    let version = rt
        .block_on(spec.probe_version(Duration::from_secs(30)))
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .expect("acpx --version");
    assert!(
        version.starts_with("0.19."),
        "clients/acpx/ describes acpx 0.19.x; {} is {version}",
        program.display()
    );
    let cfg = config();
    let cases = suite::load_cases(&cfg.scenarios_dir).expect("scenarios");
    let ids: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let baseline = Baseline::load(&profile("baseline.toml")).expect("baseline");
    let checks: Vec<&str> = all_checks().iter().map(|c| c.id()).collect();
    baseline
        .validate(&ids, &checks)
        .expect("baseline ids exist");
    let mut results = rt.block_on(runner::run_cases(cases, &spec, &cfg, |_| {}));
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
        "{} trial(s) fail against acpx {version} beyond clients/acpx/baseline.toml:\n\n{}",
        failing.len(),
        failing.join("\n\n")
    );
    // The observer really graded something: the probe's failure is an observed card.
    let probe = results
        .iter()
        .find(|r| r.record.meta.case_id == "claude-agent-acp@0.16/acpx-probe-cat-title")
        .expect("the probe ran");
    let (g, message) = grade(probe, "subject-kind");
    assert_eq!(*g, Grade::Expected, "{message}");
    assert!(message.contains("observer → harness"), "{message}");
}

/// What needs acpx's terminal prompt (clients.md §2.2): SIGINT with a request pending exits 5
/// (PERMISSION_DENIED), so the cancelled turn shows as failed; Ctrl-C at the prompt answers
/// reject without session/cancel; y/N cannot reach an allow_always option.
#[test]
fn acpx_on_a_terminal_keeps_its_known_bugs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = acpx() else { return };

    let tty = client(&program, "acpx-tty.toml");
    let r = run_one(&tty, "opencode@1.18/cancel-pending-permission");
    assert_eq!(r.record.end, RunEnd::Completed);
    let (g, m) = grade(&r, "cancel-stop");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("shows the turn as \"failed\""), "{m}");
    assert!(m.contains("acpx exited with code 5"), "{m}");
    let (g, m) = grade(&r, "offered-options");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("\"always\" (allow_always)"), "{m}");
    assert_eq!(*grade(&r, "subject-kind").0, Grade::Pass);

    let r = run_one(
        &tty,
        "qwen-code@0.14/exec-choose-each[proceed_always_project]",
    );
    match &r.record.end {
        RunEnd::Incomplete { reason, .. } => assert!(
            reason.contains(
                "no input of acpx-tty's prompt chooses option \"proceed_always_project\""
            ),
            "{reason}"
        ),
        other => panic!("expected an incomplete run, got {other:?}"),
    }

    let ctrl_c = client(&program, "acpx-tty-ctrl-c.toml");
    let r = run_one(&ctrl_c, "opencode@1.18/cancel-pending-permission");
    let (g, m) = grade(&r, "cancel-stop");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(
        m.contains("cancel answered with reject and no session/cancel"),
        "{m}"
    );

    // The default approve-reads mode approves the probe's `cat … | curl …` by itself.
    let reads = client(&program, "acpx-approve-reads.toml");
    let r = run_one(&reads, "claude-agent-acp@0.16/acpx-probe-cat-title");
    let approved = r.record.transcript.iter().any(|e| {
        e.direction == acp_fake_agents::transcript::Direction::ClientToAgent
            && e.json
                .as_ref()
                .and_then(|j| j.pointer("/result/outcome/optionId"))
                == Some(&serde_json::json!("allow"))
    });
    assert!(
        approved,
        "acpx did not auto-approve the cat … | curl request"
    );
}
