//! `run.json`: the versioned result of a run (documented in harness/RUN_JSON.md). Reports,
//! JUnit and diffs are made from this file alone.
//!
//! The format's types live in `acp-reports` ([`acp_reports::run`]), its one owner; this module
//! fills them from the harness's results and writes the files.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use acp_fake_agents::scenario::Case;
use acp_vocab::family::Family;
use acp_vocab::transcript::Direction;
use anyhow::{Context, Result};
use serde_json::Value;

pub use acp_reports::run::{
    CaseEnd, CaseJson, CheckInfo, ClientInfo, ProfileInfo, RUN_SCHEMA, RuleJson, RunConfigInfo,
    RunJson, ToolInfo, TrialJson, transcript_file,
};

use crate::client_spec::ClientSpec;
use crate::runner::{CaseResult, RunConfig};
use acp_judge::checks::all_checks;
use acp_judge::policy::{DecisionPolicy, DeclaredPolicy, PolicySource};
use acp_judge::record::RunEnd;
use acp_vocab::control::Event;

/// What run.json says about each case's scenario that the case record does not carry. Taken
/// from the cases before they run.
#[derive(Debug, Clone, Default)]
pub struct ScenarioInfo {
    by_case: HashMap<String, ScenarioFacts>,
    profiles: Vec<ProfileInfo>,
}

/// The scenario facts of one case.
#[derive(Debug, Clone, Default)]
struct ScenarioFacts {
    description: Option<String>,
    requires: Vec<String>,
    /// `agent@version` of its profile.
    profile: Option<String>,
    family: Option<Family>,
}

impl ScenarioInfo {
    pub fn of(cases: &[Case]) -> ScenarioInfo {
        let mut info = ScenarioInfo::default();
        for case in cases {
            let s = &case.scenario;
            let profile = s.profile.as_ref().map(|p| p.key());
            if let Some(p) = &s.profile {
                if !info.profiles.iter().any(|known| known.key == p.key()) {
                    info.profiles.push(ProfileInfo {
                        key: p.key(),
                        title: p.title.clone(),
                        sources: p.sources.clone(),
                    });
                }
            }
            info.by_case.insert(
                case.id.clone(),
                ScenarioFacts {
                    description: s.meta.description.clone(),
                    requires: s.meta.requires.clone(),
                    profile,
                    family: s.meta.family,
                },
            );
        }
        info.profiles.sort_by(|a, b| a.key.cmp(&b.key));
        info
    }
}

/// The run-wide facts that are not in the results.
#[derive(Debug, Clone)]
pub struct RunHeader<'a> {
    pub client: &'a ClientSpec,
    pub cfg: &'a RunConfig,
    pub strict: bool,
    pub filter: &'a [String],
    /// `--shard K/N`, when the run played one slice of the cases.
    pub shard: Option<String>,
    pub started_unix_ms: u64,
    pub duration_ms: u64,
    /// What the profile's `version_command` printed (`{"name","version"}`), if it has one and
    /// it ran: it names the binary under test more surely than what the client says of itself.
    pub version_output: Option<Value>,
}

