//! `acp-reference-client`: the reference ACP v1 client of acp-harness, correct by construction,
//! with its control-plane adapter built in, and the field-bug mutants used by the harness's
//! self-tests (`--mutant <name>`).
//!
//! It spawns the agent named by `ACP_HARNESS_AGENT` (a JSON array argv), speaks raw
//! newline-delimited JSON-RPC 2.0 with it, and speaks the control protocol v1
//! (`harness/CONTROL.md`) on its own stdin/stdout. Diagnostics go to stderr.
//!
//! The modules live in the library (`src/lib.rs`), one file per concern; this file is the
//! command line.

use std::process::ExitCode;

/// Diagnostics for people: stderr, never stdout (stdout is the control plane).
macro_rules! log {
    ($($arg:tt)*) => {
        eprintln!("[acp-reference-client] {}", format_args!($($arg)*))
    };
}

use acp_reference_client::decide::Policy;
use acp_reference_client::{client, control, mutation};

use mutation::Mutant;

const AGENT_ENV: &str = "ACP_HARNESS_AGENT";

fn usage() -> String {
    let mut text = format!(
        "acp-reference-client {version}: the reference ACP client of acp-harness, with its \
         control-plane adapter (harness/CONTROL.md) on stdin/stdout.

Usage: acp-reference-client [--mutant <name>] [--policy <policy>]

The agent command is read from {AGENT_ENV}, a JSON array of strings (argv).

Options:
  --mutant <name>  behave like a known-buggy client (for the harness's self-tests)
  --policy <p>     approve by itself what this policy allows, and declare it in hello:
                   read-only (read, search inside the workspace), workspace-write (also
                   edit, delete, move inside it), approve-all (every kind, anywhere), or a
                   JSON object {{\"approves\":[…],\"scope\":\"workspace\",\"allowAlways\":false}}.
                   Without it the client asks the user for every request, except for
                   kinds the user allowed with an allow_always option in that session
  -h, --help       print this help
  -V, --version    print the version

Mutants (each must fail exactly the named checks across the scenario corpus):
",
        version = env!("CARGO_PKG_VERSION")
    );
    for m in Mutant::ALL {
        text.push_str(&format!(
            "  {:<26} [{}] {}\n",
            m.name(),
            m.checks().join(", "),
            m.bug()
        ));
    }
    text
}

enum Args {
    Run(Option<Mutant>, Option<Policy>),
    Help,
    Version,
}

fn parse_args(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut mutant = None;
    let mut policy = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_owned(), Some(value.to_owned()))
            }
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Args::Help),
            "-V" | "--version" => return Ok(Args::Version),
            "--mutant" | "--policy" => {
                let value = match inline {
                    Some(value) => value,
                    None => args.next().ok_or_else(|| format!("{flag} needs a value"))?,
                };
                if flag == "--mutant" {
                    if mutant.is_some() {
                        return Err("--mutant given twice".into());
                    }
                    mutant = Some(value.parse::<Mutant>()?);
                } else {
                    if policy.is_some() {
                        return Err("--policy given twice".into());
                    }
                    policy = Some(Policy::parse(&value)?);
                }
            }
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    Ok(Args::Run(mutant, policy))
}

/// The agent argv from `ACP_HARNESS_AGENT`.
fn agent_argv() -> Result<Vec<String>, String> {
    let raw = std::env::var(AGENT_ENV).map_err(|_| {
        format!("{AGENT_ENV} is not set: it must hold the agent command as a JSON array of strings")
    })?;
    match serde_json::from_str::<Vec<String>>(&raw) {
        Ok(argv) if !argv.is_empty() => Ok(argv),
        Ok(_) => Err(format!("{AGENT_ENV} is an empty array: no agent command")),
        Err(e) => Err(format!(
            "{AGENT_ENV} must be a JSON array of strings, got {raw:?}: {e}"
        )),
    }
}

fn main() -> ExitCode {
    let (mutant, policy) = match parse_args(std::env::args().skip(1)) {
        Ok(Args::Run(mutant, policy)) => (mutant, policy),
        Ok(Args::Help) => {
            print!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Ok(Args::Version) => {
            println!("acp-reference-client {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("acp-reference-client: {message}\n\n{}", usage());
            return ExitCode::from(2);
        }
    };
    let argv = match agent_argv() {
        Ok(argv) => argv,
        Err(message) => {
            // Keep the control protocol's order (hello first), then say what is wrong.
            let declared = policy.clone().or_else(|| Policy::for_mutant(mutant));
            control::emit(&control::hello(
                client::NAME,
                &client::version(mutant),
                declared.as_ref(),
            ));
            log!("{message}");
            control::emit(&control::Event::Error {
                seq: None,
                message,
                observed: None,
            });
            return ExitCode::from(1);
        }
    };
    let client = client::Client::new(argv, mutant).with_policy(policy);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            log!("cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(control::run(client)) {
        Ok(()) => 0,
        Err(e) => {
            log!("{e:#}");
            1
        }
    };
    // Exit now: the stdin reader thread may still be blocked in read(2).
    std::process::exit(code)
}
