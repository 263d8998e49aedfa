//! The judge without a run: `acp-harness grade <transcript.jsonl>` grades a per-case transcript
//! recorded earlier or elsewhere, and `acp-harness rules` lists the rule catalogue the checks
//! cite.
//!
//! A transcript holds the frames. What a case needs beyond them is taken from the run.json the
//! runner wrote next to it (`<out>/run.json` for `<out>/transcripts/<case>.jsonl`: the case's
//! id, title, how it ended, stderr tail, repro) when present; otherwise it is derived from the
//! frames, and the output says which facts were guessed and what could not be judged.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use acp_judge::checks::{Grade, grade_case};
use acp_judge::record::{CaseMeta, CaseRecord, RunEnd};
use acp_judge::rules;
use acp_vocab::control::{Command, Event};
use acp_vocab::method::Method;
use acp_vocab::note::Note;
use acp_vocab::transcript::{Direction, Entry};
use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::run_json::{CaseJson, RunJson};

/// Arguments of `acp-harness grade`.
#[derive(clap::Args)]
pub struct GradeArgs {
    /// A per-case transcript: JSON lines, one recorded entry each (the runner writes them to
    /// `<out>/transcripts/<case>.jsonl`).
    #[arg(value_name = "TRANSCRIPT_JSONL")]
    pub transcript: PathBuf,
    /// Exit 1 on warn too.
    #[arg(long)]
    pub strict: bool,
}

/// Arguments of `acp-harness rules`.
#[derive(clap::Args)]
pub struct RulesArgs {
    /// Print the catalogue as JSON (an array of {id, level, binds, requirement, link}).
    #[arg(long)]
    pub json: bool,
}

