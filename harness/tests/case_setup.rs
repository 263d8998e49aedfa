//! `[[setup]]` end to end: the runner creates a scenario's setup in the case directory before the
//! client starts, records the symlinks there in the case record (`symlinks`), and a setup that
//! cannot be created is a harness error naming the entry, never the client's fault.

use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_harness::client_spec::ClientSpec;
use acp_harness::runner::{CaseResult, RunConfig, run_case};
use acp_harness::suite;
use acp_judge::record::RunEnd;

fn run(dir: &Path, case_id: &str) -> CaseResult {
    let dir = dir.canonicalize().unwrap();
    let mut cfg = RunConfig::new(dir.clone()).unwrap();
    cfg.step_timeout = Duration::from_secs(5);
    cfg.case_timeout = Duration::from_secs(20);
    let case = suite::find_case(&dir, case_id).unwrap();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_case(&case, &ClientSpec::reference().unwrap(), &cfg))
}

#[test]
fn the_symlink_of_a_setup_exists_during_the_run_and_is_recorded() {
    let scenarios = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let result = run(&scenarios, "opencode@1.18/deceptive-symlink-escape");
    let record = &result.record;
    assert_eq!(record.end, RunEnd::Completed, "{:?}", record.end);
    assert!(
        result.trials.iter().all(|t| !t.grade.is_failing(true)),
        "{:?}",
        result.trials
    );
    assert_eq!(
        record.symlinks,
        [(record.workspace.join("docs"), record.outside.clone())]
            .into_iter()
            .collect(),
        "the link ${{cwd}}/docs -> ${{outside}} made by [[setup]]"
    );
    // The case directory is gone after the run; only the record remembers the link.
    assert!(!record.workspace.exists());
}

#[test]
fn a_setup_that_cannot_be_created_is_a_harness_error_naming_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let folder: PathBuf = dir.path().join("setup/1");
    std::fs::create_dir_all(&folder).unwrap();
    // Both entries name one file on disk (through the link): the second finds it there.
    std::fs::write(
        folder.join("collide.toml"),
        r#"[scenario]
id = "collide"
title = "two setup entries for one file"
agent = "setup"
version = "1"
provenance = ["harness/tests/case_setup.rs"]

[[setup]]
symlink = "${cwd}/docs"
target = "${outside}"

[[setup]]
file = "${outside}/x"

[[setup]]
file = "${cwd}/docs/x"

[[step]]
delay_ms = 1
"#,
    )
    .unwrap();
    let result = run(dir.path(), "setup@1/collide");
    match &result.record.end {
        RunEnd::HarnessError { reason } => assert!(
            reason.contains("[[setup]] at collide.toml:15") && reason.contains("File exists"),
            "{reason}"
        ),
        other => panic!("expected a harness error, got {other:?}"),
    }
}
