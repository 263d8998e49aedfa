//! `schema` — every ACP message validates against the official v1 JSON Schema (docs/architecture.md §3;
//! R3, R4, R85).
//!
//! Requirement: every message the client sends validates against the schema of its method and
//! direction (request `params`, notification `params`, and the `result` of its responses to agent
//! requests), generated from `agent-client-protocol-schema` ([`SCHEMA_VERSION`]); an unknown
//! non-extension method is a violation too.
//!
//! Every agent frame that the harness did not announce as a deliberate fault must validate as
//! well; a violation there is graded `error` — a bug in our fake agent or scenario, never the
//! client's — and wins over client failures, because the case then proves nothing.
//!
//! Envelope problems (not JSON, no `jsonrpc`, …) belong to the `jsonrpc` check and are not repeated
//! here; error responses are envelope-checked only. `_`-prefixed methods are extensions and are
//! checked by envelope only. Gotcha G3 (`null` for empty results) is tolerated.
//!
//! [`SCHEMA_VERSION`]: crate::acp_schema::SCHEMA_VERSION

use super::{Check, Finding, Problems};
use crate::acp_schema::{PayloadKind, Validation, validate, wrong_message_kind};
use crate::record::CaseRecord;
use crate::wire_model::{MsgKind, ResponseBody, Side, WireModel, WireMsg};

pub struct Schema;

impl Check for Schema {
    fn id(&self) -> &'static str {
        "schema"
    }

    fn rules(&self) -> &'static [u16] {
        &[3, 4, 85]
    }

    fn requirement(&self) -> &'static str {
        "Every message the client sends validates against the ACP v1 JSON Schema for its method."
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut problems = Problems::new();
        for msg in &model.msgs {
            if msg.from == Side::Agent && msg.fault.is_some() {
                continue;
            }
            let (what, verdict) = match &msg.kind {
                MsgKind::Invalid { reason } => {
                    if msg.from == Side::Agent {
                        problems.error(
                            format!(
                                "harness bug: our fake agent sent an invalid frame #{}: {reason}.",
                                msg.index
                            ),
                            &[msg.index],
                        );
                    }
                    continue;
                }
                MsgKind::Request { method, .. } => (
                    format!("{method} request params"),
                    validate(msg.from, PayloadKind::RequestParams, method, msg.params()),
                ),
                MsgKind::Notification { method } => (
                    format!("{method} notification params"),
                    // A compact frame (the bulk of updates) is parsed for the moment.
                    validate(
                        msg.from,
                        PayloadKind::NotificationParams,
                        method,
                        msg.params_now().as_deref(),
                    ),
                ),
                MsgKind::Response {
                    body: ResponseBody::Result(result),
                    ..
                } => {
                    let Some(method) = model.request_msg_of(msg).and_then(WireMsg::method) else {
                        continue; // unpaired: the jsonrpc check reports it
                    };
                    (
                        format!("result of {method}"),
                        validate(msg.from, PayloadKind::Result, method, Some(result)),
                    )
                }
                MsgKind::Response { .. } => continue,
            };
            let problem = match verdict {
                Validation::Valid | Validation::Extension => continue,
                Validation::UnknownMethod => match wrong_kind(msg) {
                    // An ACP method sent as the wrong kind of message: jsonrpc grades it too.
                    Some(why) => format!("{what}: {why}"),
                    None => format!(
                        "{what}: not an ACP v1 {} → {} method",
                        msg.from.as_str(),
                        msg.from.peer().as_str()
                    ),
                },
                Validation::Invalid(errors) => format!("{what}: {}", errors.join("; ")),
            };
            match msg.from {
                Side::Client => problems.fail(
                    4,
                    format!(
                        "client frame #{} violates the schema: {problem}.",
                        msg.index
                    ),
                    &[msg.index],
                ),
                Side::Agent => problems.error(
                    format!(
                        "harness bug: our fake agent sent an invalid frame #{}: {problem}.",
                        msg.index
                    ),
                    &[msg.index],
                ),
            }
        }
        problems.finish("")
    }
}

