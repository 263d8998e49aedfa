//! The agent connection: accepted at the first wire step, one reader task recording and filing
//! every client line, and recorded writes bounded by the step timeout.

use std::sync::Arc;
use std::time::Duration;

use acp_vocab::note::Note;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::user::guard;
use super::{AgentConn, Connector, Engine, StepResult, Stop};
use crate::mailbox::{Mailbox, Msg, WaitError};
use crate::scenario::Step;
use crate::wire::{self, Frame, FrameReader};
use acp_vocab::transcript::{Direction, Recorder};

pub(super) struct Conn {
    pub(super) id: u32,
    pub(super) writer: Box<dyn AsyncWrite + Send + Unpin>,
    pub(super) mailbox: Arc<Mailbox>,
    pub(super) reader: tokio::task::JoinHandle<()>,
}

impl<'a, C: Connector> Engine<'a, C> {
    /// The agent connection, accepted at the first wire step.
    pub(super) async fn connection(
        &mut self,
        step: &Step,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<&mut Conn, Stop> {
        if self.conn.is_none() {
            let accepted = guard(
                self.progress.clone(),
                tokio::time::timeout_at(deadline, self.connector.accept()),
            )
            .await?;
            let AgentConn { id, reader, writer } = match accepted {
                Ok(Ok(conn)) => conn,
                Ok(Err(e)) => {
                    return Err(
                        self.harness(step, format!("accepting the agent connection failed: {e}"))
                    );
                }
                Err(_) => {
                    return Err(self.timed_out(
                        step,
                        "the client did not start the agent (no agent connection)",
                        timeout,
                    ));
                }
            };
            let mailbox = Arc::new(Mailbox::new());
            let reader = tokio::spawn(read_loop(
                id,
                reader,
                self.cfg.max_frame,
                self.rec.clone(),
                mailbox.clone(),
            ));
            self.conn = Some(Conn {
                id,
                writer,
                mailbox,
                reader,
            });
        }
        Ok(self.conn.as_mut().expect("just set"))
    }

    /// Takes the first unconsumed client message that `fits`, waiting at most `timeout`.
    pub(super) async fn take<T>(
        &mut self,
        step: &Step,
        timeout: Duration,
        what: &str,
        fits: impl FnMut(&Msg) -> Option<T>,
    ) -> Result<(Msg, T), Stop> {
        match self.take_within(step, timeout, what, fits).await? {
            Some(found) => Ok(found),
            None => Err(self.timed_out(step, &format!("client sent no {what}"), timeout)),
        }
    }

    /// [`Self::take`], but a timeout is `Ok(None)` (no note, the run goes on).
    pub(super) async fn take_within<T>(
        &mut self,
        step: &Step,
        timeout: Duration,
        what: &str,
        fits: impl FnMut(&Msg) -> Option<T>,
    ) -> Result<Option<(Msg, T)>, Stop> {
        let deadline = Instant::now() + timeout;
        let mailbox = self
            .connection(step, deadline, timeout)
            .await?
            .mailbox
            .clone();
        match guard(self.progress.clone(), mailbox.take(fits, deadline)).await? {
            Ok(found) => Ok(Some(found)),
            Err(WaitError::TimedOut) => Ok(None),
            Err(WaitError::Closed) => Err(self.closed(step, &format!("waiting for {what}"))),
        }
    }

    /// Records, then writes one frame (plus `\n`).
    pub(super) async fn write(
        &mut self,
        step: &Step,
        frame: &[u8],
        timeout: Duration,
    ) -> StepResult {
        self.write_parts(step, &[frame], timeout).await
    }

    /// Records the whole frame once, then writes it in `parts` (the last gets the `\n`), pausing
    /// briefly between parts so they really travel as separate writes.
    pub(super) async fn write_parts(
        &mut self,
        step: &Step,
        parts: &[&[u8]],
        timeout: Duration,
    ) -> StepResult {
        self.write_recorded(step, &[&parts.concat()], parts, timeout)
            .await
    }

    /// Records `frames` (what the client will read), then writes `parts` as described for
    /// [`Self::write_parts`], all within `timeout`.
    pub(super) async fn write_recorded(
        &mut self,
        step: &Step,
        frames: &[&[u8]],
        parts: &[&[u8]],
        timeout: Duration,
    ) -> StepResult {
        let deadline = Instant::now() + timeout;
        let rec = self.rec;
        let progress = self.progress.clone();
        let fault = self.faulting;
        let conn = self.connection(step, deadline, timeout).await?;
        for frame in frames {
            match fault {
                // A frame broken on purpose says so itself: no check blames the client for it.
                Some(kind) => rec.record_fault(conn.id, Direction::AgentToClient, frame, kind),
                None => rec.record(conn.id, Direction::AgentToClient, frame),
            };
        }
        let writer = &mut conn.writer;
        let written = guard(
            progress,
            tokio::time::timeout_at(deadline, async move {
                for (i, part) in parts.iter().enumerate() {
                    if i + 1 == parts.len() {
                        wire::write_frame(writer, part).await?;
                    } else {
                        wire::write_chunk(writer, part).await?;
                        tokio::time::sleep(SPLIT_PAUSE).await;
                    }
                }
                Ok::<(), std::io::Error>(())
            }),
        )
        .await?;
        match written {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.closed(step, &format!("the agent was writing to it ({e})"))),
            Err(_) => Err(self.timed_out(step, "client did not read the agent's output", timeout)),
        }
    }
}

/// Pause between the two writes of a `split` fault, so a reader sees two chunks.
pub(super) const SPLIT_PAUSE: Duration = Duration::from_millis(10);

/// Frames go on the wire compact, keys in their written order.
pub(super) fn to_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}

/// Records every line the client writes and files JSON objects into the mailbox, until EOF.
pub(super) async fn read_loop(
    conn: u32,
    reader: Box<dyn AsyncRead + Send + Unpin>,
    max_frame: usize,
    rec: Recorder,
    mailbox: Arc<Mailbox>,
) {
    let mut frames = FrameReader::new(reader, max_frame);
    loop {
        match frames.next_frame().await {
            Ok(Some(Frame::Line(bytes))) => {
                let index = rec.record(conn, Direction::ClientToAgent, &bytes);
                if let Some(msg) = Msg::parse(index, &bytes) {
                    mailbox.push(msg);
                }
            }
            Ok(Some(Frame::TooLong { len })) => {
                rec.note(&Note::FrameTooLong {
                    conn: Some(conn),
                    bytes: len,
                    max: Some(max_frame),
                    wire: None,
                });
            }
            Ok(Some(Frame::Unterminated(bytes))) => {
                let index = rec.record(conn, Direction::ClientToAgent, &bytes);
                rec.note(&Note::UnterminatedFrame { conn, frame: index });
            }
            Ok(None) => break,
            Err(e) => {
                rec.note(&Note::ReadError {
                    conn,
                    error: e.to_string(),
                });
                break;
            }
        }
    }
    mailbox.close();
}
