//! `acp-record check`: re-record a recipe's cases into a fresh folder and compare each with the
//! committed recording, after normalisation, by its *shape*: one line per frame naming the
//! direction and method, and for what a client acts on the option ids and kinds, the tool call's
//! kind, title and status, the stop reason, in order. Texts the model script decides, token
//! counts and timing are not compared. Two things vary from run to run of the same agent and
//! are not compared by position: how many streamed chunks a message comes in (consecutive equal
//! lines count once), and where the session's state announcements land
//! (`available_commands_update`, `config_option_update`, `current_mode_update`: they race with
//! the answer to the request that caused them and with the client's next request), which are
//! compared as a set of lines instead.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use acp_vocab::method::Method;
use anyhow::{Context, Result};
use serde_json::Value;

use crate::case::Case;
use crate::layout;
use crate::recipe::Recipe;
use crate::recording::{Dir, Frame, Recording};
use crate::run::{self, Options};
use crate::script::Script;

fn s(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".into(),
        Some(other) => other.to_string(),
    }
}

/// `kind=… title=… status=…` of a tool call or update (the fields it has).
fn tool_fields(tc: &Value) -> String {
    let mut out = String::new();
    for key in ["kind", "title", "status"] {
        if let Some(v) = tc.get(key) {
            let _ = write!(out, " {key}={}", s(Some(v)));
        }
    }
    out
}

/// One line of a frame's shape; `None` for frames left out of the comparison.
fn shape_line(frame: &Frame, requests: &[(Dir, Value, String)]) -> Option<String> {
    let Some(json) = &frame.json else {
        return Some(format!("{} (not JSON)", arrow(frame.dir)));
    };
    let arrow = arrow(frame.dir);
    if let Some(method) = frame.method() {
        let params = frame.params().cloned().unwrap_or(Value::Null);
        let mut line = format!("{arrow} {method}");
        match Method::parse(method) {
            Some(Method::SessionUpdate) => {
                let u = params.get("update").cloned().unwrap_or(Value::Null);
                let kind = s(u.get("sessionUpdate"));
                let _ = write!(line, " {kind}");
                if kind == "tool_call" || kind == "tool_call_update" {
                    line += &tool_fields(&u);
                }
            }
            Some(Method::SessionRequestPermission) => {
                let tc = params.get("toolCall").cloned().unwrap_or(Value::Null);
                line += &tool_fields(&tc);
                let options: Vec<String> = params
                    .get("options")
                    .and_then(Value::as_array)
                    .map(|o| {
                        o.iter()
                            .map(|o| format!("{}:{}", s(o.get("optionId")), s(o.get("kind"))))
                            .collect()
                    })
                    .unwrap_or_default();
                let _ = write!(line, " options=[{}]", options.join(", "));
            }
            Some(
                Method::SessionSetMode
                | Method::SessionNew
                | Method::SessionPrompt
                | Method::Initialize
                | Method::SessionCancel,
            ) => {}
            _ => {
                if let Some(path) = params.get("path") {
                    let _ = write!(line, " path={}", s(Some(path)));
                }
            }
        }
        return Some(line);
    }
    // A response: to which request, and what it said.
    let id = frame.id().cloned().unwrap_or(Value::Null);
    let asked = requests
        .iter()
        .rev()
        .find(|(d, i, _)| *d != frame.dir && *i == id)
        .map(|(_, _, m)| m.as_str())
        .unwrap_or("?");
    let mut line = format!("{arrow} answer to {asked}");
    if let Some(e) = json.get("error") {
        let _ = write!(line, " error {}", s(e.get("code")));
    } else if let Some(r) = json.get("result") {
        if let Some(stop) = r.get("stopReason") {
            let _ = write!(line, " stopReason={}", s(Some(stop)));
        }
        if let Some(outcome) = r.get("outcome") {
            let _ = write!(line, " {}", s(outcome.get("outcome")));
            if let Some(o) = outcome.get("optionId") {
                let _ = write!(line, " {}", s(Some(o)));
            }
        }
    }
    Some(line)
}

fn arrow(dir: Dir) -> &'static str {
    match dir {
        Dir::ToAgent => "client →",
        Dir::FromAgent => "agent  →",
    }
}

/// Session updates whose position races with other frames: compared as a set.
const UNORDERED: &[&str] = &[
    "available_commands_update",
    "config_option_update",
    "current_mode_update",
];

/// The prefix of an [`UNORDERED`] line in a shape.
const ANYWHERE: &str = "(anywhere) ";

