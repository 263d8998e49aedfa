//! Self-tests (docs/architecture.md §6): every check can fail. The reference client passes every
//! check of every scenario; each field-bug mutant of it (clients/README.md) fails exactly the set
//! of checks its bug breaks, across the whole scenario corpus; and every check is failed by some
//! mutant — a check that nothing can fail is a defect.
//!
//! The table (`Mutant::checks` in clients/reference/src/mutation/checks.rs, the one place it is
//! kept; clients/README.md is checked against it by `tests/docs.rs`) says *which checks* fail per
//! mutant, never how often, so scenarios can be added without touching it unless a new scenario
//! makes a mutant break a check it did not break before.
//!
//! All clients × all cases run as one batch with bounded concurrency, so the test costs about one
//! corpus run per mutant divided by the number of parallel cases (`cargo test -- --nocapture`
//! prints the matrix and the time; `ACP_SELF_TEST_JOBS=<n>` overrides how many cases run at once).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_harness::client_spec::ClientSpec;
use acp_harness::runner::{CaseResult, RunConfig, run_case};
use acp_harness::suite;
use acp_judge::checks::{Grade, all_checks};
use acp_judge::record::RunEnd;
use acp_reference_client::mutation::Mutant;

/// Each mutant (clients/README.md) and the exact set of check ids it fails (`fail` or `warn`)
/// somewhere in the corpus: the reference client's own table (`Mutant::checks`), the one place
/// it is kept.
fn mutants() -> Vec<(&'static str, &'static [&'static str])> {
    Mutant::ALL.iter().map(|m| (m.name(), m.checks())).collect()
}

/// The reference client under each policy it ships with: with none it asks for everything; with
/// one it approves by itself what the policy allows, and must still pass everything.
const REFERENCE_POLICIES: &[&str] = &["read-only", "workspace-write"];

/// Cases in flight at once. Cases mostly wait on pipes, timers and scripted settle times, so
/// many more than the number of cores keep the machine busy without starving anyone: on two
/// cores, 6 in flight used 52 % of the CPU and took 410 s, 24 took 159 s. Verdicts do not
/// depend on this number (the step timeout counts only time the harness was not starved).
fn jobs() -> usize {
    if let Some(n) = std::env::var("ACP_SELF_TEST_JOBS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n.max(1);
    }
    std::thread::available_parallelism().map_or(2, |n| n.get()) * 12
}

/// Every client on every case of the corpus, one batch. Returns results per client name.
fn run_everything(clients: Vec<(String, ClientSpec)>) -> BTreeMap<String, Vec<CaseResult>> {
    let dir = suite::scenarios_dir(None).expect("scenarios directory");
    let cfg = RunConfig::new(dir.clone()).expect("run config");
    let cases = suite::load_cases(&dir).expect("scenarios parse");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(async {
        let gate = Arc::new(tokio::sync::Semaphore::new(jobs()));
        let mut tasks = Vec::new();
        for (name, client) in &clients {
            for case in &cases {
                let (gate, case, client) = (gate.clone(), case.clone(), client.clone());
                let mut cfg = cfg.clone();
                // This mutant never shows a turn end, so each of its cases waits out the
                // settle time: a second is enough to see that, and saves a third of the test.
                if name == "turn-never-ended" {
                    cfg.settle_timeout = Some(Duration::from_secs(1));
                }
                let name = name.clone();
                tasks.push(tokio::spawn(async move {
                    let _permit = gate.acquire_owned().await;
                    (name, run_case(&case, &client, &cfg).await)
                }));
            }
        }
        let mut out: BTreeMap<String, Vec<CaseResult>> = BTreeMap::new();
        for task in tasks {
            let (name, result) = task.await.expect("a case task panicked");
            out.entry(name).or_default().push(result);
        }
        out
    })
}

/// Check ids graded `fail` or `warn` anywhere.
fn failed_checks(results: &[CaseResult]) -> BTreeSet<&'static str> {
    results
        .iter()
        .flat_map(|r| &r.trials)
        .filter(|t| matches!(t.grade, Grade::Fail | Grade::Warn))
        .map(|t| t.check)
        .collect()
}

