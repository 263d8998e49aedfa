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

mod agent;
mod approvals;
mod control;
mod inbound;
mod misbehave;
mod session;

use std::collections::HashMap;
use std::process::{Child, ChildStdin, ExitCode};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{self, Sender};

use serde_json::Value;

use crate::early::hello;
use crate::{Mode, WireOnly};

use control::{emit, spawn_control_reader};

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
