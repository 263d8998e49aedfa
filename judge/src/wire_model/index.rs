//! The one-pass builder behind [`WireModel::new`]: every index of the model is filled while
//! walking the transcript once, one step per kind of entry (note, control message, wire request,
//! notification, response).

use acp_vocab::method::Method;
use std::collections::VecDeque;

use acp_vocab::control::{Command, Event, Message};
use acp_vocab::note::FaultKind;
use acp_vocab::transcript::{Direction, Entry};
use serde_json::Value;

use super::permissions::pick;
use super::{
    ControlMsg, EffectiveToolCall, Map, MsgKind, MsgPositions, OfferedOption, PermissionRequest,
    Set, Side, ToolFields, WireModel, WireMsg, id_key,
};

/// (conn, requester side) → id key → …
type ById<T> = Map<(u32, Side), Map<String, T>>;

/// The model being built plus the bookkeeping only the pass needs.
struct Builder<'a> {
    m: WireModel<'a>,
    /// Pending request positions per id (FIFO): a response answers the oldest.
    open: ById<VecDeque<usize>>,
    /// The last request position per id: a response to an id already answered pairs with it.
    last: ById<usize>,
    seen_session: Set<&'a str>,
    /// (session, request id key) → permission positions, for control matching.
    perm_by_sid: Map<(&'a str, String), Vec<usize>>,
    /// Request id key → permission positions (a `choose` names no session).
    perm_by_id: Map<String, Vec<usize>>,
    /// (conn, session, toolCallId) → the effective tool call so far (updates only).
    running: Map<(u32, &'a str, &'a str), EffectiveToolCall<'a>>,
}

impl<'a> WireModel<'a> {
    /// One linear pass over the transcript.
    pub fn new(entries: &'a [Entry]) -> Self {
        let mut b = Builder::new(entries);
        for entry in entries {
            match entry.direction {
                Direction::Note => b.note(entry),
                Direction::HarnessToAdapter
                | Direction::AdapterToHarness
                | Direction::ObserverToHarness => b.control(entry),
                Direction::ClientToAgent | Direction::AgentToClient => b.wire(entry),
            }
        }
        b.m
    }
}

impl<'a> Builder<'a> {
    fn new(entries: &'a [Entry]) -> Self {
        // The per-message tables get their exact room up front: grown by doubling, a table of
        // 10^5 messages would keep room for 131,072 (docs/performance.md, "Frames per scenario").
        let wire = entries.iter().filter(|e| e.direction.is_wire()).count();
        Builder {
            m: WireModel {
                entries,
                msgs: Vec::with_capacity(wire),
                msg_pos: MsgPositions::for_transcript(entries.len()),
                answers: Map::default(),
                answered: Vec::with_capacity(wire),
                msg_session: Vec::with_capacity(wire),
                by_session: Map::default(),
                unpaired_responses: Vec::new(),
                reused_ids: Vec::new(),
                session_ids: Vec::new(),
                controls: Vec::new(),
                notes: Vec::new(),
                handles: Map::default(),
                tool_frames: Map::default(),
                items: Default::default(),
                permissions: Vec::new(),
                perm_at: Map::default(),
                client_init: Map::default(),
                agent_init: Map::default(),
                first_invalid_agent_frame: Map::default(),
            },
            open: Map::default(),
            last: Map::default(),
            seen_session: Set::default(),
            perm_by_sid: Map::default(),
            perm_by_id: Map::default(),
            running: Map::default(),
        }
    }

    fn see_session(&mut self, sid: &'a str) {
        if self.seen_session.insert(sid) {
            self.m.session_ids.push(sid);
        }
    }

    /// A harness note.
    fn note(&mut self, entry: &'a Entry) {
        if let Some(json) = entry.json() {
            self.m.notes.push((entry.index, json));
        }
    }

