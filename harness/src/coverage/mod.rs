//! The protocol-surface coverage table (`acp-harness coverage`): every stable method of the
//! pinned ACP schema in each direction, every `session/update` variant, and the messages beyond
//! the schema a client must survive (an unknown variant, `_` extension methods), each against
//! the scenarios that exercise it — or, where none does, a sourced explanation from
//! `scenarios/coverage.toml` ([`data`]). A method counts for a scenario when one of its frames
//! sends it (agent → client) or one of its steps expects it from the client (client → agent);
//! nested `then` and `on_timeout` steps count, and `${profile.NAME}` frames are looked up.
//!
//! [`Table::problems`] is what the tests enforce: nothing without a cell, and no explanation for
//! something a scenario now covers (so explanations are removed when coverage lands).

pub mod cli;
pub mod data;
mod render;

use std::collections::{BTreeMap, BTreeSet};

use acp_fake_agents::profile::Profile;
use acp_fake_agents::scenario::{Expected, Fault, Scenario, StepKind};
use acp_judge::surface::{self, MessageKind};
use acp_judge::wire_model::Side;
use acp_vocab::method::Method;
use serde_json::Value;

pub use data::{Explanation, ExplanationFile, Unstable};
pub use render::{README_BEGIN, README_END, readme_with};

/// Messages beyond the schema's methods and variants that a client must still handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Extra {
    /// A `session/update` whose `sessionUpdate` the pinned schema does not define.
    UnknownUpdate,
    /// An agent notification whose method starts with `_`.
    ExtensionNotification,
    /// An agent request whose method starts with `_`.
    ExtensionRequest,
}

impl Extra {
    pub const ALL: [Extra; 3] = [
        Extra::UnknownUpdate,
        Extra::ExtensionNotification,
        Extra::ExtensionRequest,
    ];

    /// The name `scenarios/coverage.toml` uses (`extra = "…"`).
    pub fn name(self) -> &'static str {
        match self {
            Extra::UnknownUpdate => "unknown-update",
            Extra::ExtensionNotification => "extension-notification",
            Extra::ExtensionRequest => "extension-request",
        }
    }

    pub fn parse(name: &str) -> Option<Extra> {
        Extra::ALL.into_iter().find(|e| e.name() == name)
    }
}

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Item {
    Method { method: String, from: Side },
    Update(String),
    Extra(Extra),
}

impl Item {
    /// How the row is named in messages: `agent→client terminal/create`,
    /// `session/update usage_update`, `extra extension-request`.
    pub fn label(&self) -> String {
        match self {
            Item::Method { method, from } => format!("{} {method}", direction(*from)),
            Item::Update(v) => format!("session/update {v}"),
            Item::Extra(e) => format!("extra {}", e.name()),
        }
    }
}

pub fn direction(from: Side) -> &'static str {
    match from {
        Side::Agent => "agent→client",
        Side::Client => "client→agent",
    }
}

/// One row: the item, its message kind (methods only), the scenarios (`agent@version/id`,
/// sorted) and the explanation if one is given.
#[derive(Debug, Clone)]
pub struct Row {
    pub item: Item,
    pub kind: Option<MessageKind>,
    pub scenarios: Vec<String>,
    pub explanation: Option<Explanation>,
}

/// The whole table.
#[derive(Debug, Clone)]
pub struct Table {
    pub rows: Vec<Row>,
    pub unstable: Vec<Unstable>,
    /// Explanations whose item is not a row (a typo, or an item the schema dropped).
    pub orphans: Vec<Explanation>,
}

/// The items of the pinned schema plus the extras, in table order.
pub fn surface_items() -> Vec<(Item, Option<MessageKind>)> {
    let mut out: Vec<(Item, Option<MessageKind>)> = surface::stable_methods()
        .into_iter()
        .map(|m| {
            (
                Item::Method {
                    method: m.method,
                    from: m.from,
                },
                Some(m.kind),
            )
        })
        .collect();
    out.extend(
        surface::session_update_variants()
            .into_iter()
            .map(|v| (Item::Update(v), None)),
    );
    out.extend(Extra::ALL.into_iter().map(|e| (Item::Extra(e), None)));
    out
}

impl Table {
    /// Builds the table from parsed scenarios and the explanations file.
    pub fn build(scenarios: &[Scenario], data: &ExplanationFile) -> Table {
        let exercised = exercised(scenarios);
        let mut explanations: Vec<Option<Explanation>> =
            data.explanation.iter().cloned().map(Some).collect();
        let rows = surface_items()
            .into_iter()
            .map(|(item, kind)| {
                let explanation = explanations
                    .iter_mut()
                    .find(|e| e.as_ref().and_then(|e| e.item()).as_ref() == Some(&item))
                    .and_then(Option::take);
                let scenarios = exercised
                    .get(&item)
                    .map(|s| s.iter().cloned().collect())
                    .unwrap_or_default();
                Row {
                    item,
                    kind,
                    scenarios,
                    explanation,
                }
            })
            .collect();
        Table {
            rows,
            unstable: data.unstable.clone(),
            orphans: explanations.into_iter().flatten().collect(),
        }
    }

