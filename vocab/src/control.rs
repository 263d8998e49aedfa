//! The control plane's messages (harness/CONTROL.md, harness/control-v1.schema.json): the
//! [`Command`]s the harness writes to a client's adapter (playing the user) and the [`Event`]s
//! the adapter writes back (what the client shows). A client profile's observer reports the same
//! events with an [`Observed`] field naming its evidence.
//!
//! Serialising any value of these types gives a message the schema accepts (a test checks every
//! variant); key names are the schema's. Reading is as strict as the schema for the closed
//! vocabularies (subjects, turn states) and lenient only where older transcripts left a field
//! out that the schema now requires: such a field reads as its default.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::policy::{Scope, ToolKind};

/// The `protocol` every `hello` names.
pub const PROTOCOL: &str = "acp-harness-control";
/// The control protocol version this vocabulary speaks.
pub const VERSION: i64 = 1;

/// harness → adapter: what the user does. `seq` numbers commands so that an `error` event can
/// say which one failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    /// Open a session in `cwd` through the client's normal code path; `session` is the
    /// harness's handle for it (the adapter answers `session_opened`).
    NewSession {
        seq: u64,
        session: String,
        cwd: String,
    },
    /// Type `text` into the session and send it.
    Prompt {
        seq: u64,
        session: String,
        text: String,
    },
    /// Click the button of option `option_id` on the approval card of request `request_id`.
    Choose {
        seq: u64,
        /// The JSON-RPC id of the `session/request_permission`, verbatim.
        #[serde(rename = "requestId")]
        request_id: Value,
        #[serde(rename = "optionId")]
        option_id: String,
    },
    /// Press Stop in the session.
    Cancel { seq: u64, session: String },
    // ----- session lifecycle (reopen, list, close: see `sessions.rs` in the reference client) --
    /// Reopen the earlier ACP session `session_id` in `cwd` with its history (`session/load`),
    /// under the harness handle `session` (the adapter answers `session_loaded` or `error`).
    LoadSession {
        seq: u64,
        session: String,
        #[serde(rename = "sessionId")]
        session_id: String,
        cwd: String,
    },
    /// Reopen the earlier ACP session `session_id` without its history (`session/resume`).
    ResumeSession {
        seq: u64,
        session: String,
        #[serde(rename = "sessionId")]
        session_id: String,
        cwd: String,
    },
    /// Show the agent's earlier sessions (`session/list`; the adapter answers `sessions_listed`).
    ListSessions {
        seq: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
    },
    /// Close the session (`session/close`; the adapter answers `session_closed`).
    CloseSession { seq: u64, session: String },
    // ----- end of session lifecycle ------------------------------------------------------------
    // ---- modes and config options (CONTROL.md "Modes and config options") ----
    /// Pick mode `mode_id` in the session's mode selector (the client sends `session/set_mode`
    /// only for a mode the agent offered).
    SetMode {
        seq: u64,
        session: String,
        #[serde(rename = "modeId")]
        mode_id: String,
    },
    /// Pick `value` for config option `config_id` (`session/set_config_option`).
    SetConfigOption {
        seq: u64,
        session: String,
        #[serde(rename = "configId")]
        config_id: String,
        value: String,
    },
    // ---- end of modes and config options ----
    /// Quit.
    Shutdown { seq: u64 },
}

/// A command's type without its fields: the words `hello.supports` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandType {
    NewSession,
    Prompt,
    Choose,
    Cancel,
    // session lifecycle
    LoadSession,
    ResumeSession,
    ListSessions,
    CloseSession,
    // modes and config options
    SetMode,
    SetConfigOption,
}

impl CommandType {
    /// The commands every scenario may need: open, prompt, choose, Stop.
    pub const BASIC: [CommandType; 4] = [
        CommandType::NewSession,
        CommandType::Prompt,
        CommandType::Choose,
        CommandType::Cancel,
    ];

    /// Every command type.
    pub const ALL: [CommandType; 10] = [
        CommandType::NewSession,
        CommandType::Prompt,
        CommandType::Choose,
        CommandType::Cancel,
        // session lifecycle
        CommandType::LoadSession,
        CommandType::ResumeSession,
        CommandType::ListSessions,
        CommandType::CloseSession,
        // modes and config options
        CommandType::SetMode,
        CommandType::SetConfigOption,
    ];

