//! Harness notes: what the harness itself records in a transcript between the frames (direction
//! `note`): a wait that ran out, a fault it injected, a user act done without a control plane,
//! how the client process started and ended. Checks read them to tell the client's failures from
//! the harness's decisions; reports print them in the wire log.
//!
//! One enum, serialised with its `type` word first, so that every note ever written has one
//! spelling. Fields that only some writers know are optional and left out when unknown.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::policy::DeclaredPolicy;

/// One harness note.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Note {
    /// The client process started (`pid` is its process group).
    ClientStarted { argv: Vec<String>, pid: i32 },
    /// The client process ended (`status` in words: "exit code 0", "killed by SIGKILL"), and
    /// the exit code when it exited by itself (none when a signal ended it; older transcripts
    /// leave it out).
    ClientExited {
        #[serde(default)]
        status: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
    },
    /// What the client promised to approve by itself, from its profile (written at the start
    /// of a case so a transcript alone says it).
    DeclaredPolicy(DeclaredPolicy),
    /// A client profile's observer is watching the client (`reports`: the event types it can
    /// report; `from`: what it reads).
    Observer {
        name: String,
        reports: Vec<String>,
        from: String,
    },
    /// The observer failed; the case is an adapter error.
    ObserverError { reason: String },
    /// An observed event that matched nothing on the wire, kept so a report can show it.
    ObserverUnmatched {
        event: Value,
        evidence: String,
        reason: String,
    },
    /// A step waited for the client and gave up. The scenario engine writes `step`, `label`
    /// and `reason`; the fuzz driver writes `waiting_for`.
    StepTimeout {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waiting_for: Option<String>,
        /// How long the wait lasted on the wall clock, in µs: it began that long before this
        /// note. What the agent asked before then waited a whole step budget unanswered,
        /// however busy the machine was (the budget itself is machine time).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        waited_us: Option<u64>,
    },
    /// The client closed the agent connection at step `step` (a label) before the scenario
    /// ended: the run was abandoned, not timed out.
    ConnectionClosed {
        #[serde(default)]
        step: String,
    },
    /// The run stopped waiting here; `step_timeout_ms` is how long one step may wait, so
    /// `jsonrpc` can tell which requests had waited that long unanswered. Step timeouts count
    /// machine time: `stretch` is how many times longer the wall clock (the transcript's time)
    /// ran than machine time over the case (1.0 on an idle machine, and in older transcripts).
    RunStopped {
        step_timeout_ms: u64,
        #[serde(default = "no_stretch", skip_serializing_if = "is_no_stretch")]
        stretch: f64,
    },
    /// After the scenario, the client did not show every turn ended within `waited_ms`.
    SettleTimeout { waited_ms: u64 },
    /// Which case of a `branch` (or `on_timeout`) the scenario took, and why.
    Branch {
        step: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        request: Option<String>,
        answer: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame: Option<usize>,
        /// The 1-based case taken, `"on_timeout"`, or `null` when no case fitted.
        case: Option<BranchCase>,
    },
    /// The scenario does not apply to this client.
    NotApplicable { reason: String },
    /// A client request that no step of the scenario takes (no step from `step` on expects its
    /// method with params that fit), seen while the scenario waited at `step` (a label, at
    /// `line` of the scenario file): the fake agent answered it as the real agent does with
    /// `error` (its profile's `[errors]` entry for the method, or -32601 Method not found for a
    /// method the agent does not have), or, with no `error`, left it unanswered: then the
    /// scenario, not the client, is at fault for whatever waits on that answer.
    UnmatchedRequest {
        step: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        line: Option<usize>,
        method: String,
        /// Transcript index of the request.
        frame: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<Value>,
        /// The result answered instead (the profile's `[results]`: a method the real agent
        /// implements, such as a `session/list` it advertised).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
    },
    /// The harness injected a fault (the frames it altered carry it too, in
    /// [`crate::transcript::Entry::fault`]).
    Fault {
        kind: FaultKind,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conn: Option<u32>,
    },
    /// The scenario killed the agent process of connection `conn` with `signal` (a
    /// `fault = "crash"` step): the agent died mid-conversation, as a crashed, OOM-killed or
    /// `killall`ed agent does, so whatever it had not answered stays unanswered.
    AgentKilled {
        conn: u32,
        signal: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step: Option<String>,
    },
    /// A frame longer than the harness reads (`max`) was dropped; `wire` is set by the fuzz
    /// driver (false: the control plane).
    FrameTooLong {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conn: Option<u32>,
        bytes: usize,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max: Option<usize>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wire: Option<bool>,
    },
    /// Frame `frame` ended without its newline (the client closed the stream mid-line).
    UnterminatedFrame { conn: u32, frame: usize },
    /// Reading the client's frames failed.
    ReadError { conn: u32, error: String },
    /// An adapter's control line longer than the harness reads.
    ControlLineTooLong { bytes: usize },
    /// Wire only: the user pressed Stop (`by`: how the profile cancels, e.g. `SIGINT`).
    UserCancel {
        #[serde(rename = "sessionId", default)]
        session_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// The user meant to Stop at an approval the client answered by itself.
    UserCancelSkipped {
        #[serde(rename = "requestId")]
        request_id: Value,
        reason: String,
    },
    /// Wire only: the user chose option `option_id` by typing `input`.
    UserChoose {
        #[serde(rename = "requestId")]
        request_id: Value,
        #[serde(rename = "optionId")]
        option_id: String,
        input: String,
    },
    /// The harness did not click for this request: the client answers it by itself.
    UserChooseSkipped {
        #[serde(rename = "requestId")]
        request_id: Value,
        #[serde(rename = "optionId")]
        option_id: String,
        reason: String,
    },
    /// The user did not type the scenario's prompt into `session`: the client had reported that
    /// the session could not be opened (an `error` for its `new_session`).
    UserPromptSkipped { session: String, reason: String },
    /// The profile's `[cancel]` command ran and exited with `status`.
    CancelCommandExited { argv: Vec<String>, status: String },
    /// A full-screen (`[tui]`) client is told to quit: the harness types the profile's quit
    /// `keys` once the scenario is done, as a person closes the program. Like an adapter's
    /// `shutdown`, what the client does after it (a pending request answered `cancelled`) is
    /// its answer to being closed.
    UserQuit { keys: String },
    /// A full-screen (`[tui]`) client's screen when the case ended: what the person saw last
    /// (empty: the client never drew).
    Screen { text: String },
    /// A terminal command of the scenario as the harness saw it, through the probe files the
    /// command writes in the workspace's `.acp-terminal/` (`<name>.pid`, `<name>.exit`,
    /// `<name>.out`; scenarios/README.md "Terminal probes"). Written after the client exited.
    TerminalProbe(TerminalProbe),
}

