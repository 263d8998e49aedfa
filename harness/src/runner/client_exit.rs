//! A client that exits before its scenario ends: how long what it wrote gets to arrive, how
//! long the scenario may go on without it, and the crash verdict (issue 16: a dead client is
//! judged within 100 ms of its exit).

use std::time::Duration;

use acp_fake_agents::{engine, machine_time};
use acp_judge::record::RunEnd;

use crate::launch::{self, ExitInfo};
use crate::relay_listener::ClientGone;

/// How long what a dead client wrote gets to arrive once the client process has exited: its
/// relay forwards the last frames and then closes the agent connection by itself (its stdin
/// ended), and its adapter's last control lines are already in the pipe. Usually done within a
/// millisecond; this only bounds it when something the client left behind holds a pipe open.
pub(super) const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(20);

/// How long a scenario may go on in all once the client process has exited (the drain
/// included): the agent connections are shut down after the drain, which ends the agent side's
/// waits; this bounds any other (a wire-only client's observer). Half of the 100 ms in which a
/// dead client is to be judged (issue 16): the rest is for the teardown (group kill, sweep, the
/// end of the client's pipes) and the grading. `tests/chaos.rs` asserts the 100 ms for every
/// chaos client that dies.
const AFTER_CLIENT_EXIT: Duration = Duration::from_millis(50);

/// `fut`'s output, unless the client process exits first and `fut` does not end within `drain`
/// of that exit: then the exit.
pub(super) async fn unless_client_exits<T>(
    fut: impl std::future::Future<Output = T>,
    launched: &launch::Launched,
    drain: Duration,
) -> Result<T, launch::Exited> {
    tokio::pin!(fut);
    let exited = tokio::select! {
        out = &mut fut => return Ok(out),
        exited = launched.wait() => exited,
    };
    machine_time::timeout(drain, fut).await.map_err(|_| exited)
}

/// Plays `run` to its end, or until the client process exits: a dead client sends nothing more.
/// Its exit fails a pending agent `accept` at once; the run gets [`DRAIN_AFTER_EXIT`] to read
/// the client's last frames to the end of their connection, then the connections are shut down
/// and the run gets the rest of [`AFTER_CLIENT_EXIT`] to finish with what it has (the caller
/// turns an unfinished run and the exit into the crash verdict).
pub(super) async fn while_client_lives(
    run: impl std::future::Future<Output = engine::Outcome>,
    launched: &launch::Launched,
    gone: &ClientGone,
) -> engine::Outcome {
    tokio::pin!(run);
    let exited = tokio::select! {
        outcome = &mut run => return outcome,
        exited = launched.wait() => exited,
    };
    gone.exited(format!("the client exited ({})", exited.info.describe()));
    // In machine time: on a loaded machine the engine needs longer on the wall clock to play
    // the scenario's rest without the client, and the verdict must not depend on that.
    if let Ok(outcome) = machine_time::timeout(DRAIN_AFTER_EXIT, &mut run).await {
        return outcome;
    }
    gone.shut_down();
    match machine_time::timeout(AFTER_CLIENT_EXIT.saturating_sub(DRAIN_AFTER_EXIT), &mut run).await
    {
        Ok(outcome) => outcome,
        Err(_) => engine::Outcome {
            end: RunEnd::Incomplete {
                step: 0,
                reason: "the scenario could not go on without the client".to_owned(),
            },
            keep_alive: Vec::new(),
            readers: Vec::new(),
        },
    }
}

/// The case's end once the client's exit is known (`exit`: it exited on its own, without being
/// asked to, soon after the run ended). A signal is a crash whatever the run did. An exit status
/// is a crash when the scenario still needed the client: the run stopped waiting for it
/// (`Incomplete`, `Timeout`) or its adapter failed. It is not one after a run that needed nothing
/// more from the client: a run that completed, one whose premise did not hold (`NotApplicable`,
/// e.g. the client answered by itself the request the scenario cancels) and one the harness
/// stopped (`HarnessError`). A client without an adapter ends its turn by exiting (acpx exits 5
/// after a denied request), and whether that exit came within the crash watch was a race.
pub(super) fn exit_verdict(exit: Option<ExitInfo>, end: RunEnd) -> RunEnd {
    match exit {
        Some(exit) if exit.signal.is_some() || needed_the_client(&end) => crash(&exit, &end),
        _ => end,
    }
}

/// Whether the run ended while the scenario still needed the client: then an exit status seen
/// soon after is a crash ([`exit_verdict`]), and it is worth waiting a moment for one.
pub(super) fn needed_the_client(end: &RunEnd) -> bool {
    matches!(
        end,
        RunEnd::Incomplete { .. } | RunEnd::Timeout { .. } | RunEnd::AdapterError { .. }
    )
}

fn crash(exit: &ExitInfo, end: &RunEnd) -> RunEnd {
    let during = match end {
        RunEnd::Incomplete { reason, .. } | RunEnd::Timeout { reason, .. } => {
            format!(" ({reason})")
        }
        _ => String::new(),
    };
    RunEnd::Crash {
        exit_code: exit.code,
        signal: exit.signal.clone(),
        reason: format!(
            "the client exited before the scenario ended: {}{during}",
            exit.describe()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: Option<i32>, signal: Option<&str>) -> Option<ExitInfo> {
        Some(ExitInfo {
            code,
            signal: signal.map(str::to_owned),
        })
    }

    #[test]
    fn an_exit_is_a_crash_only_while_the_scenario_needed_the_client() {
        let incomplete = RunEnd::Incomplete {
            step: 3,
            reason: "client sent no session/cancel within 5000 ms".into(),
        };
        let not_applicable = RunEnd::NotApplicable {
            reason: "acpx answered request 0 by itself".into(),
        };
        let harness = RunEnd::HarnessError {
            reason: "step 4: a bad frame".into(),
        };
        for (end, exit, crashed) in [
            (incomplete.clone(), exited(Some(5), None), true),
            (
                RunEnd::Timeout {
                    after_ms: 30_000,
                    reason: "case timeout".into(),
                },
                exited(Some(1), None),
                true,
            ),
            (
                RunEnd::AdapterError {
                    reason: "bad line".into(),
                },
                exited(Some(1), None),
                true,
            ),
            (not_applicable.clone(), exited(Some(5), None), false),
            (harness.clone(), exited(Some(0), None), false),
            (RunEnd::Completed, exited(Some(5), None), false),
            (RunEnd::Completed, exited(None, Some("SIGSEGV")), true),
            (not_applicable.clone(), exited(None, Some("SIGABRT")), true),
            (incomplete.clone(), None, false),
        ] {
            let verdict = exit_verdict(exit.clone(), end.clone());
            match (&verdict, crashed) {
                (RunEnd::Crash { .. }, true) => {}
                (other, false) => assert_eq!(other, &end, "{exit:?}"),
                (other, true) => panic!("{end:?} and {exit:?}: expected a crash, got {other:?}"),
            }
        }
        // The crash keeps what the run was doing when the client died.
        let RunEnd::Crash { reason, .. } = exit_verdict(exited(Some(5), None), incomplete) else {
            panic!("a crash")
        };
        assert!(
            reason.contains("(client sent no session/cancel"),
            "{reason}"
        );
    }
}
