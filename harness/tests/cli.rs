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
