//! The bulk of a long turn — `session/update` notifications of a tool call (`tool_call`,
//! `tool_call_update`) — read straight from the agent's line, without a `serde_json` tree.
//!
//! A streaming tool call sends one such frame per chunk of output: parsing each into a `Value`
//! (order-preserving maps, a `String` per key) and walking it was most of this client's time on
//! a long turn (docs/performance.md). Only the common shape is read this way, with `serde`'s
//! borrowed reading: the envelope (`jsonrpc`, `method`, `params`), `params.sessionId` and
//! `params.update`, and in the update `sessionUpdate`, `toolCallId`, `title`, `kind`, `status`
//! (strings) and `content` (kept as its text, with its diff items' paths read once). Any other
//! line — another message, another field, a field of another type or `null` (but `content:
//! null`, which every reader treats as absent), an escaped string, a repeated key — is not read
//! here ([`ToolUpdate::read`] gives the line back) and goes the tree's way, so what the client
//! does with it is the same either way (`timeline.rs` tests compare both readings).

use std::ops::Range;

use serde::de::{Error as _, IgnoredAny};
use serde::{Deserialize, Deserializer};

use acp_vocab::method::Method;
use serde_json::Value;
use serde_json::value::RawValue;

/// Which announcement of a tool call the update is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    ToolCall,
    ToolCallUpdate,
}

impl Variant {
    pub fn as_str(self) -> &'static str {
        match self {
            Variant::ToolCall => "tool_call",
            Variant::ToolCallUpdate => "tool_call_update",
        }
    }
}

/// A tool call's `session/update`: its line, and where each field read lies in it.
#[derive(Debug)]
pub struct ToolUpdate {
    line: String,
    spans: Spans,
}

// The shapes read. `deny_unknown_fields`: a field this reading does not know means the line is
// read as a tree. serde's derive refuses a repeated field, and `&str` an escaped string.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Frame<'a> {
    #[serde(default)]
    #[allow(dead_code)]
    jsonrpc: IgnoredAny,
    #[allow(dead_code)]
    method: SessionUpdate,
    #[serde(borrow)]
    params: Params<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Params<'a> {
    session_id: &'a str,
    #[serde(borrow)]
    update: Update<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Update<'a> {
    session_update: Variant,
    tool_call_id: &'a str,
    #[serde(default, borrow, deserialize_with = "present")]
    title: Option<&'a str>,
    #[serde(default, borrow, deserialize_with = "present")]
    kind: Option<&'a str>,
    #[serde(default, borrow, deserialize_with = "present")]
    status: Option<&'a str>,
    /// `null` reads as `None`: a null `content` changes nothing and names no place, as absent.
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
}

/// One item of `content`: only what the client reads of it (`subject.rs`, `decide::places_of`).
#[derive(Deserialize)]
struct ContentItem<'a> {
    #[serde(rename = "type", default, borrow, deserialize_with = "present")]
    item_type: Option<&'a str>,
    #[serde(default, borrow, deserialize_with = "present")]
    path: Option<&'a str>,
}

/// The `method` `session/update`: any other method ends the reading at once (most lines that
/// are not tool call updates are given back at their first or second key).
struct SessionUpdate;

impl<'de> Deserialize<'de> for SessionUpdate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match <&'de str>::deserialize(deserializer)? {
            m if m == Method::SessionUpdate.as_str() => Ok(SessionUpdate),
            _ => Err(D::Error::custom("not a session/update")),
        }
    }
}

/// `sessionUpdate`: another variant ends the reading at once.
impl<'de> Deserialize<'de> for Variant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match <&'de str>::deserialize(deserializer)? {
            "tool_call" => Ok(Variant::ToolCall),
            "tool_call_update" => Ok(Variant::ToolCallUpdate),
            _ => Err(D::Error::custom("not a tool call's update")),
        }
    }
}

/// A field that is there must be a string: `null` or another type is read as a tree.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de str>, D::Error> {
    <&'de str>::deserialize(deserializer).map(Some)
}

impl ToolUpdate {
    /// Read `line` (one line of the agent's stdout, without its newline) if it is a tool call's
    /// `session/update` in the shape above; otherwise give it back untouched.
    pub fn read(line: Vec<u8>) -> Result<ToolUpdate, Vec<u8>> {
        let line = match String::from_utf8(line) {
            Ok(line) => line,
            Err(e) => return Err(e.into_bytes()),
        };
        match Self::spans(&line) {
            Some(spans) => Ok(ToolUpdate { line, spans }),
            None => Err(line.into_bytes()),
        }
    }

    fn spans(line: &str) -> Option<Spans> {
        let frame: Frame<'_> = serde_json::from_str(line).ok()?;
        let update = &frame.params.update;
        let (has_diff, diff_paths) = match update.content {
            None => (false, Vec::new()),
            Some(content) => {
                let items: Vec<ContentItem<'_>> = serde_json::from_str(content.get()).ok()?;
                let diffs = items.iter().filter(|i| i.item_type == Some("diff"));
                let paths = diffs.clone().filter_map(|i| i.path.map(str::to_owned));
                (diffs.count() > 0, paths.collect())
            }
        };
        let span = |s: &str| span_in(line, s);
        Some(Spans {
            session_id: span(frame.params.session_id),
            tool_call_id: span(update.tool_call_id),
            variant: update.session_update,
            title: update.title.map(span),
            kind: update.kind.map(span),
            status: update.status.map(span),
            content: update.content.map(|c| span(c.get())),
            has_diff,
            diff_paths,
        })
    }

