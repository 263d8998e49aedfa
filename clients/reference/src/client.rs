//! The client core: sessions, prompt turns, and what to do with every message of the agent.
//!
//! User actions are methods (`new_session`, `prompt`, `choose`, `cancel`): the calls a UI's
//! buttons make. Every change of the model is queued as an [`Event`] that the UI (here the
//! control adapter) takes with [`Client::take_events`]. The mutants' decision points are marked
//! `MUTANT`.

use std::path::Path;

use serde_json::{Value, json};

use crate::approvals::{self, Approval, Approvals};
use crate::decide::{self, Decider, Policy};
use crate::fs;
use crate::fs_scope::FsGrants;
use crate::history::History;
use crate::mutation::Mutant;
use crate::rpc::{Connection, Incoming, RpcError};
use crate::subject::{Subject, classify};
use crate::terminal::Terminals;
use crate::timeline::{ItemView, Timeline};
use acp_vocab::control::{
    ApprovalResolved, Event, Item, Outcome, Reopen, ResolvedBy, Turn, TurnState,
};
use acp_vocab::method::Method;

mod agent;
mod auth;
mod fs_calls;
mod modes;
mod permissions;
mod plan;
mod sessions;
mod updates;

pub const NAME: &str = "acp-reference-client";
/// The only ACP protocol version this client speaks.
pub const PROTOCOL_VERSION: u64 = 1;

/// What one of our requests to the agent was for.
#[derive(Debug)]
pub enum Purpose {
    Initialize,
    NewSession {
        seq: u64,
        handle: String,
    },
    Prompt {
        session_id: String,
    },
    // session lifecycle (sessions.rs)
    Reopen {
        seq: u64,
        handle: String,
    },
    ListSessions {
        seq: u64,
    },
    CloseSession {
        seq: u64,
        handle: String,
    },
    /// `session/cancel` sent as a request (only `cancel-as-request`): its answer means nothing.
    CancelRequest,
    // ---- modes, config options and authentication (client/modes.rs, client/auth.rs) ----
    SetMode {
        seq: u64,
        session_id: String,
        mode_id: String,
    },
    SetConfigOption {
        seq: u64,
        session_id: String,
        config_id: String,
        value: String,
    },
    Authenticate {
        handle: String,
    },
}

enum AgentState {
    NotStarted,
    /// `initialize` sent; these session handles wait for it.
    Initializing(Vec<String>),
    Ready,
    /// Failed or exited; the reason is reported to any further command that needs the agent.
    Gone(String),
}

struct Session {
    /// The harness's handle (`s1`).
    handle: String,
    /// The `seq` of the `new_session` command (for errors while it opens).
    seq: u64,
    cwd: String,
    /// The ACP session id, once `session/new` answered.
    id: Option<String>,
    /// Turns started so far; the current turn's number while one runs.
    turn: u64,
    running: bool,
    /// The user cancelled the running turn; waiting for the agent's `stopReason`.
    cancelling: bool,
    /// Set when the session reopens an earlier one (sessions.rs): how, and its ACP id.
    reopen: Option<(Reopen, String)>,
    /// The conversation as shown (every update of the session folds in).
    history: History,
    /// Its modes and config options, offered and shown (client/modes.rs).
    settings: modes::Settings,
    /// The plan shown for the session, in display order (client/plan.rs).
    plan: Vec<acp_vocab::plan::PlanEntryShown>,
}

pub struct Client {
    agent_argv: Vec<String>,
    mutant: Option<Mutant>,
    conn: Option<Connection<Purpose>>,
    agent: AgentState,
    sessions: Vec<Session>,
    timeline: Timeline,
    approvals: Approvals,
    events: Vec<Event>,
    /// The ACP session the user prompted last (only `global-approval-handler` reads it).
    last_prompted: Option<String>,
    /// What the client approves without asking (its policy and the user's remembered grants).
    decider: Decider,
    /// Paths outside the workspace that approved requests opened to the agent's fs calls.
    fs_grants: FsGrants,
    /// The agent's `agentCapabilities` from its `initialize` answer (`null` before).
    agent_caps: Value,
    /// The agent's terminals (real processes).
    terminals: Terminals,
    /// Set by `stop-after-unknown-update` at the first unknown update: nothing after it is read.
    deaf_to_updates: bool,
    /// `late-unknown-request`: answers held back until the agent's next message.
    held_answers: Vec<(Value, RpcError)>,
    /// The agent's auth methods, and whether `authenticate` succeeded (client/auth.rs).
    auth: auth::Auth,
}

