//! How the cost grows: one generated scenario of growing size (frames per scenario), and the
//! corpus repeated to a growing number of cases. Each point is the median of `--rounds` runs of
//! its size in a row; the slope of the series, not any single point, is what the table states.
//! The large case is one such scenario, run once a round.

use std::path::Path;
use std::time::Instant;

use acp_fake_agents::scenario::Case;
use acp_vocab::transcript::Direction;
use anyhow::{Result, bail};
use serde::Serialize;

use super::generate;
use super::measure::{Meter, Sample, exponent, median, median_sample, ms, slope};
use super::progress;
use super::report::Large;
use crate::client_spec::ClientSpec;
use crate::run_json::{RunHeader, ScenarioInfo, unix_ms_now};
use crate::run_writer::{self, RunWriter};
use crate::runner::{RunConfig, for_each_case, run_owned_case};
use acp_judge::checks::grade_case;
use acp_judge::record::RunEnd;

/// One point of the frames series.
#[derive(Debug, Clone, Serialize)]
pub struct FramesPoint {
    /// tool_call_updates in the generated scenario.
    pub updates: usize,
    /// ACP frames in the recorded transcript, both directions.
    pub frames: usize,
    /// Every transcript entry: frames, control-plane messages and notes.
    pub transcript_entries: usize,
    /// Parsing the generated file (not part of the run); in the frames series, the median of
    /// the point's rounds.
    pub parse_ms: f64,
    /// The case: launch, play, record, shut down, grade (`run_case`); in the frames series, the
    /// round with the median wall time, with the least peak RSS of the rounds
    /// ([`median_frames_point`]).
    pub sample: Sample,
    /// The checks alone over the finished record, again, one thread; in the frames series, the
    /// median of the point's rounds.
    pub checks_ms: f64,
    /// The case completed and no trial failed (in every round).
    pub passed: bool,
    /// The case's wall time in each round, in the order run (the frames series; empty for the
    /// large case, whose rounds `Large` keeps).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds_wall_ms: Vec<f64>,
    /// The parse in each round, in the order run (as `rounds_wall_ms`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds_parse_ms: Vec<f64>,
    /// The harness's peak RSS in each round, in the order run (as `rounds_wall_ms`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rounds_peak_rss_kib: Vec<u64>,
}

/// One point of the cases series: what `acp-harness run` does with that many cases.
#[derive(Debug, Clone, Serialize)]
pub struct CasesPoint {
    pub cases: usize,
    /// Running the cases, each written to disk as it ends (transcript, run.json entry), then
    /// run.json written from there (`run_writer`).
    pub sample: Sample,
    pub cases_per_s: f64,
    /// Then the report, made from run.json and the transcripts on disk; timed on its own.
    pub report: Sample,
    /// The run's wall time in each round, in the order run (`sample` is the median one).
    pub rounds_wall_ms: Vec<f64>,
}

/// How a series grows: fitted exponents of time (`t ∝ xᵏ`), over every point and over the last
/// decade (the asymptote: 1 is linear, 2 quadratic), and memory per unit (least squares).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Growth {
    pub time_exponent: Option<f64>,
    pub time_exponent_last: Option<f64>,
    pub rss_kib_per_unit: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FramesSeries {
    pub points: Vec<FramesPoint>,
    pub growth: Growth,
}

#[derive(Debug, Clone, Serialize)]
pub struct CasesSeries {
    pub points: Vec<CasesPoint>,
    /// Of the run (the cases and run.json).
    pub growth: Growth,
    /// Of the report alone.
    pub report_growth: Growth,
}

/// Generates, parses and runs one scenario of `updates` tool_call_updates.
async fn frames_point(
    dir: &Path,
    updates: usize,
    client: &ClientSpec,
    cfg: &RunConfig,
) -> Result<FramesPoint> {
    let path = generate::write_updates(dir, updates)?;
    let parsing = Instant::now();
    let cases = generate::load(&path)?;
    let parse_ms = ms(parsing.elapsed());
    let case = match <[Case; 1]>::try_from(cases) {
        Ok([case]) => case,
        Err(cases) => bail!("{} holds {} cases, not one", path.display(), cases.len()),
    };
    let meter = Meter::start();
    // The case is given away: its steps are freed before it is graded, as in `acp-harness run`.
    let result = run_owned_case(case, client, cfg).await;
    let sample = meter.stop();
    let checks = Instant::now();
    let trials = grade_case(&result.record);
    let checks_ms = ms(checks.elapsed());
    let transcript = &result.record.transcript;
    let frames = transcript
        .iter()
        .filter(|e| {
            matches!(
                e.direction,
                Direction::AgentToClient | Direction::ClientToAgent
            )
        })
        .count();
    let passed =
        result.record.end == RunEnd::Completed && !trials.iter().any(|t| t.grade.is_failing(false));
    Ok(FramesPoint {
        updates,
        frames,
        transcript_entries: transcript.len(),
        parse_ms,
        sample,
        checks_ms,
        passed,
        rounds_wall_ms: Vec::new(),
        rounds_parse_ms: Vec::new(),
        rounds_peak_rss_kib: Vec::new(),
    })
}

