//! Views over a transcript that every check shares: what each wire frame *is*, which response
//! answers which request, which sessions exist, what the control plane said, and what the agent
//! had told the client about a tool call at any point in time.
//!
//! [`WireModel::new`] makes one linear pass over the transcript and builds every index; queries
//! are then lookups or binary searches, so a transcript of 10^5 frames costs O(n log n) at most.
//! The model only borrows the transcript: every `&str`/`&Value` it hands out points into the
//! recorded frames.
//!
//! Envelope rules (JSON-RPC 2.0, acp-spec.md §5 #1–#4, #6, #7) are checked here by hand so that a
//! frame is classified exactly once: a frame is a [`MsgKind::Request`], a
//! [`MsgKind::Notification`], a [`MsgKind::Response`] or [`MsgKind::Invalid`] with the reason.

use std::collections::{BTreeMap, HashMap, VecDeque};

use acp_vocab::transcript::{Direction, Entry};
use serde_json::Value;

pub use crate::acp_schema::Side;

// ---------------------------------------------------------------------------------------------
// Wire messages
// ---------------------------------------------------------------------------------------------

/// The successful or failed body of a response.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ResponseBody<'a> {
    Result(&'a Value),
    Error {
        code: i64,
        message: &'a str,
        error: &'a Value,
    },
}

/// What a wire frame is, envelope-wise.
#[derive(Debug, Clone, PartialEq)]
pub enum MsgKind<'a> {
    Request {
        id: &'a Value,
        method: &'a str,
    },
    Notification {
        method: &'a str,
    },
    Response {
        id: &'a Value,
        body: ResponseBody<'a>,
    },
    /// Not a JSON-RPC 2.0 message; the reason says why.
    Invalid {
        reason: String,
    },
}

/// One wire frame, classified.
#[derive(Debug, Clone)]
pub struct WireMsg<'a> {
    /// Transcript index.
    pub index: usize,
    pub conn: u32,
    /// Who wrote it.
    pub from: Side,
    pub entry: &'a Entry,
    pub kind: MsgKind<'a>,
    /// Set for an agent frame announced by a harness `{"type":"fault","kind":…}` note.
    pub fault: Option<&'a str>,
}

impl<'a> WireMsg<'a> {
    pub fn json(&self) -> Option<&'a Value> {
        self.entry.json.as_ref()
    }

    /// `method` of a request or notification.
    pub fn method(&self) -> Option<&'a str> {
        match self.kind {
            MsgKind::Request { method, .. } | MsgKind::Notification { method } => Some(method),
            _ => None,
        }
    }

    /// `params` of a request or notification (absent → `None`).
    pub fn params(&self) -> Option<&'a Value> {
        match self.kind {
            MsgKind::Request { .. } | MsgKind::Notification { .. } => self.json()?.get("params"),
            _ => None,
        }
    }

    /// `params.sessionId` of a request or notification.
    pub fn params_session_id(&self) -> Option<&'a str> {
        self.params()?.get("sessionId")?.as_str()
    }

    pub fn id(&self) -> Option<&'a Value> {
        match self.kind {
            MsgKind::Request { id, .. } | MsgKind::Response { id, .. } => Some(id),
            _ => None,
        }
    }

    pub fn result(&self) -> Option<&'a Value> {
        match self.kind {
            MsgKind::Response {
                body: ResponseBody::Result(r),
                ..
            } => Some(r),
            _ => None,
        }
    }

    pub fn is_request(&self) -> bool {
        matches!(self.kind, MsgKind::Request { .. })
    }

    pub fn is_error_response(&self) -> bool {
        matches!(
            self.kind,
            MsgKind::Response {
                body: ResponseBody::Error { .. },
                ..
            }
        )
    }

    pub fn is_request_for(&self, method: &str) -> bool {
        matches!(self.kind, MsgKind::Request { method: m, .. } if m == method)
    }

    pub fn is_notification_for(&self, method: &str) -> bool {
        matches!(self.kind, MsgKind::Notification { method: m } if m == method)
    }
}

/// A JSON-RPC id rendered as a type-exact key: `1`, `1.0` and `"1"` are three different ids.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// The JSON type of a value, as JSON Schema names it (`string`, `object`, …).
pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A short human description of an id with its JSON type, e.g. `"1" (string)`.
pub fn describe_id(id: &Value) -> String {
    format!("{id} ({})", json_type(id))
}

/// Classifies one wire entry by the JSON-RPC 2.0 envelope rules.
pub fn classify(entry: &Entry) -> MsgKind<'_> {
    let invalid = |reason: &str| MsgKind::Invalid {
        reason: reason.to_owned(),
    };
    if entry.invalid_utf8 {
        return invalid("not valid UTF-8 (rule #1)");
    }
    let Some(json) = entry.json.as_ref() else {
        return invalid("not JSON");
    };
    let obj = match json {
        Value::Object(obj) => obj,
        Value::Array(_) => return invalid("a JSON array (batch); ACP v1 has no batches"),
        _ => return invalid("not a JSON object"),
    };
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => {
            return MsgKind::Invalid {
                reason: format!("\"jsonrpc\" is {other}, not \"2.0\""),
            };
        }
        None => return invalid("no \"jsonrpc\":\"2.0\""),
    }
    let id_ok = |id: &Value| matches!(id, Value::String(_) | Value::Number(_) | Value::Null);
    if let Some(method) = obj.get("method") {
        let Some(method) = method.as_str() else {
            return invalid("\"method\" is not a string");
        };
        if obj.contains_key("result") || obj.contains_key("error") {
            return invalid("has both \"method\" and \"result\"/\"error\"");
        }
        if let Some(params) = obj.get("params") {
            if !params.is_object() && !params.is_array() {
                return invalid("\"params\" is neither an object nor an array");
            }
        }
        return match obj.get("id") {
            None => MsgKind::Notification { method },
            Some(id) if id_ok(id) => MsgKind::Request { id, method },
            Some(_) => invalid("request \"id\" is not a string, number or null"),
        };
    }
    let Some(id) = obj.get("id") else {
        return invalid("neither \"method\" nor \"id\"");
    };
    if !id_ok(id) {
        return invalid("response \"id\" is not a string, number or null");
    }
    match (obj.get("result"), obj.get("error")) {
        (Some(_), Some(_)) => invalid("response has both \"result\" and \"error\""),
        (None, None) => invalid("response has neither \"result\" nor \"error\""),
        (Some(result), None) => MsgKind::Response {
            id,
            body: ResponseBody::Result(result),
        },
        (None, Some(error)) => {
            let Some(err) = error.as_object() else {
                return invalid("\"error\" is not an object");
            };
            let Some(code) = err.get("code").and_then(Value::as_i64) else {
                return invalid("\"error.code\" is not an integer");
            };
            let Some(message) = err.get("message").and_then(|m| m.as_str()) else {
                return invalid("\"error.message\" is not a string");
            };
            MsgKind::Response {
                id,
                body: ResponseBody::Error {
                    code,
                    message,
                    error,
                },
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Control plane
// ---------------------------------------------------------------------------------------------

/// One option button of an approval card.
#[derive(Debug, Clone, PartialEq)]
pub struct PresentedOption<'a> {
    pub option_id: &'a str,
    pub label: &'a str,
}

/// A control-plane command (harness → adapter) or event (adapter → harness), parsed leniently:
/// a message without the fields its type needs is [`Control::Malformed`].
#[derive(Debug, Clone, PartialEq)]
pub enum Control<'a> {
    NewSession {
        seq: Option<u64>,
        session: &'a str,
        cwd: &'a str,
    },
    Prompt {
        seq: Option<u64>,
        session: &'a str,
    },
    Choose {
        seq: Option<u64>,
        request_id: &'a Value,
        option_id: &'a str,
    },
    Cancel {
        seq: Option<u64>,
        session: &'a str,
    },
    Shutdown {
        seq: Option<u64>,
    },
    Hello,
    SessionOpened {
        session: &'a str,
        session_id: &'a str,
    },
    Item {
        session_id: &'a str,
        tool_call_id: &'a str,
        item_type: &'a str,
        status: Option<&'a str>,
        title: Option<&'a str>,
    },
    Approval {
        session_id: &'a str,
        request_id: &'a Value,
        tool_call_id: Option<&'a str>,
        subject: &'a str,
        /// The card's buttons; `None` when they were not seen (an observed card: the schema
        /// lets only observed events leave `options` out).
        options: Option<Vec<PresentedOption<'a>>>,
    },
    ApprovalResolved {
        session_id: &'a str,
        request_id: &'a Value,
        outcome: &'a str,
        option_id: Option<&'a str>,
        by: Option<&'a str>,
    },
    Turn {
        session_id: &'a str,
        state: &'a str,
        stop_reason: Option<&'a str>,
    },
    Error {
        seq: Option<u64>,
        message: &'a str,
    },
    /// A type this model does not know, or a known type missing a field.
    Malformed,
}

/// A control message with its transcript index.
#[derive(Debug, Clone)]
pub struct ControlMsg<'a> {
    pub index: usize,
    /// True for harness → adapter commands.
    pub command: bool,
    /// True for an event a client profile's observer derived (direction `o2h`), not one an
    /// adapter reported.
    pub observed: bool,
    pub control: Control<'a>,
}

