//! Launching the client under test in its own process group, keeping the tail of its stderr,
//! and making sure that nothing it started outlives the case.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// Bytes of stderr kept for crash reports.
const STDERR_TAIL_BYTES: usize = 4096;

/// A running client.
pub struct Launched {
    pub child: Child,
    /// Process group id (= the client's pid): the client and everything it spawns.
    pub pgid: i32,
    pub stdin: Option<ChildStdin>,
    pub stdout: Option<ChildStdout>,
    /// For `tty` launches: the terminal that is the client's stdin and stderr.
    pub terminal: Option<Terminal>,
    /// For launches without `tty`: stderr in chunks as they come (also kept in the tail).
    pub stderr: Option<tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>>,
    stderr_tail: Arc<Mutex<VecDeque<u8>>>,
    stderr_task: tokio::task::JoinHandle<()>,
}

/// How a client process ended, in words and numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct ExitInfo {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

impl ExitInfo {
    pub fn from_status(status: ExitStatus) -> Self {
        use std::os::unix::process::ExitStatusExt;
        ExitInfo {
            code: status.code(),
            signal: status.signal().map(|s| {
                Signal::try_from(s)
                    .map(|sig| sig.as_str().to_string())
                    .unwrap_or_else(|_| format!("signal {s}"))
            }),
        }
    }

    pub fn describe(&self) -> String {
        match (&self.code, &self.signal) {
            (_, Some(sig)) => format!("killed by {sig}"),
            (Some(code), None) => format!("exit code {code}"),
            (None, None) => "unknown exit status".into(),
        }
    }
}

/// The client's terminal (`tty` launches): type on `master`; what the client writes there
/// arrives on `output` (and in the stderr tail).
pub struct Terminal {
    pub master: crate::pty::Master,
    pub output: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
}

/// Starts `argv` with piped stdio in a new process group.
pub fn launch(argv: &[String], env: &[(String, String)], cwd: &Path) -> Result<Launched> {
    launch_with(argv, env, cwd, false)
}

/// Starts `argv` in a new process group: stdout piped; stdin and stderr piped too, or with
/// `tty` both on a fresh pseudo-terminal (for clients that prompt only on a terminal).
/// The client starts in a directory of its own, so a relative program path with a `/` in it
/// (`./target/debug/my-client`) means what it meant where the harness was started, as the user
/// typed it. A bare name is looked up on PATH as usual.
fn program_from_here(program: &str) -> String {
    let path = Path::new(program);
    if path.is_relative() && program.contains('/') {
        if let Ok(here) = std::env::current_dir() {
            return here.join(path).to_string_lossy().into_owned();
        }
    }
    program.to_owned()
}

/// Whether `program` (argv[0] as the client spec gives it) can be started at all: a path must
/// be an executable file, a bare name must be an executable file on `path_var` (the `PATH` the
/// client gets). Run once before any case, so that a typo in `--client` is one clear error,
/// not a crash in every case. Placeholders (`{…}`) are left to the launch.
pub fn check_startable(program: &str, path_var: Option<&std::ffi::OsStr>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if program.contains('{') {
        return Ok(());
    }
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = PathBuf::from(program_from_here(program));
        return match std::fs::metadata(&path) {
            Err(e) => bail!("the client program {program:?} cannot be started: {e}"),
            Ok(m) if m.is_dir() => {
                bail!("the client program {program:?} cannot be started: it is a directory")
            }
            Ok(_) if !executable(&path) => {
                bail!("the client program {program:?} cannot be started: it is not executable")
            }
            Ok(_) => Ok(()),
        };
    }
    let found = path_var
        .map(std::env::split_paths)
        .into_iter()
        .flatten()
        .any(|dir| executable(&dir.join(program)));
    if !found {
        bail!("the client program {program:?} cannot be started: it is not on PATH");
    }
    Ok(())
}

