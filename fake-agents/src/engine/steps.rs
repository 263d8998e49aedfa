//! The wire steps: expect (and reply), send, await an answer, faults, and the step dispatch.

use acp_vocab::envelope::Shape;
use acp_vocab::method::Method;
use std::time::Duration;

use acp_vocab::note::{BranchCase, Note};
use serde_json::Value;

use super::conn::to_bytes;
use super::user::guard;
use super::{Connector, Engine, Sent, StepResult, Stop};
use crate::machine_time::Deadline;
use crate::mailbox::{Msg, WaitError};
use crate::matching::{self, Answer};
use crate::scenario::{
    CrashSignal, Expect, Expected, Fault, JsonText, OnCase, Reply, Step, StepKind, set_fresh_id,
};
use crate::template;

impl<'a, C: Connector> Engine<'a, C> {
    pub(super) async fn step(&mut self, step: &Step) -> StepResult {
        self.check_user()?;
        let timeout = self.timeout(step);
        match &step.kind {
            StepKind::Handshake => self.handshake(step, timeout).await,
            StepKind::Expect(e) => {
                let arrived = self.expect(step, e, timeout).await?;
                match (&e.on_timeout, arrived) {
                    // The steps after the expect assume the message came: the scenario ends.
                    (Some(steps), false) => {
                        self.run_steps(steps).await?;
                        Err(Stop::Ended)
                    }
                    _ => Ok(()),
                }
            }
            StepKind::ReplyTo { alias, reply } => {
                let Some(msg) = self.client_requests.get(alias).cloned() else {
                    return Err(self.harness(
                        step,
                        format!(
                            "no client request was remembered as `{alias}` (its step did not run)"
                        ),
                    ));
                };
                self.reply(step, &msg, reply, timeout).await
            }
            StepKind::Send { frame, alias } => {
                let bytes = self.send_bytes(step, frame)?;
                if self.more_sends {
                    self.queue(step, &bytes, timeout).await?;
                } else {
                    self.write(step, &bytes, timeout).await?;
                }
                if let Some(alias) = alias {
                    // A request: read back what was sent, for its answer and offered options.
                    let frame: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                    self.sent.insert(
                        alias.clone(),
                        Sent {
                            id: frame.get("id").cloned().unwrap_or(Value::Null),
                            options: frame.pointer("/params/options").cloned(),
                        },
                    );
                }
                Ok(())
            }
            StepKind::Await {
                alias,
                bind,
                cases,
                go_on,
            } => {
                self.await_answer(step, alias, bind, cases, *go_on, timeout)
                    .await
            }
            // A pause for a client that is gone would only hold up the verdict.
            StepKind::Delay(_) if self.departure_here().is_some() => Ok(()),
            StepKind::Delay(d) => {
                tokio::select! {
                    () = tokio::time::sleep(*d) => {}
                    () = self.connector.client_gone() => {}
                }
                Ok(())
            }
            StepKind::Fault(fault) => self.fault(step, fault, timeout).await,
            StepKind::Crash(signal) => self.crash(step, *signal, timeout).await,
            StepKind::User(u) => self.user(step, u, timeout),
        }
    }

    pub(super) async fn handshake(&mut self, step: &Step, timeout: Duration) -> StepResult {
        // The profile names its canned answers by frame, not by method.
        for (method, frame) in [
            (Method::Initialize, "initialize"),
            (Method::SessionNew, "session_new"),
        ] {
            let expect = Expect {
                what: Expected::Method(method.as_str().into()),
                alias: None,
                pattern: None,
                capture: Vec::new(),
                reply: Some(Reply::Result(Value::String(format!(
                    "${{profile.{frame}}}"
                )))),
                on_timeout: None,
            };
            self.expect(step, &expect, timeout).await?;
        }
        Ok(())
    }