fn parse_control(json: &Value) -> Control<'_> {
    let s = |k: &str| json.get(k).and_then(Value::as_str);
    let seq = json.get("seq").and_then(Value::as_u64);
    let parsed = match s("type") {
        Some("new_session") => (|| {
            Some(Control::NewSession {
                seq,
                session: s("session")?,
                cwd: s("cwd")?,
            })
        })(),
        Some("prompt") => s("session").map(|session| Control::Prompt { seq, session }),
        Some("choose") => (|| {
            Some(Control::Choose {
                seq,
                request_id: json.get("requestId")?,
                option_id: s("optionId")?,
            })
        })(),
        Some("cancel") => s("session").map(|session| Control::Cancel { seq, session }),
        Some("shutdown") => Some(Control::Shutdown { seq }),
        Some("hello") => Some(Control::Hello),
        Some("session_opened") => (|| {
            Some(Control::SessionOpened {
                session: s("session")?,
                session_id: s("sessionId")?,
            })
        })(),
        Some("item") => (|| {
            Some(Control::Item {
                session_id: s("sessionId")?,
                tool_call_id: s("toolCallId")?,
                item_type: s("itemType")?,
                status: s("status"),
                title: s("title"),
            })
        })(),
        Some("approval") => (|| {
            let options = match json.get("options") {
                None => None,
                Some(options) => Some(
                    options
                        .as_array()?
                        .iter()
                        .map(|o| {
                            Some(PresentedOption {
                                option_id: o.get("optionId")?.as_str()?,
                                label: o.get("label").and_then(Value::as_str).unwrap_or(""),
                            })
                        })
                        .collect::<Option<Vec<_>>>()?,
                ),
            };
            Some(Control::Approval {
                session_id: s("sessionId")?,
                request_id: json.get("requestId")?,
                tool_call_id: s("toolCallId"),
                subject: s("subject")?,
                options,
            })
        })(),
        Some("approval_resolved") => (|| {
            Some(Control::ApprovalResolved {
                session_id: s("sessionId")?,
                request_id: json.get("requestId")?,
                outcome: s("outcome")?,
                option_id: s("optionId"),
                by: s("by"),
            })
        })(),
        Some("turn") => (|| {
            Some(Control::Turn {
                session_id: s("sessionId")?,
                state: s("state")?,
                stop_reason: s("stopReason"),
            })
        })(),
        Some("error") => Some(Control::Error {
            seq,
            message: s("message").unwrap_or(""),
        }),
        _ => None,
    };
    parsed.unwrap_or(Control::Malformed)
}

/// A user cancel: a control `cancel` command, or a `{"type":"user_cancel","sessionId":…}` note
/// for wire-only clients.
#[derive(Debug, Clone, PartialEq)]
pub struct UserCancel<'a> {
    /// Transcript index of the command or note.
    pub index: usize,
    /// The ACP session it targets (resolved from the handle via `session_opened`), if known.
    pub session_id: Option<&'a str>,
    /// The control handle (`"s1"`) for a control command.
    pub handle: Option<&'a str>,
    pub seq: Option<u64>,
}

// ---------------------------------------------------------------------------------------------
// Tool calls and subjects
// ---------------------------------------------------------------------------------------------

/// The closed vocabulary of approval subjects and timeline item types (CONTROL.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
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

    pub fn parse(s: &str) -> Option<Subject> {
        Some(match s {
            "command" => Subject::Command,
            "file_change" => Subject::FileChange,
            "read" => Subject::Read,
            "search" => Subject::Search,
            "fetch" => Subject::Fetch,
            "think" => Subject::Think,
            "mode_switch" => Subject::ModeSwitch,
            "generic" => Subject::Generic,
            _ => return None,
        })
    }

    /// The subject a *specific* tool kind maps to; `None` for `other`, unknown words and absent.
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
}

/// True for a tool kind that names what the tool does (everything but `other`/unknown).
pub fn is_specific_kind(kind: &str) -> bool {
    Subject::of_kind(kind).is_some()
}

/// What the agent had told the client about one tool call at a point in time: every
/// `tool_call`/`tool_call_update` merged in order (present fields replace; `content` and
/// `locations` replace the collection), then the permission request's own `toolCall`. A kind of
/// `other` (or an unknown word) never overrides a specific kind announced earlier.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EffectiveToolCall<'a> {
    pub tool_call_id: &'a str,
    pub title: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub status: Option<&'a str>,
    pub content: Option<&'a Value>,
    pub locations: Option<&'a Value>,
    pub raw_input: Option<&'a Value>,
    /// How many frames were merged.
    pub merged: usize,
    /// The last frame merged.
    pub last_frame: Option<usize>,
    /// The frame whose `kind` is the effective kind.
    pub kind_frame: Option<usize>,
}

impl<'a> EffectiveToolCall<'a> {
    pub fn new(tool_call_id: &'a str) -> Self {
        EffectiveToolCall {
            tool_call_id,
            ..Default::default()
        }
    }

    /// Merges one `ToolCall`/`ToolCallUpdate` object (a `null` field counts as absent).
    pub fn merge(&mut self, fields: &'a Value, index: usize) {
        let present = |k: &str| fields.get(k).filter(|v| !v.is_null());
        let string = |k: &str| present(k).and_then(Value::as_str);
        if let Some(title) = string("title") {
            self.title = Some(title);
        }
        if let Some(kind) = string("kind") {
            let keep_previous = !is_specific_kind(kind) && self.kind.is_some_and(is_specific_kind);
            if !keep_previous {
                self.kind = Some(kind);
                self.kind_frame = Some(index);
            }
        }
        if let Some(status) = string("status") {
            self.status = Some(status);
        }
        if let Some(content) = present("content") {
            self.content = Some(content);
        }
        if let Some(locations) = present("locations") {
            self.locations = Some(locations);
        }
        if let Some(raw_input) = present("rawInput") {
            self.raw_input = Some(raw_input);
        }
        self.merged += 1;
        self.last_frame = Some(index);
    }

    /// `rawInput.command` is a string.
    pub fn has_command(&self) -> bool {
        self.raw_input
            .and_then(|r| r.get("command"))
            .is_some_and(Value::is_string)
    }

