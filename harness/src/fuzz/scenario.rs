//! A fuzz turn as a regression scenario (format v1, scenarios/README.md): the frames the driver
//! sent, built by the same [`Names`] builder with template names (`${cwd}`, `${sessionId}`, …),
//! and the fake agent's reaction to the client's answer written as `await` cases that branch
//! exactly as the driver does. `acp-harness fuzz-to-scenario <artifact>` writes it under
//! `scenarios/regressions/fuzz/<id>.toml` (agent `regressions`, version `fuzz`), where the
//! conformance suite of `cargo test` picks it up.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use acp_vocab::method::Method;
use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::frames::{self, Names};
use super::input::{Action, PermissionTurn, Text};

/// The agent name and version regression scenarios are filed under
/// (`scenarios/regressions/fuzz/`).
pub const AGENT: &str = "regressions";
pub const VERSION: &str = "fuzz";

/// A default scenario id for an input: `fuzz-` and 12 hex digits of its FNV-1a hash (stable
/// across runs and Rust versions, so converting the same artifact twice gives the same file).
pub fn default_id(data: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("fuzz-{:012x}", hash >> 16)
}

/// True for a valid scenario id (`[a-z0-9-]+`).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A frame as a one-line TOML literal string. Compact JSON has no newline; `'` and DEL (which a
/// TOML literal string cannot hold) occur only inside JSON strings, where `\u` escapes mean the
/// same characters.
fn literal(frame: &Value) -> String {
    let json = frame
        .to_string()
        .replace('\'', "\\u0027")
        .replace('\u{7f}', "\\u007f");
    format!("'{json}'")
}

