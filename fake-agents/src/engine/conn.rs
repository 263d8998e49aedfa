//! The agent connection: accepted at the first wire step and opened as an [`AgentLink`] (its
//! reader task records and files every client line), waits on its mailbox, and recorded writes,
//! each bounded by the step timeout.

use std::time::Duration;

use serde_json::Value;

use super::user::guard;
use super::{BATCH_BYTES, Connector, Engine, StepResult, Stop};
use crate::link::AgentLink;
use crate::machine_time::Deadline;
use crate::mailbox::{Msg, WaitError};
use crate::scenario::Step;

impl<'a, C: Connector> Engine<'a, C> {
    /// The agent connection, accepted at the first wire step.
    pub(super) async fn connection(
        &mut self,
        step: &Step,
        deadline: &Deadline,
    ) -> Result<&mut AgentLink, Stop> {
        if self.conn.is_none() {
            let accepted =
                guard(self.progress.clone(), deadline.run(self.connector.accept())).await?;
            let conn = match accepted {
                Ok(Ok(conn)) => conn,
                // The connector knows the client is gone: the client's doing, not ours.
                Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionAborted => {
                    let reason = format!("{}: {e}", self.step_ref(step));
                    return Err(self.incomplete(step, reason));
                }
                Ok(Err(e)) => {
                    return Err(
                        self.harness(step, format!("accepting the agent connection failed: {e}"))
                    );
                }
                Err(_) => {
                    return Err(self.timed_out(
                        step,
                        "the client did not start the agent (no agent connection)",
                        deadline,
                    ));
                }
            };
            self.conn = Some(AgentLink::open(conn, self.cfg.max_frame, self.rec));
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
        let deadline = Deadline::after(timeout);
        match self.take_within(step, &deadline, fits).await? {
            Ok(found) => Ok(found),
            Err(WaitError::TimedOut) => {
                Err(self.timed_out(step, &format!("client sent no {what}"), &deadline))
            }
            Err(WaitError::Closed) => Err(self.closed(step, &format!("waiting for {what}"))),
        }
    }

    /// [`Self::take`], but a timeout or the connection's end is the caller's to handle (no
    /// note is written). Meanwhile a client request that no step takes is answered as the real
    /// agent answers it (`unmatched`), and the wait goes on.
    pub(super) async fn take_within<T>(
        &mut self,
        step: &Step,
        deadline: &Deadline,
        mut fits: impl FnMut(&Msg) -> Option<T>,
    ) -> Result<Result<(Msg, T), WaitError>, Stop> {
        enum Taken<T> {
            Fits(T),
            Unmatched,
        }
        loop {
            let mailbox = self.connection(step, deadline).await?.mailbox().clone();
            let progress = self.progress.clone();
            let unmatched = self.unmatched();
            let pick = |m: &Msg| match fits(m) {
                Some(t) => Some(Taken::Fits(t)),
                None => unmatched.is_unmatched(m).then_some(Taken::Unmatched),
            };
            match guard(progress, mailbox.take(pick, deadline)).await? {
                Ok((msg, Taken::Fits(t))) => return Ok(Ok((msg, t))),
                Ok((msg, Taken::Unmatched)) => self.answer_unmatched(step, &msg).await?,
                Err(e) => return Ok(Err(e)),
            }
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

    /// Records one `send` frame and queues it in the outbox instead of writing it, unless the
    /// outbox is full: then it goes out with the batch. After the client's departure it is
    /// only recorded.
    pub(super) async fn queue(
        &mut self,
        step: &Step,
        frame: &[u8],
        timeout: Duration,
    ) -> StepResult {
        if self.outbox.len() + frame.len() >= BATCH_BYTES {
            return self.write(step, frame, timeout).await;
        }
        let deadline = Deadline::after(timeout);
        let rec = self.rec;
        let fault = self.faulting;
        let conn = self.connection(step, &deadline).await?;
        conn.record_sent(rec, &[frame], fault);
        if self.departure_here().is_some() {
            return Ok(());
        }
        self.outbox.extend_from_slice(frame);
        self.outbox.push(b'\n');
        Ok(())
    }

    /// Writes what the outbox holds, bounded by the default step timeout; on the way out of a
    /// stopped run, so a failure here changes nothing more.
    pub(super) async fn flush_outbox(&mut self) {
        let bytes = std::mem::take(&mut self.outbox);
        if let (false, Some(conn)) = (bytes.is_empty(), self.conn.as_mut()) {
            let _ =
                crate::machine_time::timeout(self.cfg.step_timeout, conn.write_raw(&bytes)).await;
        }
    }

    /// Records `frames` (what the client will read), then writes `parts` as described for
    /// [`Self::write_parts`], all within `timeout`. Frames still in the outbox go first, in the
    /// same write as the first part. A write that fails because the client closed the
    /// connection is its departure (see `departure`): the run goes on without writing.
    pub(super) async fn write_recorded(
        &mut self,
        step: &Step,
        frames: &[&[u8]],
        parts: &[&[u8]],
        timeout: Duration,
    ) -> StepResult {
        let deadline = Deadline::after(timeout);
        let rec = self.rec;
        let progress = self.progress.clone();
        let fault = self.faulting;
        let mut first = std::mem::take(&mut self.outbox);
        self.connection(step, &deadline)
            .await?
            .record_sent(rec, frames, fault);
        if self.departure_here().is_some() {
            return Ok(());
        }
        let conn = self.conn.as_mut().expect("connected above");
        let parts: Vec<&[u8]> = match parts.split_first() {
            Some((head, rest)) if !first.is_empty() => {
                first.extend_from_slice(head);
                std::iter::once(first.as_slice())
                    .chain(rest.iter().copied())
                    .collect()
            }
            _ => parts.to_vec(),
        };
        let written = guard(progress, deadline.run(conn.write_parts(&parts))).await?;
        match written {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                self.depart(step, format!("while the agent was writing to it ({e})"));
                Ok(())
            }
            Err(_) => {
                Err(self.timed_out(step, "client did not read the agent's output", &deadline))
            }
        }
    }
}

/// Frames go on the wire compact, keys in their written order.
pub(super) fn to_bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap_or_default()
}