pub fn launch_with(
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    tty: bool,
) -> Result<Launched> {
    let (program, args) = argv.split_first().context("empty client argv")?;
    let program = program_from_here(program);
    let program = &program;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdout(Stdio::piped())
        .process_group(0)
        // Belt and braces: if the harness itself dies, tokio still kills the direct child.
        .kill_on_drop(true);
    let master = if tty {
        let (master, slave) = crate::pty::open()?;
        let slave_err = slave.try_clone().context("cannot duplicate the pty")?;
        cmd.stdin(Stdio::from(slave)).stderr(Stdio::from(slave_err));
        Some(master)
    } else {
        cmd.stdin(Stdio::piped()).stderr(Stdio::piped());
        None
    };
    for (k, v) in env {
        cmd.env(k, v);
    }
    let spawned = cmd.spawn();
    // The command holds our copies of the terminal's slave side: drop them now, or the
    // terminal never reports its end.
    drop(cmd);
    let mut child = spawned.with_context(|| format!("could not start client {program:?}"))?;
    let pgid = child
        .id()
        .context("client exited before its pid was read")? as i32;
    let stderr_tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_BYTES)));
    let tail = Arc::clone(&stderr_tail);
    let keep = move |bytes: &[u8]| {
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend(bytes);
        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
        tail.drain(..excess);
    };
    let (terminal, stderr_output, stderr_task) = match master {
        Some(master) => {
            let (tx, output) = tokio::sync::mpsc::unbounded_channel();
            let reader = master.clone();
            let task = tokio::spawn(async move {
                while let Some(chunk) = reader.read().await {
                    keep(&chunk);
                    let _ = tx.send(chunk);
                }
            });
            (Some(Terminal { master, output }), None, task)
        }
        None => {
            let stderr = child.stderr.take();
            let (tx, output) = tokio::sync::mpsc::unbounded_channel();
            let task = tokio::spawn(async move {
                let Some(mut stderr) = stderr else { return };
                let mut buf = [0u8; 4096];
                while let Ok(n) = stderr.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    keep(&buf[..n]);
                    let _ = tx.send(buf[..n].to_vec());
                }
            });
            (None, Some(output), task)
        }
    };
    Ok(Launched {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        terminal,
        stderr: stderr_output,
        child,
        pgid,
        stderr_tail,
        stderr_task,
    })
}

impl Launched {
    /// The last few KiB of stderr, as text.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Exit status if the client has already exited.
    pub fn try_exit(&mut self) -> Option<ExitInfo> {
        self.child
            .try_wait()
            .ok()
            .flatten()
            .map(ExitInfo::from_status)
    }

    /// Exit status if the client exits within `window` (it may be dying: its pipes close a
    /// moment before it can be reaped).
    pub async fn exit_within(&mut self, window: Duration) -> Option<ExitInfo> {
        match tokio::time::timeout(window, self.child.wait()).await {
            Ok(Ok(status)) => Some(ExitInfo::from_status(status)),
            _ => None,
        }
    }

    /// Waits up to `grace` for a voluntary exit, then kills the whole process group and reaps.
    /// Always ends with SIGKILL to the group, so grandchildren (the relay, anything the client
    /// spawned) die too even when the client itself exited cleanly.
    pub async fn finish(&mut self, grace: Duration) -> ExitInfo {
        let status = match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(Ok(status)) => Some(status),
            _ => None,
        };
        let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
        let status = match status {
            Some(s) => s,
            None => match tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await {
                Ok(Ok(s)) => s,
                _ => {
                    let _ = self.child.start_kill();
                    return ExitInfo {
                        code: None,
                        signal: Some("SIGKILL".into()),
                    };
                }
            },
        };
        // stderr closes once every holder of the pipe is gone; do not wait forever for it.
        let _ = tokio::time::timeout(Duration::from_millis(500), &mut self.stderr_task).await;
        ExitInfo::from_status(status)
    }

    /// Sends a signal to the client process only (not its group), e.g. SIGINT to cancel.
    pub fn signal(&self, signal: Signal) {
        let _ = nix::sys::signal::kill(Pid::from_raw(self.pgid), signal);
    }
}

/// True if any process of the group is still alive.
pub fn group_alive(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None).is_ok()
}