/// `acp-harness rules`: the catalogue as a table, or as JSON.
pub fn rules(args: &RulesArgs) -> Result<ExitCode> {
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(rules::all())?);
    } else {
        crate::out!("{}", rules_table());
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per rule: id, level, who it binds, the requirement, then its link indented below.
pub fn rules_table() -> String {
    let mut out = String::new();
    for rule in rules::all() {
        out.push_str(&format!(
            "{:<4} {:<6} {:<6} {}\n     {}\n",
            rule.id,
            rule.level.as_str(),
            rule.binds.as_str(),
            rule.requirement,
            rule.link
        ));
    }
    out
}

/// `acp-harness grade`: every check's verdict on one transcript file.
pub fn grade(args: &GradeArgs) -> Result<ExitCode> {
    let transcript = read_transcript(&args.transcript)?;
    let (record, unknown) = case_record(&args.transcript, transcript)?;
    crate::outln!("case: {}", record.meta.case_id);
    let trials = grade_case(&record);
    let mut failing = false;
    for t in &trials {
        crate::outln!("{:>15}  {}", t.grade.as_str(), t.check);
        if !t.message.is_empty() {
            crate::outln!("{}", indent(&t.failure_text()));
        }
        failing |= t.grade.is_failing(args.strict) && t.grade != Grade::Error;
    }
    if !unknown.is_empty() {
        crate::outln!("\nnot known from the transcript alone:");
        for line in &unknown {
            crate::outln!("  - {line}");
        }
    }
    Ok(if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The entries of a transcript file; an error names the first bad line.
pub fn read_transcript(path: &Path) -> Result<Vec<Entry>> {
    let text = std::fs::read(path)
        .with_context(|| format!("cannot read transcript {}", path.display()))?;
    let Ok(text) = String::from_utf8(text) else {
        bail!("{}: not UTF-8 text", path.display());
    };
    let mut entries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a transcript entry (expected {{\"i\",\"t_us\",\"conn\",\"dir\",\"raw\"}})",
                path.display(),
                n + 1
            )
        })?;
        // Without a `json`, the entry parses its `raw` when a check asks (`Entry::json`).
        entries.push(entry);
    }
    if entries.is_empty() {
        bail!("{}: no transcript entries", path.display());
    }
    Ok(entries)
}

/// The case as the checks see it, plus the facts that had to be guessed.
fn case_record(path: &Path, transcript: Vec<Entry>) -> Result<(CaseRecord, Vec<String>)> {
    let mut unknown = Vec::new();
    let case = case_from_run_json(path)?;
    let stem = path
        .file_stem()
        .map_or("case".to_owned(), |s| s.to_string_lossy().into_owned());
    let (meta, end, stderr_tail, repro) = match &case {
        Some(c) => (
            CaseMeta {
                case_id: c.id.clone(),
                title: c.title.clone(),
                agent: c.agent.clone(),
                version: c.version.clone(),
                provenance: c.provenance.clone(),
                file: c.file.clone(),
            },
            serde_json::to_value(&c.end)
                .and_then(serde_json::from_value::<RunEnd>)
                .unwrap_or(RunEnd::Completed),
            c.stderr_tail.clone(),
            c.repro.clone(),
        ),
        None => {
            unknown.push(
                "how the run ended (no run.json next to the transcript): graded as completed"
                    .to_owned(),
            );
            (
                CaseMeta {
                    case_id: stem.clone(),
                    title: stem.clone(),
                    agent: String::new(),
                    version: String::new(),
                    provenance: Vec::new(),
                    file: String::new(),
                },
                RunEnd::Completed,
                String::new(),
                format!("acp-harness grade {}", path.display()),
            )
        }
    };
    let hello = transcript.iter().find_map(|e| match e.event() {
        Some(Event::Hello(hello)) => Some(hello.clone()),
        _ => None,
    });
    let control_supports = match &hello {
        Some(h) => h.supports.iter().map(|c| c.as_str().to_owned()).collect(),
        None => wire_only_supports(&transcript),
    };
    let workspace = workspace(&transcript, &mut unknown);
    let outside = workspace
        .parent()
        .map(|p| p.join("outside"))
        .unwrap_or_default();
    let writes = transcript.iter().any(|e| {
        e.direction == Direction::AgentToClient
            && e.method() == Some(Method::FsWriteTextFile.as_str())
    });
    if writes {
        unknown.push(
            "the files on disk after the run: the fs check cannot verify what the client wrote"
                .to_owned(),
        );
    }
    let record = CaseRecord {
        meta,
        control_plane: hello.is_some(),
        control_supports,
        workspace,
        outside,
        files_after: Default::default(),
        symlinks: Default::default(),
        end,
        stderr_tail,
        repro,
        transcript,
    };
    Ok((record, unknown))
}

/// The case's workspace: the cwd of the harness's first `new_session` command, else the cwd of
/// the client's first `session/new` (then `session-cwd` compares the client with itself).
/// What the harness could do as the user of a client without an adapter: answer its prompt only
/// through profile inputs (the live run records `choose` then, `CaseRecord::control_supports`).
/// A transcript shows they existed when the harness typed one.
fn wire_only_supports(transcript: &[Entry]) -> Vec<String> {
    let typed_a_choice = transcript
        .iter()
        .any(|e| matches!(e.note(), Some(Note::UserChoose { .. })));
    if typed_a_choice {
        vec!["choose".to_owned()]
    } else {
        Vec::new()
    }
}

fn workspace(transcript: &[Entry], unknown: &mut Vec<String>) -> PathBuf {
    let cwd = |e: &Entry, pointer: &str| {
        e.json()
            .and_then(|j| j.pointer(pointer))
            .and_then(Value::as_str)
            .map(PathBuf::from)
    };
    if let Some(dir) = transcript.iter().find_map(|e| match e.command() {
        Some(Command::NewSession { cwd, .. }) => Some(PathBuf::from(cwd)),
        _ => None,
    }) {
        return dir;
    }
    match transcript
        .iter()
        .filter(|e| {
            e.direction == Direction::ClientToAgent
                && e.method() == Some(Method::SessionNew.as_str())
        })
        .find_map(|e| cwd(e, "/params/cwd"))
    {
        Some(dir) => {
            unknown.push(format!(
                "the case's workspace: taken from the client's own session/new cwd ({}), so it is not checked against the harness's",
                dir.display()
            ));
            dir
        }
        None => {
            unknown
                .push("the case's workspace (no new_session command, no session/new)".to_owned());
            PathBuf::new()
        }
    }
}

/// The case of `<out>/run.json` whose transcript is this file, if the file lies in
/// `<out>/transcripts/` and that run.json exists. A run.json that exists but cannot be read is
/// an error (it would silently change the grades).
fn case_from_run_json(path: &Path) -> Result<Option<CaseJson>> {
    let Some(dir) = path.parent() else {
        return Ok(None);
    };
    if dir.file_name().is_none_or(|n| n != "transcripts") {
        return Ok(None);
    }
    let Some(out) = dir.parent() else {
        return Ok(None);
    };
    let run_path = out.join("run.json");
    if !run_path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&run_path)
        .with_context(|| format!("cannot read {}", run_path.display()))?;
    let run: RunJson = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a run.json", run_path.display()))?;
    let name = path
        .file_name()
        .map(|n| format!("transcripts/{}", n.to_string_lossy()))
        .unwrap_or_default();
    Ok(run.cases.into_iter().find(|c| c.transcript == name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_vocab::transcript::Recorder;

    #[test]
    fn a_wire_only_transcript_could_choose_only_if_the_harness_typed_a_choice() {
        let rec = Recorder::new();
        assert!(wire_only_supports(&rec.snapshot()).is_empty());
        rec.note(&Note::UserChoose {
            request_id: serde_json::json!(0),
            option_id: "allow".into(),
            input: "y".into(),
        });
        assert_eq!(wire_only_supports(&rec.snapshot()), ["choose"]);
    }
}
