//! `${name}` templates inside JSON values (scenarios/README.md, "Templating").
//!
//! * A JSON string that is exactly `"${name}"` becomes the variable's JSON value, so a captured
//!   number stays a number and `"${profile.options}"` becomes an array.
//! * Inside a longer string (or an object key) the value is spliced in as text: a string as its
//!   characters, anything else as its compact JSON.
//! * `$${` is a literal `${`.
//!
//! Templates are parsed statically by the scenario parser ([`uses`]) so an unknown variable is a
//! parse error with a position, long before anything runs.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// A template syntax error at a byte offset of the string it was found in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateError {
    pub offset: usize,
    pub message: String,
}

/// One piece of a parsed template string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(String),
    /// A variable reference; `offset` is the byte offset of its `$`.
    Var {
        name: &'a str,
        offset: usize,
    },
}

/// Variable names: letters, digits, `_`, `-`, and `.` (for `profile.NAME`).
pub fn is_valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// Splits a string into literal text and variable references.
pub fn parse(s: &str) -> Result<Vec<Piece<'_>>, TemplateError> {
    // Most strings of a frame hold no template (`$${` holds a `${` too): one piece, no scan.
    if !s.contains("${") {
        return Ok(if s.is_empty() {
            Vec::new()
        } else {
            vec![Piece::Text(s.to_owned())]
        });
    }
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if rest.starts_with("$${") {
            text.push_str("${");
            i += 3;
        } else if let Some(after) = rest.strip_prefix("${") {
            let Some(end) = after.find('}') else {
                return Err(TemplateError {
                    offset: i,
                    message: "unterminated `${`: write `$${` for a literal `${`".into(),
                });
            };
            let name = &after[..end];
            if !is_valid_name(name) {
                return Err(TemplateError {
                    offset: i,
                    message: format!(
                        "invalid variable name `{name}` in `${{{name}}}` (letters, digits, `_`, `-`, `.`); write `$${{` for a literal `${{`"
                    ),
                });
            }
            if !text.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut text)));
            }
            pieces.push(Piece::Var { name, offset: i });
            i += 2 + end + 1;
        } else {
            let c = rest.chars().next().unwrap_or('\0');
            text.push(c);
            i += c.len_utf8().max(1);
        }
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// The variable name if `s` is exactly one `${name}` and nothing else.
pub fn whole_var(s: &str) -> Option<&str> {
    match parse(s).ok()?.as_slice() {
        [Piece::Var { name, .. }] => Some(name),
        _ => None,
    }
}

/// Byte offset of the `n`-th (0-based) reference to `name` in `text`, scanning leniently (syntax
/// errors are skipped). Used to point at a variable inside the raw text of a frame.
pub fn find_var(text: &str, name: &str, n: usize) -> Option<usize> {
    let mut seen = 0;
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if rest.starts_with("$${") {
            i += 3;
        } else if let Some(after) = rest.strip_prefix("${") {
            match after.find('}') {
                Some(end) if &after[..end] == name => {
                    if seen == n {
                        return Some(i);
                    }
                    seen += 1;
                    i += 2 + end + 1;
                }
                _ => i += 2,
            }
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    None
}

/// One use of a variable in a JSON value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarUse {
    pub name: String,
    /// The string is exactly `"${name}"` (a JSON string value, not a key).
    pub whole: bool,
    /// JSON pointer of the string that holds it (for keys: of the object).
    pub pointer: String,
    pub in_key: bool,
}

/// A template error found while walking a JSON value, with the string it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueTemplateError {
    pub error: TemplateError,
    pub string: String,
}

/// Every variable used in a JSON value, in document order (keys before their values).
pub fn uses(value: &Value) -> Result<Vec<VarUse>, ValueTemplateError> {
    let mut out = Vec::new();
    walk(value, &mut String::new(), &mut out)?;
    Ok(out)
}

