//! Launching the client under test in its own process group, keeping the tail of its stderr,
//! and making sure that nothing it started outlives the case.
//!
//! The client is reaped by a task of its own from the moment it starts, so the instant it exits
//! is known whatever the harness was waiting for then (the verdict on a dead client is timed
//! from it), and any number of waits can watch for that exit.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::process::{ChildStdin, ChildStdout, Command};
use tokio::sync::watch;

use acp_fake_agents::machine_time::{self, Stamp};

/// Bytes of stderr kept for crash reports.
const STDERR_TAIL_BYTES: usize = 4096;

/// A running client.
pub struct Launched {
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
    /// Set by `reaper` when the client exits.
    exit: watch::Receiver<Option<Exited>>,
    /// Owns the client process and waits for it; aborting it kills the client (`kill_on_drop`).
    reaper: tokio::task::JoinHandle<()>,
}

/// The client's exit: how, and when the harness saw it (on both clocks).
#[derive(Debug, Clone, PartialEq)]
pub struct Exited {
    pub info: ExitInfo,
    pub at: Stamp,
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
    launch_with(argv, env, cwd, false, None)
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

/// Before a client starts: the signals a person sends (Ctrl-C, Ctrl-\\) back to their default in the
/// harness when they were ignored, so the client inherits the default. A harness started in the
/// background of a non-interactive shell (`cargo test &`, nohup, some CI runners) inherits
/// SIGINT and SIGQUIT ignored, and an ignored disposition survives exec: the user's Ctrl-C (a
/// profile's `[cancel] signal = "SIGINT"`) would never reach the client, and Python would not
/// even raise KeyboardInterrupt. chuk-acp then finished the turn it was told to stop, so the
/// verdict depended on how the harness was started.
fn default_signals() {
    for signal in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: sigaction(2) with no new action only reads; signal(2) takes plain integers.
        // Only an ignored signal is changed: a handler the harness installed (tokio's Ctrl-C)
        // is never replaced, not even for a moment.
        unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) == 0
                && current.sa_sigaction == libc::SIG_IGN
            {
                libc::signal(signal, libc::SIG_DFL);
            }
        }
    }
}

