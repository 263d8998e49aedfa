//! The fuzz seed corpus as a PR gate (fuzz/README.md): `cargo test` replays every committed seed
//! of the `permission_mapping` target through the target's own body
//! (`acp_harness::fuzz::fuzz_permission_mapping`: one long-lived client, every check per turn)
//! on stable Rust, against `ACP_HARNESS_CLIENT` (the reference client by default). A seed that
//! makes the target panic fails the test with the target's summary.
//!
//! Two more tests prove the path can fail and that a finding turns into a regression scenario
//! that reproduces it: a field-bug mutant of the reference client is caught by a seed, and the
//! seed written as a scenario passes on the reference client and fails the same check on the
//! mutant.

use std::path::{Path, PathBuf};

use acp_harness::client_spec::ClientSpec;
use acp_harness::fuzz::{self, Driver, DriverConfig, PermissionTurn};
use acp_harness::runner::{RunConfig, run_case};
use acp_judge::checks::Grade;

fn seeds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/permission_mapping")
}

fn seeds() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(seeds_dir())
        .expect("fuzz/seeds/permission_mapping exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read(&p).expect("seed readable"))
        })
        .collect()
}

fn seed(name: &str) -> PermissionTurn {
    let bytes = std::fs::read(seeds_dir().join(name)).expect("seed exists");
    fuzz::decode(&bytes).expect("seed decodes")
}

#[test]
fn seed_corpus_replays_clean() {
    let seeds = seeds();
    assert!(seeds.len() >= 20, "only {} seeds", seeds.len());
    let mut failures = Vec::new();
    for (name, bytes) in &seeds {
        // A JSON seed with a typo would silently decode as arbitrary bytes: parse it strictly.
        if name.ends_with(".json") {
            if let Err(e) = serde_json::from_slice::<PermissionTurn>(bytes) {
                failures.push(format!("{name}: not a valid JSON seed: {e}"));
                continue;
            }
        }
        let played = std::panic::catch_unwind(|| fuzz::fuzz_permission_mapping(bytes));
        if let Err(panic) = played {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("seed {name}:\n{message}"));
        }
    }
    fuzz::stop_fuzz_driver();
    assert!(
        failures.is_empty(),
        "{} of {} seeds failed:\n\n{}",
        failures.len(),
        seeds.len(),
        failures.join("\n\n")
    );
}

/// The driver against one client, without the fresh-client confirmation (faster).
fn driver(client: ClientSpec) -> Driver {
    let mut cfg = DriverConfig::from_env().expect("driver config");
    cfg.client = client;
    Driver::new(cfg).expect("driver")
}

#[test]
fn a_field_bug_mutant_is_caught_with_a_readable_summary() {
    let mut d = driver(ClientSpec::mutant("always-command").expect("mutant"));
    let finding = d
        .play(&seed("opencode-edit-allow-once.json"))
        .expect_err("always-command shows an edit as a command");
    let s = &finding.summary;
    assert!(s.contains("subject-kind [fail]"), "{s}");
    assert!(
        s.contains("reproduces on a freshly started client: yes"),
        "{s}"
    );
    assert!(s.contains("fuzz-to-scenario"), "{s}");
    // The client was restarted: the next turn plays on a fresh one and is graded on its own.
    let next = d
        .play(&seed("opencode-bash-cancel.json"))
        .expect("an execute approval is a command approval even for this mutant");
    assert!(next.verdict.passed());
}

#[test]
fn a_seed_as_a_regression_scenario_reproduces_the_finding() {
    let dir = tempfile::tempdir().expect("tempdir");
    let artifact = seeds_dir().join("opencode-external-directory-reject.json");
    let path = fuzz::scenario::write_regression(&artifact, dir.path(), Some("external-dir"), None)
        .expect("scenario written");
    assert_eq!(path, dir.path().join("fuzz/external-dir.toml"));
    let scenario = acp_fake_agents::scenario::load(&path).expect("parses");
    let case = scenario.cases().remove(0);
    let cfg = RunConfig::new(dir.path().to_path_buf()).expect("run config");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let grade = |client: ClientSpec, check: &str| {
        let result = runtime.block_on(run_case(&case, &client, &cfg));
        let trial = result
            .trials
            .iter()
            .find(|t| t.check == check)
            .expect("check graded")
            .clone();
        (trial, result.trials)
    };
    let (_, reference) = grade(ClientSpec::reference().expect("reference"), "subject-kind");
    for t in &reference {
        assert!(
            matches!(t.grade, Grade::Pass | Grade::NotApplicable),
            "reference: {} [{}] {}",
            t.check,
            t.grade.as_str(),
            t.message
        );
    }
    let (trial, _) = grade(
        ClientSpec::mutant("kind-from-request").expect("mutant"),
        "subject-kind",
    );
    assert_eq!(trial.grade, Grade::Fail, "{}", trial.message);
}

