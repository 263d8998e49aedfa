//! What a wire frame is by the JSON-RPC 2.0 envelope rules (R1–R4, R6, R7), decided once per
//! frame: a [`MsgKind::Request`], a [`MsgKind::Notification`], a [`MsgKind::Response`] or
//! [`MsgKind::Invalid`] with the reason. Payloads are the schema check's business
//! ([`crate::acp_schema`]).

use std::borrow::Cow;

use acp_vocab::envelope::Envelope;
use acp_vocab::method::Method;
use acp_vocab::transcript::Entry;
use serde_json::Value;

use super::tool_fields::{ToolFields, compact_update};

/// The sender of a message on the ACP wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    /// The client under test (editor).
    Client,
    /// The (fake) agent.
    Agent,
}

impl Side {
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Agent,
            Side::Agent => Side::Client,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Agent => "agent",
        }
    }
}

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
    /// Set for an agent frame the harness broke on purpose (`Entry::fault`, after a `fault` note).
    pub fault: Option<&'a str>,
    /// `params` of a request or notification, looked up once: every check reads it, and a
    /// lookup in the frame's tree is a walk through memory nothing else is near (at 10⁵ frames
    /// the checks spent most of their time there; docs/performance.md). `None` for a frame read
    /// from its text ([`WireMsg::is_compact`]).
    params: Option<&'a Value>,
    /// `params.sessionId` of a request or notification, if a string.
    session_id: Option<&'a str>,
    /// The `ToolCall`/`ToolCallUpdate` object a frame carries: the `update` of a
    /// `session/update`, the `toolCall` of a `session/request_permission`.
    tool_fields: Option<ToolFields<'a>>,
    /// Read from its text, with no tree kept (a `tool_call`/`tool_call_update` notification).
    compact: bool,
}

impl<'a> WireMsg<'a> {
    /// The frame's tree (parsed and kept with its entry on first use: for frames other than the
    /// bulk of updates, which are read from their text; see [`WireMsg::is_compact`]).
    pub fn json(&self) -> Option<&'a Value> {
        self.entry.json()
    }

    /// `method` of a request or notification.
    pub fn method(&self) -> Option<&'a str> {
        match self.kind {
            MsgKind::Request { method, .. } | MsgKind::Notification { method } => Some(method),
            _ => None,
        }
    }

    /// Classifies one wire entry (see [`classify`]) and looks up once what the checks read of
    /// every frame. An agent's `tool_call`/`tool_call_update` notification, the bulk of a long
    /// transcript, is read from its text and keeps no tree (docs/performance.md, "Frames per
    /// scenario"); every other frame is parsed and its tree kept with the entry.
    pub fn new(entry: &'a Entry, from: Side, fault: Option<&'a str>) -> Self {
        if let Some(msg) = Self::compact(entry, from, fault) {
            return msg;
        }
        let kind = classify(entry);
        let params = match kind {
            MsgKind::Request { .. } | MsgKind::Notification { .. } => {
                entry.json().and_then(|json| json.get("params"))
            }
            _ => None,
        };
        let method = match kind {
            MsgKind::Request { method, .. } | MsgKind::Notification { method } => Some(method),
            _ => None,
        };
        let tool_fields = match method.and_then(Method::parse) {
            Some(Method::SessionUpdate) => params
                .and_then(|p| p.get("update"))
                .map(ToolFields::from_tree),
            Some(Method::SessionRequestPermission) => params
                .and_then(|p| p.get("toolCall"))
                .map(ToolFields::from_tree),
            _ => None,
        };
        WireMsg {
            index: entry.index,
            conn: entry.conn,
            from,
            entry,
            kind,
            fault,
            params,
            session_id: params
                .and_then(|p| p.get("sessionId"))
                .and_then(Value::as_str),
            tool_fields,
            compact: false,
        }
    }

    /// An agent's `tool_call`/`tool_call_update` notification read from its text, if it is one
    /// and its JSON is not kept already.
    fn compact(entry: &'a Entry, from: Side, fault: Option<&'a str>) -> Option<Self> {
        if from != Side::Agent || entry.invalid_utf8 || entry.json_is_kept() {
            return None;
        }
        let update = compact_update(&entry.raw)?;
        Some(WireMsg {
            index: entry.index,
            conn: entry.conn,
            from,
            entry,
            kind: MsgKind::Notification {
                method: update.method,
            },
            fault,
            params: None,
            session_id: update.session_id,
            tool_fields: Some(update.fields),
            compact: true,
        })
    }

    /// True for a frame read from its text ([`WireMsg::new`]): [`WireMsg::params`] is `None`;
    /// [`WireMsg::params_now`] parses it for the moment.
    pub fn is_compact(&self) -> bool {
        self.compact
    }

    /// `params` of a request or notification (absent → `None`; `None` for a compact frame).
    pub fn params(&self) -> Option<&'a Value> {
        self.params
    }

    /// `params` of a request or notification, of any frame: a compact frame's parsed for the
    /// moment.
    pub fn params_now(&self) -> Option<Cow<'a, Value>> {
        if !self.compact {
            return self.params.map(Cow::Borrowed);
        }
        match self.entry.parse_json()? {
            Cow::Borrowed(json) => json.get("params").map(Cow::Borrowed),
            Cow::Owned(mut json) => json
                .as_object_mut()
                .and_then(|o| o.remove("params"))
                .map(Cow::Owned),
        }
    }

    /// `params.sessionId` of a request or notification.
    pub fn params_session_id(&self) -> Option<&'a str> {
        self.session_id
    }

    /// The `ToolCall`/`ToolCallUpdate` object the frame carries: the `update` of a
    /// `session/update` (whatever its variant), or the `toolCall` of a
    /// `session/request_permission` request.
    pub fn tool_fields(&self) -> Option<ToolFields<'a>> {
        self.tool_fields
    }

    /// `params.update.sessionUpdate` of a `session/update`, if a string. Read from the tool
    /// fields, which hold it already: a field of its own was 16 bytes more a frame.
    pub fn update_variant(&self) -> Option<&'a str> {
        match self.method().and_then(Method::parse) {
            Some(Method::SessionUpdate) => self.tool_fields.and_then(|f| f.session_update),
            _ => None,
        }
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

    pub fn is_request_for(&self, method: Method) -> bool {
        matches!(self.kind, MsgKind::Request { method: m, .. } if m == method.as_str())
    }

    pub fn is_notification_for(&self, method: Method) -> bool {
        matches!(self.kind, MsgKind::Notification { method: m } if m == method.as_str())
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
        return invalid("not valid UTF-8 (R1)");
    }
    let Some(json) = entry.json() else {
        return invalid("not JSON");
    };
    match Envelope::classify(json) {
        Envelope::Request { id, method } => MsgKind::Request { id, method },
        Envelope::Notification { method } => MsgKind::Notification { method },
        Envelope::Response { id, result } => MsgKind::Response {
            id,
            body: ResponseBody::Result(result),
        },
        Envelope::ErrorResponse {
            id,
            code,
            message,
            error,
        } => MsgKind::Response {
            id,
            body: ResponseBody::Error {
                code,
                message,
                error,
            },
        },
        Envelope::Invalid(reason) => MsgKind::Invalid { reason },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use acp_vocab::transcript::{Direction, Recorder};

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
}