pub fn launch_with(
    argv: &[String],
    env: &[(String, String)],
    cwd: &Path,
    tty: bool,
    screen: Option<(u16, u16)>,
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
    // Not with `pre_exec`: that forces fork+exec, and forking the self-test's 2 GB process
    // 40,000 times made it four times slower; the harness's own dispositions are inherited.
    default_signals();
    let master = if let Some(size) = screen {
        // A full-screen client: all three streams are its terminal, of the profile's size.
        let (master, slave) = crate::pty::open_sized(Some(size))?;
        let slave_out = slave.try_clone().context("cannot duplicate the pty")?;
        let slave_err = slave.try_clone().context("cannot duplicate the pty")?;
        cmd.stdin(Stdio::from(slave))
            .stdout(Stdio::from(slave_out))
            .stderr(Stdio::from(slave_err))
            .env("TERM", "xterm-256color")
            .env("COLUMNS", size.1.to_string())
            .env("LINES", size.0.to_string());
        Some(master)
    } else if tty {
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
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
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
    let (exit_tx, exit) = watch::channel(None);
    let reaper = tokio::spawn(async move {
        let info = match child.wait().await {
            Ok(status) => ExitInfo::from_status(status),
            // Not expected for a child of ours; the exit is all that is known.
            Err(_) => ExitInfo {
                code: None,
                signal: None,
            },
        };
        exit_tx.send_replace(Some(Exited {
            info,
            at: Stamp::now(),
        }));
    });
    Ok(Launched {
        stdin,
        stdout,
        terminal,
        stderr: stderr_output,
        pgid,
        stderr_tail,
        stderr_task,
        exit,
        reaper,
    })
}

impl Drop for Launched {
    /// A client given up on (an error path, a panic) is killed, not left running.
    fn drop(&mut self) {
        self.reaper.abort();
    }
}

impl Launched {
    /// The last few KiB of stderr, as text.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr_tail.lock().unwrap_or_else(|e| e.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// The client's exit, if it has exited.
    pub fn exited(&self) -> Option<Exited> {
        self.exit.borrow().clone()
    }

    /// Exit status if the client has already exited.
    pub fn try_exit(&self) -> Option<ExitInfo> {
        self.exited().map(|e| e.info)
    }

    /// Waits for the client to exit.
    pub async fn wait(&self) -> Exited {
        let mut exit = self.exit.clone();
        let exited = match exit.wait_for(Option::is_some).await {
            Ok(exited) => exited.clone(),
            Err(_) => None,
        };
        // The reaper always says how the client ended before it is done; were it gone without
        // a word (a panic), the client is gone with it (`kill_on_drop`).
        exited.unwrap_or_else(|| Exited {
            info: ExitInfo {
                code: None,
                signal: None,
            },
            at: Stamp::now(),
        })
    }

    /// Exit status if the client exits within `window` (it may be dying: its pipes close a
    /// moment before it can be reaped).
    pub async fn exit_within(&self, window: Duration) -> Option<ExitInfo> {
        machine_time::timeout(window, self.wait())
            .await
            .ok()
            .map(|e| e.info)
    }

    /// Waits up to `grace` for a voluntary exit, then kills the whole process group and reaps.
    /// Always ends with SIGKILL to the group, so grandchildren (the relay, anything the client
    /// spawned) die too even when the client itself exited cleanly. `after_kill` runs right
    /// after the group kill, before the wait for the end of stderr: the place to kill
    /// descendants that left the group (they may hold the pipe open).
    pub async fn finish_with(&mut self, grace: Duration, after_kill: impl FnOnce()) -> ExitInfo {
        let exited = machine_time::timeout(grace, self.wait()).await.ok();
        let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
        after_kill();
        let exited = match exited {
            Some(e) => e,
            None => match tokio::time::timeout(Duration::from_secs(5), self.wait()).await {
                Ok(e) => e,
                Err(_) => {
                    // Dropping the child kills it once more and leaves it to tokio to reap.
                    self.reaper.abort();
                    return ExitInfo {
                        code: None,
                        signal: Some("SIGKILL".into()),
                    };
                }
            },
        };
        // stderr closes once every holder of the pipe is gone; do not wait forever for it.
        let _ = tokio::time::timeout(Duration::from_millis(500), &mut self.stderr_task).await;
        exited.info
    }

    /// [`Self::finish_with`] with nothing to do after the group kill.
    pub async fn finish(&mut self, grace: Duration) -> ExitInfo {
        self.finish_with(grace, || {}).await
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The signals process `pid` ignores (`SigIgn` of /proc/<pid>/status), one bit per signal.
    fn ignored_signals(pid: i32) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .expect("a SigIgn line");
        u64::from_str_radix(mask.trim(), 16).expect("a hex mask")
    }

    #[tokio::test]
    async fn the_client_gets_sigint_at_its_default_when_the_harness_ignores_it() {
        // As a harness started with `&` from a script: SIGINT ignored, inherited across exec.
        // SAFETY: plain integer arguments; restored below, before any assertion can panic.
        let before = unsafe { libc::signal(libc::SIGINT, libc::SIG_IGN) };
        let launched = launch_with(
            &["sleep".to_owned(), "30".to_owned()],
            &[],
            Path::new("/"),
            false,
            None,
        );
        // SAFETY: as above.
        unsafe { libc::signal(libc::SIGINT, before) };
        let mut launched = launched.expect("sleep starts");
        let ignored = ignored_signals(launched.pgid);
        launched.finish(Duration::ZERO).await;
        let sigint = 1u64 << (libc::SIGINT - 1);
        assert_eq!(
            ignored & sigint,
            0,
            "the client ignores SIGINT: {ignored:#x}"
        );
    }
}
