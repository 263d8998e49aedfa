//! The driver's plumbing: control commands and agent frames out, the client's lines in (both
//! planes through one inbox, in arrival order), and waits for the first unconsumed message that
//! fits, each bounded by the step timeout.

use std::time::Duration;

use acp_fake_agents::wire::{Frame, FrameReader};
use acp_vocab::transcript::Direction;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;

use super::{CONN, Inbound, Live, MAX_LINE, Stop};
use crate::control::validate_control;
use crate::fuzz::slice::Slice;

impl Live {
    /// Sends a control command with the next `seq`; returns the seq.
    pub(super) async fn command(
        &mut self,
        slice: &mut Slice,
        mut command: Value,
    ) -> Result<u64, Stop> {
        self.seq += 1;
        command["seq"] = json!(self.seq);
        let (_, mut line) = slice.push_sent(0, Direction::HarnessToAdapter, command);
        line.push('\n');
        let Some(stdin) = self.control.as_mut() else {
            return Err(Stop::Closed("the adapter's stdin is closed".into()));
        };
        let write = async {
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await
        };
        match tokio::time::timeout(Duration::from_secs(5), write).await {
            Ok(Ok(())) => Ok(self.seq),
            Ok(Err(e)) => Err(Stop::Closed(format!("cannot write to the adapter: {e}"))),
            Err(_) => Err(Stop::Timeout("the adapter does not read its stdin".into())),
        }
    }

    /// Sends agent frames in one write.
    pub(super) async fn send(
        &mut self,
        slice: &mut Slice,
        frames: Vec<Value>,
        timeout: Duration,
    ) -> Result<(), Stop> {
        let mut bytes = String::new();
        for frame in frames {
            let (_, line) = slice.push_sent(CONN, Direction::AgentToClient, frame);
            bytes.push_str(&line);
            bytes.push('\n');
        }
        let Some(wire) = self.wire.as_mut() else {
            return Err(Stop::Closed("no agent connection".into()));
        };
        match tokio::time::timeout(timeout, wire.write_all(bytes.as_bytes())).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(Stop::Closed(format!(
                "the client closed the agent connection: {e}"
            ))),
            Err(_) => Err(Stop::Timeout(
                "the client does not read from its agent".into(),
            )),
        }
    }

    /// Waits for the first unconsumed message that fits `pred`, consuming it; returns its index.
    pub(super) async fn wait(
        &mut self,
        slice: &mut Slice,
        mail: &mut Mailbox,
        timeout: Duration,
        what: &str,
        mut pred: impl FnMut(&Msg, &Slice) -> bool,
    ) -> Result<usize, Stop> {
        let msg = self
            .wait_keep(slice, mail, timeout, what, &mut pred)
            .await?;
        mail.take(&msg);
        Ok(msg.index())
    }

    /// Like [`Live::wait`], without consuming the message.
    pub(super) async fn wait_keep(
        &mut self,
        slice: &mut Slice,
        mail: &mut Mailbox,
        timeout: Duration,
        what: &str,
        mut pred: impl FnMut(&Msg, &Slice) -> bool,
    ) -> Result<Msg, Stop> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(m) = mail.unread.iter().find(|m| pred(m, slice)) {
                return Ok(*m);
            }
            let inbound = match tokio::time::timeout_at(deadline, self.inbox.recv()).await {
                Ok(Some(inbound)) => inbound,
                Ok(None) => return Err(Stop::Closed("the client's output ended".into())),
                Err(_) => {
                    slice.note(json!({"type":"step_timeout","waiting_for":what}));
                    return Err(Stop::Timeout(format!(
                        "the client sent no {what} within {} ms",
                        timeout.as_millis()
                    )));
                }
            };
            self.receive(slice, mail, inbound, timeout).await?;
        }
    }

    /// Records what the client wrote. Control events are validated against the control
    /// schema; agent-bound requests the fake agent does not serve are answered -32601.
    async fn receive(
        &mut self,
        slice: &mut Slice,
        mail: &mut Mailbox,
        inbound: Inbound,
        timeout: Duration,
    ) -> Result<(), Stop> {
        match inbound {
            Inbound::Control(bytes) => {
                let i = slice.push_raw(0, Direction::AdapterToHarness, &bytes);
                let valid = match slice.json(i) {
                    Some(event) => validate_control(event),
                    None => Err("not JSON".to_owned()),
                };
                if let Err(e) = valid {
                    return Err(Stop::Protocol(format!(
                        "adapter sent an invalid control message (#{i}): {e}"
                    )));
                }
                mail.unread.push(Msg::Control(i));
            }
            Inbound::Wire(bytes) => {
                let i = slice.push_raw(CONN, Direction::ClientToAgent, &bytes);
                let unserved = slice.json(i).and_then(|j| {
                    let method = j.get("method")?.as_str()?;
                    let id = j.get("id")?;
                    (!matches!(method, "initialize" | "session/new" | "session/prompt"))
                        .then(|| id.clone())
                });
                match unserved {
                    Some(id) => {
                        let error = json!({"jsonrpc":"2.0","id":id,"error":{"code":-32601,"message":"Method not found"}});
                        self.send(slice, vec![error], timeout).await?;
                    }
                    None => mail.unread.push(Msg::Wire(i)),
                }
            }
            Inbound::TooLong { wire, len } => {
                slice.note(json!({"type":"frame_too_long","bytes":len,"wire":wire}));
            }
            Inbound::Closed { wire } => {
                let plane = if wire {
                    "agent connection"
                } else {
                    "control plane (stdout)"
                };
                return Err(Stop::Closed(format!("the client closed its {plane}")));
            }
        }
        Ok(())
    }
}

