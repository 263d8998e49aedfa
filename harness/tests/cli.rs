//! The CLI: bad input gives one clear line and exit code 2; `list` launches nothing.

use std::process::Command;

fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acp-harness"))
}

#[test]
fn a_malformed_scenario_stops_the_run_with_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("broken.toml");
    std::fs::write(
        &file,
        "[scenario]\nid = \"broken\"\ntitle = \"t\"\nagent = \"a\"\nversion = \"1\"\nprovenance = [\"x\"]\n\n[[step]]\nsend = '{\"jsonrpc\":\"2.0\",,}'\n",
    )
    .unwrap();
    let out = harness()
        .args(["run", "--scenarios"])
        .arg(dir.path())
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("broken.toml:9:"), "{stderr}");
    assert!(!dir.path().join("out/run.json").exists());
}

#[test]
fn an_unwritable_out_directory_is_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let out = harness()
        .args(["run", "--out"])
        .arg(blocker.join("sub"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot create --out directory"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn wrong_flags_are_rejected_by_clap_with_usage() {
    let out = harness().args(["run", "--no-such-flag"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}

#[test]
fn list_names_every_trial_as_agent_version_scenario_check() {
    let out = harness()
        .args(["list", "--filter", "edit-permission"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("opencode@1.18/edit-permission") && stdout.contains("::subject-kind"),
        "{stdout}"
    );
    for line in stdout.lines() {
        let (case, check) = line.split_once("::").unwrap_or_else(|| panic!("{line}"));
        let (agent_version, scenario) = case.split_once('/').unwrap_or_else(|| panic!("{line}"));
        assert!(agent_version.contains('@'), "{line}");
        assert!(scenario.contains("edit-permission"), "{line}");
        assert!(!check.is_empty() && !check.contains(' '), "{line}");
    }
}

#[test]
fn list_into_a_closed_pipe_ends_quietly() {
    use std::io::Read;
    let mut child = harness()
        .arg("list")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Read one byte, then close the pipe: the rest of the listing hits a closed pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    stdout.read_exact(&mut byte).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// Stdout is a pipe whose reader is gone before the process starts, so its first write fails
/// with EPIPE: `acp-harness rules | head -0`, decided before any race.
fn into_a_pipe_nobody_reads(args: &[&str]) -> std::process::Output {
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    harness()
        .args(args)
        .stdout(std::process::Stdio::from(writer))
        .output()
        .unwrap()
}

#[test]
fn printing_into_a_closed_pipe_ends_quietly_with_success() {
    for args in [&["rules"][..], &["rules", "--json"], &["coverage"]] {
        let out = into_a_pipe_nobody_reads(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
    }
}

#[test]
fn rules_lists_the_catalogue_as_a_table_and_as_json() {
    let out = harness().arg("rules").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let table = String::from_utf8_lossy(&out.stdout);
    let r43 = table
        .lines()
        .find(|l| l.starts_with("R43 "))
        .expect("R43 is listed");
    assert!(r43.contains("MUST") && r43.contains("client"), "{r43}");
    assert!(table.contains("https://agentclientprotocol.com/protocol/prompt-turn#cancellation"));

    let out = harness().args(["rules", "--json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let rules: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<&str> = rules.iter().filter_map(|r| r["id"].as_str()).collect();
    assert!(ids.contains(&"R43") && ids.contains(&"R59"), "{ids:?}");
    let unique: std::collections::BTreeSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len());
    assert!(
        rules
            .iter()
            .all(|r| r["requirement"].is_string() && r["link"].is_string())
    );
}

/// A transcript where the client answers a permission request with an option it was not offered.
fn unoffered_answer_transcript() -> String {
    use acp_vocab::transcript::{Direction, Recorder};
    let rec = Recorder::new();
    let frames = [
        (
            Direction::ClientToAgent,
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#,
        ),
        (
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#,
        ),
        (
            Direction::ClientToAgent,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp/case/work","mcpServers":[]}}"#,
        ),
        (
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}"#,
        ),
        (
            Direction::AgentToClient,
            r#"{"jsonrpc":"2.0","id":5,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"c"},"options":[{"optionId":"once","name":"Allow","kind":"allow_once"}]}}"#,
        ),
        (
            Direction::ClientToAgent,
            r#"{"jsonrpc":"2.0","id":5,"result":{"outcome":{"outcome":"selected","optionId":"forever"}}}"#,
        ),
    ];
    for (dir, raw) in frames {
        rec.record(1, dir, raw.as_bytes());
    }
    rec.snapshot()
        .iter()
        .map(|e| serde_json::to_string(e).unwrap() + "\n")
        .collect()
}

#[test]
fn grade_judges_a_transcript_file_alone_and_names_the_rule() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("case.jsonl");
    std::fs::write(&file, unoffered_answer_transcript()).unwrap();
    let out = harness().arg("grade").arg(&file).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("fail  offered-options"), "{stdout}");
    let rule_line = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("R59 (MUST) "))
        .expect("the failure starts with its rule");
    assert!(
        rule_line.contains("https://agentclientprotocol.com/"),
        "{rule_line}"
    );
    assert!(stdout.contains("selected optionId \"forever\""), "{stdout}");
    // Without a run.json next to it, the output says what it had to assume.
    assert!(
        stdout.contains("not known from the transcript alone"),
        "{stdout}"
    );
    assert!(stdout.contains("how the run ended"), "{stdout}");
}

#[test]
fn grade_reports_a_missing_or_malformed_file_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = harness()
        .arg("grade")
        .arg(dir.path().join("nope.jsonl"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cannot read transcript"), "{stderr}");

    let file = dir.path().join("bad.jsonl");
    let mut text = unoffered_answer_transcript();
    text.insert_str(text.find('\n').unwrap() + 1, "{\"i\": \"x\"}\n");
    std::fs::write(&file, text).unwrap();
    let out = harness().arg("grade").arg(&file).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("bad.jsonl:2:"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    for junk in [&b""[..], b"\n\n", b"\xff\xfe"] {
        std::fs::write(&file, junk).unwrap();
        let out = harness().arg("grade").arg(&file).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

#[test]
fn help_shows_the_quick_start_commands_one_per_line() {
    for flag in ["--help", "-h"] {
        let out = harness().arg(flag).output().unwrap();
        assert!(out.status.success());
        let help = String::from_utf8_lossy(&out.stdout);
        // clap re-wraps doc-comment paragraphs; these lines must come out as written.
        for line in [
            "\nQuick start:\n  acp-harness run\n",
            "\n  acp-harness run --client '[\"./my-client\",\"--acp-harness-adapter\"]'\n",
            "\n  acp-harness replay 'opencode@1.18/edit-permission' --client …\n",
        ] {
            assert!(help.contains(line), "{flag}: no line {line:?} in:\n{help}");
        }
    }
}

/// Every case runs in a directory tree of its own in the system's temporary directory; once the
/// run is over none is left (they are removed on a thread of their own while the run goes on,
/// and the run waits for it).
#[test]
fn a_run_leaves_no_case_directories_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let out = harness()
        .env("TMPDIR", &tmp)
        .args([
            "run",
            "--filter",
            "opencode@1.18/session-setup",
            "--filter",
            "codex-acp@1.6/edit-file",
            "--filter",
            "qwen-code@0.14/cancel-pending-permission",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("out/run.json")).unwrap()).unwrap();
    let cases = run["cases"].as_array().unwrap();
    assert!(cases.len() >= 3, "{} cases", cases.len());
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("acp-case-"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
}

/// A warning (a SHOULD broken) does not fail a run, and the summary counts it as a warning, not
/// as a failing trial; under --strict it is one.
#[test]
fn a_warning_is_counted_as_a_warning_unless_strict() {
    let dir = tempfile::tempdir().unwrap();
    for (strict, success, line) in [
        (false, true, "What to fix first: 1 cause behind 1 warning\n"),
        (
            true,
            false,
            "What to fix first: 1 cause behind 1 failing trial\n",
        ),
    ] {
        let mut cmd = harness();
        cmd.args([
            "run",
            "--client",
            "mutant:any-protocol-version",
            "--filter",
            "unsupported-protocol-version::session-open",
            "--out",
        ])
        .arg(dir.path().join(format!("out-{strict}")));
        if strict {
            cmd.arg("--strict");
        }
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.success(), success, "{stdout}");
        assert!(stdout.contains(line), "{stdout}");
    }
}

/// `diff --same-grades` fails on any grade that moved; `--intermittent` excuses, and still lists,
/// the trials an intermittent entry of the client's baseline names (a race in the client).
#[test]
fn same_grades_fails_on_a_moved_grade_unless_an_intermittent_entry_names_it() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../reports/tests/fixtures/reference/run.json");
    let dir = tempfile::tempdir().expect("temp dir");
    let old = dir.path().join("old.json");
    let new = dir.path().join("new.json");
    std::fs::copy(&fixture, &old).expect("copy the fixture");
    let mut run: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).expect("fixture")).expect("json");
    let trial = &mut run["cases"][0]["trials"][0];
    assert_eq!(trial["name"], "acme@1.0/edit-approve::subject-kind");
    trial["grade"] = "fail".into();
    trial["message"] = "a failure under load".into();
    std::fs::write(&new, run.to_string()).expect("write the new run");
    let baseline = |intermittent: bool| {
        let path = dir.path().join(format!("baseline-{intermittent}.toml"));
        let text = format!(
            "[expected.\"acme@1.0/edit-approve::subject-kind\"]\nreason = \"a race in the client\"\nintermittent = {intermittent}\n"
        );
        std::fs::write(&path, text).expect("write a baseline");
        path
    };
    let diff = |extra: &[&std::path::Path]| {
        let mut cmd = harness();
        cmd.args(["diff", "--same-grades"]);
        for b in extra {
            cmd.arg("--intermittent").arg(b);
        }
        cmd.arg(&old).arg(&new).output().expect("diff runs")
    };
    assert_eq!(diff(&[]).status.code(), Some(1), "a moved grade");
    let steady = diff(&[&baseline(false)]);
    assert_eq!(
        steady.status.code(),
        Some(1),
        "an entry that is not intermittent"
    );
    let racy = diff(&[&baseline(true)]);
    let out = String::from_utf8_lossy(&racy.stdout);
    assert_eq!(racy.status.code(), Some(0), "{out}");
    assert!(
        out.contains("acme@1.0/edit-approve::subject-kind moved, as an intermittent entry"),
        "{out}"
    );
}