    /// What the tests refuse, one sentence each; empty when the table is whole.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for row in &self.rows {
            match (row.scenarios.is_empty(), &row.explanation) {
                (true, None) => out.push(format!(
                    "{}: no scenario exercises it and scenarios/coverage.toml does not explain why",
                    row.item.label()
                )),
                (false, Some(_)) => out.push(format!(
                    "{}: scenarios/coverage.toml explains why nothing covers it, but {} now {} ({}): remove the stale explanation",
                    row.item.label(),
                    match row.scenarios.len() {
                        1 => "1 scenario".to_owned(),
                        n => format!("{n} scenarios"),
                    },
                    if row.scenarios.len() == 1 { "does" } else { "do" },
                    row.scenarios.first().map_or("", String::as_str)
                )),
                _ => {}
            }
        }
        for orphan in &self.orphans {
            out.push(format!(
                "scenarios/coverage.toml: {} names nothing of the pinned schema's surface",
                orphan.describe()
            ));
        }
        let stable: BTreeSet<&str> = self
            .rows
            .iter()
            .filter_map(|r| match &r.item {
                Item::Method { method, .. } => Some(method.as_str()),
                Item::Update(v) => Some(v.as_str()),
                Item::Extra(_) => None,
            })
            .collect();
        for u in &self.unstable {
            if stable.contains(u.name.as_str()) {
                out.push(format!(
                    "scenarios/coverage.toml: `{}` is listed as unstable, but the pinned schema has it as stable",
                    u.name
                ));
            }
        }
        out
    }
}

/// Every item each scenario exercises.
pub fn exercised(scenarios: &[Scenario]) -> BTreeMap<Item, BTreeSet<String>> {
    let mut out: BTreeMap<Item, BTreeSet<String>> = BTreeMap::new();
    for scenario in scenarios {
        let key = scenario.key();
        let mut add = |item: Item| {
            out.entry(item).or_default().insert(key.clone());
        };
        let profile = scenario.profile.as_deref();
        for step in scenario.all_steps() {
            match &step.kind {
                StepKind::Handshake => {
                    for method in [Method::Initialize.as_str(), Method::SessionNew.as_str()] {
                        add(client_method(method));
                    }
                }
                StepKind::Expect(expect) => {
                    if let Expected::Method(method) = &expect.what {
                        add(client_method(method));
                    }
                }
                StepKind::Send { frame, .. } => {
                    if let Ok(frame) = frame.value() {
                        sent_items(&frame, profile, false, &mut add)
                    }
                }
                StepKind::Fault(fault) => match fault {
                    Fault::Split { frame, .. } | Fault::Duplicate { frame } => {
                        sent_items(frame, profile, false, &mut add)
                    }
                    Fault::Invalid { frame } => sent_items(frame, profile, true, &mut add),
                    Fault::Raw { .. } => {}
                },
                _ => {}
            }
        }
    }
    out
}

fn client_method(method: &str) -> Item {
    Item::Method {
        method: method.to_owned(),
        from: Side::Client,
    }
}

/// The items one agent frame exercises. `invalid`: sent as a deliberate schema fault.
fn sent_items(frame: &Value, profile: Option<&Profile>, invalid: bool, add: &mut impl FnMut(Item)) {
    let frame = resolve(frame, profile, 0);
    let Some(method) = frame.get("method").and_then(Value::as_str) else {
        return;
    };
    if method.starts_with('_') {
        add(Item::Extra(if frame.get("id").is_some() {
            Extra::ExtensionRequest
        } else {
            Extra::ExtensionNotification
        }));
        return;
    }
    add(Item::Method {
        method: method.to_owned(),
        from: Side::Agent,
    });
    if method != Method::SessionUpdate.as_str() {
        return;
    }
    let Some(variant) = frame
        .pointer("/params/update/sessionUpdate")
        .and_then(Value::as_str)
    else {
        return;
    };
    if surface::is_known_update(variant) {
        add(Item::Update(variant.to_owned()));
    } else if invalid {
        add(Item::Extra(Extra::UnknownUpdate));
    }
}

/// `frame` with every `"${profile.NAME}"` string replaced by that profile frame (bounded depth:
/// profiles cannot have cycles, but a bad one must not recurse forever).
fn resolve(value: &Value, profile: Option<&Profile>, depth: usize) -> Value {
    match value {
        Value::String(s) if depth < 8 => {
            let name = s
                .strip_prefix("${profile.")
                .and_then(|rest| rest.strip_suffix('}'));
            match name.and_then(|n| profile?.frame(n)) {
                Some(frame) => resolve(frame, profile, depth + 1),
                None => value.clone(),
            }
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|v| resolve(v, profile, depth)).collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), resolve(v, profile, depth)))
                .collect(),
        ),
        _ => value.clone(),
    }
}

#[cfg(test)]
mod tests;
