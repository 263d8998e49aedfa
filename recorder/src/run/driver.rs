//! The user's side of a recording: the case's actions played over ACP, the agent's requests
//! answered as a correct client does (`fs/*` served, anything else refused with -32601), and
//! every frame recorded.

use acp_vocab::envelope::Shape;
use acp_vocab::method::Method;
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use acp_vocab::transcript::{Direction, Recorder};
use anyhow::{Result, anyhow, bail};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::Event;
use crate::server::ModelServer;

pub(super) struct Permission {
    pub(super) id: Value,
    pub(super) options: Vec<Value>,
    pub(super) answered: bool,
    pub(super) withdrawn: bool,
}

pub(super) struct Driver<'a> {
    pub(super) recorder: Recorder,
    pub(super) stdin: Option<ChildStdin>,
    pub(super) rx: mpsc::UnboundedReceiver<Event>,
    pub(super) server: &'a ModelServer,
    pub(super) next_id: u64,
    pub(super) responses: HashMap<u64, Result<Value, Value>>,
    pub(super) permissions: Vec<Permission>,
    pub(super) auto_kind: Option<String>,
    pub(super) session: Option<String>,
    pub(super) prompt: Option<u64>,
    pub(super) exited: Option<String>,
    pub(super) stdout_closed: bool,
    pub(super) verbose: bool,
    pub(super) sessions: Vec<String>,
}

