//! The benchmark's result: one JSON document (schema `acp-harness/bench/v1`, written to
//! `--out`) and the same figures as a table for people, with the goals of docs/performance.md
//! marked met or not.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::measure::Sample;
use super::scale::{CasesSeries, FramesSeries, Growth};
use super::temp_fs::TempFs;

pub const SCHEMA: &str = "acp-harness/bench/v1";

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub schema: &'static str,
    pub harness_version: &'static str,
    /// `release` or `debug`: figures from a debug build are not representative.
    pub build_profile: &'static str,
    pub started_unix_ms: u64,
    pub machine: Machine,
    pub config: Config,
    pub baseline: Option<CorpusFigures>,
    pub suite: Option<CorpusFigures>,
    /// suite / baseline, when both ran.
    pub ratio: Option<Ratio>,
    pub large: Option<Large>,
    pub scale_cases: Option<CasesSeries>,
    pub scale_frames: Option<FramesSeries>,
    pub goals: Vec<Goal>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Machine {
    pub cores: usize,
    pub kernel: String,
    /// Where the cases' directories go: its filesystem shapes the cases series.
    pub temp_dir: TempFs,
}

#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub sections: Vec<&'static str>,
    pub quick: bool,
    pub rounds: usize,
    pub jobs: usize,
    pub client: String,
    pub filter: Vec<String>,
}

/// One corpus section (baseline or suite) over its rounds.
#[derive(Debug, Clone, Serialize)]
pub struct CorpusFigures {
    pub client: String,
    pub graded: bool,
    pub cases: usize,
    pub rounds: Vec<Sample>,
    /// The round with the median wall time.
    pub median: Sample,
    pub cases_per_s: f64,
    /// Cases that did not run to their end, in the worst round.
    pub incomplete: usize,
    /// Failing trials (fail, error, timeout, crash), in the last round.
    pub failing_trials: usize,
    /// Median time to write run.json, the transcripts and the report (suite only).
    pub outputs_ms: Option<f64>,
    /// The checks alone over one round's records, one thread (suite only).
    pub checks_ms: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    /// Median over the rounds of suite wall time / baseline wall time of the same round.
    pub wall: f64,
    /// The same for CPU time, harness and children together.
    pub cpu: f64,
    pub pairs: Vec<f64>,
}

/// The 10,000-update case, run once per round.
#[derive(Debug, Clone, Serialize)]
pub struct Large {
    pub updates: usize,
    pub frames: usize,
    pub parse_ms: f64,
    pub runs_ms: Vec<f64>,
    /// Median of `runs_ms`: launch, play, record, shut down, grade.
    pub median_ms: f64,
    pub checks_ms: f64,
    pub harness_peak_rss_kib: u64,
    pub passed: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Goal {
    pub goal: String,
    pub value: Option<f64>,
    pub limit: f64,
    pub unit: &'static str,
    /// `None` when the section that measures it did not run.
    pub met: Option<bool>,
    /// The value must reach the limit (else stay under it).
    pub at_least: bool,
}

impl Goal {
    fn at_most(goal: String, value: Option<f64>, limit: f64, unit: &'static str) -> Goal {
        Goal {
            met: value.map(|v| v <= limit),
            goal,
            value,
            limit,
            unit,
            at_least: false,
        }
    }

