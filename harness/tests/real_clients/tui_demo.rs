//! A full-screen client driven only through the screen observer: clients/tui-demo (a small
//! Python TUI: alternate screen, raw keys, a permission card drawn as a box) under its profile
//! clients/tui-demo/tui-demo.toml, which has no program of ours, only [tui], screen rules and
//! keys. Skips without python3.

use crate::real_client;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::real_client::{grade, run_one};
use acp_harness::client_spec::ClientSpec;
use acp_harness::runner::{self, CaseResult, RunConfig};
use acp_harness::suite;
use acp_judge::checks::Grade;
use acp_judge::record::RunEnd;

fn profile(name: &str) -> PathBuf {
    real_client::workspace().join("clients/tui-demo").join(name)
}

fn python() -> bool {
    let ok = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 is not installed (apt-get install python3)");
    }
    ok
}

fn spec() -> acp_harness::client_spec::ClientSpec {
    acp_harness::client_spec::ClientSpec::from_profile(&profile("tui-demo.toml"))
        .unwrap_or_else(|e| panic!("{e:#}"))
}

fn screen_note(r: &acp_harness::runner::CaseResult) -> Option<String> {
    r.record.transcript.iter().find_map(|e| {
        let j = e.json()?;
        (j.get("type")? == "screen").then(|| j["text"].as_str().unwrap_or_default().to_owned())
    })
}

/// A prompt typed at the input line, a card read from its box, an option chosen by its number,
/// the turn's end read from the status line.
fn a_full_screen_client_is_driven_through_its_screen() {
    if !python() {
        return;
    }
    let spec = spec();
    let r = run_one(&spec, "opencode@1.18/session-setup");
    assert_eq!(r.record.end, RunEnd::Completed, "{:?}", r.record.end);
    let (g, m) = grade(&r, "turn-end");
    assert_eq!(*g, Grade::Pass, "{m}");
    let screen = screen_note(&r).expect("a screen note");
    assert!(screen.contains("Done: end_turn"), "{screen}");
    // Every option of an `each` run is reached by its number.
    for case in [
        "opencode@1.18/execute-permission[always]",
        "opencode@1.18/execute-permission[reject]",
    ] {
        let r = run_one(&spec, case);
        assert_eq!(
            r.record.end,
            RunEnd::Completed,
            "{case}: {:?}",
            r.record.end
        );
        for check in ["offered-options", "subject-kind"] {
            let (g, m) = grade(&r, check);
            assert_eq!(*g, Grade::Pass, "{case} {check}: {m}");
        }
        let observed = r.record.transcript.iter().any(|e| {
            e.json().is_some_and(|j| {
                j["type"] == "approval"
                    && j["observed"]["from"] == "screen"
                    && j["observed"]["evidence"]
                        .as_str()
                        .is_some_and(|t| t.contains("Permission:"))
            })
        });
        assert!(observed, "{case}: no approval read from the screen");
    }
}

/// By label: the selection bar is moved with <Down> until it shows the option's name; the
/// third option too.
fn options_are_reached_by_their_label() {
    if !python() {
        return;
    }
    let spec = acp_harness::client_spec::ClientSpec::from_profile(&profile("tui-demo-label.toml"))
        .unwrap_or_else(|e| panic!("{e:#}"));
    let r = run_one(&spec, "opencode@1.18/execute-permission[reject]");
    assert_eq!(r.record.end, RunEnd::Completed, "{:?}", r.record.end);
    let (g, m) = grade(&r, "offered-options");
    assert_eq!(*g, Grade::Pass, "{m}");
    let typed = r.record.transcript.iter().any(|e| {
        e.json().is_some_and(|j| {
            j["type"] == "user_choose" && j["optionId"] == "reject" && j["input"] == "<Enter>"
        })
    });
    assert!(typed, "the harness did not choose reject");
}

/// tui-demo.toml with the program's absolute path, to be written elsewhere with changes.
fn demo_profile_text() -> String {
    std::fs::read_to_string(profile("tui-demo.toml"))
        .unwrap()
        .replace(
            "\"./tui_demo.py\"",
            &format!("{:?}", profile("tui_demo.py")),
        )
}