/// Walks `value` with the pointer of where it sits in `pointer`, which it extends for each child
/// and restores after: one buffer for the whole walk, because a scenario of 10⁵ frames walks
/// millions of nodes and only the few strings with a `${` need their pointer.
fn walk(
    value: &Value,
    pointer: &mut String,
    out: &mut Vec<VarUse>,
) -> Result<(), ValueTemplateError> {
    let parent = pointer.len();
    match value {
        Value::String(s) => collect(s, pointer, false, out),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let _ = write!(pointer, "/{i}");
                walk(item, pointer, out)?;
                pointer.truncate(parent);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (k, v) in map {
                collect(k, pointer, true, out)?;
                pointer.push('/');
                push_escaped(pointer, k);
                walk(v, pointer, out)?;
                pointer.truncate(parent);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Appends a key as a JSON pointer segment (RFC 6901: `~` → `~0`, `/` → `~1`).
fn push_escaped(pointer: &mut String, key: &str) {
    for c in key.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            c => pointer.push(c),
        }
    }
}

fn collect(
    s: &str,
    pointer: &str,
    in_key: bool,
    out: &mut Vec<VarUse>,
) -> Result<(), ValueTemplateError> {
    if !s.contains("${") {
        return Ok(());
    }
    let pieces = parse(s).map_err(|error| ValueTemplateError {
        error,
        string: s.to_owned(),
    })?;
    let whole = !in_key && pieces.len() == 1;
    for p in pieces {
        if let Piece::Var { name, .. } = p {
            out.push(VarUse {
                name: name.to_owned(),
                whole,
                pointer: pointer.to_owned(),
                in_key,
            });
        }
    }
    Ok(())
}

/// Variables used in a plain text template (user prompt text, `[vars]` values), with the byte
/// offset of each `${`.
pub fn uses_in_str(s: &str) -> Result<Vec<(&str, usize)>, TemplateError> {
    Ok(parse(s)?
        .into_iter()
        .filter_map(|p| match p {
            Piece::Var { name, offset } => Some((name, offset)),
            Piece::Text(_) => None,
        })
        .collect())
}

/// How a variable's value reads when spliced into a longer string.
pub fn splice_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Looks a variable up; `Err` carries a message for the person running the scenario.
pub type Lookup<'a> = dyn FnMut(&str) -> Result<Value, String> + 'a;

/// Fills every template in a JSON value.
pub fn expand(value: &Value, lookup: &mut Lookup<'_>) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) => {
            if let Some(name) = whole_var(s) {
                lookup(name)?
            } else {
                Value::String(expand_str(s, lookup)?)
            }
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| expand(v, lookup))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = Map::with_capacity(map.len());
            for (k, v) in map {
                out.insert(expand_str(k, lookup)?, expand(v, lookup)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// Fills every template in a text, splicing values as text.
pub fn expand_str(s: &str, lookup: &mut Lookup<'_>) -> Result<String, String> {
    let pieces = parse(s).map_err(|e| format!("{} in {s:?}", e.message))?;
    let mut out = String::with_capacity(s.len());
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(&t),
            Piece::Var { name, .. } => out.push_str(&splice_text(&lookup(name)?)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars(name: &str) -> Result<Value, String> {
        match name {
            "n" => Ok(json!(42)),
            "s" => Ok(json!("sess")),
            "obj" => Ok(json!({"a":[1]})),
            other => Err(format!("unknown variable `${{{other}}}`")),
        }
    }

    #[test]
    fn whole_string_becomes_the_value() {
        let v = json!({"id":"${n}","o":"${obj}","t":"${s}"});
        assert_eq!(
            expand(&v, &mut vars).unwrap(),
            json!({"id":42,"o":{"a":[1]},"t":"sess"})
        );
    }

    #[test]
    fn longer_strings_splice_text_and_keys_are_templated() {
        let v = json!({"k_${s}":"id=${n} o=${obj} s=${s}"});
        assert_eq!(
            expand(&v, &mut vars).unwrap(),
            json!({"k_sess":"id=42 o={\"a\":[1]} s=sess"})
        );
    }

    #[test]
    fn dollar_dollar_escapes() {
        assert_eq!(
            expand(&json!("$${HOME} and $${n}"), &mut vars).unwrap(),
            json!("${HOME} and ${n}")
        );
        assert_eq!(whole_var("$${n}"), None);
        assert_eq!(whole_var("${n}"), Some("n"));
        assert_eq!(whole_var("${n}x"), None);
        // A lone `$` is just text.
        assert_eq!(expand_str("cost $5", &mut vars).unwrap(), "cost $5");
    }

    #[test]
    fn unknown_variables_are_errors() {
        let err = expand(&json!(["${nope}"]), &mut vars).unwrap_err();
        assert!(err.contains("${nope}"), "{err}");
    }

    #[test]
    fn syntax_errors_have_offsets() {
        assert_eq!(parse("ab${x").unwrap_err().offset, 2);
        assert_eq!(parse("ab${}").unwrap_err().offset, 2);
        assert_eq!(parse("${a b}").unwrap_err().offset, 0);
    }

    #[test]
    fn uses_are_listed_in_document_order() {
        let v: Value = serde_json::from_str(
            r#"{"id":"${id}","params":{"${k}":"x ${a} ${b}","o":"${profile.opts}"}}"#,
        )
        .unwrap();
        let u = uses(&v).unwrap();
        let names: Vec<_> = u.iter().map(|u| (u.name.as_str(), u.whole)).collect();
        assert_eq!(
            names,
            vec![
                ("id", true),
                ("k", false),
                ("a", false),
                ("b", false),
                ("profile.opts", true)
            ]
        );
        assert_eq!(u[0].pointer, "/id");
        assert!(u[1].in_key);
        assert_eq!(u[4].pointer, "/params/o");
    }

    #[test]
    fn find_var_skips_escapes() {
        let text = r#"{"a":"$${x}","b":"${x}","c":"${x}"}"#;
        let first = find_var(text, "x", 0).unwrap();
        assert_eq!(&text[first - 5..first], r#""b":""#);
        let second = find_var(text, "x", 1).unwrap();
        assert!(second > first);
        assert_eq!(find_var(text, "x", 2), None);
    }
}
