//! Running cases: one client launch per case, the scenario engine playing the agent on the
//! relay socket, the control plane playing the user, then the checks over the transcript.
//!
//! Every wait is bounded: per step by the engine, per case by `case_timeout`, and the shutdown
//! by a grace period after which the whole process group is killed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acp_fake_agents::machine_time::{Deadline, Stamp, Waited};
use acp_fake_agents::scenario::{Case, Scenario};
use acp_vocab::note::Note;
use acp_vocab::transcript::Recorder;
use anyhow::{Context, Result};

use crate::client_spec::{ClientSpec, ControlMode};
use acp_judge::checks::{Trial, grade_case};
use acp_judge::record::{CaseMeta, CaseRecord, RunEnd};

mod case_dirs;
mod case_files;
mod client_exit;
pub(crate) mod client_start;
mod play;
mod schedule;
mod teardown;
mod tui_end;

use case_dirs::{CaseDirs, needs_home};
use client_start::ClientStart;
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

/// Plays `case` and records it, in three phases: the client is started ([`client_start`]),
/// the scenario is played ([`play`]), the client is shut down and the record completed
/// ([`teardown`]). When the case holds the only reference to its scenario, the engine takes the
/// steps out of it and frees each once played (`engine::run_freeing_steps`): the scenario has
/// no steps afterwards, and nothing here reads them after the play starts.
async fn run_case_inner(
    case: &mut Case,
    client: &ClientSpec,
    cfg: &RunConfig,
    rec: &Recorder,
    timing: &mut CaseTiming,
    dirs: &mut CaseDirs,
) -> Result<CaseRecord> {
    let listener = dirs.listener();
    let dirs: &CaseDirs = dirs;
    // What the scenario says exists before the client starts ([[setup]]); a bad entry is the
    // scenario's (our) fault, graded as a harness error.
    acp_fake_agents::scenario::setup::create(&case.scenario, &dirs.workspace, &dirs.outside)
        .map_err(anyhow::Error::msg)?;
    let mut connector = listener.context("cannot listen on the relay socket")?;
    let gone = connector.client_gone();
    let start = ClientStart::for_case(case, client, cfg, dirs)?;
    let mut record = client_start::new_record(case, client, cfg, dirs);
    let mut launched = match start.launch(case, client, dirs, rec) {
        Ok(launched) => launched,
        Err(end) => {
            record.end = end;
            record.transcript = rec.snapshot();
            return Ok(record);
        }
    };

    // Counted in machine time, as the steps are: a loaded machine stretches the case, not the
    // client's share of it.
    let deadline = Deadline::after(cfg.case_timeout);
    let stage = play::Stage {
        case,
        client,
        cfg,
        engine: client_start::engine_config(cfg, client, dirs),
        connector: &mut connector,
        launched: &mut launched,
        gone: &gone,
        deadline: &deadline,
        rec,
    };
    let mut played = match client.control {
        ControlMode::Adapter => play::with_adapter(stage).await?,
        ControlMode::None => play::wire_only(stage, &start, dirs).await,
    };
    record.control_supports = std::mem::take(&mut played.control_supports);

    let terminals = teardown::terminals_at_scenario_end(dirs).await;
    let (end, exit_watch) = teardown::end_with_exit(
        std::mem::replace(&mut played.end, RunEnd::Completed),
        &launched,
        cfg,
        &deadline,
        rec,
    )
    .await;
    record.end = end;
    teardown::settle_adapter(&mut played, &record.end, cfg, rec).await;
    let exit = teardown::reap(
        &mut launched,
        client,
        cfg,
        &record.end,
        exit_watch,
        &dirs.workspace,
    )
    .await;
    teardown::kill_left_running(terminals, dirs, rec).await;
    teardown::finish_observer(&mut played, client, &exit, &mut record.end, rec).await;
    rec.note(&Note::ClientExited {
        status: exit.describe(),
        exit_code: exit.code,
    });
    teardown::drain(played).await;
    Ok(teardown::complete_record(
        record, &launched, rec, dirs, timing,
    ))
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
