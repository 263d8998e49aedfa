//! `session-mode` — the session's modes and config options: the client asks only for what the
//! agent offered, and shows as current only what the agent set (R160–R165).
//!
//! Requirement: a `session/set_mode` names a mode of the session's `availableModes`, and a
//! `session/set_config_option` an offered option and value (R160, R163). A mode the client shows
//! (`mode` event) is one the agent set: the session's `currentModeId`, a `session/set_mode` the
//! agent answered with success, or a `current_mode_update` (R161) — a mode the agent refused is
//! never shown as switched. Likewise for config values (`config_option` event): the session's
//! `configOptions`, the complete list a `session/set_config_option` answer carries (the asked
//! value when a success carries none), or a `config_option_update` (R164). When the case ends,
//! what the client shows is what the agent set last: a `current_mode_update` or a successful
//! `set_mode` was followed (R162), so was a `config_option_update` (R165).
//!
//! Reading: the wire rules (R160, R163) apply to every client. The display rules need an adapter
//! that reports modes: one whose `hello.supports` has `set_mode` (CONTROL.md "Modes and config
//! options"); for any other client they do not apply. "Set" is per ACP session and counts every
//! value the agent set in the case, before or after the event: the client's events and its wire
//! frames travel on two pipes, so whether an optimistic selector's event is read before or after
//! the agent's answer is a race, and a switch the agent accepted shown a moment early is fine
//! (issue 42 item 5: the same client failed 3 of 6 reruns when "set" meant "before the event").
//! A value the agent never set, a refused switch above all, fails whatever the order. The final
//! comparison uses the last value per session (per option): the client's last event and the
//! agent's last frame, which no pipe reorders.

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use std::collections::BTreeMap;

use serde_json::Value;

use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use crate::wire_model::{Side, WireModel};
use acp_vocab::control::Event;
use acp_vocab::transcript::Direction;

pub struct SessionMode;

/// What the agent offered and set in one session, and what the client showed.
#[derive(Debug, Default)]
struct SessionState {
    /// Offered mode ids (`None`: the agent sent no `modes`).
    modes: Option<Vec<String>>,
    /// Every mode the agent set, and the last one (with the frame that set it).
    modes_set: Vec<String>,
    last_mode: Option<(String, usize)>,
    /// Mode ids the agent refused in answer to `session/set_mode`.
    refused: Vec<String>,
    shown_mode: Option<(String, usize)>,
    /// Per config id: offered values, every value set, the last one, and the one shown.
    options: BTreeMap<String, OptionState>,
}

#[derive(Debug, Default)]
struct OptionState {
    values: Vec<String>,
    set: Vec<String>,
    last: Option<(String, usize)>,
    shown: Option<(String, usize)>,
}

impl SessionState {
    fn set_mode(&mut self, mode: &str, index: usize) {
        self.modes_set.push(mode.to_owned());
        self.last_mode = Some((mode.to_owned(), index));
    }

    /// A complete `configOptions` list from the agent.
    fn set_options(&mut self, list: &Value, index: usize) {
        for o in list.as_array().into_iter().flatten() {
            let (Some(id), Some(current)) = (
                o.get("id").and_then(Value::as_str),
                o.get("currentValue").and_then(Value::as_str),
            ) else {
                continue;
            };
            let state = self.options.entry(id.to_owned()).or_default();
            state.values = select_values(o);
            state.set.push(current.to_owned());
            state.last = Some((current.to_owned(), index));
        }
    }
}

/// The values a select option offers, flat or grouped.
fn select_values(option: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for entry in option
        .get("options")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let group = entry.get("options").and_then(Value::as_array);
        for v in group.map_or_else(|| vec![entry], |g| g.iter().collect()) {
            if let Some(value) = v.get("value").and_then(Value::as_str) {
                out.push(value.to_owned());
            }
        }
    }
    out
}

const OPENING: [&str; 3] = [
    Method::SessionNew.as_str(),
    Method::SessionLoad.as_str(),
    Method::SessionResume.as_str(),
];

