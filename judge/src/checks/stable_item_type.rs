//! `stable-item-type` — a timeline item keeps one type for its whole life (docs/architecture.md §5.4; bb #1719;
//! R56, R57).
//!
//! Requirement: for each (sessionId, toolCallId) the client's timeline item keeps the `itemType`
//! it was first shown with; in particular an approval must not turn a file-change row into a
//! command row and back.
//!
//! Grading: a change of `itemType` is `fail`, listing the types with their frame indices
//! (`file_change #11 → command #16 → file_change #19`). Kind MAY change through a
//! `tool_call_update` (R57), so when *every* change of the item type follows its own change of
//! the tool call's effective kind on the wire (matched in order, each before the item event that
//! shows it; `other` after a specific kind is no change, as in the effective tool call), or of the
//! subject it implies (with kind `other`
//! or none, a `rawInput.command`, diff or locations that the agent added later, docs/architecture.md §5.1), the
//! grade is `warn` and the message says the agent changed the tool call itself.

use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use crate::rules::{RuleId, id::*};
use crate::wire_model::WireModel;

pub struct StableItemType;

impl Check for StableItemType {
    fn id(&self) -> &'static str {
        "stable-item-type"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R56, R57, R193, R198]
    }

    fn requirement(&self) -> &'static str {
        "Each tool call's timeline item keeps one item type for its whole life."
    }

    fn needs_control_plane(&self) -> bool {
        true
    }

    fn observable_with(&self) -> &'static [&'static str] {
        &["item"]
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut problems = Problems::new();
        let mut any = false;
        for ((sid, tcid), items) in model.items() {
            any = true;
            // Collapse repeated events of the same type: (index, type) at each change.
            let mut runs: Vec<(usize, &str)> = Vec::new();
            for (index, item_type) in items {
                if runs.last().is_none_or(|(_, t)| *t != item_type) {
                    runs.push((index, item_type));
                }
            }
            if runs.len() < 2 {
                continue;
            }
            let history: Vec<String> = runs.iter().map(|(i, t)| format!("{t} #{i}")).collect();
            let mut kind_changes = model.kind_changes(sid, tcid);
            kind_changes.extend(
                model
                    .subject_changes(sid, tcid)
                    .into_iter()
                    .map(|(i, before, after)| (i, before.as_str(), after.as_str())),
            );
            // One explanation per frame: the kind change, if the frame changed the kind.
            kind_changes.sort_by_key(|(i, _, _)| *i);
            kind_changes.dedup_by_key(|(i, _, _)| *i);
            // Every change must be preceded by its own change on the wire, in order. The client
            // reports an item after it read the frame, so several frames sent at once may all be
            // recorded before the items that follow them: match each item change with the
            // earliest wire change not used yet, as long as it came before the new item.
            let mut explained = Vec::new();
            let mut unused = kind_changes.iter();
            for pair in runs.windows(2) {
                let to = pair[1].0;
                match unused.next().filter(|(i, _, _)| *i < to) {
                    Some(change) => explained.push(*change),
                    None => {
                        explained.clear();
                        break;
                    }
                }
            }
            let mut frames: Vec<usize> = runs.iter().map(|(i, _)| *i).collect();
            if explained.len() == runs.len() - 1 {
                let said: Vec<String> = explained
                    .iter()
                    .map(|(i, before, after)| format!("\"{before}\" → \"{after}\" at #{i}"))
                    .collect();
                frames.extend(explained.iter().map(|(i, _, _)| *i));
                problems.warn(
                    R198,
                    format!(
                        "the timeline item for toolCallId \"{tcid}\" (session \"{sid}\") changed type: {}. The agent itself changed the tool call's kind, or the subject it implies, on the wire ({}), so this is a warning.",
                        history.join(" → "),
                        said.join(", ")
                    ),
                    &frames,
                );
            } else {
                problems.fail(
                    R193,
                    format!(
                        "the timeline item for toolCallId \"{tcid}\" (session \"{sid}\") changed type: {}. Expected one type for the item's whole life.",
                        history.join(" → ")
                    ),
                    &frames,
                );
            }
        }
        if !any {
            // Nothing to retype. Rows that should exist and do not are `tool-call-row`'s.
            return Finding::not_applicable(if model.announced_tool_calls().is_empty() {
                "the agent announced no tool call"
            } else {
                "client showed no timeline items, so none could change type (tool-call-row grades the missing rows)"
            });
        }
        problems.finish("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, assert_grade, buttons3, opts3};
    use serde_json::json;

    #[test]
    fn stable_type_passes() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"e","kind":"edit"}));
        c.item("c", "file_change");
        c.permission(json!(0), json!({"toolCallId":"c","kind":"edit"}), opts3());
        c.approval(json!(0), "c", "file_change", buttons3());
        c.item("c", "file_change");
        assert_eq!(c.grade(&StableItemType), Finding::pass());
    }

    #[test]
    fn flip_on_approval_fails_with_history() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"e","kind":"edit"}));
        let a = c.item("c", "file_change");
        c.permission(json!(0), json!({"toolCallId":"c","kind":"other"}), opts3());
        let b = c.item("c", "command");
        c.select(json!(0), "once");
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}));
        let d = c.item("c", "file_change");
        let f = c.grade(&StableItemType);
        assert_grade(
            &f,
            Grade::Fail,
            &format!("file_change #{a} → command #{b} → file_change #{d}"),
        );
        assert_eq!(f.frames, vec![a, b, d]);
    }

    #[test]
    fn change_following_agent_kind_change_warns() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"e","kind":"read"}));
        c.item("c", "read");
        let k =
            c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"edit"}));
        c.item("c", "file_change");
        let f = c.grade(&StableItemType);
        assert_grade(&f, Grade::Warn, &format!("\"read\" → \"edit\" at #{k}"));
    }

    #[test]
    fn change_following_what_the_call_carries_warns() {
        // No kind: the subject is inferred, and rawInput.command arriving later makes it a
        // command; the client's item follows the wire.
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"t"}));
        c.item("c", "generic");
        let k = c.permission(
            json!(0),
            json!({"toolCallId":"c","rawInput":{"command":"ls"}}),
            opts3(),
        );
        c.item("c", "command");
        let f = c.grade(&StableItemType);
        assert_grade(
            &f,
            Grade::Warn,
            &format!("\"generic\" → \"command\" at #{k}"),
        );
    }

    #[test]
    fn frames_sent_together_explain_the_items_that_follow() {
        // The announcement and a request with another kind reach the client in one write: both
        // frames are recorded before both item events.
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"e","kind":"edit"}));
        c.permission(json!(0), json!({"toolCallId":"c","kind":"read"}), opts3());
        c.item("c", "file_change");
        c.item("c", "read");
        assert_eq!(c.grade(&StableItemType).grade, Grade::Warn);
        // One wire change cannot explain two item changes (the flip back).
        c.item("c", "file_change");
        assert_eq!(c.grade(&StableItemType).grade, Grade::Fail);
    }

    #[test]
    fn one_explained_and_one_unexplained_change_fails() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"e","kind":"read"}));
        c.item("c", "read");
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"c","kind":"edit"}));
        c.item("c", "file_change");
        c.item("c", "command");
        assert_eq!(c.grade(&StableItemType).grade, Grade::Fail);
    }

    #[test]
    fn items_are_keyed_per_session() {
        let c = Case::new();
        c.handshake();
        c.item("c", "file_change");
        c.ev(json!({"type":"item","sessionId":"other","toolCallId":"c","itemType":"command","status":"x","title":"t"}));
        assert_eq!(c.grade(&StableItemType).grade, Grade::Pass);
    }

    #[test]
    fn no_items_is_not_applicable() {
        let c = Case::new();
        c.handshake();
        assert_grade(
            &c.grade(&StableItemType),
            Grade::NotApplicable,
            "the agent announced no tool call",
        );
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"e","kind":"edit"}));
        assert_grade(
            &c.grade(&StableItemType),
            Grade::NotApplicable,
            "tool-call-row grades the missing rows",
        );
    }
}