    /// Some content item is a diff.
    pub fn has_diff(&self) -> bool {
        self.content.and_then(Value::as_array).is_some_and(|c| {
            c.iter()
                .any(|i| i.get("type") == Some(&Value::from("diff")))
        })
    }

    /// At least one file location.
    pub fn has_locations(&self) -> bool {
        self.locations
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
    }

    /// True when showing `shown` instead of the expected subject is only a weaker deviation
    /// (`warn`): the kind is `other`/absent and `shown` is `generic` or something the tool call
    /// also supports (a command with a `rawInput.command`, a file change with a diff or locations).
    pub fn weakly_supports(&self, shown: Subject) -> bool {
        !self.expected_subject().from_specific_kind
            && match shown {
                Subject::Generic => true,
                Subject::Command => self.has_command(),
                Subject::FileChange => self.has_diff() || self.has_locations(),
                _ => false,
            }
    }

    /// The subject an approval (and timeline item) for this tool call must show (DESIGN §5.1).
    pub fn expected_subject(&self) -> ExpectedSubject {
        if let Some(kind) = self.kind {
            if let Some(subject) = Subject::of_kind(kind) {
                return ExpectedSubject {
                    subject,
                    from_specific_kind: true,
                    reason: format!("kind \"{kind}\""),
                };
            }
        }
        let kind = match self.kind {
            Some(k) => format!("kind \"{k}\""),
            None => "no kind".to_owned(),
        };
        let (subject, why) = if self.has_command() {
            (Subject::Command, "rawInput.command is a string")
        } else if self.has_diff() {
            (Subject::FileChange, "it has diff content")
        } else if self.has_locations() {
            (Subject::FileChange, "it has file locations")
        } else {
            (Subject::Generic, "nothing more specific is known")
        };
        ExpectedSubject {
            subject,
            from_specific_kind: false,
            reason: format!("{kind} and {why}"),
        }
    }
}

/// The expected subject of an effective tool call and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpectedSubject {
    pub subject: Subject,
    /// True when a specific tool kind decided it (contradicting it is a `fail`); false when it
    /// was inferred from `other`/absent kind (a deviation is weaker).
    pub from_specific_kind: bool,
    /// Plain words: `kind "edit"`, `kind "other" and it has file locations`.
    pub reason: String,
}

// ---------------------------------------------------------------------------------------------
// Permission requests
// ---------------------------------------------------------------------------------------------

/// One option offered in a `session/request_permission`.
#[derive(Debug, Clone, PartialEq)]
pub struct OfferedOption<'a> {
    pub option_id: &'a str,
    pub name: Option<&'a str>,
    pub kind: Option<&'a str>,
}

/// An agent `session/request_permission` with everything linked to it.
#[derive(Debug, Clone)]
pub struct PermissionRequest<'a> {
    pub index: usize,
    pub conn: u32,
    pub id: &'a Value,
    pub session_id: Option<&'a str>,
    /// `params.toolCall` (a ToolCallUpdate).
    pub tool_call: Option<&'a Value>,
    pub tool_call_id: Option<&'a str>,
    pub options: Vec<OfferedOption<'a>>,
    /// Transcript indices of the client's responses, in order.
    pub answers: Vec<usize>,
    /// Transcript indices of matching control `approval` events.
    pub approvals: Vec<usize>,
    /// Transcript indices of matching control `approval_resolved` events.
    pub resolutions: Vec<usize>,
    /// Transcript indices of `choose` commands aimed at this request.
    pub chooses: Vec<usize>,
    /// Fault kind if the frame was a deliberate fault.
    pub fault: Option<&'a str>,
    /// The effective tool call the request is about (computed in the model's single pass).
    pub effective: EffectiveToolCall<'a>,
}

impl<'a> PermissionRequest<'a> {
    pub fn offers(&self, option_id: &str) -> bool {
        self.options.iter().any(|o| o.option_id == option_id)
    }

    pub fn option(&self, option_id: &str) -> Option<&OfferedOption<'a>> {
        self.options.iter().find(|o| o.option_id == option_id)
    }

    pub fn offered_ids(&self) -> Vec<&'a str> {
        self.options.iter().map(|o| o.option_id).collect()
    }
}

/// What a client's response to a permission request says.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PermissionAnswer<'a> {
    Selected(&'a str),
    Cancelled,
    /// A JSON-RPC error response.
    Error,
    /// A result that is neither outcome.
    Malformed,
}

impl PermissionAnswer<'_> {
    pub fn describe(&self) -> String {
        match self {
            PermissionAnswer::Selected(id) => format!("selected \"{id}\""),
            PermissionAnswer::Cancelled => "cancelled".to_owned(),
            PermissionAnswer::Error => "a JSON-RPC error".to_owned(),
            PermissionAnswer::Malformed => "a malformed outcome".to_owned(),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The model
// ---------------------------------------------------------------------------------------------

type SessionTool<'a> = (&'a str, &'a str);

/// Every shared view over one transcript. Build it once per case with [`WireModel::new`].
#[derive(Debug)]
pub struct WireModel<'a> {
    pub entries: &'a [Entry],
    /// Every wire frame in transcript order.
    pub msgs: Vec<WireMsg<'a>>,
    /// Transcript index → position in `msgs`.
    msg_pos: HashMap<usize, usize>,
    /// For requests: positions (in `msgs`) of the responses paired with them.
    answers: Vec<Vec<usize>>,
    /// For responses: position of the request they answer.
    answered: Vec<Option<usize>>,
    /// The ACP session each message belongs to (params.sessionId, or its request's, or the
    /// session a `session/new` response created).
    msg_session: Vec<Option<&'a str>>,
    /// Positions of messages per session, in order.
    by_session: HashMap<&'a str, Vec<usize>>,
    /// Responses that answer no request (positions).
    pub unpaired_responses: Vec<usize>,
    /// Client requests sent with an id that was still pending: (new, pending) transcript indices.
    pub reused_ids: Vec<(usize, usize)>,
    /// Session ids in order of first appearance.
    pub session_ids: Vec<&'a str>,
    /// Control-plane commands and events in order.
    pub controls: Vec<ControlMsg<'a>>,
    /// Harness notes (index, json) in order.
    pub notes: Vec<(usize, &'a Value)>,
    handles: HashMap<&'a str, Vec<(usize, &'a str)>>,
    /// (sessionId, toolCallId) → agent frames (transcript indices) that describe the tool call:
    /// `tool_call` / `tool_call_update` updates and permission requests.
    tool_frames: HashMap<&'a str, HashMap<&'a str, Vec<usize>>>,
    /// (sessionId, toolCallId) → positions in `controls` of `item` events.
    items: BTreeMap<SessionTool<'a>, Vec<usize>>,
    pub permissions: Vec<PermissionRequest<'a>>,
    perm_at: HashMap<usize, usize>,
    /// Client `initialize` params and agent `initialize` results per connection.
    client_init: HashMap<u32, &'a Value>,
    agent_init: HashMap<u32, &'a Value>,
    /// First agent frame per connection that is not a JSON-RPC message.
    first_invalid_agent_frame: HashMap<u32, usize>,
}

struct PendingFault<'a> {
    kind: &'a str,
    conn: Option<u32>,
    remaining: usize,
}

