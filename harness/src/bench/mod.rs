//! `acp-harness bench`: the suite measured against the floor that process spawn and pipes set on
//! this machine, and how its cost grows (docs/performance.md).
//!
//! Everything runs inside this process, so the harness's CPU time and peak memory are read from
//! the kernel's accounting of this process (`measure.rs`). Sections:
//!
//! * `baseline` / `suite` (`corpus.rs`): the corpus against the echo client (`echo.rs`), checks
//!   off, and against the client under test, graded and written out, in alternating rounds;
//! * `large`: one generated scenario of 10,000 tool_call_updates (`generate.rs`), once a round;
//! * `scale-cases`, `scale-frames` (`scale.rs`): the corpus repeated to 10 … 10,000 cases, and one
//!   generated scenario of 10² … 10⁵ updates.
//!
//! The figures go to stdout as a table and to `--out` as JSON (`report.rs`); progress goes to
//! stderr.

mod corpus;
mod echo;
mod generate;
pub mod measure;
mod report;
mod scale;
mod temp_fs;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use acp_fake_agents::scenario::Case;
use anyhow::{Context, Result, bail};
use clap::ValueEnum;

pub use echo::{ECHO_CLIENT, echo_client};
pub use report::{BenchReport, SCHEMA};

use crate::client_spec::ClientSpec;
use crate::runner::RunConfig;
use crate::suite;
use measure::{median, median_sample};
use report::{Config, CorpusFigures, Ratio};

/// A part of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Section {
    /// The corpus against the echo client, checks off: the cost of spawn and pipes.
    Baseline,
    /// The corpus against the client under test, graded, run.json and report written.
    Suite,
    /// One scenario of --large tool_call_updates, recorded and checked.
    Large,
    /// The corpus repeated to each count of --cases.
    ScaleCases,
    /// One generated scenario per count of --frames.
    ScaleFrames,
}

impl Section {
    fn name(self) -> &'static str {
        match self {
            Section::Baseline => "baseline",
            Section::Suite => "suite",
            Section::Large => "large",
            Section::ScaleCases => "scale-cases",
            Section::ScaleFrames => "scale-frames",
        }
    }
}

/// Options of `acp-harness bench`.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Sections to run, comma-separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',', value_name = "SECTIONS")]
    pub only: Vec<Section>,
    /// A first look in a few seconds: one round, frames 10²–10⁴, cases 10–100.
    #[arg(long)]
    pub quick: bool,
    /// Rounds of baseline and suite (alternating), of the large case, and of each count of the
    /// frames and cases series (in a row); medians are reported [default: 3; with --quick: 1].
    #[arg(long, value_name = "N")]
    pub rounds: Option<usize>,
    /// Where the JSON goes (the table goes to stdout).
    #[arg(long, value_name = "FILE", default_value = "acp-bench/bench.json")]
    pub out: PathBuf,
    /// Client the suite and the series run against: a JSON argv array, a client profile,
    /// `reference` (default) or `mutant:<name>`. Also read from ACP_HARNESS_CLIENT.
    #[arg(long, value_name = "CLIENT")]
    pub client: Option<String>,
    /// Scenario directory of the corpus [default: ./scenarios, else the workspace's].
    #[arg(long, value_name = "DIR")]
    pub scenarios: Option<PathBuf>,
    /// Only corpus cases whose trial names contain this text (repeatable; any match selects).
    #[arg(long, value_name = "TEXT")]
    pub filter: Vec<String>,
    /// Cases run at once [default: number of cores].
    #[arg(long, value_name = "N")]
    pub jobs: Option<usize>,
    /// tool_call_updates per generated scenario in scale-frames, comma-separated
    /// [default: 100,1000,10000,100000; with --quick: 100,1000,10000].
    #[arg(long, value_delimiter = ',', value_name = "COUNTS")]
    pub frames: Vec<usize>,
    /// Case counts in scale-cases, comma-separated [default: 10,30,100,300,1000,10000; with
    /// --quick: 10,30,100]. Every run's outputs stay in the system's temporary directory until
    /// the benchmark ends: about 70 kB a case, some 2.4 GB for the default counts and rounds.
    #[arg(long, value_delimiter = ',', value_name = "COUNTS")]
    pub cases: Vec<usize>,
    /// tool_call_updates in the large case.
    #[arg(long, value_name = "N", default_value_t = 10_000)]
    pub large: usize,
}

