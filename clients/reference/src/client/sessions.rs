//! Session lifecycle as user actions: reopen an earlier session with its history
//! (`session/load`) or without it (`session/resume`), list earlier sessions (`session/list`),
//! close one (`session/close`). Each is sent only when the agent advertised it (R25, R28);
//! otherwise the user is told, and nothing goes on the wire.
//!
//! A loaded session is registered under the id it loads BEFORE `session/load` is sent: the agent
//! replays the history as `session/update`s before it answers, and those must find the session
//! (zed-industries/zed#54431 dropped them because the session was registered only once the load
//! resolved). The history shown is then reported in `session_loaded` when the answer comes.

use acp_vocab::method::Method;
use serde_json::{Value, json};

use super::{AgentState, Client, Purpose};
use crate::mutation::Mutant;
use crate::rpc::RpcError;
use acp_vocab::control::{Event, ListedSession, Reopen, SessionLoaded};

impl Client {
    /// The agent's `agentCapabilities` entry at `pointer` is present and not `false`/`null`.
    fn agent_can(&self, pointer: &str) -> bool {
        self.agent_caps
            .pointer(pointer)
            .is_some_and(|v| !v.is_null() && v != &Value::Bool(false))
    }

    /// The user reopens the earlier session `session_id` in `cwd` under handle `handle`.
    pub async fn reopen_session(
        &mut self,
        seq: u64,
        handle: String,
        session_id: String,
        cwd: String,
        how: Reopen,
    ) {
        if self.session_by_id(&session_id).is_some() {
            self.report_error(Some(seq), format!("session {session_id:?} is already open"));
            return;
        }
        self.open_session(seq, handle, cwd, Some((how, session_id)));
    }

    /// Sends the `session/load` or `session/resume` of a reopening session once the agent is
    /// ready, if the agent advertised it.
    pub(super) fn send_reopen(&mut self, handle: &str) {
        let Some(session) = self.session_by_handle(handle) else {
            return;
        };
        let Some((how, target)) = session.reopen.clone() else {
            return;
        };
        let (seq, cwd) = (session.seq, session.cwd.clone());
        let (method, pointer, missing) = match how {
            Reopen::Load => (Method::SessionLoad, "/loadSession", "loadSession"),
            Reopen::Resume => (
                Method::SessionResume,
                "/sessionCapabilities/resume",
                "sessionCapabilities.resume",
            ),
        };
        // MUTANT ungated-resume (the shape of modelcontextprotocol/python-sdk#2689: capability-
        // gated calls made whatever the peer advertised): resume is sent without looking.
        let gated = !(how == Reopen::Resume && self.mutant == Some(Mutant::UngatedResume));
        if gated && !self.agent_can(pointer) {
            self.sessions.retain(|s| s.handle != handle);
            self.report_error(
                Some(seq),
                format!("the agent cannot reopen sessions this way: it does not advertise {missing}, so no {method} was sent"),
            );
            return;
        }
        // MUTANT register-after-load (zed-industries/zed#54431): the session gets its id only
        // when the load answers, so the replayed updates before the answer find no session.
        if self.mutant != Some(Mutant::RegisterAfterLoad)
            && let Some(s) = self.sessions.iter_mut().find(|s| s.handle == handle)
        {
            s.id = Some(target.clone());
        }
        if let Some(conn) = &mut self.conn {
            conn.request(
                method,
                json!({"sessionId": target, "cwd": cwd, "mcpServers": []}),
                Purpose::Reopen {
                    seq,
                    handle: handle.to_owned(),
                },
            );
        }
    }

