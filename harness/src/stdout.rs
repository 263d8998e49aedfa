//! Printing to stdout that survives a reader who stops reading.
//!
//! `println!` panics when stdout is a pipe whose reader has gone (`acp-harness report … | head`).
//! Resetting SIGPIPE to its default would instead kill the process on the spot, in the middle of
//! a run that still has clients to reap and a run.json to finish. So the harness prints through
//! [`print_fmt`]: a closed pipe silences the rest of stdout and the work goes on; any other write
//! error is said once on stderr, then stdout is silenced too.
use std::fmt;
use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

static SILENCED: AtomicBool = AtomicBool::new(false);

/// Writes `args` to stdout unless an earlier write failed. Used by [`outln!`](crate::outln) and
/// [`out!`](crate::out).
pub fn print_fmt(args: fmt::Arguments<'_>) {
    if SILENCED.load(Ordering::Relaxed) {
        return;
    }
    let mut stdout = io::stdout().lock();
    if let Err(err) = stdout.write_fmt(args) {
        if !SILENCED.swap(true, Ordering::Relaxed) && err.kind() != io::ErrorKind::BrokenPipe {
            eprintln!("acp-harness: cannot write to stdout ({err}); the rest of stdout is dropped");
        }
    }
}

/// `println!` that never panics on a closed stdout (see the module).
#[macro_export]
macro_rules! outln {
    () => { $crate::stdout::print_fmt(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdout::print_fmt(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` that never panics on a closed stdout (see the module).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::print_fmt(format_args!($($arg)*)) };
}
