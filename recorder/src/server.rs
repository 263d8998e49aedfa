//! The scripted model server: OpenAI Chat Completions, OpenAI Responses and Anthropic Messages,
//! streaming (SSE over `Transfer-Encoding: chunked`) and not, plus model lists and Anthropic
//! token counts, answering from a [`Script`]. It binds 127.0.0.1 on a free port and refuses any
//! other peer. Every request is logged ([`ModelRequest`]); a request the script does not cover
//! (an unknown endpoint, a step past the script's end, a body that is not JSON) is answered with
//! an error *and* remembered as the run's failure, so the recorder stops at once and says which
//! requests it saw.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context, Result};
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::{Method, StatusCode, Uri, header};
use axum::response::Response;
use serde::Serialize;
use serde_json::{Value, json};

use crate::script::{Script, Step, ToolBody};

mod replies;
use replies::{
    chat_message, chat_stream, messages_object, messages_stream, responses_object, responses_stream,
};

/// Which model API a request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    OpenaiChat,
    OpenaiResponses,
    AnthropicMessages,
    AnthropicCountTokens,
    Models,
    /// Claude Code's reachability probe (`HEAD …/api/hello`; Claude Code 2.1.91, bundled by
    /// claude-agent-acp 0.25.3, sends `HEAD /`), answered 200 with no body.
    Hello,
}

