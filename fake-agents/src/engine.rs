//! The scenario engine: plays one [`Case`] as the agent, against whatever client connects.
//!
//! Contract: the engine owns the agent side of the wire (what to send, when, and what to wait
//! for); the caller provides the transport ([`Connector`]) and the person at the client
//! ([`UserDriver`]), and keeps the [`Recorder`] for the checks.
//!
//! * The agent connection is accepted lazily, at the first wire step, because the client spawns
//!   the agent when *it* wants to (often only when the user opens a session).
//! * One reader task per connection records every client line (before anything else looks at
//!   it) and files the JSON objects into a [`Mailbox`]; it goes on recording after [`run`]
//!   returns, until EOF, so late frames still reach the transcript.
//! * Every frame the engine writes is recorded before it is written.
//! * `user` steps run in the background, one after another, while the scenario goes on: a
//!   control-plane action may only complete after the agent has answered (opening a session
//!   needs our `session/new` reply), so waiting for it before the next wire step would deadlock.
//!   A failed action ends the run as incomplete at that action's step.
//! * Every wait has a deadline (the step timeout); nothing panics on client input.
//!
//! Modules: `conn` the agent connection (accepted lazily, an [`AgentLink`]; waits and
//! writes) · `steps` the wire steps · `owned` the steps of a run that frees them as it goes ·
//! `user` the background user-action queue · `unmatched` client requests no step takes,
//! answered as the real agent answers them · `departure` a client that closes the connection
//! while the agent is writing.

mod conn;
mod departure;
mod owned;
mod steps;
mod unmatched;
mod user;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};

use crate::link::AgentLink;
use crate::machine_time::Deadline;
use crate::mailbox::Msg;
use crate::scenario::{Case, Step, StepKind};
use crate::vars::Vars;
use crate::wire;
use acp_vocab::note::Note;
use acp_vocab::transcript::Recorder;
use owned::OwnedSteps;
use unmatched::Expects;
use user::{Queued, UserProgress, drive_user};

/// How to run a case.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// `${cwd}`: the client's workspace.
    pub cwd: PathBuf,
    /// `${outside}`: a directory outside the workspace.
    pub outside: PathBuf,
    /// Default for steps without `timeout_ms`.
    pub step_timeout: Duration,
    /// Largest client frame accepted (see [`wire::FrameReader`]).
    pub max_frame: usize,
    /// Standalone mode: a person is the client's user, so no step waits less than
    /// `step_timeout` (a scenario's short `timeout_ms` is meant for automated clients).
    pub standalone: bool,
    /// Extra time for the client to start the agent: added to every step's timeout until the
    /// first agent connection is there (a client profile's `startup_ms`: an interpreter's
    /// imports).
    pub startup: Duration,
}

impl EngineConfig {
    /// Defaults: 5 s step timeout, 16 MiB frames, harness mode.
    pub fn new(cwd: PathBuf, outside: PathBuf) -> Self {
        EngineConfig {
            cwd,
            outside,
            step_timeout: Duration::from_secs(5),
            max_frame: wire::DEFAULT_MAX_FRAME,
            standalone: false,
            startup: Duration::ZERO,
        }
    }
}

/// One agent connection opened by the client (one spawned agent process).
pub struct AgentConn {
    /// Transcript connection id (1 = the first connection).
    pub id: u32,
    /// What the client writes to the agent's stdin.
    pub reader: Box<dyn AsyncRead + Send + Unpin>,
    /// The agent's stdout, read by the client.
    pub writer: Box<dyn AsyncWrite + Send + Unpin>,
    /// The process the client runs as this agent, which a `fault = "crash"` step kills: the
    /// relay (the socket's peer), or this very process in standalone mode; `None` where there
    /// is no process to kill (an in-memory pipe).
    pub pid: Option<i32>,
}

/// Hands out agent connections (the relay's Unix socket, or stdio in standalone mode).
pub trait Connector: Send {
    /// The next connection. The engine bounds the wait with the step timeout. An error of kind
    /// `ConnectionAborted` says the client is gone (the run is incomplete, with the error as the
    /// reason); any other error is the harness's own failure.
    fn accept(&mut self) -> impl Future<Output = std::io::Result<AgentConn>> + Send;

    /// Resolves once the client process is known to have exited. A pause (`delay` step) ends
    /// then: whether the client died before or during a pause is timing, and the scenario's
    /// rest is played without writing either way (see `departure`). By default, never.
    fn client_gone(&self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }
}

