//! The running client of the long-lived driver ([`super::driver`]): launch, handshake, and one
//! permission turn at a time ([`turn`]), on the scenario runner's plumbing — the relay socket
//! ([`RelayListener`]), the engine's agent connection ([`AgentLink`]: recorded writes, a reader
//! task filing the client's frames into a mailbox), and the control plane ([`ControlPlane`]) as
//! the user. Everything lands in one [`Recorder`]; each turn moves its entries out and grades them
//! behind the handshake (a transcript slice numbered from 0).
//!
//! The slice is built without copying the handshake: the client keeps one buffer that holds the
//! prefix between turns, appends the turn to it, lends it to the turn's [`CaseRecord`], and gets
//! it back after grading ([`Live::give_back`]), cut back to the prefix. A record that is handed
//! out instead (the caller keeps the transcript) costs one copy of the prefix on the next turn.
//!
//! A client remembers the user's `allow_always` answers for the rest of the session and may
//! answer later requests of those kinds by itself. A turn's transcript must show why, or
//! `auto-approval` would blame a decision the user authorised: so every turn in which the user
//! clicked an `allow_always` option is kept and replayed at the head of every later turn's
//! slice (after the handshake), and after [`MAX_GRANT_TURNS`] of them the client is restarted
//! (a fresh session remembers nothing), which keeps the slices short.

mod turn;

use acp_vocab::envelope::Shape;
use acp_vocab::method::Method;
use std::path::PathBuf;
use std::time::Duration;

use acp_fake_agents::engine::{Connector, UserAction, UserDriver};
use acp_fake_agents::link::AgentLink;
use acp_fake_agents::machine_time::Deadline;
use acp_fake_agents::mailbox::{Msg, WaitError};
use acp_vocab::note::Note;
use acp_vocab::transcript::{Entry, Recorder};
use serde_json::{Value, json};

use super::driver::DriverConfig;
use super::exit_cleanup::ExitSafeDir;
use crate::control::{ControlPlane, HandshakeError};
use crate::launch::{self, Launched};
use crate::relay_listener::RelayListener;
use crate::runner::client_start::ClientStart;
use acp_judge::record::{CaseMeta, CaseRecord, RunEnd};

/// The session handle and ACP session id of the driver's one session.
const HANDLE: &str = "s1";
const SESSION_ID: &str = "sess_fuzz";
/// Longest line accepted from the client on the wire plane (the control plane has its own).
const MAX_LINE: usize = 1 << 20;
/// Turns with a user `allow_always` a client keeps before it is restarted.
const MAX_GRANT_TURNS: usize = 8;
/// What the fake agent answers to `initialize` (a plain ACP v1 agent, no capabilities).
const INITIALIZE_RESULT: &str =
    r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}"#;
/// The control commands the driver plays the user with.
const NEEDED: [&str; 4] = ["new_session", "prompt", "choose", "cancel"];

/// Why a turn stopped early.
enum Stop {
    /// A wait for the client ran out (the step timeout).
    Timeout(String),
    /// The client closed a plane (it died or is dying).
    Closed(String),
    /// The adapter broke the control protocol: nothing it says can be trusted.
    Protocol(String),
}

/// The running client.
pub(super) struct Live {
    _dir: ExitSafeDir,
    workspace: String,
    outside: String,
    launched: Launched,
    rec: Recorder,
    plane: ControlPlane,
    link: Option<AgentLink>,
    /// The handshake entries (with the `declared_policy` note of a profile's policy).
    handshake: Vec<Entry>,
    /// The entries of every turn in which the user chose an `allow_always` option, numbered as
    /// in the prefix (after the handshake and the grant turns before it).
    grant_turns: Vec<Vec<Entry>>,
    /// What the next turn's slice starts with when it holds exactly the prefix (the handshake,
    /// then the grant turns, numbered from 0); otherwise it is rebuilt from those.
    prefix: Vec<Entry>,
    /// The turn whose record holds the prefix buffer, until [`Live::give_back`] returns it.
    lent_to: Option<u64>,
    supports: Vec<String>,
    /// Turns played on this client.
    pub(super) turns: u64,
}

/// How to cite a turn: `fuzz/permission_mapping#<n>`.
fn case_id(n: u64) -> String {
    format!("fuzz/permission_mapping#{n}")
}

