//! `acp-harness run --baseline` and `--bless`, end to end with the reference client and one of
//! its mutants: a listed failure is `expected` (exit 0), a listed failure that is gone is
//! `stale` (exit 1), an unknown id and `--bless --filter` are bad input (exit 2), and a blessed
//! baseline makes the same run green.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

/// Cases in flight for a whole-corpus run: the reference client's cases mostly wait on pipes, so
/// six per core keep the cores busy (`run`'s default, one per core, leaves them mostly idle).
fn jobs() -> String {
    (std::thread::available_parallelism().map_or(2, |n| n.get()) * 6).to_string()
}

fn run(client: &str, baseline: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_acp-harness"))
        .args(["run", "--jobs", &jobs(), "--client", client, "--baseline"])
        .arg(baseline)
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("acp-harness runs")
}

fn trials(out: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(out.join("run.json")).expect("run.json");
    let run: Value = serde_json::from_str(&text).expect("run.json is JSON");
    run["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["trials"].as_array().cloned().unwrap_or_default())
        .collect()
}

fn grade_of(out: &Path, trial: &str) -> (String, String) {
    let t = trials(out)
        .into_iter()
        .find(|t| t["name"] == trial)
        .unwrap_or_else(|| panic!("no trial {trial}"));
    (
        t["grade"].as_str().unwrap_or_default().to_owned(),
        t["message"].as_str().unwrap_or_default().to_owned(),
    )
}

/// A subject-kind trial the always-command mutant fails (whatever the scenarios are called):
/// `(case id, trial name)`.
fn mutant_failure() -> &'static (String, String) {
    static FOUND: OnceLock<(String, String)> = OnceLock::new();
    FOUND.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_acp-harness"))
            .args([
                "run",
                "--jobs",
                &jobs(),
                "--client",
                "mutant:always-command",
                "--filter",
                "::subject-kind",
            ])
            .arg("--out")
            .arg(dir.path())
            .output()
            .expect("acp-harness runs");
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        let failed = trials(dir.path())
            .into_iter()
            .find(|t| t["grade"] == "fail")
            .expect("the mutant fails a subject-kind trial");
        let name = failed["name"].as_str().unwrap().to_owned();
        let case = name.trim_end_matches("::subject-kind").to_owned();
        (case, name)
    })
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
    let (case, trial) = mutant_failure();
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    std::fs::write(
        &baseline,
        format!(
            "[expected.\"{trial}\"]\nreason = \"shows every approval as a command\"\nissue = \"https://example.org/bb/1719\"\n"
        ),
    )
    .unwrap();
    // `--filter` matches by substring: the case id plus `::` selects this case only.
    let only = format!("{case}::");

    let out = dir.path().join("mutant");
    let o = run(
        "mutant:always-command",
        &baseline,
        &out,
        &["--filter", &only],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (grade, message) = grade_of(&out, trial);
    assert_eq!(grade, "expected");
    assert!(
        message.starts_with(&format!(
            "expected fail (baseline \"{trial}\": shows every approval as a command; https://example.org/bb/1719)\n"
        )),
        "{message}"
    );

    let out = dir.path().join("reference");
    let o = run("reference", &baseline, &out, &["--filter", &only]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let (grade, message) = grade_of(&out, trial);
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
    assert!(
        t.contains("opencode@1.18/no-such-scenario::subject-kind"),
        "{t}"
    );
    assert!(t.contains("subject-kindd"), "{t}");
    assert!(!dir.path().join("a/run.json").exists());

    let o = run(
        "reference",
        &dir.path().join("new.toml"),
        &dir.path().join("b"),
        &["--bless", "--filter", "::subject-kind"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--bless"), "{}", text(&o));
    assert!(!dir.path().join("new.toml").exists());
}

#[test]
fn bless_writes_a_baseline_that_makes_the_run_green() {
    let (_, trial) = mutant_failure();
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
        written.contains(&format!("[expected.\"{trial}\"]")),
        "{written}"
    );
    assert!(written.contains("blessed as fail: "), "{written}");

    let o = run(
        "mutant:always-command",
        &baseline,
        &dir.path().join("second"),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let (grade, _) = grade_of(&dir.path().join("second"), trial);
    assert_eq!(grade, "expected");
}

/// `replay --baseline` grades one case with the same file: the mutant's failure of a check-wide
/// entry is `expected` and the exit status 0; without the file the same replay exits 1.
#[test]
fn replay_applies_a_baseline() {
    let (case, _) = mutant_failure();
    let dir = tempfile::tempdir().unwrap();
    let baseline = dir.path().join("baseline.toml");
    std::fs::write(
        &baseline,
        "[expected.\"subject-kind\"]\nreason = \"shows every approval as a command\"\n",
    )
    .unwrap();
    let replay = |extra: &[&std::ffi::OsStr]| {
        Command::new(env!("CARGO_BIN_EXE_acp-harness"))
            .args(["replay", "--client", "mutant:always-command", case])
            .args(extra)
            .output()
            .expect("acp-harness runs")
    };
    let o = replay(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("fail  subject-kind"), "{}", text(&o));

    let o = replay(&["--baseline".as_ref(), baseline.as_os_str()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(t.contains("expected  subject-kind"), "{t}");
    assert!(
        t.contains("expected fail (baseline \"subject-kind\": shows every approval as a command)"),
        "{t}"
    );
}
