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

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::mailbox::{Mailbox, Msg, WaitError};
use crate::matching::{self, Answer};
use crate::scenario::{
    Case, Choice, Expect, Expected, Fault, OnCase, Reply, Step, StepKind, UserStep,
};
use crate::template;
use crate::vars::Vars;
use crate::wire::{self, Frame, FrameReader};
use acp_vocab::transcript::{Direction, Recorder};

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
}

/// Hands out agent connections (the relay's Unix socket, or stdio in standalone mode).
pub trait Connector: Send {
    /// The next connection. The engine bounds the wait with the step timeout.
    fn accept(&mut self) -> impl Future<Output = std::io::Result<AgentConn>> + Send;
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
}

/// Carries out user actions (the control plane, or instructions printed for a person).
pub trait UserDriver: Send {
    /// Does `action`, giving up after `timeout`; `Err` explains what could not be done (it ends
    /// the run as incomplete).
    fn act(
        &mut self,
        action: UserAction,
        timeout: Duration,
    ) -> impl Future<Output = Result<(), String>> + Send;
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEnd {
    /// Every step ran.
    Completed,
    /// The scenario stopped at top-level step `step` (1-based): a wait timed out, the client
    /// closed the connection, a reply could not be sent, or a user action failed.
    Incomplete { step: usize, reason: String },
    /// A required client capability was not advertised.
    NotApplicable { reason: String },
    /// Our fault (a scenario that cannot be filled in, a transport error of the harness).
    HarnessError { reason: String },
}

pub struct Outcome {
    pub end: EngineEnd,
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
    };
    let result = {
        let steps = engine.run_all();
        let users = drive_user(user, queue_rx, progress_tx);
        tokio::pin!(steps, users);
        tokio::select! {
            result = &mut steps => result,
            never = &mut users => match never {},
        }
    };
    let end = match result {
        Ok(()) => EngineEnd::Completed,
        Err(Stop::Incomplete { step, reason }) => EngineEnd::Incomplete { step, reason },
        // `run_all` turns it into a normal end; kept total for the match.
        Err(Stop::Ended) => EngineEnd::Completed,
        Err(Stop::NotApplicable(reason)) => EngineEnd::NotApplicable { reason },
        Err(Stop::Harness(reason)) => EngineEnd::HarnessError { reason },
    };
    let (keep_alive, readers) = match engine.conn.take() {
        Some(c) => (vec![c.writer], vec![c.reader]),
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

struct Conn {
    id: u32,
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    mailbox: Arc<Mailbox>,
    reader: tokio::task::JoinHandle<()>,
}

/// A request we sent and named with `as`.
#[derive(Clone)]
struct Sent {
    id: Value,
    /// `params.options` as sent, if any.
    options: Option<Value>,
}

struct Queued {
    action: UserAction,
    timeout: Duration,
    step: usize,
    step_ref: String,
}

#[derive(Debug, Default, Clone)]
struct UserProgress {
    done: usize,
    failed: Option<(usize, String)>,
}

/// Runs queued user actions one after another; never returns (the engine's future ends the
/// race in [`run`]).
async fn drive_user<U: UserDriver>(
    user: &mut U,
    mut queue: mpsc::UnboundedReceiver<Queued>,
    progress: watch::Sender<UserProgress>,
) -> Infallible {
    while let Some(q) = queue.recv().await {
        let ms = q.timeout.as_millis();
        let result = match tokio::time::timeout(q.timeout, user.act(q.action, q.timeout)).await {
            Ok(r) => r,
            Err(_) => Err(format!("the user action did not finish within {ms} ms")),
        };
        match result {
            Ok(()) => progress.send_modify(|p| p.done += 1),
            Err(message) => {
                progress.send_modify(|p| {
                    p.failed = Some((q.step, format!("{}: {message}", q.step_ref)))
                });
                break;
            }
        }
    }
    std::future::pending().await
}

/// Waits for `fut`, unless a user action fails first.
async fn guard<F: Future>(
    mut progress: watch::Receiver<UserProgress>,
    fut: F,
) -> Result<F::Output, Stop> {
    let failed = async move {
        let failed = match progress.wait_for(|p| p.failed.is_some()).await {
            Ok(p) => p.failed.clone(),
            Err(_) => None,
        };
        match failed {
            Some(f) => f,
            // The driver is gone without a failure: nothing to report, let `fut` decide.
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        out = fut => Ok(out),
        (step, reason) = failed => Err(Stop::Incomplete { step, reason }),
    }
}

struct Engine<'a, C> {
    case: &'a Case,
    cfg: &'a EngineConfig,
    connector: &'a mut C,
    rec: &'a Recorder,
    conn: Option<Conn>,
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
}

type StepResult = Result<(), Stop>;

impl<'a, C: Connector> Engine<'a, C> {
    async fn run_all(&mut self) -> StepResult {
        self.vars = Vars::initial(&self.case.scenario, &self.cfg.cwd, &self.cfg.outside)
            .map_err(Stop::Harness)?;
        let steps: &'a [Step] = &self.case.scenario.steps;
        match self.run_steps(steps).await {
            Ok(()) | Err(Stop::Ended) => self.wait_user_idle().await,
            Err(other) => Err(other),
        }
    }

    /// Boxed because `await` cases run nested steps (recursion).
    fn run_steps<'s>(
        &'s mut self,
        steps: &'a [Step],
    ) -> Pin<Box<dyn Future<Output = StepResult> + Send + 's>>
    where
        'a: 's,
    {
        Box::pin(async move {
            for step in steps {
                self.step(step).await?;
            }
            Ok(())
        })
    }

    fn step_ref(&self, step: &Step) -> String {
        self.case.step_ref(step)
    }

    fn timeout(&self, step: &Step) -> Duration {
        let t = step.timeout.unwrap_or(self.cfg.step_timeout);
        if self.cfg.standalone {
            t.max(self.cfg.step_timeout)
        } else {
            t
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
    fn timed_out(&self, step: &Step, what: &str, timeout: Duration) -> Stop {
        let reason = format!(
            "{}: {what} within {} ms",
            self.step_ref(step),
            timeout.as_millis()
        );
        self.rec.note(json!({
            "type": "step_timeout",
            "step": step.top,
            "label": step.label,
            "reason": reason,
        }));
        self.incomplete(step, reason)
    }

    fn closed(&self, step: &Step, what: &str) -> Stop {
        // Noted so that the grading can tell a run the client abandoned from one that timed out.
        self.rec
            .note(json!({"type": "connection_closed", "step": step.label}));
        self.incomplete(
            step,
            format!(
                "client closed the agent connection at step {} ({}:{}) while {what}",
                step.label,
                self.case.scenario.file_name(),
                step.line
            ),
        )
    }

    fn check_user(&self) -> StepResult {
        match &self.progress.borrow().failed {
            Some((step, reason)) => Err(Stop::Incomplete {
                step: *step,
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    async fn step(&mut self, step: &'a Step) -> StepResult {
        self.check_user()?;
        let timeout = self.timeout(step);
        match &step.kind {
            StepKind::Handshake => self.handshake(step, timeout).await,
            StepKind::Expect(e) => {
                let arrived = self.expect(step, e, timeout).await?;
                match (&e.on_timeout, arrived) {
                    (Some(steps), false) => {
                        self.run_steps(steps).await?;
                        Err(Stop::Ended)
                    }
                    _ => Ok(()),
                }
            }
            StepKind::ReplyTo { alias, reply } => {
                let Some(msg) = self.client_requests.get(alias).cloned() else {
                    return Err(self.harness(
                        step,
                        format!(
                            "no client request was remembered as `{alias}` (its step did not run)"
                        ),
                    ));
                };
                self.reply(step, &msg, reply, timeout).await
            }
            StepKind::Send { frame, alias } => {
                let frame = self.fill_send(step, frame)?;
                self.write(step, &to_bytes(&frame), timeout).await?;
                if let Some(alias) = alias {
                    self.sent.insert(
                        alias.clone(),
                        Sent {
                            id: frame.get("id").cloned().unwrap_or(Value::Null),
                            options: frame.pointer("/params/options").cloned(),
                        },
                    );
                }
                Ok(())
            }
            StepKind::Await { alias, cases } => {
                self.await_answer(step, alias, cases, timeout).await
            }
            StepKind::Delay(d) => {
                tokio::time::sleep(*d).await;
                Ok(())
            }
            StepKind::Fault(fault) => self.fault(step, fault, timeout).await,
            StepKind::User(u) => self.user(step, u, timeout),
        }
    }

    // ----- connection and mailbox -------------------------------------------------------------

    /// The agent connection, accepted at the first wire step.
    async fn connection(
        &mut self,
        step: &Step,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<&mut Conn, Stop> {
        if self.conn.is_none() {
            let accepted = guard(
                self.progress.clone(),
                tokio::time::timeout_at(deadline, self.connector.accept()),
            )
            .await?;
            let AgentConn { id, reader, writer } = match accepted {
                Ok(Ok(conn)) => conn,
                Ok(Err(e)) => {
                    return Err(
                        self.harness(step, format!("accepting the agent connection failed: {e}"))
                    );
                }
                Err(_) => {
                    return Err(self.timed_out(
                        step,
                        "the client did not start the agent (no agent connection)",
                        timeout,
                    ));
                }
            };
            let mailbox = Arc::new(Mailbox::new());
            let reader = tokio::spawn(read_loop(
                id,
                reader,
                self.cfg.max_frame,
                self.rec.clone(),
                mailbox.clone(),
            ));
            self.conn = Some(Conn {
                id,
                writer,
                mailbox,
                reader,
            });
        }
        Ok(self.conn.as_mut().expect("just set"))
    }

    /// Takes the first unconsumed client message that `fits`, waiting at most `timeout`.
    async fn take<T>(
        &mut self,
        step: &Step,
        timeout: Duration,
        what: &str,
        fits: impl FnMut(&Msg) -> Option<T>,
    ) -> Result<(Msg, T), Stop> {
        match self.take_within(step, timeout, what, fits).await? {
            Some(found) => Ok(found),
            None => Err(self.timed_out(step, &format!("client sent no {what}"), timeout)),
        }
    }

    /// [`Self::take`], but a timeout is `Ok(None)` (no note, the run goes on).
    async fn take_within<T>(
        &mut self,
        step: &Step,
        timeout: Duration,
        what: &str,
        fits: impl FnMut(&Msg) -> Option<T>,
    ) -> Result<Option<(Msg, T)>, Stop> {
        let deadline = Instant::now() + timeout;
        let mailbox = self
            .connection(step, deadline, timeout)
            .await?
            .mailbox
            .clone();
        match guard(self.progress.clone(), mailbox.take(fits, deadline)).await? {
            Ok(found) => Ok(Some(found)),
            Err(WaitError::TimedOut) => Ok(None),
            Err(WaitError::Closed) => Err(self.closed(step, &format!("waiting for {what}"))),
        }
    }

    /// Records, then writes one frame (plus `\n`).
    async fn write(&mut self, step: &Step, frame: &[u8], timeout: Duration) -> StepResult {
        self.write_parts(step, &[frame], timeout).await
    }

    /// Records the whole frame once, then writes it in `parts` (the last gets the `\n`), pausing
    /// briefly between parts so they really travel as separate writes.
    async fn write_parts(&mut self, step: &Step, parts: &[&[u8]], timeout: Duration) -> StepResult {
        self.write_recorded(step, &[&parts.concat()], parts, timeout)
            .await
    }

    /// Records `frames` (what the client will read), then writes `parts` as described for
    /// [`Self::write_parts`], all within `timeout`.
    async fn write_recorded(
        &mut self,
        step: &Step,
        frames: &[&[u8]],
        parts: &[&[u8]],
        timeout: Duration,
    ) -> StepResult {
        let deadline = Instant::now() + timeout;
        let rec = self.rec;
        let progress = self.progress.clone();
        let conn = self.connection(step, deadline, timeout).await?;
        for frame in frames {
            rec.record(conn.id, Direction::AgentToClient, frame);
        }
        let writer = &mut conn.writer;
        let written = guard(
            progress,
            tokio::time::timeout_at(deadline, async move {
                for (i, part) in parts.iter().enumerate() {
                    if i + 1 == parts.len() {
                        wire::write_frame(writer, part).await?;
                    } else {
                        wire::write_chunk(writer, part).await?;
                        tokio::time::sleep(SPLIT_PAUSE).await;
                    }
                }
                Ok::<(), std::io::Error>(())
            }),
        )
        .await?;
        match written {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.closed(step, &format!("the agent was writing to it ({e})"))),
            Err(_) => Err(self.timed_out(step, "client did not read the agent's output", timeout)),
        }
    }

    // ----- steps --------------------------------------------------------------------------

    async fn handshake(&mut self, step: &'a Step, timeout: Duration) -> StepResult {
        for (method, frame) in [("initialize", "initialize"), ("session/new", "session_new")] {
            let expect = Expect {
                what: Expected::Method(method.into()),
                alias: None,
                pattern: None,
                capture: Vec::new(),
                reply: Some(Reply::Result(Value::String(format!(
                    "${{profile.{frame}}}"
                )))),
                on_timeout: None,
            };
            self.expect(step, &expect, timeout).await?;
        }
        Ok(())
    }

    /// Waits for the expected message and handles it. `Ok(false)`: it did not come in time and
    /// the step has `on_timeout` steps (the caller runs them; a branch note says so).
    async fn expect(&mut self, step: &Step, e: &Expect, timeout: Duration) -> Result<bool, Stop> {
        let pattern = match &e.pattern {
            Some(p) => Some(self.vars.fill(p).map_err(|m| self.harness(step, m))?),
            None => None,
        };
        let mut what = match &e.what {
            Expected::Method(m) => m.clone(),
            Expected::Response => "response".to_owned(),
        };
        if let Some(p) = &pattern {
            what.push_str(&format!(" matching {p}"));
        }
        let fits = |m: &Msg| {
            let shape_ok = match &e.what {
                Expected::Method(name) => matching::method(&m.json) == Some(name.as_str()),
                Expected::Response => matching::is_response(&m.json),
            };
            if !shape_ok
                || !pattern
                    .as_ref()
                    .is_none_or(|p| matching::matches(p, &m.json))
            {
                return None;
            }
            matching::capture(&m.json, &e.capture)
        };
        let (msg, captured) = if e.on_timeout.is_some() {
            match self.take_within(step, timeout, &what, fits).await? {
                Some(found) => found,
                None => {
                    self.rec.note(json!({
                        "type": "branch",
                        "step": step.label,
                        "answer": format!("no {what} within {} ms", timeout.as_millis()),
                        "case": "on_timeout",
                    }));
                    return Ok(false);
                }
            }
        } else {
            self.take(step, timeout, &what, fits).await?
        };
        if matching::method(&msg.json) == Some("initialize") {
            self.check_requires(&msg.json)?;
        }
        for (name, value) in captured {
            self.vars.set(&name, value);
        }
        if let Some(alias) = &e.alias {
            self.client_requests.insert(alias.clone(), msg.clone());
        }
        if let Some(reply) = &e.reply {
            self.reply(step, &msg, reply, timeout).await?;
        }
        Ok(true)
    }

    /// `requires`: every path must be `true` in the client's `clientCapabilities`.
    fn check_requires(&mut self, initialize: &Value) -> StepResult {
        if self.requires_checked {
            return Ok(());
        }
        self.requires_checked = true;
        for path in &self.case.scenario.meta.requires {
            let mut v = initialize.pointer("/params/clientCapabilities");
            for segment in path.split('.') {
                v = v.and_then(|v| v.get(segment));
            }
            if v != Some(&Value::Bool(true)) {
                let reason = format!(
                    "the client does not advertise clientCapabilities.{path} in initialize (the scenario requires it)"
                );
                self.rec
                    .note(json!({"type": "not_applicable", "reason": reason}));
                return Err(Stop::NotApplicable(reason));
            }
        }
        Ok(())
    }

    async fn reply(
        &mut self,
        step: &Step,
        msg: &Msg,
        reply: &Reply,
        timeout: Duration,
    ) -> StepResult {
        let (key, body) = match reply {
            Reply::Result(v) => ("result", v),
            Reply::Error(v) => ("error", v),
        };
        let body = self.vars.fill(body).map_err(|m| self.harness(step, m))?;
        let Some(id) = &msg.raw_id else {
            let method = matching::method(&msg.json).unwrap_or("a message");
            return Err(self.incomplete(
                step,
                format!(
                    "{}: the client sent {method} as a notification (no \"id\", transcript #{}), so it cannot be answered",
                    self.step_ref(step),
                    msg.index
                ),
            ));
        };
        // Built as text so the id is echoed byte for byte.
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"{key}\":{}}}",
            serde_json::to_string(&body).unwrap_or_default()
        );
        self.write(step, frame.as_bytes(), timeout).await
    }

    /// Fills a `send` frame; a top-level `"id":"${id}"` becomes the next fresh request id.
    fn fill_send(&mut self, step: &Step, frame: &Value) -> Result<Value, Stop> {
        let mut frame = frame.clone();
        let fresh = frame
            .get("id")
            .and_then(Value::as_str)
            .and_then(template::whole_var)
            == Some("id");
        if fresh && let Some(obj) = frame.as_object_mut() {
            obj.insert("id".into(), json!(self.next_id));
            self.next_id += 1;
        }
        self.vars.fill(&frame).map_err(|m| self.harness(step, m))
    }

    async fn await_answer(
        &mut self,
        step: &'a Step,
        alias: &str,
        cases: &'a [OnCase],
        timeout: Duration,
    ) -> StepResult {
        let Some(sent) = self.sent.get(alias).cloned() else {
            return Err(self.harness(
                step,
                format!("request `{alias}` was never sent (its step did not run)"),
            ));
        };
        let what = format!("answer to request `{alias}` (id {})", sent.id);
        let found = self
            .take(step, timeout, &what, |m| {
                (matching::is_response(&m.json) && m.json.get("id") == Some(&sent.id)).then_some(())
            })
            .await;
        let msg = match found {
            Ok((msg, ())) => msg,
            Err(Stop::Incomplete { step: top, reason }) => {
                return Err(Stop::Incomplete {
                    step: top,
                    reason: format!("{reason}{}", self.near_misses(&sent.id)),
                });
            }
            Err(other) => return Err(other),
        };
        let answer = Answer::of(&msg.json, sent.options.as_ref());
        let chosen = cases.iter().position(|c| answer.fits(&c.when));
        self.rec.note(json!({
            "type": "branch",
            "step": step.label,
            "request": alias,
            "answer": answer.describe(),
            "frame": msg.index,
            "case": chosen.map(|k| k + 1),
        }));
        match chosen {
            Some(k) => self.run_steps(&cases[k].then).await,
            None => Ok(()),
        }
    }

    /// Responses that almost answer `id` (same id, other JSON type), to explain a timeout.
    fn near_misses(&self, id: &Value) -> String {
        let Some(conn) = &self.conn else {
            return String::new();
        };
        let text = template::splice_text(id);
        let misses: Vec<String> = conn
            .mailbox
            .unconsumed()
            .into_iter()
            .filter(|m| matching::is_response(&m.json))
            .filter(|m| {
                m.json
                    .get("id")
                    .is_some_and(|i| template::splice_text(i) == text)
            })
            .map(|m| format!("#{} has id {}", m.index, m.json["id"]))
            .collect();
        if misses.is_empty() {
            String::new()
        } else {
            format!(
                " (a response with a differently typed id arrived: {}; ids must be echoed unchanged)",
                misses.join(", ")
            )
        }
    }

    async fn fault(&mut self, step: &Step, fault: &Fault, timeout: Duration) -> StepResult {
        let frame = match fault {
            Fault::Split { frame, .. } | Fault::Duplicate { frame } | Fault::Invalid { frame } => {
                Some(to_bytes(
                    &self.vars.fill(frame).map_err(|m| self.harness(step, m))?,
                ))
            }
            Fault::Raw { .. } => None,
        };
        // The note comes first so no check blames the client (or calls it our schema bug).
        self.rec
            .note(json!({"type": "fault", "kind": fault.kind(), "step": step.label}));
        match (fault, frame) {
            (Fault::Split { at, .. }, Some(bytes)) => {
                let at = at.unwrap_or(bytes.len() / 2);
                if at == 0 || at >= bytes.len() {
                    return Err(self.harness(
                        step,
                        format!("cannot split a {}-byte frame at byte {at}", bytes.len()),
                    ));
                }
                let (a, b) = bytes.split_at(at);
                self.write_parts(step, &[a, b], timeout).await
            }
            (Fault::Duplicate { .. }, Some(bytes)) => {
                self.write(step, &bytes, timeout).await?;
                self.write(step, &bytes, timeout).await
            }
            (Fault::Raw { line }, _) => {
                // A raw line may hold several lines; each is what the client will see as a frame.
                let lines: Vec<&[u8]> = line.as_bytes().split(|&b| b == b'\n').collect();
                self.write_recorded(step, &lines, &[line.as_bytes()], timeout)
                    .await
            }
            (Fault::Invalid { .. }, Some(bytes)) => self.write(step, &bytes, timeout).await,
            _ => Err(self.harness(step, "fault without a frame")),
        }
    }

    /// Resolves a user step and queues it; it runs in the background (see the module doc).
    fn user(&mut self, step: &Step, u: &UserStep, timeout: Duration) -> StepResult {
        let fill = |s: &str| self.vars.fill_str(s).map_err(|m| self.harness(step, m));
        let sent = |alias: &str| {
            self.sent.get(alias).cloned().ok_or_else(|| {
                self.harness(
                    step,
                    format!("request `{alias}` was never sent (its step did not run)"),
                )
            })
        };
        let action = match u {
            UserStep::NewSession { session, cwd } => UserAction::NewSession {
                session: fill(session)?,
                cwd: fill(cwd)?,
            },
            UserStep::Prompt { session, text } => UserAction::Prompt {
                session: fill(session)?,
                text: fill(text)?,
            },
            UserStep::Cancel { session, pending } => UserAction::Cancel {
                session: fill(session)?,
                pending_request: match pending {
                    Some(alias) => Some(sent(alias)?.id),
                    None => None,
                },
            },
            UserStep::Choose { request, choice } => {
                let sent = sent(request)?;
                let offered = sent.options.clone().unwrap_or(Value::Null);
                let options: Vec<(&str, Option<&str>)> = offered
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(|o| {
                                Some((
                                    o.get("optionId")?.as_str()?,
                                    o.get("kind").and_then(Value::as_str),
                                ))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let option_id = match choice {
                    Choice::Kind(kind) => options
                        .iter()
                        .find(|(_, k)| *k == Some(kind.as_str()))
                        .map(|(id, _)| id.to_string())
                        .ok_or_else(|| {
                            self.harness(
                                step,
                                format!("request `{request}` offers no option of kind {kind}"),
                            )
                        })?,
                    Choice::Option(id) => {
                        if !options.iter().any(|(o, _)| o == id) {
                            return Err(self.harness(
                                step,
                                format!("request `{request}` does not offer option {id}"),
                            ));
                        }
                        id.clone()
                    }
                    Choice::Each => self.case.each_option.clone().ok_or_else(|| {
                        self.harness(
                            step,
                            "`each = true` but this case was not expanded (use Scenario::cases)",
                        )
                    })?,
                };
                UserAction::Choose {
                    request_id: sent.id,
                    option_id,
                    offered,
                }
            }
        };
        self.queued += 1;
        self.queue
            .send(Queued {
                action,
                timeout,
                step: step.top,
                step_ref: self.step_ref(step),
            })
            .map_err(|_| self.harness(step, "the user driver stopped"))
    }

    /// At the end, every queued user action must have finished.
    async fn wait_user_idle(&mut self) -> StepResult {
        let queued = self.queued;
        let mut progress = self.progress.clone();
        let state = match progress
            .wait_for(|p| p.failed.is_some() || p.done >= queued)
            .await
        {
            Ok(p) => p.clone(),
            Err(_) => return Err(Stop::Harness("the user driver stopped".into())),
        };
        match state.failed {
            Some((step, reason)) => Err(Stop::Incomplete { step, reason }),
            None => Ok(()),
        }
    }
}

/// Pause between the two writes of a `split` fault, so a reader sees two chunks.
const SPLIT_PAUSE: Duration = Duration::from_millis(10);

/// Frames go on the wire compact, keys in their written order.
fn to_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// Records every line the client writes and files JSON objects into the mailbox, until EOF.
async fn read_loop(
    conn: u32,
    reader: Box<dyn AsyncRead + Send + Unpin>,
    max_frame: usize,
    rec: Recorder,
    mailbox: Arc<Mailbox>,
) {
    let mut frames = FrameReader::new(reader, max_frame);
    loop {
        match frames.next_frame().await {
            Ok(Some(Frame::Line(bytes))) => {
                let index = rec.record(conn, Direction::ClientToAgent, &bytes);
                if let Some(msg) = Msg::parse(index, &bytes) {
                    mailbox.push(msg);
                }
            }
            Ok(Some(Frame::TooLong { len })) => {
                rec.note(
                    json!({"type": "frame_too_long", "conn": conn, "bytes": len, "max": max_frame}),
                );
            }
            Ok(Some(Frame::Unterminated(bytes))) => {
                let index = rec.record(conn, Direction::ClientToAgent, &bytes);
                rec.note(json!({"type": "unterminated_frame", "conn": conn, "frame": index}));
            }
            Ok(None) => break,
            Err(e) => {
                rec.note(json!({"type": "read_error", "conn": conn, "error": e.to_string()}));
                break;
            }
        }
    }
    mailbox.close();
}

#[cfg(test)]
mod tests;