/// Trials without a verdict that the client's bug does not explain: any `error`, a `crash` of a
/// mutant in a case where no check names what went wrong, and a `timeout` in a case where no
/// check names what went wrong (or the whole case timed out).
fn unexplained(results: &[CaseResult], mutant: bool) -> Vec<String> {
    let mut out = Vec::new();
    for r in results {
        let named = r
            .trials
            .iter()
            .any(|t| matches!(t.grade, Grade::Fail | Grade::Warn));
        for t in &r.trials {
            let explained = match t.grade {
                Grade::Timeout => {
                    mutant && named && matches!(r.record.end, RunEnd::Incomplete { .. })
                }
                // A crash the mutant's bug causes is explained when a check of the case names
                // it (`unknown-messages` names the frame the client died of).
                Grade::Crash => mutant && named && matches!(r.record.end, RunEnd::Crash { .. }),
                Grade::Error => false,
                _ => true,
            };
            if !explained {
                out.push(format!(
                    "{}::{} [{}] {}",
                    r.record.meta.case_id,
                    t.check,
                    t.grade.as_str(),
                    t.message
                ));
            }
        }
    }
    out
}

/// Issue 42, must-2: every check gives one grade whichever pipe the harness read first. Each
/// recorded case is regraded in every other order its client's events and wire frames could
/// have arrived in (`testkit::arrival_orders`: an event read a few client frames earlier, or
/// later past any frame; the harness's commands and notes fixed), and each check must give the
/// grade it gave as recorded. `schema` reads no event and is left out (it is the costly one).
fn order_dependent(results: &[CaseResult]) -> Vec<String> {
    use acp_judge::checks::testkit::arrival_orders;
    use acp_judge::wire_model::WireModel;
    let checks: Vec<_> = all_checks()
        .into_iter()
        .filter(|c| c.id() != "schema")
        .collect();
    let mut out = Vec::new();
    for r in results.iter().filter(|r| r.record.control_plane) {
        let model = WireModel::new(&r.record.transcript);
        let recorded: Vec<Grade> = checks
            .iter()
            .map(|c| c.evaluate_with(&r.record, &model).grade)
            .collect();
        for transcript in arrival_orders(&r.record.transcript) {
            let variant = acp_judge::record::CaseRecord {
                transcript,
                ..r.record.clone()
            };
            let model = WireModel::new(&variant.transcript);
            for (check, grade) in checks.iter().zip(&recorded) {
                let other = check.evaluate_with(&variant, &model).grade;
                if other != *grade {
                    out.push(format!(
                        "{}::{}: {} as recorded, {} in another arrival order",
                        r.record.meta.case_id,
                        check.id(),
                        grade.as_str(),
                        other.as_str()
                    ));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn describe(results: &[CaseResult]) -> String {
    results
        .iter()
        .flat_map(|r| {
            r.trials
                .iter()
                .filter(|t| !matches!(t.grade, Grade::Pass | Grade::NotApplicable))
                .map(move |t| {
                    format!(
                        "{}::{} [{}]\n{}",
                        r.record.meta.case_id,
                        t.check,
                        t.grade.as_str(),
                        t.message
                    )
                })
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The check × mutant matrix, for people (`--nocapture`) and the issue note.
fn matrix(failed: &BTreeMap<&str, BTreeSet<&'static str>>) -> String {
    let checks: Vec<&str> = all_checks().iter().map(|c| c.id()).collect();
    let mut out = format!("{:<28}", "mutant \\ check");
    for c in &checks {
        out.push_str(&format!(" {c}"));
    }
    out.push('\n');
    for (mutant, set) in failed {
        out.push_str(&format!("{mutant:<28}"));
        for c in &checks {
            let mark = if set.contains(c) { "X" } else { "." };
            out.push_str(&format!(" {mark:^w$}", w = c.len()));
        }
        out.push('\n');
    }
    out
}

#[test]
fn the_reference_passes_everything_and_each_mutant_fails_exactly_its_checks() {
    let started = Instant::now();
    let mut clients = vec![(
        "reference".to_owned(),
        ClientSpec::reference().expect("reference client"),
    )];
    for policy in REFERENCE_POLICIES {
        let mut spec = ClientSpec::reference().expect("reference client");
        spec.argv
            .extend(["--policy".to_owned(), policy.to_string()]);
        clients.push((format!("reference --policy {policy}"), spec));
    }
    for (name, _) in mutants() {
        clients.push((
            name.to_string(),
            ClientSpec::mutant(name).expect("mutant client"),
        ));
    }
    let results = run_everything(clients);
    let cases = results["reference"].len();

    // The reference client, under every policy: nothing but pass and not_applicable.
    let references = std::iter::once("reference".to_owned()).chain(
        REFERENCE_POLICIES
            .iter()
            .map(|p| format!("reference --policy {p}")),
    );
    for name in references {
        let list = &results[&name];
        assert!(!list.is_empty());
        let bad = unexplained(list, false);
        assert!(
            failed_checks(list).is_empty() && bad.is_empty(),
            "{name} must pass everything:\n{}",
            describe(list)
        );
    }
    // Every check passes somewhere.
    let reference = &results["reference"];
    for check in all_checks() {
        assert!(
            reference
                .iter()
                .flat_map(|r| &r.trials)
                .any(|t| t.check == check.id() && t.grade == Grade::Pass),
            "no scenario exercises {}",
            check.id()
        );
    }

    // The mutants: exactly their checks, and no verdict-less trial their bug does not explain.
    let mut failed: BTreeMap<&str, BTreeSet<&'static str>> = BTreeMap::new();
    let mut mismatches = Vec::new();
    for (name, expected) in mutants() {
        let got = failed_checks(&results[name]);
        let want: BTreeSet<&str> = expected.iter().copied().collect();
        if got != want {
            mismatches.push(format!(
                "mutant {name} failed {got:?}, expected exactly {want:?}:\n{}",
                describe(&results[name])
            ));
        }
        let bad = unexplained(&results[name], true);
        if !bad.is_empty() {
            mismatches.push(format!(
                "mutant {name}: trials without a verdict its bug explains:\n{}",
                bad.join("\n")
            ));
        }
        failed.insert(name, got);
    }
    for (name, list) in &results {
        let busy: f64 = list.iter().map(|r| r.duration.as_secs_f64()).sum();
        let slow: Vec<String> = list
            .iter()
            .filter(|r| r.duration.as_secs_f64() > 2.0)
            .map(|r| r.record.meta.case_id.clone())
            .collect();
        eprintln!("{name:<28} {busy:>7.1} s in cases; slow: {}", slow.len());
    }
    eprintln!(
        "{} mutants × {cases} cases (+ the reference) in {:.1} s, {} at a time\n{}",
        Mutant::ALL.len(),
        started.elapsed().as_secs_f64(),
        jobs(),
        matrix(&failed)
    );
    // One grade per check in every arrival order, for every client of the run.
    let ordered = Instant::now();
    let dependent: Vec<String> = results
        .iter()
        .flat_map(|(name, list)| {
            order_dependent(list)
                .into_iter()
                .map(move |line| format!("{name}: {line}"))
        })
        .collect();
    eprintln!(
        "every arrival order regraded in {:.1} s",
        ordered.elapsed().as_secs_f64()
    );
    if !dependent.is_empty() {
        mismatches.push(format!(
            "grades that depend on which pipe the harness read first:\n{}",
            dependent.join("\n")
        ));
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n\n"));
}

#[test]
fn every_check_is_failed_by_some_mutant() {
    for check in all_checks() {
        assert!(
            mutants()
                .iter()
                .any(|(_, checks)| checks.contains(&check.id())),
            "no mutant fails {}: a check that nothing can fail is a defect",
            check.id()
        );
    }
}

/// Issue 42, must-3: a client that authenticates with a method id no step takes gets the real
/// agent's error at once (noted `unmatched_request`), reports it, and so fails `authenticate`
/// only: `session-open` no longer blames it for the fake agent's silence.
#[test]
fn a_wrong_authenticate_is_answered_as_the_agent_does_and_only_authenticate_fails() {
    let dir = suite::scenarios_dir(None).expect("scenarios directory");
    let cfg = RunConfig::new(dir.clone()).expect("run config");
    let cases: Vec<_> = suite::load_cases(&dir)
        .expect("scenarios parse")
        .into_iter()
        .filter(|c| {
            matches!(
                c.id.as_str(),
                "claude-agent-acp@0.25/auth-required-no-method" | "codex-acp@0.13/auth-required"
            )
        })
        .collect();
    assert_eq!(cases.len(), 2, "both auth cases are in the corpus");
    let client = ClientSpec::mutant("authenticate-unadvertised").expect("mutant client");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    for case in &cases {
        let result = runtime.block_on(run_case(case, &client, &cfg));
        let grade = |id: &str| {
            result
                .trials
                .iter()
                .find(|t| t.check == id)
                .map(|t| (t.grade, t.message.clone()))
                .expect("trial")
        };
        assert_eq!(grade("authenticate").0, Grade::Fail, "{}", case.id);
        let (open, message) = grade("session-open");
        assert_eq!(open, Grade::Pass, "{}: {message}", case.id);
        let answered = result.record.transcript.iter().any(|e| {
            e.note().is_some_and(|n| {
                matches!(
                    n,
                    acp_vocab::note::Note::UnmatchedRequest { method, error: Some(_), .. }
                        if method == "authenticate"
                )
            })
        });
        assert!(
            answered,
            "{}: the wrong authenticate is noted answered",
            case.id
        );
    }
}
