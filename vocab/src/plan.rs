//! The agent's plan on the control plane (harness/CONTROL.md "The plan"): the event an adapter
//! prints for the plan its client shows for a session, so the `plan` check can compare it with the
//! `plan` updates the agent sent (ACP: each update is the complete plan, which the client
//! replaces; agentclientprotocol.com/protocol/agent-plan).

use serde::{Deserialize, Serialize};

/// `plan`: the plan the client now shows for a session, every entry in display order. Printed
/// whenever the shown plan changes; an empty `entries` is a session that shows no plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanShown {
    #[serde(rename = "sessionId")]
    pub session_id: String,
    pub entries: Vec<PlanEntryShown>,
}

/// One entry as shown: its text and status as the agent gave them (ACP `PlanEntry.content`,
/// `status`), and its priority when the client shows one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanEntryShown {
    pub content: String,
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<String>,
}

impl PlanEntryShown {
    /// An ACP `PlanEntry` as a client shows it: `content` and `status` strings, and `priority`
    /// when it is one. `None` for an entry without a string `content` or `status` (which the
    /// schema requires): the client and the check read the agent's entries the same way.
    pub fn from_wire(entry: &serde_json::Value) -> Option<Self> {
        let text = |k: &str| entry.get(k).and_then(serde_json::Value::as_str);
        Some(PlanEntryShown {
            content: text("content")?.to_owned(),
            status: text("status")?.to_owned(),
            priority: text("priority").map(str::to_owned),
        })
    }

    /// The entries of a `plan` update (its `entries`), as a client shows them; `None` when they
    /// are missing or not an array.
    pub fn all_from_wire(entries: Option<&serde_json::Value>) -> Option<Vec<Self>> {
        Some(
            entries?
                .as_array()?
                .iter()
                .filter_map(Self::from_wire)
                .collect(),
        )
    }

    /// True if this shown entry is `sent` as the agent gave it: the same text and status, and the
    /// same priority when the client shows one.
    pub fn shows(&self, sent: &PlanEntryShown) -> bool {
        self.content == sent.content
            && self.status == sent.status
            && self
                .priority
                .as_ref()
                .is_none_or(|p| Some(p) == sent.priority.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_reads_its_text_status_and_priority_and_needs_the_first_two() {
        let entries = json!([
            {"content": "Add tests", "status": "pending", "priority": "medium"},
            {"content": "No status"},
            {"content": "Ship", "status": "completed"}
        ]);
        let entries = PlanEntryShown::all_from_wire(Some(&entries)).expect("an array");
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].priority.as_deref(), Some("medium"));
        assert_eq!(entries[1].priority, None);
        assert!(PlanEntryShown::all_from_wire(Some(&json!({}))).is_none());
        assert!(PlanEntryShown::all_from_wire(None).is_none());
    }

    #[test]
    fn a_shown_entry_without_priority_matches_any_and_one_with_it_only_its_own() {
        let sent = PlanEntryShown {
            content: "Add tests".into(),
            status: "pending".into(),
            priority: Some("high".into()),
        };
        let mut shown = PlanEntryShown {
            priority: None,
            ..sent.clone()
        };
        assert!(shown.shows(&sent));
        shown.priority = Some("low".into());
        assert!(!shown.shows(&sent));
        shown.priority = Some("high".into());
        shown.status = "completed".into();
        assert!(!shown.shows(&sent));
    }
}
