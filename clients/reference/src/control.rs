//! The control-plane adapter (harness/CONTROL.md, `control-v1.schema.json`): JSON lines on our
//! stdin (commands: the harness plays the user) and stdout (events: what the client's model
//! shows). This is the part a real client would copy: it turns each command into the same call
//! the UI would make (`Client::prompt`, `choose`, `cancel`, …) and prints the model changes the
//! client reports, one JSON object per line, flushed.

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::client::Client;
use crate::decide::Policy;
use crate::subject::Subject;

pub const PROTOCOL: &str = "acp-harness-control";
pub const VERSION: u32 = 1;
pub const SUPPORTS: [&str; 4] = ["new_session", "prompt", "choose", "cancel"];

/// Harness → adapter.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub enum Command {
    NewSession {
        seq: u64,
        session: String,
        cwd: String,
    },
    Prompt {
        seq: u64,
        session: String,
        text: String,
    },
    #[serde(rename_all = "camelCase")]
    Choose {
        seq: u64,
        request_id: Value,
        option_id: String,
    },
    Cancel {
        seq: u64,
        session: String,
    },
    Shutdown {
        seq: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

/// One button of an approval card.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Button {
    pub option_id: String,
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Selected,
    Cancelled,
}

/// Who answered an approval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum By {
    User,
    Cancel,
    /// The client decided by itself: its policy, or a grant the user gave with allow_always.
    Policy,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnState {
    Running,
    Completed,
    Cancelled,
    Failed,
    Refused,
}

/// Adapter → harness: a change of the client's model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    Hello {
        protocol: &'static str,
        version: u32,
        client: ClientInfo,
        supports: Vec<&'static str>,
        /// What the client approves by itself (absent: nothing).
        #[serde(skip_serializing_if = "Option::is_none")]
        policy: Option<Policy>,
    },
    #[serde(rename_all = "camelCase")]
    SessionOpened { session: String, session_id: String },
    #[serde(rename_all = "camelCase")]
    Item {
        session_id: String,
        tool_call_id: String,
        item_type: Subject,
        status: String,
        title: String,
    },
    #[serde(rename_all = "camelCase")]
    Approval {
        session_id: String,
        request_id: Value,
        tool_call_id: String,
        subject: Subject,
        options: Vec<Button>,
    },
    #[serde(rename_all = "camelCase")]
    ApprovalResolved {
        session_id: String,
        request_id: Value,
        outcome: Outcome,
        #[serde(skip_serializing_if = "Option::is_none")]
        option_id: Option<String>,
        by: By,
    },
    #[serde(rename_all = "camelCase")]
    Turn {
        session_id: String,
        state: TurnState,
        #[serde(skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    Error {
        #[serde(skip_serializing_if = "Option::is_none")]
        seq: Option<u64>,
        message: String,
    },
}

pub fn hello(name: &str, version: &str, policy: Option<&Policy>) -> Event {
    Event::Hello {
        protocol: PROTOCOL,
        version: VERSION,
        client: ClientInfo {
            name: name.into(),
            version: version.into(),
        },
        supports: SUPPORTS.to_vec(),
        policy: policy.cloned(),
    }
}

/// Print one event as a JSON line and flush it.
pub fn emit(event: &Event) {
    let line = match serde_json::to_string(event) {
        Ok(line) => line,
        Err(e) => {
            log!("cannot serialize event {event:?}: {e}");
            return;
        }
    };
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = writeln!(stdout, "{line}").and_then(|()| stdout.flush()) {
        log!("cannot write an event to stdout: {e}");
    }
}

/// Read command lines from stdin on a plain thread (a blocked read must never keep the process
/// alive at exit), until EOF.
fn spawn_stdin_reader() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            match stdin.read_until(b'\n', &mut line) {
                Ok(0) => return,
                Ok(_) => {
                    if tx
                        .send(String::from_utf8_lossy(&line).into_owned())
                        .is_err()
                    {
                        return;
                    }
                }
                Err(e) => {
                    log!("cannot read commands from stdin: {e}");
                    return;
                }
            }
        }
    });
    rx
}

/// What to do after a command.
#[derive(PartialEq)]
enum Flow {
    Continue,
    Shutdown,
}

