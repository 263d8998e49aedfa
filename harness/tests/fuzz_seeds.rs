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

use acp_harness::checks::Grade;
use acp_harness::client_spec::ClientSpec;
use acp_harness::fuzz::{self, Driver, DriverConfig, PermissionTurn};
use acp_harness::runner::{RunConfig, run_case};

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
