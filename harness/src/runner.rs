//! Running cases: one client launch per case, the scenario engine playing the agent on the
//! relay socket, the control plane playing the user, then the checks over the transcript.
//!
//! Every wait is bounded: per step by the engine, per case by `case_timeout`, and the shutdown
//! by a grace period after which the whole process group is killed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acp_fake_agents::engine::{self, EngineConfig};
use acp_fake_agents::machine_time::{Deadline, Stamp, Waited};
use acp_fake_agents::scenario::{Case, Scenario};
use acp_vocab::note::Note;
use acp_vocab::transcript::Recorder;
use anyhow::{Context, Result};

use crate::client_spec::{ClientSpec, ControlMode, Expansion};
use crate::control::{ControlPlane, HandshakeError};
use crate::launch;
use crate::observe::Observer;
use crate::wire_only::WireOnlyUser;
use acp_judge::checks::{Trial, grade_case};
use acp_judge::record::{CaseMeta, CaseRecord, RunEnd};

mod case_dirs;
mod case_files;
mod client_exit;
mod schedule;
mod tui_end;

use case_dirs::{CaseDirs, needs_home};
use case_files::files_after;
use client_exit::{
    DRAIN_AFTER_EXIT, exit_verdict, needed_the_client, unless_client_exits, while_client_lives,
};
pub use schedule::{for_each_case, run_cases};

/// Knobs of a run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// How long one step may wait for the client.
    pub step_timeout: Duration,
    /// How long a whole case may take.
    pub case_timeout: Duration,
    /// How long a completed case waits for the client to show every turn ended before it is
    /// shut down; `None`: one step timeout. Only the self-test shortens it, for the mutant that
    /// never shows a turn end (each of its cases would otherwise wait a full step timeout).
    pub settle_timeout: Option<Duration>,
    /// Longest frame accepted from the client.
    pub max_frame: usize,
    /// Cases run at once.
    pub jobs: usize,
    /// The scenarios directory (for the repro line).
    pub scenarios_dir: PathBuf,
    /// Path of the fake agent binary the client is told to spawn.
    pub fake_agent: PathBuf,
    /// Run the checks over each record. Off only for the benchmark's baseline
    /// (`acp-harness bench`), which times process spawn and pipes alone: its results carry no
    /// trials.
    pub grade: bool,
}

impl RunConfig {
    pub fn new(scenarios_dir: PathBuf) -> Result<Self> {
        Ok(RunConfig {
            step_timeout: Duration::from_secs(5),
            case_timeout: Duration::from_secs(30),
            settle_timeout: None,
            max_frame: 16 << 20,
            jobs: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(2),
            scenarios_dir,
            fake_agent: crate::locate::locate(crate::locate::FAKE_AGENT)?,
            grade: true,
        })
    }
}

/// A finished case: the record the checks read, the graded trials, and timing.
#[derive(Debug, Clone)]
pub struct CaseResult {
    pub record: CaseRecord,
    pub trials: Vec<Trial>,
    pub duration: Duration,
    /// When things happened, for the promise that a client that dies is judged at once.
    pub timing: CaseTiming,
}

/// Instants of a case (not in run.json: they mean something only inside this process).
#[derive(Debug, Clone, Default)]
pub struct CaseTiming {
    /// When the client process exited, on its own or killed at the end of the case, as the
    /// task that reaps it saw it; `None` if it never started.
    pub client_exited: Option<Stamp>,
    /// When the verdict (the trials) was ready.
    pub graded: Option<Stamp>,
}

/// The one-line command that re-runs just this case.
pub fn repro_command(case_id: &str, client: &ClientSpec, scenarios_dir: &Path) -> String {
    let client_arg = match client.source.as_str() {
        "reference" => String::new(),
        s => format!(" --client {}", crate::client_spec::shell_quote(s)),
    };
    format!(
        "acp-harness replay {}{} --scenarios {}",
        crate::client_spec::shell_quote(case_id),
        client_arg,
        crate::client_spec::shell_quote(&scenarios_dir.to_string_lossy())
    )
}