/// A TOML basic string.
fn basic(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// The scenario file for `turn`. `source` names the artifact it came from (for the comment).
pub fn to_scenario(turn: &PermissionTurn, id: &str, source: &str) -> String {
    let mut turn = turn.clone();
    // A `choose` step names its option verbatim while the frame's copy is a template: an id with
    // `${` in it cannot be both. Such ids lose their `$`s (every option alike, so collisions
    // stay).
    let renamed = turn.chosen().is_some_and(|o| o.id.as_str().contains("${"));
    if renamed {
        for option in &mut turn.options {
            option.id = Text(option.id.as_str().replace('$', ""));
        }
    }
    let names = Names {
        session_id: "${sessionId}",
        tool_call_id: "${toolCallId}",
        cwd: "${cwd}",
        outside: "${outside}",
        template: true,
    };
    let request_id = frames::request_id(turn.request_id, 1);
    let summary = turn.summary();
    // Comments may not hold control characters; JSON escapes all but DEL.
    let input = serde_json::to_string(&turn)
        .unwrap_or_default()
        .replace('\u{7f}', "\\u007f");

    let mut out = String::new();
    let w = &mut out;
    let _ = writeln!(
        w,
        "# Regression scenario written by `acp-harness fuzz-to-scenario` from a finding of the\n\
         # permission_mapping fuzz target (fuzz/README.md). It replays the turn the fuzzer played,\n\
         # frame for frame; the fake agent reacts to the answer exactly as the fuzz driver does.\n\
         #\n\
         # Artifact: {source}\n\
         # Turn: {summary}"
    );
    if renamed {
        let _ = writeln!(
            w,
            "# Option ids containing `${{` were written without the `$` (a choose step cannot name them)."
        );
    }
    if let Some(flag) = turn.policy.flag() {
        policy_comment(w, id, flag);
    }
    let _ = writeln!(
        w,
        "# Input (a JSON seed for the fuzz target):\n#   {input}\n"
    );
    let _ = writeln!(w, "[scenario]");
    let _ = writeln!(w, "id = {}", basic(id));
    let _ = writeln!(
        w,
        "title = {}",
        basic(&format!("Fuzz regression: {summary}"))
    );
    let _ = writeln!(
        w,
        "agent = \"{AGENT}\"\nversion = \"{VERSION}\"\nfamily = \"permissions\""
    );
    let _ = writeln!(
        w,
        "provenance = [\n  \"fuzz/README.md (permission_mapping target; fuzz-to-scenario)\",\n  \"ACP spec rules R43, R44, R52, R56–R60 (judge/rules.toml)\",\n]"
    );
    step(w, &[("user", basic("new_session"))]);
    step(
        w,
        &[
            ("expect", basic(Method::Initialize.as_str())),
            (
                "reply",
                format!(
                    "'{}'",
                    r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}"#
                ),
            ),
        ],
    );
    step(
        w,
        &[
            ("expect", basic(Method::SessionNew.as_str())),
            ("reply", "'{\"sessionId\":\"${sessionId}\"}'".to_owned()),
        ],
    );
    step(
        w,
        &[("user", basic("prompt")), ("text", basic("fuzz turn"))],
    );
    step(
        w,
        &[
            ("expect", basic(Method::SessionPrompt.as_str())),
            ("as", basic("prompt")),
        ],
    );
    if let Some(shape) = &turn.announce {
        step(w, &[("send", literal(&names.announce(shape)))]);
    }
    if let Some(shape) = &turn.progress {
        step(w, &[("send", literal(&names.progress(shape)))]);
    }
    step(
        w,
        &[
            ("send", literal(&names.request(&turn, &request_id))),
            ("as", basic("perm")),
        ],
    );
    match (turn.action, turn.chosen()) {
        (Action::Choose(_), Some(option)) => step(
            w,
            &[
                ("user", basic("choose")),
                ("request", basic("perm")),
                ("option", basic(option.id.as_str())),
            ],
        ),
        (Action::Leave, _) => step(w, &[("send", literal(&names.withdraw(&request_id)))]),
        _ => step(w, &[("user", basic("cancel")), ("pending", basic("perm"))]),
    }
    step(w, &[("await", basic("perm"))]);
    let finish = |allowed: bool| -> String {
        match names.finish(&turn, allowed) {
            Some(frame) => format!("{{ send = {} }}", literal(&frame)),
            None => String::new(),
        }
    };
    let reply_to = |cancelled: bool| -> String {
        format!(
            "{{ reply_to = \"prompt\", result = {} }}",
            literal(&frames::prompt_result(cancelled))
        )
    };
    let then = |items: Vec<String>| -> String {
        let items: Vec<String> = items.into_iter().filter(|s| !s.is_empty()).collect();
        if items.is_empty() {
            "[]".to_owned()
        } else {
            format!("[\n  {},\n]", items.join(",\n  "))
        }
    };
    if turn.action == Action::Cancel {
        on(
            w,
            "cancelled = true",
            &then(vec![
                "{ expect = \"session/cancel\" }".to_owned(),
                finish(false),
                reply_to(true),
            ]),
        );
        on(
            w,
            "otherwise = true",
            &then(vec![finish(false), reply_to(false)]),
        );
    } else {
        on(
            w,
            "selected = [\"allow_once\", \"allow_always\"]",
            &then(vec![finish(true)]),
        );
        on(w, "otherwise = true", &then(vec![finish(false)]));
        step(
            w,
            &[
                ("reply_to", basic("prompt")),
                ("result", literal(&frames::prompt_result(false))),
            ],
        );
    }
    out
}

/// A scenario cannot set its client's auto-approval policy (the client declares it,
/// docs/architecture.md §5.5): the header says which `--policy` the fuzzer ran the reference client with, and how to
/// replay the scenario under it.
fn policy_comment(w: &mut String, id: &str, flag: &str) {
    let argv = serde_json::to_string(&["/abs/path/to/acp-reference-client", "--policy", flag])
        .unwrap_or_default();
    let _ = writeln!(
        w,
        "#\n\
         # Client policy: the fuzzer ran the reference client with `--policy {flag}` (declared in\n\
         # its hello); a scenario cannot set a client's policy. Replay it under that policy with\n\
         #   acp-harness replay '{AGENT}@{VERSION}/{id}' --client '{argv}'\n\
         # (a mutant: add \"--mutant\", \"<name>\"). Under another policy the client may ask where it\n\
         # answered by itself, or answer where it asked; `auto-approval` judges either against the\n\
         # policy the client declares.\n#"
    );
}