impl Check for SessionMode {
    fn id(&self) -> &'static str {
        "session-mode"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R160, R161, R162, R163, R164, R165]
    }

    fn requirement(&self) -> &'static str {
        "Ask only for modes and config values the agent offered, and show as current only what the agent set: never a mode it refused, and always its own changes (current_mode_update, config_option_update)."
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let shows = case.control_plane && case.control_supports.iter().any(|s| s == "set_mode");
        let mut problems = Problems::new();
        let mut sessions: BTreeMap<String, SessionState> = BTreeMap::new();
        let mut judged = false;
        // The events, judged once every value the agent set is known: the client's events and
        // its wire frames travel on two pipes, so an accepted switch the client showed as it
        // sent the request may be read before the agent's answer, or after it.
        let mut events = Vec::new();
        for entry in model.entries {
            let index = entry.index;
            if entry.direction == Direction::AdapterToHarness {
                if !shows {
                    continue;
                }
                // The event as the transcript already parsed it (once per entry, for every check).
                if let Some(event) = entry.event() {
                    events.push((event, index));
                }
                continue;
            }
            let Some(msg) = model.msg(index) else {
                continue;
            };
            match msg.from {
                Side::Client => {
                    let Some(method) = msg.method() else { continue };
                    let sid = msg.params_session_id().unwrap_or_default();
                    let params = msg.params();
                    let arg = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_str);
                    let state = sessions.entry(sid.to_owned()).or_default();
                    if method == Method::SessionSetMode.as_str() {
                        judged = true;
                        let mode = arg("modeId").unwrap_or_default();
                        let offered = state.modes.clone().unwrap_or_default();
                        if !offered.iter().any(|m| m == mode) {
                            problems.fail(
                                R160,
                                format!(
                                    "session/set_mode #{index} asks for mode \"{mode}\", which the agent did not offer in session {sid} (availableModes: {}).",
                                    list(&offered)
                                ),
                                &[index],
                            );
                        }
                    } else if method == Method::SessionSetConfigOption.as_str() {
                        judged = true;
                        let (id, value) = (arg("configId").unwrap_or_default(), arg("value"));
                        match state.options.get(id) {
                            None => problems.fail(
                                R163,
                                format!(
                                    "session/set_config_option #{index} sets \"{id}\", an option the agent did not offer in session {sid}."
                                ),
                                &[index],
                            ),
                            Some(o) if value.is_some_and(|v| !o.values.iter().any(|x| x == v)) => {
                                problems.fail(
                                    R163,
                                    format!(
                                        "session/set_config_option #{index} sets \"{id}\" to \"{}\", a value the agent did not offer (offered: {}).",
                                        value.unwrap_or_default(),
                                        list(&o.values)
                                    ),
                                    &[index],
                                )
                            }
                            Some(_) => {}
                        }
                    }
                }
                Side::Agent => {
                    if msg.method() == Some(Method::SessionUpdate.as_str()) {
                        // Only these two variants concern a session's modes; the state of a
                        // session nothing set stays empty (it judges nothing at the end).
                        let variant = msg.update_variant();
                        if !matches!(
                            variant,
                            Some("current_mode_update" | "config_option_update")
                        ) {
                            continue;
                        }
                        let sid = msg.params_session_id().unwrap_or_default();
                        // Mode and option updates are never compact: their tree is kept.
                        let field = |k: &str| {
                            msg.tool_fields()
                                .and_then(|u| u.parsed())
                                .and_then(|u| u.get(k))
                        };
                        let state = sessions.entry(sid.to_owned()).or_default();
                        if variant == Some("current_mode_update") {
                            if let Some(m) = field("currentModeId").and_then(Value::as_str) {
                                state.set_mode(m, index);
                            }
                        } else if let Some(list) = field("configOptions") {
                            state.set_options(list, index);
                        }
                        continue;
                    }
                    // A response of the agent to one of the client's requests.
                    let Some(request) = model.request_msg_of(msg) else {
                        continue;
                    };
                    let Some(method) = request.method() else {
                        continue;
                    };
                    let result = msg.result();
                    let params = request.params();
                    let arg = |k: &str| params.and_then(|p| p.get(k)).and_then(Value::as_str);
                    let sid = match result
                        .and_then(|r| r.get("sessionId"))
                        .and_then(Value::as_str)
                    {
                        Some(id) => id.to_owned(),
                        None => request.params_session_id().unwrap_or_default().to_owned(),
                    };
                    let state = sessions.entry(sid).or_default();
                    if OPENING.contains(&method) {
                        let Some(r) = result else { continue };
                        if let Some(modes) = r.get("modes") {
                            state.modes = modes
                                .get("availableModes")
                                .and_then(Value::as_array)
                                .map(|l| {
                                    l.iter()
                                        .filter_map(|m| m.get("id").and_then(Value::as_str))
                                        .map(str::to_owned)
                                        .collect()
                                });
                            if let Some(m) = modes.get("currentModeId").and_then(Value::as_str) {
                                state.set_mode(m, index);
                            }
                        }
                        if let Some(list) = r.get("configOptions") {
                            state.set_options(list, index);
                        }
                    } else if method == Method::SessionSetMode.as_str() {
                        let mode = arg("modeId").unwrap_or_default();
                        if result.is_some() {
                            state.set_mode(mode, index);
                        } else if msg.is_error_response() {
                            state.refused.push(mode.to_owned());
                        }
                    } else if method == Method::SessionSetConfigOption.as_str() && result.is_some()
                    {
                        match result.and_then(|r| r.get("configOptions")) {
                            Some(list) => state.set_options(list, index),
                            None => {
                                let (id, v) = (arg("configId"), arg("value"));
                                if let (Some(id), Some(v)) = (id, v) {
                                    let o = state.options.entry(id.to_owned()).or_default();
                                    o.set.push(v.to_owned());
                                    o.last = Some((v.to_owned(), index));
                                }
                            }
                        }
                    }
                }
            }
        }
        for (event, index) in events {
            judged |= self.shown(event, index, &mut sessions, &mut problems);
        }
        if shows {
            judged |= final_state(&sessions, &mut problems);
        }
        if !judged {
            return Finding::not_applicable(if shows {
                "the agent offered no modes or config options and the client asked for none"
            } else {
                "the client asked for no mode or config option, and it reports no shown mode (its adapter does not support set_mode)"
            });
        }
        problems.finish("")
    }
}

