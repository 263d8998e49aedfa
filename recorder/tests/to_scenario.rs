//! `acp-record to-scenario` over the committed recordings: each generated file loads with the
//! fake-agents scenario parser, and its steps say what the recording did. Nothing is recorded.

use std::path::{Path, PathBuf};

use acp_fake_agents::scenario::{self, Choice, Expected, StepKind, UserStep};
use acp_recorder::scenario::from_recording;

fn recordings() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings")
}

/// Writes the generated scenario where the loader expects one (`<agent>/<version>/<id>.toml`)
/// and loads it with the engine's loader.
fn generate_and_load(rec: &Path) -> (String, scenario::Scenario) {
    let text = from_recording(rec).unwrap_or_else(|e| panic!("{}: {e:#}", rec.display()));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("generated.toml");
    std::fs::write(&path, &text).unwrap();
    let loaded = scenario::load(&path).unwrap_or_else(|e| {
        panic!(
            "{}: the generated scenario does not load: {e}",
            rec.display()
        )
    });
    (text, loaded)
}

fn user_steps(s: &scenario::Scenario) -> Vec<&UserStep> {
    s.all_steps()
        .into_iter()
        .filter_map(|st| match &st.kind {
            StepKind::User(action) => Some(action),
            _ => None,
        })
        .collect()
}

#[test]
fn every_committed_recording_becomes_a_loadable_scenario() {
    let mut seen = 0;
    for agent in std::fs::read_dir(recordings()).unwrap() {
        let agent = agent.unwrap().path();
        if !agent.is_dir() {
            continue;
        }
        for version in std::fs::read_dir(&agent).unwrap() {
            for file in std::fs::read_dir(version.unwrap().path()).unwrap() {
                let path = file.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name.ends_with(".jsonl") && !name.ends_with(".model.jsonl") {
                    generate_and_load(&path);
                    seen += 1;
                }
            }
        }
    }
    assert!(seen >= 21, "only {seen} recordings found");
}

#[test]
fn edit_recording_replays_its_requests_and_the_users_choice() {
    let rec = recordings().join("codex-acp/2.6.0/edit.jsonl");
    let (text, s) = generate_and_load(&rec);
    assert_eq!(s.meta.agent, "codex-acp");
    assert_eq!(s.meta.version, "2.6");
    assert_eq!(s.meta.id, "edit");
    assert!(
        s.meta.provenance[0].contains("@agentclientprotocol/codex-acp@2.6.0")
            && s.meta.provenance[0].contains("recorder/scripts/codex-acp/edit.toml"),
        "{:?}",
        s.meta.provenance
    );
    // Each client request is an expect, in the recorded order.
    let expects: Vec<&str> = s
        .all_steps()
        .into_iter()
        .filter_map(|st| match &st.kind {
            StepKind::Expect(e) => match &e.what {
                Expected::Method(m) => Some(m.as_str()),
                Expected::Response => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        expects,
        [
            "initialize",
            "session/new",
            "session/set_mode",
            "session/prompt"
        ]
    );
    // The user's side: open, read-only mode, the prompt, and the option the recording chose.
    let users = user_steps(&s);
    assert!(matches!(users[0], UserStep::NewSession { .. }));
    assert!(matches!(users[1], UserStep::SetMode { mode, .. } if mode == "read-only"));
    assert!(
        matches!(users[2], UserStep::Prompt { text, .. } if text == "Fix the typo in notes.md")
    );
    assert!(
        matches!(users[3], UserStep::Choose { request, choice: Choice::Option(o), .. }
            if request == "perm" && o == "allow_once"),
        "{:?}",
        users[3]
    );
    // The agent's request keeps its recorded id; paths and the session id are templates.
    assert!(
        text.contains(r#"send = '''{"jsonrpc":"2.0","id":0,"method":"session/request_permission""#)
    );
    assert!(text.contains(r#""locations":[{"path":"${cwd}/notes.md"}]"#));
    assert!(text.contains(r#""sessionId":"${sessionId}""#));
    assert!(!text.contains("<proj>") && !text.contains("<session-1>"));
    assert!(text.contains("[[setup]]\nfile = \"${cwd}/notes.md\""));
}

#[test]
fn root_relative_titles_become_the_from_root_templates() {
    // opencode titles a file by its path from the worktree, `/` in a folder that is no git
    // repository: the recorder wrote `<proj:noslash>` / `<outside:noslash>`.
    let (text, _) = generate_and_load(&recordings().join("opencode/1.18.33/read.jsonl"));
    assert!(
        text.contains(r#""title":"${cwdFromRoot}/notes.md""#),
        "{text}"
    );
    let (text, _) = generate_and_load(&recordings().join("opencode/1.18.33/write-outside.jsonl"));
    assert!(
        text.contains(r#""title":"${outsideFromRoot}/summary.md""#),
        "{text}"
    );
    assert!(!text.contains(":noslash>"));
}

#[test]
fn cancel_recording_presses_stop_on_the_pending_request() {
    let rec = recordings().join("claude-agent-acp/0.101.0/cancel.jsonl");
    let (_, s) = generate_and_load(&rec);
    assert!(s.meta.family.is_some());
    let users = user_steps(&s);
    assert!(
        users
            .iter()
            .any(|u| matches!(u, UserStep::Cancel { pending: Some(p), .. } if p == "perm")),
        "{users:?}"
    );
    assert!(!users.iter().any(|u| matches!(u, UserStep::Choose { .. })));
}

#[test]
fn not_a_recording_is_a_clear_error() {
    let err = format!(
        "{:#}",
        from_recording(&recordings().join("codex-acp/2.6.0/edit.model.jsonl")).unwrap_err()
    );
    assert!(err.contains("not a recording"), "{err}");
    let err = format!(
        "{:#}",
        from_recording(Path::new("no/such/case.jsonl")).unwrap_err()
    );
    assert!(err.contains("cannot read"), "{err}");
}