impl Live {
    /// Launches the client, opens the session and records the handshake. On failure, the
    /// case record that says why (a crash, a timeout or a harness error).
    /// `policy`: the reference client's `--policy` argument to launch it with.
    pub(super) async fn start(
        cfg: &DriverConfig,
        policy: Option<&str>,
    ) -> Result<Live, Box<CaseRecord>> {
        let rec = Recorder::new();
        let dir = match tempfile::Builder::new().prefix("acp-fuzz-").tempdir() {
            Ok(d) => ExitSafeDir::new(d),
            Err(e) => return Err(Box::new(failed_start(cfg, format!("no tempdir: {e}")))),
        };
        let paths = (|| -> std::io::Result<_> {
            let root = dir.path().canonicalize()?;
            let (work, outside, home) =
                (root.join("work"), root.join("outside"), root.join("home"));
            for d in [&work, &outside, &home] {
                std::fs::create_dir(d)?;
            }
            Ok((root, work, outside, home))
        })();
        let (root, work, outside, home) = match paths {
            Ok(p) => p,
            Err(e) => return Err(Box::new(failed_start(cfg, format!("tempdir: {e}")))),
        };
        let socket = root.join("agent.sock");
        let listener = match RelayListener::bind(&socket) {
            Ok(l) => l,
            Err(e) => {
                return Err(Box::new(failed_start(
                    cfg,
                    format!("cannot listen on the relay socket: {e}"),
                )));
            }
        };
        let start = ClientStart::new(
            &cfg.client,
            &cfg.fake_agent,
            &socket,
            String::new(),
            &work,
            &home,
        );
        let mut argv = start.argv.clone();
        if let Some(policy) = policy {
            argv.extend(["--policy".to_owned(), policy.to_owned()]);
        }
        let mut launched = match launch::launch(&argv, &start.env, &work) {
            Ok(l) => l,
            Err(e) => {
                let mut record = failed_start(cfg, String::new());
                record.end = RunEnd::Crash {
                    exit_code: None,
                    signal: None,
                    reason: format!("{e:#}"),
                };
                return Err(Box::new(record));
            }
        };
        let (Some(stdin), Some(stdout)) = (launched.stdin.take(), launched.stdout.take()) else {
            launched.finish(Duration::ZERO).await;
            return Err(Box::new(failed_start(
                cfg,
                "client stdio not captured".into(),
            )));
        };
        if let Some(note) = cfg.client.declared_policy_note() {
            rec.note(&note);
        }
        let plane = ControlPlane::new(stdin, stdout, rec.clone());
        let mut live = Live {
            workspace: work.to_string_lossy().into_owned(),
            outside: outside.to_string_lossy().into_owned(),
            _dir: dir,
            launched,
            rec,
            plane,
            link: None,
            handshake: Vec::new(),
            grant_turns: Vec::new(),
            prefix: Vec::new(),
            lent_to: None,
            supports: Vec::new(),
            turns: 0,
        };
        match live.handshake(listener, cfg.step_timeout).await {
            Ok(()) => {
                live.handshake = live.rec.take();
                Ok(live)
            }
            Err(stop) => {
                let end = live.end_of(stop).await;
                let record = live.record(live.rec.take(), end, 0, cfg);
                live.shutdown().await;
                Err(Box::new(record))
            }
        }
    }

