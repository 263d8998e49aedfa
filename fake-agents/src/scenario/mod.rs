//! Scenario files (format v1, `scenarios/README.md`) parsed into typed steps.
//!
//! Parsing is strict and complete before anything runs: every error names `file:line:col`
//! ([`ScenarioError`]), including errors inside the JSON frames (mapped back into the file) and
//! semantic errors (unknown template variable, an alias used before it is defined, a `choose` of
//! an option the request does not offer). [`load_dir`] reports every broken file at once.

mod json_text;
mod parse;
mod plain_steps;
mod raw;
pub mod setup;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use acp_vocab::control::CommandType;
use acp_vocab::family::Family;
use acp_vocab::note::FaultKind;
use serde_json::Value;

use crate::profile::{Profile, Profiles};
use crate::source::SourceText;
use crate::vars::Vars;

pub use crate::error::ScenarioError;
pub use json_text::{Filled, JsonText, set_fresh_id};
pub use parse::parse;

/// One parsed scenario file.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Where it was read from, as given to [`load`] or found by [`load_dir`].
    pub path: PathBuf,
    /// The `[scenario]` table.
    pub meta: ScenarioMeta,
    pub profile: Option<Arc<Profile>>,
    /// `[vars]` in file order (values are templates).
    pub vars: Vec<(String, String)>,
    /// `[[setup]]` in file order: what the runner creates in the case directory before the
    /// client starts ([`setup::create`]).
    pub setup: Vec<setup::Setup>,
    pub steps: Vec<Step>,
    /// Set when a `user = "choose"` step has `each = true`: the option ids it expands into, in
    /// offer order.
    pub each: Option<Vec<String>>,
}

impl Vars {
    /// The variables `scenario` starts with ([`Vars::from_parts`] on its profile and `[vars]`).
    /// Defined here, not in [`crate::vars`], so that module needs nothing from this one.
    pub fn initial(scenario: &Scenario, cwd: &Path, outside: &Path) -> Result<Vars, String> {
        Vars::from_parts(scenario.profile.clone(), &scenario.vars, cwd, outside)
    }
}

/// The `[scenario]` table (README, "`[scenario]`").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioMeta {
    pub id: String,
    pub title: String,
    pub agent: String,
    pub version: String,
    /// What part of a client's job it exercises; `None` when the file does not say (the report
    /// then lists it under "Other scenarios").
    pub family: Option<Family>,
    pub provenance: Vec<String>,
    /// Dotted paths into the client's `clientCapabilities` that must be `true`.
    pub requires: Vec<String>,
    pub description: Option<String>,
    /// Recordings of the real agent that this scenario's frames must match in shape, as paths
    /// relative to the recordings folder of the fidelity test (`harness/tests/fidelity/`).
    pub recording: Vec<String>,
}

/// One run of a scenario: the scenario itself, or one option of an `each = true` expansion.
#[derive(Debug, Clone)]
pub struct Case {
    /// `<agent>@<version>/<id>` or `<agent>@<version>/<id>[<optionId>]`.
    pub id: String,
    pub scenario: Arc<Scenario>,
    /// The option the `each = true` step chooses in this run.
    pub each_option: Option<String>,
}