    fn at_least(goal: String, value: Option<f64>, limit: f64, unit: &'static str) -> Goal {
        Goal {
            met: value.map(|v| v >= limit),
            at_least: true,
            ..Goal::at_most(goal, value, limit, unit)
        }
    }
}

/// The goals of issue 17 on the cases series (flat memory, linear time), on the points it has.
fn cases_goals(series: &CasesSeries) -> Vec<Goal> {
    let point = |n: usize| series.points.iter().find(|p| p.cases == n);
    let rss = |n: usize| point(n).map(|p| p.sample.harness_peak_rss_kib as f64);
    let per_s = |n: usize| point(n).map(|p| p.cases_per_s);
    let report_rss = |n: usize| point(n).map(|p| p.report.harness_peak_rss_kib as f64);
    let ratio = |a: Option<f64>, b: Option<f64>| Some(a? / b?).filter(|r| r.is_finite());
    vec![
        Goal::at_most(
            "peak RSS, run of 1,000 cases / of 10".into(),
            ratio(rss(1000), rss(10)),
            1.1,
            "×",
        ),
        Goal::at_most(
            "peak RSS, run of 10,000 cases / of 10".into(),
            ratio(rss(10_000), rss(10)),
            1.1,
            "×",
        ),
        Goal::at_most(
            "time exponent over cases, last decade".into(),
            series.growth.time_exponent_last,
            1.05,
            "",
        ),
        Goal::at_least(
            "cases/s at 1,000 cases / at 30".into(),
            ratio(per_s(1000), per_s(30)),
            0.9,
            "×",
        ),
        Goal::at_most(
            "report peak RSS, 1,000 cases / 10".into(),
            ratio(report_rss(1000), report_rss(10)),
            1.1,
            "×",
        ),
        Goal::at_most(
            "report peak RSS, 10,000 cases / 10".into(),
            ratio(report_rss(10_000), report_rss(10)),
            1.1,
            "×",
        ),
        Goal::at_most(
            "report time exponent over cases, last decade".into(),
            series.report_growth.time_exponent_last,
            1.05,
            "",
        ),
    ]
}

/// The goals of issue 17 on the frames series (item 3): memory a frame, and the 10⁵-update
/// scenario parsed, played and checked in 1 s with the parse at most 3 µs a step.
fn frames_goals(series: &FramesSeries) -> Vec<Goal> {
    let largest = series
        .points
        .iter()
        .max_by_key(|p| p.updates)
        .filter(|p| p.updates >= 100_000);
    let name = |what: &str| match largest {
        Some(p) => format!("{} updates {what}", p.updates),
        None => format!("100000 updates {what}"),
    };
    vec![
        Goal::at_most(
            "harness memory a frame (frames series slope)".into(),
            // The series is fitted over frames (both directions), so the slope is a frame's.
            series.growth.rss_kib_per_unit,
            1.0,
            "KiB",
        ),
        Goal::at_most(
            name("parsed, played and checked"),
            largest.map(|p| (p.parse_ms + p.sample.wall_ms) / 1000.0),
            1.0,
            "s",
        ),
        Goal::at_most(
            name("parsed, a step"),
            largest.map(|p| p.parse_ms * 1000.0 / p.updates as f64),
            3.0,
            "µs",
        ),
    ]
}

impl BenchReport {
    /// A report of this build on this machine, with no figures yet.
    pub fn new(config: Config) -> BenchReport {
        BenchReport {
            schema: SCHEMA,
            harness_version: env!("CARGO_PKG_VERSION"),
            build_profile: if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            },
            started_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            machine: Machine {
                cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
                kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                    .map(|s| s.trim().to_owned())
                    .unwrap_or_default(),
                temp_dir: TempFs::probe(),
            },
            config,
            baseline: None,
            suite: None,
            ratio: None,
            large: None,
            scale_cases: None,
            scale_frames: None,
            goals: Vec::new(),
        }
    }

    /// The goals of issue 8 / docs/performance.md, judged on what ran.
    pub fn judge(&mut self) {
        let (at_most, at_least) = (Goal::at_most, Goal::at_least);
        let suite_rss = self.suite.as_ref().map(|s| {
            let kib = s.rounds.iter().map(|r| r.harness_peak_rss_kib).max();
            mb(kib.unwrap_or(0))
        });
        self.goals = vec![
            at_most(
                "whole suite / baseline".into(),
                self.ratio.as_ref().map(|r| r.wall),
                1.3,
                "×",
            ),
            at_least(
                "cases per second (corpus, small scenarios)".into(),
                self.suite.as_ref().map(|s| s.cases_per_s),
                100.0,
                "cases/s",
            ),
            at_most(
                format!(
                    "{} tool_call_updates recorded and checked",
                    self.large.as_ref().map_or(10_000, |l| l.updates)
                ),
                self.large.as_ref().map(|l| l.median_ms / 1000.0),
                1.0,
                "s",
            ),
            at_most(
                "harness peak RSS, whole suite".into(),
                suite_rss,
                100.0,
                "MB",
            ),
        ];
        if let Some(cases) = &self.scale_cases {
            self.goals.extend(cases_goals(cases));
        }
        if let Some(frames) = &self.scale_frames {
            self.goals.extend(frames_goals(frames));
        }
    }