/// `acp-harness fuzz-to-scenario`: reads a fuzz input (a crash artifact, a corpus file or a
/// JSON seed), writes `<regressions>/fuzz/<id>.toml` and checks that it parses. Returns the path.
pub fn write_regression(
    artifact: &Path,
    regressions: &Path,
    id: Option<&str>,
    note: Option<&str>,
) -> Result<PathBuf> {
    let data = std::fs::read(artifact)
        .with_context(|| format!("cannot read the fuzz input {}", artifact.display()))?;
    let Some(turn) = super::input::decode(&data) else {
        bail!(
            "{} is not a permission_mapping fuzz input (arbitrary cannot decode it)",
            artifact.display()
        );
    };
    let id = match id {
        Some(id) => id.to_owned(),
        None => default_id(&data),
    };
    if !valid_id(&id) {
        bail!("scenario id {id:?} must match [a-z0-9-]+");
    }
    let dir = regressions.join(VERSION);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("{id}.toml"));
    let name = artifact.file_name().map_or_else(
        || artifact.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let source = match note {
        Some(note) => format!("{name} ({})", note.replace(['\n', '\r'], " ")),
        None => name,
    };
    let text = to_scenario(&turn, &id, &source);
    std::fs::write(&path, &text).with_context(|| format!("cannot write {}", path.display()))?;
    if let Err(e) = acp_fake_agents::scenario::load(&path) {
        let _ = std::fs::remove_file(&path);
        bail!("harness bug: the scenario written for {source} does not parse: {e}");
    }
    Ok(path)
}

fn step(w: &mut String, keys: &[(&str, String)]) {
    let _ = writeln!(w, "\n[[step]]");
    for (key, value) in keys {
        let _ = writeln!(w, "{key} = {value}");
    }
}

fn on(w: &mut String, condition: &str, then: &str) {
    let _ = writeln!(w, "\n[[step.on]]\n{condition}\nthen = {then}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::input::{decode, pseudo_random_turns};

    fn parse(text: &str, id: &str) -> acp_fake_agents::scenario::Scenario {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(format!("{id}.toml"));
        std::fs::write(&path, text).expect("write");
        acp_fake_agents::scenario::load(&path).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn ids_are_stable_and_valid() {
        let id = default_id(b"abc");
        assert_eq!(id, default_id(b"abc"));
        assert_ne!(id, default_id(b"abd"));
        assert!(valid_id(&id), "{id}");
        assert!(!valid_id("Fuzz_1"));
    }

    /// Scenarios for thousands of inputs, including hostile strings, parse.
    #[test]
    fn every_input_becomes_a_valid_scenario() {
        let mut checked = 0;
        for turn in pseudo_random_turns(0x2545_f491_4f6c_dd1d, 600, 300) {
            let text = to_scenario(&turn, "fuzz-x", "test bytes");
            let scenario = parse(&text, "fuzz-x");
            assert_eq!(scenario.meta.agent, AGENT);
            checked += 1;
        }
        assert!(checked > 500);
    }

    #[test]
    fn the_policy_is_named_in_the_header() {
        let turn = decode(
            br#"{"policy":"trusted_workspace","request":{"sparse":{"kind":"read"}},"action":"leave"}"#,
        )
        .expect("decodes");
        let text = to_scenario(&turn, "fuzz-p", "t");
        parse(&text, "fuzz-p");
        assert!(
            text.contains(
                "--client '[\"/abs/path/to/acp-reference-client\",\"--policy\",\"{\\\"approves\\\""
            ),
            "{text}"
        );
        assert!(text.contains("replay 'regressions@fuzz/fuzz-p'"), "{text}");
        let plain =
            decode(br#"{"request":{"sparse":{"kind":"read"}},"action":"leave"}"#).expect("decodes");
        assert!(!to_scenario(&plain, "fuzz-q", "t").contains("Client policy"));
    }

    #[test]
    fn template_text_and_quotes_survive() {
        let turn = decode(
            br#"{"request":{"full":{"title":"it's ${cwd} \u007f","kind":"edit"}},"options":[{"id":"${x}","name":"a'b","kind":"allow_once"}],"action":{"choose":0}}"#,
        )
        .expect("decodes");
        let text = to_scenario(&turn, "fuzz-y", "t");
        let scenario = parse(&text, "fuzz-y");
        assert!(text.contains("\\u0027"), "{text}");
        assert!(text.contains("option = \"{x}\""), "{text}");
        assert_eq!(scenario.meta.id, "fuzz-y");
    }
}
