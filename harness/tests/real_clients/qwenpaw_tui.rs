//! paw 0.1.0 (PyPI `qwenpaw-tui`, github.com/ekzhu/paw), a real full-screen ACP client (a
//! Textual app), driven only through its screen by clients/qwenpaw-tui/qwenpaw-tui.toml: 22 lines
//! of TOML and no program of ours. The cases below cover what the profile does (a typed prompt,
//! cards read from their box, every option reached with Tab and Enter, Stop, the turn's end on
//! the status bar, an agent that dies) and paw's known bugs, each in
//! clients/qwenpaw-tui/baseline.toml with the place in paw's sources that explains it.
//!
//! Where paw comes from: `$PAW` if set; else installed from `[install]` into a venv in the cache
//! (real_client.rs). Without python3 the test skips and says so; with
//! `ACP_HARNESS_REQUIRE=qwenpaw-tui` (set by .ci/run) it fails instead.

use crate::real_client;

use std::path::PathBuf;

use acp_harness::runner::RunConfig;
use acp_harness::suite;
use acp_judge::checks::Grade;

fn profile(name: &str) -> PathBuf {
    real_client::workspace()
        .join("clients/qwenpaw-tui")
        .join(name)
}

const CASES: &[&str] = &[
    "opencode@1.18/session-setup",
    "opencode@1.18/execute-permission[once]",
    "opencode@1.18/execute-permission[always]",
    "opencode@1.18/execute-permission[reject]",
    "codex-acp@0.13/auth-required",
    "claude-agent-acp@0.16/acpx-probe-cat-title",
    "opencode@1.18/external-directory-write",
    "claude-agent-acp@0.101/cancel-pending-permission",
    "regressions@synthetic/agent-dies-mid-turn",
];

fn paw_is_graded_through_its_screen_with_its_baseline() {
    let Some(program) = real_client::program("qwenpaw-tui", &profile("qwenpaw-tui.toml"), "PAW")
    else {
        return;
    };
    let spec = real_client::client(&profile("qwenpaw-tui.toml"), &program);
    real_client::version(&spec, "0.1.0");
    let cfg = RunConfig {
        jobs: 3,
        ..real_client::config()
    };
    let cases: Vec<_> = CASES
        .iter()
        .map(|id| suite::find_case(&cfg.scenarios_dir, id).expect("case exists"))
        .collect();
    let results = real_client::assert_cases_green(&spec, &profile("baseline.toml"), cases, &cfg);
    // What the profile read: cards from their box, every option of an `each` run reached.
    for r in &results {
        let id = &r.record.meta.case_id;
        if id.starts_with("opencode@1.18/execute-permission") {
            let t = r
                .trials
                .iter()
                .find(|t| t.check == "offered-options")
                .unwrap();
            assert_eq!(t.grade, Grade::Pass, "{id}: {}", t.message);
        }
    }
    assert!(
        results
            .iter()
            .any(|r| real_client::observed(r, "🔐 echo hello > hello.txt")),
        "no card read from paw's screen"
    );
}

/// This file's tests, for the runner of real_clients/main.rs.
pub const TESTS: &[crate::Test] = &[(
    "paw_is_graded_through_its_screen_with_its_baseline",
    paw_is_graded_through_its_screen_with_its_baseline,
)];
