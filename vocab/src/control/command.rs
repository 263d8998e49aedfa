//! The commands the harness writes to a client's adapter (playing the user), and their types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