/// Runs the benchmark: the table on stdout, the JSON in `--out`. Exits 0 once both are written,
/// whether or not the goals are met (they are figures, not a test); 2 on bad input.
pub fn run(args: BenchArgs) -> Result<ExitCode> {
    if cfg!(debug_assertions) {
        eprintln!(
            "acp-harness bench: warning: this is a debug build; its figures are not \
             representative. Run `cargo run --release -p acp-harness -- bench`."
        );
    }
    let sections = if args.only.is_empty() {
        vec![
            Section::Baseline,
            Section::Suite,
            Section::Large,
            Section::ScaleFrames,
            Section::ScaleCases,
        ]
    } else {
        args.only.clone()
    };
    let has = |s: Section| sections.contains(&s);
    let rounds = args.rounds.unwrap_or(if args.quick { 1 } else { 3 }).max(1);
    let frames = pick(
        &args.frames,
        args.quick,
        &[100, 1000, 10_000],
        &[100, 1000, 10_000, 100_000],
    );
    let counts = pick(
        &args.cases,
        args.quick,
        &[10, 30, 100],
        &[10, 30, 100, 300, 1000, 10_000],
    );

    // Fail on an unwritable --out before measuring anything.
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let scenarios = suite::scenarios_dir(args.scenarios.as_deref())?;
    let mut cfg = RunConfig::new(scenarios)?;
    if let Some(jobs) = args.jobs {
        cfg.jobs = jobs.max(1);
    }
    let corpus = suite::select_cases(&cfg.scenarios_dir, &args.filter)?;
    if corpus.is_empty() {
        bail!("no case matches the filter {:?}", args.filter);
    }
    let client = ClientSpec::resolve(args.client.as_deref())?;
    let echo = if has(Section::Baseline) {
        Some(echo_client()?)
    } else {
        None
    };
    let work = tempfile::Builder::new()
        .prefix("acp-bench-")
        .tempdir()
        .context("cannot create the benchmark's tempdir")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;

    let mut report = BenchReport::new(Config {
        sections: sections.iter().map(|s| s.name()).collect(),
        quick: args.quick,
        rounds,
        jobs: cfg.jobs,
        client: client.source.clone(),
        filter: args.filter.clone(),
    });

    if has(Section::Baseline) || has(Section::Suite) {
        let (baseline, suite) = rt.block_on(corpus_sections(
            &corpus,
            echo.as_ref(),
            has(Section::Suite).then_some(&client),
            &cfg,
            rounds,
            &work.path().join("outputs"),
        ))?;
        report.ratio = ratio(baseline.as_ref(), suite.as_ref());
        report.baseline = baseline;
        report.suite = suite;
    }
    // The generated scenarios are long: give them more than the default case time.
    let long = RunConfig {
        case_timeout: cfg.case_timeout.max(Duration::from_secs(300)),
        ..cfg.clone()
    };
    if has(Section::Large) {
        report.large = Some(rt.block_on(scale::large(
            &work.path().join("large"),
            args.large,
            rounds,
            &client,
            &long,
        ))?);
    }
    // The cases series runs last: it makes and removes tens of thousands of inodes, and on ext4
    // without a journal every inode made in the next minute pays for the ones just removed
    // (docs/performance.md, "Number of cases"); a series after it would measure that too.
    if has(Section::ScaleFrames) {
        report.scale_frames = Some(rt.block_on(scale::frames_series(
            &work.path().join("frames"),
            &frames,
            rounds,
            &client,
            &long,
        ))?);
    }
    if has(Section::ScaleCases) {
        report.scale_cases = Some(rt.block_on(scale::cases_series(
            &work.path().join("cases"),
            &corpus,
            &counts,
            rounds,
            &client,
            &cfg,
        ))?);
    }
    report.judge();
    report.write_json(&args.out)?;
    crate::out!("{}", report.table());
    crate::outln!("json: {}", args.out.display());
    // What the series wrote (gigabytes with the default counts) can take minutes to remove on a
    // disk that trims what is freed: say what the wait is.
    let removing = std::time::Instant::now();
    progress(&format!(
        "removing the benchmark's files in {} …",
        work.path().display()
    ));
    let path = work.path().to_owned();
    if let Err(e) = work.close() {
        eprintln!("acp-harness bench: cannot remove {}: {e}", path.display());
    }
    progress(&format!(
        "removed in {:.1} s",
        removing.elapsed().as_secs_f64()
    ));
    Ok(ExitCode::SUCCESS)
}