    pub fn write_json(&self, path: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The table for people.
    pub fn table(&self) -> String {
        let mut t = String::new();
        let c = &self.config;
        let _ = writeln!(
            t,
            "acp-harness bench: {} build, {} cores, {} cases at a time, {} round(s){}",
            self.build_profile,
            self.machine.cores,
            c.jobs,
            c.rounds,
            if c.quick { ", --quick" } else { "" }
        );
        let fs = &self.machine.temp_dir;
        let _ = writeln!(t, "case directories in {} ({})", fs.path, fs.describe());
        if self.baseline.is_some() || self.suite.is_some() {
            let _ = writeln!(
                t,
                "\n{:<9} {:<40} {:>6} {:>9} {:>8} {:>9} {:>10} {:>9}",
                "section",
                "client",
                "cases",
                "wall",
                "cases/s",
                "cpu self",
                "cpu child",
                "peak RSS",
            );
            for (name, f) in [("baseline", &self.baseline), ("suite", &self.suite)] {
                if let Some(f) = f {
                    let m = &f.median;
                    let _ = writeln!(
                        t,
                        "{:<9} {:<40} {:>6} {:>9} {:>8.0} {:>9} {:>10} {:>9}",
                        name,
                        clip(&f.client, 40),
                        f.cases,
                        dur(m.wall_ms),
                        f.cases_per_s,
                        dur(m.harness_cpu_ms),
                        dur(m.children_cpu_ms),
                        mb_text(m.harness_peak_rss_kib),
                    );
                }
            }
            if let Some(s) = &self.suite {
                let _ = writeln!(
                    t,
                    "          suite: checks alone {} (one thread), outputs (run.json, report) {}",
                    s.checks_ms.map_or("-".into(), dur),
                    s.outputs_ms.map_or("-".into(), dur),
                );
            }
            if let Some(r) = &self.ratio {
                let _ = writeln!(
                    t,
                    "ratio     suite / baseline: wall {:.2}×, cpu {:.2}× (median of {} paired rounds)",
                    r.wall,
                    r.cpu,
                    r.pairs.len()
                );
            }
            for (name, f) in [("baseline", &self.baseline), ("suite", &self.suite)] {
                if let Some(f) = f.as_ref().filter(|f| f.incomplete > 0) {
                    let _ = writeln!(
                        t,
                        "warning   {name}: {} case(s) did not run to their end",
                        f.incomplete
                    );
                }
            }
        }
        if let Some(l) = &self.large {
            let _ = writeln!(
                t,
                "\nlarge     {} tool_call_updates ({} frames): {} recorded and checked \
                 (median of {}), checks alone {}, parse {}, peak RSS {}{}",
                l.updates,
                l.frames,
                dur(l.median_ms),
                l.runs_ms.len(),
                dur(l.checks_ms),
                dur(l.parse_ms),
                mb_text(l.harness_peak_rss_kib),
                if l.passed { "" } else { ", NOT all passed" }
            );
        }
        if let Some(s) = &self.scale_cases {
            let _ = writeln!(
                t,
                "\nscale: number of cases (run: the cases and run.json; then the report)\n\
                 {:>7} {:>9} {:>8} {:>9} {:>9} {:>11} {:>11}",
                "cases", "wall", "cases/s", "cpu self", "peak RSS", "report wall", "report RSS"
            );
            for p in &s.points {
                let _ = writeln!(
                    t,
                    "{:>7} {:>9} {:>8.0} {:>9} {:>9} {:>11} {:>11}",
                    p.cases,
                    dur(p.sample.wall_ms),
                    p.cases_per_s,
                    dur(p.sample.harness_cpu_ms),
                    mb_text(p.sample.harness_peak_rss_kib),
                    dur(p.report.wall_ms),
                    mb_text(p.report.harness_peak_rss_kib)
                );
            }
            let _ = writeln!(t, "run:    {}", growth_line(&s.growth, "case"));
            let _ = writeln!(t, "report: {}", growth_line(&s.report_growth, "case"));
            if self.machine.temp_dir.skips_freed_inodes() {
                let _ = writeln!(
                    t,
                    "note: {} is ext4 without a journal, whose kernel skips every inode freed in \
                     the last minutes when it makes a new one: a long run's directories can cost \
                     more per case as it goes. Set TMPDIR to tmpfs or a journaled filesystem to time \
                     the harness alone (docs/performance.md, \"Number of cases\").",
                    self.machine.temp_dir.path
                );
            }
        }
        if let Some(s) = &self.scale_frames {
            let rounds = s
                .points
                .first()
                .map_or(1, |p| p.rounds_wall_ms.len().max(1));
            let _ = writeln!(
                t,
                "\nscale: frames per scenario (each the median of {rounds} round(s))\n\
                 {:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                "updates", "frames", "wall", "checks", "parse", "cpu self", "peak RSS", "passed"
            );
            for p in &s.points {
                let _ = writeln!(
                    t,
                    "{:>8} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                    p.updates,
                    p.frames,
                    dur(p.sample.wall_ms),
                    dur(p.checks_ms),
                    dur(p.parse_ms),
                    dur(p.sample.harness_cpu_ms),
                    mb_text(p.sample.harness_peak_rss_kib),
                    if p.passed { "yes" } else { "NO" }
                );
            }
            let _ = writeln!(t, "{}", growth_line(&s.growth, "frame"));
        }
        let _ = writeln!(t, "\ngoals");
        for g in &self.goals {
            let value = g
                .value
                .map_or("not measured".into(), |v| format!("{v:.2} {}", g.unit));
            let verdict = match g.met {
                Some(true) => "met",
                Some(false) => "NOT met",
                None => "-",
            };
            let sense = if g.at_least { "≥" } else { "≤" };
            let _ = writeln!(
                t,
                "  {:<48} {:>16}   goal {sense} {} {:<8} {verdict}",
                g.goal, value, g.limit, g.unit
            );
        }
        t
    }
}

fn growth_line(g: &Growth, unit: &str) -> String {
    let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
    format!(
        "slope: time ∝ {unit}s^{} (fitted over all points; last decade ^{}), memory {} KiB per {unit}",
        f(g.time_exponent),
        f(g.time_exponent_last),
        g.rss_kib_per_unit.map_or("-".into(), |v| format!("{v:.2}"))
    )
}

fn clip(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        let mut s: String = text.chars().take(width - 1).collect();
        s.push('…');
        s
    }
}

/// KiB as MB (10⁶ bytes), the unit of the memory goal.
pub fn mb(kib: u64) -> f64 {
    kib as f64 * 1024.0 / 1e6
}

fn mb_text(kib: u64) -> String {
    format!("{:.1} MB", mb(kib))
}

fn dur(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}