impl<'a> WireModel<'a> {
    /// One linear pass over the transcript.
    pub fn new(entries: &'a [Entry]) -> Self {
        let mut m = WireModel {
            entries,
            msgs: Vec::new(),
            msg_pos: HashMap::new(),
            answers: Vec::new(),
            answered: Vec::new(),
            msg_session: Vec::new(),
            by_session: HashMap::new(),
            unpaired_responses: Vec::new(),
            reused_ids: Vec::new(),
            session_ids: Vec::new(),
            controls: Vec::new(),
            notes: Vec::new(),
            handles: HashMap::new(),
            tool_frames: HashMap::new(),
            items: BTreeMap::new(),
            permissions: Vec::new(),
            perm_at: HashMap::new(),
            client_init: HashMap::new(),
            agent_init: HashMap::new(),
            first_invalid_agent_frame: HashMap::new(),
        };
        // (conn, requester side) → id key → pending request positions (FIFO).
        let mut open: HashMap<(u32, Side), HashMap<String, VecDeque<usize>>> = HashMap::new();
        // (conn, requester side) → id key → last request position with that id.
        let mut last: HashMap<(u32, Side), HashMap<String, usize>> = HashMap::new();
        let mut faults: Vec<PendingFault<'a>> = Vec::new();
        let mut seen_session: std::collections::HashSet<&'a str> = Default::default();
        // (session, request id key) → permission positions, for control matching.
        let mut perm_by_sid: HashMap<(&'a str, String), Vec<usize>> = HashMap::new();
        let mut perm_by_id: HashMap<String, Vec<usize>> = HashMap::new();
        // (conn, session, toolCallId) → the effective tool call so far (updates only).
        let mut running: HashMap<(u32, &'a str, &'a str), EffectiveToolCall<'a>> = HashMap::new();

        for entry in entries {
            let index = entry.index;
            match entry.direction {
                Direction::Note => {
                    let Some(json) = entry.json.as_ref() else {
                        continue;
                    };
                    m.notes.push((index, json));
                    if json.get("type").and_then(Value::as_str) == Some("fault") {
                        let kind = json.get("kind").and_then(Value::as_str).unwrap_or("");
                        faults.push(PendingFault {
                            kind,
                            conn: json
                                .get("conn")
                                .and_then(Value::as_u64)
                                .and_then(|c| u32::try_from(c).ok()),
                            remaining: if kind == "duplicate" { 2 } else { 1 },
                        });
                    }
                    continue;
                }
                Direction::HarnessToAdapter
                | Direction::AdapterToHarness
                | Direction::ObserverToHarness => {
                    let Some(json) = entry.json.as_ref() else {
                        continue;
                    };
                    let control = parse_control(json);
                    let pos = m.controls.len();
                    match &control {
                        Control::SessionOpened {
                            session,
                            session_id,
                        } => {
                            m.handles
                                .entry(session)
                                .or_default()
                                .push((index, session_id));
                        }
                        Control::Item {
                            session_id,
                            tool_call_id,
                            ..
                        } => m
                            .items
                            .entry((session_id, tool_call_id))
                            .or_default()
                            .push(pos),
                        Control::Approval {
                            session_id,
                            request_id,
                            ..
                        } => {
                            let key = (*session_id, id_key(request_id));
                            if let Some(p) = pick(&m.permissions, perm_by_sid.get(&key), |p| {
                                p.approvals.is_empty()
                            }) {
                                m.permissions[p].approvals.push(index);
                            }
                        }
                        Control::ApprovalResolved {
                            session_id,
                            request_id,
                            ..
                        } => {
                            let key = (*session_id, id_key(request_id));
                            if let Some(p) = pick(&m.permissions, perm_by_sid.get(&key), |p| {
                                p.resolutions.is_empty()
                            }) {
                                m.permissions[p].resolutions.push(index);
                            }
                        }
                        Control::Choose { request_id, .. } => {
                            // The card the user clicked: the latest request with that id whose
                            // approval was shown, else the latest request with that id.
                            let candidates = perm_by_id.get(&id_key(request_id));
                            if let Some(p) =
                                pick(&m.permissions, candidates, |p| !p.approvals.is_empty())
                            {
                                m.permissions[p].chooses.push(index);
                            }
                        }
                        _ => {}
                    }
                    m.controls.push(ControlMsg {
                        index,
                        command: entry.direction == Direction::HarnessToAdapter,
                        observed: entry.direction == Direction::ObserverToHarness,
                        control,
                    });
                    continue;
                }
                Direction::ClientToAgent | Direction::AgentToClient => {}
            }

            let from = if entry.direction == Direction::ClientToAgent {
                Side::Client
            } else {
                Side::Agent
            };
            let mut fault = None;
            if from == Side::Agent {
                if let Some(pos) = faults
                    .iter()
                    .position(|f| f.conn.is_none_or(|c| c == entry.conn))
                {
                    fault = Some(faults[pos].kind);
                    faults[pos].remaining -= 1;
                    if faults[pos].remaining == 0 {
                        faults.remove(pos);
                    }
                }
            }
            let kind = classify(entry);
            let pos = m.msgs.len();
            m.msg_pos.insert(index, pos);
            m.answers.push(Vec::new());
            m.answered.push(None);
            let mut session: Option<&'a str> = None;
            let msg = WireMsg {
                index,
                conn: entry.conn,
                from,
                entry,
                kind,
                fault,
            };
            match &msg.kind {
                MsgKind::Request { id, method } => {
                    let key = id_key(id);
                    let open_here = open.entry((entry.conn, from)).or_default();
                    let pending = open_here.entry(key.clone()).or_default();
                    if from == Side::Client {
                        if let Some(&older) = pending.front() {
                            m.reused_ids.push((index, m.msgs[older].index));
                        }
                    }
                    pending.push_back(pos);
                    last.entry((entry.conn, from))
                        .or_default()
                        .insert(key.clone(), pos);
                    session = msg.params_session_id();
                    if from == Side::Client && *method == "initialize" {
                        if let Some(p) = msg.params() {
                            m.client_init.insert(entry.conn, p);
                        }
                    }
                    if matches!(*method, "session/load" | "session/resume") {
                        if let Some(sid) = session {
                            if seen_session.insert(sid) {
                                m.session_ids.push(sid);
                            }
                        }
                    }
                    if from == Side::Agent && *method == "session/request_permission" {
                        let params = msg.params();
                        let tool_call = params.and_then(|p| p.get("toolCall"));
                        let tool_call_id = tool_call
                            .and_then(|t| t.get("toolCallId"))
                            .and_then(Value::as_str);
                        let options = params
                            .and_then(|p| p.get("options"))
                            .and_then(Value::as_array)
                            .map(|opts| {
                                opts.iter()
                                    .filter_map(|o| {
                                        Some(OfferedOption {
                                            option_id: o.get("optionId")?.as_str()?,
                                            name: o.get("name").and_then(Value::as_str),
                                            kind: o.get("kind").and_then(Value::as_str),
                                        })
                                    })
                                    .collect()
                            })
                            .unwrap_or_default();
                        let p = m.permissions.len();
                        let mut effective = match (session, tool_call_id) {
                            (Some(sid), Some(tcid)) => running
                                .get(&(entry.conn, sid, tcid))
                                .cloned()
                                .unwrap_or_else(|| EffectiveToolCall::new(tcid)),
                            _ => EffectiveToolCall::new(tool_call_id.unwrap_or("")),
                        };
                        if let Some(fields) = tool_call {
                            effective.merge(fields, index);
                        }
                        if let Some(sid) = session {
                            perm_by_sid.entry((sid, key.clone())).or_default().push(p);
                            if let Some(tcid) = tool_call_id {
                                m.tool_frames
                                    .entry(sid)
                                    .or_default()
                                    .entry(tcid)
                                    .or_default()
                                    .push(index);
                            }
                        }
                        perm_by_id.entry(key).or_default().push(p);
                        m.perm_at.insert(index, p);
                        m.permissions.push(PermissionRequest {
                            index,
                            conn: entry.conn,
                            id,
                            session_id: session,
                            tool_call,
                            tool_call_id,
                            options,
                            answers: Vec::new(),
                            approvals: Vec::new(),
                            resolutions: Vec::new(),
                            chooses: Vec::new(),
                            fault,
                            effective,
                        });
                    }
                }
                MsgKind::Notification { method } => {
                    session = msg.params_session_id();
                    if from == Side::Agent && *method == "session/update" {
                        if let (Some(sid), Some(update)) =
                            (session, msg.params().and_then(|p| p.get("update")))
                        {
                            let is_tool = matches!(
                                update.get("sessionUpdate").and_then(Value::as_str),
                                Some("tool_call" | "tool_call_update")
                            );
                            if let (true, Some(tcid)) =
                                (is_tool, update.get("toolCallId").and_then(Value::as_str))
                            {
                                m.tool_frames
                                    .entry(sid)
                                    .or_default()
                                    .entry(tcid)
                                    .or_default()
                                    .push(index);
                                running
                                    .entry((entry.conn, sid, tcid))
                                    .or_insert_with(|| EffectiveToolCall::new(tcid))
                                    .merge(update, index);
                            }
                        }
                    }
                }
                MsgKind::Response { id, .. } => {
                    let requester = from.peer();
                    let key = id_key(id);
                    let request = open
                        .get_mut(&(entry.conn, requester))
                        .and_then(|o| o.get_mut(&key))
                        .and_then(VecDeque::pop_front)
                        .or_else(|| {
                            last.get(&(entry.conn, requester))
                                .and_then(|l| l.get(&key))
                                .copied()
                        });
                    match request {
                        Some(req) => {
                            m.answers[req].push(pos);
                            m.answered[pos] = Some(req);
                            session = m.msg_session[req];
                            let req_msg = &m.msgs[req];
                            if let Some(&p) = m.perm_at.get(&req_msg.index) {
                                m.permissions[p].answers.push(index);
                            }
                            let req_method = req_msg.method();
                            if let (Some(method), Some(result)) = (req_method, msg.result()) {
                                if method == "session/new" {
                                    if let Some(sid) =
                                        result.get("sessionId").and_then(Value::as_str)
                                    {
                                        session = Some(sid);
                                        if seen_session.insert(sid) {
                                            m.session_ids.push(sid);
                                        }
                                    }
                                }
                                if method == "initialize" && from == Side::Agent {
                                    m.agent_init.insert(entry.conn, result);
                                }
                            }
                        }
                        None => m.unpaired_responses.push(pos),
                    }
                }
                MsgKind::Invalid { .. } => {
                    if from == Side::Agent {
                        m.first_invalid_agent_frame
                            .entry(entry.conn)
                            .or_insert(index);
                    }
                }
            }
            if let Some(sid) = session {
                m.by_session.entry(sid).or_default().push(pos);
            }
            m.msg_session.push(session);
            m.msgs.push(msg);
        }
        m
    }

    // ---- wire messages ------------------------------------------------------------------

    pub fn entry(&self, index: usize) -> Option<&'a Entry> {
        self.entries
            .get(index)
            .filter(|e| e.index == index)
            .or_else(|| {
                // Transcripts are dense (index == position); tolerate others.
                self.entries.iter().find(|e| e.index == index)
            })
    }

