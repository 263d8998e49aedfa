//! Client requests no step takes: the fake agent answers them as the real agent does.
//!
//! A real agent never leaves a request unanswered: a method it does not have gets `-32601`
//! Method not found (JSON-RPC 2.0 §5.1), and a method it has but refuses for these params (an
//! `authenticate` with a method id it does not carry out) gets that agent's own error. The
//! scenario only scripts the exchanges it is about, so a request that no step of it will ever
//! take is answered here, while the engine waits for something else:
//!
//! * "no step takes it": no `expect` step from the one being played on (nested `then` and
//!   `on_timeout` steps included) names its method with a `match` pattern that fits it. A pattern
//!   that cannot be filled yet (it uses a variable a later step captures) counts as fitting, so a
//!   request a later step may want is never answered early.
//! * the answer: the profile's `[errors]` entry for the method; `-32601` for a method that is
//!   not one an ACP agent has ([`AGENT_METHODS`]); none for an agent method without an entry
//!   (what the real agent would answer depends on state the scenario does not model), which is
//!   left unanswered and noted, so the checks blame the scenario, not the client.
//!
//! Every such request is noted (`unmatched_request`) with the step the scenario was at.

use acp_vocab::method::Method;
use serde_json::{Value, json};

use super::{Connector, Engine, Stop};
use crate::mailbox::Msg;
use crate::matching;
use crate::scenario::{Expected, Step, StepKind};
use crate::vars::Vars;
use acp_vocab::note::Note;

/// Requests a client sends an ACP agent (the spec's agent methods, v1 and the unstable session
/// lifecycle ones): for these the real agent's answer depends on what it is doing, so without a
/// profile `[errors]` entry they are left unanswered rather than guessed.
pub const AGENT_METHODS: &[&str] = &[
    Method::Initialize.as_str(),
    Method::Authenticate.as_str(),
    Method::Logout.as_str(),
    Method::SessionNew.as_str(),
    Method::SessionLoad.as_str(),
    Method::SessionResume.as_str(),
    Method::SessionFork.as_str(),
    Method::SessionList.as_str(),
    Method::SessionClose.as_str(),
    Method::SessionPrompt.as_str(),
    Method::SessionSetMode.as_str(),
    Method::SessionSetModel.as_str(),
    Method::SessionSetConfigOption.as_str(),
];

/// Every `expect` of a scenario that can take a client request: its top-level step, method and
/// pattern (a template), computed before the run so that a run that frees its steps as it goes
/// still knows what later steps expect.
#[derive(Debug, Default, Clone)]
pub(super) struct Expects(Vec<(usize, String, Option<Value>)>);

impl Expects {
    pub(super) fn of(steps: &[Step]) -> Expects {
        let mut all = Vec::new();
        collect(steps, &mut all);
        Expects(all)
    }

    /// True if some `expect` at top-level step `from` or later could take `msg`.
    fn could_take(&self, msg: &Msg, from: usize, vars: &Vars) -> bool {
        let Some(method) = matching::method(&msg.json) else {
            return true;
        };
        self.0.iter().any(|(top, name, pattern)| {
            *top >= from
                && name == method
                && pattern.as_ref().is_none_or(|p| match vars.fill(p) {
                    Ok(filled) => matching::matches(&filled, &msg.json),
                    // Not fillable yet: a later capture decides, so it may fit.
                    Err(_) => true,
                })
        })
    }
}

fn collect(steps: &[Step], all: &mut Vec<(usize, String, Option<Value>)>) {
    for step in steps {
        match &step.kind {
            StepKind::Handshake => {
                all.push((step.top, Method::Initialize.as_str().into(), None));
                all.push((step.top, Method::SessionNew.as_str().into(), None));
            }
            StepKind::Expect(e) => {
                if let Expected::Method(name) = &e.what {
                    all.push((step.top, name.clone(), e.pattern.clone()));
                }
                if let Some(nested) = &e.on_timeout {
                    collect(nested, all);
                }
            }
            StepKind::Await { cases, .. } => {
                for case in cases {
                    collect(&case.then, all);
                }
            }
            _ => {}
        }
    }
}

