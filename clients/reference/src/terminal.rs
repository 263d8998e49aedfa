//! The client's terminals (`clientCapabilities.terminal`, advertised): `terminal/create`,
//! `terminal/output`, `terminal/wait_for_exit`, `terminal/kill`, `terminal/release`, with real
//! processes.
//!
//! What the spec asks (agentclientprotocol.com/protocol/terminals) and how it is done here:
//! * create answers at once with a fresh id; the command runs in the given `cwd`, else the
//!   session's (the case workspace), with `args` and `env` exactly as given (added to ours). A
//!   command without `args` is a shell line (claude-code-acp ≤0.16 sends the whole Bash command
//!   as `command`), so it runs through `/bin/sh -c`; with `args` the program is run directly.
//! * stdout and stderr go, interleaved as they arrive, into one buffer that keeps at most
//!   `outputByteLimit` bytes: what is cut goes from the **start**, at a UTF-8 character
//!   boundary, and `truncated` says so. Bytes that are not UTF-8 are shown as U+FFFD.
//! * each terminal runs in a process group of its own, so kill (SIGKILL to the group) takes the
//!   children of a shell line too, not just the shell.
//! * wait_for_exit answers when the process has exited and its output is read; the answer is
//!   sent from a task ([`Terminals::next_answer`]), so the client keeps serving meanwhile.
//! * release kills the group if it still runs and forgets the id: any later call on it is an
//!   error. When the client ends, every terminal still running is killed and reaped
//!   ([`Terminals::shutdown`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_vocab::method::Method;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::mutation::Mutant;
use crate::rpc::RpcError;

/// How long an exited command's pipes may stay open (a background grandchild holding them)
/// before its exit is reported without the rest of the output.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);
/// How long [`Terminals::shutdown`] waits for killed processes to be reaped.
const REAP_GRACE: Duration = Duration::from_secs(2);

/// How a command ended, as ACP's `TerminalExitStatus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitStatus {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
}

impl ExitStatus {
    fn from_std(status: std::process::ExitStatus, mutant: Option<Mutant>) -> Self {
        use std::os::unix::process::ExitStatusExt;
        let signal = status.signal().map(|n| match Signal::try_from(n) {
            Ok(signal) => signal.as_str().to_owned(),
            Err(_) => n.to_string(),
        });
        // MUTANT signal-as-exit-zero (earendil-works/pi#8992, openclaw/openclaw#148027): a
        // process killed by a signal has no exit code, and `code ?? 0` reports it as a success.
        if mutant == Some(Mutant::SignalAsExitZero) && signal.is_some() {
            return ExitStatus {
                exit_code: Some(0),
                signal: None,
            };
        }
        ExitStatus {
            exit_code: status.code(),
            signal,
        }
    }

    fn to_json(&self) -> Value {
        json!({"exitCode": self.exit_code, "signal": self.signal})
    }
}

/// The output kept so far.
#[derive(Default)]
struct Output {
    bytes: Vec<u8>,
    truncated: bool,
    limit: Option<usize>,
}

impl Output {
    fn push(&mut self, chunk: &[u8], mutant: Option<Mutant>) {
        self.bytes.extend_from_slice(chunk);
        let Some(limit) = self.limit else { return };
        if self.bytes.len() <= limit {
            return;
        }
        self.truncated = true;
        // MUTANT truncate-keeps-head (can1357/oh-my-pi#7078: terminal output head-truncated to
        // its first N characters): the limit keeps the beginning and drops the newest output.
        if mutant == Some(Mutant::TruncateKeepsHead) {
            self.bytes.truncate(limit);
            return;
        }
        let cut = self.bytes.len() - limit;
        self.bytes.drain(..cut);
    }

    /// The text to answer with: lossy UTF-8, cut again from the start to the limit at a
    /// character boundary (a cut mid-character, or U+FFFD standing for a bad byte, can leave it
    /// a few bytes long).
    fn text(&self, mutant: Option<Mutant>) -> (String, bool) {
        // MUTANT truncate-mid-character (mrmans0n/alas#352 review: the byte suffix fed to the
        // decoder starts inside a multi-byte character): the kept bytes are decoded as they
        // are, so a cut character becomes U+FFFD at the start of the output.
        if mutant == Some(Mutant::TruncateMidCharacter) {
            return (
                String::from_utf8_lossy(&self.bytes).into_owned(),
                self.truncated,
            );
        }
        let mut start = 0;
        // A cut inside a character leaves its continuation bytes (10xxxxxx) first: skip them.
        while self.truncated && start < self.bytes.len() && self.bytes[start] & 0xC0 == 0x80 {
            start += 1;
        }
        let mut text = String::from_utf8_lossy(&self.bytes[start..]).into_owned();
        let mut truncated = self.truncated;
        if let Some(limit) = self.limit {
            if text.len() > limit {
                let mut cut = text.len() - limit;
                while !text.is_char_boundary(cut) {
                    cut += 1;
                }
                text.drain(..cut);
                truncated = true;
            }
        }
        (text, truncated)
    }
}

