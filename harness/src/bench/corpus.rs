//! The corpus, timed two ways in alternating rounds: the **baseline** (every case against the
//! echo client, the checks off: spawn, pipes, the scenario engine and the control plane alone)
//! and the **suite** (every case against the client under test, graded, then run.json, the
//! transcripts and the HTML report written, as `acp-harness run` does). Alternating the rounds
//! and comparing them pair by pair keeps the ratio honest on a machine whose speed drifts.

use std::path::Path;
use std::time::Instant;

use acp_fake_agents::scenario::Case;
use anyhow::Result;

use super::measure::{Meter, Sample, ms};
use crate::client_spec::ClientSpec;
use crate::output::progress_line;
use crate::run_json;
use crate::run_writer::{self, RunWriter};
use crate::runner::{CaseResult, RunConfig, for_each_case, run_cases};
use acp_judge::checks::grade_case;
use acp_judge::record::RunEnd;

/// One round over the corpus.
pub struct Round {
    pub sample: Sample,
    /// Cases that did not run to their end (a baseline with some would be too cheap).
    pub incomplete: usize,
    /// Trials that failed (fail, error, timeout or crash).
    pub failing_trials: usize,
    /// Time spent writing run.json, the transcripts and the report (suite rounds only).
    pub outputs_ms: Option<f64>,
    /// The checks alone over the round's records again, one thread, after the timed stretch
    /// (suite rounds only).
    pub checks_ms: Option<f64>,
}

/// Every case against the echo client, not graded.
pub async fn baseline_round(cases: &[Case], echo: &ClientSpec, cfg: &RunConfig) -> Round {
    let cfg = RunConfig {
        grade: false,
        ..cfg.clone()
    };
    let meter = Meter::start();
    let results = run_cases(cases.to_vec(), echo, &cfg, |_| {}).await;
    let sample = meter.stop();
    round(sample, None, &results)
}

/// Every case against `client`, graded, and the outputs written below `out` as
/// `acp-harness run` writes them (`run_writer`).
pub async fn suite_round(
    cases: &[Case],
    client: &ClientSpec,
    cfg: &RunConfig,
    out: &Path,
) -> Result<Round> {
    let mut meter = Meter::start();
    let started_unix_ms = run_json::unix_ms_now();
    let started = Instant::now();
    let scenarios = run_json::ScenarioInfo::of(cases, &cfg.scenarios_dir);
    let mut writer = RunWriter::create(out, &scenarios, None, false)?;
    // Copies of the records, for timing the checks alone after the round: the writer drops
    // each transcript once it is on disk. Copying is left out of the round's figures.
    let mut copies = Vec::new();
    for_each_case(cases.iter().cloned(), client, cfg, |index, r| {
        // Each case's progress line is made as `acp-harness run` makes it, and not printed.
        std::hint::black_box(progress_line(&r.record.meta.case_id, r.duration, &r.trials));
        copies.push(meter.exclude(|| r.clone()));
        writer.add(index, r);
    })
    .await;
    let writing = Instant::now();
    let duration_ms = started.elapsed().as_millis() as u64;
    writer.finish(run_json::RunHeader::plain(
        client,
        cfg,
        started_unix_ms,
        duration_ms,
    ))?;
    run_writer::write_report(out)?;
    let outputs_ms = ms(writing.elapsed());
    let checks_ms = meter.exclude(|| checks_ms(&copies));
    let sample = meter.stop();
    let mut round = round(sample, Some(outputs_ms), &copies);
    round.checks_ms = Some(checks_ms);
    Ok(round)
}

/// The figures of a round; its results are dropped by the caller, so that rounds do not pile
/// up in the memory the next round measures.
fn round(sample: Sample, outputs_ms: Option<f64>, results: &[CaseResult]) -> Round {
    let incomplete = results
        .iter()
        .filter(|r| {
            !matches!(
                r.record.end,
                RunEnd::Completed | RunEnd::NotApplicable { .. }
            )
        })
        .count();
    let failing_trials = results
        .iter()
        .flat_map(|r| &r.trials)
        .filter(|t| t.grade.is_failing(false))
        .count();
    Round {
        sample,
        incomplete,
        failing_trials,
        outputs_ms,
        checks_ms: None,
    }
}

/// The checks alone over finished records, one thread: what grading costs in a suite round.
fn checks_ms(results: &[CaseResult]) -> f64 {
    let started = Instant::now();
    for r in results {
        std::hint::black_box(grade_case(&r.record));
    }
    ms(started.elapsed())
}
