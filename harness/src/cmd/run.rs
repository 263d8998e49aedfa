//! `acp-harness run`: the suite against a client. A progress line per case as it ends, the
//! summary table, the failures with their repro lines and their causes, run.json, the
//! transcripts and the report in `--out`; a `--baseline`'s expected failures applied (and
//! rewritten with `--bless`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use acp_harness::baseline::Baseline;
use acp_harness::output::progress_line;
use acp_harness::run_writer::{self, BaselineUse, RunWriter};
use acp_harness::runner::{self, RunConfig};
use acp_harness::{run_json, suite};
use acp_reports::words::counted;
use anyhow::{Context, Result};
use clap::Args;

use super::common::{CommonArgs, config, indent, runtime};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Only trials whose name contains this text (repeatable; any match selects).
    #[arg(long, value_name = "TEXT")]
    filter: Vec<String>,
    /// Treat warn (a SHOULD broken) as failure.
    #[arg(long)]
    strict: bool,
    /// Where run.json and the transcripts go.
    #[arg(long, value_name = "DIR", default_value = "acp-results")]
    out: PathBuf,
    /// Cases run at once [default: number of cores].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Expected failures (TOML; clients/README.md, "Baselines"): a listed failure grades
    /// `expected` and does not fail the run; a listed trial that passes grades `stale` and does;
    /// an entry naming no known check or trial is an error.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Rewrite the --baseline file from this run's failures (refused with --filter or --shard).
    #[arg(long, requires = "baseline")]
    bless: bool,
    /// Run only slice K of N of the cases (e.g. `--shard 2/4`), to split a run across CI
    /// runners. A case's slice comes from a stable hash of its id, so it stays put when cases
    /// are added, and the N slices together run every case once.
    #[arg(long, value_name = "K/N", value_parser = suite::Shard::parse)]
    shard: Option<suite::Shard>,
}

/// Exits 1 when a trial fails (see the `run` subcommand's help), 2 when the report cannot be
/// written although every trial passed.
pub fn command(args: RunArgs) -> Result<ExitCode> {
    let (mut cfg, client) = config(&args.common)?;
    if let Some(jobs) = args.jobs {
        cfg.jobs = jobs.max(1);
    }
    let mut cases = suite::select_cases(&cfg.scenarios_dir, &args.filter)?;
    if cases.is_empty() {
        anyhow::bail!("no case matches the filter {:?}", args.filter);
    }
    if let Some(shard) = args.shard {
        let selected = cases.len();
        cases.retain(|c| shard.contains(&c.id));
        if cases.is_empty() {
            anyhow::bail!("shard {shard} holds none of the {selected} selected cases");
        }
    }
    let baseline = load_baseline(&args, &cfg)?;
    // Fail on an unwritable --out before running anything.
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create --out directory {}", args.out.display()))?;
    let version_output = runtime()?.block_on(client.probe_version(Duration::from_secs(10)));
    let version = version_output
        .as_ref()
        .and_then(|v| v.get("version")?.as_str().map(|s| format!(" ({s})")))
        .unwrap_or_default();
    eprintln!(
        "acp-harness: {} cases against {}{version} ({} at a time)",
        cases.len(),
        client.name,
        cfg.jobs
    );
    let started = Instant::now();
    let started_unix_ms = run_json::unix_ms_now();
    let scenario_info = run_json::ScenarioInfo::of(&cases, &cfg.scenarios_dir);
    let mut writer = RunWriter::create(
        &args.out,
        &scenario_info,
        baseline.as_ref().map(|baseline| BaselineUse {
            baseline,
            bless: args.bless,
        }),
        args.strict,
    )?;
    // Each case goes to disk as it ends.
    runtime()?.block_on(runner::for_each_case(
        cases,
        &client,
        &cfg,
        |index, mut r| {
            let case_id = &r.record.meta.case_id;
            suite::retain_selected_trials(case_id, &mut r.trials, &args.filter);
            // The line shows the baseline's grades; the run's are settled at the end, when the
            // entries covering several trials are known to have failed or not.
            let mut shown = r.trials.clone();
            if let Some(b) = &baseline {
                b.apply_case(case_id, &mut shown);
            }
            acp_harness::outln!("{}", progress_line(case_id, r.duration, &shown));
            writer.add(index, r);
        },
    ));

    let header = run_json::RunHeader {
        client: &client,
        cfg: &cfg,
        strict: args.strict,
        filter: &args.filter,
        shard: args.shard.map(|s| s.to_string()),
        started_unix_ms,
        duration_ms: started.elapsed().as_millis() as u64,
        version_output,
    };
    let finished = writer.finish(header)?;
    if let Some(b) = &finished.blessed {
        acp_harness::outln!(
            "blessed {}: {} expected failure(s)",
            b.path.display(),
            b.entries.len()
        );
    }
    acp_harness::outln!("\n{}", finished.table.render());
    let report = run_writer::write_report(&args.out);

    let failing: Vec<String> = finished
        .failing
        .iter()
        .map(|f| {
            format!(
                "{}::{} [{}]\n{}\n",
                f.case_id,
                f.check,
                f.grade.as_str(),
                indent(&f.text)
            )
        })
        .collect();
    for f in &failing {
        acp_harness::outln!("{f}");
    }
    if let Ok(written) = &report {
        print_causes(written, failing.len(), args.strict);
    }
    acp_harness::outln!("results: {}", args.out.join("run.json").display());
    match &report {
        Ok(written) => acp_harness::outln!("report:  {}", written.index.display()),
        Err(err) => eprintln!("acp-harness: cannot write the report: {err}"),
    }
    if failing.is_empty() {
        acp_harness::outln!("all trials passed");
        // A run whose report could not be written is not a clean pass (exit 2: environment).
        Ok(if report.is_ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(2)
        })
    } else {
        acp_harness::outln!(
            "{} failing trials; re-run one with the `repro:` line above",
            failing.len()
        );
        Ok(ExitCode::from(1))
    }
}

