//! The deviations the `Mode` asks for that are not a different answer but a different act:
//! dying mid-turn, ignoring a request, abusing the wire once the connection is up.

use std::io::{BufWriter, Write};

use serde_json::json;

use super::{Mini, log};
use crate::Mode;

impl Mini {
    /// What the mode does with a permission request instead of asking: dies, or (true) ignores
    /// it; false to ask as usual.
    pub(super) fn misbehave_on_permission(&self) -> bool {
        match self.mode {
            Mode::AbortMidTurn => {
                log("aborting in the middle of the turn");
                std::process::abort();
            }
            Mode::SegvMidTurn => {
                log("dying of SIGSEGV in the middle of the turn");
                segfault();
            }
            Mode::NeverAnswer => {
                log("ignoring the permission request");
                true
            }
            _ => false,
        }
    }

    /// The wire-level misbehaviours, done once the connection is up.
    pub(super) fn misbehave_after_initialize(&mut self) {
        match self.mode {
            Mode::Garbage => {
                log("writing garbage to the agent");
                self.write(b"Loading config...\n\x1b[32mready\x1b[0m\n");
            }
            Mode::GiantLine => {
                log("writing one 50 MB line to the agent");
                let chunk = vec![b'x'; 1 << 20];
                for _ in 0..50 {
                    self.write(&chunk);
                }
                self.write(b"\n");
            }
            Mode::Flood => {
                log("flooding the agent with 100000 notifications");
                if let Some(agent) = &mut self.agent {
                    let mut out = BufWriter::new(&mut agent.stdin);
                    for n in 0..100_000u32 {
                        let line =
                            json!({"jsonrpc": "2.0", "method": "chaos/flood", "params": {"n": n}});
                        if writeln!(out, "{line}").is_err() {
                            break;
                        }
                    }
                    let _ = out.flush();
                }
            }
            _ => {}
        }
    }
}

/// Dies of SIGSEGV. The Rust runtime installs its own SIGSEGV handler (stack-overflow
/// detection), so the default action is restored first.
fn segfault() -> ! {
    use nix::sys::signal::{SigHandler, Signal, raise, signal};
    // SAFETY: restoring the default disposition; no handler code runs.
    unsafe {
        let _ = signal(Signal::SIGSEGV, SigHandler::SigDfl);
    }
    let _ = raise(Signal::SIGSEGV);
    std::process::abort()
}