/// Runs one case against one client and grades it. The caller keeps the case, and with it its
/// scenario's steps, alive while the case is graded: [`run_owned_case`] frees them first.
pub async fn run_case(case: &Case, client: &ClientSpec, cfg: &RunConfig) -> CaseResult {
    run_owned_case(case.clone(), client, cfg).await
}

/// Runs one case against one client and grades it, dropping the case once it is played. Grading
/// reads the record alone (its `CaseMeta` is copied out of the scenario), so when this case holds
/// the only reference to its scenario, the scenario's steps (about 0.45 KB a step of a long
/// turn) are freed one by one as they are played, and the case's peak memory holds neither them
/// beside the finished transcript nor beside the judge's model (docs/performance.md).
pub async fn run_owned_case(case: Case, client: &ClientSpec, cfg: &RunConfig) -> CaseResult {
    let dirs = CaseDirs::create(needs_home(client));
    let (result, dirs) = run_case_in(case, client, cfg, dirs).await;
    // The tree outlives the grading: removing it (tens of ms on a busy machine) is cleanup, not
    // part of the verdict.
    drop(dirs);
    result
}

/// Runs one case in `dirs`, a tree made for it alone (or the error making it, which the case
/// records as the harness's), and hands the tree back with the result, for the caller to remove
/// when it suits it ([`for_each_case`]: off the path of the cases in flight).
async fn run_case_in(
    mut case: Case,
    client: &ClientSpec,
    cfg: &RunConfig,
    dirs: Result<CaseDirs>,
) -> (CaseResult, Option<CaseDirs>) {
    let started = Instant::now();
    let rec = Recorder::new();
    let mut timing = CaseTiming::default();
    let (dirs, outcome) = match dirs {
        Ok(mut dirs) => {
            let outcome =
                run_case_inner(&mut case, client, cfg, &rec, &mut timing, &mut dirs).await;
            (Some(dirs), outcome)
        }
        Err(err) => (None, Err(err)),
    };
    let record = match outcome {
        Ok(record) => record,
        Err(err) => {
            // Environment failures (tempdir, socket) are the harness's, never the client's.
            let meta = case_meta(&case, cfg);
            CaseRecord {
                repro: repro_command(&meta.case_id, client, &cfg.scenarios_dir),
                meta,
                transcript: rec.snapshot(),
                control_plane: false,
                control_supports: Vec::new(),
                workspace: PathBuf::new(),
                outside: PathBuf::new(),
                files_after: BTreeMap::new(),
                symlinks: BTreeMap::new(),
                end: RunEnd::HarnessError {
                    reason: format!("{err:#}"),
                },
                stderr_tail: String::new(),
            }
        }
    };
    // Played: grading reads the record alone.
    drop(case);
    // Grading a big transcript takes a while (100,000 frames: a few hundred ms): off the
    // runtime's workers, so other cases' verdicts do not wait for this one's. A small one is
    // graded in place, sooner than a thread of the blocking pool would start on a busy machine.
    let (record, trials) = if !cfg.grade {
        (record, Vec::new())
    } else if record.transcript.len() > GRADE_IN_PLACE {
        release_freed_memory();
        off_the_runtime(move || {
            let trials = grade_case(&record);
            (record, trials)
        })
        .await
    } else {
        let trials = grade_case(&record);
        (record, trials)
    };
    timing.graded = Some(Stamp::now());
    let result = CaseResult {
        record,
        trials,
        duration: started.elapsed(),
        timing,
    };
    (result, dirs)
}

/// Transcripts up to this many entries are graded on the runtime's worker (a millisecond or so).
const GRADE_IN_PLACE: usize = 2_000;

/// Hands the heap pages nothing uses any more back to the system (glibc's `malloc_trim`; a no-op
/// elsewhere). Called before a long transcript is graded: the play of a long scenario frees its
/// steps, and the scenario's parse left its own garbage, in the arenas of the threads that
/// allocated them; the grading thread allocates the judge's model (about 0.25 KB a frame) from
/// its own arena, which does not reuse those pages, so without this the model's memory is added
/// on top of everything the play ever touched (docs/performance.md, "Frames per scenario"). A
/// few milliseconds for a 10⁵-frame case; never done for a short one. The bench calls it too,
/// before it resets the peak it measures.
pub(crate) fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Runs blocking or long CPU-bound work on tokio's blocking pool, so that it stalls no runtime
/// worker (and with it the tasks queued there: other cases, their timers and waits).
async fn off_the_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    match tokio::task::spawn_blocking(work).await {
        Ok(out) => out,
        Err(err) => match err.try_into_panic() {
            // The work panicked: the same panic as if it had run here.
            Ok(panic) => std::panic::resume_unwind(panic),
            // Only a runtime shutting down cancels blocking work.
            Err(err) => panic!("blocking work of the case was cancelled: {err}"),
        },
    }
}

