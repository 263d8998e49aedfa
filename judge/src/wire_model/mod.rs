//! Views over a transcript that every check shares: what each wire frame *is*, which response
//! answers which request, which sessions exist, what the control plane said, and what the agent
//! had told the client about a tool call at any point in time.
//!
//! [`WireModel::new`] makes one linear pass over the transcript and builds every index; queries
//! are then lookups or binary searches, so a transcript of 10^5 frames costs O(n log n) at most.
//! The model only borrows the transcript: every `&str`/`&Value` it hands out points into the
//! recorded frames.
//!
//! Submodules by concern: `envelope` (JSON-RPC classification), `control`
//! (control plane), `tool_calls` (effective tool call and kind), `permissions`, `sessions`, and
//! `index` (the one-pass builder). Their public items are re-exported here.

use std::collections::{BTreeMap, HashMap, HashSet};

use acp_vocab::transcript::Entry;
use serde_json::Value;

mod control;
mod envelope;
mod index;
mod permissions;
mod sessions;
mod tool_calls;
mod tool_fields;

pub use control::{ControlMsg, UserCancel};
pub use envelope::{
    MsgKind, ResponseBody, Side, WireMsg, classify, describe_id, id_key, json_type,
};
pub use permissions::{OfferedOption, PermissionAnswer, PermissionRequest};
pub use tool_calls::{EffectiveToolCall, ExpectedSubject, Subject, is_specific_kind};
pub use tool_fields::ToolFields;

type SessionTool<'a> = (&'a str, &'a str);

/// The model's hash maps and sets. They hash with foldhash rather than std's SipHash: building
/// the model of a short transcript (the in-process fuzz target's turn, a few frames) was about a
/// third hashing short keys into a dozen maps, and the keys are the frames' own ids and strings,
/// read only by the judge. Seeded per map, like std's `RandomState`, so no order is promised.
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
type Set<T> = HashSet<T, foldhash::fast::RandomState>;

/// Every shared view over one transcript. Build it once per case with [`WireModel::new`].
#[derive(Debug)]
pub struct WireModel<'a> {
    pub entries: &'a [Entry],
    /// Every wire frame in transcript order.
    pub msgs: Vec<WireMsg<'a>>,
    /// Transcript index → position in `msgs`.
    msg_pos: MsgPositions,
    /// For requests: positions (in `msgs`) of the responses paired with them.
    /// Kept for the requests that have one only: most frames of a large transcript are
    /// notifications.
    answers: Map<usize, Vec<usize>>,
    /// For responses: position of the request they answer.
    answered: Vec<Option<u32>>,
    /// The ACP session each message belongs to (params.sessionId, or its request's, or the
    /// session a `session/new` response created).
    msg_session: Vec<Option<&'a str>>,
    /// Positions of messages per session, in order.
    by_session: Map<&'a str, Vec<usize>>,
    /// Responses that answer no request (positions).
    pub unpaired_responses: Vec<usize>,
    /// Client requests sent with an id that was still pending: (new, pending) transcript indices.
    pub reused_ids: Vec<(usize, usize)>,
    /// Session ids in order of first appearance.
    pub session_ids: Vec<&'a str>,
    /// Control-plane commands and events in order.
    pub controls: Vec<ControlMsg<'a>>,
    /// Harness notes (index, json) in order.
    pub notes: Vec<(usize, &'a Value)>,
    handles: Map<&'a str, Vec<(usize, &'a str)>>,
    /// (sessionId, toolCallId) → agent frames (transcript indices) that describe the tool call:
    /// `tool_call` / `tool_call_update` updates and permission requests.
    tool_frames: Map<&'a str, Map<&'a str, Vec<usize>>>,
    /// (sessionId, toolCallId) → positions in `controls` of `item` events.
    items: BTreeMap<SessionTool<'a>, Vec<usize>>,
    pub permissions: Vec<PermissionRequest<'a>>,
    perm_at: Map<usize, usize>,
    /// Client `initialize` params and agent `initialize` results per connection.
    client_init: Map<u32, &'a Value>,
    agent_init: Map<u32, &'a Value>,
    /// First agent frame per connection that is not a JSON-RPC message.
    first_invalid_agent_frame: Map<u32, usize>,
}

