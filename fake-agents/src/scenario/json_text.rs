//! A `send` frame as the scenario keeps it: compact JSON text with the places of its templates,
//! so that sending it is copying text and filling a few holes, not parsing, filling and
//! serialising a tree (docs/performance.md, "Frames per scenario").
//!
//! The text is read once, at parse time, by a visitor that writes it out again compact — the
//! bytes `serde_json` writes for the parsed tree — and notes every string holding a `${`. No
//! tree is built. A frame that the visitor cannot mirror exactly (a key repeated in an object,
//! which the tree would keep once; a template in a key) is kept as written and goes the tree's
//! way when sent.

use std::fmt;
use std::fmt::Write as _;
use std::ops::Range;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::template::{self, Piece, ValueTemplateError, VarUse};

mod plain;

/// A JSON template kept as text (checked by the parser), parsed again only where it has to be.
/// A parsed frame with `serde_json`'s order-preserving maps takes about ten times its text
/// (3.3 KB for a 270-byte `tool_call_update`), and a scenario keeps every step for the whole run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText {
    text: Box<str>,
    /// `Some`: `text` is compact and these are its template strings, in order. `None`: `text` is
    /// as written, filled through its tree.
    holes: Option<Box<[Hole]>>,
}

/// One JSON string token of the compact text that holds a template.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hole {
    /// Byte range of the token, quotes included.
    at: Range<u32>,
    kind: HoleKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HoleKind {
    /// `"${name}"`: replaced by the variable's JSON value.
    Whole,
    /// The top-level `"id":"${id}"`: a fresh request id.
    FreshId,
    /// Text around or between variables: filled as text, written as a JSON string.
    Splice,
}

/// What filling a frame produced.
pub struct Filled {
    /// The frame on the wire: compact, keys in their written order.
    pub bytes: Vec<u8>,
    /// Whether a fresh request id was taken.
    pub took_id: bool,
}

impl JsonText {
    /// Keeps `text` as written: it must parse as JSON (the parser parsed it first).
    pub(crate) fn new(text: &str) -> Self {
        JsonText {
            text: text.into(),
            holes: None,
        }
    }

    /// The template: compact unless the frame repeats a key or has a template in a key.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The template as a JSON value. `Err` only for a text that was never checked, which the
    /// parser does not make.
    pub fn value(&self) -> Result<Value, String> {
        serde_json::from_str(&self.text).map_err(|e| format!("the frame template is not JSON: {e}"))
    }

    /// The frame to send: every template filled by `lookup`, a fresh id from `next_id` for the
    /// top-level `"id":"${id}"`. `None` for a frame kept as written (fill its [`Self::value`]).
    pub fn fill(
        &self,
        next_id: u64,
        lookup: &mut template::Lookup<'_>,
    ) -> Option<Result<Filled, String>> {
        let holes = self.holes.as_deref()?;
        Some(fill_holes(&self.text, holes, next_id, lookup))
    }
}

fn fill_holes(
    text: &str,
    holes: &[Hole],
    next_id: u64,
    lookup: &mut template::Lookup<'_>,
) -> Result<Filled, String> {
    let mut bytes = Vec::with_capacity(text.len() + 64);
    let mut took_id = false;
    let mut from = 0;
    for hole in holes {
        let (start, end) = (hole.at.start as usize, hole.at.end as usize);
        bytes.extend_from_slice(&text.as_bytes()[from..start]);
        from = end;
        // The token's string: a `"${name}"` holds no escapes; a spliced one may.
        let token = &text[start..end];
        match hole.kind {
            HoleKind::FreshId => {
                took_id = true;
                let _ = write!(Bytes(&mut bytes), "{next_id}");
            }
            HoleKind::Whole => {
                let name = &token[3..token.len() - 2];
                write_json(&mut bytes, &lookup(name)?);
            }
            HoleKind::Splice => {
                let s: String = serde_json::from_str(token).map_err(|e| e.to_string())?;
                write_json(&mut bytes, &template::expand_str(&s, lookup)?);
            }
        }
    }
    bytes.extend_from_slice(&text.as_bytes()[from..]);
    Ok(Filled { bytes, took_id })
}

