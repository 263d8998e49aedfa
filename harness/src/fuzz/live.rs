//! The running client of the long-lived driver ([`super::driver`]): launch, handshake, and one
//! permission turn at a time, recorded into a transcript [`Slice`]. The plumbing (control
//! commands, agent frames, waits over both planes) is in [`io`].
//!
//! A client remembers the user's `allow_always` answers for the rest of the session and may
//! answer later requests of those kinds by itself. A turn's transcript must show why, or
//! `auto-approval` would blame a decision the user authorised: so every turn in which the user
//! clicked an `allow_always` option is kept and replayed at the head of every later turn's
//! slice (after the handshake), and after [`MAX_GRANT_TURNS`] of them the client is restarted
//! (a fresh session remembers nothing), which keeps the slices short.

mod io;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use acp_vocab::transcript::Entry;
use serde_json::{Value, json};
use tokio::net::UnixListener;
use tokio::net::unix::OwnedWriteHalf;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use self::io::{Mailbox, Msg, is_event, is_request, is_response, read_plane, slice_json};
use super::driver::DriverConfig;
use super::frames::{self, Answer, Names};
use super::input::{Action, OptionKind, PermissionTurn};
use super::slice::Slice;
use crate::client_spec::Expansion;
use crate::launch::{self, Launched};
use acp_judge::record::{CaseMeta, CaseRecord, RunEnd};

/// The session handle and ACP session id of the driver's one session.
const HANDLE: &str = "s1";
const SESSION_ID: &str = "sess_fuzz";
/// The wire connection id in transcripts (the client's first agent connection).
const CONN: u32 = 1;
/// Longest line accepted from the client on either plane.
const MAX_LINE: usize = 1 << 20;
/// Turns with a user `allow_always` a client keeps before it is restarted.
const MAX_GRANT_TURNS: usize = 8;
/// What the fake agent answers to `initialize` (a plain ACP v1 agent, no capabilities).
const INITIALIZE_RESULT: &str =
    r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}"#;

