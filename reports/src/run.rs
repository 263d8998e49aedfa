//! The `run.json` format (schema `acp-harness/run/v1`, documented in harness/RUN_JSON.md).
//!
//! This module is the format's one owner: the harness serialises runs with these types and every
//! report is made from them. Fields added after the first release carry `#[serde(default)]`, so
//! an older run.json still loads; grades ([`Grade`]) and end kinds ([`EndKind`]) are types that
//! keep a name they do not know, so a newer harness's grade or end is shown as it is (and written
//! back unchanged) instead of failing the whole report.

use std::collections::BTreeMap;

use acp_vocab::family::Family;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::end_kind::EndKind;
use crate::grade::Grade;

/// Identifies the format; bumped on any incompatible change.
pub const RUN_SCHEMA: &str = "acp-harness/run/v1";

/// One run of the suite against one client.
pub type RunJson = RunJsonOf<Vec<CaseJson>>;

/// A run.json whose cases are any sequence that serialises as a list of [`CaseJson`]: a run
/// that keeps its cases on disk writes run.json from there, one case at a time, with the same
/// bytes as from a `Vec` (the harness's `run_writer`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunJsonOf<Cases> {
    pub schema: String,
    pub harness: ToolInfo,
    /// Which ACP JSON Schema the `schema` check validated against.
    pub acp_schema: String,
    pub client: ClientInfo,
    pub config: RunConfigInfo,
    /// Milliseconds since the Unix epoch when the run started.
    pub started_unix_ms: u64,
    pub duration_ms: u64,
    /// Trial counts per grade (every grade the harness knows, zeros included).
    pub summary: BTreeMap<String, usize>,
    /// The checks of this harness version: what each requires and which spec rules it enforces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckInfo>,
    /// The agent profiles the cases used (the exact agent release each one follows).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<ProfileInfo>,
    pub cases: Cases,
}

impl<Cases> RunJsonOf<Cases> {
    /// The same run with other cases (every other field moved over).
    pub fn with_cases<Other>(self, cases: Other) -> RunJsonOf<Other> {
        RunJsonOf {
            schema: self.schema,
            harness: self.harness,
            acp_schema: self.acp_schema,
            client: self.client,
            config: self.config,
            started_unix_ms: self.started_unix_ms,
            duration_ms: self.duration_ms,
            summary: self.summary,
            checks: self.checks,
            profiles: self.profiles,
            cases,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// Profile name or argv[0].
    pub name: String,
    /// `--client` as given (argv JSON, profile path, `reference`, `mutant:<name>`).
    pub source: String,
    pub argv: Vec<String>,
    /// What the client said about itself: the adapter's `hello.client`, else the `clientInfo`
    /// of its `initialize` request (`{"name": …, "version": …}`); null if it said nothing.
    pub reported: Option<Value>,
    /// What the client declared it approves without its user (`{"source": "profile"|"hello",
    /// "name"?, "policy": {"approves", "scope", "allowAlways"}}`); absent: it declared nothing,
    /// so it approves nothing by itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Value>,
}

impl ClientInfo {
    /// The declared auto-approval policy in words.
    pub fn policy_words(&self) -> String {
        let Some(declared) = &self.policy else {
            return "none declared: approves nothing by itself".into();
        };
        let policy = declared.get("policy").unwrap_or(&Value::Null);
        let kinds: Vec<&str> = policy
            .get("approves")
            .and_then(Value::as_array)
            .map(|k| k.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let origin = match (
            declared.get("source").and_then(Value::as_str),
            declared.get("name").and_then(Value::as_str),
        ) {
            (Some("hello"), _) => "declared in hello".to_owned(),
            (_, Some(name)) => format!("profile policy \"{name}\""),
            _ => "profile policy".to_owned(),
        };
        if kinds.is_empty() {
            return format!("{origin}: approves nothing by itself");
        }
        let scope = match policy.get("scope").and_then(Value::as_str) {
            Some("anywhere") => "anywhere",
            _ => "inside the workspace",
        };
        let always = if policy.get("allowAlways").and_then(Value::as_bool) == Some(true) {
            ", may grant allow_always"
        } else {
            ""
        };
        format!("{origin}: approves {} {scope}{always}", kinds.join(", "))
    }

    /// The version the client reported, if any.
    pub fn reported_version(&self) -> Option<&str> {
        self.reported.as_ref()?.get("version")?.as_str()
    }

    /// The name the client reported, else the harness's name for it.
    pub fn display_name(&self) -> &str {
        self.reported
            .as_ref()
            .and_then(|r| r.get("name"))
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
            .unwrap_or(&self.name)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfigInfo {
    pub step_timeout_ms: u64,
    pub case_timeout_ms: u64,
    pub jobs: usize,
    /// `--strict`: warn fails the run.
    pub strict: bool,
    pub filter: Option<String>,
    /// `--shard K/N`: the run played one slice of the cases (absent when it played all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    pub scenarios_dir: String,
}

/// One check of the harness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckInfo {
    pub id: String,
    pub rules: Vec<u16>,
    pub requirement: String,
    /// True if the check grades what the client showed (needs the control-plane adapter).
    pub needs_adapter: bool,
}

/// One agent profile (fake-agents/profiles/`<agent>@<version>`.toml).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileInfo {
    /// `agent@version`.
    pub key: String,
    /// The exact release the profile follows, e.g. `opencode 1.18.34 (acp-next)`.
    pub title: String,
    pub sources: Vec<String>,
}

/// One case: one client launch playing one scenario (or one option of an `each` expansion).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseJson {
    /// `<agent>@<version>/<scenario>`, plus `[optionId]` for expanded runs.
    pub id: String,
    pub title: String,
    pub agent: String,
    pub version: String,
    /// Scenario file, relative to the scenarios directory.
    pub file: String,
    pub provenance: Vec<String>,
    /// The scenario's longer explanation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Client capabilities the scenario needs (dotted paths into `clientCapabilities`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requires: Vec<String>,
    /// `agent@version` of the profile the scenario uses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// What part of a client's job the scenario exercises (absent when its file does not say,
    /// and in run.json files written before families existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<Family>,
    pub end: CaseEnd,
    pub duration_ms: u64,
    /// Path of the transcript (JSON Lines of transcript entries), relative to run.json.
    pub transcript: String,
    /// Number of transcript entries.
    pub frames: usize,
    pub stderr_tail: String,
    /// One command line that re-runs just this case.
    pub repro: String,
    pub trials: Vec<TrialJson>,
}

impl CaseJson {
    /// `agent@version`, the key reports group by.
    pub fn agent_version(&self) -> String {
        format!("{}@{}", self.agent, self.version)
    }

    /// The scenario id: the case id without `agent@version/` and without `[option]`.
    pub fn scenario(&self) -> &str {
        scenario_of(&self.id)
    }

    /// The case id without `agent@version/` (`exec-choose-each[cancel]`).
    pub fn short_id(&self) -> &str {
        self.id.split_once('/').map_or(self.id.as_str(), |(_, r)| r)
    }
}

/// The scenario of a case id: without `agent@version/` and without `[option]`.
pub fn scenario_of(id: &str) -> &str {
    let rest = id.split_once('/').map_or(id, |(_, r)| r);
    rest.split_once('[').map_or(rest, |(s, _)| s)
}

/// How a case ended: its [`EndKind`] and the fields of that kind (`reason`, `step`, `exit_code`,
/// `signal`, `after_ms`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseEnd {
    pub kind: EndKind,
    #[serde(flatten)]
    pub detail: serde_json::Map<String, Value>,
}

impl CaseEnd {
    pub fn completed() -> Self {
        CaseEnd {
            kind: EndKind::Completed,
            detail: serde_json::Map::new(),
        }
    }

