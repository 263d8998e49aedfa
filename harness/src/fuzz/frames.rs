//! The agent's frames for one [`PermissionTurn`], built with serde_json. One builder serves the
//! long-lived driver (real names), the in-process target, and `fuzz-to-scenario` (template
//! names such as `${cwd}`), so a regression scenario sends exactly the frames the fuzzer sent.
//!
//! Every frame is valid ACP v1: a `tool_call` always has a title (the schema requires one), paths
//! are absolute, option kinds are the four of the schema. The `schema` check validates our frames
//! too and would grade a mistake here `error` (a harness bug), never the client's fault.

use acp_vocab::method::Method;
use serde_json::{Map, Value, json};

use super::input::{
    Base, Content, Finish, IdStyle, Location, Meta, PermissionTurn, RawInput, RequestShape, Text,
    ToolCallShape,
};

/// Names the frames use.
#[derive(Debug, Clone, Copy)]
pub struct Names<'a> {
    pub session_id: &'a str,
    pub tool_call_id: &'a str,
    /// Absolute directories (or `${cwd}` / `${outside}` in a scenario).
    pub cwd: &'a str,
    pub outside: &'a str,
    /// Frames go into a scenario file, whose template engine reads `${`: text from the input
    /// is escaped (`$${`) so it arrives verbatim.
    pub template: bool,
}

/// A JSON object from key/value pairs, in order (no serialization round trip, unlike `json!`
/// with values interpolated: frames are built for every fuzz input).
pub(crate) fn object<const N: usize>(pairs: [(&str, Value); N]) -> Value {
    let mut map = Map::with_capacity(N);
    for (key, value) in pairs {
        map.insert(key.to_owned(), value);
    }
    Value::Object(map)
}

/// The id of the turn's permission request: fresh per turn (`n`), of the input's JSON type.
pub fn request_id(style: IdStyle, n: u64) -> Value {
    match style {
        IdStyle::Number => json!(n),
        IdStyle::String => json!(format!("perm-{n}")),
        IdStyle::Null => Value::Null,
    }
}