/// One step, with where it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Position in the scenario: `"4"` for the 4th `[[step]]`, `"9.1.2"` for the 2nd `then` step
    /// of the 1st `on` case of step 9, `"9.0.1"` for the 1st `on_timeout` step of step 9.
    pub label: String,
    /// The top-level step this one belongs to (1-based); it is the step an incomplete run names.
    pub top: usize,
    /// 1-based line in the file.
    pub line: usize,
    /// `timeout_ms` if given; otherwise the run's step timeout applies.
    pub timeout: Option<Duration>,
    pub kind: StepKind,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StepKind {
    /// `expect initialize` → `${profile.initialize}`, then `expect session/new` →
    /// `${profile.session_new}`.
    Handshake,
    /// Boxed: the largest kind by far, and a step's size is every step's size.
    Expect(Box<Expect>),
    /// Answer a client request remembered with `as`.
    ReplyTo {
        alias: String,
        reply: Reply,
    },
    /// Send a frame (a template); `alias` names it if it is a request.
    Send {
        frame: JsonText,
        alias: Option<String>,
    },
    /// Wait for the answer to a request we sent and run the first fitting case.
    Await {
        alias: String,
        /// `bind`: `(variable, JSON pointer into the answer's result)` in file order, set
        /// before the cases run.
        bind: Vec<(String, String)>,
        cases: Vec<OnCase>,
        /// `go_on = true`: when the answer has not come within the step's timeout, the scenario
        /// goes on without it (an agent that does not wait for it: opencode's fire-and-forget
        /// fs/write_text_file); otherwise that stops the run.
        go_on: bool,
    },
    Delay(Duration),
    Fault(Fault),
    /// `fault = "crash"`: the agent process dies here (killed with this signal). Only the last
    /// step of a scenario: nothing of the agent is left to play the rest.
    Crash(CrashSignal),
    User(UserStep),
}

/// What an `expect` step waits for.
#[derive(Debug, Clone, PartialEq)]
pub struct Expect {
    pub what: Expected,
    pub alias: Option<String>,
    /// Subset pattern (a template).
    pub pattern: Option<Value>,
    /// `(variable, JSON pointer)` in file order.
    pub capture: Vec<(String, String)>,
    pub reply: Option<Reply>,
    /// `on_timeout`: steps to run when the message does not come within the step's timeout
    /// (the agent's own reaction to a client that never sends it); `None` stops the run.
    pub on_timeout: Option<Vec<Step>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A request or notification with this method.
    Method(String),
    /// A response (to a request we sent).
    Response,
}

/// An answer to a client request (templates).
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Result(Value),
    Error(Value),
}

/// One `[[step.on]]` case.
#[derive(Debug, Clone, PartialEq)]
pub struct OnCase {
    pub line: usize,
    pub when: When,
    pub then: Vec<Step>,
    /// `end = true`: the scenario ends (complete) after `then`, as after an `on_timeout`: the
    /// steps after the `await` belong to the other cases (a rejected tool ends the turn there).
    pub end: bool,
}

/// When an `on` case fits the client's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum When {
    /// `selected`: an offered option of one of these kinds was chosen.
    Selected(Vec<String>),
    /// `option`: one of these (offered) option ids was chosen.
    Option(Vec<String>),
    /// `{"outcome":{"outcome":"cancelled"}}`.
    Cancelled,
    /// A `selected` outcome whose optionId the request did not offer.
    Unoffered,
    /// A JSON-RPC error response.
    Error,
    /// Anything.
    Otherwise,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// The frame in two writes, cut at byte `at` (default: the middle).
    Split {
        frame: Value,
        at: Option<usize>,
    },
    Duplicate {
        frame: Value,
    },
    /// A line written verbatim (not templated, need not be JSON).
    Raw {
        line: String,
    },
    /// A frame that deliberately breaks the ACP schema.
    Invalid {
        frame: Value,
    },
}

impl Fault {
    /// The name used in the scenario and in the transcript note.
    pub fn kind(&self) -> FaultKind {
        match self {
            Fault::Split { .. } => FaultKind::Split,
            Fault::Duplicate { .. } => FaultKind::Duplicate,
            Fault::Raw { .. } => FaultKind::Raw,
            Fault::Invalid { .. } => FaultKind::Invalid,
        }
    }
}

/// How a `fault = "crash"` step kills the agent process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashSignal {
    /// `SIGTERM`: `killall`, a service manager, a parent that gives up; exit status 143 from a
    /// shell.
    Term,
    /// `SIGKILL`: the OOM killer, `kill -9`; nothing of the agent runs after it.
    Kill,
}

