//! The control plane (harness/CONTROL.md): the harness plays the user through the client's
//! adapter and records what the adapter reports. Every message in both directions is recorded in
//! the transcript and validated against `control-v1.schema.json`.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use acp_fake_agents::engine::{UserAction, UserDriver, UserFailure};
use acp_fake_agents::wire::{Frame, FrameReader};
use acp_vocab::control::{ApprovalResolved, ClientInfo, Command, Event, Hello, ResolvedBy};
use acp_vocab::note::Note;
use acp_vocab::transcript::{Direction, Entry, Recorder};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::Notify;

use acp_fake_agents::machine_time::{self, Deadline};

/// The published control protocol schema.
pub const CONTROL_SCHEMA: &str = include_str!("../control-v1.schema.json");

/// Longest control line accepted from an adapter.
const MAX_CONTROL_LINE: usize = 1 << 20;

fn control_validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let schema: Value =
            serde_json::from_str(CONTROL_SCHEMA).expect("control-v1.schema.json is valid JSON");
        jsonschema::validator_for(&schema).expect("control-v1.schema.json is a valid schema")
    })
}

/// Validates one control message; the error names the first violation.
pub fn validate_control(message: &Value) -> Result<(), String> {
    let validator = control_validator();
    match validator.iter_errors(message).next() {
        None => Ok(()),
        Some(err) => Err(format!("{err} (at {})", err.instance_path())),
    }
}

/// What the adapter has told us so far.
#[derive(Debug, Default)]
struct State {
    hello: Option<Hello>,
    /// The adapter broke the protocol; nothing it says afterwards is trusted.
    protocol_error: Option<String>,
    sessions: Vec<(String, String)>,
    /// Request ids of the approval cards shown.
    approvals: Vec<Value>,
    resolved: Vec<ApprovalResolved>,
    errors: Vec<(Option<u64>, String)>,
    /// `list_sessions` commands answered (`sessions_listed` seq) and sessions shown closed
    /// (handles): session lifecycle.
    listed: Vec<u64>,
    closed: Vec<String>,
    /// `prompt` commands sent, and `turn` events that ended a turn: the client has settled when
    /// every prompt's turn has ended.
    prompts_sent: usize,
    turns_ended: usize,
    /// `new_session` commands sent (handle, seq): the client has shown each opened when the
    /// handle has a session id, or refused when an `error` names the seq.
    opens_sent: Vec<(String, u64)>,
    eof: bool,
}

/// How often a wait that also reads the wire ([`ControlPlane::card`]) looks at it again.
const WIRE_POLL: Duration = Duration::from_millis(50);

/// Whether the user gets a card to click for an agent request.
enum Card {
    Shown,
    /// The client answered without one; why, for the note that skips the click.
    NotShown(String),
}

/// A client → agent response (result or error) to agent request `request_id`.
fn is_answer_to(entry: &Entry, request_id: &Value) -> bool {
    entry.direction == Direction::ClientToAgent
        && entry.json().is_some_and(|j| {
            j.get("method").is_none()
                && (j.get("result").is_some() || j.get("error").is_some())
                && j.get("id") == Some(request_id)
        })
}

/// The harness's end of the control plane.
pub struct ControlPlane {
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
    stdin: Option<ChildStdin>,
    rec: Recorder,
    seq: u64,
    /// How long one command may take to write: a client that stopped reading its stdin fills
    /// the pipe, and the harness must notice well within the step timeout.
    write_limit: Duration,
    /// A command write was abandoned half-way (its step gave up): the stream is corrupt.
    write_cut: bool,
    reader: tokio::task::JoinHandle<()>,
}