    /// Waits for the expected message and handles it. `Ok(false)`: it did not come in time and
    /// the step has `on_timeout` steps (the caller runs them; a branch note says so).
    pub(super) async fn expect(
        &mut self,
        step: &Step,
        e: &Expect,
        timeout: Duration,
    ) -> Result<bool, Stop> {
        let pattern = match &e.pattern {
            Some(p) => Some(self.vars.fill(p).map_err(|m| self.harness(step, m))?),
            None => None,
        };
        let mut what = match &e.what {
            Expected::Method(m) => m.clone(),
            Expected::Response => "response".to_owned(),
        };
        if let Some(p) = &pattern {
            what.push_str(&format!(" matching {p}"));
        }
        let fits = |m: &Msg| {
            let shape_ok = match &e.what {
                Expected::Method(name) => matching::method(&m.json) == Some(name.as_str()),
                Expected::Response => matching::is_response(&m.json),
            };
            if !shape_ok
                || !pattern
                    .as_ref()
                    .is_none_or(|p| matching::matches(p, &m.json))
            {
                return None;
            }
            matching::capture(&m.json, &e.capture)
        };
        let branch = e.on_timeout.is_some().then_some("on_timeout");
        let Some((msg, captured)) = self
            .take_or_branch(step, timeout, &what, None, branch, fits)
            .await?
        else {
            return Ok(false);
        };
        if matching::method(&msg.json) == Some(Method::Initialize.as_str()) {
            self.check_requires(&msg.json)?;
        }
        for (name, value) in captured {
            self.vars.set(&name, value);
        }
        if let Some(alias) = &e.alias {
            self.client_requests.insert(alias.clone(), msg.clone());
        }
        if let Some(reply) = &e.reply {
            self.reply(step, &msg, reply, timeout).await?;
        }
        Ok(true)
    }

    /// Waits for the message `fits` picks, as [`Self::take`]. With a `branch` (`on_timeout`: an
    /// `expect` with `on_timeout` steps; `go_on`: an `await` with `go_on`) a timeout or the
    /// connection's end does not stop the run: a branch note names that case, and `None` tells
    /// the caller to go that way. `request`: the alias of the request whose answer an `await`
    /// waits for.
    async fn take_or_branch<T>(
        &mut self,
        step: &Step,
        timeout: Duration,
        what: &str,
        request: Option<&str>,
        branch: Option<&'static str>,
        fits: impl FnMut(&Msg) -> Option<T>,
    ) -> Result<Option<(Msg, T)>, Stop> {
        let Some(case) = branch else {
            return self.take(step, timeout, what, fits).await.map(Some);
        };
        let deadline = Deadline::after(timeout);
        let answer = match self.take_within(step, &deadline, fits).await? {
            Ok(found) => return Ok(Some(found)),
            Err(WaitError::TimedOut) => {
                format!("no {what} within {}", deadline.elapsed().describe(timeout))
            }
            // A client that gives up here (closes the connection, e.g. a one-shot CLI that
            // exits on auth_required, or after its turn without answering the agent's request)
            // did not send it either: the branch for "it did not come" applies, and the checks
            // judge what it did.
            Err(WaitError::Closed) => {
                self.depart(step, format!("instead of sending {what}"));
                format!("the client closed the agent connection instead of sending {what}")
            }
        };
        self.rec.note(&Note::Branch {
            step: step.label.clone(),
            request: request.map(str::to_owned),
            answer,
            frame: None,
            case: Some(BranchCase::Named(case.into())),
        });
        Ok(None)
    }

    /// `requires`: every path must be `true` in the client's `clientCapabilities`.
    pub(super) fn check_requires(&mut self, initialize: &Value) -> StepResult {
        if self.requires_checked {
            return Ok(());
        }
        self.requires_checked = true;
        for path in &self.case.scenario.meta.requires {
            let mut v = initialize.pointer("/params/clientCapabilities");
            for segment in path.split('.') {
                v = v.and_then(|v| v.get(segment));
            }
            if v != Some(&Value::Bool(true)) {
                let reason = format!(
                    "the client does not advertise clientCapabilities.{path} in initialize (the scenario requires it)"
                );
                self.rec.note(&Note::NotApplicable {
                    reason: reason.clone(),
                });
                return Err(Stop::NotApplicable(reason));
            }
        }
        Ok(())
    }

