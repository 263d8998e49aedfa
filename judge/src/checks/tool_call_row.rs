//! `tool-call-row` — every tool call the agent announces gets a timeline row of the type its kind
//! implies (docs/architecture.md §5.1, §5.4; R56, R57).
//!
//! Requirement: for every (sessionId, toolCallId) the agent describes — by a `tool_call`, by a
//! `tool_call_update` for an id it never announced otherwise, or only by the `toolCall` of a
//! `session/request_permission` — the client reports an `item` for that session and id, and the
//! latest item's type is the subject of what the agent had said about the tool call up to then
//! (the effective tool call, the same rules as `subject-kind`: a specific kind decides, `other`
//! never overrides a specific kind, and with kind `other`/absent `rawInput.command`, a diff or
//! locations decide).
//!
//! Why: qwen-code announces most tool calls only by their permission request, codex-acp 0.13
//! asks before its `tool_call`, and opencode's doom_loop / codex's MCP approvals ask about ids
//! never announced. A client that builds rows from `tool_call` alone shows an approval card and
//! then no row for the tool that ran; one that stops reading after an update it does not
//! understand (xenodium/agent-shell#455) shows no rows for the rest of the turn.
//!
//! Grading: a missing row is `fail`, citing the first frame that announced the tool call (on a
//! run that did not finish, a missing row is not judged: the run's end is the verdict). A row of
//! another type is `fail` when a specific kind decided the type, `warn` when the kind was
//! `other`/absent and the row shows `generic` or a subject the tool call also supports (as in
//! `subject-kind`). Frames the harness sent as deliberate faults do not announce anything.
//! Retyping a row is `stable-item-type`'s business; a row in the wrong session is
//! `session-isolation`'s.

use super::{Check, Finding, Problems};
use crate::record::{CaseRecord, RunEnd};
use crate::rules::{RuleId, id::*};
use crate::wire_model::WireModel;
use acp_vocab::method::Method;

pub struct ToolCallRow;

impl Check for ToolCallRow {
    fn id(&self) -> &'static str {
        "tool-call-row"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R56, R57, R199]
    }

    fn requirement(&self) -> &'static str {
        "Every tool call the agent announces (by tool_call, by an update, or only by a permission request) has a timeline row of the type its kind implies."
    }

    fn needs_control_plane(&self) -> bool {
        true
    }

    fn observable_with(&self) -> &'static [&'static str] {
        &["item"]
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let announced: Vec<(&str, &str, usize)> = model
            .announced_tool_calls()
            .into_iter()
            .filter_map(|(sid, tcid, _)| {
                // The first frame that is not a deliberate fault announces the tool call.
                let first = model
                    .tool_frames(sid, tcid)
                    .iter()
                    .copied()
                    .find(|&i| model.fault_at(i).is_none())?;
                Some((sid, tcid, first))
            })
            .collect();
        if announced.is_empty() {
            return Finding::not_applicable("the agent announced no tool call");
        }
        let mut problems = Problems::new();
        for (sid, tcid, first) in announced {
            let items = model.item_events(sid, tcid);
            let Some(last) = items.last() else {
                if case.end == RunEnd::Completed {
                    let expected = model.described_before(sid, tcid, usize::MAX);
                    problems.fail(
                        R56,
                        format!(
                            "the agent announced tool call \"{tcid}\" in session \"{sid}\" (#{first}, {}), but the client showed no timeline item for it. Expected a \"{}\" row ({}).",
                            announcement(model, first),
                            expected.expected_subject().subject.as_str(),
                            expected.expected_subject().reason
                        ),
                        &[first],
                    );
                }
                continue;
            };
            let Some(item) = last.item() else {
                continue;
            };
            let shown = item.item_type;
            let call = model.described_before(sid, tcid, last.index);
            let expected = call.expected_subject();
            if shown == expected.subject {
                continue;
            }
            let mut frames = vec![first, last.index];
            frames.extend(call.kind_frame);
            let message = format!(
                "the timeline item #{} for tool call \"{tcid}\" (session \"{sid}\", announced at #{first}) is \"{shown}\". Expected \"{}\": {}.",
                last.index,
                expected.subject.as_str(),
                expected.reason
            );
            if call.weakly_supports(shown) {
                problems.warn(R199, message, &frames);
            } else {
                problems.fail(R57, message, &frames);
            }
        }
        problems.finish("")
    }
}

/// How the frame at `index` announced its tool call, in words.
fn announcement(model: &WireModel<'_>, index: usize) -> &'static str {
    let Some(msg) = model.msg(index) else {
        return "?";
    };
    if msg.method() == Some(Method::SessionRequestPermission.as_str()) {
        return "only by this permission request";
    }
    match model.tool_fields(index).and_then(|u| u.session_update) {
        Some("tool_call") => "by tool_call",
        _ => "by a tool_call_update",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, assert_grade, opts3};
    use serde_json::json;

    #[test]
    fn rows_of_the_right_type_pass() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"e","kind":"edit"}));
        c.item("a", "file_change");
        c.permission(
            json!(0),
            json!({"toolCallId":"b","kind":"execute","title":"ls"}),
            opts3(),
        );
        c.item("b", "command");
        assert_eq!(c.grade(&ToolCallRow), Finding::pass());
    }

    #[test]
    fn a_request_only_tool_call_without_a_row_fails_citing_the_request() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        let p = c.permission(
            json!(0),
            json!({"toolCallId":"b","kind":"edit","title":"x"}),
            opts3(),
        );
        let f = c.grade(&ToolCallRow);
        assert_grade(&f, Grade::Fail, "only by this permission request");
        assert_eq!(f.frames, vec![p]);
    }

    #[test]
    fn a_row_of_another_type_fails_or_warns_by_kind() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"e","kind":"edit"}));
        c.item("a", "command");
        assert_grade(
            &c.grade(&ToolCallRow),
            Grade::Fail,
            "Expected \"file_change\"",
        );

        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"e","kind":"other",
            "rawInput":{"command":"ls"}}),
        );
        c.item("a", "generic");
        assert_grade(&c.grade(&ToolCallRow), Grade::Warn, "Expected \"command\"");
    }

    #[test]
    fn no_announcement_is_not_applicable_and_unfinished_runs_skip_missing_rows() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        assert_eq!(c.grade(&ToolCallRow).grade, Grade::NotApplicable);

        let mut c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"a","title":"e","kind":"edit"}));
        c.end = RunEnd::Incomplete {
            step: 2,
            reason: "x".into(),
        };
        assert_eq!(c.grade(&ToolCallRow).grade, Grade::Pass);
    }
}
