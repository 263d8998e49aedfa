//! The `ToolCall`/`ToolCallUpdate` object a frame carries, as the checks read it: the few
//! strings they compare (`sessionUpdate`, `toolCallId`, `title`, `kind`, `status`) and what the
//! expected subject reads of `content`, `locations` and `rawInput`, taken once per frame.
//!
//! The bulk of a long transcript is `tool_call`/`tool_call_update` notifications. Those are read
//! from the frame's text ([`compact_update`]) without building its tree, the strings borrowed
//! from the text; a check that needs more of such a frame parses it for the moment
//! ([`ToolFields::tree`]). Any frame whose text does not fit that reading (an escaped string, a
//! repeated key, a field of an unexpected type) is read from its parsed tree instead, with the
//! same result: the two readings agree on every frame both can read (unit tests).

use acp_vocab::method::Method;
use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Where a frame's tool fields are: in its parsed tree, or in its text.
#[derive(Debug, Clone, Copy)]
enum Source<'a> {
    Tree(&'a Value),
    Text(&'a RawValue),
}

/// What the checks read of one `ToolCall`/`ToolCallUpdate` object. A field that is absent,
/// `null` or not a string reads as `None` (merging it changes nothing).
#[derive(Debug, Clone, Copy)]
pub struct ToolFields<'a> {
    source: Source<'a>,
    pub session_update: Option<&'a str>,
    pub tool_call_id: Option<&'a str>,
    pub title: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub status: Option<&'a str>,
    /// `content` is present (not `null`): whether an item of it is a diff.
    pub content_has_diff: Option<bool>,
    /// `locations` is present: whether it is a non-empty array.
    pub locations_non_empty: Option<bool>,
    /// `rawInput` is present: whether its `command` is a string.
    pub raw_input_has_command: Option<bool>,
}

impl<'a> ToolFields<'a> {
    /// Reads a parsed object (anything else carries no fields).
    pub fn from_tree(value: &'a Value) -> Self {
        let mut fields = ToolFields {
            source: Source::Tree(value),
            session_update: None,
            tool_call_id: None,
            title: None,
            kind: None,
            status: None,
            content_has_diff: None,
            locations_non_empty: None,
            raw_input_has_command: None,
        };
        // One walk over the object's entries instead of a hashed lookup per field (a parsed
        // object holds each key once, so the order of the walk decides nothing).
        for (key, value) in value.as_object().into_iter().flatten() {
            if value.is_null() {
                continue;
            }
            match key.as_str() {
                "sessionUpdate" => fields.session_update = value.as_str(),
                "toolCallId" => fields.tool_call_id = value.as_str(),
                "title" => fields.title = value.as_str(),
                "kind" => fields.kind = value.as_str(),
                "status" => fields.status = value.as_str(),
                "content" => fields.content_has_diff = Some(has_diff(value)),
                "locations" => fields.locations_non_empty = Some(non_empty_array(value)),
                "rawInput" => fields.raw_input_has_command = Some(has_command(value)),
                _ => {}
            }
        }
        fields
    }

    /// Reads an object from its text; `None` if the text does not fit the borrowed reading
    /// (then read the tree: [`ToolFields::from_tree`]).
    fn from_text(raw: &'a RawValue) -> Option<Self> {
        // A struct also reads from an array, by position: only an object may get here.
        if !raw.get().trim_start().starts_with('{') {
            return None;
        }
        let text: FieldsText<'a> = serde_json::from_str(raw.get()).ok()?;
        let sub =
            |raw: Option<&RawValue>, read: fn(&Value) -> bool, quick: fn(&str) -> Option<bool>| {
                raw.map(|raw| {
                    quick(raw.get()).unwrap_or_else(|| {
                        serde_json::from_str::<Value>(raw.get()).is_ok_and(|v| read(&v))
                    })
                })
            };
        Some(ToolFields {
            source: Source::Text(raw),
            session_update: text.session_update,
            tool_call_id: text.tool_call_id,
            title: text.title,
            kind: text.kind,
            status: text.status,
            content_has_diff: sub(text.content, has_diff, |t| absent_word(t, "\"diff\"")),
            locations_non_empty: sub(text.locations, non_empty_array, quick_non_empty_array),
            raw_input_has_command: sub(text.raw_input, has_command, |t| {
                absent_word(t, "\"command\"")
            }),
        })
    }

