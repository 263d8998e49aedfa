//! The client's streams as the observer reads them: stdout and stderr line by line (an
//! overlong line skipped without being held), a terminal's output in chunks with the moments
//! its screen settles.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::mpsc;

use super::{MAX_LINE, Shared, Shown};

/// Feeds stdout to the observer line by line until EOF.
pub(super) async fn read_lines(stdout: Box<dyn AsyncRead + Send + Unpin>, shared: Arc<Shared>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE {
            if !skip_line(&mut reader).await {
                break;
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        shared.feed(Shown::Stdout(text.trim_end_matches(['\n', '\r'])));
    }
}

/// Discards the rest of an overlong line without holding it; false at EOF or on an error.
async fn skip_line(reader: &mut BufReader<Box<dyn AsyncRead + Send + Unpin>>) -> bool {
    loop {
        let (consumed, done) = match reader.fill_buf().await {
            Ok([]) | Err(_) => return false,
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(pos) => (pos + 1, true),
                None => (buf.len(), false),
            },
        };
        reader.consume(consumed);
        if done {
            return true;
        }
    }
}

/// Feeds stderr to the observer line by line (a last line without its newline at the end).
pub(super) async fn read_stderr(mut stderr: mpsc::UnboundedReceiver<Vec<u8>>, shared: Arc<Shared>) {
    let mut pending: Vec<u8> = Vec::new();
    while let Some(chunk) = stderr.recv().await {
        pending.extend_from_slice(&chunk);
        while let Some(pos) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=pos).collect();
            let text = String::from_utf8_lossy(&line);
            shared.feed(Shown::Stderr(text.trim_end_matches(['\n', '\r'])));
        }
        if pending.len() > MAX_LINE {
            pending.clear();
        }
    }
    if !pending.is_empty() {
        shared.feed(Shown::Stderr(&String::from_utf8_lossy(&pending)));
    }
}

/// Feeds terminal output to the observer in chunks until the terminal ends; with a screen
/// (`settle`), tells it each time the screen has been still for that long after a change.
pub(super) async fn read_terminal(
    mut terminal: mpsc::UnboundedReceiver<Vec<u8>>,
    shared: Arc<Shared>,
    settle: Option<Duration>,
) {
    let mut changed = false;
    loop {
        let chunk = match settle.filter(|_| changed) {
            // A quiet-time measurement, not a timeout: the screen counts once it stops moving.
            Some(quiet) => match tokio::time::timeout(quiet, terminal.recv()).await {
                Ok(chunk) => chunk,
                Err(_) => {
                    changed = false;
                    shared.feed(Shown::Settled);
                    shared.screen_settled();
                    continue;
                }
            },
            None => terminal.recv().await,
        };
        let Some(chunk) = chunk else { break };
        shared.feed(Shown::Terminal(&chunk));
        changed = true;
        shared
            .moving
            .store(settle.is_some(), std::sync::atomic::Ordering::SeqCst);
    }
    if changed {
        shared.feed(Shown::Settled);
        shared.screen_settled();
    }
}
