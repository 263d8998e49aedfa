//! `initialize` — the client opens each connection with `initialize` and keeps to what the two
//! sides negotiated (R9, R10, R12, R16, R17, R20, R23, R25, R28, R34, R35, R36).
//!
//! Requirement, per agent connection:
//! * the client's first message is an `initialize` request carrying an integer `protocolVersion`
//!   (R9, R12), with `clientInfo {name, version}` (R10, R17: SHOULD, so `warn`);
//! * no `session/*` message goes out before the agent has answered `initialize` successfully
//!   (R23, R35), and `initialize` is not sent again after that (`warn`: the spec defines one
//!   initialization per connection);
//! * the client calls nothing the agent did not advertise (R16: omitted = unsupported):
//!   `session/load` without `loadSession` (R25); `session/resume|close|list|delete` without the
//!   matching `sessionCapabilities` (R28); `logout` without `auth.logout` (R20); HTTP/SSE MCP
//!   servers without `mcpCapabilities.http/sse` (R34); image, audio or embedded-resource prompt
//!   content without the matching `promptCapabilities` (R36);
//! * its capabilities are honest: a client that advertised `fs.readTextFile`, `fs.writeTextFile`
//!   or `terminal` does not answer that method with `-32601 Method not found`.
//!
//! Not applicable when the client sent nothing on the wire.

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use serde_json::Value;

use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use crate::wire_model::{MsgKind, ResponseBody, Side, WireModel, WireMsg};

pub struct Initialize;

impl Check for Initialize {
    fn id(&self) -> &'static str {
        "initialize"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[
            R9, R10, R12, R16, R17, R20, R23, R25, R28, R34, R35, R36, R197,
        ]
    }

    fn requirement(&self) -> &'static str {
        "Each connection starts with one initialize; no session message before its answer; only advertised methods are called, and advertised client capabilities are implemented."
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut conns: Vec<u32> = model
            .msgs
            .iter()
            .filter(|m| m.from == Side::Client)
            .map(|m| m.conn)
            .collect();
        conns.sort_unstable();
        conns.dedup();
        if conns.is_empty() {
            return Finding::not_applicable("client sent nothing on the wire");
        }
        let mut problems = Problems::new();
        for conn in conns {
            let msgs: Vec<&WireMsg<'_>> = model.msgs.iter().filter(|m| m.conn == conn).collect();
            check_handshake(model, &msgs, &mut problems);
            check_advertised(model, conn, &msgs, &mut problems);
            check_honest(model, conn, &msgs, &mut problems);
        }
        problems.finish("")
    }
}

/// `initialize` first, once, complete before any session message.
fn check_handshake(model: &WireModel<'_>, msgs: &[&WireMsg<'_>], problems: &mut Problems) {
    let mut client = msgs.iter().filter(|m| m.from == Side::Client);
    let Some(first) = client.next() else { return };
    if matches!(first.kind, MsgKind::Invalid { .. }) {
        return; // not JSON-RPC: the jsonrpc check reports it
    }
    let init = if first.is_request_for(Method::Initialize) {
        Some(*first)
    } else {
        problems.fail(
            R9,
            format!(
                "the client's first message on connection {} is #{} ({}), not an initialize request (R9).",
                first.conn,
                first.index,
                first.method().unwrap_or("a response")
            ),
            &[first.index],
        );
        msgs.iter()
            .find(|m| m.from == Side::Client && m.is_request_for(Method::Initialize))
            .copied()
    };
    let Some(init) = init else { return };
    check_params(init, problems);
    // When initialization completed: the first successful response to an initialize request.
    let completed = msgs
        .iter()
        .filter(|m| m.from == Side::Client && m.is_request_for(Method::Initialize))
        .find_map(|request| {
            model
                .answers_to(request.index)
                .into_iter()
                .find(|&a| model.msg(a).is_some_and(|r| r.result().is_some()))
        });
    for m in msgs.iter().filter(|m| m.from == Side::Client) {
        let Some(method) = m.method() else { continue };
        if method.starts_with("session/") && completed.is_none_or(|done| m.index < done) {
            let why = match completed {
                Some(done) => format!("before the agent answered initialize (#{done})"),
                None => "although the agent never answered initialize successfully".to_owned(),
            };
            let mut frames = vec![init.index, m.index];
            frames.extend(completed);
            problems.fail(
                if method == Method::SessionPrompt.as_str() { R35 } else { R23 },
                format!(
                    "the client sent {method} #{} {why}. Expected initialization to complete first (R23, R35).",
                    m.index
                ),
                &frames,
            );
        }
        if method == Method::Initialize.as_str()
            && m.is_request()
            && completed.is_some_and(|done| m.index > done)
        {
            problems.warn(
                R197,
                format!(
                    "the client sent initialize again (#{}) after the connection was initialized.",
                    m.index
                ),
                &[init.index, m.index],
            );
        }
    }
}