impl CrashSignal {
    /// The spellings a scenario may use, in the order its error lists them.
    pub const NAMES: [&'static str; 2] = ["SIGTERM", "SIGKILL"];

    pub fn parse(name: &str) -> Option<CrashSignal> {
        match name {
            "SIGTERM" => Some(CrashSignal::Term),
            "SIGKILL" => Some(CrashSignal::Kill),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            CrashSignal::Term => "SIGTERM",
            CrashSignal::Kill => "SIGKILL",
        }
    }

    pub fn number(self) -> libc::c_int {
        match self {
            CrashSignal::Term => libc::SIGTERM,
            CrashSignal::Kill => libc::SIGKILL,
        }
    }
}

/// What the person at the client does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserStep {
    NewSession {
        session: String,
        cwd: String,
    },
    Prompt {
        session: String,
        text: String,
    },
    Choose {
        request: String,
        choice: Choice,
    },
    Cancel {
        session: String,
        pending: Option<String>,
    },
    // ----- session lifecycle ---------------------------------------------------------------------
    /// Reopen the earlier session `session_id` (with its history) under handle `session`.
    LoadSession {
        session: String,
        session_id: String,
        cwd: String,
    },
    /// Reopen the earlier session `session_id` without its history.
    ResumeSession {
        session: String,
        session_id: String,
        cwd: String,
    },
    /// Show the earlier sessions (of `cwd`, if given).
    ListSessions {
        cwd: Option<String>,
    },
    /// Close the session.
    CloseSession {
        session: String,
    },
    // ---- modes and config options ----
    /// Pick a mode in the session's mode selector.
    SetMode {
        session: String,
        mode: String,
    },
    /// Pick a value for one config option.
    SetConfigOption {
        session: String,
        config: String,
        value: String,
    },
}

impl UserStep {
    /// The control command this step needs from the client's adapter (CONTROL.md `supports`).
    pub fn command_type(&self) -> CommandType {
        match self {
            UserStep::NewSession { .. } => CommandType::NewSession,
            UserStep::Prompt { .. } => CommandType::Prompt,
            UserStep::Choose { .. } => CommandType::Choose,
            UserStep::Cancel { .. } => CommandType::Cancel,
            UserStep::LoadSession { .. } => CommandType::LoadSession,
            UserStep::ResumeSession { .. } => CommandType::ResumeSession,
            UserStep::ListSessions { .. } => CommandType::ListSessions,
            UserStep::CloseSession { .. } => CommandType::CloseSession,
            UserStep::SetMode { .. } => CommandType::SetMode,
            UserStep::SetConfigOption { .. } => CommandType::SetConfigOption,
        }
    }
}

/// Which option a `choose` clicks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The first offered option of this kind.
    Kind(String),
    /// Exactly this option id.
    Option(String),
    /// Every offered option, one run each ([`Case::each_option`]).
    Each,
}

/// The permission option kinds of ACP (`PermissionOptionKind`).
pub const OPTION_KINDS: &[&str] = &["allow_once", "allow_always", "reject_once", "reject_always"];

impl Scenario {
    /// `<agent>@<version>/<id>`.
    pub fn key(&self) -> String {
        format!("{}@{}/{}", self.meta.agent, self.meta.version, self.meta.id)
    }