impl<'a> WireModel<'a> {
    pub fn entry(&self, index: usize) -> Option<&'a Entry> {
        self.entries
            .get(index)
            .filter(|e| e.index == index)
            .or_else(|| {
                // Transcripts are dense (index == position); tolerate others.
                self.entries.iter().find(|e| e.index == index)
            })
    }

    /// The wire message recorded at a transcript index.
    pub fn msg(&self, index: usize) -> Option<&WireMsg<'a>> {
        self.msg_pos.get(index).map(|p| &self.msgs[p])
    }

    /// The responses (transcript indices) paired with the request at `index`.
    pub fn answers_to(&self, index: usize) -> Vec<usize> {
        match self.msg_pos.get(index) {
            Some(p) => self
                .answers
                .get(&p)
                .into_iter()
                .flatten()
                .map(|&r| self.msgs[r].index)
                .collect(),
            None => Vec::new(),
        }
    }

    /// The request (transcript index) the response at `index` answers.
    pub fn request_of(&self, index: usize) -> Option<usize> {
        let p = self.msg_pos.get(index)?;
        self.answered[p].map(|r| self.msgs[r as usize].index)
    }

    /// The request message a response answers.
    pub fn request_msg_of(&self, response: &WireMsg<'a>) -> Option<&WireMsg<'a>> {
        self.msg(self.request_of(response.index)?)
    }

    /// Wire messages with transcript index >= `from`.
    pub fn msgs_from(&self, from: usize) -> &[WireMsg<'a>] {
        let start = self.msgs.partition_point(|m| m.index < from);
        &self.msgs[start..]
    }

    /// The client's `initialize` params on a connection.
    pub fn client_init(&self, conn: u32) -> Option<&'a Value> {
        self.client_init.get(&conn).copied()
    }

    /// The agent's `initialize` result on a connection.
    pub fn agent_init(&self, conn: u32) -> Option<&'a Value> {
        self.agent_init.get(&conn).copied()
    }

    /// True if the client advertised `clientCapabilities.fs.<capability>` = true on `conn`.
    pub fn client_fs_capability(&self, conn: u32, capability: &str) -> bool {
        self.client_init(conn)
            .and_then(|p| p.pointer(&format!("/clientCapabilities/fs/{capability}")))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// True for a client error response with id `null` sent after the agent wrote a frame that
    /// is not JSON-RPC on that connection: the JSON-RPC way to answer garbage (-32700/-32600),
    /// not a response to an unknown id.
    pub fn is_reply_to_garbage(&self, index: usize) -> bool {
        let Some(msg) = self.msg(index) else {
            return false;
        };
        msg.from == Side::Client
            && msg.is_error_response()
            && msg.id().is_some_and(Value::is_null)
            && self
                .first_invalid_agent_frame
                .get(&msg.conn)
                .is_some_and(|&first| first < index)
    }

    /// The fault kind announced for the agent frame at `index`, if any.
    pub fn fault_at(&self, index: usize) -> Option<&'a str> {
        self.msg(index).and_then(|m| m.fault)
    }
}

/// Transcript index → position in [`WireModel::msgs`]. A recorded transcript numbers its entries
/// 0, 1, 2…, so a table with one slot per entry does (4 bytes a frame, and no hashing on every
/// lookup, which the checks make for every frame); an index beyond it (a hand-edited transcript
/// graded offline) goes to a map.
#[derive(Debug)]
struct MsgPositions {
    dense: Vec<u32>,
    sparse: Map<usize, usize>,
}

impl MsgPositions {
    const NONE: u32 = u32::MAX;

    fn for_transcript(entries: usize) -> Self {
        MsgPositions {
            dense: vec![Self::NONE; entries],
            sparse: Map::default(),
        }
    }

    fn insert(&mut self, index: usize, pos: usize) {
        match (self.dense.get_mut(index), u32::try_from(pos)) {
            (Some(slot), Ok(pos)) if pos != Self::NONE => *slot = pos,
            _ => {
                self.sparse.insert(index, pos);
            }
        }
    }

    fn get(&self, index: usize) -> Option<usize> {
        match self.dense.get(index) {
            Some(&pos) if pos != Self::NONE => Some(pos as usize),
            _ => self.sparse.get(&index).copied(),
        }
    }
}

/// A harness note read as the vocabulary's [`acp_vocab::note::Note`] (`None` for a note it does
/// not know).
pub fn note_of(json: &Value) -> Option<acp_vocab::note::Note> {
    serde::Deserialize::deserialize(json).ok()
}

/// Frame builders shared by the submodules' tests.
#[cfg(test)]
mod test_support {
    use acp_vocab::transcript::{Direction, Recorder};
    use serde_json::Value;

    /// A client → agent frame on connection 1.
    pub(super) fn c2a(rec: &Recorder, v: Value) -> usize {
        rec.record(1, Direction::ClientToAgent, v.to_string().as_bytes())
    }

    /// An agent → client frame on connection 1.
    pub(super) fn a2c(rec: &Recorder, v: Value) -> usize {
        rec.record(1, Direction::AgentToClient, v.to_string().as_bytes())
    }

    /// An adapter → harness control event.
    pub(super) fn ev(rec: &Recorder, v: Value) -> usize {
        rec.record(0, Direction::AdapterToHarness, v.to_string().as_bytes())
    }
}