/// The explicit list, else the quick or the full default.
fn pick(given: &[usize], quick: bool, quick_default: &[usize], full: &[usize]) -> Vec<usize> {
    let list = if !given.is_empty() {
        given
    } else if quick {
        quick_default
    } else {
        full
    };
    list.iter().copied().filter(|&n| n > 0).collect()
}

/// One line of progress on stderr.
fn progress(text: &str) {
    eprintln!("bench: {text}");
}

/// Baseline and suite rounds, alternating, after one untimed warm-up of a few cases each (the
/// first launches of a binary pay for loading it).
async fn corpus_sections(
    cases: &[Case],
    echo: Option<&ClientSpec>,
    client: Option<&ClientSpec>,
    cfg: &RunConfig,
    rounds: usize,
    outputs: &std::path::Path,
) -> Result<(Option<CorpusFigures>, Option<CorpusFigures>)> {
    let warm = &cases[..cases.len().min(10)];
    if let Some(echo) = echo {
        corpus::baseline_round(warm, echo, cfg).await;
    }
    if let Some(client) = client {
        corpus::suite_round(warm, client, cfg, &outputs.join("warm-up")).await?;
    }
    let mut baseline = Vec::new();
    let mut suite = Vec::new();
    for round in 1..=rounds {
        if let Some(echo) = echo {
            let r = corpus::baseline_round(cases, echo, cfg).await;
            progress(&format!(
                "baseline round {round}/{rounds}: {} cases in {:.2} s",
                cases.len(),
                r.sample.wall_ms / 1000.0
            ));
            baseline.push(r);
        }
        if let Some(client) = client {
            // Each round writes into a directory of its own, removed with the benchmark's
            // tempdir at the end: removing it here would make the next rounds pay for the
            // deleted inodes (ext4 skips recently deleted ones when it allocates).
            let out = outputs.join(format!("round-{round}"));
            let r = corpus::suite_round(cases, client, cfg, &out).await?;
            progress(&format!(
                "suite round {round}/{rounds}: {} cases in {:.2} s",
                cases.len(),
                r.sample.wall_ms / 1000.0
            ));
            suite.push(r);
        }
    }
    let figures = |rounds: &[corpus::Round], client: &ClientSpec, graded: bool| {
        let samples: Vec<_> = rounds.iter().map(|r| r.sample).collect();
        let middle = median_sample(&samples);
        CorpusFigures {
            client: client_label(client),
            graded,
            cases: cases.len(),
            cases_per_s: scale::per_second(cases.len(), middle.wall_ms),
            median: middle,
            rounds: samples,
            incomplete: rounds.iter().map(|r| r.incomplete).max().unwrap_or(0),
            failing_trials: rounds.last().map_or(0, |r| r.failing_trials),
            outputs_ms: graded.then(|| median(rounds.iter().filter_map(|r| r.outputs_ms))),
            checks_ms: graded.then(|| median(rounds.iter().filter_map(|r| r.checks_ms))),
        }
    };
    Ok((
        echo.map(|e| figures(&baseline, e, false)),
        client.map(|c| figures(&suite, c, true)),
    ))
}

fn client_label(client: &ClientSpec) -> String {
    let args = client.argv.iter().skip(1).cloned().collect::<Vec<_>>();
    if args.is_empty() {
        client.name.clone()
    } else {
        format!("{} {}", client.name, args.join(" "))
    }
}

fn ratio(baseline: Option<&CorpusFigures>, suite: Option<&CorpusFigures>) -> Option<Ratio> {
    let (b, s) = (baseline?, suite?);
    let pairs: Vec<_> = b.rounds.iter().zip(&s.rounds).collect();
    let wall: Vec<f64> = pairs.iter().map(|(b, s)| s.wall_ms / b.wall_ms).collect();
    let cpu = pairs.iter().map(|(b, s)| {
        (s.harness_cpu_ms + s.children_cpu_ms) / (b.harness_cpu_ms + b.children_cpu_ms)
    });
    Some(Ratio {
        wall: median(wall.iter().copied()),
        cpu: median(cpu),
        pairs: wall,
    })
}
