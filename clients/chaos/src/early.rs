//! Modes that break before any ACP traffic: they die at once, break the control protocol, or
//! leave processes behind that keep the client's pipes open.

use std::io::{BufRead, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode};
use std::time::Duration;

use acp_vocab::control::{ClientInfo, CommandType, Event, Hello};

use crate::Mode;

/// The control protocol hello, as a well-behaved adapter says it (`version` 1; a broken
/// adapter says another).
pub fn hello(version: i64) -> Event {
    let mut hello = Hello::new(
        ClientInfo {
            name: "acp-chaos-client".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        },
        CommandType::BASIC.to_vec(),
    );
    hello.version = version;
    Event::Hello(hello)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    // A closed pipe is what some modes are about; nothing to report then.
    let _ = writeln!(out, "{line}").and_then(|()| out.flush());
}

/// Reads stdin until EOF (the harness closes it at shutdown), so the client lives as long as the
/// harness lets it.
fn drain_stdin() {
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        if line.is_err() {
            break;
        }
    }
}

/// A grandchild that ignores the polite signals and sleeps with our stdout/stderr inherited.
fn spawn_sleeper(own_group: bool) -> std::io::Result<()> {
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "trap '' TERM HUP INT; sleep 600"]);
    if own_group {
        cmd.process_group(0);
    }
    // Not waited for: it must outlive us.
    cmd.spawn().map(drop)
}

pub fn run(mode: Mode) -> ExitCode {
    match mode {
        Mode::ExitAtOnce => {
            eprintln!("acp-chaos-client: exiting before reading anything");
            ExitCode::from(3)
        }
        Mode::BadControlJson => {
            say(r#"{"type":"hello","protocol":"acp-harness-control","version":1,"#);
            drain_stdin();
            ExitCode::SUCCESS
        }
        Mode::BadControlVersion => {
            say(&hello(2).to_line());
            drain_stdin();
            ExitCode::SUCCESS
        }
        Mode::CloseStdout => {
            say(&hello(1).to_line());
            // Close fd 1 for real (not just our handle on it) and stay alive.
            // SAFETY: nothing else in this process uses fd 1 after this point.
            drop(unsafe { std::fs::File::from_raw_fd(1) });
            eprintln!("acp-chaos-client: stdout closed; staying alive");
            std::thread::sleep(Duration::from_secs(600));
            ExitCode::SUCCESS
        }
        Mode::Grandchild | Mode::GrandchildOwnGroup => {
            if let Err(e) = spawn_sleeper(mode == Mode::GrandchildOwnGroup) {
                eprintln!("acp-chaos-client: cannot start the grandchild: {e}");
                return ExitCode::from(1);
            }
            eprintln!("acp-chaos-client: left a grandchild holding the pipes; exiting");
            ExitCode::from(4)
        }
        _ => ExitCode::from(2),
    }
}
