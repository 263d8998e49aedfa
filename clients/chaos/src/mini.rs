//! A minimal working client with its control-plane adapter (harness/CONTROL.md), plus the one
//! deviation the `Mode` asks for. It is deliberately small: blocking I/O, one thread per input,
//! every input funnelled into one channel, one event loop.
//!
//! What it does when behaving: opens a session through `initialize` + `session/new`, sends
//! prompts, shows each permission request as a `command` approval with one button per option,
//! answers the option the harness chooses, and reports the turn's end. Every other agent request
//! gets `-32601` (in `echo` mode: an empty result at once).
//!
//! Wire only ([`WireOnly`], no adapter): the same client with the harness's part played by its
//! command line: one session, the one prompt, each permission request answered by its own policy
//! (the first `allow_once` option), nothing shown on stdout, and the turn's end is its exit
//! (0; 1 if the agent went away first).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};

use acp_vocab::control::{
    Approval, ApprovalResolved, Command as ControlCommand, Event, Outcome, PresentedOption,
    ResolvedBy, Subject, Turn, TurnState,
};
use serde_json::{Value, json};

use crate::early::hello;
use crate::{Mode, WireOnly};

enum Input {
    Control(String),
    ControlEof,
    Agent(String),
    AgentEof,
}

/// What one of our requests to the agent was for.
enum Purpose {
    Initialize,
    NewSession(SessionAsk),
    /// `echo` only: the agent asked to authenticate before `session/new`; then retry it.
    Authenticate(SessionAsk),
    Prompt {
        session_id: String,
    },
}

/// A session the harness asked for: its command's `seq` (so a failure answers that command),
/// handle and cwd.
struct SessionAsk {
    seq: Option<u64>,
    handle: String,
    cwd: String,
}

struct Agent {
    child: Child,
    stdin: ChildStdin,
}

struct Mini {
    mode: Mode,
    /// Driven by the harness's control plane (else wire only: nothing is shown on stdout).
    adapter: bool,
    /// Wire only: the prompt, until it is sent (once the session is open).
    prompt: Option<String>,
    /// Wire only: the agent command given on the command line (empty: ACP_HARNESS_AGENT).
    agent_argv: Vec<String>,
    /// Wire only: the exit status, once the turn is over.
    exit: Option<u8>,
    tx: Sender<Input>,
    agent: Option<Agent>,
    /// Set once the agent's stdout must no longer be read (`stop-reading-agent`).
    agent_paused: Arc<AtomicBool>,
    initialized: bool,
    /// Sessions waiting for `initialize`.
    waiting: Vec<SessionAsk>,
    next_id: u64,
    pending: HashMap<u64, Purpose>,
    /// handle → ACP session id.
    sessions: Vec<(String, String)>,
    terminals: crate::terminal::Terminals,
    /// Open permission requests: (request id, session id).
    approvals: Vec<(Value, String)>,
    /// `echo` only: sessions whose turn the user stopped and whose prompt has not returned yet. A
    /// permission request that arrives for one is answered `cancelled` at once, as the protocol
    /// asks of a cancelled turn, so a scenario where the request crosses the Stop ends.
    stopped_turns: Vec<String>,
    /// `echo` only: the ids of `initialize`'s `authMethods`, for an "authentication required"
    /// error that names none itself.
    auth_methods: Vec<String>,
}

fn emit(event: Event) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", event.to_line()).and_then(|()| out.flush());
}

fn turn(session_id: &str, state: TurnState) -> Event {
    Event::Turn(Turn {
        session_id: session_id.to_owned(),
        state,
        stop_reason: None,
        message: None,
        observed: None,
    })
}

fn log(message: &str) {
    eprintln!("[acp-chaos-client] {message}");
}

