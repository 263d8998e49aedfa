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

use crate::policy::{Scope, ToolKind};

/// The `protocol` every `hello` names.
pub const PROTOCOL: &str = "acp-harness-control";
/// The control protocol version this vocabulary speaks.
pub const VERSION: i64 = 1;

mod command;
mod shown;

pub use command::*;
pub use shown::*;

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
    /// The plan the client shows for a session (CONTROL.md "The plan").
    Plan(crate::plan::PlanShown),
    /// The adapter could not do what command `seq` asked; observed (a client without an
    /// adapter): the client showed that it could not open the session it was launched for.
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        observed: Option<Observed>,
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
            Event::Plan(_) => "plan",
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
            Event::Error { observed, .. } => observed.as_ref(),
            Event::Hello(_)
            | Event::SessionOpened { .. }
            | Event::SessionLoaded(_)
            | Event::SessionsListed { .. }
            | Event::SessionClosed { .. } => None,
            // An adapter's alone: no observer reports modes or plans.
            Event::Mode(_) | Event::ConfigOption(_) | Event::Plan(_) => None,
        }
    }

    /// Sets the evidence on an event type an observer may report; `false` for the others
    /// (`hello` and `session_opened` are the adapter's alone).
    pub fn set_observed(&mut self, observed: Observed) -> bool {
        let slot = match self {
            Event::Item(e) => &mut e.observed,
            Event::Approval(e) => &mut e.observed,
            Event::ApprovalResolved(e) => &mut e.observed,
            Event::Turn(e) => &mut e.observed,
            Event::Error { observed, .. } => observed,
            Event::Hello(_)
            | Event::SessionOpened { .. }
            | Event::SessionLoaded(_)
            | Event::SessionsListed { .. }
            | Event::SessionClosed { .. } => return false,
            Event::Mode(_) | Event::ConfigOption(_) | Event::Plan(_) => return false,
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