/// Cases in the unit the cases series repeats.
const UNIT_CASES: usize = 10;

/// The unit the cases series repeats: `UNIT_CASES` cases taken at even strides across the corpus
/// (all of it if it is smaller). Every point of the series runs the same mix of cases — the first
/// 10 cases of the corpus are not the same work as the first 1,000, whose scenarios wait on other
/// timers and reach code (schemas, observer rules) the first 10 never load — so what changes
/// from point to point is the number of cases alone.
fn unit(corpus: &[Case]) -> Vec<Case> {
    if corpus.len() <= UNIT_CASES {
        return corpus.to_vec();
    }
    (0..UNIT_CASES)
        .map(|i| corpus[i * corpus.len() / UNIT_CASES].clone())
        .collect()
}

/// One run of the cases series: how many cases ran, the run, then the report.
struct CasesRun {
    cases: usize,
    sample: Sample,
    report: Sample,
}

/// The unit repeated (cycled) to `n` cases, graded and written to `out` as `acp-harness run`
/// writes them; the repeats get ids of their own (`…~2`), so that every case has its own
/// transcript and page.
async fn cases_point(
    unit: &[Case],
    n: usize,
    client: &ClientSpec,
    cfg: &RunConfig,
    out: &Path,
) -> Result<CasesRun> {
    let scenarios = ScenarioInfo::of(unit, &cfg.scenarios_dir);
    let cases = unit.iter().cycle().take(n).enumerate().map(|(i, case)| {
        let repeat = i / unit.len();
        let mut case = case.clone();
        if repeat > 0 {
            case.id = format!("{}~{}", case.id, repeat + 1);
        }
        case
    });
    let meter = Meter::start();
    let started_unix_ms = unix_ms_now();
    let mut writer = RunWriter::create(out, &scenarios, None, false)?;
    let mut count = 0;
    for_each_case(cases, client, cfg, |index, result| {
        count += 1;
        writer.add(index, result);
    })
    .await;
    writer.finish(RunHeader::plain(client, cfg, started_unix_ms, 0))?;
    let sample = meter.stop();
    let meter = Meter::start();
    run_writer::write_report(out)?;
    let report = meter.stop();
    Ok(CasesRun {
        cases: count,
        sample,
        report,
    })
}

pub fn per_second(count: usize, wall_ms: f64) -> f64 {
    if wall_ms > 0.0 {
        count as f64 * 1000.0 / wall_ms
    } else {
        0.0
    }
}

/// Growth of a series of `(x, sample)`.
fn growth(points: &[(f64, Sample)]) -> Growth {
    let time: Vec<(f64, f64)> = points.iter().map(|(x, s)| (*x, s.wall_ms)).collect();
    let rss: Vec<(f64, f64)> = points
        .iter()
        .map(|(x, s)| (*x, s.harness_peak_rss_kib as f64))
        .collect();
    Growth {
        time_exponent: exponent(&time),
        time_exponent_last: time.len().checked_sub(2).and_then(|i| exponent(&time[i..])),
        rss_kib_per_unit: slope(&rss),
    }
}

/// The large case, once a round.
pub async fn large(
    dir: &Path,
    updates: usize,
    rounds: usize,
    client: &ClientSpec,
    cfg: &RunConfig,
) -> Result<Large> {
    let mut points = Vec::new();
    for round in 1..=rounds {
        let p = frames_point(dir, updates, client, cfg).await?;
        progress(&format!(
            "large round {round}/{rounds}: {updates} updates in {:.2} s",
            p.sample.wall_ms / 1000.0
        ));
        points.push(p);
    }
    let samples: Vec<_> = points.iter().map(|p| p.sample).collect();
    Ok(Large {
        updates,
        frames: points.first().map_or(0, |p| p.frames),
        parse_ms: median(points.iter().map(|p| p.parse_ms)),
        runs_ms: samples.iter().map(|s| s.wall_ms).collect(),
        median_ms: median(samples.iter().map(|s| s.wall_ms)),
        checks_ms: median(points.iter().map(|p| p.checks_ms)),
        harness_peak_rss_kib: samples
            .iter()
            .map(|s| s.harness_peak_rss_kib)
            .max()
            .unwrap_or(0),
        passed: points.iter().all(|p| p.passed),
    })
}