    /// hello → new_session → initialize → session/new → session_opened.
    async fn handshake(
        &mut self,
        mut listener: RelayListener,
        timeout: Duration,
    ) -> Result<(), Stop> {
        self.supports = match self.plane.handshake(timeout).await {
            Ok(supports) => supports,
            Err(HandshakeError::Unsupported(reason)) => return Err(Stop::Protocol(reason)),
            Err(HandshakeError::NoHello(reason)) => return Err(self.plane_stop(reason)),
        };
        let missing: Vec<&str> = NEEDED
            .into_iter()
            .filter(|c| !self.supports.iter().any(|s| s == c))
            .collect();
        if !missing.is_empty() {
            return Err(Stop::Protocol(format!(
                "the fuzz driver needs an adapter that supports {}; this one does not say so in hello",
                missing.join(", ")
            )));
        }
        let new_session = UserAction::NewSession {
            session: HANDLE.into(),
            cwd: self.workspace.clone(),
        };
        self.act(new_session, timeout).await?;
        let conn = match tokio::time::timeout(timeout, listener.accept()).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => return Err(Stop::Closed(format!("relay socket: {e}"))),
            Err(_) => {
                return Err(Stop::Timeout(format!(
                    "the client did not start its agent within {} ms of new_session",
                    timeout.as_millis()
                )));
            }
        };
        self.link = Some(AgentLink::open(conn, MAX_LINE, &self.rec));
        let init = self
            .wait_wire(timeout, Method::Initialize.as_str(), |j| {
                is_request(j, Method::Initialize)
            })
            .await?;
        let result: Value = serde_json::from_str(INITIALIZE_RESULT).unwrap_or_default();
        self.send(vec![reply(&init, result)], timeout).await?;
        let new = self
            .wait_wire(timeout, Method::SessionNew.as_str(), |j| {
                is_request(j, Method::SessionNew)
            })
            .await?;
        self.send(vec![reply(&new, json!({"sessionId": SESSION_ID}))], timeout)
            .await?;
        if let Err(reason) = self.plane.session_opened(HANDLE, timeout).await {
            return Err(self.plane_stop(reason));
        }
        Ok(())
    }

    /// True once this client should be replaced by a fresh one: after `turns_per_client` turns,
    /// or [`MAX_GRANT_TURNS`] turns with a user `allow_always`.
    pub(super) fn needs_restart(&self, cfg: &DriverConfig) -> bool {
        self.turns >= cfg.turns_per_client || self.grant_turns.len() >= MAX_GRANT_TURNS
    }

    /// Entries in the prefix: the handshake and the grant turns.
    fn prefix_len(&self) -> usize {
        self.handshake.len() + self.grant_turns.iter().map(Vec::len).sum::<usize>()
    }

    /// The prefix, then `turn` numbered on from it: the transcript turn `n` is graded on. The
    /// prefix is the buffer [`Live::give_back`] returned, or a copy if none was. `granted`: the
    /// user chose `allow_always` in this turn, which is then kept at the head of later slices.
    fn slice(&mut self, turn: Vec<Entry>, n: u64, granted: bool) -> Vec<Entry> {
        let mut entries = std::mem::take(&mut self.prefix);
        if self.lent_to.take().is_some() || entries.len() != self.prefix_len() {
            entries.clear();
            entries.extend(self.handshake.iter().cloned());
            entries.extend(self.grant_turns.iter().flatten().cloned());
        }
        let start = entries.len();
        entries.reserve(turn.len());
        for mut entry in turn {
            entry.index = entries.len();
            entries.push(entry);
        }
        if granted {
            self.grant_turns.push(entries[start..].to_vec());
        }
        self.lent_to = Some(n);
        entries
    }

    /// Takes back the transcript of turn `n`'s record after grading, as the next turn's prefix
    /// (its own entries after the prefix are dropped). A transcript of any other turn is dropped.
    pub(super) fn give_back(&mut self, n: u64, mut transcript: Vec<Entry>) {
        if self.lent_to != Some(n) {
            return;
        }
        self.lent_to = None;
        transcript.truncate(self.prefix_len());
        self.prefix = transcript;
    }

    // ----- the plumbing, as the driver uses it ------------------------------------------------

    /// A user action through the control plane.
    async fn act(&mut self, action: UserAction, timeout: Duration) -> Result<(), Stop> {
        match self.plane.act(action, timeout).await {
            Ok(()) => Ok(()),
            Err(failure) => Err(self.plane_stop(failure.to_string())),
        }
    }

    /// What a failed control-plane wait or action means: a protocol violation, a closed plane,
    /// or a client that did not do what was asked in time.
    fn plane_stop(&self, reason: String) -> Stop {
        if let Some(violation) = self.plane.protocol_error() {
            Stop::Protocol(violation)
        } else if self.plane.stdout_closed() {
            Stop::Closed(reason)
        } else {
            Stop::Timeout(reason)
        }
    }

    /// Records then writes agent frames, in one write.
    async fn send(&mut self, frames: Vec<Value>, timeout: Duration) -> Result<(), Stop> {
        let Some(link) = self.link.as_mut() else {
            return Err(Stop::Closed("no agent connection".into()));
        };
        let lines: Vec<Vec<u8>> = frames.iter().map(|f| f.to_string().into_bytes()).collect();
        let lines: Vec<&[u8]> = lines.iter().map(Vec::as_slice).collect();
        match tokio::time::timeout(timeout, link.send(&self.rec, &lines)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Stop::Closed(format!(
                "the client closed the agent connection: {e}"
            ))),
            Err(_) => Err(Stop::Timeout(
                "the client does not read from its agent".into(),
            )),
        }
    }

    /// Takes the first unconsumed client frame that `fits`, waiting at most `timeout`. Requests
    /// the fake agent does not serve are answered -32601 meanwhile (they do not end the wait).
    async fn wait_wire(
        &mut self,
        timeout: Duration,
        what: &str,
        fits: impl Fn(&Value) -> bool,
    ) -> Result<Msg, Stop> {
        let deadline = Deadline::after(timeout);
        loop {
            let Some(link) = self.link.as_ref() else {
                return Err(Stop::Closed("no agent connection".into()));
            };
            let found = link
                .mailbox()
                .take(
                    |m| {
                        if fits(&m.json) {
                            Some(true)
                        } else {
                            unserved(&m.json).then_some(false)
                        }
                    },
                    &deadline,
                )
                .await;
            match found {
                Ok((msg, true)) => return Ok(msg),
                Ok((msg, false)) => {
                    let error = json!({"jsonrpc":"2.0","id":msg.json["id"],"error":{"code":-32601,"message":"Method not found"}});
                    self.send(vec![error], timeout).await?;
                }
                Err(WaitError::TimedOut) => {
                    self.rec.note(&Note::StepTimeout {
                        step: None,
                        label: None,
                        reason: None,
                        waiting_for: Some(what.to_string()),
                        waited_us: Some(deadline.elapsed().wall.as_micros() as u64),
                    });
                    return Err(Stop::Timeout(format!(
                        "the client sent no {what} within {} ms",
                        timeout.as_millis()
                    )));
                }
                Err(WaitError::Closed) => {
                    return Err(Stop::Closed(
                        "the client closed its agent connection".into(),
                    ));
                }
            }
        }
    }

    // ----- ends ---------------------------------------------------------------------------

    /// How a stopped turn ended, with the exit status if the client is dying.
    async fn end_of(&mut self, stop: Stop) -> RunEnd {
        match stop {
            Stop::Timeout(reason) => match self.launched.try_exit() {
                Some(exit) => crashed(&exit, &reason),
                None => RunEnd::Incomplete { step: 0, reason },
            },
            Stop::Closed(reason) => {
                match self.launched.exit_within(Duration::from_millis(500)).await {
                    Some(exit) => crashed(&exit, &reason),
                    None => RunEnd::Incomplete { step: 0, reason },
                }
            }
            Stop::Protocol(reason) => RunEnd::AdapterError { reason },
        }
    }

    fn record(
        &self,
        transcript: Vec<Entry>,
        end: RunEnd,
        n: u64,
        cfg: &DriverConfig,
    ) -> CaseRecord {
        let mut record = failed_start(cfg, String::new());
        record.meta.case_id = case_id(n);
        record.transcript = transcript;
        record.control_supports = self.supports.clone();
        record.workspace = PathBuf::from(&self.workspace);
        record.outside = PathBuf::from(&self.outside);
        if !matches!(end, RunEnd::Completed) {
            record.stderr_tail = self.launched.stderr_tail();
        }
        record.end = end;
        record
    }

    /// Asks the adapter to quit, closes both planes, and reaps the client's process group.
    pub(super) async fn shutdown(mut self) {
        self.plane.shutdown().await;
        drop(self.link.take());
        self.launched.finish(Duration::from_secs(2)).await;
    }
}

