//! The control-plane adapter (harness/CONTROL.md, `control-v1.schema.json`): JSON lines on our
//! stdin (commands: the harness plays the user) and stdout (events: what the client's model
//! shows). This is the part a real client would copy: it turns each command into the same call
//! the UI would make (`Client::prompt`, `choose`, `cancel`, …) and prints the model changes the
//! client reports, one JSON object per line, flushed.

use std::io::{BufRead, Write};

use serde_json::Value;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::client::Client;
use crate::decide::Policy;

use acp_vocab::control::{ClientInfo, CommandType, Hello, Reopen};
pub use acp_vocab::control::{Command, Event};

/// The `hello` this client prints first: who it is, every command, and its auto-approval policy.
pub fn hello(name: &str, version: &str, policy: Option<&Policy>) -> Event {
    let mut hello = Hello::new(
        ClientInfo {
            name: name.into(),
            version: version.into(),
        },
        CommandType::ALL.to_vec(),
    );
    hello.policy = policy.map(Policy::to_hello);
    Event::Hello(hello)
}

/// Print one event as a JSON line and flush it.
pub fn emit(event: &Event) {
    let line = event.to_line();
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
        // session lifecycle (client/sessions.rs)
        Command::LoadSession {
            seq,
            session,
            session_id,
            cwd,
        } => {
            client
                .reopen_session(seq, session, session_id, cwd, Reopen::Load)
                .await
        }
        Command::ResumeSession {
            seq,
            session,
            session_id,
            cwd,
        } => {
            client
                .reopen_session(seq, session, session_id, cwd, Reopen::Resume)
                .await
        }
        Command::ListSessions { seq, cwd } => client.list_sessions(seq, cwd),
        Command::CloseSession { seq, session } => client.close_session(seq, &session),
        // modes and config options (client/modes.rs)
        Command::SetMode {
            seq,
            session,
            mode_id,
        } => client.set_mode(seq, &session, mode_id),
        Command::SetConfigOption {
            seq,
            session,
            config_id,
            value,
        } => client.set_config_option(seq, &session, config_id, value),
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

    /// The events are the shared vocabulary's (its own test covers every shape); what is this
    /// client's own is the hello, with and without a policy.
    #[test]
    fn the_hello_validates_with_and_without_a_policy() {
        let v = validator();
        for policy in [
            None,
            Policy::parse("read-only").ok(),
            Policy::parse("approve-all").ok(),
        ] {
            let json =
                serde_json::to_value(hello("acp-reference-client", "0.1.0", policy.as_ref()))
                    .expect("serializes");
            assert!(v.is_valid(&json), "{json}");
        }
        let json = serde_json::to_value(hello("c", "1", Policy::parse("read-only").ok().as_ref()))
            .unwrap();
        assert_eq!(
            json["policy"],
            json!({"approves":["read","search"],"scope":"workspace","allowAlways":false})
        );
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
