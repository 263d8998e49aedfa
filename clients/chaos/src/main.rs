//! `acp-chaos-client`: hostile clients for acp-harness's robustness tests (docs/architecture.md §6,
//! "chaos clients"). Each `--mode` misbehaves in one way a real client can: it dies, hangs, floods,
//! writes garbage, answers with the wrong ids, or breaks the control protocol. The harness must
//! grade each with a specific message within its timeout, kill everything it started, and never
//! panic (`harness/tests/chaos.rs`).
//!
//! Most modes are a small but working control-plane adapter (`mini/`) with one deviation; the
//! rest never get that far (`early.rs`). Diagnostics go to stderr.
//!
//! One mode is not hostile: `echo` is the same adapter with no deviation at all, advertising the
//! reference client's capabilities and answering every agent request at once, with no model
//! behind it. `acp-harness bench` runs the corpus against it as the floor that process spawn and
//! pipes set on the machine (docs/performance.md).
//!
//! With `--prompt` the client runs **wire only**, as a client without an adapter does (a client
//! profile with `control = "none"`): no hello, no control commands; it opens one session in
//! `--cwd`, sends the prompt, answers each permission request by its own policy (the first
//! `allow_once` option) and exits 0 when the turn ends. The modes that break the wire or the
//! process (dying, hanging, flooding, garbage, bad ids, leftovers) misbehave the same way; the
//! modes about the control plane itself have no wire-only form.

mod early;
mod mini;
mod terminal;

use std::process::ExitCode;

/// What the client does wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Not hostile: the minimal working client, the benchmark's baseline. Advertises
    /// `fs.readTextFile`/`fs.writeTextFile` like the reference client, so the same scenarios
    /// run, and answers every agent request but a permission request at once with an empty
    /// result (`{"content":""}` for a read); permission requests are shown and answered as the
    /// harness's user chooses, because the scenarios drive that choice.
    Echo,
    /// Exits with code 3 before reading anything.
    ExitAtOnce,
    /// Works until the agent asks for permission, then aborts (SIGABRT).
    AbortMidTurn,
    /// Works until the agent asks for permission, then dies of SIGSEGV.
    SegvMidTurn,
    /// Never shows or answers a permission request.
    NeverAnswer,
    /// Reads the first control command, then never reads its stdin again.
    StopReadingStdin,
    /// Stops reading the agent's stdout once the turn has started.
    StopReadingAgent,
    /// Writes lines that are not JSON to the agent.
    Garbage,
    /// Writes one 50 MB line to the agent.
    GiantLine,
    /// Sends 100,000 notifications to the agent.
    Flood,
    /// Answers a permission request with an id it never received, then twice with the right one.
    BadIds,
    /// Says hello, then closes its stdout and stays alive.
    CloseStdout,
    /// Starts a grandchild that keeps the pipes open and ignores SIGTERM, then exits.
    Grandchild,
    /// Like `Grandchild`, but the grandchild runs in its own process group.
    GrandchildOwnGroup,
    /// A hello line that is not JSON.
    BadControlJson,
    /// A hello for control protocol version 2.
    BadControlVersion,
    /// Advertises `terminal`; `terminal/output` returns 4 MiB whatever the limit (terminal.rs).
    TerminalHugeOutput,
    /// Advertises `terminal`; `terminal/output` is a line with bytes that are not UTF-8.
    TerminalNonUtf8Output,
    /// Advertises `terminal`; never answers `terminal/wait_for_exit`.
    TerminalNeverExits,
    /// Advertises `terminal`; runs the command out of reach of the case's kills and never kills
    /// it, not even on release.
    TerminalLeak,
}

impl Mode {
    const ALL: [(&'static str, Mode); 20] = [
        ("echo", Mode::Echo),
        ("exit-at-once", Mode::ExitAtOnce),
        ("abort-mid-turn", Mode::AbortMidTurn),
        ("segv-mid-turn", Mode::SegvMidTurn),
        ("never-answer", Mode::NeverAnswer),
        ("stop-reading-stdin", Mode::StopReadingStdin),
        ("stop-reading-agent", Mode::StopReadingAgent),
        ("garbage", Mode::Garbage),
        ("giant-line", Mode::GiantLine),
        ("flood", Mode::Flood),
        ("bad-ids", Mode::BadIds),
        ("close-stdout", Mode::CloseStdout),
        ("grandchild", Mode::Grandchild),
        ("grandchild-own-group", Mode::GrandchildOwnGroup),
        ("bad-control-json", Mode::BadControlJson),
        ("bad-control-version", Mode::BadControlVersion),
        ("terminal-huge-output", Mode::TerminalHugeOutput),
        ("terminal-non-utf8-output", Mode::TerminalNonUtf8Output),
        ("terminal-never-exits", Mode::TerminalNeverExits),
        ("terminal-leak", Mode::TerminalLeak),
    ];

    fn parse(name: &str) -> Option<Mode> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// Modes whose misbehaviour is on the control plane: without an adapter there is nothing
    /// to break.
    fn adapter_only(self) -> bool {
        matches!(
            self,
            Mode::StopReadingStdin
                | Mode::CloseStdout
                | Mode::BadControlJson
                | Mode::BadControlVersion
        )
    }
}

/// A client driven without an adapter (`--prompt`): what it was launched with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireOnly {
    pub prompt: String,
    /// The session's cwd.
    pub cwd: String,
    /// The agent command (after `--`); empty: read from ACP_HARNESS_AGENT.
    pub agent: Vec<String>,
}