/// A message waiting to be consumed: its slice index and plane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Msg {
    Control(usize),
    Wire(usize),
}

impl Msg {
    pub(super) fn index(&self) -> usize {
        match *self {
            Msg::Control(i) | Msg::Wire(i) => i,
        }
    }
}

/// Messages of the client not consumed by a wait yet (a `session/cancel` and an answer may come
/// in either order).
#[derive(Debug, Default)]
pub(super) struct Mailbox {
    unread: Vec<Msg>,
}

impl Mailbox {
    pub(super) fn take(&mut self, msg: &Msg) {
        self.unread.retain(|m| m != msg);
    }
}

pub(super) fn slice_json<'s>(m: &Msg, slice: &'s Slice) -> Option<&'s Value> {
    slice.json(m.index())
}

/// A control event of this `type`.
pub(super) fn is_event(m: &Msg, slice: &Slice, kind: &str) -> bool {
    matches!(m, Msg::Control(_))
        && slice_json(m, slice)
            .and_then(|j| j.get("type"))
            .and_then(Value::as_str)
            == Some(kind)
}

pub(super) fn is_request(m: &Msg, slice: &Slice, method: &str) -> bool {
    matches!(m, Msg::Wire(_))
        && slice_json(m, slice).is_some_and(|j| {
            j.get("method").and_then(Value::as_str) == Some(method) && j.get("id").is_some()
        })
}

pub(super) fn is_response(m: &Msg, slice: &Slice, id: &Value) -> bool {
    matches!(m, Msg::Wire(_))
        && slice_json(m, slice).is_some_and(|j| {
            j.get("method").is_none()
                && j.get("id") == Some(id)
                && (j.get("result").is_some() || j.get("error").is_some())
        })
}

/// Reads one plane's lines into the inbox until EOF.
pub(super) async fn read_plane(
    reader: impl tokio::io::AsyncRead + Unpin,
    wire: bool,
    inbox: mpsc::UnboundedSender<Inbound>,
) {
    let mut frames = FrameReader::new(reader, MAX_LINE);
    loop {
        let inbound = match frames.next_frame().await {
            Ok(Some(Frame::Line(bytes) | Frame::Unterminated(bytes))) if wire => {
                Inbound::Wire(bytes)
            }
            Ok(Some(Frame::Line(bytes) | Frame::Unterminated(bytes))) => Inbound::Control(bytes),
            Ok(Some(Frame::TooLong { len })) => Inbound::TooLong { wire, len },
            Ok(None) | Err(_) => {
                let _ = inbox.send(Inbound::Closed { wire });
                return;
            }
        };
        if inbox.send(inbound).is_err() {
            return;
        }
    }
}
