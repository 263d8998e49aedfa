//! `{name}` placeholders in recipes, cases and model scripts.
//!
//! A placeholder is `{` + an identifier (`[A-Za-z_][A-Za-z0-9_]*`) + `}`; `{{` and `}}` stand
//! for literal braces. Any other brace is kept as it is, so JSON or code in a file's text needs
//! no escaping unless it contains `{word}` itself.

use std::collections::BTreeMap;

/// Values for placeholders.
pub type Vars = BTreeMap<String, String>;

/// The placeholder names used in `text`, in order (duplicates kept).
pub fn names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    scan(text, &mut |name| {
        out.push(name.to_string());
        Some(String::new())
    });
    out
}

/// Fills every placeholder of `text` from `vars`; `Err` names the first one without a value.
pub fn fill(text: &str, vars: &Vars) -> Result<String, String> {
    let mut missing = None;
    let filled = scan(text, &mut |name| match vars.get(name) {
        Some(v) => Some(v.clone()),
        None => {
            missing.get_or_insert_with(|| name.to_string());
            None
        }
    });
    match missing {
        Some(name) => Err(format!(
            "unknown placeholder `{{{name}}}` (known: {})",
            vars.keys()
                .map(|k| format!("{{{k}}}"))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        None => Ok(filled),
    }
}

/// Checks that every placeholder of `text` is one of `known`.
pub fn check(text: &str, known: &[&str]) -> Result<(), String> {
    for name in names(text) {
        if !known.contains(&name.as_str()) {
            return Err(format!(
                "unknown placeholder `{{{name}}}` (known: {})",
                known
                    .iter()
                    .map(|k| format!("{{{k}}}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(())
}

fn scan(text: &str, on_name: &mut dyn FnMut(&str) -> Option<String>) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'{' && bytes.get(i + 1) == Some(&b'{') {
            out.push('{');
            i += 2;
            continue;
        }
        if c == b'}' && bytes.get(i + 1) == Some(&b'}') {
            out.push('}');
            i += 2;
            continue;
        }
        if c == b'{' {
            let rest = &text[i + 1..];
            let len = rest
                .char_indices()
                .take_while(|(n, ch)| {
                    ch.is_ascii_alphabetic() || *ch == '_' || (*n > 0 && ch.is_ascii_digit())
                })
                .count();
            if len > 0 && rest.as_bytes().get(len) == Some(&b'}') {
                let name = &rest[..len];
                if let Some(value) = on_name(name) {
                    out.push_str(&value);
                }
                i += len + 2;
                continue;
            }
        }
        // Push the whole (possibly multi-byte) character.
        let ch = text[i..].chars().next().unwrap_or('\u{fffd}');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// Fills the placeholders of every string in a JSON value (keys too).
pub fn fill_json(value: &serde_json::Value, vars: &Vars) -> Result<serde_json::Value, String> {
    use serde_json::Value;
    Ok(match value {
        Value::String(s) => Value::String(fill(s, vars)?),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .map(|v| fill_json(v, vars))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                out.insert(fill(k, vars)?, fill_json(v, vars)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// Every string of a JSON value (keys too), for checking placeholders.
pub fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    use serde_json::Value;
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                strings(v, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        [("proj".to_string(), "/p".to_string())]
            .into_iter()
            .collect()
    }

    #[test]
    fn fills_and_escapes() {
        assert_eq!(fill("{proj}/a", &vars()).unwrap(), "/p/a");
        assert_eq!(
            fill("{{proj}} {x y} {}", &vars()).unwrap(),
            "{proj} {x y} {}"
        );
        assert_eq!(fill("é{proj}ü", &vars()).unwrap(), "é/pü");
    }

    #[test]
    fn missing_placeholder_is_named() {
        let err = fill("{proj}/{nope}", &vars()).unwrap_err();
        assert!(err.contains("`{nope}`"), "{err}");
        assert!(err.contains("{proj}"), "{err}");
        assert!(check("{home}", &["proj"]).unwrap_err().contains("{home}"));
        assert!(check("{proj}", &["proj"]).is_ok());
    }
}
