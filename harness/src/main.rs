//! `acp-harness`: run the conformance suite against an ACP client.
//!
//! This file is the command line's top level: the subcommands with their help texts, the
//! dispatch, and the exit status of an error (2). Each subcommand's flags and body are in
//! [`cmd`], whose module doc maps subcommand to module.

mod cmd;

use std::process::ExitCode;

use acp_harness::{bench, coverage, install_clients, offline};
use clap::{Parser, Subcommand};

use cmd::{diff, fuzz_to_scenario, list, merge, replay, report, run};

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
    Run(run::RunArgs),
    /// List the trials (`<agent>@<version>/<scenario>::<check>`) without launching anything.
    List(list::ListArgs),
    /// Re-run one case and print its full numbered wire log and every check's verdict.
    Replay(replay::ReplayArgs),
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
    Grade(offline::GradeArgs),
    /// List the rule catalogue: every rule a check enforces, its level, whom it binds, the
    /// requirement in one sentence and a public link.
    ///
    /// Rule ids (`R43`) are what failures, run.json (`trials[].rule`) and the report cite.
    /// `--json` prints the same as an array of {id, level, binds, requirement, link}.
    Rules(offline::RulesArgs),
    /// Install the real clients that client profiles name in `[install]` into the cache.
    ///
    /// npm packages go in with `npm install --prefix`, PyPI packages into a venv of their own,
    /// crates with `cargo install --root` (built from source: minutes). Each goes once into
    /// `<cache>/<package>/`, under a lock, where the real-client tests of `cargo test` and
    /// `run --client <profile>` find it; an installed client is not installed again. The
    /// builds go one after the other beside the downloads. Progress goes to stderr, each
    /// client's program to stdout.
    ///
    /// Every client in clients/:  acp-harness install
    ///
    /// One client:  acp-harness install clients/acpx/acpx.toml
    ///
    /// Exits 0 when every client is ready, 1 when one could not be installed (its command and
    /// the end of its output are printed), 2 on a profile that cannot be read.
    Install(install_clients::InstallArgs),
    /// Make the HTML report, junit.xml and summary.md from run.json files (one per client).
    ///
    /// Writes DIR/index.html (clients × agent versions), a page per agent version and per case,
    /// DIR/junit.xml and DIR/summary.md (for $GITHUB_STEP_SUMMARY). The run.json files of
    /// `run --shard K/N` runs of one client (same --client, harness version and N) are merged
    /// into one run first, as if one runner had played every case. Exits 0 once written,
    /// whatever the grades (1 on failing trials with --exit-code); 2 if a run.json cannot be
    /// read or shards do not fit together.
    Report(report::ReportArgs),
    /// Merge the run.json files of `run --shard K/N` runs into one run.json (with the
    /// transcripts copied next to it), for `diff` and for keeping as a baseline run.
    ///
    /// Example:  acp-harness merge shard-1/run.json shard-2/run.json shard-3/run.json --out all
    ///
    /// Shards fit together when they tested the same --client with the same harness version,
    /// N, --strict and --filter, and hold disjoint cases; otherwise the command says which file
    /// does not fit and exits 2. Slices missing from the set are named in config.shard (`1+3/4`).
    Merge(merge::MergeArgs),
    /// Compare two runs: new failures, fixed, changed failure messages, cases added or removed,
    /// cases that got slower.
    ///
    /// Exits 1 if the new run has failures the old one did not (with --same-grades: if any grade
    /// differs), else 0; 2 on bad input.
    Diff(diff::DiffArgs),
    /// Benchmark the suite against the floor that process spawn and pipes set on this machine,
    /// and show how its cost grows (docs/performance.md). Build with --release.
    ///
    /// Sections: `baseline` (the corpus against a minimal echo client, checks off), `suite`
    /// (the corpus against the client under test, graded, run.json and report written; rounds
    /// alternate with the baseline and their ratio is reported), `large` (one scenario of
    /// 10,000 tool_call_updates), `scale-cases` (10 … 10,000 cases), `scale-frames` (10² … 10⁵
    /// updates in one scenario). Prints a table, writes it as JSON to --out, progress on stderr.
    /// Exits 0 once written, whether or not the goals are met; 2 on bad input.
    Bench(bench::BenchArgs),
    /// The protocol-surface coverage table: every stable ACP v1 method and session/update
    /// variant against the scenarios that exercise it, or the sourced reason none does.
    Coverage(coverage::cli::CoverageArgs),
    /// Turn a permission_mapping fuzz input (crash artifact, corpus file or JSON seed) into a
    /// regression scenario.
    ///
    /// Writes SCENARIOS/regressions/fuzz/<ID>.toml (agent `regressions`, version `fuzz`), which
    /// `cargo test` then runs in the conformance suite, and prints the command that replays it
    /// (fuzz/README.md). Exits 2 if the input cannot be read or decoded.
    FuzzToScenario(fuzz_to_scenario::FuzzToScenarioArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::command(args),
        Command::List(args) => list::command(args),
        Command::Replay(args) => replay::command(args),
        Command::Report(args) => report::command(args),
        Command::Merge(args) => merge::command(args),
        Command::Grade(args) => offline::grade(&args),
        Command::Rules(args) => offline::rules(&args),
        Command::Install(args) => install_clients::command(&args),
        Command::Diff(args) => diff::command(args),
        Command::Bench(args) => bench::run(args),
        Command::Coverage(args) => coverage::cli::command(&args),
        Command::FuzzToScenario(args) => fuzz_to_scenario::command(args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("acp-harness: {err:#}");
            ExitCode::from(2)
        }
    }
}
