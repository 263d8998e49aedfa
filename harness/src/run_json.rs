//! `run.json`: the versioned result of a run (documented in harness/RUN_JSON.md). Reports,
//! JUnit and diffs are made from this file alone.
//!
//! The format's types live in `acp-reports` ([`acp_reports::run`]), its one owner; this module
//! fills them from the harness's results and writes the files.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use acp_fake_agents::scenario::Case;
use acp_vocab::family::Family;
use acp_vocab::method::Method;
use std::io::Write;

use acp_vocab::control::Hello;
use acp_vocab::transcript::{Direction, Entry};
use anyhow::{Context, Result};
use serde_json::Value;

pub use acp_reports::run::{
    CaseEnd, CaseJson, CheckInfo, ClientInfo, EndKind, ProfileInfo, RUN_SCHEMA, RuleJson,
    RunConfigInfo, RunJson, RunJsonOf, ToolInfo, TrialJson, transcript_file,
};

use crate::client_spec::ClientSpec;
use crate::runner::{CaseResult, RunConfig, scenario_file};
use acp_judge::checks::{Grade, Trial, all_checks};
use acp_judge::policy::{DecisionPolicy, DeclaredPolicy, PolicySource};
use acp_judge::record::RunEnd;
use acp_vocab::control::Event;