impl Names<'_> {
    fn text(&self, t: &Text) -> String {
        if self.template {
            t.as_str().replace("${", "$${")
        } else {
            t.as_str().to_owned()
        }
    }

    /// `<base>/<name>`, or `<base>` alone for an empty name.
    pub fn path(&self, l: &Location) -> String {
        let name = self.text(&l.name);
        let owned;
        let base = match l.base {
            Base::Cwd => self.cwd,
            Base::Outside => self.outside,
            Base::Root => "",
            Base::Parent => {
                owned = [self.cwd, "/.."].concat();
                &owned
            }
            Base::Sibling => {
                owned = [self.cwd, "-evil"].concat();
                &owned
            }
        };
        match (base, name.is_empty()) {
            ("", true) => "/".to_owned(),
            (base, true) => base.to_owned(),
            // Concatenated: `format!` goes through the formatting machinery for every path of
            // every fuzz input.
            (base, false) => [base, "/", &name].concat(),
        }
    }

    fn location(&self, l: &Location) -> Value {
        let mut out = Map::new();
        out.insert("path".into(), self.path(l).into());
        if let Some(line) = l.line {
            out.insert("line".into(), line.into());
        }
        Value::Object(out)
    }

    fn meta(&self, m: &Meta) -> Value {
        let mut out = Map::new();
        out.insert(self.text(&m.key), self.text(&m.value).into());
        Value::Object(out)
    }

    fn raw_input(&self, r: &RawInput) -> Option<Value> {
        Some(match r {
            RawInput::Absent => return None,
            RawInput::Null => Value::Null,
            RawInput::Empty => json!({}),
            RawInput::Command {
                command,
                description,
            } => {
                let mut out = Map::new();
                out.insert("command".into(), self.text(command).into());
                if let Some(d) = description {
                    out.insert("description".into(), self.text(d).into());
                }
                Value::Object(out)
            }
            RawInput::Argv(words) => {
                let words: Vec<Value> = words.iter().map(|w| self.text(w).into()).collect();
                object([("command", words.into())])
            }
            RawInput::File(l) => object([("filePath", self.path(l).into())]),
            RawInput::Scalar(t) => self.text(t).into(),
            RawInput::ScalarPath(l) => self.path(l).into(),
        })
    }

    fn content(&self, c: &Content) -> Option<Value> {
        Some(match c {
            Content::Absent => return None,
            Content::Empty => json!([]),
            Content::Diff {
                path,
                old_text,
                new_text,
            } => {
                let mut diff = Map::new();
                diff.insert("type".into(), "diff".into());
                diff.insert("path".into(), self.path(path).into());
                if let Some(old) = old_text {
                    diff.insert("oldText".into(), self.text(old).into());
                }
                diff.insert("newText".into(), self.text(new_text).into());
                Value::Array(vec![Value::Object(diff)])
            }
            Content::Text(t) => {
                let text = object([("type", "text".into()), ("text", self.text(t).into())]);
                Value::Array(vec![object([
                    ("type", "content".into()),
                    ("content", text),
                ])])
            }
        })
    }

    /// The fields of a tool call after `toolCallId`, in the order real agents write them.
    /// `title_required`: a `tool_call` (not an update) must carry a title.
    fn tool_fields(
        &self,
        shape: &ToolCallShape,
        out: &mut Map<String, Value>,
        title_required: bool,
    ) {
        match (&shape.title, title_required) {
            (Some(t), _) => {
                out.insert("title".into(), self.text(t).into());
            }
            (None, true) => {
                out.insert("title".into(), "".into());
            }
            (None, false) => {}
        }
        if let Some(kind) = shape.kind.wire() {
            out.insert("kind".into(), kind.into());
        }
        if let Some(status) = shape.status.wire() {
            out.insert("status".into(), status.into());
        }
        if let Some(locations) = &shape.locations {
            let list: Vec<Value> = locations.iter().map(|l| self.location(l)).collect();
            out.insert("locations".into(), list.into());
        }
        if let Some(raw) = self.raw_input(&shape.raw_input) {
            out.insert("rawInput".into(), raw);
        }
        if let Some(content) = self.content(&shape.content) {
            out.insert("content".into(), content);
        }
        if let Some(meta) = &shape.meta {
            out.insert("_meta".into(), self.meta(meta));
        }
    }

    /// A `session/update` of the turn's tool call: `sessionUpdate`, `toolCallId`, then the fields
    /// `fill` writes straight into the same object (a map of their own, moved in afterwards, would
    /// hash every key twice: frames are built for every fuzz input).
    fn update(&self, session_update: &str, fill: impl FnOnce(&mut Map<String, Value>)) -> Value {
        let mut update = Map::with_capacity(10);
        update.insert("sessionUpdate".into(), session_update.into());
        update.insert("toolCallId".into(), self.tool_call_id.into());
        fill(&mut update);
        let params = object([
            ("sessionId", self.session_id.into()),
            ("update", Value::Object(update)),
        ]);
        object([
            ("jsonrpc", "2.0".into()),
            ("method", Method::SessionUpdate.as_str().into()),
            ("params", params),
        ])
    }

    /// `session/update` `tool_call` announcing the turn's tool call.
    pub fn announce(&self, shape: &ToolCallShape) -> Value {
        self.update("tool_call", |fields| self.tool_fields(shape, fields, true))
    }

    /// `session/update` `tool_call_update` before the request.
    pub fn progress(&self, shape: &ToolCallShape) -> Value {
        self.update("tool_call_update", |fields| {
            self.tool_fields(shape, fields, false)
        })
    }

    /// The request's `toolCall` (a `ToolCallUpdate`).
    pub fn request_tool_call(&self, request: &RequestShape) -> Value {
        let mut tool_call = Map::new();
        tool_call.insert("toolCallId".into(), self.tool_call_id.into());
        match request {
            RequestShape::Sparse { kind } => {
                if let Some(kind) = kind.wire() {
                    tool_call.insert("kind".into(), kind.into());
                }
                tool_call.insert("status".into(), "pending".into());
            }
            RequestShape::Full(shape) => self.tool_fields(shape, &mut tool_call, false),
        }
        Value::Object(tool_call)
    }

    /// The offered options, verbatim from the input (ids may collide).
    pub fn options(&self, turn: &PermissionTurn) -> Value {
        turn.options
            .iter()
            .map(|o| {
                object([
                    ("optionId", self.text(&o.id).into()),
                    ("name", self.text(&o.name).into()),
                    ("kind", o.kind.wire().into()),
                ])
            })
            .collect()
    }

    /// `session/request_permission` with id `id`.
    pub fn request(&self, turn: &PermissionTurn, id: &Value) -> Value {
        let mut params = Map::new();
        params.insert("sessionId".into(), self.session_id.into());
        params.insert("toolCall".into(), self.request_tool_call(&turn.request));
        params.insert("options".into(), self.options(turn));
        if let Some(meta) = &turn.meta {
            params.insert("_meta".into(), self.meta(meta));
        }
        object([
            ("jsonrpc", "2.0".into()),
            ("id", id.clone()),
            ("method", Method::SessionRequestPermission.as_str().into()),
            ("params", Value::Object(params)),
        ])
    }

    /// `$/cancel_request`: the agent withdraws the request (R52).
    pub fn withdraw(&self, id: &Value) -> Value {
        json!({"jsonrpc": "2.0", "method": Method::CancelRequest.as_str(), "params": {"requestId": id}})
    }

    /// The update after the answer: `completed` if an allow option was selected, else `failed`;
    /// `None` for [`Finish::Silent`].
    pub fn finish(&self, turn: &PermissionTurn, allowed: bool) -> Option<Value> {
        let status = if allowed { "completed" } else { "failed" };
        let kind = match turn.finish {
            Finish::Silent => return None,
            Finish::Partial => None,
            Finish::WithKind(kind) => kind.wire(),
        };
        Some(self.update("tool_call_update", |fields| {
            if let Some(kind) = kind {
                fields.insert("kind".into(), kind.into());
            }
            fields.insert("status".into(), status.into());
        }))
    }
}