    fn at(&self, range: &Range<usize>) -> &str {
        &self.line[range.clone()]
    }

    pub fn session_id(&self) -> &str {
        self.at(&self.spans.session_id)
    }

    pub fn tool_call_id(&self) -> &str {
        self.at(&self.spans.tool_call_id)
    }

    pub fn variant(&self) -> Variant {
        self.spans.variant
    }

    pub fn title(&self) -> Option<&str> {
        self.spans.title.as_ref().map(|r| self.at(r))
    }

    pub fn kind(&self) -> Option<&str> {
        self.spans.kind.as_ref().map(|r| self.at(r))
    }

    pub fn status(&self) -> Option<&str> {
        self.spans.status.as_ref().map(|r| self.at(r))
    }

    /// Whether the update carries a (non-null) `content`.
    pub fn has_content(&self) -> bool {
        self.spans.content.is_some()
    }

    /// The paths of the `content`'s diff items, in order (places the tool call names).
    pub fn diff_paths(&self) -> &[String] {
        &self.spans.diff_paths
    }

    /// The `content`, kept as its text: what the timeline holds for the tool call until someone
    /// asks for the merged call as a tree.
    pub fn into_content(mut self) -> Option<Content> {
        let range = self.spans.content?;
        // Kept until the next update with a content: not with the room of a longer line the
        // reader's buffer once held.
        if self.line.capacity() > 2 * self.line.len() {
            self.line.shrink_to_fit();
        }
        Some(Content {
            line: self.line,
            range,
            has_diff: self.spans.has_diff,
        })
    }
}

/// A tool call's `content` as the agent wrote it (a JSON array, checked when it was read).
#[derive(Debug, Clone)]
pub struct Content {
    line: String,
    range: Range<usize>,
    has_diff: bool,
}

impl Content {
    /// Whether an item of it is a diff (`subject::classify`, `decide::effective_kinds`).
    pub fn has_diff(&self) -> bool {
        self.has_diff
    }

    /// The tree the agent's text stands for, as parsing the whole line would have built it.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.line[self.range.clone()])
            .expect("content was read as JSON from this same text when its line arrived")
    }
}

/// Where each field read lies in the line.
#[derive(Debug)]
struct Spans {
    session_id: Range<usize>,
    tool_call_id: Range<usize>,
    variant: Variant,
    title: Option<Range<usize>>,
    kind: Option<Range<usize>>,
    status: Option<Range<usize>>,
    content: Option<Range<usize>>,
    /// The `content` items of type `diff`: whether there is one, and their string `path`s.
    has_diff: bool,
    diff_paths: Vec<String>,
}

/// The byte range of `part` in `whole`; `part` is a slice of `whole` (borrowed by serde from it).
fn span_in(whole: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    debug_assert!(start + part.len() <= whole.len());
    start..start + part.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(line: &str) -> Option<ToolUpdate> {
        ToolUpdate::read(line.as_bytes().to_vec()).ok()
    }

    const UPDATE: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"ok\n"}},{"type":"diff","path":"/w/a","newText":""}]}}}"#;

    #[test]
    fn the_common_shape_is_read_with_its_fields() {
        let u = read(UPDATE).expect("read");
        assert_eq!(u.session_id(), "s1");
        assert_eq!(u.tool_call_id(), "c1");
        assert_eq!(u.variant(), Variant::ToolCallUpdate);
        assert_eq!(
            (u.title(), u.kind(), u.status()),
            (None, None, Some("in_progress"))
        );
        assert_eq!(u.diff_paths(), ["/w/a"]);
        let content = u.into_content().expect("content");
        assert!(content.has_diff());
        let whole: Value = serde_json::from_str(UPDATE).unwrap();
        assert_eq!(content.to_value(), whole["params"]["update"]["content"]);
    }

    #[test]
    fn anything_else_is_given_back_unchanged() {
        for line in [
            // Other messages and variants.
            r#"{"jsonrpc":"2.0","id":1,"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/other","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"plan","toolCallId":"c"}}}"#,
            // Fields this reading does not know, or of another type, or null.
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","rawInput":{}}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","title":null}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":7}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","content":"text"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","content":[{"type":"diff","path":5}]}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","content":[1]}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","_meta":{},"update":{"sessionUpdate":"tool_call","toolCallId":"c"}}}"#,
            // A repeated key, an escaped string, a missing field.
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","status":"pending","status":"completed"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c\u0041"}}}"#,
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call"}}}"#,
            // Not JSON, or not UTF-8.
            r#"{"jsonrpc":"2.0","method":"session/update""#,
        ] {
            let back = ToolUpdate::read(line.as_bytes().to_vec()).expect_err(line);
            assert_eq!(back, line.as_bytes());
        }
        let bytes = vec![b'{', 0xff, b'}'];
        assert_eq!(
            ToolUpdate::read(bytes.clone()).expect_err("not UTF-8"),
            bytes
        );
    }

    #[test]
    fn a_null_content_is_absent() {
        let u = read(
            r#"{"method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c","content":null}}}"#,
        )
        .expect("read");
        assert!(!u.has_content());
        assert!(u.into_content().is_none());
    }
}