/// Something the client wrote, on either plane.
#[derive(Debug)]
enum Inbound {
    Control(Vec<u8>),
    Wire(Vec<u8>),
    TooLong { wire: bool, len: usize },
    Closed { wire: bool },
}

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
    _dir: tempfile::TempDir,
    workspace: String,
    outside: String,
    launched: Launched,
    control: Option<ChildStdin>,
    wire: Option<OwnedWriteHalf>,
    inbox: mpsc::UnboundedReceiver<Inbound>,
    /// The handshake entries (with the `declared_policy` note of a profile's policy).
    handshake: Vec<Entry>,
    /// The entries of every turn in which the user chose an `allow_always` option.
    grant_turns: Vec<Vec<Entry>>,
    /// What every turn's slice starts with: the handshake, then the grant turns, numbered from 0.
    prefix: Vec<Entry>,
    supports: Vec<String>,
    started: Instant,
    seq: u64,
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
        let started = Instant::now();
        let dir = match tempfile::Builder::new().prefix("acp-fuzz-").tempdir() {
            Ok(d) => d,
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
        let listener = match UnixListener::bind(&socket) {
            Ok(l) => l,
            Err(e) => {
                return Err(Box::new(failed_start(
                    cfg,
                    format!("cannot listen on the relay socket: {e}"),
                )));
            }
        };
        let agent_argv = vec![
            cfg.fake_agent.to_string_lossy().into_owned(),
            "--connect".to_owned(),
            socket.to_string_lossy().into_owned(),
        ];
        let expansion = Expansion {
            agent_argv: &agent_argv,
            prompt: "",
            cwd: &work,
            home: &home,
        };
        let mut argv = cfg.client.expand_argv(&expansion);
        if let Some(policy) = policy {
            argv.extend(["--policy".to_owned(), policy.to_owned()]);
        }
        let mut env = cfg.client.expand_env(&expansion);
        env.push((
            "ACP_HARNESS_AGENT".into(),
            serde_json::to_string(&agent_argv).unwrap_or_default(),
        ));
        env.push((
            "ACP_HARNESS_CWD".into(),
            work.to_string_lossy().into_owned(),
        ));
        let mut launched = match launch::launch(&argv, &env, &work) {
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
        let (inbox_tx, inbox) = mpsc::unbounded_channel();
        let (Some(stdin), Some(stdout)) = (launched.stdin.take(), launched.stdout.take()) else {
            launched.finish(Duration::ZERO).await;
            return Err(Box::new(failed_start(
                cfg,
                "client stdio not captured".into(),
            )));
        };
        tokio::spawn(read_plane(stdout, false, inbox_tx.clone()));
        let mut live = Live {
            workspace: work.to_string_lossy().into_owned(),
            outside: outside.to_string_lossy().into_owned(),
            _dir: dir,
            launched,
            control: Some(stdin),
            wire: None,
            inbox,
            handshake: Vec::new(),
            grant_turns: Vec::new(),
            prefix: Vec::new(),
            supports: Vec::new(),
            started,
            seq: 0,
            turns: 0,
        };
        let mut slice = Slice::new(started, &[]);
        if let Some(note) = cfg.client.declared_policy_note() {
            slice.note(note.to_json());
        }
        let outcome = live
            .handshake(&mut slice, listener, inbox_tx, cfg.step_timeout)
            .await;
        match outcome {
            Ok(()) => {
                live.handshake = slice.into_entries();
                live.prefix = live.handshake.clone();
                Ok(live)
            }
            Err(stop) => {
                let end = live.end_of(stop).await;
                let record = live.record(slice.into_entries(), end, 0, cfg);
                live.shutdown().await;
                Err(Box::new(record))
            }
        }
    }

    /// hello → new_session → initialize → session/new → session_opened.
    async fn handshake(
        &mut self,
        slice: &mut Slice,
        listener: UnixListener,
        inbox_tx: mpsc::UnboundedSender<Inbound>,
        timeout: Duration,
    ) -> Result<(), Stop> {
        let mut mail = Mailbox::default();
        let hello = self
            .wait(slice, &mut mail, timeout, "hello", |m, s| {
                is_event(m, s, "hello")
            })
            .await?;
        let hello = slice.json(hello).cloned().unwrap_or_default();
        if hello.get("version").and_then(Value::as_i64) != Some(1) {
            return Err(Stop::Protocol(format!(
                "unsupported control protocol version {} (this harness speaks version 1)",
                hello.get("version").unwrap_or(&Value::Null)
            )));
        }
        self.supports = hello["supports"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let missing: Vec<&str> = ["new_session", "prompt", "choose", "cancel"]
            .into_iter()
            .filter(|c| !self.supports.iter().any(|s| s == c))
            .collect();
        if !missing.is_empty() {
            return Err(Stop::Protocol(format!(
                "the fuzz driver needs an adapter that supports {}; this one does not say so in hello",
                missing.join(", ")
            )));
        }
        let cwd = self.workspace.clone();
        self.command(
            slice,
            json!({"type":"new_session","session":HANDLE,"cwd":cwd}),
        )
        .await?;
        let accepted = tokio::time::timeout(timeout, listener.accept()).await;
        let stream = match accepted {
            Ok(Ok((stream, _))) => stream,
            Ok(Err(e)) => return Err(Stop::Closed(format!("relay socket: {e}"))),
            Err(_) => {
                return Err(Stop::Timeout(format!(
                    "the client did not start its agent within {} ms of new_session",
                    timeout.as_millis()
                )));
            }
        };
        let (reader, writer) = stream.into_split();
        self.wire = Some(writer);
        tokio::spawn(read_plane(reader, true, inbox_tx));
        let init = self
            .wait(slice, &mut mail, timeout, "initialize", |m, s| {
                is_request(m, s, "initialize")
            })
            .await?;
        let id = slice.json(init).and_then(|j| j.get("id")).cloned();
        let result: Value = serde_json::from_str(INITIALIZE_RESULT).unwrap_or_default();
        self.send(slice, vec![reply(id, result)], timeout).await?;
        let new = self
            .wait(slice, &mut mail, timeout, "session/new", |m, s| {
                is_request(m, s, "session/new")
            })
            .await?;
        let id = slice.json(new).and_then(|j| j.get("id")).cloned();
        self.send(
            slice,
            vec![reply(id, json!({"sessionId": SESSION_ID}))],
            timeout,
        )
        .await?;
        self.wait(slice, &mut mail, timeout, "session_opened", |m, s| {
            is_event(m, s, "session_opened")
        })
        .await?;
        Ok(())
    }

    /// Plays one turn; returns its case record and whether the client must be restarted.
    pub(super) async fn play(
        &mut self,
        turn: &PermissionTurn,
        n: u64,
        cfg: &DriverConfig,
    ) -> (CaseRecord, bool) {
        self.turns += 1;
        let mut slice = Slice::new(self.started, &self.prefix);
        let (end, granted) = match self.turn(&mut slice, turn, n, cfg.step_timeout).await {
            Ok(granted) => (RunEnd::Completed, granted),
            Err(stop) => (self.end_of(stop).await, false),
        };
        let restart = end != RunEnd::Completed;
        let entries = slice.into_entries();
        if granted {
            self.remember_grant_turn(&entries[self.prefix.len()..]);
        }
        (self.record(entries, end, n, cfg), restart)
    }

    /// True once this client should be replaced by a fresh one: after `turns_per_client` turns,
    /// or [`MAX_GRANT_TURNS`] turns with a user `allow_always`.
    pub(super) fn needs_restart(&self, cfg: &DriverConfig) -> bool {
        self.turns >= cfg.turns_per_client || self.grant_turns.len() >= MAX_GRANT_TURNS
    }

    /// Keeps a turn in which the user chose `allow_always` at the head of later slices.
    fn remember_grant_turn(&mut self, turn: &[Entry]) {
        self.grant_turns.push(turn.to_vec());
        self.prefix = self.handshake.clone();
        for entry in self.grant_turns.iter().flatten() {
            let mut entry = entry.clone();
            entry.index = self.prefix.len();
            self.prefix.push(entry);
        }
    }

    async fn turn(
        &mut self,
        slice: &mut Slice,
        turn: &PermissionTurn,
        n: u64,
        timeout: Duration,
    ) -> Result<bool, Stop> {
        let mut mail = Mailbox::default();
        let mut granted = false;
        self.command(
            slice,
            json!({"type":"prompt","session":HANDLE,"text":format!("fuzz turn {n}")}),
        )
        .await?;
        let prompt = self
            .wait(slice, &mut mail, timeout, "session/prompt", |m, s| {
                is_request(m, s, "session/prompt")
            })
            .await?;
        let prompt_id = slice.json(prompt).and_then(|j| j.get("id")).cloned();

        let tool_call_id = format!("call_{n}");
        let (cwd, outside) = (self.workspace.clone(), self.outside.clone());
        let names = Names {
            session_id: SESSION_ID,
            tool_call_id: &tool_call_id,
            cwd: &cwd,
            outside: &outside,
            template: false,
        };
        let request_id = frames::request_id(turn.request_id, n);
        let mut out = Vec::new();
        out.extend(turn.announce.as_ref().map(|s| names.announce(s)));
        out.extend(turn.progress.as_ref().map(|s| names.progress(s)));
        out.push(names.request(turn, &request_id));
        if turn.action == Action::Leave {
            out.push(names.withdraw(&request_id));
        }
        self.send(slice, out, timeout).await?;

        let is_answer = |m: &Msg, slice: &Slice| is_response(m, slice, &request_id);
        let is_card = |m: &Msg, slice: &Slice| {
            is_event(m, slice, "approval")
                && slice_json(m, slice).and_then(|j| j.get("requestId")) == Some(&request_id)
        };
        let answer = match turn.action {
            Action::Leave => {
                self.wait(
                    slice,
                    &mut mail,
                    timeout,
                    "the answer to the permission request",
                    is_answer,
                )
                .await?
            }
            Action::Choose(_) | Action::Cancel => {
                // The user acts once the card is shown; a client whose policy answers first
                // shows no card, and there is nothing to click.
                let first = self
                    .wait_keep(
                        slice,
                        &mut mail,
                        timeout,
                        "the approval card (or a policy answer)",
                        |m, s| is_card(m, s) || is_answer(m, s),
                    )
                    .await?;
                if is_card(&first, slice) {
                    let seq = match (turn.action, turn.chosen()) {
                        (Action::Choose(_), Some(option)) => {
                            // Any option with that id: ids collide, and the client may take
                            // the click for the `allow_always` one.
                            granted = turn
                                .options
                                .iter()
                                .any(|o| o.id == option.id && o.kind == OptionKind::AllowAlways);
                            self.command(
                                slice,
                                json!({"type":"choose","requestId":request_id,"optionId":option.id.as_str()}),
                            )
                            .await?
                        }
                        _ => {
                            self.command(slice, json!({"type":"cancel","session":HANDLE}))
                                .await?
                        }
                    };
                    let is_error = |m: &Msg, slice: &Slice| {
                        is_event(m, slice, "error")
                            && slice_json(m, slice)
                                .and_then(|j| j.get("seq"))
                                .and_then(Value::as_u64)
                                == Some(seq)
                    };
                    let got = self
                        .wait(
                            slice,
                            &mut mail,
                            timeout,
                            "the answer to the permission request",
                            |m, s| is_answer(m, s) || is_error(m, s),
                        )
                        .await?;
                    if !is_answer(&Msg::Wire(got), slice) {
                        let message = slice
                            .json(got)
                            .and_then(|j| j.get("message"))
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned();
                        return Err(Stop::Timeout(format!(
                            "the user could not carry out the action (the adapter said: {message})"
                        )));
                    }
                    got
                } else {
                    mail.take(&first);
                    first.index()
                }
            }
        };
        let answer = slice
            .json(answer)
            .map(|j| frames::answer_of(turn, j))
            .unwrap_or(Answer::Denied);
        let cancelled = turn.action == Action::Cancel && answer == Answer::Cancelled;
        if cancelled {
            self.wait(slice, &mut mail, timeout, "session/cancel", |m, s| {
                matches!(m, Msg::Wire(_))
                    && slice_json(m, s)
                        .and_then(|j| j.get("method"))
                        .and_then(Value::as_str)
                        == Some("session/cancel")
            })
            .await?;
        }
        let mut out = Vec::new();
        out.extend(names.finish(
            turn,
            answer == Answer::Allowed && turn.action != Action::Cancel,
        ));
        out.push(reply(prompt_id, frames::prompt_result(cancelled)));
        self.send(slice, out, timeout).await?;
        self.wait(slice, &mut mail, timeout, "the end of the turn", |m, s| {
            is_event(m, s, "turn")
                && slice_json(m, s)
                    .and_then(|j| j.get("state"))
                    .and_then(Value::as_str)
                    != Some("running")
        })
        .await?;
        Ok(granted)
    }
}

impl Live {
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
        let mut slice = Slice::new(self.started, &[]);
        let _ = tokio::time::timeout(
            Duration::from_millis(500),
            self.command(&mut slice, json!({"type":"shutdown"})),
        )
        .await;
        self.control = None;
        self.wire = None;
        self.launched.finish(Duration::from_secs(2)).await;
    }
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
fn failed_start(cfg: &DriverConfig, reason: String) -> CaseRecord {
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
        repro: format!(
            "cargo run -p acp-harness -- fuzz-to-scenario <crash artifact> --id <id>, then: acp-harness replay 'regressions@fuzz/<id>' --client {}",
            crate::client_spec::shell_quote(&cfg.client.source)
        ),
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` (id `null` if the request had none to echo).
fn reply(id: Option<Value>, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id.unwrap_or(Value::Null),"result":result})
}