    /// What the user asks the client to do, for messages ("… cannot ask it to {words}").
    pub fn user_words(self) -> &'static str {
        match self {
            CommandType::NewSession => "open a session",
            CommandType::Prompt => "send a prompt",
            CommandType::Choose => "click an option",
            CommandType::Cancel => "press Stop",
            CommandType::LoadSession => "reopen an earlier session with its history",
            CommandType::ResumeSession => "resume an earlier session",
            CommandType::ListSessions => "list earlier sessions",
            CommandType::CloseSession => "close a session",
            CommandType::SetMode => "switch the session's mode",
            CommandType::SetConfigOption => "change a config option of the session",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CommandType::NewSession => "new_session",
            CommandType::Prompt => "prompt",
            CommandType::Choose => "choose",
            CommandType::Cancel => "cancel",
            // session lifecycle
            CommandType::LoadSession => "load_session",
            CommandType::ResumeSession => "resume_session",
            CommandType::ListSessions => "list_sessions",
            CommandType::CloseSession => "close_session",
            // modes and config options
            CommandType::SetMode => "set_mode",
            CommandType::SetConfigOption => "set_config_option",
        }
    }
}

impl Command {
    pub fn seq(&self) -> u64 {
        match self {
            Command::NewSession { seq, .. }
            | Command::Prompt { seq, .. }
            | Command::Choose { seq, .. }
            | Command::Cancel { seq, .. }
            | Command::LoadSession { seq, .. }
            | Command::ResumeSession { seq, .. }
            | Command::ListSessions { seq, .. }
            | Command::CloseSession { seq, .. }
            // modes and config options
            | Command::SetMode { seq, .. }
            | Command::SetConfigOption { seq, .. }
            | Command::Shutdown { seq } => *seq,
        }
    }

    /// The same command numbered `seq` (the control plane numbers commands as it sends them).
    pub fn with_seq(mut self, n: u64) -> Self {
        match &mut self {
            Command::NewSession { seq, .. }
            | Command::Prompt { seq, .. }
            | Command::Choose { seq, .. }
            | Command::Cancel { seq, .. }
            | Command::LoadSession { seq, .. }
            | Command::ResumeSession { seq, .. }
            | Command::ListSessions { seq, .. }
            | Command::CloseSession { seq, .. }
            // modes and config options
            | Command::SetMode { seq, .. }
            | Command::SetConfigOption { seq, .. }
            | Command::Shutdown { seq } => *seq = n,
        }
        self
    }

    /// The `type` word of this command.
    pub fn type_name(&self) -> &'static str {
        match self {
            Command::NewSession { .. } => "new_session",
            Command::Prompt { .. } => "prompt",
            Command::Choose { .. } => "choose",
            Command::Cancel { .. } => "cancel",
            Command::LoadSession { .. } => "load_session",
            Command::ResumeSession { .. } => "resume_session",
            Command::ListSessions { .. } => "list_sessions",
            Command::CloseSession { .. } => "close_session",
            // modes and config options
            Command::SetMode { .. } => "set_mode",
            Command::SetConfigOption { .. } => "set_config_option",
            Command::Shutdown { .. } => "shutdown",
        }
    }

    /// One JSON line (without the newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("a command always serialises")
    }
}

/// adapter → harness: what the client shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The first line an adapter prints.
    Hello(Hello),
    /// The session the harness named `session` is open, with ACP id `session_id`.
    SessionOpened {
        session: String,
        #[serde(rename = "sessionId")]
        session_id: String,
    },
    /// A timeline row as the client models it now.
    Item(Item),
    /// An approval card the client shows.
    Approval(Approval),
    /// An approval that went away: answered by the user, by Stop, or by the client's policy.
    ApprovalResolved(ApprovalResolved),
    /// The state the client shows a session's turn in.
    Turn(Turn),
    // ----- session lifecycle ---------------------------------------------------------------------
    /// The earlier session `session_id` is open again under handle `session`, showing `history`.
    SessionLoaded(SessionLoaded),
    /// The earlier sessions the client shows (answer to `list_sessions` command `seq`).
    SessionsListed {
        seq: u64,
        sessions: Vec<ListedSession>,
    },
    /// The session is closed.
    SessionClosed {
        session: String,
        #[serde(rename = "sessionId")]
        session_id: String,
    },
    // ----- end of session lifecycle --------------------------------------------------------------
    // ---- modes and config options (CONTROL.md "Modes and config options") ----
    /// The mode the client shows as the session's current one.
    Mode(crate::modes::ModeShown),
    /// The value the client shows for one config option of the session.
    ConfigOption(crate::modes::ConfigOptionShown),
    // ---- end of modes and config options ----
    /// The adapter could not do what command `seq` asked.
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
        message: String,
    },
}