    pub(super) async fn reply(
        &mut self,
        step: &Step,
        msg: &Msg,
        reply: &Reply,
        timeout: Duration,
    ) -> StepResult {
        let (key, body) = match reply {
            Reply::Result(v) => ("result", v),
            Reply::Error(v) => ("error", v),
        };
        let mut body = self.vars.fill(body).map_err(|m| self.harness(step, m))?;
        let mut key = key;
        // The client withdrew this request with `$/cancel_request`: the agent answers it as the
        // request-cancellation agents do (agentclientprotocol/codex-acp#221, claude-agent-acp#801;
        // R52: a result or -32800), with the -32800 error instead of the scripted reply.
        if self.withdrawn_by_client(msg) {
            key = "error";
            body = serde_json::json!({"code": -32800, "message": "Request cancelled"});
        }
        let Some(id) = &msg.raw_id else {
            let method = matching::method(&msg.json).unwrap_or("a message");
            return Err(self.incomplete(
                step,
                format!(
                    "{}: the client sent {method} as a notification (no \"id\", transcript #{}), so it cannot be answered",
                    self.step_ref(step),
                    msg.index
                ),
            ));
        };
        // Built as text so the id is echoed byte for byte.
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"{key}\":{}}}",
            serde_json::to_string(&body).unwrap_or_default()
        );
        self.write(step, frame.as_bytes(), timeout).await
    }

    /// Fills a `send` frame; a top-level `"id":"${id}"` becomes the next fresh request id.
    /// A `send` frame filled, as it goes on the wire.
    fn send_bytes(&mut self, step: &Step, frame: &JsonText) -> Result<Vec<u8>, Stop> {
        let vars = &self.vars;
        match frame.fill(self.next_id, &mut |name| vars.value_of(name)) {
            Some(Ok(filled)) => {
                if filled.took_id {
                    self.next_id += 1;
                }
                Ok(filled.bytes)
            }
            Some(Err(m)) => Err(self.harness(step, m)),
            None => {
                let frame = frame.value().map_err(|m| self.harness(step, m))?;
                Ok(to_bytes(&self.fill_send(step, frame)?))
            }
        }
    }

    pub(super) fn fill_send(&mut self, step: &Step, mut frame: Value) -> Result<Value, Stop> {
        if set_fresh_id(&mut frame, self.next_id) {
            self.next_id += 1;
        }
        self.vars.fill(&frame).map_err(|m| self.harness(step, m))
    }

    pub(super) async fn await_answer(
        &mut self,
        step: &Step,
        alias: &str,
        bind: &[(String, String)],
        cases: &[OnCase],
        go_on: bool,
        timeout: Duration,
    ) -> StepResult {
        let Some(sent) = self.sent.get(alias).cloned() else {
            return Err(self.harness(
                step,
                format!("request `{alias}` was never sent (its step did not run)"),
            ));
        };
        let what = format!("answer to request `{alias}` (id {})", sent.id);
        let found = self
            .take_or_branch(
                step,
                timeout,
                &what,
                Some(alias),
                go_on.then_some("go_on"),
                |m| (Shape::of(&m.json).response_id() == Some(&sent.id)).then_some(()),
            )
            .await;
        let msg = match found {
            Ok(Some((msg, ()))) => msg,
            // `go_on`: the scenario goes on without the answer.
            Ok(None) => return Ok(()),
            Err(Stop::Incomplete { step: top, reason }) => {
                return Err(Stop::Incomplete {
                    step: top,
                    reason: format!("{reason}{}", self.near_misses(&sent.id)),
                });
            }
            Err(other) => return Err(other),
        };
        let answer = Answer::of(&msg.json, sent.options.as_ref());
        let chosen = cases.iter().position(|c| answer.fits(&c.when));
        self.rec.note(&Note::Branch {
            step: step.label.clone(),
            request: Some(alias.to_string()),
            answer: answer.describe(),
            frame: Some(msg.index),
            case: chosen.map(|k| BranchCase::Case(k + 1)),
        });
        self.bind(step, alias, &msg, bind)?;
        match chosen {
            Some(k) => {
                self.run_steps(&cases[k].then).await?;
                if cases[k].end {
                    return Err(Stop::Ended);
                }
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// `bind`: set each variable from the answer's `result`. An answer without one of the values
    /// (an error, a result missing the field) ends the run incomplete here: the scenario cannot
    /// go on without it, and it is the client's answer that lacked it.
    fn bind(
        &mut self,
        step: &Step,
        alias: &str,
        msg: &Msg,
        bind: &[(String, String)],
    ) -> StepResult {
        for (name, pointer) in bind {
            let value = msg
                .json
                .get("result")
                .and_then(|result| result.pointer(pointer));
            let Some(value) = value else {
                return Err(self.incomplete(
                    step,
                    format!(
                        "{}: the answer to `{alias}` (transcript #{}) has no result value at {pointer:?} for `{name}`",
                        self.step_ref(step),
                        msg.index
                    ),
                ));
            };
            self.vars.set(name, value.clone());
        }
        Ok(())
    }

    /// True if the client sent `$/cancel_request` for its request `msg` (ids compared as JSON).
    fn withdrawn_by_client(&self, msg: &Msg) -> bool {
        let (Some(conn), Some(id)) = (&self.conn, msg.json.get("id")) else {
            return false;
        };
        conn.mailbox().unconsumed().iter().any(|m| {
            m.index > msg.index
                && matches!(Shape::of(&m.json), Shape::Notification { method }
                    if method == Method::CancelRequest.as_str())
                && m.json.pointer("/params/requestId") == Some(id)
        })
    }

    /// Responses that almost answer `id` (same id, other JSON type), to explain a timeout.
    pub(super) fn near_misses(&self, id: &Value) -> String {
        let Some(conn) = &self.conn else {
            return String::new();
        };
        let text = template::splice_text(id);
        let misses: Vec<String> = conn
            .mailbox()
            .unconsumed()
            .into_iter()
            .filter(|m| matching::is_response(&m.json))
            .filter(|m| {
                m.json
                    .get("id")
                    .is_some_and(|i| template::splice_text(i) == text)
            })
            .map(|m| format!("#{} has id {}", m.index, m.json["id"]))
            .collect();
        if misses.is_empty() {
            String::new()
        } else {
            format!(
                " (a response with a differently typed id arrived: {}; ids must be echoed unchanged)",
                misses.join(", ")
            )
        }
    }

    pub(super) async fn fault(
        &mut self,
        step: &Step,
        fault: &Fault,
        timeout: Duration,
    ) -> StepResult {
        let frame = match fault {
            Fault::Split { frame, .. } | Fault::Duplicate { frame } | Fault::Invalid { frame } => {
                Some(to_bytes(
                    &self.vars.fill(frame).map_err(|m| self.harness(step, m))?,
                ))
            }
            Fault::Raw { .. } => None,
        };
        // The note comes first so no check blames the client (or calls it our schema bug).
        self.rec.note(&Note::Fault {
            kind: fault.kind(),
            step: Some(step.label.clone()),
            conn: None,
        });
        self.faulting = Some(fault.kind());
        let written = self.write_fault(step, fault, frame, timeout).await;
        self.faulting = None;
        written
    }

    async fn write_fault(
        &mut self,
        step: &Step,
        fault: &Fault,
        frame: Option<Vec<u8>>,
        timeout: Duration,
    ) -> StepResult {
        match (fault, frame) {
            (Fault::Split { at, .. }, Some(bytes)) => {
                let at = at.unwrap_or(bytes.len() / 2);
                if at == 0 || at >= bytes.len() {
                    return Err(self.harness(
                        step,
                        format!("cannot split a {}-byte frame at byte {at}", bytes.len()),
                    ));
                }
                let (a, b) = bytes.split_at(at);
                self.write_parts(step, &[a, b], timeout).await
            }
            (Fault::Duplicate { .. }, Some(bytes)) => {
                self.write(step, &bytes, timeout).await?;
                self.write(step, &bytes, timeout).await
            }
            (Fault::Raw { line }, _) => {
                // A raw line may hold several lines; each is what the client will see as a frame.
                let lines: Vec<&[u8]> = line.as_bytes().split(|&b| b == b'\n').collect();
                self.write_recorded(step, &lines, &[line.as_bytes()], timeout)
                    .await
            }
            (Fault::Invalid { .. }, Some(bytes)) => self.write(step, &bytes, timeout).await,
            _ => Err(self.harness(step, "fault without a frame")),
        }
    }

    /// `fault = "crash"`: kills the agent process and waits until its connection is gone, so
    /// everything the client sent before it died is recorded before the run goes on. What was
    /// written to the agent's stdout before gets a moment to reach the client first: the relay
    /// forwards it promptly, but a kill right after a write could catch it mid-copy, and the
    /// scenario means "the agent said this, then died".
    pub(super) async fn crash(
        &mut self,
        step: &Step,
        signal: CrashSignal,
        timeout: Duration,
    ) -> StepResult {
        let deadline = Deadline::after(timeout);
        let link = self.connection(step, &deadline).await?;
        let (conn, pid, mailbox) = (link.id, link.pid(), link.mailbox().clone());
        let Some(pid) = pid else {
            return Err(self.harness(
                step,
                "fault = \"crash\": this agent connection has no process to kill",
            ));
        };
        tokio::time::sleep(FORWARD_PAUSE).await;
        self.agent_killed = true;
        self.rec.note(&Note::AgentKilled {
            conn,
            signal: signal.name().to_owned(),
            step: Some(step.label.clone()),
        });
        // SAFETY: kill(2) takes plain integers and touches no memory of ours.
        if unsafe { libc::kill(pid, signal.number()) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(self.harness(
                step,
                format!(
                    "fault = \"crash\": cannot send {} to the agent process {pid}: {e}",
                    signal.name()
                ),
            ));
        }
        // Nothing fits: the wait ends when the connection does, or at the deadline.
        match guard(self.progress.clone(), mailbox.take(|_| None::<()>, &deadline)).await? {
            Ok(_) | Err(WaitError::Closed) => Ok(()),
            Err(WaitError::TimedOut) => Err(self.harness(
                step,
                format!(
                    "fault = \"crash\": the agent process {pid} was sent {} but its connection was still open after {}",
                    signal.name(),
                    deadline.elapsed().describe(timeout)
                ),
            )),
        }
    }
}

/// How long a crash step lets the relay forward what the agent wrote before it dies.
const FORWARD_PAUSE: Duration = Duration::from_millis(100);