    /// `reason`, when the end has one.
    pub fn reason(&self) -> Option<&str> {
        self.detail.get("reason")?.as_str()
    }

    /// One line: the kind and its details (`crash: exit code 3: …`).
    pub fn describe(&self) -> String {
        let mut parts = vec![self.kind.as_str().replace('_', " ")];
        for (key, value) in &self.detail {
            if key == "reason" || value.is_null() {
                continue;
            }
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            parts.push(format!("{} {value}", key.replace('_', " ")));
        }
        let mut text = parts.join(", ");
        if let Some(reason) = self.reason() {
            text.push_str(": ");
            text.push_str(reason);
        }
        text
    }
}

/// One graded check of one case (a libtest trial).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialJson {
    /// `<case>::<check>`, the libtest trial name.
    pub name: String,
    pub check: String,
    /// One of [`crate::grade::GRADES`]; an unknown name is kept and rendered as it is.
    pub grade: Grade,
    pub rules: Vec<u16>,
    pub requirement: String,
    /// The rule the finding breaks, as the catalogue states it: on `fail` and `warn` (and the
    /// `expected` of a baseline); absent otherwise and in run.json files written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<RuleJson>,
    /// Empty on pass. Otherwise the finding, then the cited frames (`#<index> <arrow> <raw>`, one
    /// a line), then `repro: <command>`.
    pub message: String,
    /// Transcript indices of the offending frames.
    pub frames: Vec<usize>,
}

impl TrialJson {
    /// What a failure prints: the rule it breaks on a line of its own (`R43 (MUST) <sentence>
    /// <link>`), then the message with its Expected and Actual.
    pub fn failure_text(&self) -> String {
        match &self.rule {
            Some(rule) => format!("{}\n{}", rule.line(), self.message),
            None => self.message.clone(),
        }
    }
}

/// A rule of the judge's catalogue (`judge/rules.toml`), carried whole so a report needs
/// nothing but run.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleJson {
    /// `R<n>`.
    pub id: String,
    /// `MUST`, `SHOULD` or `MAY`.
    pub level: String,
    /// `client`, `agent` or `both`.
    pub binds: String,
    /// The requirement in one sentence.
    pub requirement: String,
    /// A public page stating it.
    pub link: String,
}

