//! `authenticate` — an agent that requires authentication is authenticated before the client
//! uses it again, and only with a method it advertised (R166, R167).
//!
//! Requirement: once the agent has answered a request of the client with `auth_required`
//! (-32000), the client sends no `session/new`, `session/load`, `session/resume`,
//! `session/prompt`, `session/set_mode` or `session/set_config_option` on that connection until
//! an `authenticate` was answered with success (R166). An `authenticate` names one of the
//! `authMethods` the agent advertised in `initialize`, and never a `terminal` method, which the
//! client runs itself instead (R167, ACP authentication).
//!
//! Reading: per agent connection, in wire order. A case in which the agent never required
//! authentication and the client never authenticated has nothing to judge (`not_applicable`).

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use std::collections::BTreeMap;

use serde_json::Value;

use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use crate::wire_model::{Side, WireModel};

pub struct Authenticate;

/// JSON-RPC error code of ACP's `auth_required`.
const AUTH_REQUIRED: i64 = -32000;

/// Requests that use the agent's sessions.
const USES: [&str; 6] = [
    Method::SessionNew.as_str(),
    Method::SessionLoad.as_str(),
    Method::SessionResume.as_str(),
    Method::SessionPrompt.as_str(),
    Method::SessionSetMode.as_str(),
    Method::SessionSetConfigOption.as_str(),
];

impl Check for Authenticate {
    fn id(&self) -> &'static str {
        "authenticate"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R166, R167]
    }

    fn requirement(&self) -> &'static str {
        "After auth_required, authenticate (with an advertised, non-terminal method) before using the agent's sessions again."
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut problems = Problems::new();
        // Per connection: the frame of the auth_required answer still in force.
        let mut required: BTreeMap<u32, usize> = BTreeMap::new();
        let mut judged = false;
        for msg in &model.msgs {
            match msg.from {
                Side::Agent => {
                    let Some(request) = model.request_msg_of(msg) else {
                        continue;
                    };
                    let code = msg
                        .json()
                        .and_then(|j| j.get("error"))
                        .and_then(|e| e.get("code"))
                        .and_then(Value::as_i64);
                    if code == Some(AUTH_REQUIRED) {
                        judged = true;
                        required.insert(msg.conn, msg.index);
                    } else if request.method() == Some(Method::Authenticate.as_str())
                        && msg.result().is_some()
                    {
                        required.remove(&msg.conn);
                    }
                }
                Side::Client => {
                    let Some(method) = msg.method() else { continue };
                    if !msg.is_request() {
                        continue;
                    }
                    if method == Method::Authenticate.as_str() {
                        judged = true;
                        self.method_advertised(
                            model,
                            msg.conn,
                            msg.index,
                            msg.params(),
                            &mut problems,
                        );
                    } else if USES.contains(&method)
                        && let Some(&refused) = required.get(&msg.conn)
                    {
                        problems.fail(
                            R166,
                            format!(
                                "{method} #{} is sent after the agent answered auth_required (#{refused}) and before any authenticate succeeded.",
                                msg.index
                            ),
                            &[refused, msg.index],
                        );
                    }
                }
            }
        }
        if !judged {
            return Finding::not_applicable(
                "the agent never required authentication and the client never authenticated",
            );
        }
        problems.finish("")
    }
}

impl Authenticate {
    fn method_advertised(
        &self,
        model: &WireModel<'_>,
        conn: u32,
        index: usize,
        params: Option<&Value>,
        problems: &mut Problems,
    ) {
        let method_id = params
            .and_then(|p| p.get("methodId"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let advertised: Vec<&Value> = model
            .agent_init(conn)
            .and_then(|i| i.get("authMethods"))
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let ids: Vec<&str> = advertised
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str))
            .collect();
        match advertised
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(method_id))
        {
            None => problems.fail(
                R167,
                format!(
                    "authenticate #{index} uses method \"{method_id}\", which the agent did not advertise (authMethods: {}).",
                    if ids.is_empty() { "none".to_owned() } else { ids.join(", ") }
                ),
                &[index],
            ),
            Some(m) if m.get("type").and_then(Value::as_str) == Some("terminal") => problems.fail(
                R167,
                format!(
                    "authenticate #{index} uses \"{method_id}\", a terminal method: the client runs its command instead of asking the agent."
                ),
                &[index],
            ),
            Some(_) => {}
        }
    }
}