/// Parse one command line and carry it out through the client's user-facing calls.
async fn dispatch(client: &mut Client, line: &str) -> Flow {
    if line.trim().is_empty() {
        return Flow::Continue;
    }
    let raw: Value = match serde_json::from_str(line) {
        Ok(raw) => raw,
        Err(e) => {
            client.report_error(None, format!("a command line is not JSON: {e}"));
            return Flow::Continue;
        }
    };
    let seq = raw.get("seq").and_then(Value::as_u64);
    let command: Command = match serde_json::from_value(raw) {
        Ok(command) => command,
        Err(e) => {
            client.report_error(seq, format!("invalid command: {e}"));
            return Flow::Continue;
        }
    };
    match command {
        Command::NewSession { seq, session, cwd } => client.new_session(seq, session, cwd).await,
        Command::Prompt { seq, session, text } => client.prompt(seq, &session, text),
        Command::Choose {
            seq,
            request_id,
            option_id,
        } => client.choose(seq, &request_id, &option_id),
        Command::Cancel { seq, session } => client.cancel(seq, &session),
        Command::Shutdown { seq } => {
            log!("shutdown requested (seq {seq})");
            return Flow::Shutdown;
        }
    }
    Flow::Continue
}

/// The adapter's main loop: hello, then commands and agent messages until `shutdown`, stdin EOF
/// or SIGTERM/SIGINT; then the agent is shut down (stdin closed, ≤ 2 s grace, kill).
pub async fn run(mut client: Client) -> anyhow::Result<()> {
    emit(&hello(client.name(), &client.version(), client.policy()));
    let mut commands = spawn_stdin_reader();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    loop {
        let flow = tokio::select! {
            line = commands.recv() => match line {
                Some(line) => dispatch(&mut client, &line).await,
                None => Flow::Shutdown,
            },
            incoming = client.next_from_agent() => {
                client.on_agent(incoming).await;
                Flow::Continue
            }
            _ = terminate.recv() => Flow::Shutdown,
            _ = interrupt.recv() => Flow::Shutdown,
        };
        for event in client.take_events() {
            emit(&event);
        }
        if flow == Flow::Shutdown {
            break;
        }
    }
    client.shutdown().await;
    for event in client.take_events() {
        emit(&event);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> jsonschema::Validator {
        let schema: Value =
            serde_json::from_str(include_str!("../../../harness/control-v1.schema.json"))
                .expect("schema is JSON");
        jsonschema::validator_for(&schema).expect("schema compiles")
    }

    #[test]
    fn every_event_shape_validates() {
        let v = validator();
        let events = [
            hello("acp-reference-client", "0.1.0", None),
            hello(
                "acp-reference-client",
                "0.1.0",
                Policy::parse("read-only").ok().as_ref(),
            ),
            Event::SessionOpened {
                session: "s1".into(),
                session_id: "ses".into(),
            },
            Event::Item {
                session_id: "ses".into(),
                tool_call_id: "c".into(),
                item_type: Subject::ModeSwitch,
                status: "pending".into(),
                title: "t".into(),
            },
            Event::Approval {
                session_id: "ses".into(),
                request_id: Value::Null,
                tool_call_id: "c".into(),
                subject: Subject::FileChange,
                options: vec![Button {
                    option_id: "o".into(),
                    label: "O".into(),
                }],
            },
            Event::ApprovalResolved {
                session_id: "ses".into(),
                request_id: json!("r"),
                outcome: Outcome::Cancelled,
                option_id: None,
                by: By::Cancel,
            },
            Event::ApprovalResolved {
                session_id: "ses".into(),
                request_id: json!(3),
                outcome: Outcome::Selected,
                option_id: Some("o".into()),
                by: By::User,
            },
            Event::Turn {
                session_id: "ses".into(),
                state: TurnState::Failed,
                stop_reason: None,
                message: Some("m".into()),
            },
            Event::Error {
                seq: None,
                message: "m".into(),
            },
            Event::Error {
                seq: Some(4),
                message: "m".into(),
            },
        ];
        for event in events {
            let json = serde_json::to_value(&event).expect("serializes");
            assert!(v.is_valid(&json), "{json}");
        }
    }

    #[test]
    fn commands_parse_strictly() {
        let choose: Command = serde_json::from_value(
            json!({"type": "choose", "seq": 1, "requestId": null, "optionId": "x"}),
        )
        .expect("choose");
        assert!(matches!(
            choose,
            Command::Choose {
                request_id: Value::Null,
                ..
            }
        ));
        for bad in [
            json!({"type": "choose", "seq": 1, "optionId": "x"}),
            json!({"type": "cancel", "seq": 1, "session": "s", "extra": 1}),
            json!({"type": "dance", "seq": 1}),
            json!({"type": "prompt", "seq": -1, "session": "s", "text": ""}),
        ] {
            assert!(
                serde_json::from_value::<Command>(bad.clone()).is_err(),
                "{bad}"
            );
        }
    }
}
