//! `acp-harness run --baseline` and `--bless`, end to end with the reference client and one of
//! its mutants: a listed failure is `expected` (exit 0), a listed failure that is gone is
//! `stale` (exit 1), an unknown id and `--bless --filter` are bad input (exit 2), and a blessed
//! baseline makes the same run green.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const CASE: &str = "opencode@1.18/edit-permission";

fn run(client: &str, baseline: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_acp-harness"))
        .args(["run", "--client", client, "--baseline"])
        .arg(baseline)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("acp-harness runs")
}

fn grade_of(out: &Path, trial: &str) -> (String, String) {
    let text = std::fs::read_to_string(out.join("run.json")).expect("run.json");
    let run: Value = serde_json::from_str(&text).expect("run.json is JSON");
    let t = run["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["trials"].as_array().into_iter().flatten())
        .find(|t| t["name"] == trial)
        .unwrap_or_else(|| panic!("no trial {trial}"));
    (
        t["grade"].as_str().unwrap_or_default().to_owned(),
        t["message"].as_str().unwrap_or_default().to_owned(),
    )
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn listed_failures_are_expected_and_fixed_ones_stale() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    std::fs::write(
        &baseline,
        format!(
            "[expected.\"{CASE}::subject-kind\"]\nreason = \"shows every approval as a command\"\nissue = \"https://example.org/bb/1719\"\n"
        ),
    )
    .unwrap();
    let trial = format!("{CASE}::subject-kind");

    let out = dir.path().join("mutant");
    let o = run("mutant:always-command", &baseline, &out, &["--filter", CASE]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (grade, message) = grade_of(&out, &trial);
    assert_eq!(grade, "expected");
    assert!(
        message.starts_with(&format!(
            "expected fail (baseline \"{trial}\": shows every approval as a command; https://example.org/bb/1719)\n"
        )),
        "{message}"
    );

    let out = dir.path().join("reference");
    let o = run("reference", &baseline, &out, &["--filter", CASE]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let (grade, message) = grade_of(&out, &trial);
    assert_eq!(grade, "stale");
    assert!(message.contains("passed"), "{message}");
}

#[test]
fn unknown_ids_and_filtered_bless_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    std::fs::write(
        &baseline,
        "[expected.\"opencode@1.18/no-such-scenario::subject-kind\"]\nreason = \"r\"\n[expected.\"subject-kindd\"]\nreason = \"r\"\n",
    )
    .unwrap();
    let o = run("reference", &baseline, &dir.path().join("a"), &[]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("opencode@1.18/no-such-scenario::subject-kind"), "{t}");
    assert!(t.contains("subject-kindd"), "{t}");
    assert!(!dir.path().join("a/run.json").exists());

    let o = run(
        "reference",
        &dir.path().join("new.toml"),
        &dir.path().join("b"),
        &["--bless", "--filter", CASE],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--bless"), "{}", text(&o));
    assert!(!dir.path().join("new.toml").exists());
}

#[test]
fn bless_writes_a_baseline_that_makes_the_run_green() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("blessed.toml");
    let o = run(
        "mutant:always-command",
        &baseline,
        &dir.path().join("first"),
        &["--bless"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let written = std::fs::read_to_string(&baseline).expect("bless wrote the baseline");
    assert!(
        written.contains(&format!("[expected.\"{CASE}::subject-kind\"]")),
        "{written}"
    );
    assert!(written.contains("reason = \"blessed as fail: "), "{written}");

    let o = run(
        "mutant:always-command",
        &baseline,
        &dir.path().join("second"),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (grade, _) = grade_of(&dir.path().join("second"), &format!("{CASE}::subject-kind"));
    assert_eq!(grade, "expected");
}
