//! Field templates of observer rules: literal text with placeholders `{name}` (a regex capture
//! or a context value), `{/json/pointer}` (a value of the observed JSON object), each optionally
//! through a word table: `{kind|acp_kind}`.
//!
//! A template that is one placeholder alone keeps the value's JSON type (a request id `0` stays a
//! number) and leaves the field out when the value is missing; text around placeholders makes a
//! string, a missing value reading as empty.

use std::collections::BTreeMap;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Var { name: String, table: Option<String> },
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Word tables by name.
pub type Words = BTreeMap<String, BTreeMap<String, String>>;

impl Template {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let close = rest[open..]
                .find('}')
                .ok_or_else(|| format!("{text:?}: a `{{` without its `}}`"))?
                + open;
            let inner = &rest[open + 1..close];
            let (name, table) = match inner.split_once('|') {
                Some((n, t)) => (n.trim(), Some(t.trim().to_owned())),
                None => (inner.trim(), None),
            };
            if name.is_empty() || table.as_deref() == Some("") {
                return Err(format!("{text:?}: empty placeholder `{{{inner}}}`"));
            }
            parts.push(Part::Var {
                name: name.to_owned(),
                table,
            });
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(format!("{text:?}: a `}}` without its `{{`"));
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Template { parts })
    }

    /// Every placeholder: (name, table).
    pub fn vars(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var { name, table } => Some((name.as_str(), table.as_deref())),
            Part::Text(_) => None,
        })
    }

    /// The literal value, if the template has no placeholder.
    pub fn literal(&self) -> Option<String> {
        match self.parts.as_slice() {
            [] => Some(String::new()),
            [Part::Text(t)] => Some(t.clone()),
            _ => None,
        }
    }

    /// The field's value; `None` leaves the field out.
    pub fn render(&self, lookup: &dyn Fn(&str) -> Option<Value>, words: &Words) -> Option<Value> {
        let value_of = |name: &str, table: Option<&str>| -> Option<Value> {
            let value = lookup(name);
            match table {
                None => value,
                Some(table) => {
                    let table = words.get(table)?;
                    let word = value.as_ref().map(text_of).unwrap_or_default();
                    table
                        .get(&word)
                        .or_else(|| table.get("*"))
                        .map(|w| Value::String(w.clone()))
                        .or(value)
                }
            }
        };
        if let [Part::Var { name, table }] = self.parts.as_slice() {
            return value_of(name, table.as_deref());
        }
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Var { name, table } => {
                    if let Some(v) = value_of(name, table.as_deref()) {
                        out.push_str(&text_of(&v));
                    }
                }
            }
        }
        Some(Value::String(out))
    }
}

/// A value as text: strings as they are, anything else as JSON.
pub fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn words() -> Words {
        let mut t = BTreeMap::new();
        t.insert("execute".to_owned(), "command".to_owned());
        t.insert("*".to_owned(), "generic".to_owned());
        BTreeMap::from([("kind".to_owned(), t)])
    }

    fn lookup(name: &str) -> Option<Value> {
        match name {
            "id" => Some(json!(0)),
            "k" => Some(json!("execute")),
            "odd" => Some(json!("other")),
            _ => None,
        }
    }

    #[test]
    fn one_placeholder_keeps_its_type_and_text_makes_a_string() {
        let t = Template::parse("{id}").unwrap();
        assert_eq!(t.render(&lookup, &words()), Some(json!(0)));
        let t = Template::parse("request {id}: {k|kind}").unwrap();
        assert_eq!(
            t.render(&lookup, &words()),
            Some(json!("request 0: command"))
        );
        assert_eq!(
            Template::parse("{nope}").unwrap().render(&lookup, &words()),
            None
        );
    }

    #[test]
    fn tables_map_words_with_a_default_for_others_and_missing() {
        let w = words();
        let r = |s: &str| Template::parse(s).unwrap().render(&lookup, &w);
        assert_eq!(r("{k|kind}"), Some(json!("command")));
        assert_eq!(r("{odd|kind}"), Some(json!("generic")));
        assert_eq!(r("{nope|kind}"), Some(json!("generic")));
    }

    #[test]
    fn bad_templates_are_errors() {
        assert!(
            Template::parse("{open")
                .unwrap_err()
                .contains("without its")
        );
        assert!(Template::parse("x}").unwrap_err().contains("without its"));
        assert!(Template::parse("{}").unwrap_err().contains("empty"));
        assert!(Template::parse("{a|}").unwrap_err().contains("empty"));
        assert_eq!(
            Template::parse("plain").unwrap().literal().as_deref(),
            Some("plain")
        );
    }
}