/// The decision mutants of the reference client (`acp-reference-client --help`) are caught by
/// `auto-approval` on the policy seeds, on a fresh client too; the reference client plays the
/// same seeds clean (`seed_corpus_replays_clean`).
#[test]
fn decision_mutants_are_caught_by_the_policy_seeds() {
    for (mutant, name) in [
        (
            "approve-by-request-kind",
            "policy-read-only-execute-requested-as-read.json",
        ),
        (
            "approve-by-title-guess",
            "policy-read-only-title-cat-no-kind.json",
        ),
        (
            "workspace-prefix-check",
            "policy-workspace-write-edit-through-parent.json",
        ),
        (
            "workspace-prefix-check",
            "policy-workspace-write-edit-sibling-prefix.json",
        ),
    ] {
        let mut d = driver(ClientSpec::mutant(mutant).expect("mutant"));
        let finding = d
            .play(&seed(name))
            .expect_err(&format!("{mutant} approves {name} by itself"));
        let s = &finding.summary;
        assert!(s.contains("auto-approval [fail]"), "{mutant}, {name}:\n{s}");
        assert!(s.contains("was approved by the client itself"), "{s}");
        assert!(
            s.contains("reproduces on a freshly started client: yes"),
            "{s}"
        );
    }
}

/// A policy seed is really decided by the client: the reference client started with the seed's
/// `--policy` declares it in `hello`, answers by itself (`by: policy`, no card), and the driver
/// does not wait for a card that never comes.
#[test]
fn the_reference_client_answers_policy_seeds_by_itself() {
    let mut d = driver(ClientSpec::reference().expect("reference"));
    let played = d
        .play(&seed("policy-read-only-read-inside.json"))
        .expect("a read inside the workspace is within read-only");
    let events: Vec<&serde_json::Value> = played
        .record
        .transcript
        .iter()
        .filter(|e| e.direction == acp_vocab::transcript::Direction::AdapterToHarness)
        .filter_map(|e| e.json())
        .collect();
    let of_type = |t: &'static str| events.iter().filter(move |e| e["type"] == t);
    let hello = of_type("hello").next().expect("hello");
    assert_eq!(
        hello["policy"]["approves"],
        serde_json::json!(["read", "search"])
    );
    assert_eq!(of_type("approval").count(), 0, "no card: {events:?}");
    let resolved = of_type("approval_resolved").next().expect("resolved");
    assert_eq!(resolved["by"], "policy");
    assert_eq!(resolved["optionId"], "once");
    let trial = played
        .verdict
        .trials
        .iter()
        .find(|t| t.check == "auto-approval")
        .expect("graded");
    assert_eq!(trial.grade, Grade::Pass, "{}", trial.message);
}

/// A remembered `allow_always` is judged with the turn that granted it: the grant turn is
/// replayed at the head of later slices, so the reference client's remembered read passes,
/// and the mutant that lets one grant open every kind is caught on the next turn's execute —
/// a finding that needs the earlier turn (it does not reproduce on a fresh client).
#[test]
fn a_remembered_grant_is_judged_with_the_turn_that_gave_it() {
    let grant = seed("grant-read-always.json");
    let execute = seed("grant-then-execute.json");
    let mut reference = driver(ClientSpec::reference().expect("reference"));
    reference.play(&grant).expect("the user grants reads");
    let again = reference
        .play(&grant)
        .expect("the remembered grant approves the next read");
    let by_policy = again.record.transcript.iter().any(|e| {
        e.json()
            .is_some_and(|j| j["type"] == "approval_resolved" && j["by"] == "policy")
    });
    assert!(by_policy, "the second read was answered by the grant");
    reference
        .play(&execute)
        .expect("a read grant does not cover an execute");
    // The user clicks a reject whose id is also an allow_always's: the client takes it for the
    // allow_always and remembers deletes; the grant turn is kept, so the next delete it approves
    // by itself is judged with it.
    reference
        .play(&seed("grant-by-a-colliding-id.json"))
        .expect("the user's click");
    let delete = fuzz::decode(
        br#"{"announce":{"kind":"delete","title":"rm a"},"request":{"sparse":{"kind":"delete"}},"options":[{"id":"once","name":"Allow once","kind":"allow_once"},{"id":"no","name":"Reject","kind":"reject_once"}],"action":"leave"}"#,
    )
    .expect("decodes");
    let approved = reference
        .play(&delete)
        .expect("the remembered delete is judged with its grant");
    assert!(
        approved.record.transcript.iter().any(|e| e
            .json()
            .is_some_and(|j| j["type"] == "approval_resolved" && j["by"] == "policy")),
        "the delete was answered by the remembered grant"
    );

    let mut mutant = driver(ClientSpec::mutant("remembered-any-kind").expect("mutant"));
    mutant.play(&grant).expect("the user grants reads");
    let finding = mutant
        .play(&execute)
        .expect_err("one grant opened every kind");
    let s = &finding.summary;
    assert!(s.contains("auto-approval [fail]"), "{s}");
    assert!(
        s.contains("remembered grants in this session cover only read"),
        "{s}"
    );
    assert!(
        s.contains("reproduces on a freshly started client: NO"),
        "{s}"
    );
}

