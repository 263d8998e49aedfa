//! The reports from the CLI's side: `acp-harness run` writes run.json (snapshotted, timings
//! redacted) and the report next to it; `report` and `diff` work on run.json files; hostile
//! client text (scenario titles, option names and tool titles the client echoes, its stderr)
//! never becomes live markup in any page.
//!
//! The scenarios are test-only (harness/tests/report/scenarios: a fictional agent "acme"), so
//! these tests do not change when the real scenario corpus or the agent profiles do.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/report/scenarios");

/// A client that prints HTML payloads on stderr and exits 3 (the harness reports a crash with
/// its stderr tail).
const HOSTILE_STDERR_CLIENT: &str = r#"["sh","-c","echo \"<script>alert(1)</script>\" >&2; echo \"\\\"><img src=x onerror=alert(1)>\" >&2; exit 3"]"#;

fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acp-harness"))
}

fn run(client: &str, filter: &str, out: &Path) -> Output {
    let output = harness()
        .args(["run", "--jobs", "1", "--client", client, "--filter", filter])
        .arg("--scenarios")
        .arg(SCENARIOS)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "run failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    out
}

#[test]
fn run_writes_run_json_and_the_report_next_to_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let output = run("reference", "acme@1.0/edit-approve", &out);
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("report:  "), "{stdout}");
    for file in ["report/index.html", "report/junit.xml", "report/summary.md"] {
        assert!(out.join(file).is_file(), "{file} missing");
    }

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap();
    let scenarios = Path::new(SCENARIOS).canonicalize().unwrap();
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(
        &regex_escape(&scenarios.display().to_string()),
        "[scenarios]",
    );
    settings.bind(|| {
        insta::assert_json_snapshot!("run_json_reference_edit_approve", json, {
            ".started_unix_ms" => "[ms]",
            ".duration_ms" => "[ms]",
            ".cases[].duration_ms" => "[ms]",
            ".harness.version" => "[version]",
            ".client.reported.version" => "[version]",
            ".client.argv" => "[argv]",
            ".cases[].stderr_tail" => "[stderr]",
        });
    });
}

