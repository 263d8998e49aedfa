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
//! An agent request or notification whose method lies outside every ACP namespace (neither
//! `_`-prefixed nor of the form `session/…`, `fs/…`, `terminal/…`, `$/…`, …) is foreign traffic a
//! real agent sends — qwen-code 0.21.10 sends the request `craft/drainMidTurnQueue` after every
//! tool and the notifications `qwen/notify/session/*` — not a bug of our fake agent: the client
//! must answer such a request with an error (`unknown-messages`, `jsonrpc`), and this check
//! leaves it alone. A method of an ACP namespace that the schema does not define (a typo such as
//! `session/updat`) is still our bug.
//!
//! [`SCHEMA_VERSION`]: crate::acp_schema::SCHEMA_VERSION

use crate::rules::{RuleId, id::*};
use std::collections::BTreeSet;
use std::sync::OnceLock;

use acp_vocab::split_work;

use super::{Check, Finding, Problems};
use crate::acp_schema::{PayloadKind, Validation, validate, wrong_message_kind};
use crate::record::CaseRecord;
use crate::wire_model::{MsgKind, ResponseBody, Side, WireModel, WireMsg};

pub struct Schema;

impl Check for Schema {
    fn id(&self) -> &'static str {
        "schema"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R3, R4, R85, R183]
    }

    fn requirement(&self) -> &'static str {
        "Every message the client sends validates against the ACP v1 JSON Schema for its method."
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut problems = Problems::new();
        let mut invalid = std::collections::BTreeSet::new();
        for Violation { index, text, by } in violations(model) {
            invalid.insert(index);
            match by {
                Side::Client => problems.fail(R4, text, &[index]),
                Side::Agent => problems.error(text, &[index]),
            }
        }
        refused_valid_requests(model, &invalid, &mut problems);
        problems.finish("")
    }
}

/// One frame that breaks the schema (or, from the agent, is not JSON-RPC at all): the problem's
/// whole text, in transcript order with the others.
struct Violation {
    index: usize,
    text: String,
    /// A client's frame fails R4; the agent's is our bug (`error`).
    by: Side,
}

/// Transcripts with at least this many frames are validated on several threads. Below it a
/// thread's start costs more than it saves (and a suite runs `--jobs` cases at once anyway);
/// above it, validating is most of the checks' time: each compact update is parsed for the
/// moment and walked by the validator (docs/performance.md).
const PARALLEL_FROM: usize = 8_192;

/// Threads at most: the frames are split evenly, so more threads than cores only add switches.
const MAX_THREADS: usize = 4;

/// Every violation, in transcript order. A long transcript is cut into consecutive runs of
/// frames, the first validated here and the others on threads of their own
/// ([`split_work::alongside`]); the runs' violations are put back in order, so the result is
/// exactly that of one pass.
fn violations(model: &WireModel<'_>) -> Vec<Violation> {
    let msgs = model.msgs.as_slice();
    let threads = if msgs.len() < PARALLEL_FROM {
        1
    } else {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(MAX_THREADS)
    };
    if threads <= 1 {
        return violations_in(model, msgs);
    }
    let chunk = msgs.len().div_ceil(threads);
    let mut runs = msgs.chunks(chunk);
    let first = runs.next().unwrap_or_default();
    let (mut all, others) = split_work::alongside(
        "schema-check",
        || violations_in(model, first),
        runs,
        |run| violations_in(model, run),
    );
    all.extend(others.into_iter().flatten());
    all
}

/// The violations among `msgs` (a run of `model.msgs`), in order.
fn violations_in(model: &WireModel<'_>, msgs: &[WireMsg<'_>]) -> Vec<Violation> {
    msgs.iter()
        .filter_map(|msg| violation(model, msg))
        .collect()
}