/// The error a real agent answers an unmatched request of `method` with: the profile's, or
/// -32601 for a method no ACP agent has; `None` for an agent method the profile says nothing of.
pub(super) fn answer_for(profile_error: Option<&Value>, method: &str) -> Option<Value> {
    if let Some(error) = profile_error {
        return Some(error.clone());
    }
    (!AGENT_METHODS.contains(&method))
        .then(|| json!({"code": -32601, "message": "Method not found", "data": {"method": method}}))
}

/// What decides whether a client message is an unmatched request, borrowed from the engine
/// while it waits (only these fields, so the wait stays `Send`).
pub(super) struct Unmatched<'e> {
    expects: &'e Expects,
    vars: &'e Vars,
    at_top: usize,
    agent_killed: bool,
}

impl Unmatched<'_> {
    /// True if `msg` is a request (a method and an id) that no step from the current one on
    /// takes. Never after the scenario killed the agent: a dead agent answers nothing.
    pub(super) fn is_unmatched(&self, msg: &Msg) -> bool {
        !self.agent_killed
            && msg.raw_id.is_some()
            && matching::method(&msg.json).is_some()
            && !self.expects.could_take(msg, self.at_top, self.vars)
    }
}

/// The capability an agent advertises in its `initialize` answer for an optional method: without
/// it the method is not implemented, and an ACP SDK answers Method not found.
fn capability_of(method: &str) -> Option<&'static str> {
    Some(match Method::parse(method)? {
        Method::SessionList => "/agentCapabilities/sessionCapabilities/list",
        Method::SessionClose => "/agentCapabilities/sessionCapabilities/close",
        Method::SessionResume => "/agentCapabilities/sessionCapabilities/resume",
        Method::SessionFork => "/agentCapabilities/sessionCapabilities/fork",
        Method::SessionLoad => "/agentCapabilities/loadSession",
        _ => return None,
    })
}

impl<'a, C: Connector> Engine<'a, C> {
    /// `-32601` for an optional ACP method the agent's own `initialize` answer (as sent in this
    /// run) did not advertise: the agent does not implement it, and says so. `None` when it did,
    /// or when no answer was sent yet: then only the profile can say what the agent answers.
    fn not_advertised(&self, method: &str) -> Option<Value> {
        let pointer = capability_of(method)?;
        let mut answer = None;
        self.rec.visit_from(0, |e| {
            if answer.is_none()
                && e.direction == acp_vocab::transcript::Direction::AgentToClient
                && let Some(result) = e.json().and_then(|j| j.get("result"))
                && result.get("protocolVersion").is_some()
            {
                answer = Some(result.clone());
            }
        });
        let advertised = answer?
            .pointer(pointer)
            .is_some_and(|v| !v.is_null() && v != &Value::Bool(false));
        (!advertised).then(
            || json!({"code": -32601, "message": "Method not found", "data": {"method": method}}),
        )
    }

    pub(super) fn unmatched(&self) -> Unmatched<'_> {
        Unmatched {
            expects: &self.expects,
            vars: &self.vars,
            at_top: self.at_top,
            agent_killed: self.agent_killed,
        }
    }

    /// Notes `msg` (taken while step `step` waited) and answers it as the real agent does, if
    /// the profile or the method says how.
    pub(super) async fn answer_unmatched(&mut self, step: &Step, msg: &Msg) -> Result<(), Stop> {
        let method = matching::method(&msg.json).unwrap_or_default().to_owned();
        let profile = self.case.scenario.profile.as_ref();
        // A result whose templates cannot be filled is not answered as if it were right.
        let result = profile
            .and_then(|p| p.result_for(&method))
            .and_then(|r| self.vars.fill(r).ok());
        let error = match result {
            Some(_) => None,
            None => answer_for(profile.and_then(|p| p.error_for(&method)), &method)
                .or_else(|| self.not_advertised(&method)),
        };
        self.rec.note(&Note::UnmatchedRequest {
            step: step.label.clone(),
            line: Some(step.line),
            method,
            frame: msg.index,
            error: error.clone(),
            result: result.clone(),
        });
        let Some(id) = &msg.raw_id else {
            return Ok(());
        };
        let (key, body) = match (result, error) {
            (Some(result), _) => ("result", result),
            (None, Some(error)) => ("error", error),
            (None, None) => return Ok(()),
        };
        // Built as text so the id is echoed byte for byte.
        let frame = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"{key}\":{}}}",
            serde_json::to_string(&body).unwrap_or_default()
        );
        self.write(step, frame.as_bytes(), self.cfg.step_timeout)
            .await
    }
}