pub fn run(mode: Mode, wire: Option<WireOnly>) -> ExitCode {
    let (tx, rx) = mpsc::channel();
    let adapter = wire.is_none();
    if adapter {
        emit(hello(1));
        spawn_control_reader(tx.clone(), mode == Mode::StopReadingStdin);
    }
    let (prompt, cwd, agent_argv) = match wire {
        Some(w) => (Some(w.prompt), Some(w.cwd), w.agent),
        None => (None, None, Vec::new()),
    };
    let mut mini = Mini {
        mode,
        adapter,
        prompt,
        agent_argv,
        exit: None,
        tx,
        agent: None,
        agent_paused: Arc::new(AtomicBool::new(false)),
        initialized: false,
        waiting: Vec::new(),
        next_id: 0,
        pending: HashMap::new(),
        sessions: Vec::new(),
        approvals: Vec::new(),
        stopped_turns: Vec::new(),
        auth_methods: Vec::new(),
        terminals: Default::default(),
    };
    if let Some(cwd) = cwd {
        // What a user's command line asks of a wire-only client: a session, then the prompt.
        mini.new_session(None, "wire".to_owned(), cwd);
    }
    while mini.exit.is_none() {
        let Ok(input) = rx.recv() else { break };
        let go_on = match input {
            Input::Control(line) => mini.on_control(&line),
            Input::ControlEof => false,
            Input::Agent(line) => {
                mini.on_agent(&line);
                true
            }
            Input::AgentEof => {
                log("the agent closed its stdout");
                if !mini.adapter {
                    log("the turn did not end");
                    mini.exit = Some(1);
                }
                true
            }
        };
        if !go_on {
            break;
        }
    }
    if let Some(mut agent) = mini.agent.take() {
        drop(agent.stdin);
        let _ = agent.child.kill();
        let _ = agent.child.wait();
    }
    ExitCode::from(mini.exit.unwrap_or(0))
}

/// Control commands from stdin. With `first_only`, one line is read and then stdin is never
/// read again (the thread keeps the handle and parks).
fn spawn_control_reader(tx: Sender<Input>, first_only: bool) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut lines = stdin.lock().lines();
        loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if tx.send(Input::Control(line)).is_err() {
                        return;
                    }
                    if first_only {
                        log("not reading stdin any more");
                        loop {
                            std::thread::park();
                        }
                    }
                }
                _ => {
                    let _ = tx.send(Input::ControlEof);
                    return;
                }
            }
        }
    });
}

impl Mini {
    fn session_id(&self, handle: &str) -> Option<String> {
        self.sessions
            .iter()
            .find(|(h, _)| h == handle)
            .map(|(_, id)| id.clone())
    }

    /// Tells the harness's control plane; wire only, there is none (the turn's end is the exit).
    fn show(&self, event: Event) {
        if self.adapter {
            emit(event);
        }
    }

    fn error(&self, seq: Option<u64>, message: &str) {
        if !self.adapter {
            log(message);
        }
        self.show(Event::Error {
            seq,
            message: message.to_owned(),
        });
    }

    /// One control command; false to shut down.
    fn on_control(&mut self, line: &str) -> bool {
        let Ok(json) = serde_json::from_str::<Value>(line) else {
            self.error(None, "a command line is not JSON");
            return true;
        };
        let seq = json.get("seq").and_then(Value::as_u64);
        let Ok(command) = serde_json::from_value::<ControlCommand>(json) else {
            self.error(seq, "unknown command");
            return true;
        };
        let seq = Some(command.seq());
        match command {
            ControlCommand::NewSession { session, cwd, .. } => self.new_session(seq, session, cwd),
            ControlCommand::Prompt { session, text, .. } => match self.session_id(&session) {
                Some(session_id) => self.prompt(session_id, text),
                None => self.error(seq, "no such session"),
            },
            ControlCommand::Choose {
                request_id,
                option_id,
                ..
            } => self.choose(seq, request_id, &option_id),
            ControlCommand::Cancel { session, .. } => {
                if let Some(session_id) = self.session_id(&session) {
                    self.cancel(&session_id);
                }
            }
            // Its hello offers neither the session lifecycle nor modes, so these never come from
            // the harness.
            ControlCommand::LoadSession { .. }
            | ControlCommand::ResumeSession { .. }
            | ControlCommand::ListSessions { .. }
            | ControlCommand::CloseSession { .. }
            | ControlCommand::SetMode { .. }
            | ControlCommand::SetConfigOption { .. } => self.error(seq, "unsupported command"),
            ControlCommand::Shutdown { .. } => return false,
        }
        true
    }

    fn new_session(&mut self, seq: Option<u64>, handle: String, cwd: String) {
        if self.agent.is_none() {
            if let Err(message) = self.spawn_agent() {
                self.error(seq, &message);
                if !self.adapter {
                    self.exit = Some(1);
                }
                return;
            }
            // `echo` advertises what the reference client does, so that no scenario stops at
            // `initialize` for a missing capability and the baseline plays the same frames.
            let fs = self.mode == Mode::Echo;
            self.request(
                "initialize",
                json!({"protocolVersion": 1,
                       "clientCapabilities": {"fs": {"readTextFile": fs, "writeTextFile": fs},
                                              "terminal": crate::terminal::advertises_terminal(self.mode)},
                       "clientInfo": {"name": "acp-chaos-client", "version": env!("CARGO_PKG_VERSION")}}),
                Purpose::Initialize,
            );
        }
        let ask = SessionAsk { seq, handle, cwd };
        if self.initialized {
            self.open_session(ask);
        } else {
            self.waiting.push(ask);
        }
    }