impl Event {
    /// The `type` word of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::Hello(_) => "hello",
            Event::SessionOpened { .. } => "session_opened",
            Event::Item(_) => "item",
            Event::Approval(_) => "approval",
            Event::ApprovalResolved(_) => "approval_resolved",
            Event::Turn(_) => "turn",
            Event::SessionLoaded(_) => "session_loaded",
            Event::SessionsListed { .. } => "sessions_listed",
            Event::SessionClosed { .. } => "session_closed",
            Event::Mode(_) => "mode",
            Event::ConfigOption(_) => "config_option",
            Event::Error { .. } => "error",
        }
    }

    /// The evidence of an observed event (`None` for an adapter's).
    pub fn observed(&self) -> Option<&Observed> {
        match self {
            Event::Item(e) => e.observed.as_ref(),
            Event::Approval(e) => e.observed.as_ref(),
            Event::ApprovalResolved(e) => e.observed.as_ref(),
            Event::Turn(e) => e.observed.as_ref(),
            Event::Hello(_)
            | Event::SessionOpened { .. }
            | Event::SessionLoaded(_)
            | Event::SessionsListed { .. }
            | Event::SessionClosed { .. }
            | Event::Error { .. } => None,
            // An adapter's alone: no observer reports modes.
            Event::Mode(_) | Event::ConfigOption(_) => None,
        }
    }

    /// Sets the evidence on an event type an observer may report; `false` for the others
    /// (`hello`, `session_opened` and `error` are the adapter's alone).
    pub fn set_observed(&mut self, observed: Observed) -> bool {
        let slot = match self {
            Event::Item(e) => &mut e.observed,
            Event::Approval(e) => &mut e.observed,
            Event::ApprovalResolved(e) => &mut e.observed,
            Event::Turn(e) => &mut e.observed,
            Event::Hello(_)
            | Event::SessionOpened { .. }
            | Event::SessionLoaded(_)
            | Event::SessionsListed { .. }
            | Event::SessionClosed { .. }
            | Event::Error { .. } => return false,
            Event::Mode(_) | Event::ConfigOption(_) => return false,
        };
        *slot = Some(observed);
        true
    }

    /// One JSON line (without the newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("an event always serialises")
    }
}

/// Either plane direction's message, for readers that take both (a transcript's control frames).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Message {
    Command(Command),
    Event(Event),
}

/// `hello`: who the client is, which commands its adapter implements, and what it approves by
/// itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// Always [`PROTOCOL`].
    pub protocol: String,
    /// [`VERSION`] for this harness; a hello with another version is refused.
    pub version: i64,
    pub client: ClientInfo,
    pub supports: Vec<CommandType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<HelloPolicy>,
}

impl Hello {
    /// A version-1 hello.
    pub fn new(client: ClientInfo, supports: Vec<CommandType>) -> Self {
        Hello {
            protocol: PROTOCOL.into(),
            version: VERSION,
            client,
            supports,
            policy: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

/// The `policy` of a `hello` as the adapter wrote it: every field optional (absent = approves
/// nothing, inside the workspace, never `allow_always`). The judge turns it into a
/// [`crate::policy::DecisionPolicy`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HelloPolicy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approves: Option<Vec<ToolKind>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_always: Option<bool>,
}

/// What a timeline row or an approval card is about: the client's own closed vocabulary of item
/// types (CONTROL.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    Command,
    FileChange,
    Read,
    Search,
    Fetch,
    Think,
    ModeSwitch,
    Generic,
}

impl Subject {
    pub const ALL: [Subject; 8] = [
        Subject::Command,
        Subject::FileChange,
        Subject::Read,
        Subject::Search,
        Subject::Fetch,
        Subject::Think,
        Subject::ModeSwitch,
        Subject::Generic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Subject::Command => "command",
            Subject::FileChange => "file_change",
            Subject::Read => "read",
            Subject::Search => "search",
            Subject::Fetch => "fetch",
            Subject::Think => "think",
            Subject::ModeSwitch => "mode_switch",
            Subject::Generic => "generic",
        }
    }

    /// The subject a *specific* ACP `ToolKind` word maps to; `None` for `other`, unknown words
    /// and absent (the judge's effective-kind rules, docs/architecture.md §5.1).
    pub fn of_kind(kind: &str) -> Option<Subject> {
        Some(match kind {
            "execute" => Subject::Command,
            "edit" | "delete" | "move" => Subject::FileChange,
            "read" => Subject::Read,
            "search" => Subject::Search,
            "fetch" => Subject::Fetch,
            "think" => Subject::Think,
            "switch_mode" => Subject::ModeSwitch,
            _ => return None,
        })
    }

