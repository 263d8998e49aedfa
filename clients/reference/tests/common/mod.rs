//! Test support: run `acp-reference-client` against `scripted-agent`, play the harness on the
//! control plane, validate every control message against `harness/control-v1.schema.json`, and
//! read back what the agent received. Every wait has a timeout; nothing sleeps to synchronise.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

pub const CLIENT: &str = env!("CARGO_BIN_EXE_acp-reference-client");
pub const AGENT: &str = env!("CARGO_BIN_EXE_scripted-agent");
/// How long any single wait may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(10);

pub fn schema() -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../harness/control-v1.schema.json");
    let text = std::fs::read_to_string(&path).expect("read control-v1.schema.json");
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// The usual start of a script: initialize, then one session `ses_1`.
pub fn handshake() -> Vec<Value> {
    vec![
        json!({"recv": "initialize", "result": {"protocolVersion": 1, "agentCapabilities": {}}}),
        json!({"recv": "session/new", "result": {"sessionId": "ses_1"}}),
    ]
}

/// A `session/update` notification for `ses_1`.
pub fn update(update: Value) -> Value {
    json!({"send": {"jsonrpc": "2.0", "method": "session/update",
                    "params": {"sessionId": "ses_1", "update": update}}})
}

/// A `session/request_permission` request of `ses_1`.
pub fn permission(id: Value, tool_call: Value, options: Value) -> Value {
    json!({"send": {"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
                    "params": {"sessionId": "ses_1", "toolCall": tool_call, "options": options}}})
}

