//! Fidelity against the project's own recordings of the real agents (`recordings/`, made with
//! `acp-record`): every scenario whose `[scenario]` links one (`recording = ["recordings/<agent>/
//! <version>/<case>.jsonl"]`) is played by the engine against a scripted client that replays the
//! recording's client side (`fidelity/replay.rs`), and the frames our fake agent sent must be the
//! recorded agent frames, frame for frame, after the normalisation the recorder applied to the
//! recording (`acp_recorder::normalise`), applied to ours the same way:
//! * the case's folders become `<proj>`, `<outside>`, `<home>`, `<run>` (and the recorder's
//!   `:noslash` / `-dashed` forms);
//! * the session ids our agent answered become `<session-1>`, `<session-2>`, …;
//! * UUIDs and opencode's minted ids are numbered by first appearance;
//! * date-times become the epoch; numbers under time keys (`…At`, `…durationMs`, `pid`, …) and
//!   `PGID: N` become 0;
//! * non-zero token counts (keys ending in `tokens`, a `usage_update`'s `used`) become 1.
//!
//! Nothing else is tolerated: methods, kinds, titles, option ids and names, texts, order and the
//! number of frames must be equal, and so must the ids of agent requests (the client replays the
//! recorded replies with the ids our agent gave, so the ids themselves are compared as sent).
//! docs/fidelity-recordings.md says how to link a recording and what the normalisation is.
//!
//! A mismatch names the scenario, the recording, the frame (its number among the agent's frames and
//! the recording's `i`), the field and both values.

#[path = "fidelity/replay.rs"]
mod replay;
#[path = "fidelity/stand_ins.rs"]
mod stand_ins;

use std::path::{Path, PathBuf};

use acp_fake_agents::scenario::{self, Scenario};
use acp_harness::suite;
use acp_recorder::normalise::Normaliser;
use acp_vocab::run_end::RunEnd;
use serde_json::Value;

use replay::{Dirs, Entry, TIMED, timed};

/// Links below this prefix name the project's recordings (relative to the repository root);
/// other links name the upstream test data of `fidelity.rs`.
const PREFIX: &str = "recordings/";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the harness crate sits in the workspace")
        .to_path_buf()
}

fn scenarios() -> Vec<Scenario> {
    let dir = suite::scenarios_dir(None).expect("scenarios directory");
    let (scenarios, errors) = scenario::load_dir(&dir);
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        errors.is_empty(),
        "scenarios do not parse:\n{}",
        errors.join("\n")
    );
    scenarios
}

/// Every (scenario, recording) pair a scenario links below `recordings/`.
fn links(scenarios: &[Scenario]) -> Vec<(&Scenario, &str)> {
    scenarios
        .iter()
        .flat_map(|s| {
            s.meta
                .recording
                .iter()
                .filter(|r| r.starts_with(PREFIX))
                .map(move |r| (s, r.as_str()))
        })
        .collect()
}

#[test]
fn linked_recordings_exist_and_match_the_scenarios_version() {
    let scenarios = scenarios();
    let links = links(&scenarios);
    assert!(!links.is_empty(), "no scenario links a project recording");
    let mut bad = Vec::new();
    for (s, rec) in links {
        let path = repo_root().join(rec);
        // recordings/<agent>/<version>/<case>.jsonl
        let parts: Vec<&str> = rec.split('/').collect();
        if parts.len() != 4 || !rec.ends_with(".jsonl") || rec.ends_with(".model.jsonl") {
            bad.push(format!(
                "{} links {rec}: project recordings are recordings/<agent>/<version>/<case>.jsonl",
                s.key()
            ));
            continue;
        }
        if !path.is_file() {
            bad.push(format!(
                "{} links {rec}, which is not in the repository",
                s.key()
            ));
            continue;
        }
        let (agent, version) = (parts[1], parts[2]);
        if agent != s.meta.agent || !stand_ins::proves(agent, &s.meta.version, version) {
            bad.push(format!(
                "{} links {rec}: a recording of {agent} {version}, not of {}@{}",
                s.key(),
                s.meta.agent,
                s.meta.version
            ));
        }
    }
    assert!(bad.is_empty(), "bad recording links:\n{}", bad.join("\n"));
}