    /// The file name, for step references ("step 4 (edit-permission.toml:31)").
    pub fn file_name(&self) -> String {
        self.path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| self.path.display().to_string())
    }

    /// Every step in document order, nested `then` steps right after their `await`.
    pub fn all_steps(&self) -> Vec<&Step> {
        fn walk<'s>(steps: &'s [Step], out: &mut Vec<&'s Step>) {
            for step in steps {
                out.push(step);
                match &step.kind {
                    StepKind::Await { cases, .. } => {
                        for case in cases {
                            walk(&case.then, out);
                        }
                    }
                    StepKind::Expect(expect) => {
                        if let Some(steps) = &expect.on_timeout {
                            walk(steps, out)
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.steps, &mut out);
        out
    }

    /// The text of the first `user = "prompt"` step, unfilled (it may hold `${…}`; see
    /// [`Scenario::fill_text`]). For clients that take the prompt on their command line.
    pub fn first_prompt(&self) -> Option<String> {
        self.all_steps().into_iter().find_map(|s| match &s.kind {
            StepKind::User(UserStep::Prompt { text, .. }) => Some(text.clone()),
            _ => None,
        })
    }

    /// The control commands beyond [`CommandType::BASIC`] (reopen, list, close, modes, config
    /// options) the scenario's user steps need, in first-use order: a client whose adapter does
    /// not support one cannot play the scenario, which is then not applicable to it.
    pub fn commands_beyond_basic(&self) -> Vec<CommandType> {
        let mut out = Vec::new();
        for step in self.all_steps() {
            if let StepKind::User(u) = &step.kind {
                let needed = u.command_type();
                if !CommandType::BASIC.contains(&needed) && !out.contains(&needed) {
                    out.push(needed);
                }
            }
        }
        out
    }

    /// Fills a text with the variables known before the run starts (built-ins, profile and
    /// scenario `[vars]`), e.g. the [`Scenario::first_prompt`] for a client's argv.
    pub fn fill_text(&self, text: &str, cwd: &Path, outside: &Path) -> Result<String, String> {
        crate::vars::Vars::initial(self, cwd, outside)?.fill_str(text)
    }

    /// The ACP session id this fake agent hands out, per user session handle (`"s1"` …), as far
    /// as it is known before running (the `sessionId` variable). Every handle of a
    /// `user = "new_session"` step is listed; `"s1"` if there is none.
    pub fn session_ids(&self) -> Vec<(String, String)> {
        let id = self
            .vars
            .iter()
            .rev()
            .chain(self.profile.iter().flat_map(|p| p.vars.iter().rev()))
            .find(|(name, _)| name == "sessionId")
            .map_or(crate::profile::DEFAULT_SESSION_ID.to_owned(), |(_, v)| {
                v.clone()
            });
        let mut handles: Vec<String> = Vec::new();
        for step in self.all_steps() {
            if let StepKind::User(UserStep::NewSession { session, .. }) = &step.kind
                && !handles.contains(session)
            {
                handles.push(session.clone());
            }
        }
        if handles.is_empty() {
            handles.push("s1".to_owned());
        }
        handles.into_iter().map(|h| (h, id.clone())).collect()
    }

    /// The runs of this scenario: one per offered option if a `choose` step has `each = true`
    /// (in offer order), otherwise one.
    pub fn cases(&self) -> Vec<Case> {
        self.clone().into_cases()
    }

    /// [`Scenario::cases`] without copying the scenario (a generated one of 10⁵ steps is tens
    /// of MB).
    pub fn into_cases(self) -> Vec<Case> {
        let key = self.key();
        let each = self.each.clone();
        let scenario = Arc::new(self);
        match &each {
            Some(options) => options
                .iter()
                .map(|o| Case {
                    id: format!("{key}[{o}]"),
                    scenario: scenario.clone(),
                    each_option: Some(o.clone()),
                })
                .collect(),
            None => vec![Case {
                id: key,
                scenario,
                each_option: None,
            }],
        }
    }
}

impl Case {
    /// "step 4 (edit-permission.toml:31)" — how messages cite a step.
    pub fn step_ref(&self, step: &Step) -> String {
        format!(
            "step {} ({}:{})",
            step.label,
            self.scenario.file_name(),
            step.line
        )
    }
}

/// The largest scenario file accepted. Hand-written scenarios are a few KiB; the bound keeps a
/// stray huge file from being read into memory.
pub const MAX_SCENARIO_BYTES: u64 = 4 << 20;

/// Reads and parses one scenario file against the embedded profiles.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    let profiles = Profiles::embedded().map_err(|errors| errors[0].clone())?;
    load_with(path, profiles)
}

/// Reads and parses one scenario file against the given profiles.
pub fn load_with(path: &Path, profiles: &Profiles) -> Result<Scenario, ScenarioError> {
    use std::io::Read;
    let file = path.display().to_string();
    let error = |message: String| ScenarioError {
        file: file.clone(),
        line: 1,
        col: 1,
        message,
    };
    // Read at most one byte past the limit: a huge (or endless) file never lands in memory.
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_SCENARIO_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| error(format!("cannot read the file: {e}")))?;
    if bytes.len() as u64 > MAX_SCENARIO_BYTES {
        return Err(error(format!(
            "the file is larger than {MAX_SCENARIO_BYTES} bytes (4 MiB), the limit for a scenario file"
        )));
    }
    let text = decode_utf8(&file, bytes)?;
    let mut scenario = parse(&file, &text, profiles)?;
    scenario.path = path.to_path_buf();
    Ok(scenario)
}

