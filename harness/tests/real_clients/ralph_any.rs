//! ralph-any 0.2.0 (PyPI `ralph-any`), a sixth real ACP client without an adapter, under the
//! whole suite. Its ACP client is claude-code-acp 0.5.1's `AcpClient` on agent-client-protocol
//! 0.8.1; it answers every permission request by itself, by option id
//! (clients/ralph-any/ralph-any.toml), and its baseline (clients/ralph-any/baseline.toml) lists
//! what it gets wrong, each with the place in the wheels' sources.
//!
//! Where ralph-any comes from: `$RALPH` if set; else installed from `[install]` into a venv in the
//! cache with the SDK release it imports (real_client.rs). Without python3 the tests skip and
//! say so; with `ACP_HARNESS_REQUIRE=ralph-any` (set by .ci/run) they fail instead.

use crate::real_client;

use std::path::PathBuf;
use std::sync::Mutex;

use crate::real_client::{client_sent, grade, run_one};
use acp_harness::client_spec::ClientSpec;
use acp_judge::checks::Grade;

/// The two tests one after the other: the suite keeps every core busy, and ralph-any must start
/// its agent within the step timeout.
static SERIAL: Mutex<()> = Mutex::new(());

fn profile(name: &str) -> PathBuf {
    real_client::workspace()
        .join("clients/ralph-any")
        .join(name)
}

fn ralph() -> Option<ClientSpec> {
    let profile = profile("ralph-any.toml");
    let program = real_client::program("ralph-any", &profile, "RALPH")?;
    Some(real_client::client(&profile, &program))
}

/// Every failure of the suite is in clients/ralph-any/baseline.toml and every entry still fails;
/// each whole-case (cancel) entry is backed by a cancel that sent nothing.
fn ralph_any_passes_the_suite_with_its_baseline() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(spec) = ralph() else { return };
    real_client::version(
        &spec,
        "0.2.0 claude-code-acp 0.5.1 agent-client-protocol 0.8.1",
    );
    // ralph-any does not wait much, but it is slow to start: about a second of CPU to import
    // claude-code-acp (and the Claude Agent SDK it imports) before it spawns the agent. Its suite is
    // CPU-bound: one case per core (real_client::suite_jobs). Its profile's `startup_ms` gives it
    // the time to start beyond the 5 s step timeout, which a few cases needed on a busy machine.
    let results = real_client::assert_current_suite_green(&spec, &profile("baseline.toml"), 1, &[]);
    let mut cancelled = 0;
    for r in &results {
        let id = &r.record.meta.case_id;
        let (g, entry) = grade(r, "cancel-stop");
        if *g != Grade::Expected || !entry.contains(&format!("(baseline \"{id}::*\"")) {
            continue;
        }
        cancelled += 1;
        real_client::assert_stop_sent_no_cancel(r, "ralph-any");
    }
    // 16 in the whole suite; the newest releases hold some of them.
    assert!(
        cancelled > 0,
        "no cancel case was backed by a cancel that sent nothing"
    );
    // The observer read turns from ralph-any's own words.
    assert!(
        results
            .iter()
            .any(|r| real_client::observed(r, "✓ Iteration 1 complete")),
        "no observed \"✓ Iteration 1 complete\" in the whole suite"
    );
}

/// The findings of clients/README.md ("ralph-any"), each read from one case.
fn ralph_any_keeps_its_known_bugs() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(spec) = ralph() else { return };

    // An "always" option picked by itself, by its id, although "Allow" (allow_once) was offered
    // next to it; the turn's end read from ralph-any's own line.
    let r = run_one(&spec, "claude-agent-acp@0.25/edit-permission[allow_always]");
    let (g, m) = grade(&r, "auto-approval");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(
        m.contains("answered selected \"allow_always\" (allow_always)")
            && m.contains("a lasting grant the user never gave"),
        "{m}"
    );
    let (g, m) = grade(&r, "turn-end");
    assert_eq!(*g, Grade::Pass, "{m}");
    assert!(
        real_client::observed(&r, "✓ Iteration 1 complete"),
        "ralph-any's \"✓ Iteration 1 complete\" was not observed"
    );

    // Where no option id is one it knows, the first option, whatever its kind.
    let r = run_one(&spec, "codex-acp@1.6/deceptive-other-write-outside");
    let (g, m) = grade(&r, "auto-approval");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(
        m.contains("answered selected \"allow_permissions_session\" (allow_always)"),
        "{m}"
    );

    // SIGINT: no session/cancel; the agent is closed instead, and "⚠ Loop cancelled".
    let r = run_one(&spec, "qwen-code@0.21/cancel-mid-stream");
    let (g, m) = grade(&r, "cancel-stop");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("the client never sent session/cancel"), "{m}");
    assert!(
        !client_sent(&r, "session/cancel"),
        "ralph-any sent session/cancel"
    );
    assert!(
        real_client::observed(&r, "⚠ Loop cancelled"),
        "ralph-any's \"⚠ Loop cancelled\" was not observed; stderr: {}\ntranscript:\n{}",
        r.record.stderr_tail,
        real_client::transcript(&r)
    );

    // The stopReason is dropped: a refusal is shown as a completed iteration.
    let r = run_one(&spec, "opencode@1.18/refusal-stop");
    let (g, m) = grade(&r, "turn-end");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(
        m.contains("with stopReason \"refusal\"")
            && m.contains("the client shows the turn as \"completed\""),
        "{m}"
    );

    // An agent that dies leaves it waiting: mid-turn, and before answering initialize.
    let r = run_one(&spec, "regressions@synthetic/agent-dies-mid-turn");
    let (g, m) = grade(&r, "turn-end");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("never reported that the turn ended"), "{m}");
    let r = run_one(&spec, "regressions@synthetic/agent-dies-before-initialize");
    let (g, m) = grade(&r, "session-open");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(
        m.contains("never told the user that the session could not be opened"),
        "{m}"
    );
}

/// This file's tests, for the runner of real_clients/main.rs.
pub const TESTS: &[crate::Test] = &[
    (
        "ralph_any_passes_the_suite_with_its_baseline",
        ralph_any_passes_the_suite_with_its_baseline,
    ),
    (
        "ralph_any_keeps_its_known_bugs",
        ralph_any_keeps_its_known_bugs,
    ),
];