    /// The object as a tree: borrowed when the frame was parsed, else parsed for the moment.
    pub fn tree(&self) -> Cow<'a, Value> {
        match self.source {
            Source::Tree(value) => Cow::Borrowed(value),
            Source::Text(raw) => {
                Cow::Owned(serde_json::from_str(raw.get()).expect("read from this text before"))
            }
        }
    }

    /// The object's tree if the frame was parsed (not for a frame read from its text).
    pub fn parsed(&self) -> Option<&'a Value> {
        match self.source {
            Source::Tree(value) => Some(value),
            Source::Text(_) => None,
        }
    }

    /// One of the string fields by its wire name (`title`, `status`, `kind`, `toolCallId`,
    /// `sessionUpdate`); `None` for any other name.
    pub fn string(&self, name: &str) -> Option<&'a str> {
        match name {
            "title" => self.title,
            "status" => self.status,
            "kind" => self.kind,
            "toolCallId" => self.tool_call_id,
            "sessionUpdate" => self.session_update,
            _ => None,
        }
    }
}

/// `false` when the text cannot hold `word` (a text without a `\` holds its strings as
/// written); `None` when it may: then the tree decides.
fn absent_word(text: &str, word: &str) -> Option<bool> {
    (!text.contains(word) && !text.contains('\\')).then_some(false)
}

/// Whether an array's text has an item, read off its first characters; `None` for another type.
fn quick_non_empty_array(text: &str) -> Option<bool> {
    let rest = text.trim_start().strip_prefix('[')?;
    Some(!rest.trim_start().starts_with(']'))
}

/// Some content item is a diff.
pub(super) fn has_diff(content: &Value) -> bool {
    content.as_array().is_some_and(|c| {
        c.iter()
            .any(|i| i.get("type") == Some(&Value::from("diff")))
    })
}

/// A non-empty array (of file locations).
pub(super) fn non_empty_array(locations: &Value) -> bool {
    locations.as_array().is_some_and(|l| !l.is_empty())
}

/// `rawInput.command` is a string.
pub(super) fn has_command(raw_input: &Value) -> bool {
    raw_input.get("command").is_some_and(Value::is_string)
}

/// The fields read from the text. A repeated field, or one of another type than these, fails
/// the reading (the tree decides then).
#[derive(Deserialize)]
struct FieldsText<'a> {
    #[serde(rename = "sessionUpdate", borrow, default)]
    session_update: Option<&'a str>,
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Option<&'a str>,
    #[serde(borrow, default)]
    title: Option<&'a str>,
    #[serde(borrow, default)]
    kind: Option<&'a str>,
    #[serde(borrow, default)]
    status: Option<&'a str>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    locations: Option<&'a RawValue>,
    #[serde(rename = "rawInput", borrow, default)]
    raw_input: Option<&'a RawValue>,
}

/// A `session/update` notification as read from its text: exactly `jsonrpc`, `method` and
/// `params` (anything else, e.g. an `id`, makes it another kind of message: read the tree).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NotificationText<'a> {
    #[serde(borrow)]
    jsonrpc: &'a str,
    #[serde(borrow)]
    method: &'a str,
    #[serde(borrow)]
    params: &'a RawValue,
}

#[derive(Deserialize)]
struct UpdateParamsText<'a> {
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<&'a str>,
    #[serde(borrow)]
    update: &'a RawValue,
}