/// What the person at the client does (a `user` step, resolved).
#[derive(Debug, Clone, PartialEq)]
pub enum UserAction {
    NewSession {
        session: String,
        cwd: String,
    },
    Prompt {
        session: String,
        text: String,
        /// The scenario killed the agent before this prompt (`fault = "crash"`): the session
        /// may never open, and a client that never says so is for the checks to judge
        /// (`session-open`), so the user gives up on it rather than ending the run.
        agent_killed: bool,
    },
    /// option already resolved from kind/id/each; `offered` = the options array of the request
    /// as sent
    Choose {
        request_id: Value,
        option_id: String,
        offered: Value,
    },
    Cancel {
        session: String,
        pending_request: Option<Value>,
    },
    // ----- session lifecycle
    LoadSession {
        session: String,
        session_id: String,
        cwd: String,
    },
    ResumeSession {
        session: String,
        session_id: String,
        cwd: String,
    },
    ListSessions {
        cwd: Option<String>,
    },
    CloseSession {
        session: String,
    },
    // ---- modes and config options ----
    SetMode {
        session: String,
        mode_id: String,
    },
    SetConfigOption {
        session: String,
        config_id: String,
        value: String,
    },
}

/// Carries out user actions (the control plane, or instructions printed for a person).
pub trait UserDriver: Send {
    /// Does `action`, giving up after `timeout`; `Err` says why it was not done.
    fn act(
        &mut self,
        action: UserAction,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), UserFailure>> + Send;
}

/// Why a user action was not done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserFailure {
    /// The user could not do it (no card, option not presented, a write that blocked): the run
    /// ends incomplete at that step.
    Failed(String),
    /// The scenario's premise does not hold for this client, so nothing of the case can be
    /// judged: e.g. it cancels "while a request is pending", and the client answered the request
    /// by itself before the user could. The run ends not applicable, with this reason.
    NotApplicable(String),
}

impl std::fmt::Display for UserFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UserFailure::Failed(reason) | UserFailure::NotApplicable(reason) => f.write_str(reason),
        }
    }
}

impl From<String> for UserFailure {
    fn from(reason: String) -> Self {
        UserFailure::Failed(reason)
    }
}

impl From<&str> for UserFailure {
    fn from(reason: &str) -> Self {
        UserFailure::Failed(reason.to_owned())
    }
}

/// How a run ended: the shared vocabulary's run end. The engine ends a run `Completed`,
/// `Incomplete` (at top-level step `step`, 1-based: a wait timed out, the client closed the
/// connection, a reply could not be sent, or a user action failed), `NotApplicable` (a required
/// client capability was not advertised) or `HarnessError` (a scenario that cannot be filled
/// in, a transport error of the harness); the runner adds what only it sees.
pub use acp_vocab::run_end::RunEnd;

pub struct Outcome {
    pub end: RunEnd,
    /// writers kept open until the caller has shut the client down
    pub keep_alive: Vec<Box<dyn AsyncWrite + Send + Unpin>>,
    /// reader tasks; they end at EOF
    pub readers: Vec<tokio::task::JoinHandle<()>>,
}

/// Runs one case to its end. Never panics on client behaviour; every wait is bounded.
pub async fn run<C: Connector, U: UserDriver>(
    case: &Case,
    cfg: &EngineConfig,
    connector: &mut C,
    user: &mut U,
    rec: &Recorder,
) -> Outcome {
    let expects = Expects::of(&case.scenario.steps);
    play(case, None, expects, cfg, connector, user, rec).await
}

/// [`run`], freeing each top-level step once it is played, when `case` holds the only reference
/// to its scenario: the steps are taken out of the scenario (it has none afterwards) and each is
/// dropped as soon as the next one starts, so a long scenario's steps (about 0.45 KB each, most
/// of it a `send` frame's text) do not stay alive beside the transcript they turn into
/// (docs/performance.md, "Frames per scenario"). Nothing of a step is needed once it has run: a
/// run's end, notes and messages carry copies of its label and line. A scenario shared with
/// other cases (an `each = true` expansion, a caller that keeps it) is played as by [`run`].
pub async fn run_freeing_steps<C: Connector, U: UserDriver>(
    case: &mut Case,
    cfg: &EngineConfig,
    connector: &mut C,
    user: &mut U,
    rec: &Recorder,
) -> Outcome {
    let expects = Expects::of(&case.scenario.steps);
    let owned = Arc::get_mut(&mut case.scenario)
        .map(|scenario| OwnedSteps::new(std::mem::take(&mut scenario.steps)));
    play(case, owned, expects, cfg, connector, user, rec).await
}

