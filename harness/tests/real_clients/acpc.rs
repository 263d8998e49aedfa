//! acpc 0.1.0 (PyPI `acpc`), a fourth real ACP client without an adapter, under the whole suite.
//! It decides permission requests by itself, at its non-terminal level `read`
//! (clients/acpc/acpc.toml), so this is where `auto-approval` meets a real client's own policy.
//!
//! Where acpc comes from: `$ACPC` if set; else installed from `[install]` into a venv in the cache
//! with the SDK release it imports (real_client.rs). Without python3 the tests skip and say
//! so; with `ACP_HARNESS_REQUIRE=acpc` (set by .ci/run) they fail instead.

use crate::real_client;

use std::path::PathBuf;
use std::sync::Mutex;

use crate::real_client::{grade, run_one};
use acp_judge::checks::Grade;

static SERIAL: Mutex<()> = Mutex::new(());

fn profile(name: &str) -> PathBuf {
    real_client::workspace().join("clients/acpc").join(name)
}

fn acpc() -> Option<PathBuf> {
    real_client::program("acpc", &profile("acpc.toml"), "ACPC")
}

/// Every failure of the suite is in clients/acpc/baseline.toml and every entry still fails.
fn acpc_passes_the_suite_with_its_baseline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = acpc() else { return };
    let spec = real_client::client(&profile("acpc.toml"), &program);
    real_client::version(&spec, "0.1.0");
    // acpc mostly waits (on settle times, and on the agent-death cases it never leaves by
    // itself): six cases per core. Each case starts Python: the newest releases and the
    // regressions in `cargo test` (ACP_REAL_CLIENT_CORPUS=full plays them all).
    let results = real_client::assert_current_suite_green(&spec, &profile("baseline.toml"), 6, &[]);
    // The observer read turns from acpc's own JSON line, not only from its exit status.
    let observed = results
        .iter()
        .any(|r| real_client::observed(r, "acpc printed session_ended, stop_reason end_turn"));
    assert!(observed, "no observed session_ended in the suite");
}

/// The findings of clients/README.md ("acpc"), each read from one case.
fn acpc_keeps_its_known_bugs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(program) = acpc() else { return };
    let spec = real_client::client(&profile("acpc.toml"), &program);

    // A write outside the project whose request says `other` is approved at the `read` level.
    let r = run_one(&spec, "opencode@1.18/external-directory-write");
    let (g, m) = grade(&r, "auto-approval");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(
        m.contains("was approved by the client itself") && m.contains("effective kind edit"),
        "{m}"
    );

    // An edit it refuses is answered `cancelled`, not with the request's reject option.
    let r = run_one(&spec, "claude-agent-acp@0.85/edit-permission[allow-once]");
    let (g, m) = grade(&r, "auto-approval");
    assert_eq!(*g, Grade::Warn, "{m}");
    assert!(m.contains("was answered cancelled"), "{m}");

    // An agent that dies mid-turn leaves acpc waiting for an answer that never comes.
    let r = run_one(&spec, "regressions@synthetic/agent-dies-mid-turn");
    let (g, m) = grade(&r, "turn-end");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("never reported that the turn ended"), "{m}");
}

/// This file's tests, for the runner of real_clients/main.rs.
pub const TESTS: &[crate::Test] = &[
    (
        "acpc_passes_the_suite_with_its_baseline",
        acpc_passes_the_suite_with_its_baseline,
    ),
    ("acpc_keeps_its_known_bugs", acpc_keeps_its_known_bugs),
];
