//! The terminal modes: clients that advertise `terminal` and then serve it badly. Each answers
//! `terminal/*` in one wrong way a real client can (docs/architecture.md §6):
//!
//! * `terminal-huge-output`: `terminal/output` returns 4 MiB, whatever `outputByteLimit` said;
//! * `terminal-non-utf8-output`: `terminal/output` is a line whose output string holds bytes
//!   that are not UTF-8 (so not JSON either);
//! * `terminal-never-exits`: `terminal/wait_for_exit` is never answered;
//! * `terminal-leak`: the command really runs, in a process group of its own and with an
//!   environment stripped of the harness's case marker, and release forgets it without a kill:
//!   it outlives the client unless the harness kills it.
//!
//! Apart from the leak, no process is started: the answers are made up.

use std::collections::HashMap;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

use acp_vocab::method::Method;
use serde_json::{Value, json};

use crate::Mode;

/// What to write back to the agent.
pub enum Reply {
    Json(Value),
    /// A line written as it is (it need not be UTF-8).
    Raw(Vec<u8>),
    /// No answer at all.
    Nothing,
}

pub fn advertises_terminal(mode: Mode) -> bool {
    matches!(
        mode,
        Mode::TerminalHugeOutput
            | Mode::TerminalNonUtf8Output
            | Mode::TerminalNeverExits
            | Mode::TerminalLeak
    )
}

#[derive(Default)]
pub struct Terminals {
    /// The leak mode's commands, by terminal id (waited for, never killed).
    children: HashMap<String, Child>,
}

fn ok(id: &Value, result: Value) -> Reply {
    Reply::Json(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

impl Terminals {
    /// The answer to one `terminal/*` request in `mode`.
    pub fn answer(
        &mut self,
        mode: Mode,
        method: &str,
        id: &Value,
        params: Option<&Value>,
    ) -> Reply {
        let terminal_id = params
            .and_then(|p| p.get("terminalId"))
            .and_then(Value::as_str)
            .unwrap_or("chaos-term")
            .to_owned();
        match Method::parse(method) {
            Some(Method::TerminalCreate) => {
                if mode == Mode::TerminalLeak {
                    let command = params
                        .and_then(|p| p.get("command"))
                        .and_then(Value::as_str)
                        .unwrap_or("true");
                    let mut cmd = Command::new("/bin/sh");
                    cmd.arg("-c").arg(command).env_clear().process_group(0);
                    // Keep only what lets the chaos test see that the process is gone.
                    for key in ["PATH", "ACP_CHAOS_MARKER"] {
                        if let Ok(value) = std::env::var(key) {
                            cmd.env(key, value);
                        }
                    }
                    if let Ok(cwd) = std::env::var("ACP_HARNESS_CWD") {
                        cmd.current_dir(cwd);
                    }
                    let spawned = cmd
                        .stdin(Stdio::null())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn();
                    match spawned {
                        Ok(child) => {
                            self.children.insert("chaos-term".into(), child);
                        }
                        Err(e) => eprintln!("[acp-chaos-client] cannot run {command:?}: {e}"),
                    }
                }
                ok(id, json!({"terminalId": "chaos-term"}))
            }
            Some(Method::TerminalOutput) => match mode {
                Mode::TerminalHugeOutput => ok(
                    id,
                    json!({"output": "x".repeat(4 << 20), "truncated": false}),
                ),
                Mode::TerminalNonUtf8Output => {
                    let mut line =
                        format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"output\":\"ok ")
                            .into_bytes();
                    line.extend_from_slice(b"\xff\xfe\xc3(");
                    line.extend_from_slice(b"\",\"truncated\":false}}\n");
                    Reply::Raw(line)
                }
                _ => ok(id, json!({"output": "", "truncated": false})),
            },
            Some(Method::TerminalWaitForExit) => match mode {
                Mode::TerminalNeverExits => Reply::Nothing,
                _ => {
                    // The leak's shell line exits at once (its child lives on).
                    let code = self
                        .children
                        .get_mut(&terminal_id)
                        .and_then(|c| c.wait().ok())
                        .and_then(|s| s.code())
                        .unwrap_or(0);
                    ok(id, json!({"exitCode": code, "signal": null}))
                }
            },
            // Release forgets the terminal; nothing is killed.
            Some(Method::TerminalRelease) => {
                self.children.remove(&terminal_id);
                ok(id, json!({}))
            }
            _ => ok(id, json!({})),
        }
    }
}