#[test]
fn scenarios_replay_their_recordings_frame_for_frame() {
    let scenarios = scenarios();
    let links = links(&scenarios);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut failures = Vec::new();
    for (s, rec) in &links {
        if let Err(problem) = runtime.block_on(check(s, rec)) {
            failures.push(format!("{} vs {rec}:\n  {problem}", s.key()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} recording replays differ:\n\n{}",
        failures.len(),
        links.len(),
        failures.join("\n\n")
    );
}

/// Replays `rec` against `s` and compares; `Err` says what differs.
async fn check(s: &Scenario, rec: &str) -> Result<(), String> {
    let mut recording =
        replay::load(&repo_root().join(rec)).map_err(|e| format!("recording: {e}"))?;
    if let Some((_, mode)) = s.vars.iter().find(|(k, _)| k == "mode") {
        recording =
            replay::starting_in_mode(&recording, mode).map_err(|e| format!("recording: {e}"))?;
    }
    let case = s.cases().swap_remove(0);
    let tmp = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
    let run = tmp.path().join("run");
    let (cwd, outside, home) = (run.join("proj"), run.join("outside"), run.join("home"));
    for d in [&cwd, &outside, &home] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    scenario::setup::create(s, &cwd, &outside).map_err(|e| format!("[[setup]]: {e}"))?;
    let dirs = Dirs {
        run: &run,
        cwd: &cwd,
        outside: &outside,
        home: &home,
    };
    let played = replay::replay(&case, &recording, &dirs).await;

    let mut ours = normalise(&played.agent, &dirs);
    let mut recorded: Vec<&Entry> = recording.iter().filter(|e| !e.from_client).collect();
    let mut problems = Vec::new();
    // Sent from a timer, not in answer to anything: compared in content and number, not place.
    let recorded_timed: Vec<&Entry> = recorded
        .iter()
        .copied()
        .filter(|e| timed(&e.json))
        .collect();
    let ours_timed: Vec<Value> = ours.iter().filter(|f| timed(f)).cloned().collect();
    problems.extend(compare_command_lists(&recorded_timed, &ours_timed));
    recorded.retain(|e| !timed(&e.json));
    ours.retain(|f| !timed(f));
    // The recorder stops once the last user action is answered: what the agent sends after that
    // (qwen's prompt suggestion) is not in the recording, so it is not compared.
    if ours.len() > recorded.len()
        && recorded
            .last()
            .is_some_and(|e| answers_last_request(&recording, e))
    {
        ours.truncate(recorded.len());
    }
    problems.extend(compare(&recorded, &ours));
    if !played.not_json.is_empty() {
        problems.push(format!(
            "ours sent lines that are not JSON: {:?}",
            played.not_json
        ));
    }
    match &played.end {
        Some(RunEnd::Completed) | None => {}
        Some(other) => problems.push(format!("the scenario did not complete: {other:?}")),
    }
    if problems.is_empty() {
        return Ok(());
    }
    // How the replay went explains most differences (a frame we never sent).
    problems.extend(played.notes.iter().map(|n| format!("replay: {n}")));
    Err(problems.join("\n  "))
}

/// The command lists: as many as recorded, and every command name we send is one the agent sent
/// (the profiles send an abridged list; `large-commands-update` sends a recorded one verbatim).
fn compare_command_lists(recorded: &[&Entry], ours: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    if recorded.len() != ours.len() {
        problems.push(format!(
            "{} {TIMED} frames recorded, {} ours",
            recorded.len(),
            ours.len()
        ));
    }
    let names = |f: &Value| -> Vec<String> {
        f.pointer("/params/update/availableCommands")
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    for (k, (r, o)) in recorded.iter().zip(ours).enumerate() {
        let known = names(&r.json);
        let invented: Vec<String> = names(o)
            .into_iter()
            .filter(|n| !known.contains(n))
            .collect();
        if !invented.is_empty() {
            problems.push(format!(
                "{TIMED} {} (recording i={}): ours lists commands the agent did not: {invented:?}",
                k + 1,
                r.index
            ));
        }
    }
    problems
}

/// `e` is the agent's answer to the recording's last client request.
fn answers_last_request(recording: &[Entry], e: &Entry) -> bool {
    let last_request = recording
        .iter()
        .rev()
        .find(|c| c.from_client && c.json.get("method").is_some() && c.json.get("id").is_some());
    match last_request {
        Some(req) => {
            e.json.get("method").is_none()
                && e.json.get("id") == req.json.get("id")
                && recording
                    .iter()
                    .all(|c| !c.from_client || c.index < e.index)
        }
        None => false,
    }
}

/// Our frames with the recorder's normalisation for this run's folders and session ids.
fn normalise(frames: &[Value], dirs: &Dirs<'_>) -> Vec<Value> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let noslash = |p: &Path| s(p).trim_start_matches('/').to_owned();
    let mut n = Normaliser::new(vec![
        (s(dirs.cwd), "<proj>".into()),
        (s(dirs.outside), "<outside>".into()),
        (s(dirs.home), "<home>".into()),
        (s(dirs.run), "<run>".into()),
        (s(dirs.cwd).replace(['/', '.'], "-"), "<proj-dashed>".into()),
        (noslash(dirs.cwd), "<proj:noslash>".into()),
        (noslash(dirs.outside), "<outside:noslash>".into()),
        (noslash(dirs.run), "<run:noslash>".into()),
    ]);
    for id in replay::session_ids(frames) {
        n.add_session(&id);
    }
    frames.iter().map(|f| n.value(f)).collect()
}

/// How many differing frames a mismatch shows in full.
const SHOWN: usize = 6;

/// The first frames that differ, every field of them that differs, and the count of frames.
fn compare(recorded: &[&Entry], ours: &[Value]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut differing = 0;
    for (k, (r, o)) in recorded.iter().zip(ours).enumerate() {
        let mut d = Vec::new();
        diff(&r.json, o, "", &mut d);
        if d.is_empty() {
            continue;
        }
        differing += 1;
        if differing <= SHOWN {
            problems.push(format!(
                "agent frame {} (recording i={}, `{}`; ours `{}`):\n    {}",
                k + 1,
                r.index,
                tag(&r.json),
                tag(o),
                d.join("\n    ")
            ));
        }
    }
    if differing > SHOWN {
        problems.push(format!("{} more frames differ", differing - SHOWN));
    }
    if recorded.len() != ours.len() {
        let list = |frames: &mut dyn Iterator<Item = &Value>| {
            frames.map(tag).collect::<Vec<_>>().join(", ")
        };
        problems.push(format!(
            "{} agent frames recorded, {} ours.\n    recorded: {}\n    ours:     {}",
            recorded.len(),
            ours.len(),
            list(&mut recorded.iter().map(|e| &e.json)),
            list(&mut ours.iter())
        ));
    }
    problems
}

/// A frame in a few words: method (or `result`/`error` and the id), plus the update type.
fn tag(f: &Value) -> String {
    let head = match (f.get("method").and_then(Value::as_str), f.get("id")) {
        (Some(m), Some(id)) => format!("{m} #{id}"),
        (Some(m), None) => m.to_owned(),
        (None, id) => {
            let what = if f.get("error").is_some() {
                "error"
            } else {
                "result"
            };
            format!("{what} #{}", id.unwrap_or(&Value::Null))
        }
    };
    match f
        .pointer("/params/update/sessionUpdate")
        .and_then(Value::as_str)
    {
        Some(kind) => format!("{head} {kind}"),
        None => head,
    }
}

/// Every difference between a recorded value and ours, as `path: recorded X, ours Y`.
fn diff(r: &Value, o: &Value, path: &str, out: &mut Vec<String>) {
    let at = if path.is_empty() { "/" } else { path };
    match (r, o) {
        (Value::Object(ro), Value::Object(oo)) => {
            for (k, rv) in ro {
                let p = format!("{path}/{k}");
                match oo.get(k) {
                    Some(ov) => diff(rv, ov, &p, out),
                    None => out.push(format!("{p}: recorded {}, ours absent", short(rv))),
                }
            }
            for (k, ov) in oo {
                if !ro.contains_key(k) {
                    out.push(format!("{path}/{k}: recorded absent, ours {}", short(ov)));
                }
            }
        }
        (Value::Array(ra), Value::Array(oa)) => {
            for (i, (rv, ov)) in ra.iter().zip(oa).enumerate() {
                diff(rv, ov, &format!("{path}/{i}"), out);
            }
            if ra.len() != oa.len() {
                out.push(format!(
                    "{at}: {} elements recorded, {} ours",
                    ra.len(),
                    oa.len()
                ));
            }
        }
        _ if r != o => out.push(format!("{at}: recorded {}, ours {}", short(r), short(o))),
        _ => {}
    }
}

/// A value for a message: at most 160 characters of its JSON.
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= 160 {
        text
    } else {
        let head: String = text.chars().take(160).collect();
        format!("{head}… ({} bytes)", text.len())
    }
}

#[test]
fn the_comparison_names_frame_field_and_both_values() {
    let recorded = [Entry {
        index: 8,
        from_client: false,
        json: serde_json::json!({"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","title":"edit","kind":"edit"}}}),
    }];
    let refs: Vec<&Entry> = recorded.iter().collect();
    let same = [recorded[0].json.clone()];
    assert!(compare(&refs, &same).is_empty());
    let ours = [
        serde_json::json!({"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","title":"Edit notes.md","kind":"edit"}}}),
    ];
    let p = compare(&refs, &ours);
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].contains("agent frame 1 (recording i=8"), "{p:?}");
    assert!(
        p[0].contains("/params/update/title: recorded \"edit\", ours \"Edit notes.md\""),
        "{p:?}"
    );
    // A missing frame is named with both lists.
    let p = compare(&refs, &[]);
    assert!(p[0].contains("1 agent frames recorded, 0 ours"), "{p:?}");
}

