//! The long-lived fuzz driver: one client launch, many permission turns over one connection.
//!
//! The client is launched once (control plane on its stdin/stdout, one relay connection on the
//! wire plane), a session is opened, and then every input is one prompt turn: prompt →
//! announcement → `session/request_permission` → the user's action → the client's answer →
//! `tool_call_update` → stop reason → the client shows the turn's end. The turn is recorded as a
//! transcript [`Slice`] behind the connection's handshake and graded by every check
//! ([`Verdict`]).
//!
//! The per-turn path is lean: no process spawn, no sleep (every wait ends on the awaited frame or
//! the step timeout), no schema compilation (validators are compiled once per process), frames
//! of a step written in one `write`. The client is restarted after a finding (its state is then
//! suspect) and every `turns_per_client` turns (a real client keeps its history; an overnight
//! run must not grow it without bound).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use acp_fake_agents::transcript::{Direction, Entry};
use acp_fake_agents::wire::{Frame, FrameReader};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::UnixListener;
use tokio::net::unix::OwnedWriteHalf;
use tokio::process::ChildStdin;
use tokio::sync::mpsc;

use super::frames::{self, Answer, Names};
use super::input::{Action, PermissionTurn};
use super::slice::Slice;
use super::verdict::{Verdict, summary};
use crate::client_spec::{ClientSpec, ControlMode, Expansion};
use crate::control::validate_control;
use crate::launch::{self, Launched};
use crate::locate::{self, WorkspaceBin};
use crate::record::{CaseMeta, CaseRecord, RunEnd};

/// The session handle and ACP session id of the driver's one session.
const HANDLE: &str = "s1";
const SESSION_ID: &str = "sess_fuzz";
/// The wire connection id in transcripts (the client's first agent connection).
const CONN: u32 = 1;
/// Longest line accepted from the client on either plane.
const MAX_LINE: usize = 1 << 20;
/// What the fake agent answers to `initialize` (a plain ACP v1 agent, no capabilities).
const INITIALIZE_RESULT: &str =
    r#"{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}"#;

/// Knobs of the driver.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    pub client: ClientSpec,
    /// The relay binary the client is told to spawn as its agent.
    pub fake_agent: PathBuf,
    /// How long one wait for the client may take.
    pub step_timeout: Duration,
    /// Turns before the client is restarted.
    pub turns_per_client: u64,
    /// After a finding, replay the input on a freshly started client and say whether it
    /// reproduces there.
    pub confirm_on_fresh_client: bool,
}

impl DriverConfig {
    /// From the environment:
    /// * `ACP_HARNESS_CLIENT`: the client (`reference` by default, `mutant:<name>`, a JSON argv
    ///   array, or a client profile), as for `cargo test`; it must have a control-plane adapter;
    /// * `ACP_HARNESS_REFERENCE_CLIENT`, `ACP_HARNESS_FAKE_AGENT`: explicit binaries; otherwise
    ///   they are found next to the running executable or in the workspace's `target/release`,
    ///   `target/debug` (a fuzz target runs from `fuzz/target/…`, where they are not);
    /// * `ACP_FUZZ_STEP_TIMEOUT_MS` (default 5000), `ACP_FUZZ_TURNS_PER_CLIENT` (default 5000).
    pub fn from_env() -> Result<Self> {
        let client_text = std::env::var("ACP_HARNESS_CLIENT").ok();
        let client = match client_text.as_deref().map(str::trim) {
            None | Some("") | Some("reference") => reference_spec(None)?,
            Some(s) if s.starts_with("mutant:") => reference_spec(Some(&s["mutant:".len()..]))?,
            Some(s) => ClientSpec::parse(s)?,
        };
        if client.control != ControlMode::Adapter {
            bail!(
                "the fuzz driver plays the user through the control plane: client {:?} has no adapter",
                client.name
            );
        }
        let number = |name: &str, default: u64| -> Result<u64> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse()
                    .with_context(|| format!("{name}={v:?} is not a number")),
                Err(_) => Ok(default),
            }
        };
        Ok(DriverConfig {
            client,
            fake_agent: workspace_bin(locate::FAKE_AGENT)?,
            step_timeout: Duration::from_millis(number("ACP_FUZZ_STEP_TIMEOUT_MS", 5000)?.max(1)),
            turns_per_client: number("ACP_FUZZ_TURNS_PER_CLIENT", 5000)?.max(1),
            confirm_on_fresh_client: true,
        })
    }
}