    pub fn parse(word: &str) -> Option<Subject> {
        Subject::ALL.into_iter().find(|s| s.as_str() == word)
    }
}

impl std::fmt::Display for Subject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who saw an observed event, on which stream, and what exactly it saw there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observed {
    pub by: String,
    pub from: String,
    pub evidence: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    #[serde(rename = "toolCallId")]
    pub tool_call_id: String,
    #[serde(rename = "itemType")]
    pub item_type: Subject,
    /// The row's status as the client shows it (free text; ACP's words in practice).
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Observed>,
}

/// One button of an approval card, in display order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresentedOption {
    #[serde(rename = "optionId")]
    pub option_id: String,
    #[serde(default)]
    pub label: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    #[serde(rename = "requestId")]
    pub request_id: Value,
    /// Required by the schema; read leniently (`None`) from transcripts that lack it.
    #[serde(
        rename = "toolCallId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_call_id: Option<String>,
    pub subject: Subject,
    /// The card's buttons; `None` only on an observed card whose buttons were not seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<PresentedOption>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Observed>,
}

/// How an approval went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Selected,
    Cancelled,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Selected => "selected",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// Who made an approval go away.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResolvedBy {
    /// A click on a button.
    User,
    /// Stop.
    Cancel,
    /// The client's declared auto-approval policy, without asking.
    Policy,
}

impl ResolvedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            ResolvedBy::User => "user",
            ResolvedBy::Cancel => "cancel",
            ResolvedBy::Policy => "policy",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalResolved {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    #[serde(rename = "requestId")]
    pub request_id: Value,
    pub outcome: Outcome,
    #[serde(rename = "optionId", default, skip_serializing_if = "Option::is_none")]
    pub option_id: Option<String>,
    /// Required by the schema; read leniently (`None`) from transcripts that lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<ResolvedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Observed>,
}

/// The state a client shows a turn in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    Running,
    Completed,
    Cancelled,
    Failed,
    Refused,
}

impl TurnState {
    pub const ALL: [TurnState; 5] = [
        TurnState::Running,
        TurnState::Completed,
        TurnState::Cancelled,
        TurnState::Failed,
        TurnState::Refused,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TurnState::Running => "running",
            TurnState::Completed => "completed",
            TurnState::Cancelled => "cancelled",
            TurnState::Failed => "failed",
            TurnState::Refused => "refused",
        }
    }

    pub fn parse(word: &str) -> Option<TurnState> {
        TurnState::ALL.into_iter().find(|s| s.as_str() == word)
    }

    /// Every state but `running` ends a turn.
    pub fn is_end(self) -> bool {
        self != TurnState::Running
    }
}

impl std::fmt::Display for TurnState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Turn {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    pub state: TurnState,
    /// The ACP `stopReason` the client got, if it says.
    #[serde(
        rename = "stopReason",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub stop_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<Observed>,
}

// ----- session lifecycle -------------------------------------------------------------------------

/// How an earlier session was reopened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reopen {
    /// `session/load`: the agent replays the history.
    Load,
    /// `session/resume`: no replay.
    Resume,
}

/// `session_loaded`: what the reopened session shows once the agent answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionLoaded {
    pub session: String,
    #[serde(rename = "sessionId")]
    pub session_id: String,
    pub how: Reopen,
    /// The session's timeline as the client shows it now, oldest first.
    pub history: Vec<HistoryEntry>,
}

/// What one history entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HistoryKind {
    /// A message of the user (`user_message_chunk`s).
    UserMessage,
    /// A message of the agent (`agent_message_chunk`s).
    AgentMessage,
    /// The agent's thinking (`agent_thought_chunk`s).
    AgentThought,
    /// A tool call (`tool_call` / `tool_call_update`), one entry per `toolCallId`.
    ToolCall,
}

impl HistoryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HistoryKind::UserMessage => "user_message",
            HistoryKind::AgentMessage => "agent_message",
            HistoryKind::AgentThought => "agent_thought",
            HistoryKind::ToolCall => "tool_call",
        }
    }
}

/// One entry of a session's timeline: a message (its text, every chunk in order) or a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub kind: HistoryKind,
    /// The text of a message (its chunks' text contents, concatenated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(
        rename = "toolCallId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub tool_call_id: Option<String>,
}

/// One earlier session as the client lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedSession {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
}
