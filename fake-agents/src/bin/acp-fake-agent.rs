//! `acp-fake-agent`: a scriptable fake ACP agent. See `--help`.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use acp_fake_agents::{relay, standalone};
use clap::{ArgGroup, Parser};

const ABOUT: &str =
    "A scriptable fake ACP agent (Agent Client Protocol over stdio), for testing ACP clients.";

const LONG_ABOUT: &str = "\
A scriptable fake ACP agent (Agent Client Protocol over stdio), for testing ACP clients.

It runs in one of two modes:

  --connect <SOCKET>   Relay mode. acp-harness hands this command to the client under test as
                       its agent. It copies stdin to the harness's Unix socket and the socket to
                       stdout, byte for byte, so the scenario runs inside the harness, which sees
                       and times every frame. You do not normally type this yourself.

  --scenario <FILE>    Standalone mode. Plays one scenario file (scenarios/README.md) on this
                       process's stdin/stdout. Register this command as an agent in your editor
                       (Zed, …) and you are the user: the steps you must do (open a session,
                       prompt, click an option, press Stop) are printed to stderr. A scenario
                       that does not parse is reported as file:line:col and exits with 2.

stdout is the ACP wire in both modes; all messages go to stderr.";

const AFTER_HELP: &str = "\
Examples:
  acp-fake-agent --scenario scenarios/opencode/1.18/edit-permission.toml \\
                 --transcript /tmp/edit.jsonl --cwd ~/src/myproject
  ACP_HARNESS_AGENT='[\"acp-fake-agent\",\"--connect\",\"/tmp/h/agent.sock\"]'   (set by acp-harness)

Exit status: 0 scenario completed (or relay closed cleanly); 1 incomplete, not applicable, or the
socket could not be reached; 2 the scenario (or the command line) is invalid.";

#[derive(Parser)]
#[command(
    name = "acp-fake-agent",
    version,
    about = ABOUT,
    long_about = LONG_ABOUT,
    after_help = AFTER_HELP,
    group(ArgGroup::new("mode").required(true).args(["connect", "scenario"]))
)]
struct Cli {
    /// Relay mode: connect to this Unix socket and copy stdin → socket, socket → stdout.
    #[arg(long, value_name = "SOCKET")]
    connect: Option<PathBuf>,

    /// Standalone mode: play this scenario file on stdin/stdout.
    #[arg(long, value_name = "FILE")]
    scenario: Option<PathBuf>,

    /// Standalone: write every frame (both directions, timestamps, notes) here as JSON Lines
    /// when the scenario ends and again when the client disconnects.
    #[arg(long, value_name = "FILE.jsonl", requires = "scenario")]
    transcript: Option<PathBuf>,

    /// Standalone: how long a step waits for the client [default: 600000, ten minutes, because
    /// a person is clicking]. A scenario's shorter `timeout_ms` does not apply here.
    #[arg(long, value_name = "N", requires = "scenario")]
    step_timeout_ms: Option<u64>,

    /// Standalone: the directory `${cwd}` stands for [default: the current directory]. Use the
    /// project you open in the client. `${outside}` is always a fresh temporary directory.
    #[arg(long, value_name = "DIR", requires = "scenario")]
    cwd: Option<PathBuf>,
}

fn main() {
    let cli = Cli::parse();
    let code = match (cli.connect, cli.scenario) {
        (Some(socket), _) => match relay::relay(&socket) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("acp-fake-agent: {e}");
                1
            }
        },
        (None, Some(scenario)) => {
            let opts = standalone::Options {
                scenario,
                transcript: cli.transcript,
                step_timeout: cli
                    .step_timeout_ms
                    .map_or(standalone::DEFAULT_STEP_TIMEOUT, Duration::from_millis),
                cwd: cli.cwd,
            };
            match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => {
                    let code = rt.block_on(standalone::run(opts));
                    // Dropping the runtime would wait for its blocking stdin read forever.
                    rt.shutdown_background();
                    code
                }
                Err(e) => {
                    eprintln!("acp-fake-agent: cannot start the async runtime: {e}");
                    1
                }
            }
        }
        // clap's group makes one of the two required.
        (None, None) => 2,
    };
    let _ = std::io::stdout().flush();
    // Exit now: a blocked stdin read (in the relay, or in the runtime's blocking pool) must not
    // keep the process alive after the conversation is over.
    std::process::exit(code);
}
