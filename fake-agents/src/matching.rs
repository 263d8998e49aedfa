//! Deciding whether a client message fits a step: message shapes, subset patterns, captures, and
//! what an answer to a permission request means for `[[step.on]]` branching.

use acp_vocab::envelope::Shape;
use serde_json::Value;

use crate::scenario::When;

/// `pattern` matches `actual` if every key of a pattern object matches (extra keys allowed),
/// arrays match element-wise with equal length, and scalars are equal (numbers by value, so
/// `1` matches `1.0`).
pub fn matches(pattern: &Value, actual: &Value) -> bool {
    match (pattern, actual) {
        (Value::Object(p), Value::Object(a)) => p
            .iter()
            .all(|(k, pv)| a.get(k).is_some_and(|av| matches(pv, av))),
        (Value::Array(p), Value::Array(a)) => {
            p.len() == a.len() && p.iter().zip(a).all(|(pv, av)| matches(pv, av))
        }
        (Value::Number(p), Value::Number(a)) => {
            p == a || matches!((p.as_f64(), a.as_f64()), (Some(x), Some(y)) if x == y)
        }
        _ => pattern == actual,
    }
}

/// Values at each `(name, pointer)`, or `None` if any pointer is missing.
pub fn capture(message: &Value, pointers: &[(String, String)]) -> Option<Vec<(String, Value)>> {
    pointers
        .iter()
        .map(|(name, ptr)| Some((name.clone(), message.pointer(ptr)?.clone())))
        .collect()
}

/// `method` of a request or notification.
pub fn method(message: &Value) -> Option<&str> {
    message.get("method")?.as_str()
}

/// A JSON-RPC response: an object with an `id`, no `method`, and a `result` or an `error`
/// ([`Shape`] read tolerantly: a malformed envelope is the judge's to grade).
pub fn is_response(message: &Value) -> bool {
    Shape::of(message).response_id().is_some()
}

/// What the client answered to a request we sent, for `[[step.on]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// `selected` with an optionId the request offered, and that option's kind (in *that*
    /// request; `None` if the offered option has no string kind).
    Selected {
        option_id: String,
        kind: Option<String>,
    },
    /// `selected` with an optionId the request did not offer.
    Unoffered { option_id: String },
    /// `{"outcome":{"outcome":"cancelled"}}`.
    Cancelled,
    /// A JSON-RPC error response.
    Error,
    /// Anything else (a result of another shape): only `otherwise` fits.
    Other,
}

impl Answer {
    /// Reads a response to a request whose params offered `offered` (its `options` array as sent).
    pub fn of(response: &Value, offered: Option<&Value>) -> Answer {
        if response.get("error").is_some() {
            return Answer::Error;
        }
        let Some(outcome) = response.pointer("/result/outcome") else {
            return Answer::Other;
        };
        match outcome.get("outcome").and_then(Value::as_str) {
            Some("cancelled") => Answer::Cancelled,
            Some("selected") => {
                let Some(option_id) = outcome.get("optionId").and_then(Value::as_str) else {
                    return Answer::Other;
                };
                let option = offered.and_then(Value::as_array).and_then(|opts| {
                    opts.iter()
                        .find(|o| o.get("optionId").and_then(Value::as_str) == Some(option_id))
                });
                match option {
                    Some(o) => Answer::Selected {
                        option_id: option_id.to_owned(),
                        kind: o.get("kind").and_then(Value::as_str).map(str::to_owned),
                    },
                    None => Answer::Unoffered {
                        option_id: option_id.to_owned(),
                    },
                }
            }
            _ => Answer::Other,
        }
    }

    /// Whether an `on` case fits this answer.
    pub fn fits(&self, when: &When) -> bool {
        match (when, self) {
            (When::Otherwise, _) => true,
            (When::Selected(kinds), Answer::Selected { kind: Some(k), .. }) => kinds.contains(k),
            (When::Option(ids), Answer::Selected { option_id, .. }) => ids.contains(option_id),
            (When::Cancelled, Answer::Cancelled)
            | (When::Unoffered, Answer::Unoffered { .. })
            | (When::Error, Answer::Error) => true,
            _ => false,
        }
    }

