//! Outside observers (`observer.command`): the example program (clients/chuk-acp/observer.py)
//! prints valid control events from the streams it is given; a program that crashes, hangs,
//! prints what is not JSON or an event the schema refuses ends the case as `adapter_error` with
//! the reason, the wire checks are still graded, and the program is reaped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use acp_harness::client_spec::ClientSpec;
use acp_harness::control::validate_control;
use acp_harness::runner::{self, CaseResult, RunConfig};
use acp_harness::suite;
use acp_judge::checks::{Grade, all_checks};
use acp_judge::record::RunEnd;
use serde_json::{Value, json};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The events clients/chuk-acp/observer.py prints for these stream lines, each valid.
fn example_observer(lines: &[Value]) -> Vec<Value> {
    let mut child = Command::new("python3")
        .arg(workspace().join("clients/chuk-acp/observer.py"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let events: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for e in &events {
        validate_control(e).unwrap_or_else(|err| panic!("{e}: {err}"));
    }
    events
}

#[test]
fn the_example_observer_prints_valid_turn_events() {
    let prompt = json!({"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"s1","prompt":[]}});
    let events = example_observer(&[
        json!({"stream":"stdout","time":0.1,"text":"[Stop reason: end_turn]"}), // before any prompt
        json!({"stream":"acp","time":0.2,"dir":"c2a","text":prompt.to_string()}),
        json!({"stream":"stdout","time":0.3,"text":"Done."}),
        json!({"stream":"stdout","time":0.4,"text":"[Stop reason: refusal]"}),
        json!({"stream":"stdout","time":0.5,"text":"Interrupted by user"}),
        json!({"stream":"stderr","time":0.55,"text":"(No response from agent)"}),
        json!({"stream":"exit","time":0.6,"text":"exit code 0","code":0,"signal":null}),
    ]);
    let states: Vec<&str> = events
        .iter()
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["refused", "cancelled", "failed"]);
    assert_eq!(events[0]["sessionId"], "s1");
    assert_eq!(events[0]["observed"]["evidence"], "[Stop reason: refusal]");
    assert_eq!(events[2]["observed"]["from"], "stderr");
}

/// chuk-acp gave up before any prompt reached the agent: its error line, at the exit, is the
/// error for the session that never opened.
#[test]
fn the_example_observer_reports_a_session_that_never_opened() {
    let events = example_observer(&[
        json!({"stream":"stderr","time":0.1,"text":"Error connecting to agent: "}),
        json!({"stream":"exit","time":0.2,"text":"exit code 1","code":1,"signal":null}),
    ]);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["type"], "error");
    assert_eq!(
        events[0]["observed"]["evidence"],
        "Error connecting to agent: "
    );
}

/// A wire-only "client" that never connects, observed by `command`.
fn run_with_observer(command: &[&str]) -> CaseResult {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("client.toml");
    let text = format!(
        "name = \"silent\"\ncontrol = \"none\"\nargv = [\"sh\", \"-c\", \"echo hello; sleep 1\", \"{{prompt}}\"]\n[observer]\ncommand = {}\nreports = [\"turn\"]\n",
        serde_json::to_string(command).unwrap()
    );
    std::fs::write(&profile, text).unwrap();
    let spec = ClientSpec::from_profile(&profile).expect("profile");
    let mut cfg = RunConfig::new(suite::scenarios_dir(None).unwrap()).unwrap();
    cfg.step_timeout = Duration::from_millis(500);
    let case = suite::find_case(&cfg.scenarios_dir, "opencode@1.18/external-directory-write")
        .expect("case");
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(runner::run_case(&case, &spec, &cfg))
}

fn adapter_error(result: &CaseResult) -> &str {
    match &result.record.end {
        RunEnd::AdapterError { reason } => reason,
        other => panic!("expected an adapter error, got {other:?}"),
    }
}

#[test]
fn a_failing_observer_is_an_adapter_error_and_the_wire_is_still_graded() {
    let r = run_with_observer(&["sh", "-c", "cat >/dev/null; echo boom >&2; exit 3"]);
    let reason = adapter_error(&r);
    assert!(
        reason.contains("the observer exited with exit status: 3"),
        "{reason}"
    );
    assert!(reason.contains("its stderr ends: boom"), "{reason}");
    for check in all_checks() {
        let t = r.trials.iter().find(|t| t.check == check.id()).unwrap();
        if check.needs_control_plane() {
            assert_eq!(t.grade, Grade::Error, "{}: {}", t.check, t.message);
            assert!(t.message.contains("exit status: 3"), "{}", t.message);
        } else {
            assert_ne!(t.grade, Grade::Error, "{}: {}", t.check, t.message);
        }
    }
    let noted = r
        .record
        .transcript
        .iter()
        .any(|e| matches!(e.note(), Some(acp_vocab::note::Note::ObserverError { .. })));
    assert!(noted, "no observer_error note");

    let r = run_with_observer(&["sh", "-c", "echo not json; cat >/dev/null"]);
    assert!(
        adapter_error(&r).contains("a line that is not JSON"),
        "{r:?}",
        r = r.record.end
    );

    let r = run_with_observer(&[
        "sh",
        "-c",
        "echo '{\"type\":\"turn\",\"sessionId\":\"s\"}'; cat >/dev/null",
    ]);
    let reason = adapter_error(&r);
    assert!(reason.contains("an invalid event"), "{reason}");

    let r = run_with_observer(&["sh", "-c", "echo '{\"type\":\"hello\"}'; cat >/dev/null"]);
    assert!(adapter_error(&r).contains("not an observed event"));

    let r = run_with_observer(&["/nonexistent/observer"]);
    assert!(adapter_error(&r).contains("could not start the observer"));
}

#[test]
fn a_hanging_observer_is_killed_and_reaped() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!("echo $$ > {}; exec sleep 60", pidfile.display());
    let r = run_with_observer(&["sh", "-c", &script]);
    let reason = adapter_error(&r);
    assert!(reason.contains("did not exit within"), "{reason}");
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let proc = PathBuf::from(format!("/proc/{}", pid.trim()));
    assert!(!proc.exists(), "the observer {} is still there", pid.trim());
}
