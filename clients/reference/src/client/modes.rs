//! Session modes and config options: what the agent offered (`modes`, `configOptions` of the
//! `session/new` answer), what the client shows as current, the user's picks (`set_mode`,
//! `set_config_option`, sent only for what was offered), and the agent's own changes
//! (`current_mode_update`, `config_option_update`). A mode or value is shown only once the agent
//! set it: the session opened with it, the agent answered the user's pick with success, or the
//! agent announced it. The mutants' decision points are marked `MUTANT`.

use acp_vocab::method::Method;
use serde_json::{Value, json};

use acp_vocab::modes::{ConfigOptionShown, ModeShown};

use super::*;

/// One session's modes and config options, as offered and as shown.
#[derive(Debug, Default)]
pub struct Settings {
    /// The ids of `modes.availableModes`; `None` when the agent sent no `modes`.
    modes: Option<Vec<String>>,
    /// The mode shown as current.
    current_mode: Option<String>,
    /// Every config option the agent sent, in its order.
    options: Vec<ConfigOption>,
}

#[derive(Debug, Clone, PartialEq)]
struct ConfigOption {
    id: String,
    current: String,
    /// The values a select option offers (flat or grouped).
    values: Vec<String>,
}

impl Settings {
    fn offers_mode(&self, mode_id: &str) -> bool {
        self.modes
            .as_ref()
            .is_some_and(|m| m.iter().any(|id| id == mode_id))
    }

    fn option(&self, config_id: &str) -> Option<&ConfigOption> {
        self.options.iter().find(|o| o.id == config_id)
    }
}

/// The options of a `configOptions` array this client can show: `select`s with a string
/// `currentValue` (spec: a client ignores an option type it does not know).
fn parse_options(list: &Value) -> Vec<ConfigOption> {
    let Some(list) = list.as_array() else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|o| {
            if o.get("type").and_then(Value::as_str) != Some("select") {
                return None;
            }
            let mut values = Vec::new();
            for entry in o
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                // A group holds its own `options`; a flat entry is one value.
                match entry.get("options").and_then(Value::as_array) {
                    Some(group) => values.extend(
                        group
                            .iter()
                            .filter_map(|v| v.get("value").and_then(Value::as_str))
                            .map(str::to_owned),
                    ),
                    None => values.extend(
                        entry
                            .get("value")
                            .and_then(Value::as_str)
                            .map(str::to_owned),
                    ),
                }
            }
            Some(ConfigOption {
                id: o.get("id")?.as_str()?.to_owned(),
                current: o.get("currentValue")?.as_str()?.to_owned(),
                values,
            })
        })
        .collect()
}

impl Client {
    fn settings_mut(&mut self, session_id: &str) -> Option<&mut Settings> {
        self.session_by_id_mut(session_id).map(|s| &mut s.settings)
    }

    fn show_mode(&mut self, session_id: &str, mode_id: &str) {
        if let Some(settings) = self.settings_mut(session_id) {
            settings.current_mode = Some(mode_id.to_owned());
        }
        self.events.push(Event::Mode(ModeShown {
            session_id: session_id.to_owned(),
            mode_id: mode_id.to_owned(),
        }));
    }

    /// Takes a complete `configOptions` list from the agent and shows every value that changed
    /// (all of them the first time).
    fn adopt_options(&mut self, session_id: &str, list: &Value) {
        let fresh = parse_options(list);
        let Some(settings) = self.settings_mut(session_id) else {
            return;
        };
        let old = std::mem::replace(&mut settings.options, fresh.clone());
        for option in fresh {
            let unchanged = old
                .iter()
                .any(|o| o.id == option.id && o.current == option.current);
            if !unchanged {
                self.events.push(Event::ConfigOption(ConfigOptionShown {
                    session_id: session_id.to_owned(),
                    config_id: option.id,
                    value: option.current,
                }));
            }
        }
    }

    /// The session opened: show the mode and config values the agent answered with.
    pub(super) fn adopt_settings(&mut self, session_id: &str, result: &Value) {
        let modes = result.get("modes");
        let offered: Option<Vec<String>> = modes
            .and_then(|m| m.get("availableModes"))
            .and_then(Value::as_array)
            .map(|list| {
                list.iter()
                    .filter_map(|m| m.get("id").and_then(Value::as_str))
                    .map(str::to_owned)
                    .collect()
            });
        if let Some(settings) = self.settings_mut(session_id) {
            settings.modes = offered;
        }
        if let Some(current) = modes
            .and_then(|m| m.get("currentModeId"))
            .and_then(Value::as_str)
        {
            self.show_mode(session_id, current);
        }
        if let Some(list) = result.get("configOptions") {
            self.adopt_options(session_id, list);
        }
    }

    // ----- user actions -------------------------------------------------------------------

    /// The user picks `mode_id` in the mode selector of session `handle`.
    pub fn set_mode(&mut self, seq: u64, handle: &str, mode_id: String) {
        let Some(session_id) = self.open_session_id(seq, handle) else {
            return;
        };
        let Some(settings) = self.session_by_id(&session_id).map(|s| &s.settings) else {
            return;
        };
        // MUTANT unoffered-mode (the shape langchain-ai/deepagents#6138 met from the agent's
        // side: a client that sends whatever mode id its user typed): no check against the
        // agent's availableModes.
        if !settings.offers_mode(&mode_id) && self.mutant != Some(Mutant::UnofferedMode) {
            let offered = settings.modes.clone().unwrap_or_default();
            self.report_error(
                Some(seq),
                format!(
                    "the agent offers no mode {mode_id:?} in this session (offered: {})",
                    if offered.is_empty() {
                        "none".to_owned()
                    } else {
                        offered.join(", ")
                    }
                ),
            );
            return;
        }
        // MUTANT optimistic-mode-switch (openclaw/openclaw#41185, from the user's side: "the UI
        // shows success, but the agent keeps responding at the old level"): the selector moves
        // as soon as the user picks, before the agent has answered.
        if self.mutant == Some(Mutant::OptimisticModeSwitch) {
            self.show_mode(&session_id, &mode_id);
        }
        if let Some(conn) = &mut self.conn {
            conn.request(
                Method::SessionSetMode,
                json!({"sessionId": session_id, "modeId": mode_id}),
                Purpose::SetMode {
                    seq,
                    session_id,
                    mode_id,
                },
            );
        }
    }

