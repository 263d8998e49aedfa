//! What a JSON-RPC 2.0 message is, decided in one place, two ways:
//!
//! * [`Envelope::classify`] applies the JSON-RPC 2.0 envelope rules (R1–R4, R6, R7): a request,
//!   a notification, a response, an error response, or invalid with the reason. The judge grades
//!   with it.
//! * [`Shape::of`] reads what a message means to be, as a tolerant peer does: a `method` makes
//!   it a call (a request if it has an `id`), no `method` with an `id` and a `result` or `error`
//!   makes it a response. The fake agent, the harness's users, the fuzz driver and the recorder
//!   route messages with it: a client that breaks an envelope rule is graded for that, not left
//!   waiting because its answer went unrecognised.

use serde_json::Value;

/// A message by the JSON-RPC 2.0 envelope rules.
#[derive(Debug, Clone, PartialEq)]
pub enum Envelope<'a> {
    Request {
        id: &'a Value,
        method: &'a str,
    },
    Notification {
        method: &'a str,
    },
    Response {
        id: &'a Value,
        result: &'a Value,
    },
    /// An error response whose `error` has an integer `code` and a string `message`.
    ErrorResponse {
        id: &'a Value,
        code: i64,
        message: &'a str,
        /// The whole `error` object.
        error: &'a Value,
    },
    /// Not a valid JSON-RPC 2.0 message, and why.
    Invalid(String),
}

impl<'a> Envelope<'a> {
    /// Classifies one parsed message by the JSON-RPC 2.0 envelope rules.
    pub fn classify(json: &'a Value) -> Envelope<'a> {
        let invalid = |reason: &str| Envelope::Invalid(reason.to_owned());
        let obj = match json {
            Value::Object(obj) => obj,
            Value::Array(_) => return invalid("a JSON array (batch); ACP v1 has no batches"),
            _ => return invalid("not a JSON object"),
        };
        match obj.get("jsonrpc") {
            Some(Value::String(v)) if v == "2.0" => {}
            Some(other) => {
                return Envelope::Invalid(format!("\"jsonrpc\" is {other}, not \"2.0\""));
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
                None => Envelope::Notification { method },
                Some(id) if id_ok(id) => Envelope::Request { id, method },
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
            (Some(result), None) => Envelope::Response { id, result },
            (None, Some(error)) => {
                let Some(err) = error.as_object() else {
                    return invalid("\"error\" is not an object");
                };
                let Some(code) = err.get("code").and_then(Value::as_i64) else {
                    return invalid("\"error.code\" is not an integer");
                };
                let Some(message) = err.get("message").and_then(Value::as_str) else {
                    return invalid("\"error.message\" is not a string");
                };
                Envelope::ErrorResponse {
                    id,
                    code,
                    message,
                    error,
                }
            }
        }
    }
}

/// What a message means to be, read tolerantly (see the module doc).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape<'a> {
    /// A string `method` and an `id` (any JSON value, `null` included).
    Request { id: &'a Value, method: &'a str },
    /// A string `method` and no `id`.
    Notification { method: &'a str },
    /// No `method`, an `id`, a `result` and no `error`.
    Response { id: &'a Value },
    /// No `method`, an `id` and an `error` (of any shape).
    ErrorResponse { id: &'a Value },
    /// Anything else: not an object, a `method` that is not a string, a response without
    /// `result` or `error`, neither `method` nor `id`.
    Other,
}

impl<'a> Shape<'a> {
    pub fn of(json: &'a Value) -> Shape<'a> {
        let id = json.get("id");
        match (json.get("method"), id) {
            (Some(method), id) => match (method.as_str(), id) {
                (Some(method), Some(id)) => Shape::Request { id, method },
                (Some(method), None) => Shape::Notification { method },
                (None, _) => Shape::Other,
            },
            (None, Some(id)) if json.get("error").is_some() => Shape::ErrorResponse { id },
            (None, Some(id)) if json.get("result").is_some() => Shape::Response { id },
            (None, _) => Shape::Other,
        }
    }

    /// The method of a request or notification.
    pub fn method(self) -> Option<&'a str> {
        match self {
            Shape::Request { method, .. } | Shape::Notification { method } => Some(method),
            _ => None,
        }
    }

    /// A request for `method`.
    pub fn is_request_for(self, method: crate::method::Method) -> bool {
        matches!(self, Shape::Request { method: m, .. } if m == method.as_str())
    }

    /// The id of a response or error response.
    pub fn response_id(self) -> Option<&'a Value> {
        match self {
            Shape::Response { id } | Shape::ErrorResponse { id } => Some(id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Envelope, Shape};
    use serde_json::{Value, json};

    fn kind(v: &Value) -> String {
        match Envelope::classify(v) {
            Envelope::Request { .. } => "request".into(),
            Envelope::Notification { .. } => "notification".into(),
            Envelope::Response { .. } => "response".into(),
            Envelope::ErrorResponse { .. } => "error".into(),
            Envelope::Invalid(why) => format!("invalid: {why}"),
        }
    }

    #[test]
    fn classifies_by_the_envelope_rules() {
        let cases = [
            (json!({"jsonrpc":"2.0","id":1,"method":"m"}), "request"),
            (
                json!({"jsonrpc":"2.0","method":"m","params":{}}),
                "notification",
            ),
            (json!({"jsonrpc":"2.0","id":"x","result":null}), "response"),
            (
                json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"m"}}),
                "error",
            ),
            (
                json!({"id":1,"result":{}}),
                "invalid: no \"jsonrpc\":\"2.0\"",
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"result":{},"error":{}}),
                "invalid: response has both \"result\" and \"error\"",
            ),
            (
                json!({"jsonrpc":"2.0","id":1,"method":"m","result":1}),
                "invalid: has both \"method\" and \"result\"/\"error\"",
            ),
            (
                json!({"jsonrpc":"2.0","id":{},"method":"m"}),
                "invalid: request \"id\" is not a string, number or null",
            ),
            (
                json!([1]),
                "invalid: a JSON array (batch); ACP v1 has no batches",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(kind(&v), want, "{v}");
        }
    }

    #[test]
    fn shape_reads_what_a_message_means_to_be() {
        let shape = |v: Value| format!("{:?}", Shape::of(&v));
        assert_eq!(
            shape(json!({"id":1,"result":{}})),
            "Response { id: Number(1) }"
        );
        assert_eq!(
            shape(json!({"id":1,"result":{},"error":{}})),
            "ErrorResponse { id: Number(1) }"
        );
        assert_eq!(
            shape(json!({"id":null,"method":"m"})),
            "Request { id: Null, method: \"m\" }"
        );
        assert_eq!(
            shape(json!({"method":"m"})),
            "Notification { method: \"m\" }"
        );
        assert_eq!(shape(json!({"id":1,"method":2})), "Other");
        assert_eq!(shape(json!({"id":1})), "Other");
        assert_eq!(shape(json!("x")), "Other");
    }
}