/// The `session/prompt` result that ends the turn.
pub fn prompt_result(cancelled: bool) -> Value {
    json!({"stopReason": if cancelled { "cancelled" } else { "end_turn" }})
}

/// What the fake agent needs to know about the client's answer to its request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `selected` with an offered option of an allow kind: the tool runs.
    Allowed,
    /// Anything else: the tool does not run.
    Denied,
    /// `{"outcome":"cancelled"}`.
    Cancelled,
}

/// Reads a client's response to the request the way the fake agent reacts to it (and the way
/// a regression scenario's `await` cases branch: `selected` allow kinds, `cancelled`, otherwise).
pub fn answer_of(turn: &PermissionTurn, response: &Value) -> Answer {
    let outcome = response.pointer("/result/outcome");
    match outcome
        .and_then(|o| o.get("outcome"))
        .and_then(Value::as_str)
    {
        Some("cancelled") => Answer::Cancelled,
        Some("selected") => {
            let id = outcome
                .and_then(|o| o.get("optionId"))
                .and_then(Value::as_str);
            match id.and_then(|id| turn.kind_of(id)) {
                Some(kind) if kind.is_allow() => Answer::Allowed,
                _ => Answer::Denied,
            }
        }
        _ => Answer::Denied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::input::{decode, pseudo_random_turns};
    use acp_judge::acp_schema::{PayloadKind, Side, Validation, validate};

    fn valid(frame: &Value) -> Result<(), String> {
        let method = frame["method"].as_str().expect("method");
        let kind = if frame.get("id").is_some() {
            PayloadKind::RequestParams
        } else {
            PayloadKind::NotificationParams
        };
        match validate(Side::Agent, kind, method, frame.get("params")) {
            Validation::Valid | Validation::Extension => Ok(()),
            other => Err(format!("{other:?}: {frame}")),
        }
    }

    /// Every frame the builder makes, for thousands of inputs, validates against the ACP schema.
    #[test]
    fn every_frame_is_valid_acp() {
        let names = Names {
            session_id: "sess_1",
            tool_call_id: "call_1",
            cwd: "/tmp/w",
            outside: "/tmp/o",
            template: false,
        };
        for (n, turn) in (0u64..).zip(pseudo_random_turns(0x9e37_79b9_7f4a_7c15, 3000, 256)) {
            let id = request_id(turn.request_id, n);
            let mut frames = vec![names.request(&turn, &id), names.withdraw(&id)];
            frames.extend(turn.announce.as_ref().map(|s| names.announce(s)));
            frames.extend(turn.progress.as_ref().map(|s| names.progress(s)));
            frames.extend(names.finish(&turn, n % 2 == 0));
            for frame in &frames {
                valid(frame).unwrap_or_else(|e| panic!("input {turn:?}: {e}"));
            }
        }
    }

    #[test]
    fn template_names_escape_input_text() {
        let turn = decode(br#"{"request":{"full":{"title":"${cwd}","locations":[{"name":"a${b}"}]}},"action":"cancel"}"#)
            .expect("decodes");
        let names = Names {
            session_id: "${sessionId}",
            tool_call_id: "${toolCallId}",
            cwd: "${cwd}",
            outside: "${outside}",
            template: true,
        };
        let frame = names.request(&turn, &json!(1));
        assert_eq!(frame["params"]["toolCall"]["title"], "$${cwd}");
        assert_eq!(
            frame["params"]["toolCall"]["locations"][0]["path"],
            "${cwd}/a$${b}"
        );
        assert_eq!(frame["params"]["sessionId"], "${sessionId}");
    }

    #[test]
    fn answers_are_read_like_the_scenario_branches() {
        let turn = decode(br#"{"request":{"sparse":{"kind":"edit"}},"options":[{"id":"a","name":"A","kind":"allow_once"},{"id":"a","name":"B","kind":"reject_once"},{"id":"r","name":"R","kind":"reject_always"}],"action":"cancel"}"#)
            .expect("decodes");
        let sel =
            |id: &str| json!({"result": {"outcome": {"outcome": "selected", "optionId": id}}});
        assert_eq!(answer_of(&turn, &sel("a")), Answer::Allowed);
        assert_eq!(answer_of(&turn, &sel("r")), Answer::Denied);
        assert_eq!(answer_of(&turn, &sel("nope")), Answer::Denied);
        assert_eq!(
            answer_of(
                &turn,
                &json!({"result": {"outcome": {"outcome": "cancelled"}}})
            ),
            Answer::Cancelled
        );
        assert_eq!(
            answer_of(&turn, &json!({"error": {"code": -32800, "message": "x"}})),
            Answer::Denied
        );
    }
}
