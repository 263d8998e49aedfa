//! The agent's end of one connection: a reader task that records every client line and files
//! the JSON objects into a [`Mailbox`], and writes that are recorded before they are made.
//!
//! The scenario engine plays scenarios over it; the harness's long-lived fuzz driver plays its
//! permission turns over the same link, so both record and match client frames one way.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};

use crate::engine::AgentConn;
use crate::mailbox::{Mailbox, Msg};
use crate::wire::{self, Frame, FrameReader};
use acp_vocab::note::FaultKind;
use acp_vocab::note::Note;
use acp_vocab::transcript::{Direction, Recorder};

/// Pause between the parts of a frame written in pieces (a `split` fault), so a reader sees
/// separate chunks.
const PART_PAUSE: Duration = Duration::from_millis(10);

/// One open agent connection.
pub struct AgentLink {
    /// Transcript connection id.
    pub id: u32,
    writer: Box<dyn AsyncWrite + Send + Unpin>,
    mailbox: Arc<Mailbox>,
    reader: tokio::task::JoinHandle<()>,
    /// The agent process of this connection ([`AgentConn::pid`]).
    pid: Option<i32>,
}

impl AgentLink {
    /// Starts reading `conn`: every client line is recorded in `rec` (before anything looks at
    /// it) and, if it is a JSON object, filed in the mailbox, until EOF. Lines longer than
    /// `max_frame` are noted, not kept. Needs a tokio runtime.
    pub fn open(conn: AgentConn, max_frame: usize, rec: &Recorder) -> AgentLink {
        let AgentConn {
            id,
            reader,
            writer,
            pid,
        } = conn;
        let mailbox = Arc::new(Mailbox::new());
        let reader = tokio::spawn(read_loop(
            id,
            reader,
            max_frame,
            rec.clone(),
            mailbox.clone(),
        ));
        AgentLink {
            id,
            writer,
            mailbox,
            reader,
            pid,
        }
    }

    /// The agent process of this connection, if there is one to kill.
    pub fn pid(&self) -> Option<i32> {
        self.pid
    }

    /// What the client has sent, for waits ([`Mailbox::take`]).
    pub fn mailbox(&self) -> &Arc<Mailbox> {
        &self.mailbox
    }

    /// Records `frames` as sent to the client (every frame is recorded before it is written).
    /// A frame broken on purpose (`fault`) says so itself, so no check blames the client for it.
    pub fn record_sent(&self, rec: &Recorder, frames: &[&[u8]], fault: Option<FaultKind>) {
        for frame in frames {
            match fault {
                Some(kind) => rec.record_fault(self.id, Direction::AgentToClient, frame, kind),
                None => rec.record(self.id, Direction::AgentToClient, frame),
            };
        }
    }

    /// Writes `parts`: the last one gets the `\n`, and a short pause separates the parts so they
    /// really travel as separate writes. Unbounded: the caller puts a deadline on it.
    pub async fn write_parts(&mut self, parts: &[&[u8]]) -> std::io::Result<()> {
        for (i, part) in parts.iter().enumerate() {
            if i + 1 == parts.len() {
                wire::write_frame(&mut self.writer, part).await?;
            } else {
                wire::write_chunk(&mut self.writer, part).await?;
                tokio::time::sleep(PART_PAUSE).await;
            }
        }
        Ok(())
    }

    /// Writes bytes as they are, in one write (frames already recorded, each with its `\n`).
    /// Unbounded: the caller puts a deadline on it.
    pub async fn write_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        wire::write_chunk(&mut self.writer, bytes).await
    }

    /// Records then writes whole frames, each on its own line, in one write.
    pub async fn send(&mut self, rec: &Recorder, frames: &[&[u8]]) -> std::io::Result<()> {
        self.record_sent(rec, frames, None);
        let mut bytes = Vec::with_capacity(frames.iter().map(|f| f.len() + 1).sum());
        for (i, frame) in frames.iter().enumerate() {
            if i > 0 {
                bytes.push(b'\n');
            }
            bytes.extend_from_slice(frame);
        }
        wire::write_frame(&mut self.writer, &bytes).await
    }

    /// The writer (kept open until the caller has shut the client down) and the reader task
    /// (it ends at EOF).
    pub fn into_parts(
        self,
    ) -> (
        Box<dyn AsyncWrite + Send + Unpin>,
        tokio::task::JoinHandle<()>,
    ) {
        (self.writer, self.reader)
    }
}

/// Records every line the client writes and files JSON objects into the mailbox, until EOF.
async fn read_loop(
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
