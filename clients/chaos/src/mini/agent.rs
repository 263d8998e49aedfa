//! The agent process and the wire to it: spawning it, reading its stdout on a thread, writing
//! to its stdin, numbering our requests.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::{Agent, Input, Mini, Purpose, log};

impl Mini {
    pub(super) fn spawn_agent(&mut self) -> Result<(), String> {
        let argv: Vec<String> = if self.agent_argv.is_empty() {
            let raw = std::env::var("ACP_HARNESS_AGENT")
                .map_err(|_| "ACP_HARNESS_AGENT is not set".to_owned())?;
            serde_json::from_str(&raw)
                .map_err(|e| format!("ACP_HARNESS_AGENT is not a JSON array of strings: {e}"))?
        } else {
            self.agent_argv.clone()
        };
        let (program, args) = argv.split_first().ok_or("ACP_HARNESS_AGENT is empty")?;
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start the agent: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("the agent's stdio is not piped".into());
        };
        let tx = self.tx.clone();
        let paused = Arc::clone(&self.agent_paused);
        std::thread::spawn(move || {
            // Chunk by chunk (not line by line), so that a pause takes effect within one chunk
            // even in the middle of a long line.
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                if paused.load(Ordering::SeqCst) {
                    // Keep the pipe open and never read again: the agent's writes back up.
                    log("not reading the agent any more");
                    let _keep = reader;
                    loop {
                        std::thread::park();
                    }
                }
                let chunk = match reader.fill_buf() {
                    Ok([]) | Err(_) => {
                        let _ = tx.send(Input::AgentEof);
                        return;
                    }
                    Ok(chunk) => chunk,
                };
                let (part, used, done) = match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => (&chunk[..i], i + 1, true),
                    None => (chunk, chunk.len(), false),
                };
                line.extend_from_slice(part);
                reader.consume(used);
                if done {
                    let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                    line.clear();
                    if tx.send(Input::Agent(text)).is_err() {
                        return;
                    }
                }
            }
        });
        self.agent = Some(Agent { child, stdin });
        Ok(())
    }

    /// Writes raw bytes to the agent (a write error means it is gone: logged, not fatal).
    pub(super) fn write(&mut self, bytes: &[u8]) {
        if let Some(agent) = &mut self.agent {
            if let Err(e) = agent
                .stdin
                .write_all(bytes)
                .and_then(|()| agent.stdin.flush())
            {
                log(&format!("cannot write to the agent: {e}"));
            }
        }
    }

    pub(super) fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.write(line.as_bytes());
    }

    pub(super) fn request(&mut self, method: &str, params: Value, purpose: Purpose) {
        let id = self.next_id;
        self.next_id += 1;
        self.pending.insert(id, purpose);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }
}