/// Files must be UTF-8 (TOML requires it); the error points at the first bad byte.
fn decode_utf8(file: &str, bytes: Vec<u8>) -> Result<String, ScenarioError> {
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let prefix = std::str::from_utf8(&e.as_bytes()[..valid]).unwrap_or("");
        let (line, col) = SourceText::new(prefix).line_col(valid);
        ScenarioError {
            file: file.to_owned(),
            line,
            col,
            message: "the file is not valid UTF-8".into(),
        }
    })
}

/// The coverage table's explanations at the top of the scenarios folder (`acp-harness
/// coverage`): data about the corpus, not a scenario, so [`load_dir`] skips it.
pub const COVERAGE_FILE: &str = "coverage.toml";

/// Loads every `*.toml` below `dir` (recursively, in sorted path order) against the embedded
/// profiles. Files must sit at `<agent>/<version>/<id>.toml` (so case ids are unique). Any error
/// means nothing should run: callers report them all and stop.
pub fn load_dir(dir: &Path) -> (Vec<Scenario>, Vec<ScenarioError>) {
    match Profiles::embedded() {
        Ok(profiles) => load_dir_with(dir, profiles),
        Err(errors) => (Vec::new(), errors.to_vec()),
    }
}

/// [`load_dir`] against the given profiles.
pub fn load_dir_with(dir: &Path, profiles: &Profiles) -> (Vec<Scenario>, Vec<ScenarioError>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    collect_toml(dir, 0, &mut files, &mut errors);
    files.sort();

    let mut scenarios: Vec<Scenario> = Vec::new();
    for path in files {
        let scenario = match load_with(&path, profiles) {
            Ok(s) => s,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let rel = path.strip_prefix(dir).unwrap_or(&path);
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let expected = [
            scenario.meta.agent.clone(),
            scenario.meta.version.clone(),
            format!("{}.toml", scenario.meta.id),
        ];
        if parts != expected {
            errors.push(ScenarioError {
                file: path.display().to_string(),
                line: 1,
                col: 1,
                message: format!(
                    "scenario `{}` must live at `{}` below the scenarios folder (agent/version/id.toml), not `{}`",
                    scenario.key(),
                    expected.join("/"),
                    parts.join("/")
                ),
            });
            continue;
        }
        scenarios.push(scenario);
    }
    (scenarios, errors)
}

/// Every `*.toml` file below `dir`. Hidden entries (`.git`, editor backups) are skipped; other
/// files (README.md, notes) are not scenarios and are ignored.
fn collect_toml(dir: &Path, depth: usize, out: &mut Vec<PathBuf>, errors: &mut Vec<ScenarioError>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            errors.push(ScenarioError {
                file: dir.display().to_string(),
                line: 1,
                col: 1,
                message: format!("cannot read the scenarios folder: {e}"),
            });
            return;
        }
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || (depth == 0 && name == COVERAGE_FILE) {
            continue;
        }
        // Follow symlinks: a scenarios folder may link shared files.
        // (Bounded depth: a symlink loop must not recurse forever.)
        if path.is_dir() && depth < 16 {
            collect_toml(&path, depth + 1, out, errors);
        } else if path.extension().is_some_and(|e| e == "toml") {
            out.push(path);
        }
    }
}
