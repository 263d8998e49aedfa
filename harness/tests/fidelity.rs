//! Fidelity: the fake agents replay what the real agents send.
//!
//! Every scenario that links upstream recordings of the real agent (`recording = [...]` in
//! `[scenario]`, paths below `tests/fidelity/recordings/`; links below `recordings/` name the
//! project's own recordings and are `fidelity_recorded.rs`'s) is played against the reference client, and the
//! frames our fake agent sent are compared with the recorded ones (`shape.rs` says what "same
//! shape" means; `recording.rs` how recordings and transcripts become comparable frames):
//! * a codex-acp fixture (`*.json`) is a fragment of a turn: its frames must appear, in order,
//!   among ours;
//! * a claude-agent-acp golden file (`*.jsonl`) is a whole scenario: ours must be the same frames,
//!   one for one.
//!
//! A scenario that expands into one run per option (`each = true`) is compared in its first run.
//! A link to a recording that is not in the repository fails the test, and so does a recording in
//! the repository that no scenario links (stale test data).

#[path = "fidelity/recording.rs"]
mod recording;
#[path = "fidelity/shape.rs"]
mod shape;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use acp_fake_agents::scenario::{self, Scenario};
use acp_harness::client_spec::ClientSpec;
use acp_harness::runner::{RunConfig, run_case};
use acp_harness::suite;
use acp_judge::record::RunEnd;

use recording::{Frame, INITIALIZE, Mode, SESSION_NEW};

fn recordings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fidelity/recordings")
}

/// Links to the project's own recordings (`recordings/…`) are `fidelity_recorded.rs`'s.
fn upstream(rec: &str) -> bool {
    !rec.starts_with("recordings/")
}

fn linked_scenarios() -> Vec<Scenario> {
    let dir = suite::scenarios_dir(None).expect("scenarios directory");
    let (scenarios, errors) = scenario::load_dir(&dir);
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        errors.is_empty(),
        "scenarios do not parse:\n{}",
        errors.join("\n")
    );
    scenarios
        .into_iter()
        .filter(|s| s.meta.recording.iter().any(|r| upstream(r)))
        .collect()
}

#[test]
fn every_linked_recording_is_in_the_repository_and_every_recording_is_linked() {
    let scenarios = linked_scenarios();
    assert!(!scenarios.is_empty(), "no scenario links a recording");
    let root = recordings_dir();
    let mut linked = BTreeSet::new();
    let mut missing = Vec::new();
    for s in &scenarios {
        for rec in s.meta.recording.iter().filter(|r| upstream(r)) {
            if !root.join(rec).is_file() {
                missing.push(format!(
                    "{} ({}) links {rec}, which is not in {}",
                    s.key(),
                    s.path.display(),
                    root.display()
                ));
            }
            linked.insert(rec.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "linked recordings are missing (copy them from the upstream repository named in their folder's README, with attribution):\n{}",
        missing.join("\n")
    );
    let mut on_disk = Vec::new();
    collect(&root, &root, &mut on_disk);
    let stale: Vec<&String> = on_disk.iter().filter(|f| !linked.contains(*f)).collect();
    assert!(
        stale.is_empty(),
        "recordings no scenario links (link them or delete them): {stale:?}"
    );
}

/// Every `.json`/`.jsonl` below `dir`, relative to `root`, with `/` separators.
fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            collect(root, &path, out);
        } else if path
            .extension()
            .is_some_and(|e| e == "json" || e == "jsonl")
        {
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push(
                rel.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/"),
            );
        }
    }
}

#[test]
fn fake_agent_frames_have_the_recorded_shapes() {
    let scenarios = linked_scenarios();
    let dir = suite::scenarios_dir(None).expect("scenarios directory");
    let cfg = RunConfig::new(dir).expect("run config");
    let client = ClientSpec::reference().expect("reference client");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    let mut failures = Vec::new();
    let mut compared = 0;
    for s in &scenarios {
        let case = s.cases().swap_remove(0);
        let result = runtime.block_on(run_case(&case, &client, &cfg));
        if result.record.end != RunEnd::Completed {
            failures.push(format!(
                "{}: the run did not complete against the reference client: {:?}",
                case.id, result.record.end
            ));
            continue;
        }
        let ours = recording::emitted(&result.record.transcript);
        for rec in s.meta.recording.iter().filter(|r| upstream(r)) {
            let path = recordings_dir().join(rec);
            let (mode, recorded) = match recording::load(&path) {
                Ok(loaded) => loaded,
                Err(e) => {
                    failures.push(format!("{}: recording {rec}: {e}", case.id));
                    continue;
                }
            };
            let problems = match mode {
                Mode::Fragment => compare_fragment(&recorded, &ours),
                Mode::Whole => compare_whole(&recorded, &ours),
            };
            compared += 1;
            if !problems.is_empty() {
                failures.push(format!(
                    "{} vs {rec}:\n  {}",
                    case.id,
                    problems.join("\n  ")
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {compared} recording comparisons failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// The recorded frames must appear in order among ours.
fn compare_fragment(recorded: &[Frame], ours: &[Frame]) -> Vec<String> {
    let mut from = 0;
    for r in recorded {
        let tag = r.tag();
        let found = ours[from..]
            .iter()
            .position(|o| o.tag() == tag && shape::diff(&r.payload, &o.payload).is_empty());
        match found {
            Some(k) => from += k + 1,
            None => {
                let closest = ours[from..]
                    .iter()
                    .chain(&ours[..from])
                    .find(|o| o.tag() == tag);
                let why = match closest {
                    Some(o) => format!(
                        "closest of ours, {} ({}): {}",
                        o.origin,
                        o.label,
                        shape::diff(&r.payload, &o.payload).join("; ")
                    ),
                    None => "we sent no frame of that kind".to_owned(),
                };
                return vec![format!(
                    "recorded {} `{tag}` has no match after our frame {from}: {why}",
                    r.origin
                )];
            }
        }
    }
    Vec::new()
}

/// Ours must be the recorded frames, one for one (handshake results only if recorded).
fn compare_whole(recorded: &[Frame], ours: &[Frame]) -> Vec<String> {
    let has = |label: &str| recorded.iter().any(|r| r.label == label);
    let ours: Vec<&Frame> = ours
        .iter()
        .filter(|o| {
            (o.label != INITIALIZE || has(INITIALIZE))
                && (o.label != SESSION_NEW || has(SESSION_NEW))
        })
        .collect();
    let mut problems = Vec::new();
    if ours.len() != recorded.len() {
        let list = |frames: Vec<String>| frames.join(", ");
        problems.push(format!(
            "{} frames recorded, {} ours.\n    recorded: {}\n    ours:     {}",
            recorded.len(),
            ours.len(),
            list(recorded.iter().map(Frame::tag).collect()),
            list(ours.iter().map(|o| o.tag()).collect())
        ));
    }
    for (r, o) in recorded.iter().zip(&ours) {
        if r.tag() != o.tag() {
            problems.push(format!(
                "recorded {} is `{}`, ours {} is `{}`",
                r.origin,
                r.tag(),
                o.origin,
                o.tag()
            ));
            break;
        }
        let d = shape::diff(&r.payload, &o.payload);
        if !d.is_empty() {
            problems.push(format!(
                "recorded {} / ours {} (`{}`): {}",
                r.origin,
                o.origin,
                r.tag(),
                d.join("; ")
            ));
        }
    }
    problems
}