/// The whole run.json of a run.
pub fn build(header: RunHeader<'_>, scenarios: &ScenarioInfo, results: &[CaseResult]) -> RunJson {
    RunJson {
        schema: RUN_SCHEMA.into(),
        harness: ToolInfo {
            name: "acp-harness".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        acp_schema: acp_judge::acp_schema::SCHEMA_VERSION.into(),
        client: ClientInfo {
            name: header.client.name.clone(),
            source: header.client.source.clone(),
            argv: header.client.argv.clone(),
            reported: header
                .version_output
                .clone()
                .or_else(|| reported_client(results)),
            policy: declared_policy(header.client, results),
        },
        config: RunConfigInfo {
            step_timeout_ms: header.cfg.step_timeout.as_millis() as u64,
            case_timeout_ms: header.cfg.case_timeout.as_millis() as u64,
            jobs: header.cfg.jobs,
            strict: header.strict,
            filter: (!header.filter.is_empty()).then(|| header.filter.join(" | ")),
            shard: header.shard.clone(),
            scenarios_dir: header.cfg.scenarios_dir.display().to_string(),
        },
        started_unix_ms: header.started_unix_ms,
        duration_ms: header.duration_ms,
        summary: summarize(results),
        checks: checks_catalog(),
        profiles: scenarios.profiles.clone(),
        cases: results.iter().map(|r| case_json(r, scenarios)).collect(),
    }
}

/// The auto-approval policy the client declared: its profile's `[policy]`, else the `policy` of
/// the first adapter `hello` (every case runs the same client) (`None`: it declared nothing).
pub fn declared_policy(client: &ClientSpec, results: &[CaseResult]) -> Option<Value> {
    if let Some(declared) = client.declared_policy() {
        return serde_json::to_value(declared).ok();
    }
    let hello = results
        .iter()
        .flat_map(|r| &r.record.transcript)
        .filter(|e| e.direction == Direction::AdapterToHarness)
        .find_map(|e| match e.event() {
            Some(Event::Hello(hello)) => Some(hello),
            _ => None,
        })?;
    let policy = DecisionPolicy::from_hello_policy(hello.policy.as_ref()?).ok()?;
    serde_json::to_value(DeclaredPolicy {
        source: PolicySource::Hello,
        name: None,
        policy,
    })
    .ok()
}

/// What the client said about itself: the adapter's `hello.client`, else the `clientInfo` of its
/// first `initialize` request.
pub fn reported_client(results: &[CaseResult]) -> Option<Value> {
    let entries = || results.iter().flat_map(|r| &r.record.transcript);
    let hello = entries()
        .filter(|e| e.direction == Direction::AdapterToHarness)
        .find_map(|e| match e.event() {
            Some(Event::Hello(hello)) => serde_json::to_value(&hello.client).ok(),
            _ => None,
        });
    hello.or_else(|| {
        entries().find_map(|e| {
            (e.direction == Direction::ClientToAgent && e.method() == Some("initialize"))
                .then(|| e.json.as_ref()?.get("params")?.get("clientInfo").cloned())
                .flatten()
        })
    })
}

/// Every check of this harness, in trial order.
pub fn checks_catalog() -> Vec<CheckInfo> {
    all_checks()
        .iter()
        .map(|c| CheckInfo {
            id: c.id().into(),
            rules: c.rules().to_vec(),
            requirement: c.requirement().into(),
            needs_adapter: c.needs_control_plane(),
        })
        .collect()
}

/// Counts of trials per grade: every grade the reports know (zeros included), plus any other.
pub fn summarize(results: &[CaseResult]) -> BTreeMap<String, usize> {
    let mut summary: BTreeMap<String, usize> = acp_reports::grade::names()
        .map(|g| (g.to_string(), 0))
        .collect();
    for result in results {
        for trial in &result.trials {
            *summary.entry(trial.grade.as_str().to_string()).or_default() += 1;
        }
    }
    summary
}

/// How the case ended, in run.json's open form (`kind` plus that kind's fields).
fn case_end(end: &RunEnd) -> CaseEnd {
    serde_json::to_value(end)
        .and_then(serde_json::from_value)
        .unwrap_or_else(|err| CaseEnd {
            kind: "harness_error".into(),
            detail: [("reason".to_string(), Value::from(err.to_string()))]
                .into_iter()
                .collect(),
        })
}

pub fn case_json(result: &CaseResult, scenarios: &ScenarioInfo) -> CaseJson {
    let record = &result.record;
    let facts = scenarios
        .by_case
        .get(&record.meta.case_id)
        .cloned()
        .unwrap_or_default();
    CaseJson {
        id: record.meta.case_id.clone(),
        title: record.meta.title.clone(),
        agent: record.meta.agent.clone(),
        version: record.meta.version.clone(),
        file: record.meta.file.clone(),
        provenance: record.meta.provenance.clone(),
        description: facts.description,
        requires: facts.requires,
        profile: facts.profile,
        family: facts.family,
        end: case_end(&record.end),
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
                grade: t.grade.as_str().to_string(),
                rules: t.rules.to_vec(),
                requirement: t.requirement.to_string(),
                rule: t.broken_rule().map(rule_json),
                message: t.message.clone(),
                frames: t.frames.clone(),
            })
            .collect(),
    }
}