struct Terminal {
    session_id: String,
    /// The process group (= the command's pid).
    group: Pid,
    output: Arc<Mutex<Output>>,
    exit: watch::Receiver<Option<ExitStatus>>,
}

impl Terminal {
    fn exited(&self) -> Option<ExitStatus> {
        self.exit.borrow().clone()
    }

    /// SIGKILL the whole group, also after the shell itself exited (a background child of a
    /// shell line keeps the group alive; a group id is not reused while the group exists).
    fn kill(&self, mutant: Option<Mutant>) {
        // MUTANT kill-direct-child-only (nexu-io/open-design#7431, clawbench-dev/clawbench#344:
        // only the direct child is signalled): the shell dies, the processes it started live on.
        if mutant == Some(Mutant::KillDirectChildOnly) {
            let _ = nix::sys::signal::kill(self.group, Signal::SIGKILL);
            return;
        }
        match killpg(self.group, Signal::SIGKILL) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
            Err(e) => log!("cannot kill terminal process group {}: {e}", self.group),
        }
    }
}

/// A deferred answer: (the agent's request id, the result).
pub type Answer = (Value, Result<Value, RpcError>);

pub struct Terminals {
    mutant: Option<Mutant>,
    next_id: u64,
    live: HashMap<String, Terminal>,
    /// The tasks that reap each command (released ones too), awaited at shutdown.
    reapers: Vec<JoinHandle<()>>,
    answers_tx: mpsc::UnboundedSender<Answer>,
    answers: mpsc::UnboundedReceiver<Answer>,
}

fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("`{key}` (string) is required")))
}

impl Terminals {
    pub fn new(mutant: Option<Mutant>) -> Self {
        let (answers_tx, answers) = mpsc::unbounded_channel();
        Terminals {
            mutant,
            next_id: 0,
            live: HashMap::new(),
            reapers: Vec::new(),
            answers_tx,
            answers,
        }
    }

    /// The next deferred `terminal/wait_for_exit` answer (cancel safe).
    pub async fn next_answer(&mut self) -> Answer {
        match self.answers.recv().await {
            Some(answer) => answer,
            // We hold a sender, so the channel never closes.
            None => std::future::pending().await,
        }
    }

    /// Serve one `terminal/*` request. `Ok(None)`: the answer comes later, from
    /// [`Terminals::next_answer`]. `session_cwd` is the cwd of the request's session, if known.
    pub fn serve(
        &mut self,
        method: &str,
        id: &Value,
        params: &Value,
        session_cwd: Option<&str>,
    ) -> Result<Option<Value>, RpcError> {
        if method == Method::TerminalCreate.as_str() {
            return self.create(params, session_cwd).map(Some);
        }
        let terminal_id = str_param(params, "terminalId")?;
        let session_id = str_param(params, "sessionId")?;
        let Some(terminal) = self.live.get(terminal_id) else {
            return Err(RpcError::invalid_params(format!(
                "unknown terminalId {terminal_id:?} (never created, or released)"
            )));
        };
        if terminal.session_id != session_id {
            return Err(RpcError::invalid_params(format!(
                "terminal {terminal_id:?} belongs to another session"
            )));
        }
        match Method::parse(method) {
            Some(Method::TerminalOutput) => {
                let mutant = self.mutant;
                let (output, truncated) = terminal
                    .output
                    .lock()
                    .map(|mut o| {
                        let text = o.text(mutant);
                        // MUTANT output-since-last-call (issue 42 item 12: a buffer drained by
                        // every read): what was handed out is forgotten.
                        if mutant == Some(Mutant::OutputSinceLastCall) {
                            o.bytes.clear();
                            o.truncated = false;
                        }
                        text
                    })
                    .unwrap_or_default();
                let mut answer = json!({"output": output, "truncated": truncated});
                if let Some(exit) = terminal.exited() {
                    answer["exitStatus"] = exit.to_json();
                }
                Ok(Some(answer))
            }
            Some(Method::TerminalWaitForExit) => {
                if let Some(exit) = terminal.exited() {
                    return Ok(Some(exit.to_json()));
                }
                let mut exit = terminal.exit.clone();
                let (tx, id) = (self.answers_tx.clone(), id.clone());
                tokio::spawn(async move {
                    let result = match exit.wait_for(Option::is_some).await {
                        Ok(status) => {
                            Ok(status.as_ref().map(ExitStatus::to_json).unwrap_or_default())
                        }
                        Err(_) => Err(RpcError::internal("the terminal's reaper is gone")),
                    };
                    let _ = tx.send((id, result));
                });
                Ok(None)
            }
            Some(Method::TerminalKill) => {
                terminal.kill(self.mutant);
                Ok(Some(json!({})))
            }
            Some(Method::TerminalRelease) => {
                // MUTANT release-keeps-running (can1357/oh-my-pi#12435 shows the other half:
                // nothing else stops a terminal that release does not): the id is forgotten,
                // the process is not killed.
                if self.mutant != Some(Mutant::ReleaseKeepsRunning) {
                    terminal.kill(self.mutant);
                }
                self.live.remove(terminal_id);
                Ok(Some(json!({})))
            }
            _ => Err(RpcError::method_not_found(method)),
        }
    }