    /// A control command or event: indexed by handle, tool call, or the permission request it
    /// is about.
    fn control(&mut self, entry: &'a Entry) {
        let message = entry.control();
        // A line that is not JSON is no control message at all (one that is JSON but no valid
        // message is kept, with no message).
        if message.is_none() && entry.parse_json().is_none() {
            return;
        }
        let index = entry.index;
        let m = &mut self.m;
        let pos = m.controls.len();
        match message {
            Some(Message::Event(Event::SessionOpened {
                session,
                session_id,
            })) => {
                m.handles
                    .entry(session)
                    .or_default()
                    .push((index, session_id));
            }
            // A reopened session (session lifecycle) maps its handle like a new one.
            Some(Message::Event(Event::SessionLoaded(loaded))) => {
                m.handles
                    .entry(&loaded.session)
                    .or_default()
                    .push((index, &loaded.session_id));
            }
            Some(Message::Event(Event::Item(item))) => m
                .items
                .entry((&item.session_id, &item.tool_call_id))
                .or_default()
                .push(pos),
            Some(Message::Event(Event::Approval(card))) => {
                let key = (card.session_id.as_str(), id_key(&card.request_id));
                if let Some(p) = pick(&m.permissions, self.perm_by_sid.get(&key), |p| {
                    p.approvals.is_empty()
                }) {
                    m.permissions[p].approvals.push(index);
                }
            }
            Some(Message::Event(Event::ApprovalResolved(resolved))) => {
                let key = (resolved.session_id.as_str(), id_key(&resolved.request_id));
                if let Some(p) = pick(&m.permissions, self.perm_by_sid.get(&key), |p| {
                    p.resolutions.is_empty()
                }) {
                    m.permissions[p].resolutions.push(index);
                }
            }
            Some(Message::Command(Command::Choose { request_id, .. })) => {
                // The card the user clicked: the latest request with that id whose
                // approval was shown, else the latest request with that id.
                let candidates = self.perm_by_id.get(&id_key(request_id));
                if let Some(p) = pick(&m.permissions, candidates, |p| !p.approvals.is_empty()) {
                    m.permissions[p].chooses.push(index);
                }
            }
            _ => {}
        }
        m.controls.push(ControlMsg {
            index,
            command: entry.direction == Direction::HarnessToAdapter,
            observed: entry.direction == Direction::ObserverToHarness,
            message,
        });
    }

    /// A wire frame: classified, then indexed by what it is.
    fn wire(&mut self, entry: &'a Entry) {
        let from = if entry.direction == Direction::ClientToAgent {
            Side::Client
        } else {
            Side::Agent
        };
        // The engine marks every frame it broke on purpose (`Entry::fault`).
        let fault = entry.fault.map(FaultKind::as_str);
        let pos = self.m.msgs.len();
        self.m.msg_pos.insert(entry.index, pos);
        self.m.answered.push(None);
        let msg = WireMsg::new(entry, from, fault);
        let session = match msg.kind {
            MsgKind::Request { id, method } => self.request(&msg, pos, id, method),
            MsgKind::Notification { method } => self.notification(&msg, method),
            MsgKind::Response { id, .. } => self.response(&msg, pos, id),
            MsgKind::Invalid { .. } => {
                if from == Side::Agent {
                    self.m
                        .first_invalid_agent_frame
                        .entry(entry.conn)
                        .or_insert(entry.index);
                }
                None
            }
        };
        if let Some(sid) = session {
            self.m.by_session.entry(sid).or_default().push(pos);
        }
        self.m.msg_session.push(session);
        self.m.msgs.push(msg);
    }

