//! Session modes and config options on the control plane (harness/CONTROL.md "Modes and config
//! options"): the events an adapter prints for what its client shows as a session's current mode
//! and the current value of each config option. The user's commands (`set_mode`,
//! `set_config_option`) are variants of [`crate::control::Command`]; these are the events'
//! bodies, so a check can compare what the client shows with what the agent said.

use serde::{Deserialize, Serialize};

/// `mode`: the mode the client now shows as the session's current one (ACP `currentModeId`).
/// Printed when the session opens with `modes`, and whenever the shown mode changes: after the
/// agent accepted a `session/set_mode`, or on a `current_mode_update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModeShown {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    #[serde(rename = "modeId")]
    pub mode_id: String,
}

/// `config_option`: the value the client now shows for one config option of the session.
/// Printed when the session opens with `configOptions`, and whenever a shown value changes: after
/// the agent answered a `session/set_config_option`, or on a `config_option_update`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigOptionShown {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    #[serde(rename = "configId")]
    pub config_id: String,
    /// The option's `currentValue` as the client shows it (a select option's value id).
    pub value: String,
}
