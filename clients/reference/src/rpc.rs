//! The agent connection: spawn the agent, frame newline-delimited JSON-RPC 2.0 on its
//! stdin/stdout, number our requests, correlate their responses, and make sure every request of
//! the agent is answered exactly once with its id echoed verbatim.
//!
//! What this layer decides, and nothing else:
//! * outgoing request ids are integers counting from 0; a response is matched by that integer;
//! * an agent request is any object with a `method` and an `id` (string, number or null); it is
//!   "open" until [`Connection::respond`] answers it, and a second answer is refused;
//! * a line that is not a JSON-RPC object is logged to stderr and skipped (the agent may be
//!   buggy; the client must not die of it); a response nobody waits for is logged and dropped;
//! * writes go through a writer task, so a slow agent never blocks the client's event loop;
//! * a tool call's `session/update` in its common shape is read without a tree
//!   (`tool_update.rs`) and passed on as [`Incoming::ToolUpdate`]; whatever that reading leaves,
//!   it gives back, and it is parsed and classified as every other line.

use std::collections::HashMap;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::tool_update::ToolUpdate;
use acp_vocab::method::Method;

/// How long the agent gets to exit after its stdin is closed before it is killed.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn method_not_found(method: &str) -> Self {
        RpcError {
            data: Some(Value::String(method.into())),
            ..Self::new(-32601, "Method not found")
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, message)
    }

    /// ACP `-32002` Resource not found, `data: {uri}` like the official `resource_not_found`.
    pub fn resource_not_found(path: &str) -> Self {
        RpcError {
            data: Some(json!({ "uri": path })),
            ..Self::new(-32002, format!("Resource not found: {path}"))
        }
    }

    /// Read an error object sent by the agent, leniently.
    fn from_wire(error: &Value) -> Self {
        RpcError {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: match error.get("message").and_then(Value::as_str) {
                Some(message) => message.to_owned(),
                None => format!("malformed JSON-RPC error: {error}"),
            },
            data: error.get("data").cloned(),
        }
    }

    fn to_wire(&self) -> Value {
        let mut error = Map::new();
        error.insert("code".into(), self.code.into());
        error.insert("message".into(), self.message.clone().into());
        if let Some(data) = &self.data {
            error.insert("data".into(), data.clone());
        }
        Value::Object(error)
    }
}

/// A message from the agent, after correlation. `P` is what the caller attached to each of its
/// requests ("what was this request for").
#[derive(Debug)]
pub enum Incoming<P> {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A `session/update` notification of a tool call, read from its line (`tool_update.rs`):
    /// the same message as a `Notification` whose method is `session/update`.
    ToolUpdate(ToolUpdate),
    Response {
        purpose: P,
        result: Result<Value, RpcError>,
    },
    /// The agent closed its stdout (it exited or is exiting).
    Closed,
}

pub struct Connection<P> {
    child: Child,
    writer: Option<mpsc::UnboundedSender<String>>,
    writer_task: Option<JoinHandle<()>>,
    frames: mpsc::UnboundedReceiver<Frame>,
    closed: bool,
    next_id: u64,
    waiting: HashMap<u64, P>,
    /// Ids of agent requests not answered yet.
    open: Vec<Value>,
}

impl<P> Connection<P> {
    /// Spawn `argv` with piped stdin/stdout; its stderr is passed through to ours.
    pub fn spawn(argv: &[String]) -> anyhow::Result<Self> {
        let (program, args) = argv
            .split_first()
            .ok_or_else(|| anyhow::anyhow!("the agent command is empty"))?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot spawn agent {argv:?}: {e}"))?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            anyhow::bail!("the agent's stdio was not piped");
        };

        let (writer, mut lines) = mpsc::unbounded_channel::<String>();
        let writer_task = tokio::spawn(async move {
            while let Some(line) = lines.recv().await {
                let written = async {
                    stdin.write_all(line.as_bytes()).await?;
                    stdin.write_all(b"\n").await?;
                    stdin.flush().await
                };
                if let Err(e) = written.await {
                    log!("cannot write to the agent (dropping further output): {e}");
                    break;
                }
            }
            // Dropping `stdin` closes the agent's stdin.
        });

        let (frames_tx, frames) = mpsc::unbounded_channel();
        tokio::spawn(read_frames(stdout, frames_tx));