/// What the harness saw of one terminal command (see [`Note::TerminalProbe`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TerminalProbe {
    /// The probe's name: the `<name>` of its files, which the command line mentions.
    pub name: String,
    /// The pid the command wrote to `<name>.pid`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// The exit code the command wrote to `<name>.exit` just before exiting with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The exact output the command printed, as it wrote it to `<name>.out` (lossy UTF-8).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// The command's environment as it wrote it to `<name>.env` (`env` output: one
    /// `NAME=value` a line; a line without `=` continues the value before it and is dropped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<std::collections::BTreeMap<String, String>>,
    /// The command's working directory as it wrote it to `<name>.cwd` (`pwd -P`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The command's stdout was a terminal (it wrote `<name>.tty`): the client ran it in a
    /// pseudo-terminal, whose line discipline turns each `\n` it printed into `\r\n`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tty: bool,
    /// The process still ran when the scenario's last step was done (the client still up).
    #[serde(default)]
    pub running_at_scenario_end: bool,
    /// The process still ran after the client had exited; the harness then killed it.
    #[serde(default)]
    pub running_after_client_exit: bool,
}

/// Which case of a branch the scenario took.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BranchCase {
    /// 1-based position of the case.
    Case(usize),
    /// A named way out: `"on_timeout"`.
    Named(String),
}

/// How the harness broke a frame on purpose (a scenario's `fault` step).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    /// One frame written in two pieces.
    Split,
    /// One frame written twice.
    Duplicate,
    /// Bytes written as they are, not a frame of the scenario's.
    Raw,
    /// A frame that breaks the ACP schema on purpose.
    Invalid,
}