/// `regex::escape` without the dependency: insta filters are regexes.
fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[test]
fn hostile_client_text_never_becomes_markup() {
    let dir = tempfile::tempdir().unwrap();
    let echoing = dir.path().join("echoing");
    let crashing = dir.path().join("crashing");
    run("reference", "hostile-text", &echoing);
    let output = run(HOSTILE_STDERR_CLIENT, "hostile-text", &crashing);
    assert_eq!(output.status.code(), Some(1), "the crash fails the run");

    let report = dir.path().join("report");
    let output = harness()
        .arg("report")
        .arg(echoing.join("run.json"))
        .arg(crashing.join("run.json"))
        .arg("--out")
        .arg(&report)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The payloads did reach the transcripts: titles and option names echoed by the client in its
    // control events, and the crashing client's stderr in run.json.
    let transcript =
        std::fs::read_to_string(echoing.join("transcripts/acme@1.0_hostile-text.jsonl")).unwrap();
    assert!(transcript.contains(r#""label":"<script>alert(1)</script>""#));
    assert!(
        transcript
            .contains(r#""title":"<script>alert(1)</script>\"><img src=x onerror=alert(1)>""#)
    );
    let run_json = std::fs::read_to_string(crashing.join("run.json")).unwrap();
    assert!(run_json.contains(r#"<script>alert(1)</script>\n\"><img src=x onerror=alert(1)>"#));

    let mut escaped = 0;
    for (path, text) in files(&report) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name == "summary.md" {
            // Markdown: payloads only inside code fences (GitHub shows those as text).
            let mut fenced = false;
            for line in text.lines() {
                if line.starts_with("```") {
                    fenced = !fenced;
                } else if !fenced {
                    assert!(
                        !line.contains("<script>alert") && !line.contains("<img"),
                        "{line}"
                    );
                }
            }
            continue;
        }
        assert!(!text.contains("<script>alert"), "{name}: live <script>");
        assert!(!text.contains("<img"), "{name}: live <img>");
        assert!(
            !text.contains("onerror=alert(1)>\""),
            "{name}: attribute break-out"
        );
        escaped += text
            .matches("&#60;script&#62;alert(1)&#60;/script&#62;")
            .count()
            + text
                .matches("&lt;script&gt;alert(1)&lt;/script&gt;")
                .count();
    }
    assert!(
        escaped > 10,
        "the payloads are on the pages, escaped ({escaped})"
    );

    // The crashing client's case page shows its stderr (escaped).
    let crash_page = files(&report)
        .into_iter()
        .find(|(p, t)| p.to_string_lossy().contains("/sh/cases/") && t.contains("Client stderr"))
        .expect("the crashing client's case page shows its stderr");
    assert!(
        crash_page
            .1
            .contains("&#60;script&#62;alert(1)&#60;/script&#62;\n&#34;&#62;&#60;img")
    );
}

#[test]
fn diff_names_new_failures_and_exits_1_and_fixed_ones_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    let bad = dir.path().join("bad");
    run("reference", "acme@2.0", &good);
    run("mutant:always-command", "acme@2.0", &bad);

    let html = dir.path().join("diff.html");
    let output = harness()
        .arg("diff")
        .arg(good.join("run.json"))
        .arg(bad.join("run.json"))
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("new failures (1):"), "{stdout}");
    assert!(
        stdout.contains("FAIL  acme@2.0/sparse-request::subject-kind  (was pass)"),
        "{stdout}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("id=\"new-failures\"") && page.contains("sparse-request::subject-kind"));

    let output = harness()
        .arg("diff")
        .arg(bad.join("run.json"))
        .arg(good.join("run.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("fixed (1):"), "{stdout}");
}

#[test]
fn report_and_diff_reject_files_that_are_not_run_json_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("run.json");
    std::fs::write(&bogus, r#"{"schema":"something-else"}"#).unwrap();
    let report = harness()
        .arg("report")
        .arg(&bogus)
        .arg("--out")
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    let diff = harness()
        .arg("diff")
        .arg(&bogus)
        .arg(&bogus)
        .output()
        .unwrap();
    for output in [report, diff] {
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("\"something-else\"; this report reads \"acp-harness/run/v1\""),
            "{stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    assert!(!dir.path().join("out").exists());
}

#[test]
fn the_ci_workflow_uses_flags_and_paths_that_exist() {
    let workflow = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ci/conformance.yml"
    ))
    .unwrap();
    let help = harness().args(["run", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for flag in ["--client", "--scenarios", "--out", "--strict", "--baseline"] {
        assert!(workflow.contains(flag), "the workflow mentions {flag}");
        assert!(help.contains(flag), "`run --help` lists {flag}");
    }
    // The files it publishes are the ones `run --out acp-results` writes (see the test above).
    for path in [
        "--out acp-results",
        "acp-results/report/summary.md",
        "acp-results/report/junit.xml",
        "acp-results/report/",
        "acp-results/run.json",
        "$GITHUB_STEP_SUMMARY",
    ] {
        assert!(workflow.contains(path), "the workflow uses {path}");
    }
}

#[test]
fn the_sharded_ci_workflow_uses_commands_and_flags_that_exist() {
    let workflow = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../ci/conformance-sharded.yml"
    ))
    .unwrap();
    let help = |command: &str| {
        let out = harness().args([command, "--help"]).output().unwrap();
        assert!(out.status.success(), "`{command} --help` runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (run, merge, report) = (help("run"), help("merge"), help("report"));
    for (flag, help) in [
        ("--shard", &run),
        ("--client", &run),
        ("--scenarios", &run),
        ("--out", &merge),
        ("--exit-code", &report),
    ] {
        assert!(help.contains(flag), "{flag} is in its command's --help");
        assert!(workflow.contains(flag), "the workflow uses {flag}");
    }
    for used in [
        "acp-harness merge shards/*/run.json --out acp-results",
        "acp-harness report acp-results/run.json",
        "shard: [1, 2, 3, 4]",
        "--shard ${{ matrix.shard }}/4",
        "acp-results/transcripts/",
    ] {
        assert!(workflow.contains(used), "the workflow has {used}");
    }
}