impl ControlPlane {
    /// Starts reading the adapter's stdout.
    pub fn new(stdin: ChildStdin, stdout: ChildStdout, rec: Recorder) -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        let changed = Arc::new(Notify::new());
        let reader = tokio::spawn(read_events(
            stdout,
            rec.clone(),
            Arc::clone(&state),
            Arc::clone(&changed),
        ));
        ControlPlane {
            state,
            changed,
            stdin: Some(stdin),
            rec,
            seq: 0,
            write_limit: Duration::from_secs(5),
            write_cut: false,
            reader,
        }
    }

    /// Waits until `ready` returns `Some`, the adapter breaks the protocol, or `timeout` passes.
    async fn wait_for<T>(
        &self,
        timeout: Duration,
        what: &str,
        ready: impl FnMut(&State) -> Option<T>,
    ) -> Result<T, String> {
        self.wait_polling(timeout, what, None, ready).await
    }

    /// [`wait_for`](Self::wait_for), with `ready` also asked every `poll` when it reads
    /// something besides the adapter's events (which wake the wait themselves).
    async fn wait_polling<T>(
        &self,
        timeout: Duration,
        what: &str,
        poll: Option<Duration>,
        mut ready: impl FnMut(&State) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Deadline::after(timeout);
        loop {
            let notified = self.changed.notified();
            {
                let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(err) = &state.protocol_error {
                    return Err(err.clone());
                }
                if let Some(v) = ready(&state) {
                    return Ok(v);
                }
                if state.eof {
                    return Err(format!(
                        "the adapter closed its stdout while the harness waited for {what}"
                    ));
                }
            }
            let woken = async {
                match poll {
                    Some(poll) => {
                        let _ = tokio::time::timeout(poll, notified).await;
                    }
                    None => notified.await,
                }
            };
            if let Err(waited) = deadline.run(woken).await {
                return Err(format!(
                    "the client reported no {what} within {}",
                    waited.describe(timeout)
                ));
            }
        }
    }

    /// Waits for `hello` and checks the protocol version. Returns the declared `supports`.
    pub async fn handshake(&self, timeout: Duration) -> Result<Vec<String>, HandshakeError> {
        let hello = self
            .wait_for(timeout, "hello", |s| s.hello.clone())
            .await
            .map_err(|reason| match self.protocol_error() {
                // Broken control JSON is graded like any later protocol violation.
                Some(violation) => HandshakeError::Unsupported(violation),
                None => HandshakeError::NoHello(reason),
            })?;
        if hello.version != acp_vocab::control::VERSION {
            return Err(HandshakeError::Unsupported(format!(
                "unsupported control protocol version {} (this harness speaks version 1)",
                hello.version
            )));
        }
        Ok(hello
            .supports
            .iter()
            .map(|c| c.as_str().to_owned())
            .collect())
    }

    /// Waits until the adapter has reported session `handle` open; returns its ACP session id.
    pub async fn session_opened(&self, handle: &str, timeout: Duration) -> Result<String, String> {
        let what = format!("session_opened for session {handle:?}");
        self.wait_for(timeout, &what, |s| Self::session_id(s, handle))
            .await
    }

    /// Waits until session `handle` is open (`None`) or the client has answered its
    /// `new_session` with an error (`Some(message)`).
    async fn opening_refused(
        &self,
        handle: &str,
        timeout: Duration,
    ) -> Result<Option<String>, String> {
        let what = format!("session_opened for session {handle:?}");
        self.wait_for(timeout, &what, |s| {
            if Self::session_id(s, handle).is_some() {
                return Some(None);
            }
            s.opens_sent
                .iter()
                .filter(|(h, _)| h == handle)
                .find_map(|(_, seq)| Self::error_for(s, *seq))
                .map(Some)
        })
        .await
    }

    /// Forgets the approvals, answers and errors reported so far (hello, sessions and turn
    /// counts stay): for a long-lived client whose turns reuse request ids (`null`, say), so a
    /// card of an earlier turn is never taken for this one's. The fuzz driver calls it per turn.
    pub fn forget_approvals(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.approvals.clear();
        state.resolved.clear();
        state.errors.clear();
    }

    /// The adapter's `hello.client`, if it said hello.
    pub fn client_info(&self) -> Option<ClientInfo> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.hello.as_ref().map(|h| h.client.clone())
    }

    /// True once the adapter's stdout has reached EOF.
    pub fn stdout_closed(&self) -> bool {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.eof
    }

    /// A protocol violation by the adapter, if any.
    pub fn protocol_error(&self) -> Option<String> {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.protocol_error.clone()
    }

    /// Numbers `command` (its `seq` is overwritten), records and writes it.
    async fn send(&mut self, command: Command) -> Result<u64, String> {
        self.seq += 1;
        let seq = self.seq;
        let command = command.with_seq(seq);
        // The types cannot hold everything the schema refuses: a request id the agent sent as
        // an object or a float is not a control `requestId`.
        let json = serde_json::to_value(&command).map_err(|e| e.to_string())?;
        if let Err(e) = validate_control(&json) {
            // Our own bug: say so rather than sending nonsense.
            return Err(format!("harness built an invalid control command: {e}"));
        }
        match &command {
            Command::Prompt { .. } => {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                state.prompts_sent += 1;
            }
            Command::NewSession { session, .. } => {
                let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                state.opens_sent.push((session.clone(), seq));
            }
            _ => {}
        }
        let line = command.to_line();
        self.rec.command(&command);
        if self.write_cut {
            // An earlier command was cut off mid-line; anything written now would be garbage.
            self.stdin = None;
        }
        let Some(stdin) = self.stdin.as_mut() else {
            return Err("the adapter's stdin is closed".into());
        };
        let limit = self.write_limit;
        self.write_cut = true;
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.write_all(b"\n").await?;
            stdin.flush().await
        };
        // A client that stops reading its stdin must not hang the harness.
        let result = match machine_time::timeout(limit, write).await {
            Ok(Ok(())) => Ok(seq),
            Ok(Err(e)) => Err(format!("could not write to the adapter's stdin: {e}")),
            Err(_) => Err(format!(
                "the adapter does not read its stdin: a {}-byte command was still not written after {} ms",
                line.len() + 1,
                limit.as_millis()
            )),
        };
        self.write_cut = result.is_err();
        result
    }

    /// Waits (bounded) until the client has shown the end of every turn it was asked to start,
    /// so that the last frames of a scenario are processed before the harness says `shutdown`.
    /// A client that never ends its turn is left to the checks to judge (`turn-end`). True if
    /// every turn was shown ended in time.
    pub async fn settle(&self, timeout: Duration) -> bool {
        self.wait_for(timeout, "the end of every turn", |s| {
            (s.turns_ended >= s.prompts_sent).then_some(())
        })
        .await
        .is_ok()
    }

    /// Waits (bounded) until the client has shown every session it was asked to open as opened
    /// or refused, so that what it shows with the opening (the mode and config values the agent
    /// answered with) is read before the harness says `shutdown`: a scenario may end with the
    /// agent's `session/new` answer. True if every opening was shown in time.
    pub async fn settle_sessions(&self, timeout: Duration) -> bool {
        self.wait_for(timeout, "every session opened or refused", |s| {
            s.opens_sent
                .iter()
                .all(|(handle, seq)| {
                    Self::session_id(s, handle).is_some() || Self::error_for(s, *seq).is_some()
                })
                .then_some(())
        })
        .await
        .is_ok()
    }

    /// Asks the adapter to quit and closes its stdin.
    pub async fn shutdown(&mut self) {
        // Closing stdin follows anyway: a client that does not read gets no more than a moment.
        self.write_limit = Duration::from_millis(200);
        let _ = self.send(Command::Shutdown { seq: 0 }).await;
        self.stdin = None;
    }

    /// Waits (bounded) for the event reader to drain the adapter's stdout.
    pub async fn drain(&mut self, timeout: Duration) {
        let _ = machine_time::timeout(timeout, &mut self.reader).await;
    }

    fn session_id(state: &State, handle: &str) -> Option<String> {
        state
            .sessions
            .iter()
            .find(|(h, _)| h == handle)
            .map(|(_, id)| id.clone())
    }

    fn approval_shown(state: &State, request_id: &Value) -> bool {
        state.approvals.iter().any(|a| a == request_id)
    }

    /// The client resolved the request by its own policy without showing a card.
    fn decided_by_client(state: &State, request_id: &Value) -> bool {
        state
            .resolved
            .iter()
            .any(|r| &r.request_id == request_id && r.by == Some(ResolvedBy::Policy))
    }

    /// Waits until the approval card of agent request `request_id` is shown, or the client
    /// answered that request without one: by its policy (`approval_resolved` by policy), or
    /// straight on the wire (an error for a request it refused to show, a bare answer). The wire
    /// is not the control plane's to watch, so it is re-read every [`WIRE_POLL`]: a refusal
    /// ends the wait there, not a step timeout later.
    async fn card(&self, request_id: &Value, timeout: Duration) -> Result<Card, String> {
        let what = format!("approval for request {request_id}");
        let mut wire_from = 0;
        self.wait_polling(timeout, &what, Some(WIRE_POLL), |s| {
            if Self::approval_shown(s, request_id) {
                return Some(Card::Shown);
            }
            if Self::decided_by_client(s, request_id) {
                return Some(Card::NotShown(
                    "the client answered this request by itself (approval_resolved by policy) and showed no card".into(),
                ));
            }
            let mut answered = None;
            wire_from = self.rec.visit_from(wire_from, |e| {
                if answered.is_none() && is_answer_to(e, request_id) {
                    answered = Some(e.index);
                }
            });
            answered.map(|index| {
                Card::NotShown(format!(
                    "the client answered this request on the wire (#{index}) and showed no card"
                ))
            })
        })
        .await
    }

    fn error_for(state: &State, seq: u64) -> Option<String> {
        state
            .errors
            .iter()
            .find(|(s, _)| *s == Some(seq))
            .map(|(_, m)| m.clone())
    }
}

