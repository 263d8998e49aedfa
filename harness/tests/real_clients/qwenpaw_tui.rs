//! paw 0.1.0 (PyPI `qwenpaw-tui`, github.com/ekzhu/paw), a real full-screen ACP client (a
//! Textual app), driven only through its screen by clients/qwenpaw-tui/qwenpaw-tui.toml: 23 lines
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

/// What issue 43 asks of a real full-screen client's profile, checked without installing it:
/// at most 25 lines of TOML (comments and blank lines aside), no program of ours (the client
/// from its registry, no observer or cancel command), and a baseline whose every entry names
/// the file of paw's sources that explains it.
fn the_profile_is_short_and_every_expected_failure_cites_paws_source() {
    let text = std::fs::read_to_string(profile("qwenpaw-tui.toml")).unwrap();
    let lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .count();
    assert!(lines <= 25, "{lines} lines of TOML");
    let toml: toml::Table = text.parse().unwrap();
    assert_eq!(
        toml["program"].as_str(),
        Some("paw"),
        "the registry's program"
    );
    assert!(toml["install"].get("pypi").is_some(), "installed from PyPI");
    assert!(
        toml["observer"].get("command").is_none(),
        "an observer program"
    );
    assert!(toml["cancel"].get("command").is_none(), "a cancel program");
    let baseline: toml::Table = std::fs::read_to_string(profile("baseline.toml"))
        .unwrap()
        .parse()
        .unwrap();
    let expected = baseline["expected"].as_table().unwrap();
    assert!(!expected.is_empty());
    let source = regex::Regex::new(r"\bpaw/[\w/]+\.py\b").unwrap();
    for (id, entry) in expected {
        let reason = entry["reason"].as_str().unwrap_or_default();
        assert!(
            source.is_match(reason),
            "{id}: the reason names no file of paw's sources: {reason}"
        );
    }
}

/// This file's tests, for the runner of real_clients/main.rs.
pub const TESTS: &[crate::Test] = &[
    (
        "paw_is_graded_through_its_screen_with_its_baseline",
        paw_is_graded_through_its_screen_with_its_baseline,
    ),
    (
        "the_profile_is_short_and_every_expected_failure_cites_paws_source",
        the_profile_is_short_and_every_expected_failure_cites_paws_source,
    ),
];