/// A `tool_call`/`tool_call_update` `session/update` notification read from its text, without a
/// tree: its method, `params.sessionId` and the update's fields. `None` for any other frame, and
/// for one whose text does not fit the borrowed reading (read its tree then).
pub(super) fn compact_update(text: &str) -> Option<CompactUpdate<'_>> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let frame: NotificationText<'_> = serde_json::from_str(text).ok()?;
    if frame.jsonrpc != "2.0" || frame.method != Method::SessionUpdate.as_str() {
        return None;
    }
    if !frame.params.get().trim_start().starts_with('{') {
        return None;
    }
    let params: UpdateParamsText<'_> = serde_json::from_str(frame.params.get()).ok()?;
    let fields = ToolFields::from_text(params.update)?;
    if !matches!(
        fields.session_update,
        Some("tool_call" | "tool_call_update")
    ) {
        return None;
    }
    Some(CompactUpdate {
        method: frame.method,
        session_id: params.session_id,
        fields,
    })
}

/// What [`compact_update`] reads.
pub(super) struct CompactUpdate<'a> {
    pub method: &'a str,
    pub session_id: Option<&'a str>,
    pub fields: ToolFields<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both readings of an update's text, compared field by field.
    fn both(update: &str) -> (Option<ToolFields<'_>>, Value) {
        let raw: &RawValue = serde_json::from_str(update).unwrap();
        (
            ToolFields::from_text(raw),
            serde_json::from_str(update).unwrap(),
        )
    }

    fn same(a: &ToolFields<'_>, b: &ToolFields<'_>) -> bool {
        (
            a.session_update,
            a.tool_call_id,
            a.title,
            a.kind,
            a.status,
            a.content_has_diff,
            a.locations_non_empty,
            a.raw_input_has_command,
        ) == (
            b.session_update,
            b.tool_call_id,
            b.title,
            b.kind,
            b.status,
            b.content_has_diff,
            b.locations_non_empty,
            b.raw_input_has_command,
        )
    }

    #[test]
    fn the_text_and_the_tree_read_the_same_fields() {
        let updates = [
            r#"{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"ok"}}]}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"c1","title":"t","kind":"edit","content":[{"type":"diff","path":"/a","newText":""}],"locations":[{"path":"/a"}]}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"c1","title":null,"kind":null,"locations":[],"rawInput":{"command":"ls"}}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"c1","rawInput":{"command":null,"cmd":"x"},"content":[{"type":"di\u0066f"}]}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"c1","rawInput":"command","content":{"type":"diff"},"locations":{"path":"/a"}}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"c1","rawInput":{"x":{"command":"ls"}},"content":[["diff"]],"locations":[ ]}"#,
            r#"{"sessionUpdate":"tool_call","toolCallId":"c1","content":null,"locations":null,"rawInput":null}"#,
        ];
        for update in updates {
            let (text, tree) = both(update);
            let text = text.unwrap_or_else(|| panic!("read from text: {update}"));
            assert!(same(&text, &ToolFields::from_tree(&tree)), "{update}");
            assert_eq!(text.tree().as_ref(), &tree);
        }
        let (text, _) = both(updates[1]);
        assert_eq!(text.unwrap().content_has_diff, Some(true));
    }

    #[test]
    fn text_that_does_not_fit_is_left_to_the_tree() {
        for update in [
            r#"{"sessionUpdate":"tool_call","toolCallId":"c\u0031"}"#,
            r#"{"sessionUpdate":"tool_call","title":1}"#,
            r#"{"sessionUpdate":"tool_call","title":"a","title":"b"}"#,
            r#"["tool_call","c1"]"#,
        ] {
            assert!(both(update).0.is_none(), "{update}");
        }
    }

    #[test]
    fn only_plain_tool_call_notifications_are_compact() {
        let plain = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}}}"#;
        let read = compact_update(plain).expect("compact");
        assert_eq!(
            (read.method, read.session_id, read.fields.tool_call_id),
            ("session/update", Some("s"), Some("c"))
        );
        for other in [
            r#"{"jsonrpc":"2.0","id":1,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}}"#,
            r#"{"jsonrpc":"1.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":["s",{"sessionUpdate":"tool_call","toolCallId":"c"}]}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c"}}} x"#,
        ] {
            assert!(compact_update(other).is_none(), "{other}");
        }
    }
}