/// One request the agent made to the model server.
#[derive(Debug, Clone, Serialize)]
pub struct ModelRequest {
    /// Milliseconds since the server started.
    pub t_ms: u64,
    pub method: String,
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Tool names the request offered (the agent's tool set at this version).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_results: Option<usize>,
    /// How it was answered: `step 0`, `side`, `models`, `count_tokens`, or `error: …`.
    pub answer: String,
}

impl ModelRequest {
    /// One line for error messages.
    pub fn summary(&self) -> String {
        let mut s = format!("{} {}", self.method, self.path);
        if let Some(model) = &self.model {
            s += &format!(" model={model}");
        }
        if let Some(n) = self.tool_results {
            s += &format!(" tool_results={n}");
        }
        if !self.tools.is_empty() {
            s += &format!(" tools={}", self.tools.len());
        }
        s + &format!(" → {}", self.answer)
    }
}

struct Shared {
    script: Script,
    started: Instant,
    log: Mutex<Vec<ModelRequest>>,
    failure: Mutex<Option<String>>,
    ids: AtomicU64,
}

impl Shared {
    fn next_id(&self) -> u64 {
        self.ids.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn fail(&self, message: String) {
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert(message);
    }

    fn seen(&self) -> String {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        if log.is_empty() {
            return "  (none)".into();
        }
        log.iter()
            .enumerate()
            .map(|(n, r)| format!("  #{n} {}", r.summary()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A running model server.
pub struct ModelServer {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl ModelServer {
    /// Binds 127.0.0.1 on a free port and serves `script` (already filled).
    pub async fn start(script: Script) -> Result<ModelServer> {
        let shared = Arc::new(Shared {
            script,
            started: Instant::now(),
            log: Mutex::new(Vec::new()),
            failure: Mutex::new(None),
            ids: AtomicU64::new(0),
        });
        let app = Router::new()
            .fallback(handle)
            .layer(DefaultBodyLimit::max(256 << 20))
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("model server: cannot bind 127.0.0.1")?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
            })
            .await;
        });
        Ok(ModelServer {
            addr,
            shared,
            stop: Some(stop),
            task,
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests seen so far.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.shared
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The first request the script did not cover, if any.
    pub fn failure(&self) -> Option<String> {
        self.shared
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The requests seen, one a line, for error messages.
    pub fn seen(&self) -> String {
        self.shared.seen()
    }

    /// Stops serving (open connections are dropped after a short grace).
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if tokio::time::timeout(std::time::Duration::from_secs(2), &mut self.task)
            .await
            .is_err()
        {
            self.task.abort();
        }
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn endpoint(method: &Method, path: &str) -> Option<Api> {
    let path = path.trim_end_matches('/');
    if method == Method::POST {
        if path.ends_with("/chat/completions") {
            return Some(Api::OpenaiChat);
        }
        if path.ends_with("/responses") {
            return Some(Api::OpenaiResponses);
        }
        if path.ends_with("/messages/count_tokens") {
            return Some(Api::AnthropicCountTokens);
        }
        if path.ends_with("/messages") {
            return Some(Api::AnthropicMessages);
        }
    }
    if (method == Method::HEAD || method == Method::GET) && path.ends_with("/api/hello") {
        return Some(Api::Hello);
    }
    if method == Method::HEAD && path.is_empty() {
        return Some(Api::Hello);
    }
    if method == Method::GET && (path.ends_with("/models") || path.contains("/models/")) {
        return Some(Api::Models);
    }
    None
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    method: Method,
    uri: Uri,
    body: Bytes,
) -> Response {
    if !peer.ip().is_loopback() {
        return error(
            StatusCode::FORBIDDEN,
            "the model server accepts only 127.0.0.1",
        );
    }
    let mut req = ModelRequest {
        t_ms: shared.started.elapsed().as_millis() as u64,
        method: method.to_string(),
        path: uri.path().to_string(),
        api: endpoint(&method, uri.path()),
        model: None,
        stream: None,
        tools: Vec::new(),
        tool_results: None,
        answer: String::new(),
    };
    let response = answer(&shared, &mut req, &uri, &body);
    if req.answer.starts_with("error") {
        let message = format!(
            "the model script `{}` does not cover model request #{} ({}); requests seen:\n{}\n  #{} {}",
            shared.script.name,
            shared.log.lock().map(|l| l.len()).unwrap_or(0),
            req.answer,
            shared.seen(),
            shared.log.lock().map(|l| l.len()).unwrap_or(0),
            req.summary()
        );
        shared.fail(message);
    }
    shared
        .log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(req);
    response
}

fn answer(shared: &Shared, req: &mut ModelRequest, uri: &Uri, body: &Bytes) -> Response {
    let Some(api) = req.api else {
        req.answer = format!("error: unknown endpoint {} {}", req.method, req.path);
        return error(
            StatusCode::NOT_FOUND,
            &format!(
                "acp-record model server: no such endpoint {} {}; it serves POST …/chat/completions, \
                 …/responses, …/messages, …/messages/count_tokens, GET …/models, HEAD …/api/hello and HEAD /. Requests seen:\n{}",
                req.method,
                req.path,
                shared.seen()
            ),
        );
    };
    if api == Api::Hello {
        req.answer = "hello".into();
        return json_response(json!({}));
    }
    if api == Api::Models {
        req.answer = "models".into();
        return models(shared, uri.path());
    }
    let request: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => {
            req.answer = format!("error: body is not JSON ({e})");
            return error(StatusCode::BAD_REQUEST, &req.answer);
        }
    };
    req.model = request
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    if api == Api::AnthropicCountTokens {
        req.answer = "count_tokens".into();
        return json_response(json!({"input_tokens": shared.script.usage.input_tokens}));
    }
    let stream = request
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    req.stream = Some(stream);
    req.tools = tool_names(&request);
    let results = tool_results(api, &request);
    req.tool_results = Some(results);
    let model = req.model.clone().unwrap_or_else(|| "fake-model".into());
    let n = shared.next_id();
    let step = if req.tools.is_empty() {
        req.answer = "side".into();
        Step {
            number: 0,
            text: Some(shared.script.side_text.clone()),
            thinking: None,
            tool: None,
        }
    } else {
        match shared.script.steps.get(results) {
            Some(step) => {
                req.answer = format!("step {results}");
                step.clone()
            }
            None => {
                req.answer = format!(
                    "error: the script has {} steps, none for {results} tool results",
                    shared.script.steps.len()
                );
                return error(StatusCode::BAD_REQUEST, &req.answer);
            }
        }
    };
    if let Some(tool) = &step.tool
        && matches!(tool.body, ToolBody::Input(_))
        && api != Api::OpenaiResponses
    {
        req.answer = format!(
            "error: step {results} calls `{}` with freeform `input`, which only the OpenAI Responses API has",
            tool.name
        );
        return error(StatusCode::BAD_REQUEST, &req.answer);
    }
    if step.thinking.is_some() && api != Api::OpenaiChat {
        req.answer = format!(
            "error: step {results} has `thinking`, which the recorder streams for the Chat Completions API only"
        );
        return error(StatusCode::BAD_REQUEST, &req.answer);
    }
    let usage = shared.script.usage;
    let include_usage = request
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match (api, stream) {
        (Api::OpenaiChat, false) => json_response(chat_message(&step, &model, n, usage)),
        (Api::OpenaiChat, true) => sse(chat_stream(&step, &model, n, usage, include_usage)),
        (Api::OpenaiResponses, false) => json_response(responses_object(&step, &model, n, usage)),
        (Api::OpenaiResponses, true) => sse(responses_stream(&step, &model, n, usage)),
        (Api::AnthropicMessages, false) => json_response(messages_object(&step, &model, n, usage)),
        (Api::AnthropicMessages, true) => sse(messages_stream(&step, &model, n, usage)),
        _ => error(StatusCode::NOT_FOUND, "unreachable endpoint"),
    }
}

/// The names of the tools a request offers (a tool without a name is listed by its type).
pub fn tool_names(request: &Value) -> Vec<String> {
    let Some(tools) = request.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    tools
        .iter()
        .filter_map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .or_else(|| t.get("type"))
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .collect()
}

/// How many tool results follow the last user message: the script's step.
pub fn tool_results(api: Api, request: &Value) -> usize {
    let is = |m: &Value, key: &str, value: &str| m.get(key).and_then(Value::as_str) == Some(value);
    match api {
        Api::OpenaiChat => after_last(request, "messages", |m| is(m, "role", "user"))
            .iter()
            .filter(|m| is(m, "role", "tool"))
            .count(),
        Api::OpenaiResponses => after_last(request, "input", |m| is(m, "role", "user"))
            .iter()
            .filter(|m| {
                m.get("type")
                    .and_then(Value::as_str)
                    .is_some_and(|t| t.ends_with("_call_output"))
            })
            .count(),
        Api::AnthropicMessages => {
            // Tool results come back inside user messages: the turn starts at the last user
            // message that carries none.
            let results = |m: &Value| {
                m.get("content").and_then(Value::as_array).map_or(0, |c| {
                    c.iter().filter(|b| is(b, "type", "tool_result")).count()
                })
            };
            after_last(request, "messages", |m| {
                is(m, "role", "user") && results(m) == 0
            })
            .iter()
            .map(results)
            .sum()
        }
        _ => 0,
    }
}

/// The items of `request[key]` after the last one that `starts` the user's turn (all of them
/// when none does).
fn after_last<'a>(request: &'a Value, key: &str, starts: impl Fn(&Value) -> bool) -> &'a [Value] {
    let items = request
        .get(key)
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let from = items.iter().rposition(starts).map_or(0, |i| i + 1);
    &items[from..]
}

fn models(shared: &Shared, path: &str) -> Response {
    let ids: Vec<String> = shared
        .log
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .filter_map(|r| r.model.clone())
        .chain(["fake-model".to_string()])
        .fold(Vec::new(), |mut v, m| {
            if !v.contains(&m) {
                v.push(m);
            }
            v
        });
    let entry = |id: &str| {
        json!({"id": id, "object": "model", "type": "model", "created": 0, "owned_by": "acp-record",
            "display_name": id, "created_at": "1970-01-01T00:00:00Z"})
    };
    if let Some(id) = path.split("/models/").nth(1).filter(|s| !s.is_empty()) {
        return json_response(entry(id));
    }
    let data: Vec<Value> = ids.iter().map(|id| entry(id)).collect();
    json_response(json!({"object": "list", "data": data, "has_more": false,
        "first_id": ids.first(), "last_id": ids.last()}))
}

fn json_response(v: Value) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(v.to_string()))
        .unwrap_or_default()
}

fn error(status: StatusCode, message: &str) -> Response {
    let body =
        json!({"type": "error", "error": {"type": "invalid_request_error", "message": message}});
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap_or_default()
}

/// The SSE text of events: `event: NAME` (when named) and `data: …`, a blank line after each.
pub fn sse_text(events: &[(Option<String>, String)]) -> Vec<String> {
    events
        .iter()
        .map(|(name, data)| match name {
            Some(name) => format!("event: {name}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        })
        .collect()
}

/// A streamed (chunked, no Content-Length) SSE response, one chunk per event.
fn sse(events: Vec<(Option<String>, String)>) -> Response {
    let chunks = sse_text(&events)
        .into_iter()
        .map(|s| Ok::<_, Infallible>(Bytes::from(s)));
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(futures_util::stream::iter(chunks)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::Usage;
    use serde_json::json;

    #[test]
    fn the_step_is_the_number_of_tool_results_since_the_user_spoke() {
        let chat = json!({"messages": [
            {"role":"user","content":"old"}, {"role":"tool","content":"x"},
            {"role":"user","content":"new"}, {"role":"assistant"},
            {"role":"tool","content":"a"}, {"role":"tool","content":"b"}]});
        assert_eq!(tool_results(Api::OpenaiChat, &chat), 2);
        let responses = json!({"input": [
            {"role":"user","content":"go"}, {"type":"function_call"},
            {"type":"function_call_output"}, {"type":"custom_tool_call_output"}]});
        assert_eq!(tool_results(Api::OpenaiResponses, &responses), 2);
        let anthropic = json!({"messages": [
            {"role":"user","content":[{"type":"text","text":"go"}]},
            {"role":"assistant","content":[{"type":"tool_use"}]},
            {"role":"user","content":[{"type":"tool_result"}]}]});
        assert_eq!(tool_results(Api::AnthropicMessages, &anthropic), 1);
        assert_eq!(tool_results(Api::OpenaiChat, &json!({})), 0);
    }

    #[test]
    fn thinking_streams_as_reasoning_content_before_the_text() {
        let step = Step {
            number: 0,
            text: Some("It is a CLI.".into()),
            thinking: Some("The README says.".into()),
            tool: None,
        };
        let deltas: Vec<Value> = chat_stream(&step, "m", 1, Usage::default(), false)
            .into_iter()
            .filter_map(|(_, data)| serde_json::from_str::<Value>(&data).ok())
            .map(|v| v["choices"][0]["delta"].clone())
            .collect();
        let at = |key: &str, value: &str| deltas.iter().position(|d| d[key] == value);
        let thinking = at("reasoning_content", "The README says.").expect("the reasoning");
        let text = at("content", "It is a CLI.").expect("the text");
        assert!(thinking < text, "{deltas:?}");
        let whole = chat_message(&step, "m", 1, Usage::default());
        assert_eq!(
            whole["choices"][0]["message"]["reasoning_content"],
            "The README says."
        );
    }
}