fn write_json(out: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    // Serialising a `Value` or a `str` into a Vec cannot fail.
    let _ = serde_json::to_writer(out, value);
}

/// `fmt::Write` into bytes.
struct Bytes<'a>(&'a mut Vec<u8>);

impl fmt::Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The tree's way to a fresh request id: a top-level `"id":"${id}"` becomes `next_id`.
/// Whether it did.
pub fn set_fresh_id(frame: &mut Value, next_id: u64) -> bool {
    let fresh = frame
        .get("id")
        .and_then(Value::as_str)
        .and_then(template::whole_var)
        == Some("id");
    match frame.as_object_mut() {
        Some(obj) if fresh => {
            obj.insert("id".into(), Value::from(next_id));
            true
        }
        _ => false,
    }
}

/// A frame read by [`compile`].
pub struct Compiled {
    pub frame: JsonText,
    /// The frame is a JSON object.
    pub is_object: bool,
    /// Every variable used, in document order (keys before their values), or the first
    /// template error; `None` when the frame was kept as written (walk its tree for them).
    pub uses: Option<Result<Vec<VarUse>, ValueTemplateError>>,
}

/// Reads `text` as JSON (the same parser and errors as `serde_json::from_str`) into a
/// [`JsonText`] without building its tree.
pub fn compile(text: &str) -> Result<Compiled, serde_json::Error> {
    // Nearly every frame of a long scenario is already compact: it is read without serde.
    match plain::compile(text) {
        Some(compiled) => Ok(compiled),
        None => compile_by_serde(text),
    }
}

/// [`compile`] through `serde_json`'s reader, for any text.
fn compile_by_serde(text: &str) -> Result<Compiled, serde_json::Error> {
    let mut c = Compiler::new(Vec::with_capacity(
        // Compact text is about as long as the text written (no longer, but for numbers).
        text.len(),
    ));
    let mut de = serde_json::Deserializer::from_str(text);
    let read = Node(&mut c)
        .deserialize(&mut de)
        .and_then(|is_object| de.end().map(|()| is_object));
    let is_object = match read {
        Ok(is_object) => is_object,
        Err(e) => {
            c.finish();
            return Err(e);
        }
    };
    Ok(c.into_compiled(text, is_object))
}

/// Whether `s` holds a `${`. Most strings of a frame hold no `$` at all, and a byte search
/// (`memchr`) rejects them faster than a substring search of a short string.
fn holds_template(s: &str) -> bool {
    s.contains('$') && s.contains("${")
}

thread_local! {
    /// [`Compiler::path`] and [`Compiler::keys`] between two frames (empty; their room kept).
    static SCRATCH: std::cell::Cell<(Vec<Segment>, Vec<Range<usize>>)> =
        const { std::cell::Cell::new((Vec::new(), Vec::new())) };
}

/// One step of [`Compiler::path`].
#[derive(Clone)]
enum Segment {
    /// A key, as its token in the compact text (quotes included).
    Key(Range<usize>),
    Index(usize),
}

#[derive(Default)]
struct Compiler {
    out: Vec<u8>,
    holes: Vec<Hole>,
    uses: Vec<VarUse>,
    /// The first template error, in document order.
    error: Option<ValueTemplateError>,
    /// Where the node being read is: its keys and indices from the root. The JSON pointer is
    /// built from it only for a string that holds a template (most strings hold none).
    path: Vec<Segment>,
    /// The keys of the objects being read, innermost last, as their tokens in `out` (a repeat
    /// is looked for among its own object's keys only: equal keys write equal tokens).
    keys: Vec<Range<usize>>,
    /// The text cannot be mirrored exactly (see the module doc).
    mirrorless: bool,
}

impl Compiler {
    /// A compiler writing into `out`, with the thread's scratch path and keys.
    fn new(out: Vec<u8>) -> Self {
        // The path and keys are scratch, empty again once a frame is read: a long scenario's
        // frames share one pair per thread rather than allocating two vectors each.
        let (path, keys) = SCRATCH.take();
        Compiler {
            out,
            path,
            keys,
            ..Compiler::default()
        }
    }

