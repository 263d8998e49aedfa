//! The last phase of a case: how the play's end stands once the client's exit is known, the
//! client shut down and reaped with everything it started, and the record completed.

use std::path::Path;
use std::time::{Duration, Instant};

use acp_fake_agents::machine_time::Deadline;
use acp_judge::record::{CaseRecord, RunEnd};
use acp_vocab::note::Note;
use acp_vocab::transcript::Recorder;

use super::case_dirs::CaseDirs;
use super::case_files::files_after;
use super::client_exit::{exit_verdict, needed_the_client};
use super::play::Played;
use super::{CaseTiming, RunConfig, off_the_runtime, tui_end};
use crate::client_spec::{ClientSpec, ControlMode};
use crate::launch::{ExitInfo, Launched};
use crate::terminal_probe::Probes;

/// Which terminal commands still run now that the agent is done with them. A look that may wait
/// half a second for a dying process, so when the agent started any, it is taken off the
/// runtime's workers and holds up no other case.
pub(super) async fn terminals_at_scenario_end(dirs: &CaseDirs) -> Option<Probes> {
    if !dirs.workspace.join(crate::terminal_probe::DIR).exists() {
        return None;
    }
    let (workspace, root) = (dirs.workspace.clone(), dirs.root.clone());
    Some(off_the_runtime(move || Probes::at_scenario_end(&workspace, &root)).await)
}

/// The run's end once the client's exit is taken into account, and how long the harness
/// watched for that exit. A client that died on its own while the scenario still needed it
/// crashed; one killed by a signal crashed whenever it happened (`exit_verdict`).
pub(super) async fn end_with_exit(
    end: RunEnd,
    launched: &Launched,
    cfg: &RunConfig,
    deadline: &Deadline,
    rec: &Recorder,
) -> (RunEnd, Duration) {
    if matches!(end, RunEnd::Incomplete { .. } | RunEnd::Timeout { .. }) {
        // When the run stopped waiting, and how long a step may wait: `jsonrpc` judges the
        // requests that had waited that long by then as never answered.
        rec.note(&Note::RunStopped {
            step_timeout_ms: cfg.step_timeout.as_millis() as u64,
            stretch: deadline.elapsed().stretch(),
        });
    }
    let watching = Instant::now();
    // Only an end that still needed the client waits for its exit: after any other, an exit
    // status is not a crash, and a signal already received is seen at once.
    let exit = if needed_the_client(&end) {
        launched.exit_within(Duration::from_millis(300)).await
    } else {
        launched.try_exit()
    };
    (exit_verdict(exit, end), watching.elapsed())
}

/// Lets a completed case's client show every turn and session it owes, then tells its adapter
/// to shut down.
pub(super) async fn settle_adapter(
    played: &mut Played,
    end: &RunEnd,
    cfg: &RunConfig,
    rec: &Recorder,
) {
    let Some(plane) = played.control.as_mut() else {
        return;
    };
    let settle = cfg.settle_timeout.unwrap_or(cfg.step_timeout);
    if *end == RunEnd::Completed && !plane.settle(settle).await {
        // `turn-end` cites this: the client did not show every turn ended in time.
        rec.note(&Note::SettleTimeout {
            waited_ms: settle.as_millis() as u64,
        });
    }
    // A session never shown opened is for the checks to judge; nothing to note here.
    if *end == RunEnd::Completed {
        plane.settle_sessions(settle).await;
    }
    plane.shutdown().await;
}

/// How long the client may take to exit before its process group is killed. A client without
/// an adapter ends on its own after its turn (its exit status may be what it shows): it gets a
/// step's time for that, not just the shutdown grace. After a run that did not complete, the
/// client gets one second in all (the exit watch included): it is stuck or dead, and the
/// verdict is waiting.
fn grace(client: &ClientSpec, cfg: &RunConfig, end: &RunEnd, exit_watch: Duration) -> Duration {
    if *end != RunEnd::Completed {
        Duration::from_secs(1).saturating_sub(exit_watch)
    } else if client.control == ControlMode::None {
        cfg.step_timeout.max(Duration::from_secs(2))
    } else {
        Duration::from_secs(2)
    }
}

