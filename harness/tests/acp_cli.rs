//! acp-cli 0.3.1 (crates.io `acp-cli`), a third real ACP client without an adapter, under the
//! whole suite. Its profile (clients/acp-cli/acp-cli.toml) writes the agent into acp-cli's config
//! file with `[files]` and observes the turn's end from its exit status; its baseline
//! (clients/acp-cli/baseline.toml) lists what it gets wrong, each with the place in its sources.
//!
//! Where acp-cli comes from: `$ACP_CLI` if set; else `cargo install` of `[install]` into the
//! cache (real_client/mod.rs; a few minutes, once). With `ACP_HARNESS_REQUIRE=acp-cli` (set by
//! .ci/run) a client that cannot be had fails the test.

mod real_client;

use std::path::PathBuf;

use acp_judge::checks::Grade;
use acp_vocab::transcript::Direction;
use real_client::grade;

fn profile(name: &str) -> PathBuf {
    real_client::workspace().join("clients/acp-cli").join(name)
}

/// Every failure of the suite is in clients/acp-cli/baseline.toml and every entry still fails;
/// the worst of them, an execute approved by its title, is on the wire as such.
#[test]
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
