//! `scenarios/coverage.toml`: why an item of the protocol surface has no scenario (each with
//! public sources), and which methods the pinned schema has only as unstable (listed apart).
//!
//! ```toml
//! [[explanation]]
//! method = "terminal/create"   # a method, with `from` = "agent" | "client" (who sends it)
//! from = "agent"
//! # update = "usage_update"    # or a session/update variant
//! # extra = "extension-request" # or unknown-update | extension-notification
//! why = "claude-agent-acp ≤0.16 calls it when the client advertises terminal; no scenario models it"
//! sources = ["https://github.com/…"]
//!
//! [[unstable]]
//! name = "session/fork"
//! feature = "unstable_session_fork"
//! note = "…"
//! ```

use std::path::Path;

use acp_judge::wire_model::Side;
use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::{Extra, Item};

/// The file's name at the top of the scenarios folder (the scenario loader skips it).
pub const FILE: &str = acp_fake_agents::scenario::COVERAGE_FILE;

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExplanationFile {
    #[serde(default)]
    pub explanation: Vec<Explanation>,
    #[serde(default)]
    pub unstable: Vec<Unstable>,
}

/// Why nothing exercises one item.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Explanation {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// `agent` or `client`: who sends `method`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<String>,
    /// What is true: which real agent versions do this (per the sources) and that no scenario
    /// models it, or that no agent version we model does.
    pub why: String,
    /// Public sources (upstream repository, path and tag or commit; an issue or PR URL).
    pub sources: Vec<String>,
}

impl Explanation {
    /// The row this explanation is for (`None` if it names none correctly).
    pub fn item(&self) -> Option<Item> {
        match (&self.method, &self.from, &self.update, &self.extra) {
            (Some(method), Some(from), None, None) => Some(Item::Method {
                method: method.clone(),
                from: match from.as_str() {
                    "agent" => Side::Agent,
                    "client" => Side::Client,
                    _ => return None,
                },
            }),
            (None, None, Some(update), None) => Some(Item::Update(update.clone())),
            (None, None, None, Some(extra)) => Extra::parse(extra).map(Item::Extra),
            _ => None,
        }
    }

    /// The entry in words, for error messages.
    pub fn describe(&self) -> String {
        match self.item() {
            Some(item) => item.label(),
            None => format!(
                "the entry method={:?} from={:?} update={:?} extra={:?}",
                self.method, self.from, self.update, self.extra
            ),
        }
    }
}

/// A method or variant the pinned schema has only behind an `unstable_*` feature.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Unstable {
    pub name: String,
    /// The agent-client-protocol-schema feature it needs.
    pub feature: String,
    #[serde(default)]
    pub note: String,
}

/// Reads and checks `<scenarios>/coverage.toml`.
pub fn load(scenarios: &Path) -> Result<ExplanationFile> {
    let path = scenarios.join(FILE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    parse(&text).with_context(|| format!("{}", path.display()))
}

pub fn parse(text: &str) -> Result<ExplanationFile> {
    let file: ExplanationFile = toml::from_str(text)?;
    for e in &file.explanation {
        if e.item().is_none() {
            bail!(
                "{}: give `method` with `from` (agent|client), or `update`, or `extra` ({})",
                e.describe(),
                Extra::ALL.map(Extra::name).join(" | ")
            );
        }
        if e.why.trim().is_empty() || e.sources.iter().all(|s| s.trim().is_empty()) {
            bail!(
                "{}: `why` and at least one public source are required",
                e.describe()
            );
        }
    }
    Ok(file)
}
