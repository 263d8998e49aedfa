//! The family a scenario belongs to: what part of a client's job it exercises. Scenarios declare
//! it (`family` in their `[scenario]` table), run.json records it per case, and the report's agent
//! pages group their scenarios by it, in this order. Every row of the coverage matrix in
//! scenarios/README.md belongs to one family ("Families" there lists which rows each holds), so a
//! reader finds a row there and its cases in the report under the same heading.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Family {
    /// `initialize`, `session/new`, and what a client advertises.
    Setup,
    /// Tool calls the agent runs by itself and the timeline rows they get.
    ToolCalls,
    /// Permission requests the user answers.
    Permissions,
    /// What a client decides by itself: deceptive requests, remembered "always" answers.
    Decisions,
    /// Stop: `session/cancel`, pending requests, updates after it.
    Cancel,
    /// Several sessions at once.
    Sessions,
    /// Reopening a session: `session/load`, `session/resume`.
    Reopen,
    /// Session modes, config options, authentication.
    Modes,
    /// The client's file system: `fs/read_text_file`, `fs/write_text_file`.
    Fs,
    /// The client's terminals: `terminal/*`.
    Terminal,
    /// Messages the client does not know: unknown updates, extension methods.
    Unknown,
}

impl Family {
    /// Every family, in report order.
    pub const ALL: [Family; 11] = [
        Family::Setup,
        Family::ToolCalls,
        Family::Permissions,
        Family::Decisions,
        Family::Cancel,
        Family::Sessions,
        Family::Reopen,
        Family::Modes,
        Family::Fs,
        Family::Terminal,
        Family::Unknown,
    ];

    /// The name scenario files and run.json use.
    pub fn id(self) -> &'static str {
        match self {
            Family::Setup => "setup",
            Family::ToolCalls => "tool-calls",
            Family::Permissions => "permissions",
            Family::Decisions => "decisions",
            Family::Cancel => "cancel",
            Family::Sessions => "sessions",
            Family::Reopen => "reopen",
            Family::Modes => "modes",
            Family::Fs => "fs",
            Family::Terminal => "terminal",
            Family::Unknown => "unknown",
        }
    }

    /// The heading a person reads.
    pub fn title(self) -> &'static str {
        match self {
            Family::Setup => "Initialize and session setup",
            Family::ToolCalls => "Tool calls and their timeline rows",
            Family::Permissions => "Permission requests",
            Family::Decisions => {
                "The client's own decisions (deceptive requests, remembered answers)"
            }
            Family::Cancel => "Stop and cancellation",
            Family::Sessions => "Several sessions at once",
            Family::Reopen => "Reopening a session (load, resume)",
            Family::Modes => "Modes, config options, authentication",
            Family::Fs => "The client's file system",
            Family::Terminal => "The client's terminals",
            Family::Unknown => "Unknown and extension messages",
        }
    }

    /// The family named `id`, if there is one.
    pub fn from_id(id: &str) -> Option<Family> {
        Family::ALL.into_iter().find(|f| f.id() == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_match_the_serde_names() {
        for family in Family::ALL {
            assert_eq!(Family::from_id(family.id()), Some(family));
            assert_eq!(
                serde_json::to_value(family).unwrap(),
                serde_json::Value::String(family.id().to_owned())
            );
        }
        assert_eq!(Family::from_id("permission"), None);
    }

    #[test]
    fn all_lists_every_family_once_in_declaration_order() {
        let mut sorted = Family::ALL.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted, Family::ALL.to_vec());
    }
}