/// Plays `case`: its own steps, or `owned` (taken out of it) when given; `expects` are the
/// `expect` steps of all of them.
async fn play<C: Connector, U: UserDriver>(
    case: &Case,
    owned: Option<OwnedSteps>,
    expects: Expects,
    cfg: &EngineConfig,
    connector: &mut C,
    user: &mut U,
    rec: &Recorder,
) -> Outcome {
    let (queue_tx, queue_rx) = mpsc::unbounded_channel();
    let (progress_tx, progress_rx) = watch::channel(UserProgress::default());
    let mut engine = Engine {
        case,
        cfg,
        connector,
        rec,
        conn: None,
        vars: Vars::default(),
        next_id: 0,
        client_requests: HashMap::new(),
        sent: HashMap::new(),
        requires_checked: false,
        queue: queue_tx,
        progress: progress_rx,
        queued: 0,
        faulting: None,
        outbox: Vec::new(),
        more_sends: false,
        agent_killed: false,
        expects,
        departed: None,
        at_top: 0,
    };
    let result = {
        let steps = engine.run_all(owned);
        let users = drive_user(user, queue_rx, progress_tx);
        tokio::pin!(steps, users);
        tokio::select! {
            result = &mut steps => result,
            never = &mut users => match never {},
        }
    };
    let end = match result {
        Ok(()) => RunEnd::Completed,
        Err(Stop::Incomplete { step, reason }) => RunEnd::Incomplete { step, reason },
        // `run_all` turns it into a normal end; kept total for the match.
        Err(Stop::Ended) => RunEnd::Completed,
        Err(Stop::NotApplicable(reason)) => RunEnd::NotApplicable { reason },
        Err(Stop::Harness(reason)) => RunEnd::HarnessError { reason },
    };
    let (keep_alive, readers) = match engine.conn.take() {
        Some(link) => {
            let (writer, reader) = link.into_parts();
            (vec![writer], vec![reader])
        }
        None => (Vec::new(), Vec::new()),
    };
    Outcome {
        end,
        keep_alive,
        readers,
    }
}

/// Why the steps stopped early.
enum Stop {
    /// An `on_timeout` branch ran: the scenario ends there, complete (the steps after the
    /// `expect` assume its message arrived).
    Ended,
    Incomplete {
        step: usize,
        reason: String,
    },
    NotApplicable(String),
    Harness(String),
}

/// A request we sent and named with `as`.
#[derive(Clone)]
struct Sent {
    id: Value,
    /// `params.options` as sent, if any.
    options: Option<Value>,
}

struct Engine<'a, C> {
    case: &'a Case,
    cfg: &'a EngineConfig,
    connector: &'a mut C,
    rec: &'a Recorder,
    conn: Option<AgentLink>,
    vars: Vars,
    /// Next fresh request id for `"id":"${id}"`.
    next_id: u64,
    /// Client requests remembered with `expect … as`.
    client_requests: HashMap<String, Msg>,
    /// Requests we sent with `as`.
    sent: HashMap<String, Sent>,
    requires_checked: bool,
    queue: mpsc::UnboundedSender<Queued>,
    progress: watch::Receiver<UserProgress>,
    /// User actions queued so far.
    queued: usize,
    /// While a `fault` step writes: its kind, recorded on every frame it writes.
    faulting: Option<acp_vocab::note::FaultKind>,
    /// Frames of `send` steps already recorded but not yet written: a run of consecutive sends
    /// goes out in a few writes, so the relay and the client wake once per batch rather than
    /// once per frame (docs/performance.md, "Frames per scenario"). Written with the next frame
    /// that is not queued, before anything else the engine writes or waits for.
    outbox: Vec<u8>,
    /// The step being run is a `send` followed by another `send` in the same list.
    more_sends: bool,
    /// A `fault = "crash"` step has killed the agent.
    agent_killed: bool,
    /// What every `expect` step of the scenario takes (see `unmatched`).
    expects: Expects,
    /// Where the client closed the agent connection while the agent was writing to it: the
    /// agent's later writes on that connection are recorded, not written (see `departure`).
    departed: Option<departure::Departure>,
    /// The top-level step being played (1-based).
    at_top: usize,
}

/// Largest batch of queued `send` frames: past it the batch is written, so a long run of sends
/// holds at most this much, and a client that stops reading is noticed within a few frames (at
/// the step whose write does not get through, as without batching).
const BATCH_BYTES: usize = 64 * 1024;

