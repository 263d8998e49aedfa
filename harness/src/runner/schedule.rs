//! Many cases, `cfg.jobs` at a time.

use acp_fake_agents::scenario::Case;

use super::{CaseResult, RunConfig, run_owned_case};
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
/// of any length needs the memory of `cfg.jobs` cases (docs/performance.md, "Number of cases").
pub async fn for_each_case(
    cases: impl IntoIterator<Item = Case>,
    client: &ClientSpec,
    cfg: &RunConfig,
    mut on_done: impl FnMut(usize, CaseResult),
) {
    let jobs = cfg.jobs.max(1);
    let mut running = tokio::task::JoinSet::new();
    let mut cases = cases.into_iter().enumerate();
    loop {
        while running.len() < jobs {
            let Some((index, case)) = cases.next() else {
                break;
            };
            let client = client.clone();
            let cfg = cfg.clone();
            running.spawn(async move { (index, run_owned_case(case, &client, &cfg).await) });
        }
        match running.join_next().await {
            Some(Ok((index, result))) => on_done(index, result),
            Some(Err(e)) => eprintln!("acp-harness: a case task failed: {e}"),
            None => break,
        }
    }
}