impl SessionMode {
    /// One `mode` or `config_option` event: was it set by the agent? True if it was one.
    fn shown(
        &self,
        event: &Event,
        index: usize,
        sessions: &mut BTreeMap<String, SessionState>,
        problems: &mut Problems,
    ) -> bool {
        match event {
            Event::Mode(m) => {
                let state = sessions.entry(m.session_id.clone()).or_default();
                if !state.modes_set.contains(&m.mode_id) {
                    let why = if state.refused.contains(&m.mode_id) {
                        "the agent refused the switch to it (an error answer to session/set_mode)"
                    } else {
                        "the agent never set it (no currentModeId, successful session/set_mode or current_mode_update named it)"
                    };
                    problems.fail(
                        R161,
                        format!(
                            "The client shows mode \"{}\" as current in session {} (#{index}), but {why}.",
                            m.mode_id, m.session_id
                        ),
                        &[index],
                    );
                }
                state.shown_mode = Some((m.mode_id.clone(), index));
                true
            }
            Event::ConfigOption(c) => {
                let state = sessions.entry(c.session_id.clone()).or_default();
                let option = state.options.entry(c.config_id.clone()).or_default();
                if !option.set.contains(&c.value) {
                    problems.fail(
                        R164,
                        format!(
                            "The client shows config option \"{}\" = \"{}\" in session {} (#{index}), but the agent never set that value (session setup, a session/set_config_option answer or a config_option_update).",
                            c.config_id, c.value, c.session_id
                        ),
                        &[index],
                    );
                }
                option.shown = Some((c.value.clone(), index));
                true
            }
            _ => false,
        }
    }
}

