//! Outside observers: `observer.command` in a client profile names a program, in any language,
//! that reads what the client shows as JSON lines on its stdin and prints control events (one
//! JSON object per line) on its stdout. Each input line is
//! `{"stream":…,"time":<seconds since the case started>,"text":…}`, with `stream` one of:
//!
//! * `stdout`, `stderr`: one line the client printed (without the newline);
//! * `terminal`: text the client wrote to its terminal, ANSI escapes removed, in chunks;
//! * `acp`: one ACP frame the harness relayed, with `"dir":"a2c"` (agent → client) or `"c2a"`;
//!   sent before the client text that follows it, so a program can match what the client shows
//!   to the request it is about;
//! * `user`: the user is about to act (`text` is `chose` or `cancelled`);
//! * `exit`: the client exited (`text` like `exit code 5`, `code` and `signal` as numbers or null).
//!
//! Its stdin is closed after `exit`; it must then exit 0 within the grace period. Every event it
//! prints is validated against control-v1.schema.json like an adapter's; one without `observed`
//! gets `{"by":<observer name>,"from":"observer.command","evidence":"printed by the observer"}`.
//! A program that cannot start, exits non-zero, hangs, prints a line that is not JSON or an event
//! that fails the schema has failed: the case ends as `adapter_error` with that reason.

use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::launch::ExitInfo;
use acp_fake_agents::machine_time;

/// Longest event line accepted from an observer program.
const MAX_EVENT_LINE: u64 = 1 << 20;
/// Bytes of the program's stderr kept for its error message.
const STDERR_TAIL: usize = 2048;

/// A running observer program.
pub struct Program {
    child: Child,
    input: Option<mpsc::UnboundedSender<String>>,
    writer: JoinHandle<()>,
    reader: JoinHandle<()>,
    stderr: JoinHandle<String>,
    started: Instant,
}

impl Program {
    /// Starts `argv` in `cwd`; every line it prints goes to `on_line`.
    pub fn start(
        argv: &[String],
        cwd: &std::path::Path,
        on_line: impl Fn(Result<&[u8], String>) + Send + Sync + 'static,
    ) -> Result<Self, String> {
        let (program, args) = argv.split_first().ok_or("observer.command is empty")?;
        let mut child = Command::new(program)
            .args(args)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("could not start the observer {program:?}: {e}"))?;
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let mut stdin = child.stdin.take().ok_or("no stdin for the observer")?;
        // A program that stops reading its stdin only stalls this task, never the case.
        let writer = tokio::spawn(async move {
            while let Some(line) = rx.recv().await {
                if stdin.write_all(line.as_bytes()).await.is_err()
                    || stdin.write_all(b"\n").await.is_err()
                {
                    return;
                }
            }
            let _ = stdin.shutdown().await;
        });
        let stdout = child.stdout.take().ok_or("no stdout for the observer")?;
        let on_line = Arc::new(on_line);
        let reader = tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match (&mut reader)
                    .take(MAX_EVENT_LINE + 1)
                    .read_until(b'\n', &mut line)
                    .await
                {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if line.len() as u64 > MAX_EVENT_LINE {
                    on_line(Err(format!(
                        "the observer printed a line longer than {MAX_EVENT_LINE} bytes"
                    )));
                    return;
                }
                let text = line.strip_suffix(b"\n").unwrap_or(&line);
                if !text.iter().all(u8::is_ascii_whitespace) {
                    on_line(Ok(text));
                }
            }
        });
        let mut err = child.stderr.take().ok_or("no stderr for the observer")?;
        let stderr = tokio::spawn(async move {
            let mut tail = Vec::new();
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                let excess = tail.len().saturating_sub(STDERR_TAIL);
                tail.drain(..excess);
            }
            String::from_utf8_lossy(&tail).trim().to_owned()
        });
        Ok(Program {
            child,
            input: Some(tx),
            writer,
            reader,
            stderr,
            started: Instant::now(),
        })
    }

    /// Sends one input line (module docs); `extra` fields are added to it.
    pub fn send(&self, stream: &str, text: &str, extra: Value) {
        let mut line = json!({
            "stream": stream,
            "time": self.started.elapsed().as_secs_f64(),
            "text": text,
        });
        if let (Some(obj), Value::Object(more)) = (line.as_object_mut(), extra) {
            obj.extend(more);
        }
        if let Some(tx) = &self.input {
            let _ = tx.send(line.to_string());
        }
    }

    /// Sends `exit`, closes the program's stdin and waits (bounded by `grace`) for it to print
    /// its last events and exit 0; `Err` says how it failed. The program is reaped either way.
    pub async fn finish(mut self, exit: &ExitInfo, grace: Duration) -> Result<(), String> {
        self.send(
            "exit",
            &exit.describe(),
            json!({"code": exit.code, "signal": exit.signal}),
        );
        self.input = None;
        // Machine time, as every wait on the client's side: a Python observer's start and exit
        // take several times longer on a loaded machine.
        let status = machine_time::timeout(grace, self.child.wait()).await;
        let result = match status {
            Ok(Ok(s)) if s.success() => Ok(()),
            Ok(Ok(s)) => Err(format!("the observer exited with {s}")),
            Ok(Err(e)) => Err(format!("could not wait for the observer: {e}")),
            Err(_) => {
                let _ = self.child.kill().await;
                Err(format!(
                    "the observer did not exit within {} ms of machine time after the client's streams ended",
                    grace.as_millis()
                ))
            }
        };
        let _ = machine_time::timeout(Duration::from_millis(500), &mut self.reader).await;
        self.reader.abort();
        self.writer.abort();
        let stderr = match machine_time::timeout(Duration::from_millis(200), &mut self.stderr).await
        {
            Ok(Ok(s)) => s,
            _ => String::new(),
        };
        self.stderr.abort();
        result.map_err(|reason| match stderr.is_empty() {
            true => reason,
            false => format!("{reason}; its stderr ends: {stderr}"),
        })
    }
}