        Ok(Connection {
            child,
            writer: Some(writer),
            writer_task: Some(writer_task),
            frames,
            closed: false,
            next_id: 0,
            waiting: HashMap::new(),
            open: Vec::new(),
        })
    }

    fn send(&self, message: Value) {
        let Some(writer) = &self.writer else {
            return;
        };
        // serde_json escapes control characters, so a serialized Value never contains '\n'.
        match serde_json::to_string(&message) {
            Ok(line) => {
                if writer.send(line).is_err() {
                    log!("the agent's stdin is closed; message dropped");
                }
            }
            Err(e) => log!("cannot serialize a message for the agent: {e}"),
        }
    }

    /// Send a request; its response comes back from [`Connection::recv`] with `purpose`.
    pub fn request(&mut self, method: Method, params: Value, purpose: P) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.waiting.insert(id, purpose);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method.as_str(), "params": params}));
        id
    }

    pub fn notify(&mut self, method: Method, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method.as_str(), "params": params}));
    }

    /// Answer the open agent request `id` (compared exactly). Returns false, and sends nothing,
    /// if that request is not open: it was answered already or never received.
    pub fn respond(&mut self, id: &Value, result: Result<Value, RpcError>) -> bool {
        let Some(position) = self.open.iter().position(|open| open == id) else {
            log!("refusing to answer agent request {id} twice (or one never received)");
            return false;
        };
        self.open.remove(position);
        let message = match result {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_wire()}),
        };
        self.send(message);
        true
    }

    /// The next message from the agent. After [`Incoming::Closed`] it never resolves again.
    pub async fn recv(&mut self) -> Incoming<P> {
        loop {
            if self.closed {
                return std::future::pending().await;
            }
            let Some(frame) = self.frames.recv().await else {
                self.closed = true;
                return Incoming::Closed;
            };
            let frame = match frame {
                Frame::Tree(frame) => frame,
                Frame::ToolUpdate(update) => return Incoming::ToolUpdate(update),
            };
            if let Some(incoming) = self.classify(frame) {
                return incoming;
            }
        }
    }

    fn classify(&mut self, mut frame: Map<String, Value>) -> Option<Incoming<P>> {
        if let Some(method) = frame.get("method") {
            let Some(method) = method.as_str().map(str::to_owned) else {
                log!("ignoring a message whose method is not a string: {frame:?}");
                return None;
            };
            let params = frame.remove("params").unwrap_or(Value::Null);
            return match frame.remove("id") {
                None => Some(Incoming::Notification { method, params }),
                Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => {
                    if self.open.contains(&id) {
                        // A duplicated frame: the original is still open and will be answered
                        // once; answering both would give the agent two responses for one id.
                        log!("ignoring a second request with the open id {id} ({method})");
                        return None;
                    }
                    self.open.push(id.clone());
                    Some(Incoming::Request { id, method, params })
                }
                Some(id) => {
                    log!("ignoring request {method} with an invalid id {id}");
                    None
                }
            };
        }
        if !frame.contains_key("result") && !frame.contains_key("error") {
            log!("ignoring a message that is neither request, notification nor response");
            return None;
        }
        let id = frame.get("id").cloned().unwrap_or(Value::Null);
        let Some(purpose) = id.as_u64().and_then(|n| self.waiting.remove(&n)) else {
            log!("ignoring a response to no request of ours (id {id})");
            return None;
        };
        let result = match frame.get("error") {
            Some(error) if !error.is_null() => Err(RpcError::from_wire(error)),
            _ => Ok(frame.remove("result").unwrap_or(Value::Null)),
        };
        Some(Incoming::Response { purpose, result })
    }

    /// Close the agent's stdin, give it [`EXIT_GRACE`] to exit, then kill it. Always reaps it.
    pub async fn shutdown(mut self) -> Option<ExitStatus> {
        let deadline = tokio::time::Instant::now() + EXIT_GRACE;
        drop(self.writer.take());
        if let Some(mut task) = self.writer_task.take() {
            // Let queued lines reach the agent, unless it stopped reading.
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                task.abort();
            }
        }
        match tokio::time::timeout_at(deadline, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            Ok(Err(e)) => {
                log!("cannot wait for the agent: {e}");
                None
            }
            Err(_) => {
                log!(
                    "the agent did not exit within {EXIT_GRACE:?} of closing its stdin; killing it"
                );
                if let Err(e) = self.child.kill().await {
                    log!("cannot kill the agent: {e}");
                }
                self.child.try_wait().ok().flatten()
            }
        }
    }
}

/// A line of the agent's, as the reader passes it on.
enum Frame {
    /// A JSON object, parsed.
    Tree(Map<String, Value>),
    /// A tool call's `session/update` in its common shape, read without a tree.
    ToolUpdate(ToolUpdate),
}

/// Read newline-delimited frames from the agent until EOF. Only JSON objects are passed on;
/// anything else is logged and skipped.
async fn read_frames(stdout: ChildStdout, frames: mpsc::UnboundedSender<Frame>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line).await {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) => {
                log!("cannot read from the agent: {e}");
                return;
            }
        }
        if line.trim_ascii().is_empty() {
            continue;
        }
        // The line moves into the update when it is read as one (its fields are kept as slices
        // of it); the next line gets a buffer of this one's length.
        let length = line.len();
        match ToolUpdate::read(std::mem::take(&mut line)) {
            Ok(update) => {
                if frames.send(Frame::ToolUpdate(update)).is_err() {
                    return;
                }
                line = Vec::with_capacity(length);
                continue;
            }
            Err(back) => line = back,
        }
        let text = line.trim_ascii();
        match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(frame)) => {
                if frames.send(Frame::Tree(frame)).is_err() {
                    return;
                }
            }
            Ok(other) => log!(
                "ignoring a non-object line from the agent: {}",
                excerpt(&other.to_string())
            ),
            Err(e) => log!(
                "ignoring a garbage line from the agent ({e}): {}",
                excerpt(&String::from_utf8_lossy(text))
            ),
        }
    }
}

fn excerpt(text: &str) -> String {
    const MAX: usize = 200;
    match text.char_indices().nth(MAX) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}