/// The corpus's unit (see [`unit`]) repeated to each of `counts` cases, each count `rounds`
/// times in a row, each run's outputs in a directory of its own below `dir` (kept until the
/// benchmark ends: see `corpus_sections`). Each point is the round with the median wall time: a
/// fit over one decade from single runs moved by ±0.1 from one run of the same build to the next
/// (docs/performance.md, "Number of cases"). A count's rounds run back to back so that each runs
/// after runs of its own size: on a file system that charges the inodes freed in the last minutes
/// to the next ones made, a count run right after the largest would be slowed by it, and the fit
/// would flatter the harness. The unit is run once first, untimed, so that what a process loads
/// once (schemas, rules, the allocator's first pages) is not counted to the first point.
pub async fn cases_series(
    dir: &Path,
    corpus: &[Case],
    counts: &[usize],
    rounds: usize,
    client: &ClientSpec,
    cfg: &RunConfig,
) -> Result<CasesSeries> {
    let unit = unit(corpus);
    cases_point(&unit, unit.len(), client, cfg, &dir.join("warm-up")).await?;
    let mut runs: Vec<Vec<CasesRun>> = Vec::new();
    for &n in counts {
        let mut count_runs = Vec::new();
        for round in 1..=rounds {
            let out = dir.join(format!("{n}-round-{round}"));
            let p = cases_point(&unit, n, client, cfg, &out).await?;
            progress(&format!(
                "scale-cases: {n} cases, round {round}/{rounds}, in {:.2} s, report {:.2} s",
                p.sample.wall_ms / 1000.0,
                p.report.wall_ms / 1000.0
            ));
            count_runs.push(p);
        }
        runs.push(count_runs);
    }
    let points: Vec<CasesPoint> = runs.into_iter().filter_map(median_point).collect();
    let xs: Vec<_> = points.iter().map(|p| (p.cases as f64, p.sample)).collect();
    let report: Vec<_> = points.iter().map(|p| (p.cases as f64, p.report)).collect();
    Ok(CasesSeries {
        growth: growth(&xs),
        report_growth: growth(&report),
        points,
    })
}

/// One count's runs as one point: the run's and the report's median rounds (each by its own
/// wall time), with every round's wall time kept.
fn median_point(runs: Vec<CasesRun>) -> Option<CasesPoint> {
    let cases = runs.first()?.cases;
    let samples: Vec<Sample> = runs.iter().map(|p| p.sample).collect();
    let reports: Vec<Sample> = runs.iter().map(|p| p.report).collect();
    let sample = median_sample(&samples);
    Some(CasesPoint {
        cases,
        cases_per_s: per_second(cases, sample.wall_ms),
        sample,
        report: median_sample(&reports),
        rounds_wall_ms: samples.iter().map(|s| s.wall_ms).collect(),
    })
}

/// One generated scenario per count of updates in `counts`, each count `rounds` times in a row;
/// each point is the median of its rounds ([`median_frames_point`]). The parse of a long
/// scenario runs on three threads, and on two cores one run of it moved from 2.1 to 4.3 µs a
/// step with what the machine had done before (docs/performance.md, "Goals").
pub async fn frames_series(
    dir: &Path,
    counts: &[usize],
    rounds: usize,
    client: &ClientSpec,
    cfg: &RunConfig,
) -> Result<FramesSeries> {
    let mut points = Vec::new();
    for &n in counts {
        let mut count_rounds = Vec::new();
        for round in 1..=rounds {
            let p = frames_point(dir, n, client, cfg).await?;
            progress(&format!(
                "scale-frames: {n} updates ({} frames), round {round}/{rounds}, in {:.2} s, parse {:.2} s",
                p.frames,
                p.sample.wall_ms / 1000.0,
                p.parse_ms / 1000.0
            ));
            count_rounds.push(p);
        }
        points.extend(median_frames_point(count_rounds));
    }
    let xs: Vec<_> = points.iter().map(|p| (p.frames as f64, p.sample)).collect();
    Ok(FramesSeries {
        growth: growth(&xs),
        points,
    })
}