    fn open_session(&mut self, ask: SessionAsk) {
        self.request(
            "session/new",
            json!({"cwd": ask.cwd, "mcpServers": []}),
            Purpose::NewSession(ask),
        );
    }

    fn spawn_agent(&mut self) -> Result<(), String> {
        let argv: Vec<String> = if self.agent_argv.is_empty() {
            let raw = std::env::var("ACP_HARNESS_AGENT")
                .map_err(|_| "ACP_HARNESS_AGENT is not set".to_owned())?;
            serde_json::from_str(&raw)
                .map_err(|e| format!("ACP_HARNESS_AGENT is not a JSON array of strings: {e}"))?
        } else {
            self.agent_argv.clone()
        };
        let (program, args) = argv.split_first().ok_or("ACP_HARNESS_AGENT is empty")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the agent: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the agent's stdio is not piped".into());
        };
        let tx = self.tx.clone();
        let paused = Arc::clone(&self.agent_paused);
        std::thread::spawn(move || {
            // Chunk by chunk (not line by line), so that a pause takes effect within one chunk
            // even in the middle of a long line.
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                if paused.load(Ordering::SeqCst) {
                    // Keep the pipe open and never read again: the agent's writes back up.
                    log("not reading the agent any more");
                    let _keep = reader;
                    loop {
                        std::thread::park();
                    }
                }
                let chunk = match reader.fill_buf() {
                    Ok([]) | Err(_) => {
                        let _ = tx.send(Input::AgentEof);
                        return;
                    }
                    Ok(chunk) => chunk,
                };
                let (part, used, done) = match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => (&chunk[..i], i + 1, true),
                    None => (chunk, chunk.len(), false),
                };
                line.extend_from_slice(part);
                reader.consume(used);
                if done {
                    let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                    line.clear();
                    if tx.send(Input::Agent(text)).is_err() {
                        return;
                    }
                }
            }
        });
        self.agent = Some(Agent { child, stdin });
        Ok(())
    }

    /// Writes raw bytes to the agent (a write error means it is gone: logged, not fatal).
    fn write(&mut self, bytes: &[u8]) {
        if let Some(agent) = &mut self.agent {
            if let Err(e) = agent
                .stdin
                .write_all(bytes)
                .and_then(|()| agent.stdin.flush())
            {
                log(&format!("cannot write to the agent: {e}"));
            }
        }
    }

    fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write(line.as_bytes());
    }

    fn request(&mut self, method: &str, params: Value, purpose: Purpose) {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.insert(id, purpose);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    fn prompt(&mut self, session_id: String, text: String) {
        self.show(turn(&session_id, TurnState::Running));
        self.request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
            Purpose::Prompt { session_id },
        );
        if self.mode == Mode::StopReadingAgent {
            self.agent_paused.store(true, Ordering::SeqCst);
        }
    }

    fn choose(&mut self, seq: Option<u64>, request_id: Value, option_id: &str) {
        let Some(pos) = self.approvals.iter().position(|(id, _)| *id == request_id) else {
            self.error(seq, "no pending approval with that requestId");
            return;
        };
        let (request_id, session_id) = self.approvals.remove(pos);
        let answer = json!({"jsonrpc": "2.0", "id": request_id,
                            "result": {"outcome": {"outcome": "selected", "optionId": option_id}}});
        if self.mode == Mode::BadIds {
            // An id the agent never used, then the right answer twice.
            let mut stray = answer.clone();
            stray["id"] = json!("chaos-no-such-request");
            self.send(&stray);
            self.send(&answer);
        }
        self.send(&answer);
        self.show(Event::ApprovalResolved(ApprovalResolved {
            session_id,
            request_id,
            outcome: Outcome::Selected,
            option_id: Some(option_id.to_owned()),
            by: Some(ResolvedBy::User),
            observed: None,
        }));
    }

    fn cancel(&mut self, session_id: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": "session/cancel",
                          "params": {"sessionId": session_id}}));
        if self.mode == Mode::Echo {
            self.stopped_turns.push(session_id.to_owned());
        }
        self.cancel_approvals(session_id);
    }

    /// Answers every open approval of the session `cancelled`, as the turn's Stop does.
    fn cancel_approvals(&mut self, session_id: &str) {
        self.resolve_approvals(|(_, sid)| sid == session_id);
    }

    /// Answers the open approvals that `which` picks `cancelled`, and closes their cards.
    fn resolve_approvals(&mut self, which: impl Fn(&(Value, String)) -> bool) {
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.approvals)
            .into_iter()
            .partition(which);
        self.approvals = others;
        for (request_id, sid) in mine {
            self.send(&json!({"jsonrpc": "2.0", "id": request_id,
                              "result": {"outcome": {"outcome": "cancelled"}}}));
            self.show(Event::ApprovalResolved(ApprovalResolved {
                session_id: sid,
                request_id,
                outcome: Outcome::Cancelled,
                option_id: None,
                by: Some(ResolvedBy::Cancel),
                observed: None,
            }));
        }
    }

    fn on_agent(&mut self, line: &str) {
        let Ok(Value::Object(frame)) = serde_json::from_str::<Value>(line) else {
            log("ignoring a line from the agent that is not a JSON object");
            return;
        };
        let method = frame.get("method").and_then(Value::as_str);
        let id = frame.get("id").cloned();
        match (method, id) {
            (Some(method), Some(id)) => self.on_request(method, id, frame.get("params")),
            // The agent withdraws a request: `echo` closes the card, answering it `cancelled`.
            (Some("$/cancel_request"), None) if self.mode == Mode::Echo => {
                if let Some(request_id) = frame.get("params").and_then(|p| p.get("requestId")) {
                    self.resolve_approvals(|(id, _)| id == request_id);
                }
            }
            (Some(_), None) => {} // notifications: nothing in this client's model
            (None, Some(id)) => {
                let purpose = id.as_u64().and_then(|n| self.pending.remove(&n));
                if let Some(purpose) = purpose {
                    self.on_response(purpose, frame.get("result"), frame.get("error"));
                }
            }
            (None, None) => {}
        }
    }

    fn on_request(&mut self, method: &str, id: Value, params: Option<&Value>) {
        if method.starts_with("terminal/") && crate::terminal::advertises_terminal(self.mode) {
            match self.terminals.answer(self.mode, method, &id, params) {
                crate::terminal::Reply::Json(answer) => self.send(&answer),
                crate::terminal::Reply::Raw(line) => self.write(&line),
                crate::terminal::Reply::Nothing => log("not answering terminal/wait_for_exit"),
            }
            return;
        }
        if method != "session/request_permission" {
            let response = match (self.mode, method) {
                // No model, no disk: the cheapest answer the agent accepts.
                (Mode::Echo, "fs/read_text_file") => {
                    json!({"jsonrpc": "2.0", "id": id, "result": {"content": ""}})
                }
                (Mode::Echo, _) => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
                _ => json!({"jsonrpc": "2.0", "id": id,
                            "error": {"code": -32601, "message": "Method not found"}}),
            };
            self.send(&response);
            return;
        }
        match self.mode {
            Mode::AbortMidTurn => {
                log("aborting in the middle of the turn");
                std::process::abort();
            }
            Mode::SegvMidTurn => {
                log("dying of SIGSEGV in the middle of the turn");
                segfault();
            }
            Mode::NeverAnswer => {
                log("ignoring the permission request");
                return;
            }
            _ => {}
        }
        let params = params.cloned().unwrap_or(Value::Null);
        let session_id = params["sessionId"].as_str().unwrap_or_default().to_owned();
        let buttons: Vec<PresentedOption> = params["options"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| {
                let option_id = o.get("optionId")?.as_str()?;
                let label = o.get("name").and_then(Value::as_str).unwrap_or(option_id);
                Some(PresentedOption {
                    option_id: option_id.to_owned(),
                    label: label.to_owned(),
                })
            })
            .collect();
        self.show(Event::Approval(Approval {
            session_id: session_id.clone(),
            request_id: id.clone(),
            // A request without a toolCallId breaks the schema's `toolCallId` (a string): the
            // harness is then told "" as the row, as this client always showed it.
            tool_call_id: Some(
                params["toolCall"]["toolCallId"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ),
            subject: Subject::Command,
            options: Some(buttons),
            observed: None,
        }));
        // Wire only there is no user to ask: the client's own policy answers.
        let by_policy = (!self.adapter).then(|| policy_choice(&params)).flatten();
        let stopped = self.stopped_turns.contains(&session_id);
        self.approvals.push((id.clone(), session_id.clone()));
        if stopped {
            self.cancel_approvals(&session_id);
        } else if let Some(option_id) = by_policy {
            self.choose(None, id, &option_id);
        }
    }

    fn on_response(&mut self, purpose: Purpose, result: Option<&Value>, error: Option<&Value>) {
        match purpose {
            Purpose::Initialize => {
                self.initialized = true;
                self.auth_methods = result
                    .and_then(|r| r.get("authMethods"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|m| Some(m.get("id")?.as_str()?.to_owned()))
                    .collect();
                self.misbehave_after_initialize();
                for ask in std::mem::take(&mut self.waiting) {
                    self.open_session(ask);
                }
            }
            Purpose::NewSession(ask) => {
                let Some(session_id) = result
                    .and_then(|r| r.get("sessionId"))
                    .and_then(Value::as_str)
                else {
                    let method = auth_method(error, &self.auth_methods);
                    match method.filter(|_| self.mode == Mode::Echo) {
                        Some(method_id) => self.request(
                            "authenticate",
                            json!({"methodId": method_id}),
                            Purpose::Authenticate(ask),
                        ),
                        None => self.error(ask.seq, "session/new failed"),
                    }
                    return;
                };
                self.sessions
                    .push((ask.handle.clone(), session_id.to_owned()));
                self.show(Event::SessionOpened {
                    session: ask.handle,
                    session_id: session_id.to_owned(),
                });
                if let Some(text) = self.prompt.take() {
                    self.prompt(session_id.to_owned(), text);
                }
            }
            Purpose::Authenticate(ask) => match result {
                Some(_) => self.open_session(ask),
                None => self.error(ask.seq, "authenticate failed"),
            },
            Purpose::Prompt { session_id } => {
                self.stopped_turns.retain(|stopped| *stopped != session_id);
                let stop = result
                    .and_then(|r| r.get("stopReason"))
                    .and_then(Value::as_str);
                let state = match stop {
                    Some("cancelled") => TurnState::Cancelled,
                    Some("refusal") => TurnState::Refused,
                    Some(_) => TurnState::Completed,
                    None => TurnState::Failed,
                };
                self.show(turn(&session_id, state));
                if !self.adapter {
                    log(&format!(
                        "the turn ended: {}",
                        stop.unwrap_or("no stopReason")
                    ));
                    self.exit = Some(0);
                }
            }
        }
    }

    /// The wire-level misbehaviours, done once the connection is up.
    fn misbehave_after_initialize(&mut self) {
        match self.mode {
            Mode::Garbage => {
                log("writing garbage to the agent");
                self.write(b"Loading config...\n\x1b[32mready\x1b[0m\n");
            }
            Mode::GiantLine => {
                log("writing one 50 MB line to the agent");
                let chunk = vec![b'x'; 1 << 20];
                for _ in 0..50 {
                    self.write(&chunk);
                }
                self.write(b"\n");
            }
            Mode::Flood => {
                log("flooding the agent with 100000 notifications");
                if let Some(agent) = &mut self.agent {
                    let mut out = BufWriter::new(&mut agent.stdin);
                    for n in 0..100_000u32 {
                        let line =
                            json!({"jsonrpc": "2.0", "method": "chaos/flood", "params": {"n": n}});
                        if writeln!(out, "{line}").is_err() {
                            break;
                        }
                    }
                    let _ = out.flush();
                }
            }
            _ => {}
        }
    }
}

/// The option a wire-only client picks by itself: the first `allow_once`, else the first.
/// For an "authentication required" error (-32000, ACP's `auth_required`): the first method its
/// `data.authMethods` offers, else the first of `initialize`'s — what a client that authenticates
/// without asking picks. None for any other error, or when no method is offered.
fn auth_method(error: Option<&Value>, from_initialize: &[String]) -> Option<String> {
    let error = error?;
    if error.get("code").and_then(Value::as_i64) != Some(-32000) {
        return None;
    }
    let offered = error
        .pointer("/data/authMethods")
        .and_then(Value::as_array)
        .and_then(|methods| methods.first()?.get("id")?.as_str());
    offered
        .map(str::to_owned)
        .or_else(|| from_initialize.first().cloned())
}

fn policy_choice(params: &Value) -> Option<String> {
    let options = params["options"].as_array()?;
    options
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .or_else(|| options.first())
        .and_then(|o| o["optionId"].as_str())
        .map(str::to_owned)
}

/// Dies of SIGSEGV. The Rust runtime installs its own SIGSEGV handler (stack-overflow
/// detection), so the default action is restored first.
fn segfault() -> ! {
    use nix::sys::signal::{SigHandler, Signal, raise, signal};
    // SAFETY: restoring the default disposition; no handler code runs.
    unsafe {
        let _ = signal(Signal::SIGSEGV, SigHandler::SigDfl);
    }
    let _ = raise(Signal::SIGSEGV);
    std::process::abort()
}
