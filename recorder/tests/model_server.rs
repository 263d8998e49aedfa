//! The scripted model server over real HTTP on 127.0.0.1: each API, streaming and not, the
//! side calls, model lists, token counts, and the errors for requests a script does not cover.
//! Offline and fast: no agent is launched.

use std::io::{Read, Write};
use std::net::TcpStream;

use acp_recorder::script::Script;
use acp_recorder::server::ModelServer;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
side_text = "A title"
[[step]]
tool = "edit"
args = { file_path = "/p/notes.md", old_string = "helo", new_string = "hello" }
[[step]]
tool = "apply_patch"
input = "*** Begin Patch\n*** End Patch\n"
[[step]]
text = "Fixed the typo."
"#;

struct Reply {
    status: u16,
    headers: String,
    body: String,
}

/// A minimal HTTP/1.1 client: one request, `Connection: close`, chunked bodies decoded.
fn http(addr: std::net::SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Reply {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    let status = head[9..12].parse().unwrap();
    let headers = head.to_ascii_lowercase();
    let body = if headers.contains("transfer-encoding: chunked") {
        let mut out = String::new();
        let mut rest = rest;
        loop {
            let (size, after) = rest.split_once("\r\n").unwrap();
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            out.push_str(&after[..size]);
            rest = &after[size + 2..];
        }
        out
    } else {
        rest.to_string()
    };
    Reply {
        status,
        headers,
        body,
    }
}

/// `data:` payloads of an SSE body, with their `event:` names.
fn events(body: &str) -> Vec<(Option<String>, Value)> {
    body.split("\n\n")
        .filter(|b| !b.trim().is_empty())
        .map(|block| {
            let mut name = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_string());
                }
                if let Some(d) = line.strip_prefix("data: ") {
                    data = Some(if d == "[DONE]" {
                        json!("[DONE]")
                    } else {
                        serde_json::from_str(d).unwrap()
                    });
                }
            }
            (name, data.expect("a data line"))
        })
        .collect()
}

async fn server() -> ModelServer {
    ModelServer::start(Script::parse(SCRIPT, "test").unwrap())
        .await
        .unwrap()
}