/// A profile written by hand in a folder of its own (absolute program paths).
fn profile_file(dir: &std::path::Path, text: &str) -> acp_harness::client_spec::ClientSpec {
    let path = dir.join("client.toml");
    std::fs::write(&path, text).unwrap();
    acp_harness::client_spec::ClientSpec::from_profile(&path).unwrap_or_else(|e| panic!("{e:#}"))
}

/// An option the profile's inputs cannot reach is not_applicable with the reason, not a
/// timeout.
fn an_unreachable_option_is_not_applicable() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = demo_profile_text().replace(
        "by = \"position\"",
        "by = \"position\"\nselects = [\"allow_once\", \"allow_always\"]",
    );
    let spec = profile_file(dir.path(), &text);
    let r = run_one(&spec, "opencode@1.18/execute-permission[reject]");
    match &r.record.end {
        RunEnd::NotApplicable { reason } => assert!(
            reason.contains("no input of tui-demo's profile reaches option \"reject\""),
            "{reason}"
        ),
        other => panic!("expected not_applicable, got {other:?}"),
    }
    // By label with a key that does not move the selection bar: the highlight never reaches
    // the option, and the reason shows what it showed.
    let text = text.replace(
        "by = \"position\"\nselects = [\"allow_once\", \"allow_always\"]\ninput = \"{n}\"",
        "by = \"label\"\ninput = \"<Enter>\"\nnext = \"<Right>\"",
    );
    assert!(text.contains("<Right>"), "{text}");
    let spec = profile_file(dir.path(), &text);
    let r = run_one(&spec, "opencode@1.18/execute-permission[reject]");
    match &r.record.end {
        RunEnd::NotApplicable { reason } => {
            assert!(
                reason.contains("the highlighted line never showed option \"reject\""),
                "{reason}"
            );
            assert!(reason.contains("1) Allow once"), "{reason}");
        }
        other => panic!("expected not_applicable, got {other:?}"),
    }
}

/// A card the profile's approval rule does not recognise: the harness never typed, and the
/// verdict says so (the observer saw no prompt) with the screen that shows the card, rather than
/// blaming the client for an answer it was never asked to give.
fn a_card_the_observer_missed_is_the_profiles_miss() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let text = demo_profile_text().replace(
        "box_containing = \"Permission:\"",
        "box_containing = \"Approve?\"",
    );
    assert!(text.contains("Approve?"), "{text}");
    let spec = profile_file(dir.path(), &text);
    let r = run_one(&spec, "opencode@1.18/execute-permission[once]");
    let reason = match &r.record.end {
        RunEnd::Incomplete { reason, .. } => reason.clone(),
        other => panic!("expected incomplete, got {other:?}"),
    };
    for says in [
        "the observer saw no prompt for request",
        "so the harness never typed \"1\" to choose \"once\"",
        "does the profile's approval rule match what tui-demo shows?",
        "Permission:",
    ] {
        assert!(reason.contains(says), "{says}: {reason}");
    }
    assert!(!reason.contains("client sent no answer"), "{reason}");
    // No check blames the client either: the card it answered `cancelled` when the harness
    // typed the quit keys (note `user_quit`) is its answer to being closed.
    let blamed: Vec<String> = r
        .trials
        .iter()
        .filter(|t| matches!(t.grade, Grade::Fail | Grade::Warn))
        .map(|t| format!("{}: {}", t.check, t.message))
        .collect();
    assert!(blamed.is_empty(), "{blamed:#?}");
}

fn pid_of(r: &acp_harness::runner::CaseResult) -> i32 {
    r.record
        .transcript
        .iter()
        .find_map(|e| {
            let j = e.json()?;
            (j.get("type")? == "client_started").then(|| j["pid"].as_i64())?
        })
        .expect("a client_started note") as i32
}