/// `protocolVersion` (an integer) and `clientInfo`.
fn check_params(init: &WireMsg<'_>, problems: &mut Problems) {
    let params = init.params();
    let version = params.and_then(|p| p.get("protocolVersion"));
    if !version.is_some_and(|v| v.is_u64()) {
        problems.fail(
            R12,
            format!(
                "initialize #{} has protocolVersion {}. Expected the latest protocol version the client supports, an integer (R12).",
                init.index,
                version.map_or("missing".to_owned(), Value::to_string)
            ),
            &[init.index],
        );
    }
    let info = params.and_then(|p| p.get("clientInfo"));
    let named = info.is_some_and(|i| {
        i.get("name").is_some_and(Value::is_string)
            && i.get("version").is_some_and(Value::is_string)
    });
    if !named {
        problems.warn(
            R10,
            format!(
                "initialize #{} has no clientInfo with name and version (R10, R17 SHOULD).",
                init.index
            ),
            &[init.index],
        );
    }
}

/// A capability path under the agent's `initialize` result that must be present and non-null
/// (`true` for booleans) before the client may use what it stands for.
fn advertised(model: &WireModel<'_>, conn: u32, pointer: &str) -> bool {
    match model
        .agent_init(conn)
        .and_then(|r| r.pointer(&format!("/agentCapabilities{pointer}")))
    {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(_) => true,
    }
}

