//! Bad clients and bad input never hang or crash the harness: each is graded `crash`/`timeout`
//! within its timeout, and no process outlives the run.

use std::path::Path;
use std::time::Duration;

use acp_fake_agents::machine_time::Stamp;

use acp_harness::client_spec::ClientSpec;
use acp_harness::runner::{CaseResult, RunConfig, run_case};
use acp_harness::suite;
use acp_judge::checks::Grade;
use acp_judge::record::RunEnd;

/// A minimal exchange with one permission request, independent of the scenario corpus (which
/// grows and changes): `robustness/1/permission.toml` in a fresh folder.
fn scenario_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("robustness/1");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(
        folder.join("permission.toml"),
        r#"[scenario]
id = "permission"
title = "one prompt, one permission request"
agent = "robustness"
version = "1"
provenance = ["harness/tests/robustness.rs: a minimal ACP exchange"]

[[step]]
user = "new_session"

[[step]]
expect = "initialize"
reply = '{"protocolVersion":1,"agentCapabilities":{}}'

[[step]]
expect = "session/new"
reply = '{"sessionId":"ses_r"}'

[[step]]
user = "prompt"
text = "go"

[[step]]
expect = "session/prompt"
as = "prompt"

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"session/request_permission","params":{"sessionId":"ses_r","toolCall":{"toolCallId":"call_1","title":"ls","kind":"execute","status":"pending","rawInput":{"command":"ls"}},"options":[{"optionId":"yes","name":"Yes","kind":"allow_once"},{"optionId":"no","name":"No","kind":"reject_once"}]}}'
as = "perm"

[[step]]
user = "choose"
request = "perm"
kind = "allow_once"

[[step]]
await = "perm"

[[step]]
reply_to = "prompt"
result = '{"stopReason":"end_turn"}'
"#,
    )
    .unwrap();
    dir
}

fn one_case(client: ClientSpec, step_ms: u64) -> (CaseResult, Duration) {
    let scenarios = scenario_dir();
    let dir = scenarios.path().canonicalize().unwrap();
    let mut cfg = RunConfig::new(dir.clone()).unwrap();
    cfg.step_timeout = Duration::from_millis(step_ms);
    cfg.case_timeout = Duration::from_secs(10);
    let case = suite::find_case(&dir, "robustness@1/permission").unwrap();
    // Machine time, the clock of the harness's own budgets: a busy machine does not fail the
    // bound (docs/timeouts.md).
    let started = Stamp::now();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_case(&case, &client, &cfg));
    (result, started.elapsed().machine)
}

fn argv(args: &[&str]) -> ClientSpec {
    ClientSpec::from_argv(args.iter().map(|s| s.to_string()).collect()).unwrap()
}

fn all_graded(result: &CaseResult, grade: Grade) {
    for t in &result.trials {
        assert_eq!(t.grade, grade, "{}: {}", t.check, t.message);
        assert!(!t.message.is_empty());
    }
}

#[test]
fn a_client_that_is_not_executable_is_a_crash() {
    let (result, took) = one_case(argv(&["/nonexistent/acp-client"]), 500);
    assert!(
        matches!(&result.record.end, RunEnd::Crash { reason, .. } if reason.contains("could not start client")),
        "{:?}",
        result.record.end
    );
    all_graded(&result, Grade::Crash);
    assert!(took < Duration::from_secs(3));
}

#[test]
fn a_client_that_exits_at_once_is_a_crash_with_its_status_and_stderr() {
    let (result, took) = one_case(argv(&["sh", "-c", "echo boom >&2; exit 3"]), 500);
    match &result.record.end {
        RunEnd::Crash { exit_code, .. } => assert_eq!(*exit_code, Some(3)),
        other => panic!("expected crash, got {other:?}"),
    }
    assert!(result.record.stderr_tail.contains("boom"));
    all_graded(&result, Grade::Crash);
    assert!(
        result.trials[0].message.contains("exit code 3"),
        "{}",
        result.trials[0].message
    );
    assert!(took < Duration::from_secs(3));
}

#[test]
fn a_client_that_never_answers_times_out_within_its_step_timeout() {
    let (result, took) = one_case(argv(&["sleep", "60"]), 300);
    assert!(
        matches!(result.record.end, RunEnd::Incomplete { .. }),
        "{:?}",
        result.record.end
    );
    all_graded(&result, Grade::Timeout);
    // step timeout + 2 s shutdown grace at most
    assert!(
        took < Duration::from_millis(300 + 2000 + 1000),
        "took {took:?}"
    );
}

#[test]
fn a_client_killed_by_a_signal_is_a_crash_naming_the_signal() {
    let (result, _) = one_case(argv(&["sh", "-c", "kill -SEGV $$"]), 500);
    match &result.record.end {
        RunEnd::Crash { signal, .. } => assert_eq!(signal.as_deref(), Some("SIGSEGV")),
        other => panic!("expected crash, got {other:?}"),
    }
}

/// Scans /proc for live processes whose command line or environment mentions `marker`.
fn processes_mentioning(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.chars().all(|c| c.is_ascii_digit()) || pid == std::process::id().to_string() {
            continue;
        }
        for file in ["cmdline", "environ"] {
            if let Ok(bytes) = std::fs::read(Path::new("/proc").join(&pid).join(file))
                && String::from_utf8_lossy(&bytes).contains(marker)
            {
                found.push(format!(
                    "pid {pid}: {}",
                    String::from_utf8_lossy(&bytes).replace('\0', " ")
                ));
                break;
            }
        }
    }
    found
}

#[test]
fn no_process_outlives_the_run() {
    // A client whose child ignores the shutdown and keeps running: the process group kill must
    // take it down too. The marker identifies this test's processes.
    let marker = format!("acp-leftover-marker-{}", std::process::id());
    let env_marker = format!("ACP_LEFTOVER={marker}");
    let (result, _) = one_case(
        argv(&["env", &env_marker, "sh", "-c", "sleep 300 & exec sleep 301"]),
        200,
    );
    assert!(!matches!(result.record.end, RunEnd::Completed));
    let (ok, _) = one_case(ClientSpec::reference().unwrap(), 5000);
    assert!(
        matches!(ok.record.end, RunEnd::Completed),
        "{:?}",
        ok.record.end
    );
    let left = processes_mentioning(&marker);
    assert!(
        left.is_empty(),
        "processes left behind:\n{}",
        left.join("\n")
    );
    // The reference run's relay and client are gone too: nothing mentions its case directory.
    let case_dir = ok
        .record
        .workspace
        .parent()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let left = processes_mentioning(&case_dir);
    assert!(
        left.is_empty(),
        "processes left behind:\n{}",
        left.join("\n")
    );
}