    /// Gives the path and keys back to the thread's scratch.
    fn finish(&mut self) {
        let mut path = std::mem::take(&mut self.path);
        let mut keys = std::mem::take(&mut self.keys);
        path.clear();
        keys.clear();
        SCRATCH.set((path, keys));
    }

    /// The frame read from `text` (whose value was an object if `is_object`).
    fn into_compiled(mut self, text: &str, is_object: bool) -> Compiled {
        self.finish();
        if self.mirrorless || self.out.len() > u32::MAX as usize {
            return Compiled {
                frame: JsonText::new(text),
                is_object,
                uses: None,
            };
        }
        let uses = match self.error {
            Some(e) => Err(e),
            None => Ok(self.uses),
        };
        Compiled {
            frame: JsonText {
                // Compact JSON is UTF-8: it is the input's strings, escaped by serde_json.
                text: String::from_utf8(self.out).unwrap_or_default().into(),
                holes: Some(self.holes.into()),
            },
            is_object,
            uses: Some(uses),
        }
    }

    fn string(&mut self, s: &str) {
        let start = self.out.len();
        write_json(&mut self.out, s);
        self.string_at(s, start..self.out.len());
    }

    /// The string value `s`, written in `out` as the token at `token`: a hole and its uses if
    /// it holds a template.
    fn string_at(&mut self, s: &str, token: Range<usize>) {
        if !holds_template(s) {
            return;
        }
        let pieces = match template::parse(s) {
            Ok(p) => p,
            Err(error) => {
                self.error.get_or_insert(ValueTemplateError {
                    error,
                    string: s.to_owned(),
                });
                return;
            }
        };
        let whole = pieces.len() == 1;
        let mut pointer = Some(self.pointer());
        let mut kind = HoleKind::Splice;
        let mut left = pieces
            .iter()
            .filter(|p| matches!(p, Piece::Var { .. }))
            .count();
        for p in pieces {
            let Piece::Var { name, .. } = p else { continue };
            left -= 1;
            if whole {
                kind = if name == "id" && pointer.as_deref() == Some("/id") {
                    HoleKind::FreshId
                } else {
                    HoleKind::Whole
                };
            }
            // The last use takes the pointer; the others (a string with several variables,
            // rare) copy it.
            let pointer = match left {
                0 => pointer.take().unwrap_or_default(),
                _ => pointer.clone().unwrap_or_default(),
            };
            self.uses.push(VarUse {
                name: name.to_owned(),
                whole,
                pointer,
                in_key: false,
            });
        }
        self.holes.push(Hole {
            at: token.start as u32..token.end as u32,
            kind,
        });
    }

    /// A key of the object whose keys start at `first`: written, and checked for a repeat.
    fn key(&mut self, k: &str, first: usize) {
        let start = self.out.len();
        write_json(&mut self.out, k);
        self.key_at(k, start..self.out.len(), first);
    }

    /// The key `k`, written in `out` as the token at `token`, of the object whose keys start
    /// at `first`: checked for a repeat or a template.
    fn key_at(&mut self, k: &str, token: Range<usize>, first: usize) {
        // A template in a key may fill to a repeat of another key.
        if holds_template(k) {
            self.mirrorless = true;
        }
        self.key_token(token, first);
    }

    /// A key without a template, written in `out` as the token at `token`, of the object
    /// whose keys start at `first`: checked for a repeat.
    fn key_token(&mut self, token: Range<usize>, first: usize) {
        let written = &self.out[token.clone()];
        if self.keys[first..]
            .iter()
            .any(|r| &self.out[r.clone()] == written)
        {
            self.mirrorless = true;
        }
        self.keys.push(token.clone());
        self.path.push(Segment::Key(token));
    }