    /// Short description for transcript notes and messages.
    pub fn describe(&self) -> String {
        match self {
            Answer::Selected { option_id, kind } => format!(
                "selected {option_id:?} ({})",
                kind.as_deref().unwrap_or("no kind")
            ),
            Answer::Unoffered { option_id } => format!("selected unoffered {option_id:?}"),
            Answer::Cancelled => "cancelled".into(),
            Answer::Error => "error".into(),
            Answer::Other => "other".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subset_matching() {
        let msg = json!({"jsonrpc":"2.0","id":3,"params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}],"n":1}});
        assert!(matches(&json!({}), &msg));
        assert!(matches(&json!({"params":{"sessionId":"s"}}), &msg));
        assert!(matches(&json!({"params":{"n":1.0}}), &msg));
        assert!(matches(
            &json!({"params":{"prompt":[{"type":"text"}]}}),
            &msg
        ));
        assert!(!matches(&json!({"params":{"sessionId":"t"}}), &msg));
        // Arrays: equal length.
        assert!(!matches(&json!({"params":{"prompt":[]}}), &msg));
        // A missing key does not match null.
        assert!(!matches(&json!({"params":{"missing":null}}), &msg));
        assert!(!matches(&json!({"id":"3"}), &msg));
    }

    #[test]
    fn captures_need_every_pointer() {
        let msg = json!({"params":{"a":1,"b":[true]}});
        let want = vec![
            ("x".into(), "/params/a".into()),
            ("y".into(), "/params/b/0".into()),
        ];
        assert_eq!(
            capture(&msg, &want),
            Some(vec![("x".into(), json!(1)), ("y".into(), json!(true))])
        );
        assert_eq!(capture(&msg, &[("z".into(), "/nope".into())]), None);
    }

    #[test]
    fn message_shapes() {
        assert!(is_response(&json!({"id":0,"result":null})));
        assert!(is_response(&json!({"id":0,"error":{}})));
        assert!(!is_response(&json!({"id":0,"method":"x"})));
        assert!(!is_response(&json!({"id":0})));
        assert_eq!(
            method(&json!({"method":"session/new"})),
            Some("session/new")
        );
    }

    #[test]
    fn answers_are_classified_against_the_offered_options() {
        let offered = json!([
            {"optionId":"a","kind":"allow_always"},
            {"optionId":"b","kind":"allow_always"},
            {"optionId":"cancel","kind":"reject_once"}
        ]);
        let sel =
            |id: &str| json!({"id":0,"result":{"outcome":{"outcome":"selected","optionId":id}}});
        let a = Answer::of(&sel("b"), Some(&offered));
        assert_eq!(
            a,
            Answer::Selected {
                option_id: "b".into(),
                kind: Some("allow_always".into())
            }
        );
        assert!(a.fits(&When::Selected(vec!["allow_always".into()])));
        assert!(a.fits(&When::Option(vec!["b".into()])));
        assert!(!a.fits(&When::Option(vec!["a".into()])));
        assert!(!a.fits(&When::Cancelled));

        // qwen's option id `cancel` is an option, not the cancelled outcome.
        let c = Answer::of(&sel("cancel"), Some(&offered));
        assert!(c.fits(&When::Selected(vec!["reject_once".into()])));
        assert!(!c.fits(&When::Cancelled));

        let u = Answer::of(&sel("zzz"), Some(&offered));
        assert_eq!(
            u,
            Answer::Unoffered {
                option_id: "zzz".into()
            }
        );
        assert!(u.fits(&When::Unoffered));
        assert!(!u.fits(&When::Option(vec!["zzz".into()])));

        let x = Answer::of(
            &json!({"id":0,"result":{"outcome":{"outcome":"cancelled"}}}),
            Some(&offered),
        );
        assert!(x.fits(&When::Cancelled) && x.fits(&When::Otherwise));

        let e = Answer::of(
            &json!({"id":0,"error":{"code":-1,"message":"no"}}),
            Some(&offered),
        );
        assert!(e.fits(&When::Error));

        // A flat (malformed) outcome fits only `otherwise`.
        let m = Answer::of(
            &json!({"id":0,"result":{"outcome":"selected","optionId":"a"}}),
            Some(&offered),
        );
        assert_eq!(m, Answer::Other);
        assert!(!m.fits(&When::Selected(vec!["allow_always".into()])));
    }
}