    /// The wire message recorded at a transcript index.
    pub fn msg(&self, index: usize) -> Option<&WireMsg<'a>> {
        self.msg_pos.get(&index).map(|&p| &self.msgs[p])
    }

    /// The responses (transcript indices) paired with the request at `index`.
    pub fn answers_to(&self, index: usize) -> Vec<usize> {
        match self.msg_pos.get(&index) {
            Some(&p) => self.answers[p]
                .iter()
                .map(|&r| self.msgs[r].index)
                .collect(),
            None => Vec::new(),
        }
    }

    /// The request (transcript index) the response at `index` answers.
    pub fn request_of(&self, index: usize) -> Option<usize> {
        let p = *self.msg_pos.get(&index)?;
        self.answered[p].map(|r| self.msgs[r].index)
    }

    /// The request message a response answers.
    pub fn request_msg_of(&self, response: &WireMsg<'a>) -> Option<&WireMsg<'a>> {
        self.msg(self.request_of(response.index)?)
    }

    /// The ACP session a message belongs to.
    pub fn session_of(&self, index: usize) -> Option<&'a str> {
        self.msg_pos.get(&index).and_then(|&p| self.msg_session[p])
    }

    /// Messages of one session (either direction), in transcript order.
    pub fn session_msgs(&self, session_id: &str) -> impl Iterator<Item = &WireMsg<'a>> + '_ {
        self.by_session
            .get(session_id)
            .map(|v| v.as_slice())
            .unwrap_or(&[])
            .iter()
            .map(|&p| &self.msgs[p])
    }

    /// Messages of one session with transcript index >= `from`.
    pub fn session_msgs_from(
        &self,
        session_id: &str,
        from: usize,
    ) -> impl Iterator<Item = &WireMsg<'a>> + '_ {
        let list = self
            .by_session
            .get(session_id)
            .map(|v| v.as_slice())
            .unwrap_or(&[]);
        let start = list.partition_point(|&p| self.msgs[p].index < from);
        list[start..].iter().map(|&p| &self.msgs[p])
    }

    /// The client's `session/prompt` for `session_id` that was in progress at `at`: the latest
    /// one sent before `at`, if the agent had not answered it before `at`.
    pub fn prompt_in_progress(&self, session_id: &str, at: usize) -> Option<&WireMsg<'a>> {
        let list = self.by_session.get(session_id)?;
        let end = list.partition_point(|&p| self.msgs[p].index < at);
        let prompt = list[..end]
            .iter()
            .rev()
            .map(|&p| &self.msgs[p])
            .find(|m| m.from == Side::Client && m.is_request_for("session/prompt"))?;
        let answered_before = self
            .answers_to(prompt.index)
            .first()
            .is_some_and(|&a| a < at);
        (!answered_before).then_some(prompt)
    }

    /// Wire messages with transcript index >= `from`.
    pub fn msgs_from(&self, from: usize) -> &[WireMsg<'a>] {
        let start = self.msgs.partition_point(|m| m.index < from);
        &self.msgs[start..]
    }

    /// The client's `initialize` params on a connection.
    pub fn client_init(&self, conn: u32) -> Option<&'a Value> {
        self.client_init.get(&conn).copied()
    }

    /// The agent's `initialize` result on a connection.
    pub fn agent_init(&self, conn: u32) -> Option<&'a Value> {
        self.agent_init.get(&conn).copied()
    }

    /// True if the client advertised `clientCapabilities.fs.<capability>` = true on `conn`.
    pub fn client_fs_capability(&self, conn: u32, capability: &str) -> bool {
        self.client_init(conn)
            .and_then(|p| p.pointer(&format!("/clientCapabilities/fs/{capability}")))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// True for a client error response with id `null` sent after the agent wrote a frame that
    /// is not JSON-RPC on that connection: the JSON-RPC way to answer garbage (-32700/-32600),
    /// not a response to an unknown id.
    pub fn is_reply_to_garbage(&self, index: usize) -> bool {
        let Some(msg) = self.msg(index) else {
            return false;
        };
        msg.from == Side::Client
            && msg.is_error_response()
            && msg.id().is_some_and(Value::is_null)
            && self
                .first_invalid_agent_frame
                .get(&msg.conn)
                .is_some_and(|&first| first < index)
    }

    /// The fault kind announced for the agent frame at `index`, if any.
    pub fn fault_at(&self, index: usize) -> Option<&'a str> {
        self.msg(index).and_then(|m| m.fault)
    }

    // ---- permission requests ------------------------------------------------------------

    pub fn permission_at(&self, index: usize) -> Option<&PermissionRequest<'a>> {
        self.perm_at.get(&index).map(|&p| &self.permissions[p])
    }

    /// What the response at `index` says as a permission answer.
    pub fn permission_answer(&self, index: usize) -> PermissionAnswer<'a> {
        let Some(msg) = self.msg(index) else {
            return PermissionAnswer::Malformed;
        };
        match msg.kind {
            MsgKind::Response {
                body: ResponseBody::Error { .. },
                ..
            } => PermissionAnswer::Error,
            MsgKind::Response {
                body: ResponseBody::Result(result),
                ..
            } => {
                let outcome = result.get("outcome");
                match outcome
                    .and_then(|o| o.get("outcome"))
                    .and_then(Value::as_str)
                {
                    Some("cancelled") => PermissionAnswer::Cancelled,
                    Some("selected") => match outcome
                        .and_then(|o| o.get("optionId"))
                        .and_then(Value::as_str)
                    {
                        Some(id) => PermissionAnswer::Selected(id),
                        None => PermissionAnswer::Malformed,
                    },
                    _ => PermissionAnswer::Malformed,
                }
            }
            _ => PermissionAnswer::Malformed,
        }
    }

    // ---- control plane ------------------------------------------------------------------

    pub fn control_at(&self, index: usize) -> Option<&ControlMsg<'a>> {
        let p = self.controls.partition_point(|c| c.index < index);
        self.controls.get(p).filter(|c| c.index == index)
    }

    /// Control messages with transcript index >= `from`.
    pub fn controls_from(&self, from: usize) -> &[ControlMsg<'a>] {
        let start = self.controls.partition_point(|c| c.index < from);
        &self.controls[start..]
    }

    /// The ACP session id behind a control handle as of `at`: the latest `session_opened` for
    /// it before `at`, else the first one after.
    pub fn session_for_handle(&self, handle: &str, at: usize) -> Option<&'a str> {
        let opened = self.handles.get(handle)?;
        opened
            .iter()
            .rev()
            .find(|(i, _)| *i < at)
            .or_else(|| opened.first())
            .map(|(_, sid)| *sid)
    }

    /// True if a client profile's observer declared (note `{"type":"observer","reports":[…]}`)
    /// that it reports control events of this `type` for a client without an adapter.
    pub fn observer_reports(&self, event: &str) -> bool {
        self.notes.iter().any(|(_, note)| {
            note.get("type").and_then(Value::as_str) == Some("observer")
                && note
                    .get("reports")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|e| e.as_str() == Some(event)))
        })
    }

    /// Every user cancel, in order.
    pub fn user_cancels(&self) -> Vec<UserCancel<'a>> {
        let mut out = Vec::new();
        let mut controls = self.controls.iter().peekable();
        let push_control = |c: &ControlMsg<'a>, out: &mut Vec<UserCancel<'a>>| {
            if let Control::Cancel { seq, session } = c.control {
                out.push(UserCancel {
                    index: c.index,
                    session_id: self.session_for_handle(session, c.index),
                    handle: Some(session),
                    seq,
                });
            }
        };
        for &(index, note) in &self.notes {
            while let Some(c) = controls.next_if(|c| c.index < index) {
                push_control(c, &mut out);
            }
            if note.get("type").and_then(Value::as_str) == Some("user_cancel") {
                out.push(UserCancel {
                    index,
                    session_id: note.get("sessionId").and_then(Value::as_str),
                    handle: note.get("session").and_then(Value::as_str),
                    seq: None,
                });
            }
        }
        for c in controls {
            push_control(c, &mut out);
        }
        out
    }

    /// `item` events per (sessionId, toolCallId): (transcript index, itemType), in order.
    pub fn items(&self) -> impl Iterator<Item = ((&'a str, &'a str), Vec<(usize, &'a str)>)> + '_ {
        self.items
            .iter()
            .map(|(key, list)| (*key, self.item_list(list)))
    }

    fn item_list(&self, list: &[usize]) -> Vec<(usize, &'a str)> {
        list.iter()
            .filter_map(|&p| match self.controls[p].control {
                Control::Item { item_type, .. } => Some((self.controls[p].index, item_type)),
                _ => None,
            })
            .collect()
    }

    /// The client's latest item type for a tool call strictly before transcript index `at`.
    pub fn item_type_before(
        &self,
        session_id: &str,
        tool_call_id: &str,
        at: usize,
    ) -> Option<(usize, &'a str)> {
        let list = self.items.get(&(session_id, tool_call_id))?;
        let n = list.partition_point(|&p| self.controls[p].index < at);
        let p = *list.get(n.checked_sub(1)?)?;
        match self.controls[p].control {
            Control::Item { item_type, .. } => Some((self.controls[p].index, item_type)),
            _ => None,
        }
    }

    // ---- tool calls ---------------------------------------------------------------------

    /// Every (sessionId, toolCallId) the agent described in a `tool_call`, a `tool_call_update`
    /// or a permission request's `toolCall`, with the first such frame, in order of that frame.
    pub fn announced_tool_calls(&self) -> Vec<(&'a str, &'a str, usize)> {
        let mut out: Vec<(&'a str, &'a str, usize)> = self
            .tool_frames
            .iter()
            .flat_map(|(sid, by_id)| {
                by_id
                    .iter()
                    .filter_map(|(tcid, frames)| Some((*sid, *tcid, *frames.first()?)))
            })
            .collect();
        out.sort_by_key(|(_, _, first)| *first);
        out
    }

    /// `item` events of one (sessionId, toolCallId), in order.
    pub fn item_events(&self, session_id: &str, tool_call_id: &str) -> Vec<&ControlMsg<'a>> {
        self.items
            .get(&(session_id, tool_call_id))
            .map(|list| list.iter().map(|&p| &self.controls[p]).collect())
            .unwrap_or_default()
    }

    /// Agent frames (transcript indices) that describe a tool call: updates and permission
    /// requests, on any connection, in order.
    pub fn tool_frames(&self, session_id: &str, tool_call_id: &str) -> &[usize] {
        self.tool_frames
            .get(session_id)
            .and_then(|by_id| by_id.get(tool_call_id))
            .map(|v| v.as_slice())
            .unwrap_or(&[])
    }

    /// The `ToolCall`/`ToolCallUpdate` object carried by an agent frame: the `update` of a
    /// `session/update`, or the `toolCall` of a permission request.
    pub fn tool_fields(&self, index: usize) -> Option<&'a Value> {
        let msg = self.msg(index)?;
        let params = msg.params()?;
        match msg.method()? {
            "session/update" => params.get("update"),
            "session/request_permission" => params.get("toolCall"),
            _ => None,
        }
    }

    /// The effective tool call for (conn, sessionId, toolCallId) as of transcript index `at`:
    /// every `tool_call`/`tool_call_update` before `at` merged, then — if `at` is a permission
    /// request for that tool call — the request's own `toolCall`. `conn: None` merges frames of
    /// every connection.
    pub fn effective_tool_call(
        &self,
        conn: Option<u32>,
        session_id: &str,
        tool_call_id: &'a str,
        at: usize,
    ) -> EffectiveToolCall<'a> {
        let mut effective = EffectiveToolCall::new(tool_call_id);
        let frames = self.tool_frames(session_id, tool_call_id);
        let n = frames.partition_point(|&i| i < at);
        for &i in &frames[..n] {
            let Some(msg) = self.msg(i) else { continue };
            if conn.is_some_and(|c| c != msg.conn) || !msg.is_notification_for("session/update") {
                continue;
            }
            if let Some(fields) = self.tool_fields(i) {
                effective.merge(fields, i);
            }
        }
        if let Some(request) = self.permission_at(at) {
            if request.tool_call_id == Some(tool_call_id) && conn.is_none_or(|c| c == request.conn)
            {
                if let Some(fields) = request.tool_call {
                    effective.merge(fields, at);
                }
            }
        }
        effective
    }

    /// What the agent had said about a tool call before transcript index `at`, counting every
    /// frame that describes it (updates and permission requests' `toolCall`, any connection):
    /// what a row for it shows at `at`.
    pub fn described_before(
        &self,
        session_id: &str,
        tool_call_id: &'a str,
        at: usize,
    ) -> EffectiveToolCall<'a> {
        let mut call = EffectiveToolCall::new(tool_call_id);
        for &i in self.tool_frames(session_id, tool_call_id) {
            if i >= at {
                break;
            }
            if let Some(fields) = self.tool_fields(i) {
                call.merge(fields, i);
            }
        }
        call
    }

    /// The effective tool call a permission request is about.
    pub fn effective_for_request(&self, request: &PermissionRequest<'a>) -> EffectiveToolCall<'a> {
        request.effective.clone()
    }

    /// Points where the agent changed a tool call's effective kind on the wire, across all
    /// connections: (frame index, kind before, kind after). Follows the merge rule, so `other`
    /// after a specific kind is no change.
    pub fn kind_changes(
        &self,
        session_id: &str,
        tool_call_id: &str,
    ) -> Vec<(usize, &'a str, &'a str)> {
        let mut out = Vec::new();
        let mut current: Option<&'a str> = None;
        for &i in self.tool_frames(session_id, tool_call_id) {
            let Some(fields) = self.tool_fields(i) else {
                continue;
            };
            let Some(kind) = fields.get("kind").and_then(Value::as_str) else {
                continue;
            };
            if !is_specific_kind(kind) && current.is_some_and(is_specific_kind) {
                continue;
            }
            if let Some(before) = current {
                if before != kind {
                    out.push((i, before, kind));
                }
            }
            current = Some(kind);
        }
        out
    }

    /// Points where what the agent said about a tool call changed its expected subject
    /// (DESIGN §5.1): a new specific kind, or — with kind `other` or none — a `rawInput.command`,
    /// diff or locations that came or went: (frame index, subject before, subject after).
    pub fn subject_changes(
        &self,
        session_id: &str,
        tool_call_id: &str,
    ) -> Vec<(usize, Subject, Subject)> {
        let mut out = Vec::new();
        let mut call = EffectiveToolCall::new(tool_call_id);
        let mut current: Option<Subject> = None;
        for &i in self.tool_frames(session_id, tool_call_id) {
            let Some(fields) = self.tool_fields(i) else {
                continue;
            };
            call.merge(fields, i);
            let subject = call.expected_subject().subject;
            if current.is_some_and(|before| before != subject) {
                out.push((i, current.unwrap_or(subject), subject));
            }
            current = Some(subject);
        }
        out
    }
}

