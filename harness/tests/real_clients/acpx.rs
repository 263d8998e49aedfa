//! acpx 0.19.x, a real ACP client without an adapter (npm `acpx`), under the whole suite and
//! under the probes that need its terminal prompt. Its profiles (clients/acpx/) carry acpx's
//! observer as data; nothing in the harness knows acpx.
//!
//! Where acpx comes from: `$ACPX` if set; else installed from `[install]` of
//! clients/acpx/acpx.toml into the cache (real_client.rs). Without node and npm the tests
//! skip and say so; with `ACP_HARNESS_REQUIRE=acpx` (set by .ci/run) they fail instead.

use crate::real_client;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::real_client::{grade, run_one};
use acp_harness::baseline::Baseline;
use acp_harness::client_spec::ClientSpec;
use acp_harness::fuzz::{self, Driver, DriverConfig, PermissionTurn};
use acp_judge::checks::Grade;
use acp_judge::record::RunEnd;

/// acpx runs are heavy (node): one test at a time, so that step timeouts measure acpx and not
/// the machine's load.
static SERIAL: Mutex<()> = Mutex::new(());

fn profile(name: &str) -> PathBuf {
    real_client::workspace().join("clients/acpx").join(name)
}

fn acpx() -> Option<PathBuf> {
    real_client::program("acpx", &profile("acpx.toml"), "ACPX")
}

fn client(program: &Path, name: &str) -> ClientSpec {
    real_client::client(&profile(name), program)
}

/// The whole suite against acpx.toml is green once clients/acpx/baseline.toml is applied: every
/// failure is a known, listed one, and no listed one has gone away.
fn acpx_passes_the_suite_with_its_baseline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = acpx() else { return };
    let spec = client(&program, "acpx.toml");
    real_client::version(&spec, "0.19.");
    // Node: two cases per core keep both cores busy (real_client::suite_jobs).
    let probe_case = "claude-agent-acp@0.16/acpx-probe-cat-title";
    let results =
        real_client::assert_current_suite_green(&spec, &profile("baseline.toml"), 2, &[probe_case]);
    // The observer really graded something: the probe's failure is an observed card.
    let probe = results
        .iter()
        .find(|r| r.record.meta.case_id == probe_case)
        .expect("the probe ran");
    let (g, message) = grade(probe, "subject-kind");
    assert_eq!(*g, Grade::Expected, "{message}");
    assert!(message.contains("observer → harness"), "{message}");
}

/// What needs acpx's terminal prompt (docs/clients.md §2.2): SIGINT with a request pending
/// exits 5 (PERMISSION_DENIED), so the cancelled turn shows as failed; Ctrl-C at the prompt
/// answers reject without session/cancel; y/N cannot reach an allow_always option.
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
    // An option the profile's inputs cannot reach is a limit of the profile: not applicable.
    match &r.record.end {
        RunEnd::NotApplicable { reason } => assert!(
            reason.contains(
                "no input of acpx-tty's profile reaches option \"proceed_always_project\""
            ),
            "{reason}"
        ),
        other => panic!("expected a not_applicable run, got {other:?}"),
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
        e.direction == acp_vocab::transcript::Direction::ClientToAgent
            && e.json().and_then(|j| j.pointer("/result/outcome/optionId"))
                == Some(&serde_json::json!("allow"))
    });
    assert!(
        approved,
        "acpx did not auto-approve the cat … | curl request"
    );
    // … and the wire alone says so: its declared approve-reads policy never covers an execute.
    let (g, m) = grade(&r, "auto-approval");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("effective kind execute (announced at #"), "{m}");
    // A kindless request titled "Read …" that asks for write access outside the workspace is
    // approved as a read too (title guess), and reads outside the workspace go through although
    // acpx calls --cwd the session's filesystem boundary.
    let r = run_one(&reads, "codex-acp@0.13/deceptive-other-write-outside");
    let (g, m) = grade(&r, "auto-approval");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("effective kind other"), "{m}");
    let r = run_one(&reads, "claude-agent-acp@0.85/deceptive-read-outside");
    let (g, m) = grade(&r, "auto-approval");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("outside the workspace"), "{m}");
}

fn seed(name: &str) -> PermissionTurn {
    let path = real_client::workspace()
        .join("fuzz/seeds/permission_mapping")
        .join(name);
    fuzz::decode(&std::fs::read(path).expect("seed exists")).expect("seed decodes")
}

fn assert_subject_kind(verdict: &fuzz::verdict::Verdict, grade: Grade) {
    let trial = verdict
        .trials
        .iter()
        .find(|t| t.check == "subject-kind")
        .expect("subject-kind graded");
    assert_eq!(trial.grade, grade, "{}", trial.message);
}

/// The fuzz driver reaches acpx, which has no adapter: each turn is a one-case run of the turn's
/// regression scenario (fuzz/README.md, "A client without an adapter"). A seed acpx maps right
/// passes; one where it takes the subject from the request alone is a finding that reproduces on
/// a fresh acpx; with a baseline whose check-wide entry expects that check's failures
/// (`ACP_HARNESS_BASELINE`) the same turn is no finding, its trial graded `expected`.
fn the_fuzz_driver_plays_acpx_one_case_per_turn() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = acpx() else { return };
    let mut cfg = DriverConfig::from_env().expect("driver config");
    cfg.client = client(&program, "acpx.toml");
    cfg.baseline = None;
    assert!(!cfg.has_adapter());
    let mut driver = Driver::new(cfg.clone()).expect("driver");

    let clean = driver
        .play(&seed("codex-ts-sparse-edit.json"))
        .expect("acpx shows a sparse edit request as a file change");
    assert_subject_kind(&clean.verdict, Grade::Pass);

    let turn = seed("claude-read-other-no-kind.json");
    let finding = driver
        .play(&turn)
        .expect_err("acpx shows a read requested as `other` as [other]");
    let s = &finding.summary;
    assert!(s.contains("subject-kind [fail]"), "{s}");
    assert!(
        s.contains("reproduces on a freshly started client: yes"),
        "{s}"
    );
    assert!(s.contains("observer → harness"), "{s}");
    // Replayed as every fuzz finding is, not as the generated case (no scenario holds it).
    assert!(
        s.contains("repro: cargo run -p acp-harness -- fuzz-to-scenario <crash artifact>"),
        "{s}"
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("baseline.toml");
    std::fs::write(
        &path,
        "[expected.\"subject-kind\"]\nreason = \"takes the kind from the request alone\"\n",
    )
    .expect("baseline written");
    let baseline = Baseline::load(&path).expect("baseline loads");
    cfg.baseline = Some(baseline.check_wide().expect("a check-wide entry"));
    let mut driver = Driver::new(cfg).expect("driver");
    let known = driver.play(&turn).expect("a known failure is no finding");
    assert_subject_kind(&known.verdict, Grade::Expected);
}

/// This file's tests, for the runner of real_clients/main.rs.
pub const TESTS: &[crate::Test] = &[
    (
        "acpx_passes_the_suite_with_its_baseline",
        acpx_passes_the_suite_with_its_baseline,
    ),
    (
        "acpx_on_a_terminal_keeps_its_known_bugs",
        acpx_on_a_terminal_keeps_its_known_bugs,
    ),
    (
        "the_fuzz_driver_plays_acpx_one_case_per_turn",
        the_fuzz_driver_plays_acpx_one_case_per_turn,
    ),
];