/// What run.json says about each case's scenario that the case record does not carry. Taken
/// from the cases before they run, by scenario file (every case of a scenario shares them).
#[derive(Debug, Clone, Default)]
pub struct ScenarioInfo {
    by_file: HashMap<String, ScenarioFacts>,
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
    /// The facts of `cases`, read from `scenarios_dir` (the run's).
    pub fn of(cases: &[Case], scenarios_dir: &Path) -> ScenarioInfo {
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
            info.by_file.insert(
                scenario_file(s, scenarios_dir),
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

impl<'a> RunHeader<'a> {
    /// The header of a run without `--strict`, `--filter`, `--shard` or a version command (the
    /// benchmark's runs).
    pub fn plain(
        client: &'a ClientSpec,
        cfg: &'a RunConfig,
        started_unix_ms: u64,
        duration_ms: u64,
    ) -> Self {
        RunHeader {
            client,
            cfg,
            strict: false,
            filter: &[],
            shard: None,
            started_unix_ms,
            duration_ms,
            version_output: None,
        }
    }
}

/// Now, in milliseconds since the Unix epoch (run.json's `started_unix_ms`).
pub fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// run.json's fields other than the cases, which a run adds as they come
/// ([`RunJsonOf::with_cases`]).
pub fn header_json(
    header: RunHeader<'_>,
    scenarios: &ScenarioInfo,
    said: &ClientSaid,
    summary: BTreeMap<String, usize>,
) -> RunJsonOf<()> {
    RunJsonOf {
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
            reported: header.version_output.clone().or_else(|| said.reported()),
            policy: said.declared_policy(header.client),
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
        summary,
        checks: checks_catalog(),
        profiles: scenarios.profiles.clone(),
        cases: (),
    }
}

/// What the client said about itself in a run: the first `hello` of its adapter and the
/// `clientInfo` of its first `initialize` request, "first" in the order of the cases (not of
/// their ending), gathered case by case.
#[derive(Debug, Clone, Default)]
pub struct ClientSaid {
    hello: Option<(usize, Hello)>,
    client_info: Option<(usize, Value)>,
}

impl ClientSaid {
    /// Adds what the case at `index` (its place in the run) said.
    pub fn add(&mut self, index: usize, transcript: &[Entry]) {
        let earlier = |known: Option<usize>| known.is_none_or(|k| index < k);
        if earlier(self.hello.as_ref().map(|h| h.0)) {
            if let Some(hello) = first_hello(transcript) {
                self.hello = Some((index, hello.clone()));
            }
        }
        if earlier(self.client_info.as_ref().map(|c| c.0)) {
            if let Some(info) = first_client_info(transcript) {
                self.client_info = Some((index, info));
            }
        }
    }

    /// What the client said about itself: the adapter's `hello.client`, else the `clientInfo`
    /// of its first `initialize` request.
    pub fn reported(&self) -> Option<Value> {
        let hello = self
            .hello
            .as_ref()
            .and_then(|(_, h)| serde_json::to_value(&h.client).ok());
        hello.or_else(|| self.client_info.as_ref().map(|(_, v)| v.clone()))
    }

    /// The auto-approval policy the client declared: its profile's `[policy]`, else the
    /// `policy` of the first adapter `hello` (every case runs the same client) (`None`: it
    /// declared nothing).
    pub fn declared_policy(&self, client: &ClientSpec) -> Option<Value> {
        if let Some(declared) = client.declared_policy() {
            return serde_json::to_value(declared).ok();
        }
        let (_, hello) = self.hello.as_ref()?;
        let policy = DecisionPolicy::from_hello_policy(hello.policy.as_ref()?).ok()?;
        serde_json::to_value(DeclaredPolicy {
            source: PolicySource::Hello,
            name: None,
            policy,
        })
        .ok()
    }
}

fn first_hello(transcript: &[Entry]) -> Option<&Hello> {
    transcript
        .iter()
        .filter(|e| e.direction == Direction::AdapterToHarness)
        .find_map(|e| match e.event() {
            Some(Event::Hello(hello)) => Some(hello),
            _ => None,
        })
}

fn first_client_info(transcript: &[Entry]) -> Option<Value> {
    transcript.iter().find_map(|e| {
        (e.direction == Direction::ClientToAgent && e.method() == Some(Method::Initialize.as_str()))
            .then(|| e.json()?.get("params")?.get("clientInfo").cloned())
            .flatten()
    })
}

/// Every check of this harness, in trial order.
pub fn checks_catalog() -> Vec<CheckInfo> {
    all_checks()
        .iter()
        .map(|c| CheckInfo {
            id: c.id().into(),
            rules: c.rules().iter().map(|r| r.number()).collect(),
            requirement: c.requirement().into(),
            needs_adapter: c.needs_control_plane(),
        })
        .collect()
}

/// run.json's `summary`: every grade the reports know (zeros included), plus any other graded.
pub fn summary(counts: impl IntoIterator<Item = (Grade, usize)>) -> BTreeMap<String, usize> {
    let mut summary: BTreeMap<String, usize> = acp_reports::grade::names()
        .map(|g| (g.to_string(), 0))
        .collect();
    for (grade, n) in counts.into_iter().filter(|(_, n)| *n > 0) {
        *summary.entry(grade.as_str().to_string()).or_default() += n;
    }
    summary
}

/// How the case ended, in run.json's open form (`kind` plus that kind's fields).
fn case_end(end: &RunEnd) -> CaseEnd {
    serde_json::to_value(end)
        .and_then(serde_json::from_value)
        .unwrap_or_else(|err| CaseEnd {
            kind: EndKind::HarnessError,
            detail: [("reason".to_string(), Value::from(err.to_string()))]
                .into_iter()
                .collect(),
        })
}

pub fn case_json(result: &CaseResult, scenarios: &ScenarioInfo) -> CaseJson {
    let record = &result.record;
    let facts = scenarios
        .by_file
        .get(&record.meta.file)
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
            .map(|t| trial_json(&record.meta.case_id, t))
            .collect(),
    }
}

/// A trial of case `case_id` as run.json carries it.
pub fn trial_json(case_id: &str, t: &Trial) -> TrialJson {
    TrialJson {
        name: format!("{case_id}::{}", t.check),
        check: t.check.to_string(),
        grade: t.grade.into(),
        rules: t.rules.iter().map(|r| r.number()).collect(),
        requirement: t.requirement.to_string(),
        rule: t.broken_rule().map(rule_json),
        message: t.message.clone(),
        frames: t.frames.clone(),
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

/// Writes one case's transcript where run.json's `transcript` names it (one JSON entry a line).
pub fn write_transcript(out: &Path, case_id: &str, transcript: &[Entry]) -> Result<()> {
    let path = out.join(transcript_file(case_id));
    let write = || -> std::io::Result<()> {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&path)?);
        for entry in transcript {
            serde_json::to_writer(&mut file, entry)?;
            file.write_all(b"\n")?;
        }
        file.flush()
    };
    write().with_context(|| format!("cannot write {}", path.display()))
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
            assert_eq!(report, acp_reports::grade::Grade::from(g));
            assert_eq!(report.is_failing(false), g.is_failing(false), "{g:?}");
            assert_eq!(report.is_failing(true), g.is_failing(true), "{g:?}");
        }
    }

    #[test]
    fn run_ends_keep_their_fields() {
        let end = case_end(&RunEnd::Crash {
            exit_code: Some(3),
            signal: None,
            reason: "client exited".into(),
        });
        assert_eq!(end.kind, EndKind::Crash);
        assert_eq!(end.reason(), Some("client exited"));
        assert_eq!(end.detail.get("exit_code"), Some(&Value::from(3)));
    }
}