/// Why the handshake failed.
#[derive(Debug)]
pub enum HandshakeError {
    /// No hello in time (or the adapter closed / broke the protocol first).
    NoHello(String),
    /// A hello with a version we do not speak.
    Unsupported(String),
}

impl UserDriver for ControlPlane {
    async fn act(&mut self, action: UserAction, timeout: Duration) -> Result<(), UserFailure> {
        // The adapter does what the user does, or says it cannot: never a premise that fails.
        self.perform(action, timeout)
            .await
            .map_err(UserFailure::Failed)
    }
}

impl ControlPlane {
    async fn perform(&mut self, action: UserAction, timeout: Duration) -> Result<(), String> {
        // Half the step: a blocked write is then reported as such, before the step gives up.
        self.write_limit = timeout / 2;
        match action {
            UserAction::NewSession { session, cwd } => {
                self.send(Command::NewSession {
                    seq: 0,
                    session,
                    cwd,
                })
                .await?;
                Ok(())
            }
            UserAction::Prompt {
                session,
                text,
                agent_killed,
            } => {
                // After the agent's death the user waits half a step, inside the step's own
                // deadline, so that giving up is a note and not a failed step.
                let wait = if agent_killed { timeout / 2 } else { timeout };
                let refused = match self.opening_refused(&session, wait).await {
                    Ok(refused) => refused,
                    // The agent is dead: whether the client ever says so is `session-open`'s
                    // to judge, and the user stops waiting to type.
                    Err(silence) if agent_killed => Some(silence),
                    Err(e) => return Err(e),
                };
                if let Some(reason) = refused {
                    // As a user would: no prompt goes into a session the client said it could
                    // not open (`session-open` judges that error).
                    self.rec.note(&Note::UserPromptSkipped {
                        session,
                        reason: format!("the session did not open: {reason}"),
                    });
                    return Ok(());
                }
                self.send(Command::Prompt {
                    seq: 0,
                    session,
                    text,
                })
                .await?;
                Ok(())
            }
            UserAction::Choose {
                request_id,
                option_id,
                ..
            } => {
                if let Card::NotShown(reason) = self.card(&request_id, timeout).await? {
                    // The client answered by itself (CONTROL.md, `policy` in hello): there is
                    // no card to click, and the checks judge the answer.
                    crate::wire_only::note_choose_skipped(
                        &self.rec,
                        &request_id,
                        &option_id,
                        &reason,
                    );
                    return Ok(());
                }
                let seq = self
                    .send(Command::Choose {
                        seq: 0,
                        request_id: request_id.clone(),
                        option_id: option_id.clone(),
                    })
                    .await?;
                let what = format!("approval_resolved for request {request_id}");
                let rid = request_id.clone();
                let answer = self
                    .wait_for(timeout, &what, |s| {
                        if let Some(msg) = Self::error_for(s, seq) {
                            return Some(Err(msg));
                        }
                        s.resolved
                            .iter()
                            .any(|r| r.request_id == rid)
                            .then_some(Ok(()))
                    })
                    .await?;
                answer.map_err(|msg| {
                    format!("the client could not choose option {option_id:?} of request {request_id}: {msg}")
                })
            }
            UserAction::Cancel {
                session,
                pending_request,
            } => {
                if let Some(request_id) = pending_request
                    && let Card::NotShown(reason) = self.card(&request_id, timeout).await?
                {
                    // As for a choose: the approval the user meant to Stop on was answered by
                    // the client itself and never pending (the fuzz driver does the same).
                    self.rec.note(&Note::UserCancelSkipped {
                        request_id: request_id.clone(),
                        reason,
                    });
                    return Ok(());
                }
                self.send(Command::Cancel { seq: 0, session }).await?;
                Ok(())
            }
            // ----- session lifecycle: each command waits for its event, or for the client's
            // `error` about it (a load the agent refused is the client's to show, and the
            // `session-load` check's to grade, not a failed user action).
            UserAction::LoadSession {
                session,
                session_id,
                cwd,
            } => {
                let seq = self
                    .send(Command::LoadSession {
                        seq: 0,
                        session: session.clone(),
                        session_id,
                        cwd,
                    })
                    .await?;
                self.opened_or_error(&session, seq, timeout).await
            }
            UserAction::ResumeSession {
                session,
                session_id,
                cwd,
            } => {
                let seq = self
                    .send(Command::ResumeSession {
                        seq: 0,
                        session: session.clone(),
                        session_id,
                        cwd,
                    })
                    .await?;
                self.opened_or_error(&session, seq, timeout).await
            }
            UserAction::ListSessions { cwd } => {
                let seq = self.send(Command::ListSessions { seq: 0, cwd }).await?;
                let what = format!("sessions_listed (or an error) for list_sessions #{seq}");
                self.wait_for(timeout, &what, |s| {
                    (s.listed.contains(&seq) || Self::error_for(s, seq).is_some()).then_some(())
                })
                .await
            }
            UserAction::CloseSession { session } => {
                self.session_opened(&session, timeout).await?;
                let seq = self
                    .send(Command::CloseSession {
                        seq: 0,
                        session: session.clone(),
                    })
                    .await?;
                let what = format!("session_closed (or an error) for session {session:?}");
                self.wait_for(timeout, &what, |s| {
                    (s.closed.contains(&session) || Self::error_for(s, seq).is_some()).then_some(())
                })
                .await
            }
            // ---- modes and config options ----
            // Like a prompt: the command goes out once the session is open, and what the client
            // then shows (`mode`, `config_option`) is for the session-mode check to judge, not a
            // condition of the run: a mode the agent refuses must stay unshown.
            UserAction::SetMode { session, mode_id } => {
                self.session_opened(&session, timeout).await?;
                self.send(Command::SetMode {
                    seq: 0,
                    session,
                    mode_id,
                })
                .await?;
                Ok(())
            }
            UserAction::SetConfigOption {
                session,
                config_id,
                value,
            } => {
                self.session_opened(&session, timeout).await?;
                self.send(Command::SetConfigOption {
                    seq: 0,
                    session,
                    config_id,
                    value,
                })
                .await?;
                Ok(())
            }
        }
    }
}

