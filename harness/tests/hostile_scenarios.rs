//! Hostile input to the harness itself: malformed scenario files, bad command lines, an
//! unwritable `--out`. Every malformed scenario is rejected before anything runs, with
//! `file:line:col` and a message that names the problem; every bad command line gets one clear
//! line and exit code 2.
//!
//! The corpus lives in `tests/hostile-scenarios/` (one problem per file); [`EXPECTED`] says where
//! each file breaks and what the message must say. A huge file is generated at test time rather
//! than committed.

use std::path::{Path, PathBuf};
use std::process::Command;

use acp_fake_agents::scenario::{self, MAX_SCENARIO_BYTES};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile-scenarios")
}

/// (file, line, column, text the message must contain).
const EXPECTED: &[(&str, usize, usize, &str)] = &[
    (
        "alias-on-a-notification.toml",
        10,
        6,
        "`as` names a request, but this frame has no \"id\"",
    ),
    (
        "alias-used-before-defined.toml",
        9,
        12,
        "`reply_to = \"prompt\"` names no client request",
    ),
    (
        "bad-toml-syntax.toml",
        1,
        10,
        "unclosed table, expected `]`",
    ),
    (
        "choose-unoffered-option.toml",
        15,
        10,
        "request \"perm\" does not offer option \"nope\"",
    ),
    ("duplicate-key.toml", 4, 1, "duplicate key"),
    ("empty-file.toml", 1, 1, "missing field `scenario`"),
    (
        "frame-not-an-object.toml",
        9,
        8,
        "a `send` frame must be a JSON object",
    ),
    (
        "handshake-without-profile.toml",
        9,
        13,
        "set `profile = \"agent@version\"`",
    ),
    ("id-bad-characters.toml", 2, 6, "`id` must match [a-z0-9-]+"),
    (
        "id-wrong-type.toml",
        2,
        6,
        "invalid type: integer `5`, expected a string",
    ),
    (
        "invalid-frame-json.toml",
        9,
        26,
        "invalid JSON in `send`: key must be a string",
    ),
    (
        "key-not-for-step-kind.toml",
        10,
        9,
        "`frame` does not belong in a `expect` step",
    ),
    ("match-not-json.toml", 10, 19, "invalid JSON in `match`"),
    ("missing-id.toml", 1, 1, "missing field `id`"),
    (
        "missing-scenario-table.toml",
        1,
        1,
        "missing field `scenario`",
    ),
    ("not-utf8.toml", 8, 6, "the file is not valid UTF-8"),
    (
        "on-case-two-conditions.toml",
        17,
        13,
        "an `on` case has exactly one condition",
    ),
    (
        "provenance-empty.toml",
        6,
        14,
        "`provenance` needs at least one entry",
    ),
    (
        "redefines-builtin-variable.toml",
        9,
        7,
        "`cwd` is set by the harness and cannot be redefined",
    ),
    (
        "reply-to-a-response.toml",
        10,
        9,
        "a response cannot be answered",
    ),
    (
        "setup-dotdot-path.toml",
        9,
        8,
        "`file` must not contain `.` or `..` segments",
    ),
    (
        "setup-path-outside-case-dir.toml",
        10,
        10,
        "`target` must lie inside the case directory (the parent of ${cwd} and ${outside}); \"/etc\" is outside it",
    ),
    ("setup-unknown-key.toml", 10, 1, "unknown field `mode`"),
    ("step-two-kinds.toml", 10, 8, "this one has expect and send"),
    (
        "step-without-kind.toml",
        8,
        1,
        "a step needs exactly one of handshake, expect",
    ),
    (
        "timeout-wrong-type.toml",
        10,
        14,
        "invalid type: string \"soon\", expected u64",
    ),
    ("unknown-fault.toml", 9, 9, "unknown fault \"explode\""),
    ("unknown-profile.toml", 7, 11, "unknown profile `nobody@9`"),
    ("unknown-step-key.toml", 9, 1, "unknown field `dance`"),
    ("unknown-table.toml", 10, 2, "unknown field `extra`"),
    (
        "unknown-template-variable.toml",
        9,
        75,
        "unknown variable `${nope}`",
    ),
    (
        "unknown-user-action.toml",
        9,
        8,
        "unknown user action \"dance\"",
    ),
    ("unterminated-template.toml", 9, 54, "unterminated `${`"),
    (
        "version-not-a-string.toml",
        5,
        11,
        "invalid type: floating point `1.5`, expected a string",
    ),
];