/// What is wrong with one frame, if anything.
fn violation(model: &WireModel<'_>, msg: &WireMsg<'_>) -> Option<Violation> {
    if msg.from == Side::Agent && msg.fault.is_some() {
        return None;
    }
    let (what, verdict) = match &msg.kind {
        MsgKind::Invalid { reason } => {
            return (msg.from == Side::Agent).then(|| Violation {
                index: msg.index,
                text: format!(
                    "harness bug: our fake agent sent an invalid frame #{}: {reason}.",
                    msg.index
                ),
                by: Side::Agent,
            });
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
            // Unpaired: the jsonrpc check reports it.
            let method = model.request_msg_of(msg).and_then(WireMsg::method)?;
            (
                format!("result of {method}"),
                validate(msg.from, PayloadKind::Result, method, Some(result)),
            )
        }
        MsgKind::Response { .. } => return None,
    };
    let problem = match verdict {
        Validation::Valid | Validation::Extension => return None,
        Validation::UnknownMethod
            if msg.from == Side::Agent
                && wrong_kind(msg).is_none()
                && msg.method().is_some_and(is_foreign_method) =>
        {
            return None;
        }
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
    let text = match msg.from {
        Side::Client => format!(
            "client frame #{} violates the schema: {problem}.",
            msg.index
        ),
        Side::Agent => format!(
            "harness bug: our fake agent sent an invalid frame #{}: {problem}.",
            msg.index
        ),
    };
    Some(Violation {
        index: msg.index,
        text,
        by: msg.from,
    })
}

/// R183: an agent request that validates against the schema, answered `-32602 Invalid params`
/// or `-32600 Invalid Request`: the client's own types are stricter than ACP's (codex-acp 1.6's
/// sparse permission request with `"rawInput": null`), and the user never sees the request.
/// Other error codes are a client's answer to what it will not do (a read outside the
/// workspace, an unknown extension method) and are not judged here.
fn refused_valid_requests(
    model: &WireModel<'_>,
    invalid: &std::collections::BTreeSet<usize>,
    problems: &mut Problems,
) {
    for msg in model.msgs.iter().filter(|m| m.from == Side::Client) {
        let Some(code) = msg
            .json()
            .and_then(|j| j.get("error")?.get("code")?.as_i64())
            .filter(|c| matches!(c, -32602 | -32600))
        else {
            continue;
        };
        let Some(request) = model.request_msg_of(msg) else {
            continue;
        };
        let Some(method) = request.method() else {
            continue;
        };
        if request.from != Side::Agent
            || request.fault.is_some()
            || invalid.contains(&request.index)
            || !matches!(
                validate(
                    Side::Agent,
                    PayloadKind::RequestParams,
                    method,
                    request.params()
                ),
                Validation::Valid
            )
        {
            continue;
        }
        let name = if code == -32602 {
            "-32602 Invalid params"
        } else {
            "-32600 Invalid Request"
        };
        problems.fail(
            R183,
            format!(
                "the client answered the agent's {method} request #{} with {name} (#{}), but its params are valid against the ACP v1 schema. Expected the request handled: a client whose own types are stricter than the schema refuses what real agents send.",
                request.index, msg.index
            ),
            &[request.index, msg.index],
        );
    }
}

/// True for a method outside every namespace of ACP v1 and not an `_` extension: its first
/// `/`-separated segment is the first segment of no stable ACP method (`craft/drainMidTurnQueue`,
/// `qwen/notify/session/mode-update`). Such a message is foreign traffic, not a misspelt ACP one.
pub fn is_foreign_method(method: &str) -> bool {
    static NAMESPACES: OnceLock<BTreeSet<String>> = OnceLock::new();
    let namespaces = NAMESPACES.get_or_init(|| {
        crate::surface::stable_methods()
            .into_iter()
            .map(|m| namespace(&m.method).to_owned())
            .collect()
    });
    !method.starts_with('_') && !namespaces.contains(namespace(method))
}

fn namespace(method: &str) -> &str {
    method.split('/').next().unwrap_or(method)
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

    /// A long transcript is validated in runs on several threads: the violations, their order
    /// and the finding are those of one pass over every frame, wherever the runs are cut.
    #[test]
    fn a_long_transcript_validated_in_runs_finds_what_one_pass_finds() {
        let c = base();
        let mut bad = Vec::new();
        for i in 0..PARALLEL_FROM + 100 {
            if i % 1_000 == 7 {
                // Invalid: `status` is not a status word. Scattered over every run.
                bad.push(c.update(json!({
                    "sessionUpdate": "tool_call_update", "toolCallId": "c", "status": 5
                })));
                c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{}}));
            } else {
                c.update(json!({
                    "sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "in_progress"
                }));
            }
        }
        let record = c.record();
        let model = WireModel::new(&record.transcript);
        assert!(model.msgs.len() >= PARALLEL_FROM);
        let in_runs = violations(&model);
        let one_pass = violations_in(&model, &model.msgs);
        let found = |v: &[Violation]| -> Vec<(usize, String, Side)> {
            v.iter().map(|v| (v.index, v.text.clone(), v.by)).collect()
        };
        assert_eq!(found(&in_runs), found(&one_pass));
        // Each bad update, and each client cancel without a sessionId, in transcript order.
        assert_eq!(in_runs.len(), 2 * bad.len());
        assert!(in_runs.windows(2).all(|w| w[0].index < w[1].index));
        let agent: Vec<usize> = in_runs
            .iter()
            .filter(|v| v.by == Side::Agent)
            .map(|v| v.index)
            .collect();
        assert_eq!(agent, bad);
        assert_grade(&c.grade(&Schema), Grade::Error, "harness bug");
    }

    /// codex-acp 1.6's sparse request, `"rawInput": null` (tiann/hapi#1781: a client whose own
    /// schema required the tool input).
    #[test]
    fn a_valid_request_refused_as_invalid_params_fails() {
        let sparse = || {
            let c = Case::wire_only();
            c.handshake();
            c.prompt();
            c.permission(
                json!(0),
                json!({"toolCallId":"c","kind":"execute","status":"pending","rawInput":null}),
                opts3(),
            );
            c
        };
        let c = sparse();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params: rawInput"}}));
        let f = c.grade(&Schema);
        assert_grade(
            &f,
            Grade::Fail,
            "answered the agent's session/request_permission request #",
        );
        assert!(f.message.contains("-32602 Invalid params"), "{}", f.message);
        // Another error code is a refusal this check does not judge.
        let c = sparse();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"no"}}));
        assert_eq!(c.grade(&Schema).grade, Grade::Pass);
        // An invalid request may be refused so: it is our fake agent's error, not the client's.
        let c = Case::wire_only();
        c.handshake();
        c.prompt();
        c.permission(json!(0), json!({"toolCallId":"c"}), json!("not a list"));
        c.c2a(json!({"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"Invalid params"}}));
        assert_eq!(c.grade(&Schema).grade, Grade::Error);
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
    fn foreign_agent_methods_are_not_harness_bugs_but_misspelt_acp_ones_are() {
        let c = base();
        c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"craft/drainMidTurnQueue","params":{"sessionId":"s","todoStopGuardWatchQueuedPrompt":true}}));
        c.a2c(json!({"jsonrpc":"2.0","method":"qwen/notify/session/mode-update","params":{"v":1,"sessionId":"s","currentModeId":"default"}}));
        assert_grade(&c.grade(&Schema), Grade::Pass, "");
        let bad =
            c.a2c(json!({"jsonrpc":"2.0","method":"session/updat","params":{"sessionId":"s"}}));
        assert_grade(
            &c.grade(&Schema),
            Grade::Error,
            &format!("harness bug: our fake agent sent an invalid frame #{bad}"),
        );
        assert!(is_foreign_method("craft/drainMidTurnQueue"));
        assert!(is_foreign_method("qwen/notify/session/prompt-suggestion"));
        for acp in [
            "session/updat",
            "fs/read",
            "$/cancel",
            "initialize",
            "_x/y",
            "terminal/x",
        ] {
            assert!(!is_foreign_method(acp), "{acp}");
        }
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