/// The scenario's file as a case record names it: relative to the scenarios directory.
pub fn scenario_file(scenario: &Scenario, scenarios_dir: &Path) -> String {
    scenario
        .path
        .strip_prefix(scenarios_dir)
        .unwrap_or(&scenario.path)
        .to_string_lossy()
        .into_owned()
}

fn case_meta(case: &Case, cfg: &RunConfig) -> CaseMeta {
    let scenario = &case.scenario;
    let file = scenario_file(scenario, &cfg.scenarios_dir);
    CaseMeta {
        case_id: case.id.clone(),
        title: scenario.meta.title.clone(),
        agent: scenario.meta.agent.clone(),
        version: scenario.meta.version.clone(),
        provenance: scenario.meta.provenance.clone(),
        file,
    }
}

/// Plays `case` and records it. When the case holds the only reference to its scenario, the
/// engine takes the steps out of it and frees each once played (`engine::run_freeing_steps`): the
/// scenario has no steps afterwards, and nothing here reads them after the play starts.
async fn run_case_inner(
    case: &mut Case,
    client: &ClientSpec,
    cfg: &RunConfig,
    rec: &Recorder,
    timing: &mut CaseTiming,
    dirs: &mut CaseDirs,
) -> Result<CaseRecord> {
    let listener = dirs.listener();
    let CaseDirs {
        root,
        workspace,
        outside,
        // An empty home for the client (profiles set e.g. `HOME = "{home}"`).
        home,
        // The client starts in a directory of its own, neither the workspace nor the harness's
        // cwd: a client that sends its process cwd as the session cwd (instead of the directory
        // the user opened) then fails `session-cwd` instead of passing by luck.
        client: client_dir,
        ..
    } = &*dirs;
    // What the scenario says exists before the client starts ([[setup]]); a bad entry is the
    // scenario's (our) fault, graded as a harness error.
    acp_fake_agents::scenario::setup::create(&case.scenario, workspace, outside)
        .map_err(anyhow::Error::msg)?;
    let socket = dirs.socket();
    let mut connector = listener.context("cannot listen on the relay socket")?;
    let gone = connector.client_gone();

    let agent_argv = vec![
        cfg.fake_agent.to_string_lossy().into_owned(),
        "--connect".to_string(),
        socket.to_string_lossy().into_owned(),
    ];
    let prompt = match case.scenario.first_prompt() {
        Some(text) => case
            .scenario
            .fill_text(&text, workspace, outside)
            .map_err(anyhow::Error::msg)?,
        None => String::new(),
    };
    let expansion = Expansion {
        agent_argv: &agent_argv,
        prompt: &prompt,
        cwd: workspace,
        home,
    };
    let argv = client.expand_argv(&expansion);
    let mut env = client.expand_env(&expansion);
    env.push((
        "ACP_HARNESS_AGENT".into(),
        serde_json::to_string(&agent_argv)?,
    ));
    env.push((
        "ACP_HARNESS_CWD".into(),
        workspace.to_string_lossy().into_owned(),
    ));

    let meta = case_meta(case, cfg);
    let repro = repro_command(&meta.case_id, client, &cfg.scenarios_dir);
    let mut record = CaseRecord {
        meta,
        transcript: Vec::new(),
        control_plane: client.control == ControlMode::Adapter,
        control_supports: Vec::new(),
        workspace: workspace.clone(),
        outside: outside.clone(),
        files_after: BTreeMap::new(),
        symlinks: BTreeMap::new(),
        end: RunEnd::Completed,
        stderr_tail: String::new(),
        repro,
    };

    let engine_cfg = EngineConfig {
        cwd: workspace.clone(),
        outside: outside.clone(),
        step_timeout: cfg.step_timeout,
        max_frame: cfg.max_frame,
        standalone: false,
        startup: Duration::from_millis(client.wire.startup_ms),
    };

    if client.control == ControlMode::None {
        if let Err(reason) = crate::wire_only::playable(case, client) {
            record.end = RunEnd::NotApplicable { reason };
            record.transcript = rec.snapshot();
            return Ok(record);
        }
    }
    if let Err(reason) = crate::client_spec::write_files(&client.wire.files, &expansion) {
        record.end = RunEnd::HarnessError { reason };
        record.transcript = rec.snapshot();
        return Ok(record);
    }
    let workdir = client.expand_workdir(&expansion);
    if let Some(dir) = &workdir {
        if let Err(e) = std::fs::create_dir_all(dir) {
            record.end = RunEnd::HarnessError {
                reason: format!(
                    "could not create the profile's workdir {}: {e}",
                    dir.display()
                ),
            };
            record.transcript = rec.snapshot();
            return Ok(record);
        }
    }
    let launch_dir = workdir.as_deref().unwrap_or(client_dir);
    let screen = client.wire.tui.as_ref().map(|t| (t.rows, t.cols));
    let mut launched = match launch::launch_with(&argv, &env, launch_dir, client.wire.tty, screen) {
        Ok(l) => l,
        Err(err) => {
            record.end = RunEnd::Crash {
                exit_code: None,
                signal: None,
                reason: format!("{err:#}"),
            };
            record.transcript = rec.snapshot();
            return Ok(record);
        }
    };
    rec.note(&Note::ClientStarted {
        argv: argv.clone(),
        pid: launched.pgid,
    });
    if let Some(note) = client.declared_policy_note() {
        // The transcript says what the client promised, so it can be judged on its own.
        rec.note(&note);
    }

    // Counted in machine time, as the steps are: a loaded machine stretches the case, not the
    // client's share of it.
    let deadline = Deadline::after(cfg.case_timeout);
    let mut control = None;
    let mut observer: Option<Observer> = None;
    let mut keep_alive = Vec::new();
    let mut readers = Vec::new();
    // A `[tui]` client's screen before it was told to quit.
    let mut last_screen: Option<String> = None;
    let end = match client.control {
        ControlMode::Adapter => {
            drop(launched.stderr.take()); // an adapter's stderr is only kept in the tail
            let (Some(stdin), Some(stdout)) = (launched.stdin.take(), launched.stdout.take())
            else {
                anyhow::bail!("client stdio was not captured");
            };
            let mut plane = ControlPlane::new(stdin, stdout, rec.clone());
            // A client that dies before its hello is judged at its exit, not after a step
            // timeout (its stdout may be held open by a process it left behind).
            let handshake = match unless_client_exits(
                plane.handshake(cfg.step_timeout),
                &launched,
                DRAIN_AFTER_EXIT,
            )
            .await
            {
                Ok(handshake) => handshake,
                Err(exited) => Err(HandshakeError::NoHello(format!(
                    "the client exited ({}) before it said hello",
                    exited.info.describe()
                ))),
            };
            let end = match handshake {
                Err(HandshakeError::Unsupported(reason)) => RunEnd::AdapterError { reason },
                Err(HandshakeError::NoHello(reason)) => RunEnd::Incomplete { step: 0, reason },
                Ok(supports) => {
                    record.control_supports = supports;
                    // An adapter that cannot do a user step of the scenario (reopen, list or
                    // close a session, switch a mode …) cannot play it; nothing of it is judged.
                    let missing = unsupported_commands(case, &record.control_supports);
                    let run = engine::run_freeing_steps(
                        case,
                        &engine_cfg,
                        &mut connector,
                        &mut plane,
                        rec,
                    );
                    match missing {
                        Some(reason) => {
                            rec.note(&Note::NotApplicable {
                                reason: reason.clone(),
                            });
                            RunEnd::NotApplicable { reason }
                        }
                        None => match deadline
                            .run(while_client_lives(run, &launched, &gone))
                            .await
                        {
                            Ok(outcome) => {
                                keep_alive = outcome.keep_alive;
                                readers = outcome.readers;
                                match (plane.protocol_error(), outcome.end) {
                                    (Some(reason), _) => RunEnd::AdapterError { reason },
                                    // Say why nothing more could happen.
                                    (None, RunEnd::Incomplete { step, reason })
                                        if plane.stdout_closed()
                                            && !reason.contains("closed its stdout") =>
                                    {
                                        RunEnd::Incomplete {
                                            step,
                                            reason: format!(
                                                "{reason} (the adapter had closed its stdout)"
                                            ),
                                        }
                                    }
                                    (None, end) => end,
                                }
                            }
                            Err(waited) => case_timeout(cfg, waited),
                        },
                    }
                }
            };
            control = Some(plane);
            end
        }
        ControlMode::None => {
            let stdout = launched
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>);
            let terminal = launched.terminal.take();
            let (master, output) = match terminal {
                Some(t) => (Some(t.master), Some(t.output)),
                None => (None, None),
            };
            let streams = crate::observe::Streams {
                stdout,
                stderr: launched.stderr.take(),
                terminal: output,
            };
            let obs = Observer::start(client, streams, rec.clone(), root);
            let mut user = WireOnlyUser {
                pid: launched.pgid,
                rec: rec.clone(),
                session_ids: case.scenario.session_ids(),
                spec: client.clone(),
                stdin: launched.stdin.take(),
                terminal: master,
                observer: obs.handle(),
                env: env.clone(),
                cwd: workspace.clone(),
                cancel_argv: match &client.wire.cancel {
                    crate::client_spec::Cancel::Command(argv) => {
                        client.expand_template(argv, &expansion)
                    }
                    _ => Vec::new(),
                },
            };
            observer = Some(obs);
            let quit_on = user.terminal.clone();
            let run = engine::run_freeing_steps(case, &engine_cfg, &mut connector, &mut user, rec);
            let end = match deadline
                .run(while_client_lives(run, &launched, &gone))
                .await
            {
                Ok(outcome) => {
                    keep_alive = outcome.keep_alive;
                    readers = outcome.readers;
                    outcome.end
                }
                Err(waited) => case_timeout(cfg, waited),
            };
            if let (Some(tui), Some(terminal)) = (&client.wire.tui, &quit_on) {
                last_screen = tui_end::last_screen_then_quit(tui, terminal, &user.observer).await;
            }
            end
        }
    };

    // Which terminal commands still run now that the agent is done with them. A look that may
    // wait half a second for a dying process, so when the agent started any, it is taken off
    // the runtime's workers and holds up no other case.
    let terminals = workspace.join(crate::terminal_probe::DIR).exists();
    let probes = if terminals {
        let (workspace, root) = (workspace.clone(), root.clone());
        off_the_runtime(move || crate::terminal_probe::Probes::at_scenario_end(&workspace, &root))
            .await
    } else {
        crate::terminal_probe::Probes::default()
    };
    if matches!(end, RunEnd::Incomplete { .. } | RunEnd::Timeout { .. }) {
        // When the run stopped waiting, and how long a step may wait: `jsonrpc` judges the
        // requests that had waited that long by then as never answered.
        rec.note(&Note::RunStopped {
            step_timeout_ms: cfg.step_timeout.as_millis() as u64,
            stretch: deadline.elapsed().stretch(),
        });
    }
    // A client that died on its own while the scenario still needed it crashed; one killed by a
    // signal crashed whenever it happened (`exit_verdict`).
    let ended = Instant::now();
    // Only an end that still needed the client waits for its exit: after any other, an exit
    // status is not a crash, and a signal already received is seen at once.
    let early_exit = if needed_the_client(&end) {
        launched.exit_within(Duration::from_millis(300)).await
    } else {
        launched.try_exit()
    };
    // The time spent watching for a crash counts against the shutdown grace (below).
    let exit_watch = ended.elapsed();
    record.end = exit_verdict(early_exit, end);

    if let Some(plane) = control.as_mut() {
        let settle = cfg.settle_timeout.unwrap_or(cfg.step_timeout);
        if record.end == RunEnd::Completed && !plane.settle(settle).await {
            // `turn-end` cites this: the client did not show every turn ended in time.
            rec.note(&Note::SettleTimeout {
                waited_ms: settle.as_millis() as u64,
            });
        }
        // A session never shown opened is for the checks to judge; nothing to note here.
        if record.end == RunEnd::Completed {
            plane.settle_sessions(settle).await;
        }
        plane.shutdown().await;
    }
    // A client without an adapter ends on its own after its turn (its exit status may be what
    // it shows): give it a step's time for that, not just the shutdown grace.
    // After a run that did not complete, the client gets one second in all (crash watch
    // included) before the group is killed: it is stuck or dead, and the verdict is waiting.
    let grace = if client.control == ControlMode::None && record.end == RunEnd::Completed {
        cfg.step_timeout.max(Duration::from_secs(2))
    } else if record.end == RunEnd::Completed {
        Duration::from_secs(2)
    } else {
        Duration::from_secs(1).saturating_sub(exit_watch)
    };
    // Descendants that left the client's process group die with it (sweep.rs), before the wait
    // for the end of its stderr, which they may hold open.
    let marker = crate::sweep::case_marker(workspace);
    let exit = launched
        .finish_with(grace, || {
            crate::sweep::kill_marked(&marker);
        })
        .await;
    // Once more now that the client is reaped: on a loaded machine a grandchild in a process
    // group of its own once outlived the case, missed by the first sweep (still being started,
    // or its environment unreadable at that instant); by now it is listed in full.
    crate::sweep::kill_marked(&marker);
    timing.client_exited = launched.exited().map(|e| e.at);
    // Terminal commands that outlived the client (in a group and an environment of their own,
    // out of reach of both kills above) are killed here; the note says they were.
    let left_running = if terminals || workspace.join(crate::terminal_probe::DIR).exists() {
        let (workspace, root) = (workspace.clone(), root.clone());
        off_the_runtime(move || probes.after_client_exit(&workspace, &root)).await
    } else {
        Vec::new()
    };
    for probe in left_running {
        rec.note(Note::TerminalProbe(probe));
    }
    if let Some(obs) = observer.take() {
        if client.wire.tui.is_some() {
            // What the person saw last, with the verdict when the case did not complete.
            let text = last_screen
                .take()
                .or_else(|| obs.handle().screen_text())
                .unwrap_or_default();
            tui_end::attach_screen(&mut record.end, &text);
            rec.note(&Note::Screen { text });
        }
        if let Some(reason) = obs.finish(&exit, Duration::from_millis(500)).await {
            record.end = RunEnd::AdapterError {
                reason: format!("the profile's observer failed: {reason}"),
            };
        }
    }
    rec.note(&Note::ClientExited {
        status: exit.describe(),
        exit_code: exit.code,
    });
    drop(keep_alive);
    if let Some(plane) = control.as_mut() {
        plane.drain(Duration::from_millis(500)).await;
    }
    for reader in readers {
        let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
    }
    record.stderr_tail = launched.stderr_tail();
    // The case is over: move the transcript out rather than copy it (the copy was a third of
    // the peak heap of a 10,000-update case; docs/performance.md).
    record.transcript = rec.take();
    record.files_after = files_after(&record.transcript, root);
    record.symlinks = crate::case_symlinks::symlinks_under(root);
    Ok(record)
}

fn case_timeout(cfg: &RunConfig, waited: Waited) -> RunEnd {
    RunEnd::Timeout {
        after_ms: cfg.case_timeout.as_millis() as u64,
        reason: format!(
            "the case did not finish within {}",
            waited.describe(cfg.case_timeout)
        ),
    }
}

/// Why the client's adapter cannot play `case`: the first user step whose command its `hello`
/// does not list in `supports`.
fn unsupported_commands(case: &Case, supports: &[String]) -> Option<String> {
    let missing = case
        .scenario
        .commands_beyond_basic()
        .into_iter()
        .find(|c| !supports.iter().any(|s| s == c.as_str()))?;
    Some(format!(
        "the client's adapter does not support `{}` (hello.supports: {}), so the user cannot ask it to {}",
        missing.as_str(),
        if supports.is_empty() {
            "none".to_owned()
        } else {
            supports.join(", ")
        },
        missing.user_words()
    ))
}