/// The crate version; a mutant says so in semver build metadata (`0.1.0+always-command`).
pub fn version(mutant: Option<Mutant>) -> String {
    match mutant {
        None => env!("CARGO_PKG_VERSION").to_owned(),
        Some(mutant) => format!("{}+{mutant}", env!("CARGO_PKG_VERSION")),
    }
}

fn selected(option_id: &str) -> Value {
    json!({"outcome": {"outcome": "selected", "optionId": option_id}})
}

fn cancelled() -> Value {
    json!({"outcome": {"outcome": "cancelled"}})
}

impl Client {
    pub fn new(agent_argv: Vec<String>, mutant: Option<Mutant>) -> Self {
        Client {
            agent_argv,
            mutant,
            conn: None,
            agent: AgentState::NotStarted,
            sessions: Vec::new(),
            timeline: Timeline::new(mutant),
            approvals: Approvals::default(),
            events: Vec::new(),
            last_prompted: None,
            decider: Decider::new(Policy::for_mutant(mutant), mutant),
            fs_grants: FsGrants::default(),
            agent_caps: Value::Null,
            terminals: Terminals::new(mutant),
            deaf_to_updates: false,
            held_answers: Vec::new(),
            auth: auth::Auth::default(),
        }
    }

    /// Run with this auto-approval policy (`--policy`), declared in `hello`.
    pub fn with_policy(mut self, policy: Option<Policy>) -> Self {
        if policy.is_some() {
            self.decider = Decider::new(policy, self.mutant);
        }
        self
    }

    pub fn policy(&self) -> Option<&Policy> {
        self.decider.policy()
    }