/// A TUI that never draws, one that ignores keys, one that exits at once and one that draws
/// garbage: each gets a clear verdict after one step timeout with its last screen, and leaves no
/// process behind.
fn a_broken_tui_gets_a_verdict_with_its_screen() {
    let dir = tempfile::tempdir().unwrap();
    let base = |argv: &str| {
        format!(
            "name = \"broken\"\ncontrol = \"none\"\nargv = {argv}\n[tui]\nquit = \"<C-c>\"\nprompt = \"{{prompt}}<Enter>\"\nready = 'Ready'\n[observer]\n[[observer.rule]]\non = \"screen\"\nmatch = 'Done'\nevent = \"turn\"\nstate = \"completed\"\n"
        )
    };
    let cases = [
        // Never draws: the prompt is never typed, and the reason says the screen was blank.
        (
            r#"["sleep", "30"]"#,
            "the screen was blank (the client never drew)",
        ),
        // Draws, then ignores every key: nothing reaches the agent.
        (
            r#"["sh", "-c", "printf 'Ready\\n> '; exec sleep 30"]"#,
            "Ready\n>",
        ),
        // Exits at once after drawing.
        (r#"["sh", "-c", "printf 'Ready\\nbye'"]"#, "bye"),
        // Draws garbage: bytes that are not UTF-8, an unterminated OSC, a cursor far off the
        // screen, a colour that does not exist; the emulator shows what it can.
        (
            r#"["sh", "-c", "printf '\\377\\376\\033[999;999H\\033[1;1Hgarbage\\033[38;5;999m\\033]0;title'; exec sleep 30"]"#,
            "screen:\ngarbage",
        ),
    ];
    // The fake agent is built (once per checkout) before the clock starts: the bound is on the
    // case, not on cargo.
    acp_harness::locate::locate(acp_harness::locate::FAKE_AGENT).expect("the fake agent");
    let step = real_client::config().step_timeout;
    for (argv, says) in cases {
        let spec = profile_file(dir.path(), &base(argv));
        // Machine time, like the harness's budgets (docs/timeouts.md).
        let started = acp_fake_agents::machine_time::Stamp::now();
        let r = run_one(&spec, "opencode@1.18/session-setup");
        let reason = match &r.record.end {
            RunEnd::Incomplete { reason, .. }
            | RunEnd::Timeout { reason, .. }
            | RunEnd::Crash { reason, .. } => reason.clone(),
            other => panic!("{argv}: expected a failed run, got {other:?}"),
        };
        assert!(reason.contains(says), "{argv}: {reason}");
        // One step waited in vain, then the teardown (a last still screen, the quit keys, the
        // kill after the grace): about 6 s for a 5 s step.
        let took = started.elapsed().machine;
        assert!(
            took < step + Duration::from_secs(5),
            "{argv}: took {took:?}"
        );
        let pid = pid_of(&r);
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "{argv}: pid {pid} still runs"
        );
    }
}

/// tui-demo with its field bug `mutant` (TUI_DEMO_MUTANT), from a profile in `dir`.
fn demo_mutant(dir: &std::path::Path, mutant: &str) -> acp_harness::client_spec::ClientSpec {
    let text = demo_profile_text().replace(
        "[tui]",
        &format!("[env]\nTUI_DEMO_MUTANT = \"{mutant}\"\n[tui]"),
    );
    let dir = dir.join(mutant);
    std::fs::create_dir_all(&dir).unwrap();
    profile_file(&dir, &text)
}

/// A card answered with another option than the one picked fails offered-options, naming the
/// option the user chose (the reference client has no such mutant; `collapse-by-kind` fails
/// the same check).
fn an_answer_other_than_the_pick_fails_offered_options() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let r = run_one(
        &demo_mutant(dir.path(), "first-option"),
        "opencode@1.18/execute-permission[reject]",
    );
    let (g, m) = grade(&r, "offered-options");
    assert_eq!(*g, Grade::Fail, "{m}");
    assert!(m.contains("the user chose \"reject\""), "{m}");
}

/// Each field-bug mutant of tui-demo and the cases that make it bite: the first shows its
/// turn-end, cancel and agent-death sides, the others their one check.
const MUTANTS: &[(&str, &[&str])] = &[
    (
        "turn-never-ended",
        &[
            "opencode@1.18/session-setup",
            "opencode@1.18/cancel-pending-permission",
            "regressions@synthetic/agent-dies-mid-turn",
        ],
    ),
    (
        "no-cancelled-answer",
        &[
            "opencode@1.18/cancel-pending-permission",
            "codex-acp@1.6/cancel-pending-permission",
        ],
    ),
    (
        "kind-from-request",
        &[
            "opencode@1.18/external-directory-write",
            "claude-agent-acp@0.16/acpx-probe-cat-title",
        ],
    ),
    ("relative-cwd", &["opencode@1.18/session-setup"]),
];

/// Check ids graded `fail` or `warn` in `results`.
fn failed_checks(results: &[CaseResult]) -> BTreeSet<&'static str> {
    results
        .iter()
        .flat_map(|r| &r.trials)
        .filter(|t| matches!(t.grade, Grade::Fail | Grade::Warn))
        .map(|t| t.check)
        .collect()
}