/// "sent as a request, but `session/cancel` is a notification" for a request or notification
/// whose method ACP v1 defines only as the other kind (in its direction).
pub fn wrong_kind(msg: &WireMsg<'_>) -> Option<String> {
    let (kind, method) = match msg.kind {
        MsgKind::Request { method, .. } => (PayloadKind::RequestParams, method),
        MsgKind::Notification { method } => (PayloadKind::NotificationParams, method),
        _ => return None,
    };
    wrong_message_kind(msg.from, kind, method)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, assert_grade, opts3};
    use acp_vocab::note::FaultKind;
    use serde_json::json;

    fn base() -> Case {
        let c = Case::wire_only();
        c.handshake();
        c.prompt();
        c.permission(json!(0), json!({"toolCallId":"c","kind":"edit"}), opts3());
        c
    }

    #[test]
    fn valid_permission_response_passes() {
        let c = base();
        c.select(json!(0), "once");
        c.prompt_result("end_turn");
        assert_eq!(c.grade(&Schema), Finding::pass());
    }

    #[test]
    fn invalid_permission_response_fails_with_path() {
        let c = base();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected"}}}));
        let f = c.grade(&Schema);
        assert_grade(
            &f,
            Grade::Fail,
            "result of session/request_permission: /outcome: \"optionId\" is a required property",
        );
        let c = base();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"result":{"outcome":"allow"}}));
        assert_grade(&c.grade(&Schema), Grade::Fail, "/outcome");
    }

    #[test]
    fn client_request_and_notification_are_validated() {
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1.0.0"}}));
        assert_grade(&c.grade(&Schema), Grade::Fail, "/protocolVersion");
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{}}));
        assert_grade(
            &c.grade(&Schema),
            Grade::Fail,
            "\"sessionId\" is a required property",
        );
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","method":"session/stop","params":{"sessionId":"s"}}));
        assert_grade(
            &c.grade(&Schema),
            Grade::Fail,
            "not an ACP v1 client → agent method",
        );
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","method":"_zed/ping","params":{"anything":true}}));
        assert_eq!(c.grade(&Schema).grade, Grade::Pass);
    }

    #[test]
    fn g3_null_write_result_passes() {
        let c = Case::wire_only();
        c.handshake();
        c.a2c(json!({"jsonrpc":"2.0","id":5,"method":"fs/write_text_file","params":{"sessionId":"ses_1","path":"/tmp/case/work/a","content":"x"}}));
        c.c2a(json!({"jsonrpc":"2.0","id":5,"result":null}));
        assert_eq!(c.grade(&Schema).grade, Grade::Pass);
    }

    #[test]
    fn invalid_agent_frame_is_a_harness_error() {
        let c = base();
        let bad = c.update(json!({"sessionUpdate":"telepathy"}));
        c.select(json!(0), "bogus-but-schema-valid");
        c.c2a(json!({"jsonrpc":"2.0","id":0,"result":{}}));
        let f = c.grade(&Schema);
        assert_grade(
            &f,
            Grade::Error,
            &format!("harness bug: our fake agent sent an invalid frame #{bad}"),
        );
        // The client's own violation is still listed.
        assert!(f.message.contains("[fail] client frame"), "{}", f.message);
        assert!(f.frames.contains(&bad));
    }

    #[test]
    fn announced_fault_frames_are_not_validated() {
        let c = base();
        c.fault_next(FaultKind::Invalid, 1);
        c.update(json!({"sessionUpdate":"telepathy"}));
        c.fault_next(FaultKind::Raw, 1);
        c.a2c_raw(b"not json");
        c.select(json!(0), "once");
        assert_eq!(c.grade(&Schema).grade, Grade::Pass);
    }
}