    /// The JSON pointer of the node being read (RFC 6901: `~` and `/` escaped in keys).
    fn pointer(&self) -> String {
        let mut pointer = String::new();
        for segment in &self.path {
            match segment {
                Segment::Index(i) => {
                    let _ = write!(pointer, "/{i}");
                }
                Segment::Key(token) => {
                    // The token is the key written by serde_json: read it back the same way
                    // (without a copy when it holds no escape, as nearly every key).
                    let written = &self.out[token.start + 1..token.end - 1];
                    let key: std::borrow::Cow<str> = match std::str::from_utf8(written) {
                        Ok(plain) if !plain.contains('\\') => plain.into(),
                        _ => serde_json::from_slice::<String>(&self.out[token.clone()])
                            .unwrap_or_default()
                            .into(),
                    };
                    pointer.push('/');
                    for ch in key.chars() {
                        match ch {
                            '~' => pointer.push_str("~0"),
                            '/' => pointer.push_str("~1"),
                            ch => pointer.push(ch),
                        }
                    }
                }
            }
        }
        pointer
    }
}

/// Reads one JSON value into the compiler; yields whether it was an object.
struct Node<'c>(&'c mut Compiler);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

/// Reads one object key.
struct Key<'c>(&'c mut Compiler, usize);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, k: &str) -> Result<(), E> {
        let Key(c, first) = self;
        c.key(k, first);
        Ok(())
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<bool, E> {
        write_json(&mut self.0.out, &v);
        Ok(false)
    }
    fn visit_i64<E>(self, v: i64) -> Result<bool, E> {
        write_json(&mut self.0.out, &v);
        Ok(false)
    }
    fn visit_u64<E>(self, v: u64) -> Result<bool, E> {
        write_json(&mut self.0.out, &v);
        Ok(false)
    }
    fn visit_f64<E>(self, v: f64) -> Result<bool, E> {
        // As the tree holds it: a `Number` from a finite f64 (JSON has no other).
        write_json(&mut self.0.out, &Value::from(v));
        Ok(false)
    }
    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        self.0.string(v);
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        self.0.out.extend_from_slice(b"null");
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        let c = self.0;
        c.out.push(b'[');
        let mut i = 0usize;
        loop {
            if i > 0 {
                c.out.push(b',');
            }
            c.path.push(Segment::Index(i));
            let more = seq.next_element_seed(Node(c))?.is_some();
            c.path.pop();
            if !more {
                if i > 0 {
                    c.out.pop();
                }
                break;
            }
            i += 1;
        }
        c.out.push(b']');
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let c = self.0;
        let first = c.keys.len();
        c.out.push(b'{');
        let mut n = 0usize;
        while map.next_key_seed(Key(c, first))?.is_some() {
            c.out.push(b':');
            map.next_value_seed(Node(c))?;
            c.path.pop();
            c.out.push(b',');
            n += 1;
        }
        if n > 0 {
            c.out.pop();
        }
        c.out.push(b'}');
        c.keys.truncate(first);
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn lookup(name: &str) -> Result<Value, String> {
        match name {
            "sessionId" => Ok(json!("sess-1")),
            "n" => Ok(json!(42)),
            "obj" => Ok(json!({"b": [1, "two\n"], "a": null})),
            "quote" => Ok(json!("say \"hi\"")),
            other => Err(format!("no `{other}`")),
        }
    }

    /// What the tree's way sends: parse, the fresh id, fill, serialise.
    fn through_tree(text: &str, next_id: u64) -> Result<Vec<u8>, String> {
        let mut v: Value = serde_json::from_str(text).unwrap();
        set_fresh_id(&mut v, next_id);
        let v = template::expand(&v, &mut lookup)?;
        Ok(serde_json::to_vec(&v).unwrap())
    }

    fn filled(text: &str, next_id: u64) -> Result<Vec<u8>, String> {
        let c = compile(text).unwrap();
        c.frame
            .fill(next_id, &mut lookup)
            .expect("compiled")
            .map(|f| f.bytes)
    }

