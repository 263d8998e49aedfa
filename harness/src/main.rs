//! `acp-harness`: run the conformance suite against an ACP client.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use acp_harness::baseline::Baseline;
use acp_harness::client_spec::ClientSpec;
use acp_harness::output::{progress_line, wire_log};
use acp_harness::run_json;
use acp_harness::run_writer::{self, BaselineUse, RunWriter};
use acp_harness::runner::{self, RunConfig};
use acp_harness::suite;
use acp_reports::report_pages::ReportPages;
use acp_reports::words::counted;
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

/// Conformance and fuzz test harness for ACP (Agent Client Protocol) clients.
///
/// Fake agents replay traffic shaped like real agents (opencode, codex-acp, qwen-code,
/// claude-agent-acp) against your client, and checks grade what it sent on the wire and, through
/// its control-plane adapter, what it showed the user.
/// Printed after the help as written: clap re-wraps doc comments, which would run the three
/// commands together into one paragraph.
const QUICK_START: &str = "\
Quick start:
  acp-harness run
      the whole suite against the bundled reference client; report in acp-results/report/
  acp-harness run --client '[\"./my-client\",\"--acp-harness-adapter\"]'
      your client, through its control-plane adapter (harness/CONTROL.md)
  acp-harness replay 'opencode@1.18/edit-permission' --client …
      one case: its numbered wire log and every check's verdict";

