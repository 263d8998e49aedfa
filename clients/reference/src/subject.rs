//! Classification of a tool call into the closed vocabulary the client shows. One function is
//! used for BOTH the timeline item type and the approval subject, so the two always agree
//! (the lesson of get-bb/bb#1719: "the timeline and the permission mapping must agree").

use serde_json::{Map, Value};

/// What a timeline item / approval card is about: the control protocol's `Subject`.
pub use acp_vocab::control::Subject;

/// The ACP `ToolKind`s that say what a call does. `other`, an unknown word or a non-string is
/// not specific: it never overrides a specific kind (see `timeline.rs`).
pub fn is_specific_kind(kind: &Value) -> bool {
    kind.as_str().is_some_and(is_specific_kind_word)
}

/// [`is_specific_kind`] of a string.
pub fn is_specific_kind_word(kind: &str) -> bool {
    matches!(
        kind,
        "execute"
            | "edit"
            | "delete"
            | "move"
            | "read"
            | "search"
            | "fetch"
            | "think"
            | "switch_mode"
    )
}

/// Classify an *effective* tool call (all announcements for one id merged, see `timeline.rs`).
pub fn classify(call: &Map<String, Value>) -> Subject {
    classify_with(call, || has_diff(call))
}

/// [`classify`], with whether the call's `content` has a diff told by `has_diff` (asked only
/// when it decides): the timeline keeps a streamed `content` as its text (`tool_update.rs`).
pub fn classify_with(call: &Map<String, Value>, has_diff: impl FnOnce() -> bool) -> Subject {
    match call.get("kind").and_then(Value::as_str) {
        Some("execute") => Subject::Command,
        Some("edit" | "delete" | "move") => Subject::FileChange,
        Some("read") => Subject::Read,
        Some("search") => Subject::Search,
        Some("fetch") => Subject::Fetch,
        Some("think") => Subject::Think,
        Some("switch_mode") => Subject::ModeSwitch,
        // `other`, absent or unknown: decide from what the call carries.
        _ => {
            if call
                .get("rawInput")
                .and_then(|input| input.get("command"))
                .is_some_and(Value::is_string)
            {
                Subject::Command
            } else if has_diff() || has_location(call) {
                // e.g. opencode `external_directory`: kind other, locations = [file, dir].
                Subject::FileChange
            } else {
                Subject::Generic
            }
        }
    }
}

/// Whether an item of the call's `content` is a diff.
pub fn has_diff(call: &Map<String, Value>) -> bool {
    call.get("content")
        .and_then(Value::as_array)
        .is_some_and(|content| {
            content
                .iter()
                .any(|c| c.get("type").and_then(Value::as_str) == Some("diff"))
        })
}

fn has_location(call: &Map<String, Value>) -> bool {
    call.get("locations")
        .and_then(Value::as_array)
        .is_some_and(|locations| !locations.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(v: Value) -> Subject {
        classify(v.as_object().expect("object"))
    }

    #[test]
    fn specific_kinds() {
        for (kind, subject) in [
            ("execute", Subject::Command),
            ("edit", Subject::FileChange),
            ("delete", Subject::FileChange),
            ("move", Subject::FileChange),
            ("read", Subject::Read),
            ("search", Subject::Search),
            ("fetch", Subject::Fetch),
            ("think", Subject::Think),
            ("switch_mode", Subject::ModeSwitch),
        ] {
            // The kind wins even over a command in rawInput.
            assert_eq!(
                class(json!({"kind": kind, "rawInput": {"command": "ls"}})),
                subject
            );
        }
    }

    #[test]
    fn other_or_absent_falls_back_to_what_the_call_carries() {
        assert_eq!(
            class(json!({"kind": "other", "rawInput": {"command": "ls"}})),
            Subject::Command
        );
        // A command array is not a command string.
        assert_eq!(
            class(json!({"rawInput": {"command": ["ls"]}})),
            Subject::Generic
        );
        assert_eq!(
            class(json!({"content": [{"type": "diff", "path": "/a", "newText": ""}]})),
            Subject::FileChange
        );
        assert_eq!(
            class(json!({"kind": "other", "locations": [{"path": "/w/f"}, {"path": "/w"}]})),
            Subject::FileChange
        );
        assert_eq!(class(json!({"locations": []})), Subject::Generic);
        assert_eq!(class(json!({"kind": "bogus"})), Subject::Generic);
        assert_eq!(class(json!({})), Subject::Generic);
    }

    #[test]
    fn serializes_to_the_control_vocabulary() {
        assert_eq!(json!(Subject::FileChange), json!("file_change"));
        assert_eq!(json!(Subject::ModeSwitch), json!("mode_switch"));
    }
}