/// The reference client (or one of its mutants) as a client spec.
fn reference_spec(mutant: Option<&str>) -> Result<ClientSpec> {
    let path = workspace_bin(locate::REFERENCE_CLIENT)?;
    let mut spec = ClientSpec::from_argv(vec![path.to_string_lossy().into_owned()])?;
    spec.name = "acp-reference-client".into();
    spec.source = "reference".into();
    if let Some(name) = mutant {
        spec.argv.extend(["--mutant".to_owned(), name.to_owned()]);
        spec.name = format!("acp-reference-client --mutant {name}");
        spec.source = format!("mutant:{name}");
    }
    Ok(spec)
}

/// A workspace binary: the usual lookup, else the workspace's own `target/release` or
/// `target/debug` (for fuzz targets, which are built into `fuzz/target`).
fn workspace_bin(bin: WorkspaceBin) -> Result<PathBuf> {
    let first = match locate::locate(bin) {
        Ok(path) => return Ok(path),
        Err(e) => e,
    };
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for profile in ["release", "debug"] {
        let path = workspace.join("target").join(profile).join(bin.name);
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(first.context(format!(
        "build it with `cargo build --release -p {}` or set {}",
        bin.package, bin.env_override
    )))
}

/// One permission turn's result.
#[derive(Debug, Clone)]
pub struct TurnResult {
    /// The turn's case record (handshake + turn).
    pub record: CaseRecord,
    pub verdict: Verdict,
}

/// A finding: the turn's result and the readable summary.
#[derive(Debug, Clone)]
pub struct Finding {
    pub result: TurnResult,
    pub summary: String,
}

/// The long-lived driver. Dropping it shuts the client down.
pub struct Driver {
    cfg: DriverConfig,
    runtime: tokio::runtime::Runtime,
    live: Option<Live>,
    /// Turns played in this process (numbers the request ids and tool call ids).
    turns: u64,
}

impl Driver {
    pub fn new(cfg: DriverConfig) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the driver's runtime")?;
        Ok(Driver {
            cfg,
            runtime,
            live: None,
            turns: 0,
        })
    }

    pub fn config(&self) -> &DriverConfig {
        &self.cfg
    }

    /// Plays one turn and grades it. `Err` holds a finding (the client is then restarted for the
    /// next turn; with `confirm_on_fresh_client` the input is replayed on a fresh client first).
    /// An environment failure (client cannot be started at all) is reported as a finding too.
    pub fn play(&mut self, turn: &PermissionTurn) -> Result<TurnResult, Box<Finding>> {
        let result = self.play_once(turn);
        if result.verdict.passed() {
            return Ok(result);
        }
        self.stop_client();
        let fresh = if self.cfg.confirm_on_fresh_client {
            let again = self.play_once(turn);
            self.stop_client();
            Some(!again.verdict.passed())
        } else {
            None
        };
        let summary = summary(
            turn,
            &result.record,
            &result.verdict,
            &self.cfg.client.name,
            fresh,
        );
        Err(Box::new(Finding { result, summary }))
    }

    fn play_once(&mut self, turn: &PermissionTurn) -> TurnResult {
        self.turns += 1;
        let n = self.turns;
        let cfg = self.cfg.clone();
        let live = &mut self.live;
        let (record, restart) = self.runtime.block_on(async {
            if live
                .as_ref()
                .is_some_and(|l| l.turns >= cfg.turns_per_client)
            {
                if let Some(old) = live.take() {
                    old.shutdown().await;
                }
            }
            let l = match live {
                Some(l) => l,
                None => match Live::start(&cfg).await {
                    Ok(l) => live.insert(l),
                    Err(failed) => return (*failed, true),
                },
            };
            l.play(turn, n, &cfg).await
        });
        if restart {
            self.stop_client();
        }
        let verdict = Verdict::of(&record);
        TurnResult { record, verdict }
    }

    /// Stops the client (if running) and reaps it and everything it spawned.
    pub fn stop_client(&mut self) {
        if let Some(live) = self.live.take() {
            self.runtime.block_on(live.shutdown());
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop_client();
    }
}

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
struct Live {
    _dir: tempfile::TempDir,
    workspace: String,
    outside: String,
    launched: Launched,
    control: Option<ChildStdin>,
    wire: Option<OwnedWriteHalf>,
    inbox: mpsc::UnboundedReceiver<Inbound>,
    /// The handshake entries every turn's slice starts with.
    prefix: Vec<Entry>,
    supports: Vec<String>,
    started: Instant,
    seq: u64,
    /// Turns played on this client.
    turns: u64,
}

/// How to cite a turn: `fuzz/permission_mapping#<n>`.
fn case_id(n: u64) -> String {
    format!("fuzz/permission_mapping#{n}")
}

impl Live {
    /// Launches the client, opens the session and records the handshake. On failure, the
    /// case record that says why (a crash, a timeout or a harness error).
    async fn start(cfg: &DriverConfig) -> Result<Live, Box<CaseRecord>> {
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
        let argv = cfg.client.expand_argv(&expansion);
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
            prefix: Vec::new(),
            supports: Vec::new(),
            started,
            seq: 0,
            turns: 0,
        };
        let mut slice = Slice::new(started, &[]);
        let outcome = live
            .handshake(&mut slice, listener, inbox_tx, cfg.step_timeout)
            .await;
        match outcome {
            Ok(()) => {
                live.prefix = slice.into_entries();
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
    async fn play(
        &mut self,
        turn: &PermissionTurn,
        n: u64,
        cfg: &DriverConfig,
    ) -> (CaseRecord, bool) {
        self.turns += 1;
        let mut slice = Slice::new(self.started, &self.prefix);
        let end = match self.turn(&mut slice, turn, n, cfg.step_timeout).await {
            Ok(()) => RunEnd::Completed,
            Err(stop) => self.end_of(stop).await,
        };
        let restart = end != RunEnd::Completed;
        (self.record(slice.into_entries(), end, n, cfg), restart)
    }

    async fn turn(
        &mut self,
        slice: &mut Slice,
        turn: &PermissionTurn,
        n: u64,
        timeout: Duration,
    ) -> Result<(), Stop> {
        let mut mail = Mailbox::default();
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
        Ok(())
    }

    /// Sends a control command with the next `seq`; returns the seq.
    async fn command(&mut self, slice: &mut Slice, mut command: Value) -> Result<u64, Stop> {
        self.seq += 1;
        command["seq"] = json!(self.seq);
        let (_, mut line) = slice.push_sent(0, Direction::HarnessToAdapter, command);
        line.push('\n');
        let Some(stdin) = self.control.as_mut() else {
            return Err(Stop::Closed("the adapter's stdin is closed".into()));
        };
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        };
        match tokio::time::timeout(Duration::from_secs(5), write).await {
            Ok(Ok(())) => Ok(self.seq),
            Ok(Err(e)) => Err(Stop::Closed(format!("cannot write to the adapter: {e}"))),
            Err(_) => Err(Stop::Timeout("the adapter does not read its stdin".into())),
        }
    }

    /// Sends agent frames in one write.
    async fn send(
        &mut self,
        slice: &mut Slice,
        frames: Vec<Value>,
        timeout: Duration,
    ) -> Result<(), Stop> {
        let mut bytes = String::new();
        for frame in frames {
            let (_, line) = slice.push_sent(CONN, Direction::AgentToClient, frame);
            bytes.push_str(&line);
            bytes.push('\n');
        }
        let Some(wire) = self.wire.as_mut() else {
            return Err(Stop::Closed("no agent connection".into()));
        };
        match tokio::time::timeout(timeout, wire.write_all(bytes.as_bytes())).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Stop::Closed(format!(
                "the client closed the agent connection: {e}"
            ))),
            Err(_) => Err(Stop::Timeout(
                "the client does not read from its agent".into(),
            )),
        }
    }

    /// Waits for the first unconsumed message that fits `pred`, consuming it; returns its index.
    async fn wait(
        &mut self,
        slice: &mut Slice,
        mail: &mut Mailbox,
        timeout: Duration,
        what: &str,
        mut pred: impl FnMut(&Msg, &Slice) -> bool,
    ) -> Result<usize, Stop> {
        let msg = self
            .wait_keep(slice, mail, timeout, what, &mut pred)
            .await?;
        mail.take(&msg);
        Ok(msg.index())
    }

    /// Like [`Live::wait`], without consuming the message.
    async fn wait_keep(
        &mut self,
        slice: &mut Slice,
        mail: &mut Mailbox,
        timeout: Duration,
        what: &str,
        mut pred: impl FnMut(&Msg, &Slice) -> bool,
    ) -> Result<Msg, Stop> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(m) = mail.unread.iter().find(|m| pred(m, slice)) {
                return Ok(*m);
            }
            let inbound = match tokio::time::timeout_at(deadline, self.inbox.recv()).await {
                Ok(Some(inbound)) => inbound,
                Ok(None) => return Err(Stop::Closed("the client's output ended".into())),
                Err(_) => {
                    slice.note(json!({"type":"step_timeout","waiting_for":what}));
                    return Err(Stop::Timeout(format!(
                        "the client sent no {what} within {} ms",
                        timeout.as_millis()
                    )));
                }
            };
            self.receive(slice, mail, inbound, timeout).await?;
        }
    }

    /// Records what the client wrote. Control events are validated against the control
    /// schema; agent-bound requests the fake agent does not serve are answered -32601.
    async fn receive(
        &mut self,
        slice: &mut Slice,
        mail: &mut Mailbox,
        inbound: Inbound,
        timeout: Duration,
    ) -> Result<(), Stop> {
        match inbound {
            Inbound::Control(bytes) => {
                let i = slice.push_raw(0, Direction::AdapterToHarness, &bytes);
                let valid = match slice.json(i) {
                    Some(event) => validate_control(event),
                    None => Err("not JSON".to_owned()),
                };
                if let Err(e) = valid {
                    return Err(Stop::Protocol(format!(
                        "adapter sent an invalid control message (#{i}): {e}"
                    )));
                }
                mail.unread.push(Msg::Control(i));
            }
            Inbound::Wire(bytes) => {
                let i = slice.push_raw(CONN, Direction::ClientToAgent, &bytes);
                let unserved = slice.json(i).and_then(|j| {
                    let method = j.get("method")?.as_str()?;
                    let id = j.get("id")?;
                    (!matches!(method, "initialize" | "session/new" | "session/prompt"))
                        .then(|| id.clone())
                });
                match unserved {
                    Some(id) => {
                        let error = json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"Method not found"}});
                        self.send(slice, vec![error], timeout).await?;
                    }
                    None => mail.unread.push(Msg::Wire(i)),
                }
            }
            Inbound::TooLong { wire, len } => {
                slice.note(json!({"type":"frame_too_long","bytes":len,"wire":wire}));
            }
            Inbound::Closed { wire } => {
                let plane = if wire {
                    "agent connection"
                } else {
                    "control plane (stdout)"
                };
                return Err(Stop::Closed(format!("the client closed its {plane}")));
            }
        }
        Ok(())
    }

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
            Stop::Protocol(reason) => RunEnd::HarnessError { reason },
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
    async fn shutdown(mut self) {
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
        end: RunEnd::HarnessError { reason },
        stderr_tail: String::new(),
        repro: format!(
            "ACP_HARNESS_CLIENT={} cargo run -p acp-harness -- fuzz-to-scenario <crash artifact>, then acp-harness replay",
            crate::client_spec::shell_quote(&cfg.client.source)
        ),
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":…}` (id `null` if the request had none to echo).
fn reply(id: Option<Value>, result: Value) -> Value {
    json!({"jsonrpc":"2.0","id":id.unwrap_or(Value::Null),"result":result})
}

/// A message waiting to be consumed: its slice index and plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    Control(usize),
    Wire(usize),
}