/// The failures grouped by cause (acp_reports::causes), last before the paths: after a long
/// list of trials, what a person reads first is what to fix.
fn print_causes(written: &acp_reports::Written, failing: usize, strict: bool) {
    if written.causes.is_empty() {
        return;
    }
    let n = written.causes.len();
    // Causes cover warnings too, which fail a run only under --strict: otherwise count them apart.
    let warnings: usize = written
        .causes
        .iter()
        .filter(|c| c.grade == acp_reports::grade::KnownGrade::Warn)
        .map(|c| c.trials)
        .sum();
    let mut behind = Vec::new();
    if failing > 0 {
        behind.push(counted(failing, "failing trial"));
    }
    if warnings > 0 && !strict {
        behind.push(counted(warnings, "warning"));
    }
    if behind.is_empty() {
        behind.push(counted(
            written.causes.iter().map(|c| c.trials).sum(),
            "trial",
        ));
    }
    acp_harness::outln!(
        "What to fix first: {} behind {}",
        counted(n, "cause"),
        behind.join(" and ")
    );
    for (i, cause) in written.causes.iter().enumerate() {
        acp_harness::outln!("{:>4}. {}", i + 1, cause.line());
        acp_harness::outln!("      first: {}", cause.first_trial);
    }
    if let Some(hint) = &written.single_cause_hint {
        acp_harness::outln!("\n{hint}");
    }
    acp_harness::outln!();
}

/// `--baseline`, checked against every case of the scenarios directory; `--bless` may start
/// from a file that does not exist yet.
fn load_baseline(args: &RunArgs, cfg: &RunConfig) -> Result<Option<Baseline>> {
    let Some(path) = &args.baseline else {
        return Ok(None);
    };
    if args.bless && args.shard.is_some() {
        anyhow::bail!(
            "--bless rewrites the whole baseline, so it needs the whole suite: drop --shard"
        );
    }
    if args.bless && !args.filter.is_empty() {
        anyhow::bail!(
            "--bless rewrites the whole baseline, so it needs the whole suite: drop --filter"
        );
    }
    let baseline = if args.bless && !path.exists() {
        Baseline {
            path: path.clone(),
            ..Baseline::default()
        }
    } else {
        Baseline::load(path)?
    };
    suite::validate_baseline(&baseline, &cfg.scenarios_dir)?;
    Ok(Some(baseline))
}
