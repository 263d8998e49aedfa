//! `acp-harness`: run the conformance suite against an ACP client.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use acp_harness::client_spec::ClientSpec;
use acp_harness::output::{is_failing, progress_line, summary_table, wire_log};
use acp_harness::run_json::{self, RunJson};
use acp_harness::runner::{self, RunConfig};
use acp_harness::suite;
use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};

/// Conformance and fuzz test harness for ACP (Agent Client Protocol) clients.
///
/// Fake agents replay traffic shaped like real agents (opencode, codex-acp, qwen-code,
/// claude-agent-acp) against your client, and checks grade what it sent on the wire and, through
/// its control-plane adapter, what it showed the user.
///
/// Quick start:  acp-harness run                     (the bundled reference client)
///               acp-harness run --client '["./my-client","--acp-harness-adapter"]'
///               acp-harness replay 'opencode@1.18/edit-permission' --client …
#[derive(Parser)]
#[command(name = "acp-harness", version, about, long_about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the suite: a line per case as it finishes, a summary table, and run.json in --out.
    ///
    /// Exits 0 when every trial passes (or is not applicable), 1 on any fail, error, timeout or
    /// crash (and on warn with --strict), 2 on bad input (scenario parse errors, bad flags).
    Run(RunArgs),
    /// List the trials (`<agent>@<version>/<scenario>::<check>`) without launching anything.
    List(SelectArgs),
    /// Re-run one case and print its full numbered wire log and every check's verdict.
    Replay {
        /// Case id, e.g. `opencode@1.18/edit-permission` (see `acp-harness list`).
        case_id: String,
        #[command(flatten)]
        common: CommonArgs,
    },
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::List(args) => list(args),
        Command::Replay { case_id, common } => replay(&case_id, common),
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
    let client = ClientSpec::resolve(common.client.as_deref())?;
    Ok((cfg, client))
}

fn run(args: RunArgs) -> Result<ExitCode> {
    let (mut cfg, client) = config(&args.common)?;
    if let Some(jobs) = args.jobs {
        cfg.jobs = jobs.max(1);
    }
    let cases = suite::select_cases(&cfg.scenarios_dir, &args.filter)?;
    if cases.is_empty() {
        anyhow::bail!("no case matches the filter {:?}", args.filter);
    }
    // Fail on an unwritable --out before running anything.
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create --out directory {}", args.out.display()))?;
    eprintln!(
        "acp-harness: {} cases against {} ({} at a time)",
        cases.len(),
        client.name,
        cfg.jobs
    );
    let started = Instant::now();
    let started_unix_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let filter = args.filter.clone();
    let mut results = runtime()?.block_on(runner::run_cases(cases, &client, &cfg, move |r| {
        let mut r = r.clone();
        suite::retain_selected(&mut r, &filter);
        println!("{}", progress_line(&r));
    }));
    for r in &mut results {
        suite::retain_selected(r, &args.filter);
    }
    println!("\n{}", summary_table(&results));

    let run = RunJson {
        schema: run_json::RUN_SCHEMA.into(),
        harness: run_json::ToolInfo {
            name: "acp-harness".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        acp_schema: acp_harness::acp_schema::SCHEMA_VERSION.into(),
        client: run_json::ClientInfo {
            name: client.name.clone(),
            source: client.source.clone(),
            argv: client.argv.clone(),
            reported: None,
        },
        config: run_json::RunConfigInfo {
            step_timeout_ms: cfg.step_timeout.as_millis() as u64,
            case_timeout_ms: cfg.case_timeout.as_millis() as u64,
            jobs: cfg.jobs,
            strict: args.strict,
            filter: (!args.filter.is_empty()).then(|| args.filter.join(" | ")),
            scenarios_dir: cfg.scenarios_dir.display().to_string(),
        },
        started_unix_ms,
        duration_ms: started.elapsed().as_millis() as u64,
        summary: run_json::summarize(&results),
        cases: results.iter().map(run_json::case_json).collect(),
    };
    run_json::write_run(&args.out, &run, &results)?;

    let failing: Vec<String> = results
        .iter()
        .flat_map(|r| {
            r.trials
                .iter()
                .filter(|t| is_failing(t.grade, args.strict))
                .map(move |t| {
                    format!(
                        "{}::{} [{}]\n{}\n",
                        r.record.meta.case_id,
                        t.check,
                        t.grade.as_str(),
                        indent(&t.message)
                    )
                })
        })
        .collect();
    for f in &failing {
        println!("{f}");
    }
    println!("results: {}", args.out.join("run.json").display());
    if failing.is_empty() {
        println!("all trials passed");
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "{} failing trials; re-run one with the `repro:` line above",
            failing.len()
        );
        Ok(ExitCode::from(1))
    }
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn list(args: SelectArgs) -> Result<ExitCode> {
    let dir = suite::scenarios_dir(args.scenarios.as_deref())?;
    for name in suite::trial_names(&dir, &args.filter)? {
        println!("{name}");
    }
    Ok(ExitCode::SUCCESS)
}

fn replay(case_id: &str, common: CommonArgs) -> Result<ExitCode> {
    let (cfg, client) = config(&common)?;
    let case = suite::find_case(&cfg.scenarios_dir, case_id)?;
    let result = runtime()?.block_on(runner::run_case(&case, &client, &cfg));
    println!("{}", wire_log(&result.record.transcript));
    println!("end: {:?}", result.record.end);
    if !result.record.stderr_tail.is_empty() {
        println!(
            "client stderr (tail):\n{}",
            indent(&result.record.stderr_tail)
        );
    }
    let mut failing = false;
    for t in &result.trials {
        println!("{:>15}  {}", t.grade.as_str(), t.check);
        if !t.message.is_empty() {
            println!("{}", indent(&t.message));
        }
        failing |= is_failing(t.grade, false);
    }
    Ok(if failing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