impl Driver<'_> {
    pub(super) async fn send(&mut self, v: Value) -> Result<()> {
        let line = v.to_string();
        self.recorder
            .record(1, Direction::ClientToAgent, line.as_bytes());
        if self.verbose {
            eprintln!("→ {}", truncate(&line, 300));
        }
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("the agent's stdin is closed"))?;
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        match tokio::time::timeout(Duration::from_secs(10), write).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => bail!("writing to the agent failed: {e}"),
            Err(_) => bail!("writing to the agent blocked for 10 s (it does not read its stdin)"),
        }
    }

    pub(super) async fn request(&mut self, method: Method, params: Value) -> Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method.as_str(), "params": params}))
            .await?;
        Ok(id)
    }

    /// Handles one event, or returns false when `until` passed first.
    pub(super) async fn pump(&mut self, until: Instant) -> Result<bool> {
        if let Some(failure) = self.server.failure() {
            bail!("{failure}");
        }
        let event = match tokio::time::timeout_at(until, self.rx.recv()).await {
            Err(_) => return Ok(false),
            Ok(None) => {
                // Every sender is gone: nothing more will come.
                tokio::time::sleep_until(until).await;
                return Ok(false);
            }
            Ok(Some(e)) => e,
        };
        match event {
            Event::Eof => self.stdout_closed = true,
            Event::Exited(status) => self.exited = Some(status),
            Event::Line(bytes) => self.on_line(bytes).await?,
        }
        Ok(true)
    }

    pub(super) fn check_alive(&self) -> Result<()> {
        if let Some(status) = &self.exited {
            bail!("the agent exited ({status})");
        }
        if self.stdout_closed {
            bail!("the agent closed its stdout");
        }
        Ok(())
    }

    pub(super) async fn on_line(&mut self, mut bytes: Vec<u8>) -> Result<()> {
        if bytes.last() == Some(&b'\n') {
            bytes.pop();
        }
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        if bytes.is_empty() {
            return Ok(());
        }
        self.recorder.record(1, Direction::AgentToClient, &bytes);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        if self.verbose {
            eprintln!("← {}", truncate(&text, 300));
        }
        let Ok(msg) = serde_json::from_str::<Value>(&text) else {
            return Ok(());
        };
        match Shape::of(&msg) {
            Shape::Request { id, method } => {
                let (id, method) = (id.clone(), method.to_owned());
                self.on_request(&method, id, &msg).await?
            }
            Shape::Notification { method } => {
                if method == Method::CancelRequest.as_str()
                    && let Some(rid) = msg.pointer("/params/requestId")
                {
                    for p in self.permissions.iter_mut().filter(|p| &p.id == rid) {
                        p.withdrawn = true;
                    }
                }
            }
            Shape::Response { id } | Shape::ErrorResponse { id } => {
                if let Some(n) = id.as_u64() {
                    let outcome = match msg.get("error") {
                        Some(e) => Err(e.clone()),
                        None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    self.responses.insert(n, outcome);
                }
            }
            Shape::Other => {}
        }
        Ok(())
    }

    pub(super) async fn on_request(&mut self, method: &str, id: Value, msg: &Value) -> Result<()> {
        let params = msg.get("params").cloned().unwrap_or(Value::Null);
        let reply = match Method::parse(method) {
            Some(Method::SessionRequestPermission) => {
                let options = params
                    .get("options")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                self.permissions.push(Permission {
                    id: id.clone(),
                    options,
                    answered: false,
                    withdrawn: false,
                });
                if let Some(kind) = self.auto_kind.clone() {
                    let n = self.permissions.len() - 1;
                    self.answer(n, &kind).await?;
                }
                return Ok(());
            }
            Some(Method::FsReadTextFile) => match read_text(&params) {
                Ok(content) => json!({"jsonrpc": "2.0", "id": id, "result": {"content": content}}),
                Err(e) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32002, "message": e}})
                }
            },
            Some(Method::FsWriteTextFile) => match write_text(&params) {
                Ok(()) => json!({"jsonrpc": "2.0", "id": id, "result": null}),
                Err(e) => {
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": e}})
                }
            },
            _ => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found", "data": {"method": method}}}),
        };
        self.send(reply).await
    }

    /// Answers permission `n` with the first option of `kind` (or `cancelled`).
    pub(super) async fn answer(&mut self, n: usize, kind: &str) -> Result<()> {
        let p = &self.permissions[n];
        let outcome = if kind == "cancelled" {
            json!({"outcome": "cancelled"})
        } else {
            let option = p
                .options
                .iter()
                .find(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
                .ok_or_else(|| {
                    anyhow!(
                        "permission request {} offers no option of kind {kind}; it offers {}",
                        p.id,
                        p.options
                            .iter()
                            .map(|o| format!(
                                "{} ({})",
                                o.get("optionId").unwrap_or(&Value::Null),
                                o.get("kind").and_then(Value::as_str).unwrap_or("?")
                            ))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
            json!({"outcome": "selected", "optionId": option.get("optionId").cloned().unwrap_or(Value::Null)})
        };
        let id = p.id.clone();
        self.permissions[n].answered = true;
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": outcome}}))
            .await
    }

    pub(super) fn open_permission(&self) -> Option<usize> {
        self.permissions.iter().position(|p| !p.answered)
    }

    /// Pumps until `done` holds; false on timeout.
    pub(super) async fn wait(
        &mut self,
        timeout: Duration,
        done: impl Fn(&Self) -> bool,
    ) -> Result<bool> {
        let until = Instant::now() + timeout;
        loop {
            if done(self) {
                return Ok(true);
            }
            self.check_alive()?;
            if !self.pump(until).await? {
                return Ok(done(self));
            }
        }
    }

    pub(super) async fn wait_response(
        &mut self,
        id: u64,
        timeout: Duration,
        what: &str,
    ) -> Result<Value> {
        self.wait_answer(id, timeout, what)
            .await?
            .map_err(|e| anyhow!("{what} was answered with an error: {e}"))
    }

    /// The answer to request `id`: its result, or the error the agent answered with (the inner
    /// `Err`); no answer within `timeout` is the outer error.
    pub(super) async fn wait_answer(
        &mut self,
        id: u64,
        timeout: Duration,
        what: &str,
    ) -> Result<Result<Value, String>> {
        if !self
            .wait(timeout, |d| d.responses.contains_key(&id))
            .await?
        {
            bail!("{what}: no answer within {} ms", timeout.as_millis());
        }
        match self.responses.remove(&id) {
            Some(answer) => Ok(answer.map_err(|e| e.to_string())),
            None => bail!("{what}: no answer"),
        }
    }

    /// Pumps for `d` (a delay or the settle time).
    pub(super) async fn idle(&mut self, d: Duration) -> Result<()> {
        let until = Instant::now() + d;
        while self.pump(until).await? {}
        Ok(())
    }
}

pub(super) fn truncate(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

pub(super) fn read_text(params: &Value) -> Result<String, String> {
    let path = params
        .get("path")
        .and_then(Value::as_str)
        .ok_or("no path")?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    let line = params.get("line").and_then(Value::as_u64);
    let limit = params.get("limit").and_then(Value::as_u64);
    if line.is_none() && limit.is_none() {
        return Ok(text);
    }
    let skip = line.unwrap_or(1).saturating_sub(1) as usize;
    let take = limit.map_or(usize::MAX, |l| l as usize);
    Ok(text.split_inclusive('\n').skip(skip).take(take).collect())
}

pub(super) fn write_text(params: &Value) -> Result<(), String> {
    let path = params
        .get("path")
        .and_then(Value::as_str)
        .ok_or("no path")?;
    let content = params
        .get("content")
        .and_then(Value::as_str)
        .ok_or("no content")?;
    if let Some(parent) = Path::new(path).parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{path}: {e}"))?;
    }
    std::fs::write(path, content).map_err(|e| format!("{path}: {e}"))
}