    /// A request: opened for pairing; returns its session.
    fn request(
        &mut self,
        msg: &WireMsg<'a>,
        pos: usize,
        id: &'a Value,
        method: &'a str,
    ) -> Option<&'a str> {
        let (conn, from) = (msg.conn, msg.from);
        let key = id_key(id);
        let pending = self
            .open
            .entry((conn, from))
            .or_default()
            .entry(key.clone())
            .or_default();
        if from == Side::Client {
            if let Some(&older) = pending.front() {
                self.m
                    .reused_ids
                    .push((msg.index, self.m.msgs[older].index));
            }
        }
        pending.push_back(pos);
        self.last
            .entry((conn, from))
            .or_default()
            .insert(key.clone(), pos);
        let session = msg.params_session_id();
        if from == Side::Client && method == Method::Initialize.as_str() {
            if let Some(p) = msg.params() {
                self.m.client_init.insert(conn, p);
            }
        }
        if matches!(
            Method::parse(method),
            Some(Method::SessionLoad | Method::SessionResume)
        ) {
            if let Some(sid) = session {
                self.see_session(sid);
            }
        }
        if from == Side::Agent && method == Method::SessionRequestPermission.as_str() {
            self.permission_request(msg, id, key, session);
        }
        session
    }

    /// An agent `session/request_permission`: a new [`PermissionRequest`] carrying the
    /// effective tool call as of this frame.
    fn permission_request(
        &mut self,
        msg: &WireMsg<'a>,
        id: &'a Value,
        key: String,
        session: Option<&'a str>,
    ) {
        let index = msg.index;
        let params = msg.params();
        let tool_call = params.and_then(|p| p.get("toolCall"));
        let tool_call_id = tool_call
            .and_then(|t| t.get("toolCallId"))
            .and_then(Value::as_str);
        let options = params
            .and_then(|p| p.get("options"))
            .and_then(Value::as_array)
            .map(|opts| {
                opts.iter()
                    .filter_map(|o| {
                        Some(OfferedOption {
                            option_id: o.get("optionId")?.as_str()?,
                            name: o.get("name").and_then(Value::as_str),
                            kind: o.get("kind").and_then(Value::as_str),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let p = self.m.permissions.len();
        let mut effective = match (session, tool_call_id) {
            (Some(sid), Some(tcid)) => self
                .running
                .get(&(msg.conn, sid, tcid))
                .cloned()
                .unwrap_or_else(|| EffectiveToolCall::new(tcid)),
            _ => EffectiveToolCall::new(tool_call_id.unwrap_or("")),
        };
        if let Some(fields) = tool_call {
            effective.merge(ToolFields::from_tree(fields), index);
        }
        if let Some(sid) = session {
            self.perm_by_sid
                .entry((sid, key.clone()))
                .or_default()
                .push(p);
            if let Some(tcid) = tool_call_id {
                self.push_tool_frame(sid, tcid, index);
            }
        }
        self.perm_by_id.entry(key).or_default().push(p);
        self.m.perm_at.insert(index, p);
        self.m.permissions.push(PermissionRequest {
            index,
            conn: msg.conn,
            id,
            session_id: session,
            tool_call,
            tool_call_id,
            options,
            answers: Vec::new(),
            approvals: Vec::new(),
            resolutions: Vec::new(),
            chooses: Vec::new(),
            fault: msg.fault,
            effective,
        });
    }

    fn push_tool_frame(&mut self, sid: &'a str, tcid: &'a str, index: usize) {
        self.m
            .tool_frames
            .entry(sid)
            .or_default()
            .entry(tcid)
            .or_default()
            .push(index);
    }

    /// A notification; an agent `tool_call`/`tool_call_update` updates the running effective
    /// tool call. Returns its session.
    fn notification(&mut self, msg: &WireMsg<'a>, method: &'a str) -> Option<&'a str> {
        let session = msg.params_session_id();
        if msg.from != Side::Agent || method != Method::SessionUpdate.as_str() {
            return session;
        }
        let (Some(sid), Some(update)) = (session, msg.tool_fields()) else {
            return session;
        };
        let is_tool = matches!(msg.update_variant(), Some("tool_call" | "tool_call_update"));
        if let (true, Some(tcid)) = (is_tool, update.tool_call_id) {
            self.push_tool_frame(sid, tcid, msg.index);
            self.running
                .entry((msg.conn, sid, tcid))
                .or_insert_with(|| EffectiveToolCall::new(tcid))
                .merge(update, msg.index);
        }
        session
    }

    /// A response: paired with the oldest pending request of the peer with the same id (type
    /// exact, per connection), else with the last request that had that id. Returns the
    /// request's session, or the one a `session/new` result created.
    fn response(&mut self, msg: &WireMsg<'a>, pos: usize, id: &'a Value) -> Option<&'a str> {
        let requester = msg.from.peer();
        let key = id_key(id);
        let request = self
            .open
            .get_mut(&(msg.conn, requester))
            .and_then(|o| o.get_mut(&key))
            .and_then(VecDeque::pop_front)
            .or_else(|| {
                self.last
                    .get(&(msg.conn, requester))
                    .and_then(|l| l.get(&key))
                    .copied()
            });
        let Some(req) = request else {
            self.m.unpaired_responses.push(pos);
            return None;
        };
        self.m.answers.entry(req).or_default().push(pos);
        self.m.answered[pos] = u32::try_from(req).ok();
        let mut session = self.m.msg_session[req];
        let req_index = self.m.msgs[req].index;
        let req_method = self.m.msgs[req].method();
        if let Some(&p) = self.m.perm_at.get(&req_index) {
            self.m.permissions[p].answers.push(msg.index);
        }
        if let (Some(method), Some(result)) = (req_method, msg.result()) {
            if method == Method::SessionNew.as_str() {
                if let Some(sid) = result.get("sessionId").and_then(Value::as_str) {
                    session = Some(sid);
                    self.see_session(sid);
                }
            }
            if method == Method::Initialize.as_str() && msg.from == Side::Agent {
                self.m.agent_init.insert(msg.conn, result);
            }
        }
        session
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire_model::test_support::*;
    use acp_vocab::note::Note;
    use acp_vocab::transcript::{Direction, Recorder};
    use serde_json::json;

    #[test]
    fn pairs_responses_type_exactly_per_connection() {
        let rec = Recorder::new();
        let r0 = a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}),
        );
        // Same id on another connection: must not pair with conn 1.
        let other = rec.record(
            2,
            Direction::ClientToAgent,
            br#"{"jsonrpc":"2.0","id":0,"result":{"content":""}}"#,
        );
        let wrong_type = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":"0","result":{"content":""}}),
        );
        let ok = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":0,"result":{"content":""}}),
        );
        let twice = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":0,"result":{"content":""}}),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.answers_to(r0), vec![ok, twice]);
        assert_eq!(m.request_of(ok), Some(r0));
        assert_eq!(m.request_of(wrong_type), None);
        assert_eq!(m.request_of(other), None);
        let unpaired: Vec<usize> = m
            .unpaired_responses
            .iter()
            .map(|&p| m.msgs[p].index)
            .collect();
        assert_eq!(unpaired, vec![other, wrong_type]);
        assert_eq!(m.session_of(ok), Some("s"));
    }

    #[test]
    fn detects_client_id_reuse_while_pending() {
        let rec = Recorder::new();
        let a = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}),
        );
        let b = c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}),
        );
        a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
        );
        a2c(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}),
        );
        // Reusing after the answer is fine.
        c2a(
            &rec,
            json!({"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{}}),
        );
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.reused_ids, vec![(b, a)]);
    }

    #[test]
    fn faults_are_read_off_the_frames_they_mark() {
        let rec = Recorder::new();
        // A fault note alone marks nothing: the frame carries its fault.
        rec.note(&Note::Fault {
            kind: FaultKind::Duplicate,
            step: None,
            conn: None,
        });
        let frame = json!({"jsonrpc":"2.0","method":"x"}).to_string();
        let dup = |rec: &Recorder| {
            rec.record_fault(
                1,
                Direction::AgentToClient,
                frame.as_bytes(),
                FaultKind::Duplicate,
            )
        };
        let (a, b) = (dup(&rec), dup(&rec));
        let c = a2c(&rec, json!({"jsonrpc":"2.0","method":"x"}));
        let e = rec.record_fault(2, Direction::AgentToClient, b"garbage", FaultKind::Raw);
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.fault_at(a), Some("duplicate"));
        assert_eq!(m.fault_at(b), Some("duplicate"));
        assert_eq!(m.fault_at(c), None);
        assert_eq!(m.fault_at(e), Some("raw"));
    }

    #[test]
    fn large_transcript_merges_every_update_of_its_tool_call() {
        let rec = Recorder::new();
        for i in 0..50_000u64 {
            a2c(
                &rec,
                json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",
                "update":{"sessionUpdate":"tool_call_update","toolCallId":format!("c{}", i % 100),"status":"in_progress"}}}),
            );
            c2a(
                &rec,
                json!({"jsonrpc":"2.0","id":i,"method":"_x/ping","params":{}}),
            );
        }
        let entries = rec.snapshot();
        let m = WireModel::new(&entries);
        assert_eq!(m.msgs.len(), 100_000);
        let e = m.effective_tool_call(Some(1), "s", "c7", entries.len());
        assert_eq!(e.merged, 500);
        assert_eq!(e.last_frame, Some(2 * (49_900 + 7)));
    }
}
