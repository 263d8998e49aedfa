//! chuk-acp 0.3.2 (PyPI `chuk-acp`), a second real ACP client without an adapter, under the
//! whole suite. Its profile (clients/chuk-acp/chuk-acp.toml) lays down the agent config file with
//! `[files]` and observes the turn's end with data rules; chuk-acp-program.toml observes it with
//! an outside program (clients/chuk-acp/observer.py).
//!
//! Where chuk-acp comes from: `$CHUK_ACP` if set; else installed from `[install]` into a venv in
//! the cache (real_client.rs). Without python3 the tests skip and say so; with
//! `ACP_HARNESS_REQUIRE=chuk-acp` (set by .ci/run) they fail instead.

use crate::real_client;

use std::path::PathBuf;
use std::sync::Mutex;

use crate::real_client::{grade, run_one};
use acp_judge::checks::Grade;
use acp_judge::record::RunEnd;

static SERIAL: Mutex<()> = Mutex::new(());

fn profile(name: &str) -> PathBuf {
    real_client::workspace().join("clients/chuk-acp").join(name)
}

fn chuk_acp() -> Option<PathBuf> {
    real_client::program("chuk-acp", &profile("chuk-acp.toml"), "CHUK_ACP")
}

/// Every failure of the suite is in clients/chuk-acp/baseline.toml and every entry still fails.
fn chuk_acp_passes_the_suite_with_its_baseline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = chuk_acp() else { return };
    let spec = real_client::client(&profile("chuk-acp.toml"), &program);
    real_client::version(&spec, "0.3.2");
    // chuk-acp mostly waits: six cases per core use under one core (real_client::suite_jobs).
    // Each case starts Python: the newest releases and the regressions in `cargo test`
    // (real_client::assert_current_suite_green; ACP_REAL_CLIENT_CORPUS=full plays them all).
    let results =
        real_client::assert_current_suite_green(&spec, &profile("baseline.toml"), 20, &[]);
    // The observer graded turns: a completed one passes where the suite reads it.
    let observed = results
        .iter()
        .any(|r| real_client::observed(r, "[Stop reason: end_turn]"));
    assert!(observed, "no observed [Stop reason: …] in the suite");
}

/// The same suite and baseline with the outside observer (chuk-acp-program.toml): a program that
/// reads the client's streams must reach the same verdicts as the data rules, or the baseline,
/// written for the rules, would no longer match.
fn chuk_acp_program_passes_the_suite_with_its_baseline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = chuk_acp() else { return };
    let spec = real_client::client(&profile("chuk-acp-program.toml"), &program);
    // The same cases as the rules' test above, the same baseline: the program and the rules
    // agree.
    let results =
        real_client::assert_current_suite_green(&spec, &profile("baseline.toml"), 20, &[]);
    let observed = results
        .iter()
        .any(|r| real_client::observed(r, "[Stop reason: end_turn]"));
    assert!(
        observed,
        "the observer program reported no turn in the whole suite"
    );
}

/// The two findings of clients/README.md, read from one case each, under both observers.
fn chuk_acp_keeps_its_known_bugs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = chuk_acp() else { return };
    for name in ["chuk-acp.toml", "chuk-acp-program.toml"] {
        let spec = real_client::client(&profile(name), &program);
        // SIGINT: no session/cancel, the turn is shown cancelled, exit 130. The scenario needs
        // nothing more of the client once its Stop sent no session/cancel (the agent finishes
        // the command and answers), so the run completes and exit 130 is no crash.
        // claude-agent-acp 0.25.3 (recorded): Stop while a command runs that needed no answer.
        let r = run_one(&spec, "claude-agent-acp@0.25/cancel-mid-stream");
        let (g, m) = grade(&r, "cancel-stop");
        assert_eq!(*g, Grade::Fail, "{name}: {m}");
        assert!(m.contains("never sent session/cancel"), "{name}: {m}");
        let shown = real_client::observed(&r, "\"state\":\"cancelled\"");
        assert!(
            shown,
            "{name}: the cancelled turn was not observed; stderr: {}\ntranscript:\n{}",
            r.record.stderr_tail,
            real_client::transcript(&r)
        );
        assert_eq!(r.record.end, RunEnd::Completed, "{name}");
        assert_eq!(real_client::exit_code(&r), Some(130), "{name}");
        // A permission request is never answered.
        let r = run_one(&spec, "opencode@1.18/external-directory-write");
        match &r.record.end {
            RunEnd::Incomplete { reason, .. } => assert!(
                reason.contains("client sent no answer to request `perm`"),
                "{name}: {reason}"
            ),
            other => panic!("{name}: expected an incomplete run, got {other:?}"),
        }
    }
}

/// This file's tests, for the runner of real_clients/main.rs.
pub const TESTS: &[crate::Test] = &[
    (
        "chuk_acp_passes_the_suite_with_its_baseline",
        chuk_acp_passes_the_suite_with_its_baseline,
    ),
    (
        "chuk_acp_program_passes_the_suite_with_its_baseline",
        chuk_acp_program_passes_the_suite_with_its_baseline,
    ),
    (
        "chuk_acp_keeps_its_known_bugs",
        chuk_acp_keeps_its_known_bugs,
    ),
];