/// Among candidate permission positions (ascending), the latest one that satisfies `prefer`,
/// else the latest one.
fn pick(
    permissions: &[PermissionRequest<'_>],
    candidates: Option<&Vec<usize>>,
    prefer: impl Fn(&PermissionRequest<'_>) -> bool,
) -> Option<usize> {
    let candidates = candidates?;
    candidates
        .iter()
        .rev()
        .find(|&&p| prefer(&permissions[p]))
        .or_else(|| candidates.last())
        .copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_vocab::transcript::Recorder;
    use serde_json::json;

    fn c2a(rec: &Recorder, v: Value) -> usize {
        rec.record(1, Direction::ClientToAgent, v.to_string().as_bytes())
    }
    fn a2c(rec: &Recorder, v: Value) -> usize {
        rec.record(1, Direction::AgentToClient, v.to_string().as_bytes())
    }
    fn ev(rec: &Recorder, v: Value) -> usize {
        rec.record(0, Direction::AdapterToHarness, v.to_string().as_bytes())
    }

    #[test]
    fn classifies_envelopes() {
        let rec = Recorder::new();
        let cases: Vec<(&[u8], &str)> = vec![
            (br#"{"jsonrpc":"2.0","id":1,"method":"m"}"#, "request"),
            (
                br#"{"jsonrpc":"2.0","method":"m","params":{}}"#,
                "notification",
            ),
            (br#"{"jsonrpc":"2.0","id":"x","result":null}"#, "response"),
            (
                br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"p"}}"#,
                "response",
            ),
            (br#"{"jsonrpc":"1.0","id":1,"method":"m"}"#, "invalid"),
            (br#"{"id":1,"method":"m"}"#, "invalid"),
            (br#"{"jsonrpc":"2.0","id":{},"method":"m"}"#, "invalid"),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
                "invalid",
            ),
            (br#"{"jsonrpc":"2.0","id":1}"#, "invalid"),
            (
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"x"}}"#,
                "invalid",
            ),
            (br#"{"jsonrpc":"2.0","id":1,"error":{"code":1}}"#, "invalid"),
            (br#"{"jsonrpc":"2.0","method":"m","params":3}"#, "invalid"),
            (br#"[{"jsonrpc":"2.0","method":"m"}]"#, "invalid"),
            (b"hello", "invalid"),
            (&[0xff, 0x00], "invalid"),
        ];
        for (raw, _) in &cases {
            rec.record(1, Direction::ClientToAgent, raw);
        }
        let entries = rec.snapshot();
        for (entry, (raw, want)) in entries.iter().zip(&cases) {
            let got = match classify(entry) {
                MsgKind::Request { .. } => "request",
                MsgKind::Notification { .. } => "notification",
                MsgKind::Response { .. } => "response",
                MsgKind::Invalid { .. } => "invalid",
            };
            assert_eq!(got, *want, "{}", String::from_utf8_lossy(raw));
        }
    }

    #[test]
    fn pairs_responses_type_exactly_per_connection() {
        let rec = Recorder::new();
        let r0 = a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}),
        );
        // Same id on another connection: must not pair with conn 1.
        let other = rec.record(
            2,
            Direction::ClientToAgent,
            br#"{"jsonrpc":"2.0","id":0,"result":{"content":""}}"#,
        );
        let wrong_type = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":"0","result":{"content":""}}),
        );
        let ok = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":0,"result":{"content":""}}),
        );
        let twice = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":0,"result":{"content":""}}),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.answers_to(r0), vec![ok, twice]);
        assert_eq!(m.request_of(ok), Some(r0));
        assert_eq!(m.request_of(wrong_type), None);
        assert_eq!(m.request_of(other), None);
        let unpaired: Vec<usize> = m
            .unpaired_responses
            .iter()
            .map(|&p| m.msgs[p].index)
            .collect();
        assert_eq!(unpaired, vec![other, wrong_type]);
        assert_eq!(m.session_of(ok), Some("s"));
    }

    #[test]
    fn detects_client_id_reuse_while_pending() {
        let rec = Recorder::new();
        let a = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}),
        );
        let b = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}),
        );
        a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
        );
        a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
        );
        // Reusing after the answer is fine.
        c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.reused_ids, vec![(b, a)]);
    }

    #[test]
    fn sessions_handles_and_cancels() {
        let rec = Recorder::new();
        rec.record(
            0,
            Direction::HarnessToAdapter,
            br#"{"type":"new_session","seq":1,"session":"s1","cwd":"/w"}"#,
        );
        c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}),
        );
        let created = a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":"ses_A"}}),
        );
        ev(
            &rec,
            json!({"type":"session_opened","session":"s1","sessionId":"ses_A"}),
        );
        let cancel = rec.record(
            0,
            Direction::HarnessToAdapter,
            br#"{"type":"cancel","seq":2,"session":"s1"}"#,
        );
        let note = rec.note(json!({"type":"user_cancel","sessionId":"ses_B"}));
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.session_ids, vec!["ses_A"]);
        assert_eq!(m.session_of(created), Some("ses_A"));
        let cancels = m.user_cancels();
        assert_eq!(cancels.len(), 2);
        assert_eq!(
            (cancels[0].index, cancels[0].session_id),
            (cancel, Some("ses_A"))
        );
        assert_eq!(
            (cancels[1].index, cancels[1].session_id),
            (note, Some("ses_B"))
        );
    }

    #[test]
    fn effective_tool_call_merges_and_keeps_specific_kind() {
        let rec = Recorder::new();
        let upd = |v: Value| json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":v}});
        let announce = a2c(
            &rec,
            upd(
                json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"Editing","kind":"edit","status":"pending",
            "content":[{"type":"diff","path":"/w/a","oldText":null,"newText":"x"}]}),
            ),
        );
        a2c(
            &rec,
            upd(
                json!({"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"other","title":"t2"}),
            ),
        );
        // Another session's tool call with the same id must not leak in.
        a2c(
            &rec,
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"other","update":
            {"sessionUpdate":"tool_call","toolCallId":"c","title":"x","kind":"execute"}}}),
        );
        let req = a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s",
            "toolCall":{"toolCallId":"c","kind":"other","status":"pending","locations":[]},
            "options":[{"optionId":"a","name":"A","kind":"allow_once"}]}}),
        );
        let later = a2c(
            &rec,
            upd(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"execute"})),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        let p = m.permission_at(req).unwrap();
        let e = m.effective_for_request(p);
        assert_eq!(e.kind, Some("edit"));
        assert_eq!(e.kind_frame, Some(announce));
        assert_eq!(e.title, Some("t2"));
        assert!(e.has_diff());
        assert!(
            !e.has_locations(),
            "request's locations [] replaced the collection"
        );
        assert_eq!(e.merged, 3);
        assert_eq!(e, m.effective_tool_call(Some(1), "s", "c", req));
        assert_eq!(e.expected_subject().subject, Subject::FileChange);
        assert!(e.expected_subject().from_specific_kind);
        // As of before the announcement nothing is known.
        let empty = m.effective_tool_call(Some(1), "s", "c", announce);
        assert_eq!(empty.kind, None);
        assert_eq!(empty.expected_subject().subject, Subject::Generic);
        assert_eq!(m.kind_changes("s", "c"), vec![(later, "edit", "execute")]);
    }

    #[test]
    fn expected_subject_vocabulary() {
        let cases = [
            (json!({"kind":"execute"}), Subject::Command, true),
            (json!({"kind":"delete"}), Subject::FileChange, true),
            (json!({"kind":"move"}), Subject::FileChange, true),
            (json!({"kind":"read"}), Subject::Read, true),
            (json!({"kind":"search"}), Subject::Search, true),
            (json!({"kind":"fetch"}), Subject::Fetch, true),
            (json!({"kind":"think"}), Subject::Think, true),
            (json!({"kind":"switch_mode"}), Subject::ModeSwitch, true),
            (
                json!({"kind":"other","rawInput":{"command":"ls"}}),
                Subject::Command,
                false,
            ),
            (
                json!({"rawInput":{"command":["ls"]}}),
                Subject::Generic,
                false,
            ),
            (
                json!({"kind":"other","locations":[{"path":"/etc/hosts"},{"path":"/etc"}]}),
                Subject::FileChange,
                false,
            ),
            (
                json!({"content":[{"type":"diff","path":"/a","newText":""}]}),
                Subject::FileChange,
                false,
            ),
            (json!({"kind":"weird"}), Subject::Generic, false),
            (json!({}), Subject::Generic, false),
        ];
        for (fields, subject, specific) in cases {
            let mut e = EffectiveToolCall::new("c");
            e.merge(&fields, 0);
            let x = e.expected_subject();
            assert_eq!(
                (x.subject, x.from_specific_kind),
                (subject, specific),
                "{fields}"
            );
        }
    }

    #[test]
    fn permission_requests_link_answers_and_control_events() {
        let rec = Recorder::new();
        let req = a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s",
            "toolCall":{"toolCallId":"c"},"options":[{"optionId":"once","name":"Allow","kind":"allow_once"},{"optionId":"rej","name":"No","kind":"reject_once"}]}}),
        );
        let approval = ev(
            &rec,
            json!({"type":"approval","sessionId":"s","requestId":7,"toolCallId":"c","subject":"generic",
            "options":[{"optionId":"once","label":"Allow"},{"optionId":"rej","label":"No"}]}),
        );
        let choose = rec.record(
            0,
            Direction::HarnessToAdapter,
            br#"{"type":"choose","seq":3,"requestId":7,"optionId":"rej"}"#,
        );
        let answer = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"selected","optionId":"rej"}}}),
        );
        let resolved = ev(
            &rec,
            json!({"type":"approval_resolved","sessionId":"s","requestId":7,"outcome":"selected","optionId":"rej","by":"user"}),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        let p = m.permission_at(req).unwrap();
        assert_eq!(p.offered_ids(), vec!["once", "rej"]);
        assert_eq!(p.answers, vec![answer]);
        assert_eq!(p.approvals, vec![approval]);
        assert_eq!(p.chooses, vec![choose]);
        assert_eq!(p.resolutions, vec![resolved]);
        assert_eq!(
            m.permission_answer(answer),
            PermissionAnswer::Selected("rej")
        );
        assert!(matches!(
            m.control_at(approval).map(|c| &c.control),
            Some(Control::Approval { options: Some(options), .. }) if options.len() == 2
        ));
    }

    #[test]
    fn fault_notes_mark_following_agent_frames() {
        let rec = Recorder::new();
        rec.note(json!({"type":"fault","kind":"duplicate"}));
        c2a(
            &rec,
            json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}),
        );
        let a = a2c(&rec, json!({"jsonrpc":"2.0","method":"x"}));
        let b = a2c(&rec, json!({"jsonrpc":"2.0","method":"x"}));
        let c = a2c(&rec, json!({"jsonrpc":"2.0","method":"x"}));
        rec.note(json!({"type":"fault","kind":"raw","conn":2}));
        let d = a2c(&rec, json!({"jsonrpc":"2.0","method":"x"}));
        let e = rec.record(2, Direction::AgentToClient, b"garbage");
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.fault_at(a), Some("duplicate"));
        assert_eq!(m.fault_at(b), Some("duplicate"));
        assert_eq!(m.fault_at(c), None);
        assert_eq!(m.fault_at(d), None, "fault note for conn 2 only");
        assert_eq!(m.fault_at(e), Some("raw"));
    }

    #[test]
    fn items_are_indexed_per_tool_call() {
        let rec = Recorder::new();
        let a = ev(
            &rec,
            json!({"type":"item","sessionId":"s","toolCallId":"c","itemType":"file_change","status":"pending","title":"t"}),
        );
        let b = ev(
            &rec,
            json!({"type":"item","sessionId":"s","toolCallId":"c","itemType":"command","status":"pending","title":"t"}),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.item_type_before("s", "c", b), Some((a, "file_change")));
        assert_eq!(m.item_type_before("s", "c", b + 1), Some((b, "command")));
        assert_eq!(m.item_type_before("s", "c", a), None);
        let all: Vec<_> = m.items().collect();
        assert_eq!(
            all,
            vec![(("s", "c"), vec![(a, "file_change"), (b, "command")])]
        );
    }

    #[test]
    fn large_transcript_builds_in_linear_time() {
        let rec = Recorder::new();
        for i in 0..50_000u64 {
            a2c(
                &rec,
                json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",
                "update":{"sessionUpdate":"tool_call_update","toolCallId":format!("c{}", i % 100),"status":"in_progress"}}}),
            );
            c2a(
                &rec,
                json!({"jsonrpc":"2.0","id":i,"method":"_x/ping","params":{}}),
            );
        }
        let entries = rec.snapshot();
        let started = std::time::Instant::now();
        let m = WireModel::new(&entries);
        assert_eq!(m.msgs.len(), 100_000);
        let e = m.effective_tool_call(Some(1), "s", "c7", entries.len());
        assert_eq!(e.merged, 500);
        assert!(started.elapsed().as_secs() < 10);
    }
}