/// A request (it has an `id`) of this method.
fn is_request(json: &Value, method: Method) -> bool {
    Shape::of(json).is_request_for(method)
}

/// A request to the agent that the fake agent does not serve.
fn unserved(json: &Value) -> bool {
    let method = json.get("method").and_then(Value::as_str);
    json.get("id").is_some()
        && method.is_some_and(|m| {
            !matches!(
                Method::parse(m),
                Some(Method::Initialize | Method::SessionNew | Method::SessionPrompt)
            )
        })
}

fn crashed(exit: &launch::ExitInfo, reason: &str) -> RunEnd {
    RunEnd::Crash {
        exit_code: exit.code,
        signal: exit.signal.clone(),
        reason: format!(
            "the client exited during the turn: {} ({reason})",
            exit.describe()
        ),
    }
}

/// The record of a client that could not even be started: graded `error` (the reason) unless
/// the caller sets a crash.
pub(super) fn failed_start(cfg: &DriverConfig, reason: String) -> CaseRecord {
    CaseRecord {
        meta: CaseMeta {
            case_id: case_id(0),
            title: "permission turn played by the fuzz driver".into(),
            agent: "fuzz".into(),
            version: "permission_mapping".into(),
            provenance: vec!["fuzz/README.md (permission_mapping target)".into()],
            file: String::new(),
        },
        transcript: Vec::new(),
        control_plane: true,
        control_supports: Vec::new(),
        workspace: PathBuf::new(),
        outside: PathBuf::new(),
        files_after: Default::default(),
        symlinks: Default::default(),
        end: RunEnd::HarnessError { reason },
        stderr_tail: String::new(),
        repro: repro(cfg),
    }
}

/// How a fuzz finding is replayed: the crash artifact written as a regression scenario, then that
/// scenario run against the client.
pub(super) fn repro(cfg: &DriverConfig) -> String {
    format!(
        "cargo run -p acp-harness -- fuzz-to-scenario <crash artifact> --id <id>, then: acp-harness replay 'regressions@fuzz/<id>' --client {}",
        crate::client_spec::shell_quote(&cfg.client.source)
    )
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` answering `request` (id `null` if it had none).
fn reply(request: &Msg, result: Value) -> Value {
    let id = request.json.get("id").cloned().unwrap_or(Value::Null);
    json!({"jsonrpc":"2.0","id":id,"result":result})
}
