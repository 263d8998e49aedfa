//! acp-cli 0.3.1 (crates.io `acp-cli`), a third real ACP client without an adapter, under the
//! whole suite. Its profile (clients/acp-cli/acp-cli.toml) writes the agent into acp-cli's config
//! file with `[files]` and observes the turn's end from its exit status; its baseline
//! (clients/acp-cli/baseline.toml) lists what it gets wrong, each with the place in its sources;
//! acp-cli-approve-all.toml and baseline-approve-all.toml do the same for `--approve-all`.
//!
//! Where acp-cli comes from: `$ACP_CLI` if set; else `cargo install` of `[install]` into the
//! cache (real_client.rs; a few minutes, once). With `ACP_HARNESS_REQUIRE=acp-cli` (set by
//! .ci/run) a client that cannot be had fails the test.

use crate::real_client;

use std::path::PathBuf;

use crate::real_client::grade;
use acp_judge::checks::Grade;
use acp_vocab::transcript::Direction;

fn profile(name: &str) -> PathBuf {
    real_client::workspace().join("clients/acp-cli").join(name)
}

/// Every failure of the suite is in clients/acp-cli/baseline.toml and every entry still fails;
/// the worst of them, an execute approved by its title, is on the wire as such.
fn acp_cli_passes_the_suite_with_its_baseline() {
    let Some(program) = real_client::program("acp-cli", &profile("acp-cli.toml"), "ACP_CLI") else {
        return;
    };
    let spec = real_client::client(&profile("acp-cli.toml"), &program);
    real_client::version(&spec, "0.3.1");
    // acp-cli is a small Rust program and mostly waits (on step timeouts where it never sends
    // session/cancel): four cases per core (real_client::suite_jobs).
    let results = real_client::assert_suite_green(&spec, &profile("baseline.toml"), 4);
    // --approve-reads approved the bash command titled "Read" by itself: the selected option is
    // on the wire, and auto-approval's failure is the baseline's entry.
    let deceptive = results
        .iter()
        .find(|r| r.record.meta.case_id == "opencode@1.18/deceptive-bare-read-title")
        .expect("the deceptive case ran");
    let approved = deceptive.record.transcript.iter().any(|e| {
        e.direction == Direction::ClientToAgent
            && e.json().and_then(|j| j.pointer("/result/outcome/outcome"))
                == Some(&serde_json::json!("selected"))
    });
    assert!(approved, "acp-cli did not approve the request titled Read");
    let (g, message) = grade(deceptive, "auto-approval");
    assert_eq!(*g, Grade::Expected, "{message}");
    assert!(message.contains("effective kind execute"), "{message}");
}

/// `--approve-all` (clients/acp-cli/acp-cli-approve-all.toml): every failure is in
/// baseline-approve-all.toml, and every auto-approval failure is the one it names, an
/// allow_always picked by acp-cli itself: claude-agent-acp 0.25 offers "Always Allow" first, and
/// acp-cli answers it on the wire although "Allow" (allow_once) was offered too.
fn acp_cli_approve_all_grants_always_by_itself() {
    let profile = profile("acp-cli-approve-all.toml");
    let Some(program) = real_client::program("acp-cli", &profile, "ACP_CLI") else {
        return;
    };
    let spec = real_client::client(&profile, &program);
    // This profile differs from acp-cli.toml only in its policy, and the suite above plays the
    // whole corpus: here the newest releases, the regressions and the edit case read below are
    // enough (`ACP_REAL_CLIENT_CORPUS=full` plays everything).
    let edit_cases = ["allow", "allow_always", "reject"]
        .map(|run| format!("claude-agent-acp@0.25/edit-permission[{run}]"));
    let also: Vec<&str> = edit_cases.iter().map(String::as_str).collect();
    let results = real_client::assert_current_suite_green(
        &spec,
        &self::profile("baseline-approve-all.toml"),
        4,
        &also,
    );
    let mut expected = 0;
    for r in &results {
        let (g, message) = grade(r, "auto-approval");
        // The null-id case times out (its own entries), every check of it with it.
        if *g == Grade::Expected && r.record.meta.case_id != "regressions@fuzz/duplicate-labels" {
            expected += 1;
            assert!(
                message.contains("is allow_always: a lasting grant the user never gave"),
                "{}: {message}",
                r.record.meta.case_id
            );
        }
    }
    assert!(expected > 0, "no allow_always approval was found");
    let edit = results
        .iter()
        .find(|r| {
            r.record.meta.case_id == "claude-agent-acp@0.25/edit-permission"
                || r.record
                    .meta
                    .case_id
                    .starts_with("claude-agent-acp@0.25/edit-permission[")
        })
        .expect("the edit case ran");
    let offered_once = edit.record.transcript.iter().any(|e| {
        e.direction == Direction::AgentToClient
            && e.json()
                .and_then(|j| j.pointer("/params/options"))
                .is_some_and(|o| o.to_string().contains("\"allow_once\""))
    });
    let answered_always = edit.record.transcript.iter().any(|e| {
        e.direction == Direction::ClientToAgent
            && e.json().and_then(|j| j.pointer("/result/outcome/optionId"))
                == Some(&serde_json::json!("allow_always"))
    });
    assert!(
        offered_once && answered_always,
        "claude-agent-acp@0.25/edit-permission: allow_once offered {offered_once}, allow_always answered {answered_always}"
    );
}

/// This file's tests, for the runner of real_clients/main.rs.
pub const TESTS: &[crate::Test] = &[
    (
        "acp_cli_passes_the_suite_with_its_baseline",
        acp_cli_passes_the_suite_with_its_baseline,
    ),
    (
        "acp_cli_approve_all_grants_always_by_itself",
        acp_cli_approve_all_grants_always_by_itself,
    ),
];
