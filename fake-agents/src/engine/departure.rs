//! A client that closes the agent connection while the agent is writing to it, or instead of
//! sending a message the scenario can do without (an `expect` with `on_timeout`, an `await`
//! with `go_on`: the branch for "it did not come" is played).
//!
//! Whether a client's exit beats the agent's writes is a race the machine's load decides: the
//! frames the agent writes first land in pipe and socket buffers, so when the client dies on a
//! frame (yopo on an unknown `session/update`) or leaves once its prompt is answered (acp-cli,
//! ralph-any `-m 1`), the agent's later writes sometimes all get through and sometimes fail.
//! Stopping the run at a failed write made the verdict depend on that race: `crash` one run, a
//! completed turn graded on its merits the next.
//!
//! So a failed write does not stop the run. The agent goes on as the real one does (it writes
//! into a closed pipe too): every later frame on that connection is recorded as sent but not
//! written, and pauses are skipped. The run ends where the scenario next needs the client, an
//! `expect` or an `await` (incomplete, as it is when the frames got through first), or at the
//! scenario's end (completed; the harness then judges the client's exit by itself: a signal is
//! a crash, an exit status is how a client without an adapter ends its turn).

use acp_vocab::note::Note;

use super::{Connector, Engine};
use crate::scenario::Step;

/// Where the client closed the connection under the agent's writes.
pub(super) struct Departure {
    /// The connection it closed.
    conn: u32,
    /// The step that found the connection closed: "step 13 (read-file.toml:72)".
    pub(super) at: String,
    /// How it found it: "while the agent was writing to it (Broken pipe …)", "instead of
    /// sending session/cancel …" (a wait with a branch for a message that does not come).
    pub(super) how: String,
}

impl<C: Connector> Engine<'_, C> {
    /// The client's departure from the current connection, if it closed it under our writes.
    pub(super) fn departure_here(&self) -> Option<&Departure> {
        let conn = self.conn.as_ref()?.id;
        self.departed.as_ref().filter(|d| d.conn == conn)
    }

    /// `step` found the connection closed (`how`): its write failed, or a wait whose scenario
    /// goes on without the message ended. Noted (the grading learns which frames never reached
    /// the client); what is still queued is dropped, being recorded already.
    pub(super) fn depart(&mut self, step: &Step, how: String) {
        let Some(conn) = self.conn.as_ref().map(|link| link.id) else {
            return;
        };
        self.rec.note(&Note::ConnectionClosed {
            step: step.label.clone(),
        });
        self.outbox.clear();
        self.departed = Some(Departure {
            conn,
            at: self.where_step(step),
            how,
        });
    }
}