#[test]
fn every_malformed_scenario_is_rejected_with_its_place_and_problem() {
    let dir = corpus();
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("hostile-scenarios folder")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".toml"))
        .collect();
    on_disk.sort();
    let listed: Vec<String> = EXPECTED.iter().map(|(f, ..)| f.to_string()).collect();
    assert_eq!(
        on_disk, listed,
        "every corpus file has exactly one expectation"
    );
    assert!(EXPECTED.len() >= 20);

    let mut wrong = Vec::new();
    for &(file, line, col, says) in EXPECTED {
        let path = dir.join(file);
        match scenario::load(&path) {
            Ok(_) => wrong.push(format!("{file}: parsed, but it is malformed")),
            Err(e) => {
                let shown = e.to_string();
                let place = format!("{}:{line}:{col}: ", path.display());
                if !shown.starts_with(&place) || !shown.contains(says) {
                    wrong.push(format!(
                        "{file}: expected `{place}…{says}…`\n    got      `{shown}`"
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn a_huge_scenario_file_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.toml");
    let mut text = String::from(
        "[scenario]\nid = \"huge\"\ntitle = \"t\"\nagent = \"a\"\nversion = \"1\"\nprovenance = [\"x\"]\n",
    );
    // A comment is valid TOML: only the size is wrong.
    text.push('#');
    text.push_str(&"x".repeat(MAX_SCENARIO_BYTES as usize));
    std::fs::write(&path, text).expect("write");
    let err = scenario::load(&path).expect_err("too big");
    assert_eq!((err.line, err.col), (1, 1));
    assert!(
        err.message
            .contains("larger than 4194304 bytes (4 MiB), the limit for a scenario file"),
        "{err}"
    );
}

#[test]
fn a_scenario_in_the_wrong_folder_is_refused_with_where_it_belongs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("opencode/9.9");
    std::fs::create_dir_all(&folder).expect("mkdir");
    std::fs::write(
        folder.join("elsewhere.toml"),
        "[scenario]\nid = \"here\"\ntitle = \"t\"\nagent = \"a\"\nversion = \"1\"\nprovenance = [\"x\"]\n\n[[step]]\nexpect = \"initialize\"\n",
    )
    .expect("write");
    let (scenarios, errors) = scenario::load_dir(dir.path());
    assert!(scenarios.is_empty());
    assert_eq!(errors.len(), 1, "{errors:?}");
    let shown = errors[0].to_string();
    assert!(shown.contains("elsewhere.toml:1:1: "), "{shown}");
    assert!(shown.contains("must live at `a/1/here.toml`"), "{shown}");
}

fn harness() -> Command {
    Command::new(env!("CARGO_BIN_EXE_acp-harness"))
}

/// Runs the harness; returns (exit code, stderr).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = harness().args(args).output().expect("run acp-harness");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_lists_every_broken_file_of_a_scenarios_folder_and_runs_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let folder = dir.path().join("hostile/1");
    std::fs::create_dir_all(&folder).expect("mkdir");
    for name in [
        "bad-toml-syntax.toml",
        "unknown-template-variable.toml",
        "not-utf8.toml",
    ] {
        std::fs::copy(corpus().join(name), folder.join(name)).expect("copy");
    }
    let out = dir.path().join("out");
    let (code, stderr) = run(&[
        "run",
        "--scenarios",
        &dir.path().to_string_lossy(),
        "--out",
        &out.to_string_lossy(),
    ]);
    assert_eq!(code, Some(2), "{stderr}");
    for place in [
        "bad-toml-syntax.toml:1:10:",
        "unknown-template-variable.toml:9:75:",
        "not-utf8.toml:8:6:",
    ] {
        assert!(stderr.contains(place), "{place} missing from:\n{stderr}");
    }
    assert!(!out.join("run.json").exists());
}

#[test]
fn bad_command_lines_get_one_clear_line_each() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no-such-folder");
    let missing = missing.to_string_lossy();
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, "").expect("write");
    let unwritable = blocker.join("out");
    let unwritable = unwritable.to_string_lossy();
    // (arguments, text the single error line must contain)
    let cases: &[(&[&str], &str)] = &[
        (
            &["run", "--client", r#"["./c", 3]"#, "--out", &unwritable],
            "array of strings",
        ),
        (&["run", "--scenarios", &missing], "is not a directory"),
        (
            &["run", "--out", &unwritable],
            "cannot create --out directory",
        ),
        (&["run", "--client", "mutant:no-such-bug"], "no-such-bug"),
        (
            &["run", "--client", "/nonexistent/profile.toml"],
            "/nonexistent/profile.toml",
        ),
        (&["replay", "nobody@0/nothing"], "nobody@0/nothing"),
    ];
    let mut wrong = Vec::new();
    for (args, says) in cases {
        let (code, stderr) = run(args);
        let lines: Vec<&str> = stderr.trim().lines().collect();
        if code != Some(2) || lines.len() != 1 || !lines[0].contains(says) {
            wrong.push(format!(
                "acp-harness {args:?}: expected exit 2 and one line containing {says:?}, got {code:?}:\n{stderr}"
            ));
        }
    }
    // Flags clap rejects: exit 2, the offending flag named on the first line (clap adds usage).
    for args in [
        &["run", "--jobs", "many"][..],
        &["run", "--step-timeout-ms", "-5"],
        &["dance"],
    ] {
        let (code, stderr) = run(args);
        let first = stderr.lines().next().unwrap_or("");
        if code != Some(2) || !first.starts_with("error:") {
            wrong.push(format!(
                "acp-harness {args:?}: expected exit 2 and an `error:` line, got {code:?}:\n{stderr}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