/// Waits out the client's grace, kills its process group and every descendant that left it,
/// and returns how it exited.
pub(super) async fn reap(
    launched: &mut Launched,
    client: &ClientSpec,
    cfg: &RunConfig,
    end: &RunEnd,
    exit_watch: Duration,
    workspace: &Path,
) -> ExitInfo {
    // Descendants that left the client's process group die with it (sweep.rs), before the wait
    // for the end of its stderr, which they may hold open.
    let marker = crate::sweep::case_marker(workspace);
    let exit = launched
        .finish_with(grace(client, cfg, end, exit_watch), || {
            crate::sweep::kill_marked(&marker);
        })
        .await;
    // Once more now that the client is reaped: on a loaded machine a grandchild in a process
    // group of its own once outlived the case, missed by the first sweep (still being started,
    // or its environment unreadable at that instant); by now it is listed in full.
    crate::sweep::kill_marked(&marker);
    exit
}

/// Terminal commands that outlived the client (in a group and an environment of their own,
/// out of reach of the kills of [`reap`]) are killed; the notes say they were.
pub(super) async fn kill_left_running(at_end: Option<Probes>, dirs: &CaseDirs, rec: &Recorder) {
    if at_end.is_none() && !dirs.workspace.join(crate::terminal_probe::DIR).exists() {
        return;
    }
    let probes = at_end.unwrap_or_default();
    let (workspace, root) = (dirs.workspace.clone(), dirs.root.clone());
    for probe in off_the_runtime(move || probes.after_client_exit(&workspace, &root)).await {
        rec.note(Note::TerminalProbe(probe));
    }
}

/// Ends the observer: a `[tui]` client's last screen is noted (and attached to an unfinished
/// end); an observer that failed makes the end an adapter error.
pub(super) async fn finish_observer(
    played: &mut Played,
    client: &ClientSpec,
    exit: &ExitInfo,
    end: &mut RunEnd,
    rec: &Recorder,
) {
    let Some(obs) = played.observer.take() else {
        return;
    };
    if client.wire.tui.is_some() {
        // What the person saw last, with the verdict when the case did not complete.
        let text = played
            .last_screen
            .take()
            .or_else(|| obs.handle().screen_text())
            .unwrap_or_default();
        tui_end::attach_screen(end, &text);
        rec.note(&Note::Screen { text });
    }
    if let Some(reason) = obs.finish(exit, Duration::from_millis(500)).await {
        *end = RunEnd::AdapterError {
            reason: format!("the profile's observer failed: {reason}"),
        };
    }
}

/// Closes the agent connections and reads what the client and its adapter still had to say.
pub(super) async fn drain(mut played: Played) {
    drop(played.keep_alive);
    if let Some(plane) = played.control.as_mut() {
        plane.drain(Duration::from_millis(500)).await;
    }
    for reader in played.readers {
        let _ = tokio::time::timeout(Duration::from_millis(500), reader).await;
    }
}

/// Moves the transcript and what the case left on disk into the record.
pub(super) fn complete_record(
    mut record: CaseRecord,
    launched: &Launched,
    rec: &Recorder,
    dirs: &CaseDirs,
    timing: &mut CaseTiming,
) -> CaseRecord {
    timing.client_exited = launched.exited().map(|e| e.at);
    record.stderr_tail = launched.stderr_tail();
    // The case is over: move the transcript out rather than copy it (the copy was a third of
    // the peak heap of a 10,000-update case; docs/performance.md).
    record.transcript = rec.take();
    record.files_after = files_after(&record.transcript, &dirs.root);
    record.symlinks = crate::case_symlinks::symlinks_under(&dirs.root);
    record
}
