//! `acp-chaos-client`: hostile clients for acp-harness's robustness tests (docs/architecture.md §6,
//! "chaos clients"). Each `--mode` misbehaves in one way a real client can: it dies, hangs, floods,
//! writes garbage, answers with the wrong ids, or breaks the control protocol. The harness must
//! grade each with a specific message within its timeout, kill everything it started, and never
//! panic (`harness/tests/chaos.rs`).
//!
//! Most modes are a small but working control-plane adapter (`mini.rs`) with one deviation; the
//! rest never get that far (`early.rs`). Diagnostics go to stderr.
//!
//! One mode is not hostile: `echo` is the same adapter with no deviation at all, advertising the
//! reference client's capabilities and answering every agent request at once, with no model
//! behind it. `acp-harness bench` runs the corpus against it as the floor that process spawn and
//! pipes set on the machine (docs/performance.md).

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
}

fn usage() -> String {
    let names: Vec<&str> = Mode::ALL.iter().map(|(n, _)| *n).collect();
    format!(
        "Usage: acp-chaos-client --mode <MODE>\n\nModes: {}\n\nThe agent command is read from \
         ACP_HARNESS_AGENT (a JSON array), as the reference client does.",
        names.join(", ")
    )
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.as_slice() {
        [flag, name] if flag == "--mode" => Mode::parse(name),
        [flag] if flag == "--help" || flag == "-h" => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        _ => None,
    };
    let Some(mode) = mode else {
        eprintln!("acp-chaos-client: bad arguments {args:?}\n\n{}", usage());
        return ExitCode::from(2);
    };
    match mode {
        Mode::ExitAtOnce
        | Mode::CloseStdout
        | Mode::Grandchild
        | Mode::GrandchildOwnGroup
        | Mode::BadControlJson
        | Mode::BadControlVersion => early::run(mode),
        _ => mini::run(mode),
    }
}