/// The shape of a recording: one line per compared frame, in order, then the unordered
/// announcements (sorted, each marked `(anywhere)`).
pub fn shape(frames: &[Frame]) -> Vec<String> {
    let mut requests: Vec<(Dir, Value, String)> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    let mut anywhere: Vec<String> = Vec::new();
    for f in frames {
        if f.is_request() {
            requests.push((
                f.dir,
                f.id().cloned().unwrap_or(Value::Null),
                f.method().unwrap_or_default().to_string(),
            ));
        }
        let Some(line) = shape_line(f, &requests) else {
            continue;
        };
        if UNORDERED
            .iter()
            .any(|u| line.ends_with(&format!(" session/update {u}")))
        {
            anywhere.push(format!("{ANYWHERE}{line}"));
        } else if out.last() != Some(&line) {
            out.push(line);
        }
    }
    anywhere.sort();
    out.extend(anywhere);
    out
}

/// Above this many table cells `drift` compares line by line instead of by LCS.
const MAX_LCS_CELLS: usize = 4_000_000;

/// The differences between two shapes, as `- committed` / `+ new` lines (empty: the same).
pub fn drift(committed: &[String], new: &[String]) -> Vec<String> {
    let (n, m) = (committed.len(), new.len());
    if n.saturating_mul(m) > MAX_LCS_CELLS {
        // Too long for the table (no recording of a turn is): compare line by line.
        return (0..n.max(m))
            .filter(|&k| committed.get(k) != new.get(k))
            .flat_map(|k| {
                let old = committed.get(k).map(|l| format!("- {l}"));
                let new = new.get(k).map(|l| format!("+ {l}"));
                old.into_iter().chain(new)
            })
            .collect();
    }
    // Longest common subsequence, from the end.
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if committed[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n || j < m {
        if i < n && j < m && committed[i] == new[j] {
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("- {}", committed[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", new[j]));
            j += 1;
        }
    }
    out
}

/// What one case came to.
enum Outcome {
    Same(usize),
    Drift(Vec<String>),
    Failed(String),
}

/// Re-records every case of `plan` into `out` and compares it with the committed recording
/// below `recordings`. Prints the drift per case and writes it to `<out>/drift.txt`; true when
/// every case is the same.
pub async fn run(
    recipe: &Recipe,
    plan: &[(Case, Script, PathBuf)],
    recordings: Option<PathBuf>,
    out: &Path,
    opts: &Options,
) -> Result<bool> {
    let committed_root = recordings.unwrap_or_else(|| layout::recordings_root(recipe));
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut report = format!("check {}\n", recipe.spec());
    let mut same = true;
    for (case, script, script_path) in plan {
        let committed =
            layout::version_dir(&committed_root, recipe).join(format!("{}.jsonl", case.name));
        eprintln!("re-recording {} {} …", recipe.spec(), case.name);
        let outcome =
            match compare_case(recipe, case, script, script_path, &committed, out, opts).await {
                Ok(o) => o,
                Err(e) => Outcome::Failed(format!("{e:#}")),
            };
        match outcome {
            Outcome::Same(n) => {
                let _ = writeln!(report, "  {}: same ({n} lines of shape)", case.name);
            }
            Outcome::Drift(lines) => {
                same = false;
                let _ = writeln!(
                    report,
                    "  {}: DRIFT ({} lines differ)",
                    case.name,
                    lines.len()
                );
                for l in lines {
                    let _ = writeln!(report, "      {l}");
                }
            }
            Outcome::Failed(why) => {
                same = false;
                let _ = writeln!(
                    report,
                    "  {}: FAILED: {}",
                    case.name,
                    why.replace('\n', "\n      ")
                );
            }
        }
    }
    let _ = writeln!(
        report,
        "{}; new recordings in {}",
        if same { "no drift" } else { "drift" },
        out.display()
    );
    print!("{report}");
    let report_path = out.join("drift.txt");
    let mut all = std::fs::read_to_string(&report_path).unwrap_or_default();
    all += &report;
    std::fs::write(&report_path, all)
        .with_context(|| format!("cannot write {}", report_path.display()))?;
    Ok(same)
}

async fn compare_case(
    recipe: &Recipe,
    case: &Case,
    script: &Script,
    script_path: &Path,
    committed: &Path,
    out: &Path,
    opts: &Options,
) -> Result<Outcome> {
    if !committed.is_file() {
        return Ok(Outcome::Failed(format!(
            "no committed recording at {} to compare with",
            committed.display()
        )));
    }
    let old = Recording::load(committed)?;
    let rec = run::record(recipe, case, script, opts).await?;
    let path = layout::write(out, recipe, case, script_path, &rec)?;
    let new = Recording::load(&path)?;
    let (a, b) = (shape(&old.frames), shape(&new.frames));
    let d = drift(&a, &b);
    Ok(if d.is_empty() {
        Outcome::Same(a.len())
    } else {
        Outcome::Drift(d)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::parse_lines;

    fn committed(rel: &str) -> Recording {
        Recording::load(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../recordings")
                .join(rel),
        )
        .unwrap()
    }

    #[test]
    fn a_recording_has_no_drift_from_itself() {
        let rec = committed("codex-acp/2.6.0/edit.jsonl");
        let a = shape(&rec.frames);
        assert!(
            a.iter().any(|l| l.starts_with("agent  → session/request_permission kind=edit title=Edit files")
                && l.ends_with("options=[allow_once:allow_once, allow_for_session:allow_always, cancel:reject_once]")),
            "{a:#?}"
        );
        assert!(drift(&a, &a).is_empty());
    }

    #[test]
    fn two_cases_differ_where_the_agent_did() {
        // codex-acp 2.6.0: Stop answered late (the agent withdraws the request) vs at once.
        let late = shape(&committed("codex-acp/2.6.0/cancel.jsonl").frames);
        let now = shape(&committed("codex-acp/2.6.0/cancel-answer-now.jsonl").frames);
        let d = drift(&late, &now);
        assert_eq!(d, ["- agent  → $/cancel_request"], "{d:#?}");
    }

    #[test]
    fn a_modified_copy_names_the_difference() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../recordings/claude-agent-acp/0.101.0/edit.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let a = shape(&parse_lines(&text).unwrap());
        // The agent now offers the always option as allow_once, and titles the edit otherwise.
        let changed = text
            .replace(
                r#"\"optionId\":\"allow-with-updates\",\"name\":\"Yes, allow all edits during this session\",\"kind\":\"allow_always\""#,
                r#"\"optionId\":\"allow-with-updates\",\"name\":\"Yes, allow all edits during this session\",\"kind\":\"allow_once\""#,
            )
            .replace(
                r#""optionId":"allow-with-updates","name":"Yes, allow all edits during this session","kind":"allow_always""#,
                r#""optionId":"allow-with-updates","name":"Yes, allow all edits during this session","kind":"allow_once""#,
            );
        assert_ne!(
            changed, text,
            "the edit recording no longer has that option"
        );
        let b = shape(&parse_lines(&changed).unwrap());
        let d = drift(&a, &b);
        assert_eq!(d.len(), 2, "{d:#?}");
        assert!(d[0].starts_with("- ") && d[0].contains("allow-with-updates:allow_always"));
        assert!(d[1].starts_with("+ ") && d[1].contains("allow-with-updates:allow_once"));
    }

    #[test]
    fn very_long_shapes_are_compared_line_by_line() {
        let a: Vec<String> = (0..3000).map(|k| format!("line {k}")).collect();
        let mut b = a.clone();
        b[1500] = "changed".into();
        assert_eq!(drift(&a, &b), ["- line 1500", "+ changed"]);
    }

    #[test]
    fn streamed_chunks_and_where_announcements_land_do_not_count() {
        let frame = |update: &str| {
            format!(
                r#"{{"i":0,"t_us":0,"conn":1,"dir":"a2c","raw":{}}}"#,
                serde_json::to_string(&format!(
                    r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{update}}}}}"#
                ))
                .unwrap()
            )
        };
        let chunk = frame(
            r#"{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a"}}"#,
        );
        let cmds = frame(r#"{"sessionUpdate":"available_commands_update","availableCommands":[]}"#);
        let one = parse_lines(&format!("{chunk}\n{cmds}\n")).unwrap();
        let three = parse_lines(&format!("{cmds}\n{chunk}\n{chunk}\n{chunk}\n")).unwrap();
        assert!(drift(&shape(&one), &shape(&three)).is_empty());
        // An announcement that no longer comes at all is drift.
        let none = parse_lines(&format!("{chunk}\n")).unwrap();
        assert_eq!(
            drift(&shape(&one), &shape(&none)),
            ["- (anywhere) agent  → session/update available_commands_update"]
        );
    }
}