/// The fuzz target's path (`Driver::check`) hands each clean turn's transcript back to the
/// client as the next turn's prefix instead of copying the handshake: a later turn is still
/// graded on "handshake + grant turns + this turn", numbered from 0, exactly as when every turn
/// is `play`ed (the transcript handed out, the prefix copied).
#[test]
fn checked_turns_leave_the_same_prefix_as_played_turns() {
    let earlier = [
        seed("grant-read-always.json"),
        seed("opencode-bash-cancel.json"),
        seed("claude-bash-leave.json"),
    ];
    let last = seed("grant-then-execute.json");
    // What a transcript is made of, in order: wire frames by method (or answered id), control
    // messages by type, notes by kind.
    let shape = |transcript: &[acp_vocab::transcript::Entry]| -> (Vec<usize>, Vec<String>) {
        let indices = transcript.iter().map(|e| e.index).collect();
        let mut kinds: Vec<String> = transcript
            .iter()
            .map(|e| {
                let j = e.json().cloned().unwrap_or_default();
                let what = j.get("method").or_else(|| j.get("type")).cloned();
                format!("{:?} {}", e.direction, what.unwrap_or(j["id"].clone()))
            })
            .collect();
        // Control events and wire frames may interleave differently between two clients.
        kinds.sort();
        (indices, kinds)
    };
    let mut played = driver(ClientSpec::reference().expect("reference"));
    let mut checked = driver(ClientSpec::reference().expect("reference"));
    for turn in &earlier {
        played.play(turn).expect("clean turn");
        checked.check(turn).expect("clean turn");
    }
    let played = played.play(&last).expect("clean turn").record.transcript;
    let checked = checked.play(&last).expect("clean turn").record.transcript;
    let (indices, kinds) = shape(&checked);
    assert_eq!(indices, (0..checked.len()).collect::<Vec<_>>());
    assert_eq!((indices, kinds), shape(&played));
    let prompts = checked
        .iter()
        .filter(|e| e.json().is_some_and(|j| j["method"] == "session/prompt"))
        .count();
    assert_eq!(
        prompts, 2,
        "the grant turn and this one, not the turns between"
    );
}

/// A policy seed written as a scenario replays under the policy its header names: the reference
/// client started with that `--policy` answers by itself, the user's Stop meant for the pending
/// request is skipped (no card ever pends), and every check passes; the scenario's `cancelled`
/// branch is not taken.
#[test]
fn a_policy_seed_as_a_scenario_replays_under_its_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let artifact = seeds_dir().join("policy-workspace-write-edit-inside.json");
    let path = fuzz::scenario::write_regression(&artifact, dir.path(), Some("edit-inside"), None)
        .expect("scenario written");
    let text = std::fs::read_to_string(&path).expect("scenario");
    assert!(text.contains("`--policy workspace-write`"), "{text}");
    let scenario = acp_fake_agents::scenario::load(&path).expect("parses");
    let case = scenario.cases().remove(0);
    let cfg = RunConfig::new(dir.path().to_path_buf()).expect("run config");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut client = ClientSpec::reference().expect("reference");
    client
        .argv
        .extend(["--policy".to_owned(), "workspace-write".to_owned()]);
    let result = runtime.block_on(run_case(&case, &client, &cfg));
    for t in &result.trials {
        assert!(
            matches!(t.grade, Grade::Pass | Grade::NotApplicable),
            "{} [{}] {}",
            t.check,
            t.grade.as_str(),
            t.message
        );
    }
    let notes: Vec<&serde_json::Value> = result
        .record
        .transcript
        .iter()
        .filter_map(|e| e.json())
        .collect();
    assert!(
        notes.iter().any(|j| j["type"] == "user_cancel_skipped"),
        "the Stop was skipped"
    );
    assert!(
        notes
            .iter()
            .any(|j| j["type"] == "approval_resolved" && j["by"] == "policy"),
        "answered by the client itself"
    );
}