    /// The user picks `value` for config option `config_id` of session `handle`.
    pub fn set_config_option(&mut self, seq: u64, handle: &str, config_id: String, value: String) {
        let Some(session_id) = self.open_session_id(seq, handle) else {
            return;
        };
        let Some(settings) = self.session_by_id(&session_id).map(|s| &s.settings) else {
            return;
        };
        let problem = match settings.option(&config_id) {
            None => Some(format!("the agent offers no config option {config_id:?}")),
            Some(o) if !o.values.contains(&value) => Some(format!(
                "config option {config_id:?} offers no value {value:?} (offered: {})",
                o.values.join(", ")
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            self.report_error(Some(seq), problem);
            return;
        }
        if let Some(conn) = &mut self.conn {
            conn.request(
                Method::SessionSetConfigOption,
                json!({"sessionId": session_id, "configId": config_id, "value": value}),
                Purpose::SetConfigOption {
                    seq,
                    session_id,
                    config_id,
                    value,
                },
            );
        }
    }

    // ----- the agent's answers and updates --------------------------------------------------

    /// The agent answered the user's `session/set_mode`: only a success switches the selector.
    pub(super) fn on_set_mode_answer(
        &mut self,
        seq: u64,
        session_id: &str,
        mode_id: &str,
        result: Result<Value, RpcError>,
    ) {
        match result {
            // MUTANT mode-only-from-update (agent-of-empires/agent-of-empires#1028: the mode
            // picker waited for a current_mode_update that claude-agent-acp never sends after
            // set_mode): the success answer is not taken as the switch.
            Ok(_) if self.mutant == Some(Mutant::ModeOnlyFromUpdate) => {}
            // Already shown by `optimistic-mode-switch`.
            Ok(_) if self.mutant == Some(Mutant::OptimisticModeSwitch) => {}
            Ok(_) => self.show_mode(session_id, mode_id),
            Err(e) => self.report_error(
                Some(seq),
                format!(
                    "the agent refused mode {mode_id:?}: {} ({})",
                    e.message, e.code
                ),
            ),
        }
    }

    /// The agent answered the user's `session/set_config_option` with the complete list.
    pub(super) fn on_set_config_answer(
        &mut self,
        seq: u64,
        session_id: &str,
        config_id: &str,
        value: &str,
        result: Result<Value, RpcError>,
    ) {
        match result {
            Ok(r) => match r.get("configOptions") {
                Some(list) => self.adopt_options(session_id, list),
                // An answer without the list (older agents answer `{}`): the agent accepted
                // the value the user picked.
                None => {
                    let mut list = Vec::new();
                    if let Some(settings) = self.settings_mut(session_id) {
                        for o in &settings.options {
                            let current = if o.id == config_id {
                                value
                            } else {
                                o.current.as_str()
                            };
                            list.push(json!({"id": o.id, "type": "select", "currentValue": current,
                                "options": o.values.iter().map(|v| json!({"value": v})).collect::<Vec<_>>()}));
                        }
                    }
                    self.adopt_options(session_id, &Value::Array(list));
                }
            },
            Err(e) => self.report_error(
                Some(seq),
                format!(
                    "the agent refused {config_id} = {value:?}: {} ({})",
                    e.message, e.code
                ),
            ),
        }
    }

    /// `current_mode_update` and `config_option_update`: the agent changed them itself.
    pub(super) fn on_settings_update(
        &mut self,
        session_id: &str,
        update: &serde_json::Map<String, Value>,
    ) {
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("current_mode_update") => {
                // MUTANT ignore-mode-update (Corsinvest/cv4vs-agents#174: "approve a plan and
                // the selector kept reading Plan while files were being written"): the agent's
                // own mode change never reaches the selector.
                if self.mutant == Some(Mutant::IgnoreModeUpdate) {
                    return;
                }
                if let Some(mode) = update.get("currentModeId").and_then(Value::as_str) {
                    self.show_mode(session_id, mode);
                }
            }
            Some("config_option_update") => {
                if let Some(list) = update.get("configOptions") {
                    self.adopt_options(session_id, list);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn select_values_are_read_flat_and_grouped_and_other_types_are_skipped() {
        let list = json!([
            {"id":"mode","type":"select","currentValue":"a","options":[{"value":"a","name":"A"},{"value":"b","name":"B"}]},
            {"id":"model","type":"select","currentValue":"x","options":[{"group":"g","name":"G","options":[{"value":"x","name":"X"}]}]},
            {"id":"fast","type":"boolean","currentValue":true}
        ]);
        let parsed = parse_options(&list);
        assert_eq!(parsed.len(), 2);
        assert_eq!(parsed[0].values, ["a", "b"]);
        assert_eq!(parsed[1].values, ["x"]);
        assert!(parse_options(&json!({"not":"a list"})).is_empty());
    }
}