    /// The answer to a `session/load` / `session/resume`.
    pub(super) fn on_reopened(
        &mut self,
        seq: u64,
        handle: String,
        result: Result<Value, RpcError>,
    ) {
        let Some((how, target)) = self
            .session_by_handle(&handle)
            .and_then(|s| s.reopen.clone())
        else {
            return;
        };
        let answer = match result {
            Ok(answer) => answer,
            Err(e) => {
                self.sessions.retain(|s| s.handle != handle);
                let method = if how == Reopen::Load {
                    Method::SessionLoad.as_str()
                } else {
                    Method::SessionResume.as_str()
                };
                self.report_error(
                    Some(seq),
                    format!("{method} of {target:?} failed: {} ({})", e.message, e.code),
                );
                return;
            }
        };
        let Some(session) = self.sessions.iter_mut().find(|s| s.handle == handle) else {
            return;
        };
        session.id = Some(target.clone());
        // MUTANT replay-shown-twice (mrmans0n/alas#406): the client shows the transcript it kept
        // and then the agent's replay of it on top, so every entry appears twice.
        if self.mutant == Some(Mutant::ReplayShownTwice) {
            let kept = session.history.clone();
            session.history.extend_from(&kept);
        }
        let history = session.history.entries().to_vec();
        self.events.push(Event::SessionLoaded(SessionLoaded {
            session: handle,
            session_id: target.clone(),
            how,
            history,
        }));
        // A reopened session answers with its modes and config options like a new one.
        self.adopt_settings(&target, &answer);
    }

    /// The user opens the list of earlier sessions (of `cwd`, if given).
    pub fn list_sessions(&mut self, seq: u64, cwd: Option<String>) {
        if !matches!(self.agent, AgentState::Ready) {
            self.report_error(Some(seq), "no agent is connected yet: open a session first");
            return;
        }
        if !self.agent_can("/sessionCapabilities/list") {
            self.report_error(
                Some(seq),
                "the agent does not advertise sessionCapabilities.list, so no session/list was sent",
            );
            return;
        }
        let params = match cwd {
            Some(cwd) => json!({"cwd": cwd}),
            None => json!({}),
        };
        if let Some(conn) = &mut self.conn {
            conn.request(Method::SessionList, params, Purpose::ListSessions { seq });
        }
    }

    pub(super) fn on_listed(&mut self, seq: u64, result: Result<Value, RpcError>) {
        let sessions = match result {
            Ok(r) => r.get("sessions").and_then(Value::as_array).cloned(),
            Err(e) => {
                self.report_error(
                    Some(seq),
                    format!("session/list failed: {} ({})", e.message, e.code),
                );
                return;
            }
        };
        let Some(sessions) = sessions else {
            self.report_error(Some(seq), "session/list answered without a sessions array");
            return;
        };
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let sessions = sessions
            .iter()
            .filter_map(|s| {
                Some(ListedSession {
                    session_id: text(s, "sessionId")?,
                    cwd: text(s, "cwd"),
                    title: text(s, "title"),
                })
            })
            .collect();
        self.events.push(Event::SessionsListed { seq, sessions });
    }

    /// The user closes session `handle`.
    pub fn close_session(&mut self, seq: u64, handle: &str) {
        let Some(session_id) = self.open_session_id(seq, handle) else {
            return;
        };
        if !self.agent_can("/sessionCapabilities/close") {
            self.report_error(
                Some(seq),
                "the agent does not advertise sessionCapabilities.close, so no session/close was sent",
            );
            return;
        }
        if let Some(conn) = &mut self.conn {
            conn.request(
                Method::SessionClose,
                json!({"sessionId": session_id}),
                Purpose::CloseSession {
                    seq,
                    handle: handle.to_owned(),
                },
            );
        }
    }

    pub(super) fn on_closed(&mut self, seq: u64, handle: String, result: Result<Value, RpcError>) {
        if let Err(e) = result {
            self.report_error(
                Some(seq),
                format!("session/close failed: {} ({})", e.message, e.code),
            );
            return;
        }
        let Some(pos) = self.sessions.iter().position(|s| s.handle == handle) else {
            return;
        };
        let session = self.sessions.remove(pos);
        for approval in self
            .approvals
            .take_session(session.id.as_deref().unwrap_or(""))
        {
            self.answer_cancelled(approval);
        }
        self.events.push(Event::SessionClosed {
            session: handle,
            session_id: session.id.unwrap_or_default(),
        });
    }
}
