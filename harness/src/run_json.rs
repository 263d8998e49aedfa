//! `run.json`: the versioned result of a run (documented in harness/RUN_JSON.md). Reports,
//! JUnit and diffs are made from this file alone.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::checks::Grade;
use crate::record::RunEnd;
use crate::runner::CaseResult;

/// Identifies the format; bumped on any incompatible change.
pub const RUN_SCHEMA: &str = "acp-harness/run/v1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunJson {
    pub schema: String,
    pub harness: ToolInfo,
    /// Which ACP JSON Schema the `schema` check validated against.
    pub acp_schema: String,
    pub client: ClientInfo,
    pub config: RunConfigInfo,
    /// Milliseconds since the Unix epoch when the run started.
    pub started_unix_ms: u128,
    pub duration_ms: u64,
    pub summary: BTreeMap<String, usize>,
    pub cases: Vec<CaseJson>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientInfo {
    /// Profile name or argv[0].
    pub name: String,
    /// `--client` as given (argv JSON, profile path, `reference`, `mutant:<name>`).
    pub source: String,
    pub argv: Vec<String>,
    /// What the adapter said in `hello.client` (name, version), when it has one.
    pub reported: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunConfigInfo {
    pub step_timeout_ms: u64,
    pub case_timeout_ms: u64,
    pub jobs: usize,
    pub strict: bool,
    pub filter: Option<String>,
    pub scenarios_dir: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseJson {
    pub id: String,
    pub title: String,
    pub agent: String,
    pub version: String,
    pub file: String,
    pub provenance: Vec<String>,
    pub end: RunEnd,
    pub duration_ms: u64,
    /// Path of the transcript (JSON Lines of transcript entries), relative to run.json.
    pub transcript: String,
    pub frames: usize,
    pub stderr_tail: String,
    pub repro: String,
    pub trials: Vec<TrialJson>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialJson {
    /// `<case>::<check>`, the libtest trial name.
    pub name: String,
    pub check: String,
    pub grade: Grade,
    pub rules: Vec<u16>,
    pub requirement: String,
    pub message: String,
    pub frames: Vec<usize>,
}

/// File name of a case's transcript: the case id with path-unsafe characters replaced.
pub fn transcript_file(case_id: &str) -> String {
    let safe: String = case_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.@[]".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("transcripts/{safe}.jsonl")
}

/// Counts of trials per grade.
pub fn summarize(results: &[CaseResult]) -> BTreeMap<String, usize> {
    let mut summary: BTreeMap<String, usize> = [
        Grade::Pass,
        Grade::Fail,
        Grade::Warn,
        Grade::NotApplicable,
        Grade::Error,
        Grade::Timeout,
        Grade::Crash,
    ]
    .iter()
    .map(|g| (g.as_str().to_string(), 0))
    .collect();
    for result in results {
        for trial in &result.trials {
            *summary.entry(trial.grade.as_str().to_string()).or_default() += 1;
        }
    }
    summary
}

pub fn case_json(result: &CaseResult) -> CaseJson {
    let record = &result.record;
    CaseJson {
        id: record.meta.case_id.clone(),
        title: record.meta.title.clone(),
        agent: record.meta.agent.clone(),
        version: record.meta.version.clone(),
        file: record.meta.file.clone(),
        provenance: record.meta.provenance.clone(),
        end: record.end.clone(),
        duration_ms: result.duration.as_millis() as u64,
        transcript: transcript_file(&record.meta.case_id),
        frames: record.transcript.len(),
        stderr_tail: record.stderr_tail.clone(),
        repro: record.repro.clone(),
        trials: result
            .trials
            .iter()
            .map(|t| TrialJson {
                name: format!("{}::{}", record.meta.case_id, t.check),
                check: t.check.to_string(),
                grade: t.grade,
                rules: t.rules.to_vec(),
                requirement: t.requirement.to_string(),
                message: t.message.clone(),
                frames: t.frames.clone(),
            })
            .collect(),
    }
}

/// Writes run.json and one transcript file per case under `out`.
pub fn write_run(out: &Path, run: &RunJson, results: &[CaseResult]) -> Result<()> {
    std::fs::create_dir_all(out.join("transcripts"))
        .with_context(|| format!("cannot create output directory {}", out.display()))?;
    for result in results {
        let path = out.join(transcript_file(&result.record.meta.case_id));
        let mut text = String::new();
        for entry in &result.record.transcript {
            text.push_str(&serde_json::to_string(entry)?);
            text.push('\n');
        }
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    let path = out.join("run.json");
    let json = serde_json::to_string_pretty(run)?;
    std::fs::write(&path, json).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
