//! What the adapter has reported ([`State`]), and the task that reads its stdout: every line
//! recorded in the transcript, validated, and folded into the state; the waits of
//! [`ControlPlane`](super::ControlPlane) are woken after each.

use std::sync::{Arc, Mutex};

use acp_fake_agents::wire::{Frame, FrameReader};
use acp_vocab::control::{ApprovalResolved, Event, Hello, ResolvedBy};
use acp_vocab::note::Note;
use acp_vocab::transcript::Recorder;
use serde_json::Value;
use tokio::process::ChildStdout;
use tokio::sync::Notify;

use super::validate_control;

/// Longest control line accepted from an adapter.
const MAX_CONTROL_LINE: usize = 1 << 20;

/// What the adapter has told us so far.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) hello: Option<Hello>,
    /// The adapter broke the protocol; nothing it says afterwards is trusted.
    pub(super) protocol_error: Option<String>,
    pub(super) sessions: Vec<(String, String)>,
    /// Request ids of the approval cards shown.
    pub(super) approvals: Vec<Value>,
    pub(super) resolved: Vec<ApprovalResolved>,
    pub(super) errors: Vec<(Option<u64>, String)>,
    /// `list_sessions` commands answered (`sessions_listed` seq) and sessions shown closed
    /// (handles): session lifecycle.
    pub(super) listed: Vec<u64>,
    pub(super) closed: Vec<String>,
    /// `prompt` commands sent, and `turn` events that ended a turn: the client has settled when
    /// every prompt's turn has ended.
    pub(super) prompts_sent: usize,
    pub(super) turns_ended: usize,
    /// `new_session` commands sent (handle, seq): the client has shown each opened when the
    /// handle has a session id, or refused when an `error` names the seq.
    pub(super) opens_sent: Vec<(String, u64)>,
    pub(super) eof: bool,
}

impl State {
    /// The ACP session id of session `handle`, once the client has shown it open.
    pub(super) fn session_id(&self, handle: &str) -> Option<String> {
        self.sessions
            .iter()
            .find(|(h, _)| h == handle)
            .map(|(_, id)| id.clone())
    }

    /// Whether the client has shown the approval card of agent request `request_id`.
    pub(super) fn approval_shown(&self, request_id: &Value) -> bool {
        self.approvals.iter().any(|a| a == request_id)
    }

    /// The client resolved the request by its own policy without showing a card.
    pub(super) fn decided_by_client(&self, request_id: &Value) -> bool {
        self.resolved
            .iter()
            .any(|r| &r.request_id == request_id && r.by == Some(ResolvedBy::Policy))
    }

    /// The message of the `error` the adapter reported for command `seq`, if any.
    pub(super) fn error_for(&self, seq: u64) -> Option<String> {
        self.errors
            .iter()
            .find(|(s, _)| *s == Some(seq))
            .map(|(_, m)| m.clone())
    }
}

/// Reads adapter events until EOF, validating, recording and folding them into the state.
pub(super) async fn read_events(
    stdout: ChildStdout,
    rec: Recorder,
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
) {
    let mut frames = FrameReader::new(stdout, MAX_CONTROL_LINE);
    loop {
        let frame = frames.next_frame().await;
        let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
        match frame {
            Ok(Some(Frame::Line(bytes) | Frame::Unterminated(bytes))) => {
                let index = rec.record(
                    0,
                    acp_vocab::transcript::Direction::AdapterToHarness,
                    &bytes,
                );
                if st.protocol_error.is_none() {
                    match serde_json::from_slice::<Value>(&bytes) {
                        Err(e) => {
                            st.protocol_error = Some(format!(
                                "adapter sent a control line that is not JSON (#{index}): {e}"
                            ))
                        }
                        Ok(event) => match validate_control(&event) {
                            Err(e) => {
                                st.protocol_error = Some(format!(
                                    "adapter sent an invalid control message (#{index}): {e}"
                                ))
                            }
                            Ok(()) => match serde_json::from_value::<Event>(event) {
                                Ok(event) => apply_event(&mut st, event, index),
                                // Valid against the schema yet no event: a command sent back.
                                Err(e) => {
                                    st.protocol_error = Some(format!(
                                        "adapter sent a control message that is not an event (#{index}): {e}"
                                    ))
                                }
                            },
                        },
                    }
                }
            }
            Ok(Some(Frame::TooLong { len: too_long })) => {
                rec.note(&Note::ControlLineTooLong { bytes: too_long });
                st.protocol_error.get_or_insert_with(|| {
                    format!(
                        "adapter sent a control line of {too_long} bytes (limit {MAX_CONTROL_LINE})"
                    )
                });
            }
            Ok(None) | Err(_) => {
                st.eof = true;
                changed.notify_waiters();
                return;
            }
        }
        drop(st);
        changed.notify_waiters();
    }
}

/// Folds one valid event into the state; an event out of order is a protocol violation.
fn apply_event(st: &mut State, event: Event, index: usize) {
    match event {
        Event::Hello(hello) if st.hello.is_none() => st.hello = Some(hello),
        Event::Hello(_) => {
            st.protocol_error = Some(format!("adapter said hello twice (#{index})"));
        }
        other if st.hello.is_none() => {
            st.protocol_error = Some(format!(
                "adapter sent \"{}\" before hello (#{index})",
                other.type_name()
            ));
        }
        Event::SessionOpened {
            session,
            session_id,
        } => st.sessions.push((session, session_id)),
        Event::Approval(a) => st.approvals.push(a.request_id),
        Event::ApprovalResolved(r) => st.resolved.push(r),
        Event::Error { seq, message, .. } => st.errors.push((seq, message)),
        // session lifecycle: a reopened session takes prompts like a new one.
        Event::SessionLoaded(l) => st.sessions.push((l.session, l.session_id)),
        Event::SessionsListed { seq, .. } => st.listed.push(seq),
        Event::SessionClosed { session, .. } => st.closed.push(session),
        Event::Turn(t) if t.state.is_end() => st.turns_ended += 1,
        // item, running turns, modes, config values and plans are only recorded: the checks read
        // them from the transcript.
        Event::Item(_)
        | Event::Turn(_)
        | Event::Mode(_)
        | Event::ConfigOption(_)
        | Event::Plan(_) => {}
    }
}
