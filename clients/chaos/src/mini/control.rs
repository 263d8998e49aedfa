//! The control-plane side (harness/CONTROL.md): commands read from stdin, events written to
//! stdout.

use std::io::{BufRead, Write};
use std::sync::mpsc::Sender;

use acp_vocab::control::{Command as ControlCommand, Event, Turn, TurnState};
use serde_json::Value;

use super::{Input, Mini, log};

pub(super) fn emit(event: Event) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", event.to_line()).and_then(|()| out.flush());
}

pub(super) fn turn(session_id: &str, state: TurnState) -> Event {
    Event::Turn(Turn {
        session_id: session_id.to_owned(),
        state,
        stop_reason: None,
        message: None,
        observed: None,
    })
}

/// Control commands from stdin. With `first_only`, one line is read and then stdin is never
/// read again (the thread keeps the handle and parks).
pub(super) fn spawn_control_reader(tx: Sender<Input>, first_only: bool) {
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut lines = stdin.lock().lines();
        loop {
            match lines.next() {
                Some(Ok(line)) => {
                    if tx.send(Input::Control(line)).is_err() {
                        return;
                    }
                    if first_only {
                        log("not reading stdin any more");
                        loop {
                            std::thread::park();
                        }
                    }
                }
                _ => {
                    let _ = tx.send(Input::ControlEof);
                    return;
                }
            }
        }
    });
}

impl Mini {
    fn session_id(&self, handle: &str) -> Option<String> {
        self.sessions
            .iter()
            .find(|(h, _)| h == handle)
            .map(|(_, id)| id.clone())
    }

    /// Tells the harness's control plane; wire only, there is none (the turn's end is the exit).
    pub(super) fn show(&self, event: Event) {
        if self.adapter {
            emit(event);
        }
    }

    pub(super) fn error(&self, seq: Option<u64>, message: &str) {
        if !self.adapter {
            log(message);
        }
        self.show(Event::Error {
            seq,
            message: message.to_owned(),
            observed: None,
        });
    }

    /// One control command; false to shut down.
    pub(super) fn on_control(&mut self, line: &str) -> bool {
        let Ok(json) = serde_json::from_str::<Value>(line) else {
            self.error(None, "a command line is not JSON");
            return true;
        };
        let seq = json.get("seq").and_then(Value::as_u64);
        let Ok(command) = serde_json::from_value::<ControlCommand>(json) else {
            self.error(seq, "unknown command");
            return true;
        };
        let seq = Some(command.seq());
        match command {
            ControlCommand::NewSession { session, cwd, .. } => self.new_session(seq, session, cwd),
            ControlCommand::Prompt { session, text, .. } => match self.session_id(&session) {
                Some(session_id) => self.prompt(session_id, text),
                None => self.error(seq, "no such session"),
            },
            ControlCommand::Choose {
                request_id,
                option_id,
                ..
            } => self.choose(seq, request_id, &option_id),
            ControlCommand::Cancel { session, .. } => {
                if let Some(session_id) = self.session_id(&session) {
                    self.cancel(&session_id);
                }
            }
            // Its hello offers neither the session lifecycle nor modes, so these never come from
            // the harness.
            ControlCommand::LoadSession { .. }
            | ControlCommand::ResumeSession { .. }
            | ControlCommand::ListSessions { .. }
            | ControlCommand::CloseSession { .. }
            | ControlCommand::SetMode { .. }
            | ControlCommand::SetConfigOption { .. } => self.error(seq, "unsupported command"),
            ControlCommand::Shutdown { .. } => return false,
        }
        true
    }
}
