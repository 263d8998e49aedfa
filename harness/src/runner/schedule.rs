//! Many cases, `cfg.jobs` at a time.

use acp_fake_agents::scenario::Case;
use anyhow::Result;
use tokio::task::JoinSet;

use super::case_dirs::{CaseDirs, needs_home};
use super::{CaseResult, RunConfig, run_case_in};
use crate::client_spec::ClientSpec;

/// Runs `cases`, `cfg.jobs` at a time, and returns their results in the order given; `on_done`
/// sees each result as its case finishes.
pub async fn run_cases(
    cases: Vec<Case>,
    client: &ClientSpec,
    cfg: &RunConfig,
    mut on_done: impl FnMut(&CaseResult),
) -> Vec<CaseResult> {
    let mut results: Vec<Option<CaseResult>> = Vec::new();
    for_each_case(cases, client, cfg, |index, result| {
        on_done(&result);
        if results.len() <= index {
            results.resize_with(index + 1, || None);
        }
        results[index] = Some(result);
    })
    .await;
    results.into_iter().flatten().collect()
}

/// Runs `cases`, `cfg.jobs` at a time, and hands each result to `on_done` with the case's
/// position in `cases` as soon as it finishes (in the order they finish). Only the cases in
/// flight are held: the cases are taken from the iterator as slots free up, each is dropped
/// once played (before it is graded), and a result is the caller's once handed over, so a run
/// of any length needs the memory of `cfg.jobs` cases in flight and of the one result being
/// handed over (docs/performance.md, "Number of cases").
///
/// A finished case's slot is given to the next case first; only then is its result handed over
/// (`on_done` writes its outputs), its directories handed to a thread that removes them
/// ([`Remover`]), and the tree of the case after that made (its relay socket bound), here,
/// while the cases in flight run: the file system's work per case is on no case's path
/// (docs/performance.md). Every tree is removed before this returns; each case's tree is fresh
/// and its own, made for no other case.
pub async fn for_each_case(
    cases: impl IntoIterator<Item = Case>,
    client: &ClientSpec,
    cfg: &RunConfig,
    mut on_done: impl FnMut(usize, CaseResult),
) {
    let jobs = cfg.jobs.max(1);
    let with_home = needs_home(client);
    let mut running = JoinSet::new();
    let remover = Remover::start();
    let mut cases = cases.into_iter().enumerate().peekable();
    // The tree the next case will run in, made ahead.
    let mut ready: Option<Result<CaseDirs>> = None;
    let mut start_cases = |running: &mut JoinSet<_>, ready: &mut Option<Result<CaseDirs>>| {
        while running.len() < jobs {
            let Some((index, case)) = cases.next() else {
                break;
            };
            let dirs = ready
                .take()
                .unwrap_or_else(|| CaseDirs::create(with_home).map(CaseDirs::listen));
            let client = client.clone();
            let cfg = cfg.clone();
            running.spawn(async move {
                let (result, dirs) = run_case_in(case, &client, &cfg, dirs).await;
                (index, result, dirs)
            });
        }
        cases.peek().is_some()
    };
    start_cases(&mut running, &mut ready);
    while let Some(joined) = running.join_next().await {
        let more = start_cases(&mut running, &mut ready);
        match joined {
            Ok((index, result, dirs)) => {
                on_done(index, result);
                remover.remove(dirs);
            }
            Err(e) => eprintln!("acp-harness: a case task failed: {e}"),
        }
        if more && ready.is_none() {
            ready = Some(CaseDirs::create(with_home).map(CaseDirs::listen));
        }
    }
    remover.finish().await;
}

/// Removes finished cases' trees on a blocking thread of its own, in the order they finished.
/// Removing a directory can wait on the disk (ext4 mounted with `discard` trims each freed
/// block synchronously), and the loop must be back at `join_next` to give the next free slot a
/// case; done there, the wait left slots idle (docs/performance.md, "Number of cases").
struct Remover {
    trees: std::sync::mpsc::Sender<CaseDirs>,
    thread: tokio::task::JoinHandle<()>,
}

impl Remover {
    fn start() -> Remover {
        let (trees, finished) = std::sync::mpsc::channel::<CaseDirs>();
        let thread = tokio::task::spawn_blocking(move || finished.into_iter().for_each(drop));
        Remover { trees, thread }
    }

    /// Hands a finished case's tree over (a case whose tree could not be made has none).
    fn remove(&self, dirs: Option<CaseDirs>) {
        // Only if the thread is gone (it panicked) does the send fail: removed here then.
        if let Some(dirs) = dirs
            && let Err(unsent) = self.trees.send(dirs)
        {
            drop(unsent.0);
        }
    }

    /// Waits until every tree handed over is removed.
    async fn finish(self) {
        drop(self.trees);
        if let Err(e) = self.thread.await {
            eprintln!("acp-harness: removing the cases' directories failed: {e}");
        }
    }
}