    #[test]
    fn filling_the_text_sends_the_bytes_the_tree_would() {
        for text in [
            r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"${sessionId}","update":{"n":"${n}"}}}"#,
            "{ \"id\" : \"${id}\", \"method\":\"m\",\n \"params\": {\"o\":\"${obj}\", \"list\": [ ] , \"e\": {} } }",
            r#"{"t":"pre ${sessionId} mid ${n} ${quote} post","lit":"$${x} stays","esc":"\u0041\t\"\\\/ é 😀"}"#,
            r#"{"nums":[0,-1,18446744073709551615,-9223372036854775808,1.5,-0.0,1e300,2.50,1E-7],"b":[true,false,null]}"#,
            r#"{"nested":[[["${n}"]],{"k":{"k":"${sessionId}"}}],"id":7}"#,
            r#"{"params":{"id":"${n}"},"id":"x${n}"}"#,
            r#"[1,"${n}",{"a":"b"}]"#,
            r#""${obj}""#,
        ] {
            assert_eq!(filled(text, 9), through_tree(text, 9), "{text}");
        }
    }

    #[test]
    fn a_missing_variable_fails_the_fill_with_the_trees_message() {
        let text = r#"{"a":"${nope}","b":"x ${nope2}"}"#;
        assert_eq!(filled(text, 0), through_tree(text, 0));
        assert!(filled(text, 0).is_err());
    }

    #[test]
    fn a_fresh_id_is_taken_only_for_the_top_level_id() {
        let c = compile(r#"{"id":"${id}","method":"m"}"#).unwrap();
        let f = c.frame.fill(3, &mut lookup).unwrap().unwrap();
        assert!(f.took_id);
        assert_eq!(f.bytes, br#"{"id":3,"method":"m"}"#);
        let c = compile(r#"{"id":"${n}"}"#).unwrap();
        assert!(!c.frame.fill(3, &mut lookup).unwrap().unwrap().took_id);
    }

    #[test]
    fn a_repeated_key_or_a_key_template_keeps_the_text_as_written() {
        for text in [r#"{"a":1,"b":{"a":2},"a":3}"#, r#"{"${n}":1}"#] {
            let c = compile(text).unwrap();
            assert!(c.uses.is_none(), "{text}");
            assert_eq!(c.frame.text(), text);
            assert!(c.frame.fill(0, &mut lookup).is_none());
        }
        // The same key in sibling objects is no repeat.
        assert!(
            compile(r#"{"x":{"a":1},"y":{"a":2},"a":3}"#)
                .unwrap()
                .uses
                .is_some()
        );
    }

    #[test]
    fn uses_and_template_errors_are_those_of_the_tree() {
        for text in [
            // A deep frame first: the path and key scratch is reused by the frames after it.
            r#"[{"a":{"b":{"c":{"d":["${deep}"]}}}},{"a":"${shallow}"}]"#,
            r#"{"a":"${sessionId}","b":["x${n}y",{"c":"${obj}"}],"d/e~":"${n}"}"#,
            r#"{"a":"${ok}","b":"${bad name}","c":"${unterminated"}"#,
            // A `$` without a `{` after it, then a template later in the same string; several
            // variables in one string (each use has the string's pointer).
            r#"{"a":"$5 $","b":"cost: $${x} $ ${y}","c":"${p}-${q}-${p}","$k":["$","${z}$"]}"#,
        ] {
            let tree: Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                compile(text).unwrap().uses.unwrap(),
                template::uses(&tree),
                "{text}"
            );
        }
    }

    #[test]
    fn json_errors_are_serde_jsons() {
        for text in [
            "{\"a\":1,}",
            "{\"a\" 1}",
            "[1,2",
            "{} x",
            "",
            "{\"a\":01}",
            "\"\\q\"",
        ] {
            let ours = compile(text).err().map(|e| e.to_string());
            let tree = serde_json::from_str::<Value>(text)
                .err()
                .map(|e| e.to_string());
            assert!(ours.is_some(), "{text}");
            assert_eq!(ours, tree, "{text}");
        }
        assert!(compile("{}").unwrap().is_object);
        assert!(!compile("[{}]").unwrap().is_object);
    }
}