    fn create(&mut self, params: &Value, session_cwd: Option<&str>) -> Result<Value, RpcError> {
        let session_id = str_param(params, "sessionId")?.to_owned();
        let command = str_param(params, "command")?;
        let args: Vec<String> = match params.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(args)) => args
                .iter()
                .map(|a| a.as_str().map(str::to_owned))
                .collect::<Option<_>>()
                .ok_or_else(|| RpcError::invalid_params("`args` must be strings"))?,
            Some(_) => return Err(RpcError::invalid_params("`args` must be an array")),
        };
        let mut env = Vec::new();
        for var in params
            .get("env")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match (
                var.get("name").and_then(Value::as_str),
                var.get("value").and_then(Value::as_str),
            ) {
                (Some(name), Some(value)) => env.push((name.to_owned(), value.to_owned())),
                _ => return Err(RpcError::invalid_params("`env` entries are {name, value}")),
            }
        }
        let cwd = match params.get("cwd").and_then(Value::as_str) {
            Some(cwd) if std::path::Path::new(cwd).is_absolute() => cwd.to_owned(),
            Some(cwd) => {
                return Err(RpcError::invalid_params(format!(
                    "`cwd` must be absolute, got {cwd:?}"
                )));
            }
            None => session_cwd
                .ok_or_else(|| RpcError::invalid_params("unknown sessionId"))?
                .to_owned(),
        };
        let limit = match params.get("outputByteLimit") {
            None | Some(Value::Null) => None,
            Some(v) => Some(
                v.as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        RpcError::invalid_params("`outputByteLimit` must be an integer >= 0")
                    })?,
            ),
        };
        let mut cmd = if args.is_empty() {
            let mut sh = Command::new("/bin/sh");
            sh.arg("-c").arg(command);
            sh
        } else {
            let mut direct = Command::new(command);
            direct.args(&args);
            direct
        };
        // MUTANT drop-env (xuzhougeng/wispterm#549): the agent's `env` entries are dropped, so
        // the command runs in the client's own environment.
        if self.mutant != Some(Mutant::DropEnv) {
            cmd.envs(env);
        }
        cmd.current_dir(&cwd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd
            .spawn()
            .map_err(|e| RpcError::internal(format!("cannot run {command:?}: {e}")))?;
        let group = child
            .id()
            .and_then(|pid| i32::try_from(pid).ok())
            .map(Pid::from_raw)
            .ok_or_else(|| RpcError::internal("the command has no pid"))?;
        let output = Arc::new(Mutex::new(Output {
            limit,
            ..Output::default()
        }));
        let mutant = self.mutant;
        let mut readers = Vec::new();
        if let Some(stdout) = child.stdout.take() {
            readers.push(tokio::spawn(collect(stdout, output.clone(), mutant)));
        }
        if let Some(stderr) = child.stderr.take() {
            readers.push(tokio::spawn(collect(stderr, output.clone(), mutant)));
        }
        let (exit_tx, exit) = watch::channel(None);
        self.reapers.push(tokio::spawn(async move {
            let status = child.wait().await;
            for reader in readers {
                let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, reader).await;
            }
            let status = match status {
                Ok(status) => ExitStatus::from_std(status, mutant),
                Err(e) => {
                    log!("cannot wait for terminal process {group}: {e}");
                    ExitStatus {
                        exit_code: None,
                        signal: None,
                    }
                }
            };
            let _ = exit_tx.send(Some(status));
        }));
        let terminal_id = format!("term_{}", self.next_id);
        self.next_id += 1;
        self.live.insert(
            terminal_id.clone(),
            Terminal {
                session_id,
                group,
                output,
                exit,
            },
        );
        Ok(json!({ "terminalId": terminal_id }))
    }

    /// The client ends: kill every terminal still known and reap every command (released ones
    /// were killed already), waiting at most [`REAP_GRACE`].
    pub async fn shutdown(&mut self) {
        for (_, terminal) in self.live.drain() {
            terminal.kill(None);
        }
        let reapers = std::mem::take(&mut self.reapers);
        let all = futures_join(reapers);
        if tokio::time::timeout(REAP_GRACE, all).await.is_err() {
            log!("terminal processes were not reaped within {REAP_GRACE:?}");
        }
    }
}