fn chat(tool_results: usize, stream: bool) -> Value {
    let mut messages = vec![
        json!({"role": "system", "content": "s"}),
        json!({"role": "user", "content": "fix"}),
    ];
    for n in 0..tool_results {
        messages.push(json!({"role": "assistant", "tool_calls": [{"id": format!("call_{n}")}]}));
        messages
            .push(json!({"role": "tool", "tool_call_id": format!("call_{n}"), "content": "ok"}));
    }
    json!({"model": "fake-model", "stream": stream, "stream_options": {"include_usage": true},
        "messages": messages, "tools": [{"type": "function", "function": {"name": "edit"}}]})
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_chat_whole_and_streamed() {
    let s = server().await;
    let addr = s.addr;
    let r =
        blocking(move || http(addr, "POST", "/v1/chat/completions", Some(&chat(0, false)))).await;
    assert_eq!(r.status, 200);
    let v: Value = serde_json::from_str(&r.body).unwrap();
    let call = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "edit");
    assert_eq!(call["id"], "call_1");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert_eq!(args["old_string"], "helo");
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(v["usage"]["prompt_tokens"], 100);

    let r =
        blocking(move || http(addr, "POST", "/v1/chat/completions", Some(&chat(2, true)))).await;
    assert!(
        r.headers.contains("transfer-encoding: chunked"),
        "{}",
        r.headers
    );
    assert!(r.headers.contains("text/event-stream"));
    let ev = events(&r.body);
    let text: String = ev
        .iter()
        .filter_map(|(_, d)| {
            d.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect();
    assert_eq!(text, "Fixed the typo.");
    assert!(
        ev.iter()
            .any(|(_, d)| d.pointer("/choices/0/finish_reason") == Some(&json!("stop")))
    );
    assert!(
        ev.iter()
            .any(|(_, d)| d.pointer("/usage/total_tokens") == Some(&json!(120)))
    );
    assert_eq!(ev.last().unwrap().1, json!("[DONE]"));
    let seen = s.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].answer, "step 0");
    assert_eq!(seen[1].answer, "step 2");
    assert_eq!(seen[1].tools, ["edit"]);
    assert!(s.failure().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openai_responses_function_and_custom_tools() {
    let s = server().await;
    let addr = s.addr;
    let req = |results: usize, stream: bool| {
        let mut input = vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix"}]}),
        ];
        for n in 0..results {
            input.push(json!({"type": "function_call", "call_id": format!("c{n}")}));
            input.push(
                json!({"type": "function_call_output", "call_id": format!("c{n}"), "output": "ok"}),
            );
        }
        json!({"model": "gpt-5.5", "stream": stream, "input": input,
            "tools": [{"type": "function", "name": "exec_command"}, {"type": "custom", "name": "apply_patch"}]})
    };
    let r = blocking(move || http(addr, "POST", "/v1/responses", Some(&req(1, true)))).await;
    assert_eq!(r.status, 200);
    let ev = events(&r.body);
    assert_eq!(ev[0].0.as_deref(), Some("response.created"));
    let done: Vec<&Value> = ev
        .iter()
        .filter(|(n, _)| n.as_deref() == Some("response.output_item.done"))
        .map(|(_, d)| d)
        .collect();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["item"]["type"], "custom_tool_call");
    assert_eq!(done[0]["item"]["name"], "apply_patch");
    assert_eq!(done[0]["item"]["input"], "*** Begin Patch\n*** End Patch\n");
    assert_eq!(ev.last().unwrap().0.as_deref(), Some("response.completed"));
    assert_eq!(
        ev.last().unwrap().1["response"]["usage"]["output_tokens"],
        20
    );

    let r = blocking(move || http(addr, "POST", "/v1/responses", Some(&req(0, false)))).await;
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["output"][0]["type"], "function_call");
    assert_eq!(v["output"][0]["name"], "edit");
    let r = blocking(move || http(addr, "POST", "/v1/responses", Some(&req(2, false)))).await;
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["output"][0]["content"][0]["text"], "Fixed the typo.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anthropic_messages_count_tokens_and_side_calls() {
    let s = server().await;
    let addr = s.addr;
    let req = |results: usize, stream: bool, tools: bool| {
        let mut messages =
            vec![json!({"role": "user", "content": [{"type": "text", "text": "fix"}]})];
        for n in 0..results {
            messages.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{n}")}]}));
            messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{n}")},
                {"type": "text", "text": "<system-reminder>"}]}));
        }
        let tools = if tools {
            json!([{"name": "Edit"}])
        } else {
            json!([])
        };
        json!({"model": "claude-sonnet-4-5", "stream": stream, "messages": messages, "tools": tools})
    };
    let r = blocking(move || {
        http(
            addr,
            "POST",
            "/v1/messages?beta=true",
            Some(&req(0, true, true)),
        )
    })
    .await;
    let ev = events(&r.body);
    let names: Vec<&str> = ev.iter().filter_map(|(n, _)| n.as_deref()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(ev[1].1["content_block"]["type"], "tool_use");
    assert_eq!(
        ev[1].1["content_block"]["id"],
        "toolu_000000000000000000000001"
    );
    let input: Value =
        serde_json::from_str(ev[2].1["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert_eq!(input["new_string"], "hello");
    assert_eq!(ev[4].1["delta"]["stop_reason"], "tool_use");

    let r = blocking(move || http(addr, "POST", "/v1/messages", Some(&req(2, false, true)))).await;
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["content"][0]["text"], "Fixed the typo.");
    assert_eq!(v["stop_reason"], "end_turn");

    // A request without tools is a side call (a title): the script's side text.
    let r = blocking(move || http(addr, "POST", "/v1/messages", Some(&req(0, false, false)))).await;
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["content"][0]["text"], "A title");

    let r = blocking(move || {
        http(
            addr,
            "POST",
            "/v1/messages/count_tokens?beta=true",
            Some(&json!({"model": "m", "messages": []})),
        )
    })
    .await;
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).unwrap()["input_tokens"],
        100
    );
    let r = blocking(move || http(addr, "GET", "/v1/models", None)).await;
    let v: Value = serde_json::from_str(&r.body).unwrap();
    assert!(
        v["data"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "claude-sonnet-4-5"),
        "{v}"
    );
    // Claude Code 0.85's reachability probe.
    let r = blocking(move || http(addr, "HEAD", "/api/hello", None)).await;
    assert_eq!(r.status, 200);
    // Claude Code 2.1.91's (claude-agent-acp 0.25.3): the base URL itself.
    let r = blocking(move || http(addr, "HEAD", "/", None)).await;
    assert_eq!(r.status, 200);
    let answers: Vec<String> = s.requests().into_iter().map(|r| r.answer).collect();
    assert_eq!(
        answers,
        [
            "step 0",
            "step 2",
            "side",
            "count_tokens",
            "models",
            "hello",
            "hello"
        ]
    );
    assert!(s.failure().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncovered_requests_fail_the_run_and_list_what_was_seen() {
    let s = server().await;
    let addr = s.addr;
    blocking(move || http(addr, "POST", "/v1/chat/completions", Some(&chat(0, false)))).await;
    let r =
        blocking(move || http(addr, "POST", "/v1/chat/completions", Some(&chat(3, true)))).await;
    assert_eq!(r.status, 400);
    let failure = s
        .failure()
        .expect("a step past the script's end fails the run");
    assert!(failure.contains("none for 3 tool results"), "{failure}");
    assert!(
        failure.contains("#0 POST /v1/chat/completions"),
        "{failure}"
    );
    assert!(failure.contains("→ step 0"), "{failure}");

    let s = server().await;
    let addr = s.addr;
    let r = blocking(move || http(addr, "POST", "/v1/embeddings", Some(&json!({})))).await;
    assert_eq!(r.status, 404);
    assert!(
        r.body.contains("no such endpoint POST /v1/embeddings"),
        "{}",
        r.body
    );
    assert!(
        s.failure()
            .unwrap()
            .contains("unknown endpoint POST /v1/embeddings")
    );

    // Freeform input is a Responses-only shape.
    let s = server().await;
    let addr = s.addr;
    let r =
        blocking(move || http(addr, "POST", "/v1/chat/completions", Some(&chat(1, false)))).await;
    assert_eq!(r.status, 400);
    assert!(
        s.failure()
            .unwrap()
            .contains("only the OpenAI Responses API")
    );
    assert!(s.addr.ip().is_loopback());
}