/// Methods and prompt content the agent did not advertise.
fn check_advertised(
    model: &WireModel<'_>,
    conn: u32,
    msgs: &[&WireMsg<'_>],
    problems: &mut Problems,
) {
    if model.agent_init(conn).is_none() {
        return; // no capabilities known: the handshake problems say why
    }
    for m in msgs
        .iter()
        .filter(|m| m.from == Side::Client && m.is_request())
    {
        let Some(method) = m.method() else { continue };
        let needs = match Method::parse(method) {
            Some(Method::SessionLoad) => Some(("/loadSession", R25)),
            Some(Method::SessionResume) => Some(("/sessionCapabilities/resume", R28)),
            Some(Method::SessionClose) => Some(("/sessionCapabilities/close", R28)),
            Some(Method::SessionList) => Some(("/sessionCapabilities/list", R28)),
            Some(Method::SessionDelete) => Some(("/sessionCapabilities/delete", R28)),
            Some(Method::Logout) => Some(("/auth/logout", R20)),
            _ => None,
        };
        if let Some((pointer, rule)) = needs {
            if !advertised(model, conn, pointer) {
                problems.fail(
                    rule,
                    format!(
                        "the client called {method} (#{}) although the agent did not advertise agentCapabilities{pointer} ({rule}).",
                        m.index
                    ),
                    &[m.index],
                );
            }
        }
        let params = m.params();
        if matches!(
            Method::parse(method),
            Some(Method::SessionNew | Method::SessionLoad | Method::SessionResume)
        ) {
            let servers = params
                .and_then(|p| p.get("mcpServers"))
                .and_then(Value::as_array);
            for server in servers.into_iter().flatten() {
                let Some(kind @ ("http" | "sse")) = server.get("type").and_then(Value::as_str)
                else {
                    continue;
                };
                let pointer = format!("/mcpCapabilities/{kind}");
                if !advertised(model, conn, &pointer) {
                    problems.fail(
                        R34,
                        format!(
                            "{method} #{} lists an {kind} MCP server although the agent did not advertise agentCapabilities{pointer} (R34).",
                            m.index
                        ),
                        &[m.index],
                    );
                }
            }
        }
        if method == Method::SessionPrompt.as_str() {
            let blocks = params
                .and_then(|p| p.get("prompt"))
                .and_then(Value::as_array);
            for block in blocks.into_iter().flatten() {
                let capability = match block.get("type").and_then(Value::as_str) {
                    Some("image") => "image",
                    Some("audio") => "audio",
                    Some("resource") => "embeddedContext",
                    _ => continue,
                };
                let pointer = format!("/promptCapabilities/{capability}");
                if !advertised(model, conn, &pointer) {
                    problems.fail(
                        R36,
                        format!(
                            "session/prompt #{} sends {} content although the agent did not advertise agentCapabilities{pointer} (R36).",
                            m.index,
                            block.get("type").and_then(Value::as_str).unwrap_or("?")
                        ),
                        &[m.index],
                    );
                }
            }
        }
    }
}

/// A client method the client advertised is not answered "Method not found".
fn check_honest(model: &WireModel<'_>, conn: u32, msgs: &[&WireMsg<'_>], problems: &mut Problems) {
    let Some(init) = model.client_init(conn) else {
        return;
    };
    let claims = |pointer: &str| init.pointer(pointer).and_then(Value::as_bool) == Some(true);
    for m in msgs
        .iter()
        .filter(|m| m.from == Side::Agent && m.is_request())
    {
        let Some(method) = m.method() else { continue };
        let capability = match Method::parse(method) {
            Some(Method::FsReadTextFile) => "/clientCapabilities/fs/readTextFile",
            Some(Method::FsWriteTextFile) => "/clientCapabilities/fs/writeTextFile",
            _ if method.starts_with("terminal/") => "/clientCapabilities/terminal",
            _ => continue,
        };
        if !claims(capability) {
            continue;
        }
        for answer in model.answers_to(m.index) {
            let not_found = model.msg(answer).is_some_and(|r| {
                matches!(
                    r.kind,
                    MsgKind::Response {
                        body: ResponseBody::Error { code: -32601, .. },
                        ..
                    }
                )
            });
            if not_found {
                problems.fail(
                    R16,
                    format!(
                        "the client advertised {} in initialize but answered {method} #{} with -32601 Method not found (#{answer}). Expected advertised capabilities to be implemented (R16).",
                        capability.trim_start_matches("/clientCapabilities/").replace('/', "."),
                        m.index
                    ),
                    &[m.index, answer],
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, WS, assert_grade};
    use serde_json::json;

    #[test]
    fn the_usual_handshake_passes() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        assert_eq!(c.grade(&Initialize), Finding::pass());
    }

    #[test]
    fn nothing_sent_is_not_applicable() {
        let c = Case::new();
        assert_eq!(c.grade(&Initialize).grade, Grade::NotApplicable);
    }

    #[test]
    fn session_new_before_the_initialize_answer_fails() {
        let c = Case::wire_only();
        c.c2a(
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
            "clientInfo":{"name":"t","version":"1"}}}),
        );
        let early = c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        let answer = c.a2c(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}));
        let f = c.grade(&Initialize);
        assert_grade(
            &f,
            Grade::Fail,
            &format!("sent session/new #{early} before the agent answered initialize (#{answer})"),
        );
    }

    #[test]
    fn a_session_message_first_fails() {
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        let f = c.grade(&Initialize);
        assert_grade(&f, Grade::Fail, "not an initialize request (R9)");
    }

    #[test]
    fn missing_client_info_warns_and_bad_version_fails() {
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}));
        assert_grade(&c.grade(&Initialize), Grade::Warn, "no clientInfo");
        let c = Case::wire_only();
        c.c2a(
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1.0",
            "clientInfo":{"name":"t","version":"1"}}}),
        );
        assert_grade(
            &c.grade(&Initialize),
            Grade::Fail,
            "protocolVersion \"1.0\"",
        );
    }

    #[test]
    fn unadvertised_methods_and_content_fail() {
        let c = Case::wire_only();
        c.handshake();
        c.c2a(json!({"jsonrpc":"2.0","id":5,"method":"session/load","params":{"sessionId":SID,"cwd":WS,"mcpServers":[]}}));
        c.c2a(
            json!({"jsonrpc":"2.0","id":6,"method":"session/prompt","params":{"sessionId":SID,
            "prompt":[{"type":"image","data":"AA==","mimeType":"image/png"}]}}),
        );
        let f = c.grade(&Initialize);
        assert_grade(&f, Grade::Fail, "session/load");
        assert!(f.message.contains("loadSession (R25)"), "{}", f.message);
        assert!(
            f.message.contains("promptCapabilities/image (R36)"),
            "{}",
            f.message
        );
    }

    #[test]
    fn advertised_fs_answered_method_not_found_fails() {
        let c = Case::wire_only();
        c.handshake();
        let req = c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"fs/write_text_file",
            "params":{"sessionId":SID,"path":"/tmp/case/work/a","content":"x"}}));
        c.c2a(json!({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}));
        let f = c.grade(&Initialize);
        assert_grade(&f, Grade::Fail, "advertised fs.writeTextFile");
        assert!(f.frames.contains(&req));
        // Not advertised: a refusal is honest.
        let c = Case::wire_only();
        c.handshake();
        c.a2c(json!({"jsonrpc":"2.0","id":7,"method":"terminal/create",
            "params":{"sessionId":SID,"command":"ls"}}));
        c.c2a(json!({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}));
        assert_eq!(c.grade(&Initialize).grade, Grade::Pass);
    }
}