type StepResult = Result<(), Stop>;

impl<'a, C: Connector> Engine<'a, C> {
    async fn run_all(&mut self, owned: Option<OwnedSteps>) -> StepResult {
        self.vars = Vars::initial(&self.case.scenario, &self.cfg.cwd, &self.cfg.outside)
            .map_err(Stop::Harness)?;
        let played = match owned {
            Some(steps) => self.run_owned_steps(steps).await,
            None => {
                let steps: &'a [Step] = &self.case.scenario.steps;
                self.run_steps(steps).await
            }
        };
        match played {
            Ok(()) | Err(Stop::Ended) => self.wait_user_idle().await,
            Err(other) => Err(other),
        }
    }

    /// Boxed because `await` cases run nested steps (recursion).
    fn run_steps<'s>(
        &'s mut self,
        steps: &'s [Step],
    ) -> Pin<Box<dyn Future<Output = StepResult> + Send + 's>> {
        Box::pin(async move {
            for (i, step) in steps.iter().enumerate() {
                self.play_step(step, steps.get(i + 1)).await?;
            }
            Ok(())
        })
    }

    /// The top-level steps, each dropped once played ([`run_freeing_steps`]).
    async fn run_owned_steps(&mut self, mut steps: OwnedSteps) -> StepResult {
        while let Some(step) = steps.take_next() {
            self.play_step(&step, steps.peek()).await?;
        }
        Ok(())
    }

    /// Runs `step`, whose list goes on with `next`.
    async fn play_step(&mut self, step: &Step, next: Option<&Step>) -> StepResult {
        self.more_sends = matches!(next.map(|next| &next.kind), Some(StepKind::Send { .. }));
        self.at_top = step.top;
        let result = self.step(step).await;
        if result.is_err() {
            // Frames recorded as sent must reach the client, whatever stopped the run.
            self.flush_outbox().await;
        }
        result
    }

    fn step_ref(&self, step: &Step) -> String {
        self.case.step_ref(step)
    }

    fn timeout(&self, step: &Step) -> Duration {
        let t = step.timeout.unwrap_or(self.cfg.step_timeout);
        let t = if self.cfg.standalone {
            t.max(self.cfg.step_timeout)
        } else {
            t
        };
        // Until the client has started the agent, its startup time comes on top.
        match self.conn {
            None => t + self.cfg.startup,
            Some(_) => t,
        }
    }

    fn harness(&self, step: &Step, msg: impl std::fmt::Display) -> Stop {
        Stop::Harness(format!("{}: {msg}", self.step_ref(step)))
    }

    fn incomplete(&self, step: &Step, reason: String) -> Stop {
        Stop::Incomplete {
            step: step.top,
            reason,
        }
    }

    /// A wait that ran out: noted in the transcript, then the run stops.
    fn timed_out(&self, step: &Step, what: &str, deadline: &Deadline) -> Stop {
        let reason = format!(
            "{}: {what} within {}",
            self.step_ref(step),
            deadline.elapsed().describe(deadline.budget())
        );
        self.rec.note(&Note::StepTimeout {
            step: Some(step.top),
            label: Some(step.label.clone()),
            reason: Some(reason.clone()),
            waiting_for: None,
            waited_us: Some(deadline.elapsed().wall.as_micros() as u64),
        });
        self.incomplete(step, reason)
    }

    /// The client closed the agent connection while `step` was `what` (waiting for a message):
    /// the scenario still needed it, so the run is incomplete. Where the connection closed
    /// earlier, under the agent's writes, the reason says so.
    fn closed(&self, step: &Step, what: &str) -> Stop {
        let here = self.where_step(step);
        let reason = match self.departure_here() {
            Some(departed) => format!(
                "client closed the agent connection at {} {}, and {here} was {what}",
                departed.at, departed.how
            ),
            None => {
                // Noted so that the grading can tell a run the client abandoned from one that
                // timed out.
                self.rec.note(&Note::ConnectionClosed {
                    step: step.label.clone(),
                });
                format!("client closed the agent connection at {here} while {what}")
            }
        };
        self.incomplete(step, reason)
    }

    /// "step 13 (read-file.toml:72)".
    fn where_step(&self, step: &Step) -> String {
        format!(
            "step {} ({}:{})",
            step.label,
            self.case.scenario.file_name(),
            step.line
        )
    }
}

#[cfg(test)]
mod tests;
