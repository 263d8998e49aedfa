//! What the client shows, as the events carry it: subjects, items, approval cards and their
//! answers, turn states, reopened sessions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