pub fn three_options() -> Value {
    json!([
        {"optionId": "once", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"}
    ])
}

pub struct Case {
    pub dir: tempfile::TempDir,
    child: Option<Child>,
    stdin: Option<ChildStdin>,
    events: Receiver<Value>,
    /// Every event received so far, in order.
    pub seen: Vec<Value>,
    validator: jsonschema::Validator,
    next_seq: u64,
}

/// What a finished case left behind.
pub struct Finished {
    pub status: ExitStatus,
    /// Events after the last one the test read.
    pub rest: Vec<Value>,
    /// Every event of the case.
    pub events: Vec<Value>,
    /// Every line the agent received, parsed.
    pub agent_log: Vec<Value>,
    pub stderr: String,
}

impl Finished {
    /// The client's answers to agent requests (messages with `result` or `error`), by id.
    pub fn answer(&self, id: &Value) -> Vec<&Value> {
        self.agent_log
            .iter()
            .filter(|m| m.get("method").is_none() && m.get("id") == Some(id))
            .collect()
    }

    pub fn sent(&self, method: &str) -> Vec<&Value> {
        self.agent_log
            .iter()
            .filter(|m| m.get("method").and_then(Value::as_str) == Some(method))
            .collect()
    }
}

impl Case {
    pub fn start(script: &[Value]) -> Case {
        Self::start_with(script, &[], true)
    }

    pub fn mutant(script: &[Value], mutant: &str) -> Case {
        Self::start_with(script, &["--mutant", mutant], true)
    }

    /// Start the client with `args`; `with_agent: false` leaves `ACP_HARNESS_AGENT` unset.
    pub fn start_with(script: &[Value], args: &[&str], with_agent: bool) -> Case {
        let agent = with_agent.then(|| json!([AGENT]));
        Self::start_agent(script, args, agent)
    }

    /// Start the client with `args` and `ACP_HARNESS_AGENT` = `agent` (unset if `None`).
    pub fn start_agent(script: &[Value], args: &[&str], agent: Option<Value>) -> Case {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("work")).expect("work dir");
        let script_path = dir.path().join("script.jsonl");
        let work = dir.path().join("work").to_string_lossy().into_owned();
        // `${work}` in a script stands for the case's work directory.
        let lines: Vec<String> = script
            .iter()
            .map(|step| step.to_string().replace("${work}", &work))
            .collect();
        std::fs::write(&script_path, lines.join("\n")).expect("write script");
        let stderr = File::create(dir.path().join("client.stderr")).expect("stderr file");
        let mut command = Command::new(CLIENT);
        command
            .args(args)
            .current_dir(dir.path())
            .env("SCRIPTED_AGENT_SCRIPT", &script_path)
            .env("SCRIPTED_AGENT_LOG", dir.path().join("agent.log"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        match agent {
            Some(agent) => command.env("ACP_HARNESS_AGENT", agent.to_string()),
            None => command.env_remove("ACP_HARNESS_AGENT"),
        };
        let mut child = command.spawn().expect("spawn acp-reference-client");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, events) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                // A non-JSON line is passed on as a string so that the test fails on it.
                let event = serde_json::from_str(&line).unwrap_or(Value::String(line));
                if tx.send(event).is_err() {
                    return;
                }
            }
        });
        Case {
            dir,
            child: Some(child),
            stdin,
            events,
            seen: Vec::new(),
            validator: schema(),
            next_seq: 1,
        }
    }

    pub fn cwd(&self) -> String {
        self.dir.path().join("work").to_string_lossy().into_owned()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join("work").join(relative)
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("client.stderr")).unwrap_or_default()
    }

    fn check(&self, message: &Value, what: &str) {
        if let Err(e) = self.validator.validate(message) {
            panic!("{what} does not validate against control-v1: {e}\n{message}");
        }
    }

    /// Send a command; its `seq` is filled in (and returned) unless given.
    pub fn send(&mut self, mut command: Value) -> u64 {
        let seq = match command.get("seq").and_then(Value::as_u64) {
            Some(seq) => seq,
            None => {
                let seq = self.next_seq;
                command["seq"] = json!(seq);
                seq
            }
        };
        self.next_seq = self.next_seq.max(seq + 1);
        self.check(&command, "command");
        let stdin = self.stdin.as_mut().expect("client stdin open");
        writeln!(stdin, "{command}").expect("write command");
        stdin.flush().expect("flush command");
        seq
    }

    /// The next event (validated), or panic after [`TIMEOUT`].
    pub fn next(&mut self) -> Value {
        match self.events.recv_timeout(TIMEOUT) {
            Ok(event) => {
                self.check(&event, "event");
                self.seen.push(event.clone());
                event
            }
            Err(e) => panic!(
                "no event within {TIMEOUT:?} ({e}); events so far:\n{}\nclient stderr:\n{}",
                self.seen
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("\n"),
                self.stderr()
            ),
        }
    }

    /// The next event, which must be of `kind`.
    pub fn expect(&mut self, kind: &str) -> Value {
        let event = self.next();
        assert_eq!(event["type"], kind, "expected a {kind} event, got {event}");
        event
    }

    /// Skip events until one satisfies `predicate`.
    pub fn wait_for(&mut self, predicate: impl Fn(&Value) -> bool) -> Value {
        loop {
            let event = self.next();
            if predicate(&event) {
                return event;
            }
        }
    }

    pub fn wait_type(&mut self, kind: &str) -> Value {
        self.wait_for(|e| e["type"] == kind)
    }

    /// Open session `handle` in the case's work dir; returns its ACP session id.
    pub fn open_session(&mut self, handle: &str) -> String {
        let cwd = self.cwd();
        self.send(json!({"type": "new_session", "session": handle, "cwd": cwd}));
        let opened = self.wait_type("session_opened");
        assert_eq!(opened["session"], handle);
        opened["sessionId"].as_str().expect("sessionId").to_owned()
    }

    /// Prompt session `handle`; expects the `turn running` event.
    pub fn prompt(&mut self, handle: &str, text: &str) {
        self.send(json!({"type": "prompt", "session": handle, "text": text}));
        let turn = self.wait_type("turn");
        assert_eq!(turn["state"], "running", "{turn}");
    }

    /// Close the client's stdin (EOF) without a `shutdown` command.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Send `shutdown` (unless stdin was closed), then collect everything.
    pub fn finish(mut self) -> Finished {
        if self.stdin.is_some() {
            self.send(json!({"type": "shutdown"}));
        }
        self.stdin = None;
        let mut rest = Vec::new();
        // The reader thread ends when the client closes stdout (at exit).
        loop {
            match self.events.recv_timeout(TIMEOUT) {
                Ok(event) => {
                    self.check(&event, "event");
                    self.seen.push(event.clone());
                    rest.push(event);
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(e) => panic!("client did not close stdout: {e}\n{}", self.stderr()),
            }
        }
        let status = self.wait_exit();
        let agent_log = std::fs::read_to_string(self.dir.path().join("agent.log"))
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::String(l.to_owned())))
            .collect();
        Finished {
            status,
            rest,
            events: std::mem::take(&mut self.seen),
            agent_log,
            stderr: self.stderr(),
        }
    }

    /// Wait for the client to exit, killing it after [`TIMEOUT`].
    pub fn wait_exit(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("child");
        let pid = child.id();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        match rx.recv_timeout(TIMEOUT) {
            Ok(status) => status.expect("wait for client"),
            Err(_) => {
                let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
                panic!("client did not exit within {TIMEOUT:?}\n{}", self.stderr());
            }
        }
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        // A failed test must not leave the client running.
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