    pub fn name(&self) -> &'static str {
        NAME
    }

    pub fn version(&self) -> String {
        version(self.mutant)
    }

    pub fn take_events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.events)
    }

    pub fn report_error(&mut self, seq: Option<u64>, message: impl Into<String>) {
        let message = message.into();
        log!("error: {message}");
        self.events.push(Event::Error {
            seq,
            message,
            observed: None,
        });
    }

    fn show_item(&mut self, view: Option<ItemView>) {
        if let Some(view) = view {
            self.events.push(Event::Item(Item {
                session_id: view.session_id,
                tool_call_id: view.tool_call_id,
                item_type: view.item_type,
                status: view.status,
                title: view.title,
                observed: None,
            }));
        }
    }

    fn end_turn(
        &mut self,
        session_id: &str,
        state: TurnState,
        stop_reason: Option<String>,
        message: Option<String>,
    ) {
        if let Some(session) = self.session_by_id_mut(session_id) {
            session.running = false;
            session.cancelling = false;
        }
        // MUTANT turn-never-ended (pingdotgg/t3code#7484, agentclientprotocol/claude-agent-acp#694):
        // the turn is over in the model, but the view never hears of it: the spinner runs on.
        if self.mutant == Some(Mutant::TurnNeverEnded) {
            return;
        }
        self.events.push(Event::Turn(Turn {
            session_id: session_id.to_owned(),
            state,
            stop_reason,
            message,
            observed: None,
        }));
    }

    fn session_by_handle(&self, handle: &str) -> Option<&Session> {
        self.sessions.iter().find(|s| s.handle == handle)
    }

    fn session_by_id(&self, session_id: &str) -> Option<&Session> {
        self.sessions
            .iter()
            .find(|s| s.id.as_deref() == Some(session_id))
    }

    fn session_by_id_mut(&mut self, session_id: &str) -> Option<&mut Session> {
        self.sessions
            .iter_mut()
            .find(|s| s.id.as_deref() == Some(session_id))
    }

    /// The open ACP session id behind a handle, or an error event for command `seq`.
    fn open_session_id(&mut self, seq: u64, handle: &str) -> Option<String> {
        match self.session_by_handle(handle).map(|s| s.id.clone()) {
            Some(Some(id)) => Some(id),
            Some(None) => {
                self.report_error(Some(seq), format!("session {handle:?} is not open yet"));
                None
            }
            None => {
                self.report_error(Some(seq), format!("no session {handle:?}"));
                None
            }
        }
    }

    // ----- user actions -------------------------------------------------------------------

    /// Open a session in `cwd`, spawning and initializing the agent first if needed.
    pub async fn new_session(&mut self, seq: u64, handle: String, cwd: String) {
        self.open_session(seq, handle, cwd, None);
    }

    /// Registers an opening session (a new one, or `reopen`: an earlier one to load or resume)
    /// and starts the agent for it, after the checks every opening shares.
    pub(super) fn open_session(
        &mut self,
        seq: u64,
        handle: String,
        cwd: String,
        reopen: Option<(Reopen, String)>,
    ) {
        if self.session_by_handle(&handle).is_some() {
            self.report_error(Some(seq), format!("session {handle:?} already exists"));
            return;
        }
        // R32: the session cwd MUST be absolute; never send one that is not.
        if !Path::new(&cwd).is_absolute() {
            self.report_error(
                Some(seq),
                format!("cwd must be an absolute path, got {cwd:?}"),
            );
            return;
        }
        self.sessions.push(Session {
            handle: handle.clone(),
            seq,
            cwd,
            id: None,
            turn: 0,
            running: false,
            cancelling: false,
            reopen,
            history: History::default(),
            settings: modes::Settings::default(),
            plan: Vec::new(),
        });
        self.start_agent_for(handle);
    }

    /// Spawns and initializes the agent for the opening session `handle`, or queues it until
    /// `initialize` answers, or opens it now.
    fn start_agent_for(&mut self, handle: String) {
        match &mut self.agent {
            AgentState::NotStarted => match Connection::spawn(&self.agent_argv) {
                Ok(mut conn) => {
                    conn.request(
                        Method::Initialize,
                        json!({
                            "protocolVersion": PROTOCOL_VERSION,
                            "clientCapabilities": {
                                "fs": {"readTextFile": true, "writeTextFile": true},
                                "terminal": true
                            },
                            "clientInfo": {"name": self.name(), "version": self.version()}
                        }),
                        Purpose::Initialize,
                    );
                    self.conn = Some(conn);
                    self.agent = AgentState::Initializing(vec![handle]);
                }
                Err(e) => {
                    self.agent = AgentState::Gone(e.to_string());
                    self.fail_sessions_opening();
                }
            },
            AgentState::Initializing(waiting) => waiting.push(handle),
            AgentState::Ready => self.send_session_new(&handle),
            AgentState::Gone(_) => self.fail_sessions_opening(),
        }
        // MUTANT session-before-initialized (ACP #23): session/new goes out right behind
        // initialize instead of waiting for the agent's answer to it.
        // A reopened session (load/resume) still waits: the bug is about session/new, and a
        // reopen needs the agent's capabilities from the initialize answer anyway.
        if self.mutant == Some(Mutant::SessionBeforeInitialized) {
            if let AgentState::Initializing(waiting) = &mut self.agent {
                let (new, reopen): (Vec<String>, Vec<String>) =
                    std::mem::take(waiting).into_iter().partition(|handle| {
                        self.sessions
                            .iter()
                            .any(|s| &s.handle == handle && s.reopen.is_none())
                    });
                if let AgentState::Initializing(waiting) = &mut self.agent {
                    *waiting = reopen;
                }
                for handle in new {
                    self.send_session_new(&handle);
                }
            }
        }
    }

    fn send_session_new(&mut self, handle: &str) {
        let Some(session) = self.session_by_handle(handle) else {
            return;
        };
        if session.reopen.is_some() {
            self.send_reopen(handle);
            return;
        }
        let (seq, mut params) = (session.seq, json!({"cwd": session.cwd, "mcpServers": []}));
        // MUTANT relative-cwd (openkaiden/kaiden#2635): the client assumes the agent runs in the
        // project directory and sends `cwd: "."`.
        if self.mutant == Some(Mutant::RelativeCwd) {
            params["cwd"] = json!(".");
        }
        // MUTANT process-cwd-as-session-cwd (formulahendry/vscode-acp#14 before its fix): the
        // session cwd is the client process's own working directory, not the folder opened.
        if self.mutant == Some(Mutant::ProcessCwdAsSessionCwd) {
            if let Ok(dir) = std::env::current_dir() {
                params["cwd"] = json!(dir.to_string_lossy());
            }
        }
        // MUTANT mcp-server-without-env (can1357/oh-my-pi#7722): an MCP server from a desktop-style
        // config ({command, args}) is forwarded without the `env` array ACP v1 requires.
        if self.mutant == Some(Mutant::McpServerWithoutEnv) {
            params["mcpServers"] = json!([{"name": "filesystem", "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", session.cwd]}]);
        }
        if let Some(conn) = &mut self.conn {
            conn.request(
                Method::SessionNew,
                params,
                Purpose::NewSession {
                    seq,
                    handle: handle.to_owned(),
                },
            );
        }
    }

    /// The agent is gone: every session still opening fails with the reason.
    fn fail_sessions_opening(&mut self) {
        let reason = match &self.agent {
            AgentState::Gone(reason) => reason.clone(),
            _ => return,
        };
        let (opening, open): (Vec<Session>, Vec<Session>) = std::mem::take(&mut self.sessions)
            .into_iter()
            .partition(|s| s.id.is_none());
        self.sessions = open;
        // MUTANT silent-failed-start (acp-cli 0.3.1, src/cli/prompt.rs): the sessions are
        // forgotten, and the user never hears that they could not be opened.
        if self.mutant == Some(Mutant::SilentFailedStart) {
            return;
        }
        for session in opening {
            self.report_error(
                Some(session.seq),
                format!("cannot open session {:?}: {reason}", session.handle),
            );
        }
    }

    /// The user sends `text` in session `handle`.
    pub fn prompt(&mut self, seq: u64, handle: &str, text: String) {
        let Some(session_id) = self.open_session_id(seq, handle) else {
            return;
        };
        if let AgentState::Gone(reason) = &self.agent {
            let message = format!("the agent is not running: {reason}");
            self.report_error(Some(seq), message);
            return;
        }
        let Some(session) = self.session_by_id_mut(&session_id) else {
            return;
        };
        if session.running {
            self.report_error(
                Some(seq),
                format!("a turn is already running in {handle:?}"),
            );
            return;
        }
        session.turn += 1;
        session.running = true;
        session.cancelling = false;
        self.last_prompted = Some(session_id.clone());
        self.events.push(Event::Turn(Turn {
            session_id: session_id.clone(),
            state: TurnState::Running,
            stop_reason: None,
            message: None,
            observed: None,
        }));
        if let Some(conn) = &mut self.conn {
            conn.request(
                Method::SessionPrompt,
                json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
                Purpose::Prompt { session_id },
            );
        }
    }

    /// The user clicks the button of `option_id` on the approval card of `request_id`.
    pub fn choose(&mut self, seq: u64, request_id: &Value, option_id: &str) {
        let Some(approval) = self.approvals.get(request_id) else {
            self.report_error(
                Some(seq),
                format!("no pending approval with requestId {request_id}"),
            );
            return;
        };
        let Some(option) = approval.option(option_id).cloned() else {
            let message = format!(
                "approval {request_id} offers no option {option_id:?} (offered: {})",
                approval
                    .options
                    .iter()
                    .map(|o| format!("{:?}", o.option_id))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            self.report_error(Some(seq), message);
            return;
        };
        let Some(approval) = self.approvals.take(request_id) else {
            return;
        };
        if option.is_allow() {
            self.grant_fs(&approval.session_id, &approval.tool_call_id);
        }
        if option.kind == "allow_always" {
            // The user's "always": later requests of the same kinds in this session are
            // approved without asking (decide.rs).
            let (kinds, _) = self
                .timeline
                .facts(&approval.session_id, &approval.tool_call_id);
            let call = self
                .timeline
                .call(&approval.session_id, &approval.tool_call_id)
                .cloned()
                .unwrap_or_default();
            let kinds = decide::effective_kinds(kinds, &call);
            self.decider.remember(&approval.session_id, &kinds);
        }
        let mut answer = option.option_id.clone();
        // MUTANT unoffered-option (ZERO #915): the answer is built against a fixed default list
        // ("allow" / "reject") instead of the options this request offered.
        if self.mutant == Some(Mutant::UnofferedOption) {
            answer = if option.is_allow() { "allow" } else { "reject" }.to_owned();
        }
        if let Some(conn) = &mut self.conn {
            conn.respond(&approval.request_id, Ok(selected(&answer)));
        }
        self.events.push(Event::ApprovalResolved(ApprovalResolved {
            session_id: approval.session_id.clone(),
            request_id: approval.request_id.clone(),
            outcome: Outcome::Selected,
            option_id: Some(answer),
            by: Some(ResolvedBy::User),
            observed: None,
        }));
    }

    /// The user presses Stop in session `handle`: send `session/cancel`, answer every pending
    /// approval of the session `cancelled` (#43, #44), mark unfinished tool calls cancelled
    /// (R42), and wait for the agent's `stopReason` (updates are still accepted, R50). In an idle
    /// session with no pending approval, Stop does nothing.
    pub fn cancel(&mut self, seq: u64, handle: &str) {
        let Some(session_id) = self.open_session_id(seq, handle) else {
            return;
        };
        // MUTANT cancel-as-reject (acpx Ctrl-C at its y/N prompt): the cancel becomes a "no" to
        // each pending approval, and session/cancel is never sent; the turn runs on.
        if self.mutant == Some(Mutant::CancelAsReject) {
            self.reject_pending(&session_id);
            return;
        }
        let mut pending = self.approvals.take_session(&session_id);
        // MUTANT no-cancelled-answer (Toad, Python SDK gemini example): Stop sends session/cancel
        // but nothing answers the approvals waiting for the user; their cards stay open.
        if self.mutant == Some(Mutant::NoCancelledAnswer) {
            for approval in pending.drain(..) {
                self.approvals.add(approval);
            }
        }
        let Some(session) = self.session_by_id_mut(&session_id) else {
            return;
        };
        // Stop is a no-op in an idle session with nothing waiting for the user.
        if !session.running && pending.is_empty() {
            return;
        }
        let running = session.running;
        session.cancelling = running;
        let turn = session.turn;
        if let Some(conn) = &mut self.conn {
            let params = json!({"sessionId": session_id});
            // MUTANT cancel-as-request (xenodium/acp.el#1, nexu-io/open-design#7959): the cancel
            // goes out as a request with an id instead of the notification it is.
            if self.mutant == Some(Mutant::CancelAsRequest) {
                conn.request(Method::SessionCancel, params, Purpose::CancelRequest);
            } else {
                conn.notify(Method::SessionCancel, params);
            }
        }
        for approval in pending {
            self.answer_cancelled(approval);
        }
        if running {
            for view in self.timeline.cancel_unfinished(&session_id, turn) {
                self.show_item(Some(view));
            }
        }
    }

    /// `cancel-as-reject` only: answer each pending approval of the session with its first
    /// offered `reject_*` option (`cancelled` if it offers none), as a "no" at a y/N prompt.
    fn reject_pending(&mut self, session_id: &str) {
        for approval in self.approvals.take_session(session_id) {
            let reject = approval.options.iter().find(|o| o.is_reject()).cloned();
            let (result, outcome, option_id) = match reject {
                Some(o) => (selected(&o.option_id), Outcome::Selected, Some(o.option_id)),
                None => (cancelled(), Outcome::Cancelled, None),
            };
            if let Some(conn) = &mut self.conn {
                conn.respond(&approval.request_id, Ok(result));
            }
            self.events.push(Event::ApprovalResolved(ApprovalResolved {
                session_id: approval.session_id,
                request_id: approval.request_id,
                outcome,
                option_id,
                by: Some(ResolvedBy::Cancel),
                observed: None,
            }));
        }
    }

    fn answer_cancelled(&mut self, approval: Approval) {
        if let Some(conn) = &mut self.conn {
            conn.respond(&approval.request_id, Ok(cancelled()));
        }
        self.events.push(resolved_by_cancel(approval));
    }
}

/// The event for a card the client answered `cancelled` because the turn was cancelled (R44).
fn resolved_by_cancel(approval: Approval) -> Event {
    Event::ApprovalResolved(ApprovalResolved {
        session_id: approval.session_id,
        request_id: approval.request_id,
        outcome: Outcome::Cancelled,
        option_id: None,
        by: Some(ResolvedBy::Cancel),
        observed: None,
    })
}