/// At the end, the client shows what the agent set last. True if there was anything to compare.
fn final_state(sessions: &BTreeMap<String, SessionState>, problems: &mut Problems) -> bool {
    let mut any = false;
    for (sid, state) in sessions {
        if let Some((mode, at)) = &state.last_mode {
            any = true;
            let shown = state.shown_mode.as_ref().map(|(m, _)| m.as_str());
            if shown != Some(mode.as_str()) {
                problems.fail(
                    R162,
                    format!(
                        "The agent set mode \"{mode}\" in session {sid} (#{at}), but the client shows {} when the case ends.",
                        shown.map_or("no mode".to_owned(), |m| format!("\"{m}\""))
                    ),
                    &[*at],
                );
            }
        }
        for (id, option) in &state.options {
            let Some((value, at)) = &option.last else {
                continue;
            };
            any = true;
            let shown = option.shown.as_ref().map(|(v, _)| v.as_str());
            if shown != Some(value.as_str()) {
                problems.fail(
                    R165,
                    format!(
                        "The agent set config option \"{id}\" to \"{value}\" in session {sid} (#{at}), but the client shows {} when the case ends.",
                        shown.map_or("no value".to_owned(), |v| format!("\"{v}\""))
                    ),
                    &[*at],
                );
            }
        }
    }
    any
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, WS, assert_grade};
    use serde_json::json;

    /// A session opened with modes `default` and `plan` (current `default`), shown as such.
    fn opened() -> Case {
        let mut c = Case::new();
        c.control_supports.push("set_mode".into());
        c.cmd(json!({"type":"new_session","seq":1,"session":"s1","cwd":WS}));
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}));
        c.a2c(
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}),
        );
        c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        c.a2c(json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":SID,"modes":{"currentModeId":"default",
            "availableModes":[{"id":"default","name":"Default"},{"id":"plan","name":"Plan"}]}}}));
        c.ev(json!({"type":"session_opened","session":"s1","sessionId":SID}));
        c.ev(json!({"type":"mode","sessionId":SID,"modeId":"default"}));
        c
    }

    fn pick_plan(c: &Case) {
        c.cmd(json!({"type":"set_mode","seq":2,"session":"s1","modeId":"plan"}));
    }

    fn request(c: &Case) {
        c.c2a(json!({"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{"sessionId":SID,"modeId":"plan"}}));
    }

    fn shown_plan(c: &Case) {
        c.ev(json!({"type":"mode","sessionId":SID,"modeId":"plan"}));
    }

    /// Issue 42 item 5: the selector moves as the request is sent, and the agent accepts. The
    /// event read before the request, between request and answer, or after the answer: one grade
    /// (`Case::grade` replays every such order).
    #[test]
    fn an_accepted_switch_shown_early_passes_in_every_order() {
        let c = opened();
        pick_plan(&c);
        shown_plan(&c);
        request(&c);
        c.a2c(json!({"jsonrpc":"2.0","id":2,"result":{}}));
        assert_eq!(c.grade(&SessionMode).grade, Grade::Pass);
    }

    #[test]
    fn a_refused_switch_shown_fails_in_every_order() {
        let c = opened();
        pick_plan(&c);
        shown_plan(&c);
        request(&c);
        c.a2c(json!({"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no"}}));
        let f = c.grade(&SessionMode);
        assert_grade(&f, Grade::Fail, "the agent refused the switch to it");
    }

    #[test]
    fn an_unoffered_mode_and_an_ignored_update_fail() {
        let c = opened();
        c.c2a(json!({"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{"sessionId":SID,"modeId":"yolo"}}));
        c.a2c(json!({"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"no"}}));
        assert_grade(
            &c.grade(&SessionMode),
            Grade::Fail,
            "asks for mode \"yolo\", which the agent did not offer",
        );

        let c = opened();
        c.a2c(
            json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":SID,
            "update":{"sessionUpdate":"current_mode_update","currentModeId":"plan"}}}),
        );
        assert_grade(
            &c.grade(&SessionMode),
            Grade::Fail,
            "but the client shows \"default\" when the case ends",
        );
    }
}