async fn futures_join(handles: Vec<JoinHandle<()>>) {
    for handle in handles {
        let _ = handle.await;
    }
}

async fn collect(
    mut from: impl AsyncReadExt + Unpin,
    into: Arc<Mutex<Output>>,
    mutant: Option<Mutant>,
) {
    let mut chunk = vec![0u8; 8192];
    loop {
        match from.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut output) = into.lock() {
                    output.push(&chunk[..n], mutant);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(chunks: &[&[u8]], limit: usize) -> (String, bool) {
        let mut output = Output {
            limit: Some(limit),
            ..Output::default()
        };
        for chunk in chunks {
            output.push(chunk, None);
        }
        output.text(None)
    }

    #[test]
    fn truncation_keeps_the_end_at_a_character_boundary() {
        assert_eq!(kept(&[b"abc".as_slice()], 3), ("abc".into(), false));
        assert_eq!(
            kept(&[b"ab".as_slice(), b"cd".as_slice()], 3),
            ("bcd".into(), true)
        );
        // "é" is two bytes: a cut between them drops the whole character.
        assert_eq!(kept(&["aéb".as_bytes()], 2), ("b".into(), true));
        assert_eq!(kept(&["aéb".as_bytes()], 3), ("éb".into(), true));
        // A bad byte is U+FFFD (3 bytes), cut again to the limit.
        assert_eq!(kept(&[b"a\xffb".as_slice()], 3), ("b".into(), true));
        assert_eq!(kept(&[b"x".as_slice()], 0), (String::new(), true));
    }

    #[tokio::test]
    async fn lifecycle_exit_code_output_and_release() {
        let mut terminals = Terminals::new(None);
        let created = terminals
            .serve(
                "terminal/create",
                &json!(1),
                &json!({"sessionId": "s", "command": "printf", "args": ["%s-%s", "$X", "y"],
                        "env": [{"name": "X", "value": "unused"}]}),
                Some("/"),
            )
            .expect("created")
            .expect("answered");
        let id = created["terminalId"].as_str().expect("id").to_owned();
        let params = json!({"sessionId": "s", "terminalId": id});
        let waited = match terminals.serve("terminal/wait_for_exit", &json!(2), &params, None) {
            Ok(Some(answer)) => answer,
            Ok(None) => terminals.next_answer().await.1.expect("exit"),
            Err(e) => panic!("{e:?}"),
        };
        assert_eq!(waited, json!({"exitCode": 0, "signal": null}));
        let output = terminals
            .serve("terminal/output", &json!(3), &params, None)
            .expect("output")
            .expect("answered");
        assert_eq!(output["output"], "$X-y", "args are not expanded by a shell");
        assert_eq!(output["truncated"], false);
        terminals
            .serve("terminal/release", &json!(4), &params, None)
            .expect("released");
        let err = terminals
            .serve("terminal/output", &json!(5), &params, None)
            .expect_err("released ids are unknown");
        assert_eq!(err.code, -32602);
        terminals.shutdown().await;
    }

    #[tokio::test]
    async fn kill_takes_the_whole_group_and_reports_the_signal() {
        let mut terminals = Terminals::new(None);
        let created = terminals
            .serve(
                "terminal/create",
                &json!(1),
                &json!({"sessionId": "s", "command": "sleep 30 & wait"}),
                Some("/"),
            )
            .expect("created")
            .expect("answered");
        let params = json!({"sessionId": "s", "terminalId": created["terminalId"]});
        assert!(
            terminals
                .serve("terminal/wait_for_exit", &json!(2), &params, None)
                .expect("deferred")
                .is_none()
        );
        terminals
            .serve("terminal/kill", &json!(3), &params, None)
            .expect("killed");
        let (id, exit) = tokio::time::timeout(Duration::from_secs(5), terminals.next_answer())
            .await
            .expect("the wait is answered after the kill");
        assert_eq!(id, json!(2));
        assert_eq!(
            exit.expect("exit"),
            json!({"exitCode": null, "signal": "SIGKILL"})
        );
        terminals.shutdown().await;
    }
}