impl RuleJson {
    /// `R43 (MUST) <sentence> <link>`.
    pub fn line(&self) -> String {
        format!(
            "{} ({}) {} {}",
            self.id, self.level, self.requirement, self.link
        )
    }
}

/// File name of a case's transcript: the case id with path-unsafe characters replaced.
pub fn transcript_file(case_id: &str) -> String {
    format!("transcripts/{}.jsonl", crate::slug::file_stem(case_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_and_short_id_strip_agent_and_option() {
        let mut case: CaseJson = serde_json::from_value(serde_json::json!({
            "id": "qwen-code@0.14/exec-choose-each[cancel]", "title": "t", "agent": "qwen-code",
            "version": "0.14", "file": "f", "provenance": [], "end": {"kind": "completed"},
            "duration_ms": 1, "transcript": "x", "frames": 0, "stderr_tail": "", "repro": "",
            "trials": []
        }))
        .unwrap();
        assert_eq!(case.scenario(), "exec-choose-each");
        assert_eq!(case.short_id(), "exec-choose-each[cancel]");
        assert_eq!(case.agent_version(), "qwen-code@0.14");
        case.id = "plain".into();
        assert_eq!(case.scenario(), "plain");
    }

    #[test]
    fn an_end_keeps_unknown_kinds_and_fields() {
        let end: CaseEnd = serde_json::from_str(
            r#"{"kind":"crash","exit_code":3,"signal":null,"reason":"client exited"}"#,
        )
        .unwrap();
        assert_eq!(end.describe(), "crash, exit code 3: client exited");
        assert_eq!(end.kind, EndKind::Crash);
        let end: CaseEnd = serde_json::from_str(r#"{"kind":"brand_new","x":"y"}"#).unwrap();
        assert_eq!(end.kind, EndKind::Unknown("brand_new".into()));
        assert_eq!(end.describe(), "brand new, x y");
        let back = serde_json::to_value(&end).unwrap();
        assert_eq!(back, serde_json::json!({"kind":"brand_new","x":"y"}));
    }

    /// A run.json of a newer harness: a grade and an end kind this version does not know.
    const NEWER_RUN: &str = concat!(
        r#"{"schema":"acp-harness/run/v1","harness":{"name":"acp-harness","version":"9.0.0"},"#,
        r#""acp_schema":"s","client":{"name":"c","source":"reference","argv":["c"],"#,
        r#""reported":null},"config":{"step_timeout_ms":1,"case_timeout_ms":2,"jobs":1,"#,
        r#""strict":false,"filter":null,"scenarios_dir":"scenarios"},"started_unix_ms":3,"#,
        r#""duration_ms":4,"summary":{"fail":0,"flaky":1,"pass":1},"cases":[{"id":"a@1/s","#,
        r#""title":"t","agent":"a","version":"1","file":"a/1/s.toml","provenance":["p"],"#,
        r#""end":{"kind":"vanished","after_ms":7,"reason":"gone"},"duration_ms":5,"#,
        r#""transcript":"transcripts/a@1_s.jsonl","frames":2,"stderr_tail":"","repro":"r","#,
        r#""trials":[{"name":"a@1/s::jsonrpc","check":"jsonrpc","grade":"flaky","rules":[1],"#,
        r#""requirement":"q","message":"m","frames":[1]},{"name":"a@1/s::schema","#,
        r#""check":"schema","grade":"pass","rules":[2],"requirement":"q","message":"","#,
        r#""frames":[]}]}]}"#
    );

    #[test]
    fn a_newer_harness_run_loads_and_writes_back_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, NEWER_RUN).unwrap();
        let run = crate::load_run(&path).unwrap().run;
        let case = &run.cases[0];
        assert_eq!(case.end.kind, EndKind::Unknown("vanished".into()));
        assert_eq!(case.end.describe(), "vanished, after ms 7: gone");
        let flaky = &case.trials[0].grade;
        assert_eq!((flaky.known(), flaky.label()), (None, "flaky"));
        assert!(flaky.is_failing(false));
        assert_eq!(case.trials[1].grade, crate::grade::KnownGrade::Pass);
        assert_eq!(serde_json::to_string(&run).unwrap(), NEWER_RUN);
        // Pretty, as the harness writes it: the same bytes back too.
        let pretty = serde_json::to_string_pretty(&run).unwrap();
        let again: RunJson = serde_json::from_str(&pretty).unwrap();
        assert_eq!(again, run);
        assert_eq!(serde_json::to_string_pretty(&again).unwrap(), pretty);
    }

    #[test]
    fn transcript_files_are_path_safe() {
        assert_eq!(
            transcript_file("qwen-code@0.14/exec-choose-each[cancel]"),
            "transcripts/qwen-code@0.14_exec-choose-each[cancel].jsonl"
        );
        assert_eq!(transcript_file("a/../b c"), "transcripts/a_.._b_c.jsonl");
    }
}
