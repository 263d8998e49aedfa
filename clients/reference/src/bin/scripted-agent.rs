//! `scripted-agent`: a tiny ACP agent for the reference client's own tests. It replays a script
//! and records every line it receives. It is not the harness's fake agent (`acp-fake-agent`),
//! only enough of one to drive `acp-reference-client` from `cargo test`.
//!
//! * `SCRIPTED_AGENT_SCRIPT`: a file of JSON lines, one step each, run in order:
//!   - `{"recv": "<method>"}`: read until a message with that method arrives and remember its
//!     id under the method name (or under `"as": "<name>"`); with `"result": …` (or
//!     `"error": …`) answer it at once;
//!   - `{"respond": "<name>", "result": …}` (or `"error": …`): answer the remembered request;
//!   - `{"send": {…}}`: write that frame; `{"send_raw": "…"}`: write that text as a line;
//!   - `{"await_response": <id>}`: read until the client answered our request `<id>`;
//!   - `{"exit": <code>}`: exit at once (a crashing agent).
//! * `SCRIPTED_AGENT_LOG`: every line received is appended there, flushed at once.
//!
//! After the script, or as soon as stdin closes, it reads to EOF and exits 0.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};

use serde_json::{Value, json};

struct Agent {
    input: std::io::Lines<BufReader<std::io::Stdin>>,
    log: Option<File>,
    /// Ids of remembered requests, by method or `as` name.
    requests: HashMap<String, Value>,
    /// Responses received.
    responses: Vec<Value>,
}

impl Agent {
    /// The next message from the client, recorded; `None` at EOF.
    fn read(&mut self) -> Option<Value> {
        loop {
            let line = self.input.next()?.ok()?;
            if let Some(log) = &mut self.log {
                let _ = writeln!(log, "{line}").and_then(|()| log.flush());
            }
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                eprintln!("[scripted-agent] not JSON: {line}");
                continue;
            };
            if message.get("method").is_none() && message.get("id").is_some() {
                self.responses.push(message.clone());
            }
            return Some(message);
        }
    }

    fn write(&self, line: &str) {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    }

    fn respond(&self, name: &str, step: &Value) {
        let id = self.requests.get(name).cloned().unwrap_or(Value::Null);
        let message = match step.get("error") {
            Some(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
            None => {
                json!({"jsonrpc": "2.0", "id": id, "result": step.get("result").cloned().unwrap_or(json!({}))})
            }
        };
        self.write(&message.to_string());
    }

    /// Run one step; false when stdin closed.
    fn step(&mut self, step: &Value) -> bool {
        if let Some(method) = step.get("recv").and_then(Value::as_str) {
            let name = step.get("as").and_then(Value::as_str).unwrap_or(method);
            loop {
                let Some(message) = self.read() else {
                    return false;
                };
                if message.get("method").and_then(Value::as_str) == Some(method) {
                    if let Some(id) = message.get("id") {
                        self.requests.insert(name.to_owned(), id.clone());
                    }
                    break;
                }
            }
            if step.get("result").is_some() || step.get("error").is_some() {
                self.respond(name, step);
            }
        } else if let Some(method) = step.get("respond").and_then(Value::as_str) {
            self.respond(method, step);
        } else if let Some(frame) = step.get("send") {
            self.write(&frame.to_string());
        } else if let Some(text) = step.get("send_raw").and_then(Value::as_str) {
            self.write(text);
        } else if let Some(id) = step.get("await_response") {
            while !self.responses.iter().any(|r| r.get("id") == Some(id)) {
                if self.read().is_none() {
                    return false;
                }
            }
        } else if let Some(code) = step.get("exit").and_then(Value::as_i64) {
            std::process::exit(i32::try_from(code).unwrap_or(1));
        } else {
            eprintln!("[scripted-agent] unknown step {step}");
        }
        true
    }
}

fn main() {
    let script = std::env::var("SCRIPTED_AGENT_SCRIPT")
        .ok()
        .and_then(|path| std::fs::read_to_string(path).ok())
        .unwrap_or_default();
    let log = std::env::var("SCRIPTED_AGENT_LOG")
        .ok()
        .and_then(|path| OpenOptions::new().create(true).append(true).open(path).ok());
    let mut agent = Agent {
        input: BufReader::new(std::io::stdin()).lines(),
        log,
        requests: HashMap::new(),
        responses: Vec::new(),
    };
    for line in script.lines().filter(|l| !l.trim().is_empty()) {
        let step: Value = match serde_json::from_str(line) {
            Ok(step) => step,
            Err(e) => {
                eprintln!("[scripted-agent] bad script line ({e}): {line}");
                continue;
            }
        };
        if !agent.step(&step) {
            return;
        }
    }
    while agent.read().is_some() {}
}