/// Proof that the screen observer judges a full-screen client as the adapter judges the
/// reference client: on the cases that make each bug bite, tui-demo driven only through its
/// screen passes every trial, and each of its field-bug mutants fails exactly the checks the
/// reference client's mutant of the same name fails over its adapter.
fn field_bugs_fail_the_same_checks_as_over_the_adapter() {
    if !python() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = RunConfig {
        // Cases that wait for a turn end that never comes wait out this, not a whole step.
        settle_timeout: Some(Duration::from_secs(1)),
        ..real_client::config()
    };
    let find = |id: &str| suite::find_case(&cfg.scenarios_dir, id).expect("case exists");
    // (who, client, cases): the demo on every case, then each mutant through its screen and
    // over the adapter.
    let mut runs: Vec<(String, ClientSpec, Vec<&str>)> = Vec::new();
    let mut every: Vec<&str> = MUTANTS
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .collect();
    every.sort_unstable();
    every.dedup();
    runs.push(("tui-demo".into(), spec(), every));
    for (mutant, cases) in MUTANTS {
        runs.push((
            format!("screen {mutant}"),
            demo_mutant(dir.path(), mutant),
            cases.to_vec(),
        ));
        runs.push((
            format!("adapter {mutant}"),
            ClientSpec::mutant(mutant).expect("the reference client has this mutant"),
            cases.to_vec(),
        ));
    }
    let results: BTreeMap<String, Vec<CaseResult>> = real_client::runtime().block_on(async {
        let gate = Arc::new(tokio::sync::Semaphore::new(4));
        let mut tasks = Vec::new();
        for (who, client, cases) in &runs {
            for id in cases {
                let (gate, case, client, cfg, who) = (
                    gate.clone(),
                    find(id),
                    client.clone(),
                    cfg.clone(),
                    who.clone(),
                );
                tasks.push(tokio::spawn(async move {
                    let _permit = gate.acquire_owned().await;
                    (who, runner::run_case(&case, &client, &cfg).await)
                }));
            }
        }
        let mut out: BTreeMap<String, Vec<CaseResult>> = BTreeMap::new();
        for task in tasks {
            let (who, result) = task.await.expect("a case task panicked");
            out.entry(who).or_default().push(result);
        }
        out
    });
    let failing: Vec<String> = results["tui-demo"]
        .iter()
        .flat_map(|r| {
            r.trials
                .iter()
                .filter(|t| t.grade.is_failing(false))
                .map(move |t| format!("{}::{}: {}", r.record.meta.case_id, t.check, t.message))
        })
        .collect();
    assert!(
        failing.is_empty(),
        "tui-demo fails:\n{}",
        failing.join("\n")
    );
    for (mutant, _) in MUTANTS {
        let screen = failed_checks(&results[&format!("screen {mutant}")]);
        let adapter = failed_checks(&results[&format!("adapter {mutant}")]);
        assert!(
            !adapter.is_empty(),
            "{mutant}: the cases do not make it bite"
        );
        assert_eq!(
            screen, adapter,
            "{mutant}: through the screen (left) and over the adapter (right)"
        );
    }
}

/// This file's tests, for the runner of real_clients/main.rs.
pub const TESTS: &[crate::Test] = &[
    (
        "a_full_screen_client_is_driven_through_its_screen",
        a_full_screen_client_is_driven_through_its_screen,
    ),
    (
        "options_are_reached_by_their_label",
        options_are_reached_by_their_label,
    ),
    (
        "an_unreachable_option_is_not_applicable",
        an_unreachable_option_is_not_applicable,
    ),
    (
        "a_broken_tui_gets_a_verdict_with_its_screen",
        a_broken_tui_gets_a_verdict_with_its_screen,
    ),
    (
        "an_answer_other_than_the_pick_fails_offered_options",
        an_answer_other_than_the_pick_fails_offered_options,
    ),
    (
        "field_bugs_fail_the_same_checks_as_over_the_adapter",
        field_bugs_fail_the_same_checks_as_over_the_adapter,
    ),
    (
        "a_card_the_observer_missed_is_the_profiles_miss",
        a_card_the_observer_missed_is_the_profiles_miss,
    ),
];