impl FaultKind {
    pub const ALL: [FaultKind; 4] = [
        FaultKind::Split,
        FaultKind::Duplicate,
        FaultKind::Raw,
        FaultKind::Invalid,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Split => "split",
            FaultKind::Duplicate => "duplicate",
            FaultKind::Raw => "raw",
            FaultKind::Invalid => "invalid",
        }
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Note {
    /// The `type` word of this note.
    pub fn type_name(&self) -> &'static str {
        match self {
            Note::ClientStarted { .. } => "client_started",
            Note::ClientExited { .. } => "client_exited",
            Note::DeclaredPolicy(_) => "declared_policy",
            Note::Observer { .. } => "observer",
            Note::ObserverError { .. } => "observer_error",
            Note::ObserverUnmatched { .. } => "observer_unmatched",
            Note::StepTimeout { .. } => "step_timeout",
            Note::ConnectionClosed { .. } => "connection_closed",
            Note::RunStopped { .. } => "run_stopped",
            Note::SettleTimeout { .. } => "settle_timeout",
            Note::Branch { .. } => "branch",
            Note::NotApplicable { .. } => "not_applicable",
            Note::UnmatchedRequest { .. } => "unmatched_request",
            Note::Fault { .. } => "fault",
            Note::AgentKilled { .. } => "agent_killed",
            Note::FrameTooLong { .. } => "frame_too_long",
            Note::UnterminatedFrame { .. } => "unterminated_frame",
            Note::ReadError { .. } => "read_error",
            Note::ControlLineTooLong { .. } => "control_line_too_long",
            Note::UserCancel { .. } => "user_cancel",
            Note::UserCancelSkipped { .. } => "user_cancel_skipped",
            Note::UserChoose { .. } => "user_choose",
            Note::UserChooseSkipped { .. } => "user_choose_skipped",
            Note::UserPromptSkipped { .. } => "user_prompt_skipped",
            Note::CancelCommandExited { .. } => "cancel_command_exited",
            Note::UserQuit { .. } => "user_quit",
            Note::Screen { .. } => "screen",
            Note::TerminalProbe(_) => "terminal_probe",
        }
    }

    /// The note as the JSON object a transcript holds.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a note always serialises")
    }
}

/// The stretch of a transcript written before step timeouts counted machine time.
fn no_stretch() -> f64 {
    1.0
}

fn is_no_stretch(stretch: &f64) -> bool {
    *stretch == 1.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Notes as transcripts already hold them: they read as typed notes and write back the same
    /// keys (transcripts are a contract).
    #[test]
    fn notes_read_and_write_as_transcripts_spell_them() {
        let written = [
            json!({"type":"step_timeout","step":3,"label":"3.1","reason":"no answer within 5 ms"}),
            json!({"type":"step_timeout","waiting_for":"a response"}),
            json!({"type":"connection_closed","step":"6"}),
            json!({"type":"agent_killed","conn":1,"signal":"SIGTERM","step":"9"}),
            json!({"type":"branch","step":"4","request":"perm","answer":"selected once","frame":12,"case":1}),
            json!({"type":"branch","step":"4","request":"perm","answer":"none","frame":12,"case":null}),
            json!({"type":"branch","step":"4","answer":"no reply within 5 ms","case":"on_timeout"}),
            json!({"type":"fault","kind":"duplicate","step":"2"}),
            json!({"type":"unmatched_request","step":"4","line":31,"method":"authenticate","frame":7,
                   "error":{"code":-32602,"message":"Invalid params"}}),
            json!({"type":"unmatched_request","step":"5","method":"session/prompt","frame":9}),
            json!({"type":"fault","kind":"raw","conn":2}),
            json!({"type":"frame_too_long","conn":1,"bytes":52428800,"max":16777216}),
            json!({"type":"frame_too_long","bytes":7,"wire":false}),
            json!({"type":"user_cancel","sessionId":"ses_1","by":"SIGINT"}),
            json!({"type":"declared_policy","source":"profile","name":"read-only",
                   "policy":{"approves":["read"],"scope":"workspace","allowAlways":false}}),
            json!({"type":"run_stopped","step_timeout_ms":5000}),
            json!({"type":"client_started","argv":["x"],"pid":12}),
            json!({"type":"user_choose","requestId":0,"optionId":"once","input":"y\n"}),
            json!({"type":"terminal_probe","name":"dev","pid":42,"running_at_scenario_end":true,
                   "running_after_client_exit":false}),
        ];
        for json in written {
            let note: Note =
                serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{json}: {e}"));
            assert_eq!(note.to_json(), json);
            assert_eq!(Some(note.type_name()), json["type"].as_str());
        }
    }

    #[test]
    fn old_transcripts_with_fewer_fields_still_read() {
        let n: Note = serde_json::from_value(json!({"type":"user_cancel"})).unwrap();
        assert_eq!(
            n,
            Note::UserCancel {
                session_id: String::new(),
                by: None
            }
        );
        assert!(serde_json::from_value::<Note>(json!({"type":"no_such_note"})).is_err());
    }
}