#[test]
fn a_scenario_that_differs_from_its_recording_fails_with_the_field() {
    let path = repo_root().join("scenarios/qwen-code/0.24/execute-permission.toml");
    let text = std::fs::read_to_string(&path).expect("the qwen-code 0.24 shell scenario");
    assert!(text.contains(r#""title":"Shell""#), "the scenario changed");
    let profiles = acp_fake_agents::profile::Profiles::embedded().expect("profiles");
    let file = path.to_string_lossy();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let rec = "recordings/qwen-code/0.24.4/shell.jsonl";
    let as_is = scenario::parse(&file, &text, profiles).expect("parses");
    assert_eq!(runtime.block_on(check(&as_is, rec)), Ok(()));
    // One title changed: the replay names the frame, the field and both values.
    let changed = text.replacen(r#""title":"Shell""#, r#""title":"Run""#, 1);
    let changed = scenario::parse(&file, &changed, profiles).expect("parses");
    let err = runtime
        .block_on(check(&changed, rec))
        .expect_err("a changed title differs from the recording");
    assert!(
        err.contains("agent frame 3 (recording i=8")
            && err.contains(r#"/params/update/title: recorded "Shell", ours "Run""#),
        "{err}"
    );
}

#[test]
fn a_session_started_in_the_users_mode_drops_only_the_set_mode_exchange() {
    let rec = replay::load(&repo_root().join("recordings/qwen-code/0.24.4/edit.jsonl"))
        .expect("recording");
    let moved = replay::starting_in_mode(&rec, "default").expect("the exchange has its shape");
    let gone: Vec<u64> = rec
        .iter()
        .map(|e| e.index)
        .filter(|i| !moved.iter().any(|m| m.index == *i))
        .collect();
    // session/set_mode, qwen/notify/session/mode-update, its answer.
    assert_eq!(gone, [4, 5, 6]);
    let new = moved
        .iter()
        .find(|e| e.index == 3)
        .expect("session/new answer");
    assert_eq!(new.json["result"]["modes"]["currentModeId"], "default");
    assert_eq!(
        new.json["result"]["configOptions"][0]["currentValue"],
        "default"
    );
    // Another mode, or a recording without the exchange, is left as it is.
    let same = replay::starting_in_mode(&rec, "plan").expect("unchanged");
    assert_eq!(same.len(), rec.len());
    // A command list sent from a timer inside the exchange (codex-acp 1.6.2 `cancel`) is kept.
    let rec = replay::load(&repo_root().join("recordings/codex-acp/1.6.2/cancel.jsonl"))
        .expect("recording");
    let moved = replay::starting_in_mode(&rec, "read-only").expect("the exchange has its shape");
    let commands = |r: &[Entry]| r.iter().filter(|e| timed(&e.json)).count();
    assert_eq!((commands(&rec), commands(&moved)), (1, 1));
    assert!(
        !moved
            .iter()
            .any(|e| e.json.get("method").and_then(Value::as_str) == Some("session/set_mode"))
    );
    let rec = replay::load(&repo_root().join("recordings/qwen-code/0.24.4/edit.jsonl"))
        .expect("recording");
    // An agent request between the set_mode and its answer is not a mode switch.
    let mut odd = rec.clone();
    let at = odd.iter().position(|e| e.index == 5).expect("i=5");
    odd[at].json["id"] = serde_json::json!(99);
    let err = replay::starting_in_mode(&odd, "default").expect_err("not the shape");
    assert!(err.contains("i=5"), "{err}");
}