impl ControlPlane {
    /// Session lifecycle: waits until the reopened session `handle` is shown, or the client
    /// reported an error for command `seq`.
    async fn opened_or_error(
        &self,
        handle: &str,
        seq: u64,
        timeout: Duration,
    ) -> Result<(), String> {
        let what = format!("session_loaded (or an error) for session {handle:?}");
        self.wait_for(timeout, &what, |s| {
            (Self::session_id(s, handle).is_some() || Self::error_for(s, seq).is_some())
                .then_some(())
        })
        .await
    }
}

/// Reads adapter events until EOF, validating, recording and folding them into the state.
async fn read_events(
    stdout: ChildStdout,
    rec: Recorder,
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
) {
    let mut frames = FrameReader::new(stdout, MAX_CONTROL_LINE);
    loop {
        let frame = frames.next_frame().await;
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        match frame {
            Ok(Some(Frame::Line(bytes) | Frame::Unterminated(bytes))) => {
                let index = rec.record(
                    0,
                    acp_vocab::transcript::Direction::AdapterToHarness,
                    &bytes,
                );
                if st.protocol_error.is_none() {
                    match serde_json::from_slice::<Value>(&bytes) {
                        Err(e) => {
                            st.protocol_error = Some(format!(
                                "adapter sent a control line that is not JSON (#{index}): {e}"
                            ))
                        }
                        Ok(event) => match validate_control(&event) {
                            Err(e) => {
                                st.protocol_error = Some(format!(
                                    "adapter sent an invalid control message (#{index}): {e}"
                                ))
                            }
                            Ok(()) => match serde_json::from_value::<Event>(event) {
                                Ok(event) => apply_event(&mut st, event, index),
                                // Valid against the schema yet no event: a command sent back.
                                Err(e) => {
                                    st.protocol_error = Some(format!(
                                        "adapter sent a control message that is not an event (#{index}): {e}"
                                    ))
                                }
                            },
                        },
                    }
                }
            }
            Ok(Some(Frame::TooLong { len: too_long })) => {
                rec.note(&Note::ControlLineTooLong { bytes: too_long });
                st.protocol_error.get_or_insert_with(|| {
                    format!(
                        "adapter sent a control line of {too_long} bytes (limit {MAX_CONTROL_LINE})"
                    )
                });
            }
            Ok(None) | Err(_) => {
                st.eof = true;
                changed.notify_waiters();
                return;
            }
        }
        drop(st);
        changed.notify_waiters();
    }
}