#[derive(Parser)]
#[command(
    name = "acp-harness",
    version,
    about,
    long_about,
    max_term_width = 100,
    after_help = QUICK_START
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the suite: a line per case as it finishes, a summary table, and run.json in --out.
    ///
    /// Exits 0 when every trial passes (or is not applicable, or an expected failure listed in
    /// --baseline), 1 on any fail, error, timeout, crash or stale baseline entry (and on warn
    /// with --strict), 2 on bad input (scenario parse errors, bad flags, an unknown baseline id).
    Run(RunArgs),
    /// List the trials (`<agent>@<version>/<scenario>::<check>`) without launching anything.
    List(SelectArgs),
    /// Re-run one case and print its full numbered wire log and every check's verdict.
    Replay {
        /// Case id, e.g. `opencode@1.18/edit-permission` (see `acp-harness list`).
        case_id: String,
        /// Expected failures (TOML; clients/README.md, "Baselines"), as for `run`: a listed
        /// failure of this case grades `expected` and does not make the exit status 1.
        #[arg(long, value_name = "FILE")]
        baseline: Option<PathBuf>,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Grade a recorded transcript file alone, without running anything.
    ///
    /// TRANSCRIPT_JSONL is a per-case transcript as the runner writes it
    /// (`<out>/transcripts/<case>.jsonl`), or one recorded elsewhere in that format. When a
    /// run.json lies in the folder above, the case's id, end, stderr tail and repro come from it;
    /// otherwise they are derived from the frames, and the output ends with what could not be
    /// known (e.g. the files on disk after the run). Every failure starts with the rule it
    /// breaks, `R43 (MUST) <requirement> <link>`.
    ///
    /// Example:  acp-harness grade acp-results/transcripts/opencode_1.18_edit-permission.jsonl
    ///
    /// Exits 0 when nothing fails, 1 on fail, timeout or crash (and warn with --strict), 2 if the
    /// file is missing or a line is not a transcript entry (the message names the line).
    Grade(acp_harness::offline::GradeArgs),
    /// List the rule catalogue: every rule a check enforces, its level, whom it binds, the
    /// requirement in one sentence and a public link.
    ///
    /// Rule ids (`R43`) are what failures, run.json (`trials[].rule`) and the report cite.
    /// `--json` prints the same as an array of {id, level, binds, requirement, link}.
    Rules(acp_harness::offline::RulesArgs),
    /// Install the real clients that client profiles name in `[install]` into the cache.
    ///
    /// npm packages go in with `npm install --prefix`, PyPI packages into a venv of their own,
    /// crates with `cargo install --root` (built from source: minutes). Each goes once into
    /// `<cache>/<package>/`, under a lock, where the real-client tests of `cargo test` and
    /// `run --client <profile>` find it; an installed client is not installed again. Progress
    /// goes to stderr, each client's program to stdout.
    ///
    /// Example:  acp-harness install                      (every client in clients/)
    ///           acp-harness install clients/acpx/acpx.toml
    ///
    /// Exits 0 when every client is ready, 1 when one could not be installed (its command and
    /// the end of its output are printed), 2 on a profile that cannot be read.
    Install(acp_harness::install_clients::InstallArgs),
    /// Make the HTML report, junit.xml and summary.md from run.json files (one per client).
    ///
    /// Writes DIR/index.html (clients × agent versions), a page per agent version and per case,
    /// DIR/junit.xml and DIR/summary.md (for $GITHUB_STEP_SUMMARY). The run.json files of
    /// `run --shard K/N` runs of one client (same --client, harness version and N) are merged
    /// into one run first, as if one runner had played every case. Exits 0 once written,
    /// whatever the grades (1 on failing trials with --exit-code); 2 if a run.json cannot be
    /// read or shards do not fit together.
    Report {
        /// run.json files, e.g. acp-results/run.json.
        #[arg(required = true, value_name = "RUN_JSON")]
        runs: Vec<PathBuf>,
        /// Where the report goes.
        #[arg(long, value_name = "DIR", default_value = "acp-report")]
        out: PathBuf,
        /// Exit 1 when a trial fails, as `run` does (for a CI job that reports merged shards).
        #[arg(long)]
        exit_code: bool,
    },
    /// Merge the run.json files of `run --shard K/N` runs into one run.json (with the
    /// transcripts copied next to it), for `diff` and for keeping as a baseline run.
    ///
    /// Example:  acp-harness merge shard-1/run.json shard-2/run.json shard-3/run.json --out all
    ///
    /// Shards fit together when they tested the same --client with the same harness version,
    /// N, --strict and --filter, and hold disjoint cases; otherwise the command says which file
    /// does not fit and exits 2. Slices missing from the set are named in config.shard (`1+3/4`).
    Merge {
        /// run.json files of the shards.
        #[arg(required = true, value_name = "RUN_JSON")]
        runs: Vec<PathBuf>,
        /// A new directory for the merged run.json and its transcripts.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Compare two runs: new failures, fixed, changed failure messages, cases added or removed,
    /// cases that got slower.
    ///
    /// Exits 1 if the new run has failures the old one did not (with --same-grades: if any grade
    /// differs), else 0; 2 on bad input.
    Diff(DiffArgs),
    /// Benchmark the suite against the floor that process spawn and pipes set on this machine,
    /// and show how its cost grows (docs/performance.md). Build with --release.
    ///
    /// Sections: `baseline` (the corpus against a minimal echo client, checks off), `suite`
    /// (the corpus against the client under test, graded, run.json and report written; rounds
    /// alternate with the baseline and their ratio is reported), `large` (one scenario of
    /// 10,000 tool_call_updates), `scale-cases` (10 … 10,000 cases), `scale-frames` (10² … 10⁵
    /// updates in one scenario). Prints a table, writes it as JSON to --out, progress on stderr.
    /// Exits 0 once written, whether or not the goals are met; 2 on bad input.
    Bench(acp_harness::bench::BenchArgs),
    /// The protocol-surface coverage table: every stable ACP v1 method and session/update
    /// variant against the scenarios that exercise it, or the sourced reason none does.
    Coverage(acp_harness::coverage::cli::CoverageArgs),
    /// Turn a permission_mapping fuzz input (crash artifact, corpus file or JSON seed) into a
    /// regression scenario.
    ///
    /// Writes SCENARIOS/regressions/fuzz/<ID>.toml (agent `regressions`, version `fuzz`), which
    /// `cargo test` then runs in the conformance suite, and prints the command that replays it
    /// (fuzz/README.md). Exits 2 if the input cannot be read or decoded.
    FuzzToScenario {
        /// The fuzz input, e.g. fuzz/artifacts/permission_mapping/crash-….
        artifact: PathBuf,
        /// Scenario id [default: `fuzz-` and a hash of the input].
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// A line for the scenario's header comment (where and against what it was found).
        #[arg(long, value_name = "TEXT")]
        note: Option<String>,
        /// Scenario directory [default: ./scenarios, else the workspace's].
        #[arg(long, value_name = "DIR")]
        scenarios: Option<PathBuf>,
    },
}

#[derive(Args)]
struct DiffArgs {
    /// The earlier run.json.
    old: PathBuf,
    /// The later run.json.
    new: PathBuf,
    /// Also write the diff as an HTML page to this file. Each changed trial links to its case
    /// page in both runs' reports, when they are on disk (see --old-report, --new-report).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// The earlier run's report, for the HTML page's links [default: the `report/` folder next
    /// to OLD, if it holds one].
    #[arg(long, value_name = "DIR", requires = "html")]
    old_report: Option<PathBuf>,
    /// The later run's report [default: the `report/` folder next to NEW, if it holds one].
    #[arg(long, value_name = "DIR", requires = "html")]
    new_report: Option<PathBuf>,
    /// A case is slower if it took this many percent longer…
    #[arg(long, value_name = "PERCENT", default_value_t = 50.0)]
    slower_pct: f64,
    /// …and at least this many milliseconds longer.
    #[arg(long, value_name = "MS", default_value_t = 250)]
    slower_ms: u64,
    /// Exit 1 on any trial whose grade differs between the runs, either way (a fix, a new
    /// failure, pass ↔ warn ↔ not_applicable): for comparing two runs of the same client and
    /// corpus, e.g. idle against a loaded machine (ci/load-proof).
    #[arg(long)]
    same_grades: bool,
    /// A client's baseline: with --same-grades, a trial that one of its `intermittent = true`
    /// entries names may change grade (the entry documents a race in the client itself, whose
    /// bug shows in some runs only). Such trials are still listed.
    #[arg(long, value_name = "BASELINE", requires = "same_grades")]
    intermittent: Option<PathBuf>,
}

#[derive(Args)]
struct SelectArgs {
    /// Scenario directory [default: ./scenarios, else the workspace's].
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
    /// Only trials whose name contains this text (repeatable; any match selects).
    #[arg(long, value_name = "TEXT")]
    filter: Vec<String>,
}

#[derive(Args)]
struct CommonArgs {
    /// Client under test: a JSON argv array (`'["./client","--adapter"]'`), a client profile
    /// path, `reference` (default) or `mutant:<name>`. Also read from ACP_HARNESS_CLIENT.
    #[arg(long, value_name = "CLIENT")]
    client: Option<String>,
    /// Scenario directory [default: ./scenarios, else the workspace's].
    #[arg(long, value_name = "DIR")]
    scenarios: Option<PathBuf>,
    /// How long one scenario step may wait for the client.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    step_timeout_ms: u64,
    /// How long one case may take in total.
    #[arg(long, value_name = "MS", default_value_t = 30000)]
    case_timeout_ms: u64,
    /// Longest line accepted from the client; a longer one is discarded unread (and fails
    /// `jsonrpc`), so a client cannot exhaust the harness's memory.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    max_frame_bytes: usize,
}

#[derive(Args)]
struct RunArgs {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::List(args) => list(args),
        Command::Replay {
            case_id,
            baseline,
            common,
        } => replay(&case_id, baseline.as_deref(), common),
        Command::Report {
            runs,
            out,
            exit_code,
        } => report(&runs, &out, exit_code),
        Command::Merge { runs, out } => merge(&runs, &out),
        Command::Grade(args) => acp_harness::offline::grade(&args),
        Command::Rules(args) => acp_harness::offline::rules(&args),
        Command::Install(args) => acp_harness::install_clients::command(&args),
        Command::Diff(args) => diff(args),
        Command::Bench(args) => acp_harness::bench::run(args),
        Command::Coverage(args) => acp_harness::coverage::cli::command(&args),
        Command::FuzzToScenario {
            artifact,
            id,
            note,
            scenarios,
        } => fuzz_to_scenario(
            &artifact,
            id.as_deref(),
            note.as_deref(),
            scenarios.as_deref(),
        ),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("acp-harness: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

fn config(common: &CommonArgs) -> Result<(RunConfig, ClientSpec)> {
    let scenarios = suite::scenarios_dir(common.scenarios.as_deref())?;
    let mut cfg = RunConfig::new(scenarios)?;
    cfg.step_timeout = Duration::from_millis(common.step_timeout_ms);
    cfg.case_timeout = Duration::from_millis(common.case_timeout_ms);
    cfg.max_frame = common.max_frame_bytes.max(1);
    let client = ClientSpec::resolve(common.client.as_deref())?;
    client.check_startable()?;
    Ok((cfg, client))
}

fn run(args: RunArgs) -> Result<ExitCode> {
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
    baseline.validate_for_suite(&cfg.scenarios_dir)?;
    Ok(Some(baseline))
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn list(args: SelectArgs) -> Result<ExitCode> {
    use std::io::Write;
    let dir = suite::scenarios_dir(args.scenarios.as_deref())?;
    let mut out = std::io::stdout().lock();
    for name in suite::trial_names(&dir, &args.filter)? {
        // A closed pipe (`acp-harness list | head`) ends the listing quietly.
        if writeln!(out, "{name}").is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn fuzz_to_scenario(
    artifact: &std::path::Path,
    id: Option<&str>,
    note: Option<&str>,
    scenarios: Option<&std::path::Path>,
) -> Result<ExitCode> {
    let dir = suite::scenarios_dir(scenarios)?;
    let regressions = dir.join(acp_harness::fuzz::scenario::AGENT);
    let path = acp_harness::fuzz::scenario::write_regression(artifact, &regressions, id, note)?;
    let id = path.file_stem().unwrap_or_default().to_string_lossy();
    acp_harness::outln!("wrote:  {}", path.display());
    acp_harness::outln!(
        "replay: acp-harness replay 'regressions@fuzz/{id}' --scenarios {}",
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn replay(
    case_id: &str,
    baseline: Option<&std::path::Path>,
    common: CommonArgs,
) -> Result<ExitCode> {
    let (cfg, client) = config(&common)?;
    let case = suite::find_case(&cfg.scenarios_dir, case_id)?;
    let baseline = baseline.map(Baseline::load).transpose()?;
    if let Some(b) = &baseline {
        b.validate_for_suite(&cfg.scenarios_dir)?;
    }
    let mut result = runtime()?.block_on(runner::run_case(&case, &client, &cfg));
    if let Some(b) = &baseline {
        b.apply_case(&result.record.meta.case_id, &mut result.trials);
    }
    acp_harness::outln!("{}", wire_log(&result.record.transcript));
    acp_harness::outln!("end: {:?}", result.record.end);
    if !result.record.stderr_tail.is_empty() {
        acp_harness::outln!(
            "client stderr (tail):\n{}",
            indent(&result.record.stderr_tail)
        );
    }
    let mut failing = false;
    for t in &result.trials {
        acp_harness::outln!("{:>15}  {}", t.grade.as_str(), t.check);
        if !t.message.is_empty() {
            acp_harness::outln!("{}", indent(&t.failure_text()));
        }
        failing |= t.grade.is_failing(false);
    }
    Ok(if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn report(runs: &[PathBuf], out: &std::path::Path, exit_code: bool) -> Result<ExitCode> {
    let loaded = merged_runs(runs)?;
    let written = acp_reports::write_report(&loaded, out)?;
    acp_harness::outln!("report:  {}", written.index.display());
    acp_harness::outln!("junit:   {}", written.junit.display());
    acp_harness::outln!("summary: {}", written.summary.display());
    acp_harness::outln!("{} failing trials", written.failing);
    Ok(if exit_code && written.failing > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The runs in `paths`, the shards of each run merged into one (saying so). A run that is not
/// merged keeps its cases on disk (the report reads them one at a time).
fn merged_runs(paths: &[PathBuf]) -> Result<Vec<acp_reports::LoadedRun>> {
    let loaded = acp_reports::open_runs(paths)?;
    let given = loaded.len();
    let merged = acp_reports::merge::merge_shards(loaded)?;
    for run in merged.iter().filter(|r| r.is_merged()) {
        let whole = run
            .run
            .config
            .shard
            .as_ref()
            .map_or_else(|| "every slice".to_owned(), |s| format!("slices {s} only"));
        acp_harness::outln!(
            "merged shards of {} ({whole}): {} cases",
            run.run.client.display_name(),
            run.case_count()
        );
    }
    if merged.len() < given {
        let n = merged.len();
        acp_harness::outln!("{given} run.json files, {}", counted(n, "run"));
    }
    Ok(merged)
}

fn merge(runs: &[PathBuf], out: &std::path::Path) -> Result<ExitCode> {
    let merged = merged_runs(runs)?;
    let count = merged.len();
    let Ok([run]) = <[_; 1]>::try_from(merged) else {
        anyhow::bail!(
            "these {} run.json files are {} runs, not the shards of one: shards share --client, harness version and N (see `acp-harness merge --help`)",
            runs.len(),
            count
        );
    };
    let path = acp_reports::merge::write_run(&run.into_memory()?, out)?;
    acp_harness::outln!("run.json: {}", path.display());
    Ok(ExitCode::SUCCESS)
}

fn diff(args: DiffArgs) -> Result<ExitCode> {
    if !(args.slower_pct.is_finite() && args.slower_pct >= 0.0) {
        anyhow::bail!("--slower-pct must be a number >= 0");
    }
    let old = acp_reports::load_run(&args.old)?;
    let new = acp_reports::load_run(&args.new)?;
    let thresholds = acp_reports::diff::Thresholds {
        slower_pct: args.slower_pct,
        slower_ms: args.slower_ms,
    };
    let mut d = acp_reports::diff::diff(&old, &new, thresholds);
    acp_harness::out!("{}", acp_reports::diff::text(&d));
    if let Some(path) = &args.html {
        let old_report = ReportPages::locate(&old, args.old_report.as_deref())?;
        let new_report = ReportPages::locate(&new, args.new_report.as_deref())?;
        let page_dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
            _ => PathBuf::from("."),
        };
        acp_reports::diff::link_reports(
            &mut d,
            old_report.as_ref(),
            new_report.as_ref(),
            &page_dir,
        );
        for (side, report, run) in [
            ("old", &old_report, &args.old),
            ("new", &new_report, &args.new),
        ] {
            if report.is_none() {
                acp_harness::outln!(
                    "note: no report next to the {side} run ({}): its trials are not linked (--{side}-report DIR names one)",
                    run.display()
                );
            }
        }
        let html = acp_reports::diff::html(&d)?;
        std::fs::write(path, html).with_context(|| format!("cannot write {}", path.display()))?;
        acp_harness::outln!("html: {}", path.display());
    }
    let intermittent = match &args.intermittent {
        Some(path) => Some(acp_harness::baseline::Baseline::load(path)?),
        None => None,
    };
    // Trials whose grade moved, but that an intermittent entry names: listed, not counted.
    let excused = |change: &acp_reports::diff::TrialChange| {
        intermittent.as_ref().is_some_and(|b| {
            change
                .trial
                .rsplit_once("::")
                .is_some_and(|(case, check)| b.intermittent(case, check))
        })
    };
    let moved: Vec<&acp_reports::diff::TrialChange> = d
        .new_failures
        .iter()
        .chain(&d.fixed)
        .chain(&d.regraded)
        .chain(d.changed.iter().filter(|c| c.old_grade != c.new_grade))
        .collect();
    for change in moved.iter().filter(|c| excused(c)) {
        acp_harness::outln!(
            "note: {} moved, as an intermittent entry of the baseline allows",
            change.trial
        );
    }
    let grades_moved = moved.iter().any(|c| !excused(c));
    let new_failures = d.new_failures.iter().filter(|c| !excused(c)).count();
    Ok(
        if new_failures == 0 && !(args.same_grades && grades_moved) {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        },
    )
}