/// A catalogue rule as run.json carries it.
fn rule_json(rule: &acp_judge::rules::Rule) -> RuleJson {
    RuleJson {
        id: rule.id.clone(),
        level: rule.level.as_str().to_owned(),
        binds: rule.binds.as_str().to_owned(),
        requirement: rule.requirement.clone(),
        link: rule.link.clone(),
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

/// What `acp-harness run` writes after its cases: run.json with one transcript file per case
/// (an error there is returned), then the HTML report of that run, made with the transcripts
/// handed over rather than read back and parsed again (docs/performance.md). The report's own
/// outcome comes back inside, so a caller can still show the results when only the report
/// failed. `results` lose their transcripts.
pub fn write_outputs(
    header: RunHeader<'_>,
    scenarios: &ScenarioInfo,
    results: &mut [CaseResult],
    out: &Path,
) -> Result<Result<acp_reports::Written, acp_reports::ReportError>> {
    let run = build(header, scenarios, results);
    write_run(out, &run, results)?;
    let transcripts = take_transcripts(results);
    Ok(acp_reports::write_report(
        &[acp_reports::LoadedRun::new(out.join("run.json"), run).with_transcripts(transcripts)],
        &out.join("report"),
    ))
}

/// Moves every case's transcript out of `results` (left empty) into the form the report reads,
/// keyed as run.json names the files: the report then renders what [`write_run`] just wrote
/// without reading it back and parsing it again (docs/performance.md).
pub fn take_transcripts(
    results: &mut [CaseResult],
) -> BTreeMap<String, acp_reports::transcript::Transcript> {
    results
        .iter_mut()
        .map(|result| {
            let entries = std::mem::take(&mut result.record.transcript);
            let frames = entries.into_iter().map(|e| acp_reports::transcript::Frame {
                index: e.index,
                at_us: e.at_us,
                conn: e.conn,
                dir: serde_json::to_value(e.direction)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
                raw: e.raw,
                json: e.json,
                invalid_utf8: e.invalid_utf8,
                fault: e.fault.map(|f| f.as_str().to_owned()),
            });
            (
                transcript_file(&result.record.meta.case_id),
                acp_reports::transcript::Transcript::from_frames(frames),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_judge::checks::Grade;

    /// Does not compile when the harness gets a new grade: add it here and to `all` below.
    fn exhaustive(grade: Grade) {
        match grade {
            Grade::Pass
            | Grade::Fail
            | Grade::Warn
            | Grade::NotApplicable
            | Grade::Error
            | Grade::Timeout
            | Grade::Crash
            | Grade::Expected
            | Grade::Stale => {}
        }
    }

    #[test]
    fn every_harness_grade_is_known_to_the_reports() {
        for g in Grade::ALL {
            exhaustive(g);
            let report = acp_reports::grade::Grade::of(g.as_str());
            assert!(report.is_known(), "reports do not know grade {g:?}");
            assert_eq!(
                report.is_failing(false),
                crate::output::is_failing(g, false),
                "{g:?}"
            );
            assert_eq!(
                report.is_failing(true),
                crate::output::is_failing(g, true),
                "{g:?}"
            );
        }
    }

    #[test]
    fn run_ends_keep_their_fields() {
        let end = case_end(&RunEnd::Crash {
            exit_code: Some(3),
            signal: None,
            reason: "client exited".into(),
        });
        assert_eq!(end.kind, "crash");
        assert_eq!(end.reason(), Some("client exited"));
        assert_eq!(end.detail.get("exit_code"), Some(&Value::from(3)));
    }

    #[test]
    fn transcripts_handed_over_equal_the_files_written() {
        let case = acp_judge::checks::testkit::Case::new();
        case.c2a(serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize"}));
        case.rec.record(1, Direction::AgentToClient, b"not json");
        case.rec.record(1, Direction::AgentToClient, &[0xff]);
        case.rec.note(&acp_vocab::note::Note::ClientExited {
            status: String::new(),
        });
        let mut results = vec![CaseResult {
            record: case.record(),
            trials: Vec::new(),
            duration: std::time::Duration::ZERO,
            timing: Default::default(),
        }];
        let dir = tempfile::tempdir().unwrap();
        let fixture = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../reports/tests/fixtures/reference/run.json"
        );
        let run = acp_reports::load_run(Path::new(fixture)).unwrap().run;
        write_run(dir.path(), &run, &results).unwrap();
        let file = transcript_file("test@1/case");
        let from_disk = acp_reports::transcript::read(&dir.path().join(&file));
        let in_memory = take_transcripts(&mut results);
        assert_eq!(in_memory.get(&file), Some(&from_disk));
        assert_eq!(from_disk.frames().count(), 4);
        assert!(results[0].record.transcript.is_empty());
    }
}