fn apply_event(st: &mut State, event: Event, index: usize) {
    match event {
        Event::Hello(hello) if st.hello.is_none() => st.hello = Some(hello),
        Event::Hello(_) => {
            st.protocol_error = Some(format!("adapter said hello twice (#{index})"));
        }
        other if st.hello.is_none() => {
            st.protocol_error = Some(format!(
                "adapter sent \"{}\" before hello (#{index})",
                other.type_name()
            ));
        }
        Event::SessionOpened {
            session,
            session_id,
        } => st.sessions.push((session, session_id)),
        Event::Approval(a) => st.approvals.push(a.request_id),
        Event::ApprovalResolved(r) => st.resolved.push(r),
        Event::Error { seq, message, .. } => st.errors.push((seq, message)),
        // session lifecycle: a reopened session takes prompts like a new one.
        Event::SessionLoaded(l) => st.sessions.push((l.session, l.session_id)),
        Event::SessionsListed { seq, .. } => st.listed.push(seq),
        Event::SessionClosed { session, .. } => st.closed.push(session),
        Event::Turn(t) if t.state.is_end() => st.turns_ended += 1,
        // item, running turns, modes, config values and plans are only recorded: the checks read
        // them from the transcript.
        Event::Item(_)
        | Event::Turn(_)
        | Event::Mode(_)
        | Event::ConfigOption(_)
        | Event::Plan(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn schema_accepts_the_documented_example_messages() {
        let doc = include_str!("../CONTROL.md");
        let mut seen = 0;
        for line in doc.lines() {
            let Some(pos) = line.find("{\"type\"") else {
                continue;
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line[pos..]) else {
                continue;
            };
            validate_control(&msg).unwrap_or_else(|e| panic!("{line}: {e}"));
            seen += 1;
        }
        assert!(
            seen >= 12,
            "only {seen} example messages found in CONTROL.md"
        );
    }

    #[test]
    fn schema_rejects_unknown_fields_and_types() {
        assert!(validate_control(&json!({"type":"hello"})).is_err());
        assert!(
            validate_control(&json!({"type":"turn","sessionId":"s","state":"exploded"})).is_err()
        );
        assert!(
            validate_control(
                &json!({"type":"item","sessionId":"s","toolCallId":"t","itemType":"file_change","status":"x","title":"t","extra":1})
            )
            .is_err()
        );
    }
}
