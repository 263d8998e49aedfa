//! The control plane (harness/CONTROL.md): the harness plays the user through the client's
//! adapter and records what the adapter reports. Every message in both directions is recorded in
//! the transcript and validated against `control-v1.schema.json`.
//!
//! * this module: [`ControlPlane`], the harness's end of the pipe to the adapter: commands out
//!   (numbered, validated, recorded, written with a time limit), the handshake, and the waits
//!   on what the adapter reported;
//! * the published schema and [`validate_control`] are `crate::control_schema`'s (the observer
//!   validates the events it makes with them too);
//! * `state.rs`: what the adapter reported, read from its stdout by a task of its own;
//! * `user.rs`: the user's actions of a scenario as commands, each waited on until the client
//!   shows its effect (or skipped, with a note, when the client left nothing to do).

mod state;
mod user;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_fake_agents::machine_time::{self, Deadline};
use acp_vocab::control::{ClientInfo, Command};
use acp_vocab::transcript::Recorder;
use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::Notify;

pub use crate::control_schema::{CONTROL_SCHEMA, validate_control};
use state::{State, read_events};

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
        self.wait_for(timeout, &what, |s| s.session_id(handle))
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
                .all(|(handle, seq)| s.session_id(handle).is_some() || s.error_for(*seq).is_some())
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
        let _ = tokio::time::timeout(timeout, &mut self.reader).await;
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

/// The harness did not click for this request: the client answers it by itself (the
/// `auto-approval` check judges that answer). Noted alike for both users, the control plane
/// and the wire-only user (the `wire_only` module).
pub(crate) fn note_choose_skipped(
    rec: &Recorder,
    request_id: &serde_json::Value,
    option_id: &str,
    why: &str,
) {
    rec.note(&acp_vocab::note::Note::UserChooseSkipped {
        request_id: request_id.clone(),
        option_id: option_id.to_owned(),
        reason: why.to_owned(),
    });
}