/// What the command line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Args {
    Help,
    Run(Mode, Option<WireOnly>),
}

fn usage() -> String {
    let names: Vec<&str> = Mode::ALL.iter().map(|(n, _)| *n).collect();
    format!(
        "Usage: acp-chaos-client --mode <MODE>\n       \
         acp-chaos-client --mode <MODE> --prompt <TEXT> [--cwd <DIR>] [-- <AGENT ARGV>...]\n\n\
         Modes: {}\n\n\
         The first form is a client with a control-plane adapter on stdin/stdout. The second is \
         wire only: one session in DIR (default: the current directory), one prompt, permission \
         requests answered by the client's own policy, exit 0 when the turn ends. The agent \
         command is the argv after `--`, else ACP_HARNESS_AGENT (a JSON array), as the reference \
         client reads it.",
        names.join(", ")
    )
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    if matches!(args, [flag] if flag == "--help" || flag == "-h") {
        return Ok(Args::Help);
    }
    let (options, agent) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], args[i + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let (mut mode, mut prompt, mut cwd) = (None, None, None);
    let mut rest = options.iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--mode" => mode = Some(Mode::parse(value).ok_or(format!("no mode {value:?}"))?),
            "--prompt" => prompt = Some(value.clone()),
            "--cwd" => cwd = Some(value.clone()),
            _ => return Err(format!("unknown option {flag:?}")),
        }
    }
    let mode = mode.ok_or("--mode is required")?;
    let wire = match prompt {
        Some(prompt) => Some(WireOnly {
            prompt,
            cwd: match cwd {
                Some(cwd) => cwd,
                None => std::env::current_dir()
                    .map_err(|e| format!("no current directory: {e}"))?
                    .to_string_lossy()
                    .into_owned(),
            },
            agent,
        }),
        None if cwd.is_some() || !agent.is_empty() => {
            return Err("--cwd and an agent argv go with --prompt (wire only)".into());
        }
        None => None,
    };
    if wire.is_some() && mode.adapter_only() {
        return Err(
            "this mode breaks the control plane; it has no wire-only form (--prompt)".into(),
        );
    }
    Ok(Args::Run(mode, wire))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, wire) = match parse_args(&args) {
        Ok(Args::Help) => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        Ok(Args::Run(mode, wire)) => (mode, wire),
        Err(why) => {
            eprintln!(
                "acp-chaos-client: bad arguments {args:?}: {why}\n\n{}",
                usage()
            );
            return ExitCode::from(2);
        }
    };
    match mode {
        Mode::ExitAtOnce
        | Mode::CloseStdout
        | Mode::Grandchild
        | Mode::GrandchildOwnGroup
        | Mode::BadControlJson
        | Mode::BadControlVersion => early::run(mode),
        _ => mini::run(mode, wire),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        parse_args(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn an_adapter_client_takes_only_its_mode() {
        assert_eq!(
            parse(&["--mode", "flood"]),
            Ok(Args::Run(Mode::Flood, None))
        );
        assert!(parse(&["--mode", "nope"]).is_err());
        assert!(parse(&["--mode"]).is_err());
        assert!(parse(&["--mode", "flood", "--cwd", "/w"]).is_err());
    }

    #[test]
    fn a_wire_only_client_takes_its_prompt_cwd_and_agent() {
        let parsed = parse(&[
            "--mode",
            "abort-mid-turn",
            "--prompt",
            "go",
            "--cwd",
            "/w",
            "--",
            "agent",
            "--x",
        ]);
        let wire = WireOnly {
            prompt: "go".into(),
            cwd: "/w".into(),
            agent: vec!["agent".into(), "--x".into()],
        };
        assert_eq!(parsed, Ok(Args::Run(Mode::AbortMidTurn, Some(wire))));
        // Modes about the control plane have no wire-only form.
        assert!(parse(&["--mode", "bad-control-json", "--prompt", "go"]).is_err());
    }
}
