//! The protocol surface of the pinned ACP schema ([`crate::acp_schema::SCHEMA_VERSION`]): every
//! stable v1 method, who sends it and whether it is a request or a notification, and every
//! `session/update` variant. Read off the official crate itself (its method-name tables and the
//! generated JSON Schema of `SessionNotification`), so that a method or variant a new schema
//! version adds shows up here without anyone retyping a list. Unstable methods (behind the crate's
//! `unstable_*` features, which the harness does not enable) are not part of it.
//!
//! Used by the coverage table (`acp-harness coverage`): each item must be exercised by a scenario
//! or explained.

use acp_vocab::method::Method;
use agent_client_protocol_schema::v1 as acp;
use serde_json::Value;

use crate::acp_schema::{PayloadKind, schema_json, schema_type_name};
use crate::wire_model::Side;

/// Request (answered) or notification (never answered).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MessageKind {
    Request,
    Notification,
}

impl MessageKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Notification => "notification",
        }
    }
}

/// One stable method in one direction.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SurfaceMethod {
    pub method: String,
    /// Who sends it (`$/cancel_request` is listed once per side).
    pub from: Side,
    pub kind: MessageKind,
}

/// Every stable method of the pinned schema, by sender then name.
pub fn stable_methods() -> Vec<SurfaceMethod> {
    let mut out = Vec::new();
    let mut add = |names: Value, sides: &[Side]| {
        let Value::Object(names) = names else {
            return;
        };
        for method in names.values().filter_map(Value::as_str) {
            for &from in sides {
                let kind = if schema_type_name(from, PayloadKind::RequestParams, method).is_some() {
                    MessageKind::Request
                } else {
                    MessageKind::Notification
                };
                out.push(SurfaceMethod {
                    method: method.to_owned(),
                    from,
                    kind,
                });
            }
        }
    };
    // The agent handles what the client sends, and the converse.
    add(to_value(&acp::AGENT_METHOD_NAMES), &[Side::Client]);
    add(to_value(&acp::CLIENT_METHOD_NAMES), &[Side::Agent]);
    add(
        to_value(&acp::PROTOCOL_LEVEL_METHOD_NAMES),
        &[Side::Agent, Side::Client],
    );
    out.sort();
    out.dedup();
    out
}

fn to_value<T: serde::Serialize>(names: &T) -> Value {
    serde_json::to_value(names).unwrap_or(Value::Null)
}

/// Every `sessionUpdate` discriminator value of the pinned schema's `SessionUpdate`, sorted.
pub fn session_update_variants() -> Vec<String> {
    let Some(schema) = schema_json(
        Side::Agent,
        PayloadKind::NotificationParams,
        Method::SessionUpdate.as_str(),
    ) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    collect_discriminated(&schema, &mut out);
    out.sort();
    out.dedup();
    out
}

/// The `const` of `properties.sessionUpdate` in every branch of a schema that declares
/// `discriminator.propertyName = "sessionUpdate"`.
fn collect_discriminated(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let discriminated = map
                .get("discriminator")
                .and_then(|d| d.get("propertyName"))
                .and_then(Value::as_str)
                == Some("sessionUpdate");
            if discriminated {
                for branch in ["oneOf", "anyOf"]
                    .iter()
                    .filter_map(|k| map.get(*k))
                    .filter_map(Value::as_array)
                    .flatten()
                {
                    if let Some(tag) = branch
                        .pointer("/properties/sessionUpdate/const")
                        .and_then(Value::as_str)
                    {
                        out.push(tag.to_owned());
                    }
                }
            }
            for child in map.values() {
                collect_discriminated(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_discriminated(v, out)),
        _ => {}
    }
}

/// True if `variant` is a `sessionUpdate` value of the pinned schema.
pub fn is_known_update(variant: &str) -> bool {
    use std::sync::OnceLock;
    static KNOWN: OnceLock<Vec<String>> = OnceLock::new();
    KNOWN
        .get_or_init(session_update_variants)
        .iter()
        .any(|v| v == variant)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(methods: &[SurfaceMethod], method: &str, from: Side, kind: MessageKind) -> bool {
        methods.contains(&SurfaceMethod {
            method: method.to_owned(),
            from,
            kind,
        })
    }

    #[test]
    fn the_stable_methods_are_read_off_the_schema_crate() {
        let m = stable_methods();
        assert!(has(
            &m,
            "session/prompt",
            Side::Client,
            MessageKind::Request
        ));
        assert!(has(
            &m,
            "session/cancel",
            Side::Client,
            MessageKind::Notification
        ));
        assert!(has(
            &m,
            "session/update",
            Side::Agent,
            MessageKind::Notification
        ));
        assert!(has(
            &m,
            "terminal/create",
            Side::Agent,
            MessageKind::Request
        ));
        assert!(has(
            &m,
            "$/cancel_request",
            Side::Agent,
            MessageKind::Notification
        ));
        assert!(has(
            &m,
            "$/cancel_request",
            Side::Client,
            MessageKind::Notification
        ));
        // Unstable in 1.20.0: not enabled, not listed.
        assert!(!m.iter().any(|s| s.method == "session/fork"));
        // Every method has a schema in the validator's table: the table misses none.
        for s in &m {
            let kind = match s.kind {
                MessageKind::Request => PayloadKind::RequestParams,
                MessageKind::Notification => PayloadKind::NotificationParams,
            };
            assert!(
                schema_type_name(s.from, kind, &s.method).is_some(),
                "no schema for {s:?}"
            );
        }
    }

    #[test]
    fn the_update_variants_come_from_the_discriminator() {
        let v = session_update_variants();
        for known in [
            "agent_message_chunk",
            "tool_call",
            "usage_update",
            "current_mode_update",
        ] {
            assert!(v.iter().any(|x| x == known), "{known} missing from {v:?}");
        }
        assert!(is_known_update("tool_call_update"));
        assert!(!is_known_update("agent_activity_update"));
    }
}