/// One count's rounds of the frames series as one point: the round with the median wall time,
/// with the median parse and checks of all rounds, the least peak RSS of all rounds, passed only
/// if every round passed, and every round's wall time, parse and peak RSS kept in the order run.
/// The least peak RSS, because a round run after one of the same size starts on the heap that
/// one freed and the allocator kept: 94–108 MB for the first round of 10⁵ updates, 128–175 MB
/// for the two after it in four runs measured; the series' memory slope is what a run of that
/// size needs, which the first round measures as a single run always did.
fn median_frames_point(rounds: Vec<FramesPoint>) -> Option<FramesPoint> {
    let samples: Vec<Sample> = rounds.iter().map(|p| p.sample).collect();
    let median_wall = median_sample(&samples).wall_ms;
    let parse_ms = median(rounds.iter().map(|p| p.parse_ms));
    let checks_ms = median(rounds.iter().map(|p| p.checks_ms));
    let passed = rounds.iter().all(|p| p.passed);
    let rounds_wall_ms = samples.iter().map(|s| s.wall_ms).collect();
    let rounds_parse_ms = rounds.iter().map(|p| p.parse_ms).collect();
    let rounds_peak_rss_kib: Vec<u64> = samples.iter().map(|s| s.harness_peak_rss_kib).collect();
    let mut point = rounds
        .into_iter()
        .find(|p| p.sample.wall_ms == median_wall)?;
    point.parse_ms = parse_ms;
    point.checks_ms = checks_ms;
    point.passed = passed;
    point.rounds_wall_ms = rounds_wall_ms;
    point.rounds_parse_ms = rounds_parse_ms;
    point.sample.harness_peak_rss_kib = rounds_peak_rss_kib.iter().copied().min()?;
    point.rounds_peak_rss_kib = rounds_peak_rss_kib;
    Some(point)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(wall_ms: f64) -> Sample {
        Sample {
            wall_ms,
            ..Sample::default()
        }
    }

    /// A point is its median round, the run's and the report's each by its own wall time, and
    /// keeps every round's wall time in the order run.
    #[test]
    fn a_point_is_the_median_of_its_rounds() {
        let runs = [(300.0, 9.0), (100.0, 7.0), (200.0, 8.0)].map(|(run, report)| CasesRun {
            cases: 50,
            sample: sample(run),
            report: sample(report),
        });
        let point = median_point(runs.into()).expect("a point");
        assert_eq!(point.cases, 50);
        assert_eq!(point.sample.wall_ms, 200.0);
        assert_eq!(point.report.wall_ms, 8.0);
        assert_eq!(point.cases_per_s, 250.0);
        assert_eq!(point.rounds_wall_ms, [300.0, 100.0, 200.0]);
        assert!(median_point(Vec::new()).is_none());
    }

    /// A frames point is its median round by wall time, with the median parse and checks of all
    /// rounds (not the median round's) and the least peak RSS, failed if any round failed, every
    /// round kept.
    #[test]
    fn a_frames_point_is_the_median_of_its_rounds() {
        let rounds = [
            (300.0, 4.0, 1.0, true),
            (100.0, 6.0, 3.0, false),
            (200.0, 5.0, 9.0, true),
        ]
        .map(|(wall, parse_ms, checks_ms, passed)| FramesPoint {
            updates: 10,
            frames: 20,
            transcript_entries: 30,
            parse_ms,
            sample: Sample {
                harness_peak_rss_kib: wall as u64 + 1000,
                ..sample(wall)
            },
            checks_ms,
            passed,
            rounds_wall_ms: Vec::new(),
            rounds_parse_ms: Vec::new(),
            rounds_peak_rss_kib: Vec::new(),
        });
        let point = median_frames_point(rounds.into()).expect("a point");
        assert_eq!(point.sample.wall_ms, 200.0);
        assert_eq!(point.parse_ms, 5.0);
        assert_eq!(point.checks_ms, 3.0);
        assert!(!point.passed, "a round failed");
        assert_eq!(point.rounds_wall_ms, [300.0, 100.0, 200.0]);
        assert_eq!(point.rounds_parse_ms, [4.0, 6.0, 5.0]);
        // The least peak RSS, the fastest round's here, not the median round's.
        assert_eq!(point.sample.harness_peak_rss_kib, 1100);
        assert_eq!(point.rounds_peak_rss_kib, [1300, 1100, 1200]);
        assert_eq!(point.frames, 20);
        assert!(median_frames_point(Vec::new()).is_none());
    }
}