impl Msg {
    fn index(&self) -> usize {
        match *self {
            Msg::Control(i) | Msg::Wire(i) => i,
        }
    }
}

/// Messages of the client not consumed by a wait yet (a `session/cancel` and an answer may come
/// in either order).
#[derive(Debug, Default)]
struct Mailbox {
    unread: Vec<Msg>,
}

impl Mailbox {
    fn take(&mut self, msg: &Msg) {
        self.unread.retain(|m| m != msg);
    }
}

fn slice_json<'s>(m: &Msg, slice: &'s Slice) -> Option<&'s Value> {
    slice.json(m.index())
}

/// A control event of this `type`.
fn is_event(m: &Msg, slice: &Slice, kind: &str) -> bool {
    matches!(m, Msg::Control(_))
        && slice_json(m, slice)
            .and_then(|j| j.get("type"))
            .and_then(Value::as_str)
            == Some(kind)
}

fn is_request(m: &Msg, slice: &Slice, method: &str) -> bool {
    matches!(m, Msg::Wire(_))
        && slice_json(m, slice).is_some_and(|j| {
            j.get("method").and_then(Value::as_str) == Some(method) && j.get("id").is_some()
        })
}

fn is_response(m: &Msg, slice: &Slice, id: &Value) -> bool {
    matches!(m, Msg::Wire(_))
        && slice_json(m, slice).is_some_and(|j| {
            j.get("method").is_none()
                && j.get("id") == Some(id)
                && (j.get("result").is_some() || j.get("error").is_some())
        })
}

/// Reads one plane's lines into the inbox until EOF.
async fn read_plane(
    reader: impl tokio::io::AsyncRead + Unpin,
    wire: bool,
    inbox: mpsc::UnboundedSender<Inbound>,
) {
    let mut frames = FrameReader::new(reader, MAX_LINE);
    loop {
        let inbound = match frames.next_frame().await {
            Ok(Some(Frame::Line(bytes) | Frame::Unterminated(bytes))) if wire => {
                Inbound::Wire(bytes)
            }
            Ok(Some(Frame::Line(bytes) | Frame::Unterminated(bytes))) => Inbound::Control(bytes),
            Ok(Some(Frame::TooLong { len })) => Inbound::TooLong { wire, len },
            Ok(None) | Err(_) => {
                let _ = inbox.send(Inbound::Closed { wire });
                return;
            }
        };
        if inbox.send(inbound).is_err() {
            return;
        }
    }
}
