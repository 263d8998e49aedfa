//! `subject-kind` — an approval card shows what the tool call really does (docs/architecture.md
//! §5.1; R56–R59).
//!
//! Requirement: for every `session/request_permission`, the client's approval card shows the
//! subject implied by the *effective tool call* (every `tool_call`/`tool_call_update` for that
//! `toolCallId` in that session, then the request's own `toolCall`; `other` never overrides a
//! specific kind), and the same type as the client's timeline item for that tool call.
//!
//! Grading, as a demanding user reads docs/architecture.md §5.1:
//! * a specific kind (`edit`, `execute`, …) decides the subject; showing anything else — even
//!   `generic` — is `fail` (the bb #1719 bug: an edit shown as a command);
//! * with kind `other`/absent the subject is inferred (`rawInput.command` → command, diff content
//!   or locations → file_change, else generic). Showing `generic`, or a subject that the tool call
//!   also supports (file_change when it has locations), is a weaker deviation: `warn`. Showing a
//!   specific subject nothing supports is `fail`;
//! * the card must show the client's latest item type for that tool call at the time of the card
//!   (if the client showed an item), else `fail`; a card about another `toolCallId` is `fail`;
//! * a request that never got a card and was not resolved by policy (or by a cancel) is `fail`
//!   when the run completed or the client answered it anyway;
//! * if no card was shown at all (every request answered by the client's policy), nothing was
//!   compared and the check is `not_applicable`.
//! * without an adapter, a request the observer saw no card for is not compared (the client may
//!   have shown it in a way the profile's rules do not match); with no card observed at all the
//!   check is `not_applicable`: "the observer reported no approval for request #N".
//!
//! Without an adapter, the cards may come from the client profile's observer (`approval` events
//! in direction `o2h`, e.g. acpx's `_meta.acpx.permissionEscalation.toolKind`); they are graded
//! the same way.

use super::{Check, Finding, Grade, Problems};
use crate::record::{CaseRecord, RunEnd};
use crate::rules::{RuleId, id::*};
use acp_vocab::control::{Approval, ApprovalResolved, Event, ResolvedBy};

use crate::wire_model::{ControlMsg, EffectiveToolCall, PermissionRequest, WireModel};

pub struct SubjectKind;

impl Check for SubjectKind {
    fn id(&self) -> &'static str {
        "subject-kind"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R56, R57, R58, R59, R190]
    }

    fn requirement(&self) -> &'static str {
        "Every approval card shows the subject implied by the effective tool call's kind, and the same type as the client's timeline item for that tool call."
    }

    fn needs_control_plane(&self) -> bool {
        true
    }

    fn observable_with(&self) -> &'static [&'static str] {
        &["approval"]
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        if model.permissions.is_empty() {
            return Finding::not_applicable("scenario sends no permission request");
        }
        let mut problems = Problems::new();
        let mut shown = 0;
        // Without an adapter the cards are observed: a card the observer did not see may still
        // have been shown (a rule that matched nothing), so it proves no bug.
        let mut unobserved = Vec::new();
        for request in &model.permissions {
            if matches!(request.fault, Some("invalid" | "raw")) {
                continue;
            }
            if request.approvals.is_empty() && !case.control_plane {
                unobserved.push(format!("#{}", request.index));
                continue;
            }
            if request.approvals.is_empty() {
                check_unshown(case, model, request, &mut problems);
                continue;
            }
            shown += 1;
            let effective = model.effective_for_request(request);
            for &approval in &request.approvals {
                check_approval(model, request, &effective, approval, &mut problems);
            }
        }
        let finding = problems.finish("");
        if shown == 0 && finding.grade == Grade::Pass && !unobserved.is_empty() {
            return Finding::not_applicable(format!(
                "the observer reported no approval for request {}",
                unobserved.join(", ")
            ));
        }
        if shown == 0 && finding.grade == Grade::Pass {
            // Nothing was compared: passing would claim more than the run showed.
            return Finding::not_applicable(
                "no approval card was shown: the client answered every permission request by its own policy",
            );
        }
        finding
    }
}

/// A request without an approval card.
fn check_unshown(
    case: &CaseRecord,
    model: &WireModel<'_>,
    request: &PermissionRequest<'_>,
    problems: &mut Problems,
) {
    let excused = request.resolutions.iter().any(|&i| {
        matches!(
            model.control_at(i).and_then(ControlMsg::event),
            Some(Event::ApprovalResolved(ApprovalResolved {
                by: Some(ResolvedBy::Policy | ResolvedBy::Cancel),
                ..
            }))
        )
    });
    if excused {
        return;
    }
    // A duplicated frame needs one card for the pair.
    if request.fault == Some("duplicate")
        && model.permissions.iter().any(|p| {
            p.fault == Some("duplicate")
                && p.conn == request.conn
                && p.id == request.id
                && !p.approvals.is_empty()
        })
    {
        return;
    }
    if case.end != RunEnd::Completed && request.answers.is_empty() {
        return; // the run ended before the card could be shown; grade_case reports that
    }
    let mut frames = vec![request.index];
    frames.extend(request.answers.first().copied());
    let answered = match request.answers.first() {
        Some(&a) => format!(
            " yet answered it ({} at #{a})",
            model.permission_answer(a).describe()
        ),
        None => String::new(),
    };
    problems.fail(
        R190,
        format!(
            "permission request #{} (toolCallId {}) was never shown as an approval card{answered}, and no approval_resolved says a policy answered it. Expected: an `approval` event for requestId {}.",
            request.index,
            tool_call_label(request.tool_call_id),
            request.id
        ),
        &frames,
    );
}

fn check_approval(
    model: &WireModel<'_>,
    request: &PermissionRequest<'_>,
    effective: &EffectiveToolCall<'_>,
    approval: usize,
    problems: &mut Problems,
) {
    let Some(Event::Approval(Approval {
        session_id,
        tool_call_id,
        subject: shown,
        ..
    })) = model.control_at(approval).and_then(ControlMsg::event)
    else {
        return;
    };
    let shown = *shown;
    let mut frames = vec![request.index, approval];
    frames.extend(effective.kind_frame);
    if let (Some(shown), Some(asked)) = (tool_call_id, request.tool_call_id) {
        if shown != asked {
            problems.fail(
                R56,
                format!(
                    "approval #{approval} for request #{} is about toolCallId \"{shown}\"; the request is about \"{asked}\".",
                    request.index
                ),
                &frames,
            );
        }
    }
    // The expected subject's sentence is written only for a card that contradicts it.
    if shown != effective.subject() {
        let expected = effective.expected_subject();
        let kind_source = match effective.kind_frame {
            Some(i) if i != request.index => format!(" (from #{i})"),
            Some(_) => " (from the request itself)".to_owned(),
            None => String::new(),
        };
        let message = format!(
            "approval #{approval} for request #{} (toolCallId {}) shows subject \"{}\". Expected \"{}\": {}{kind_source}.",
            request.index,
            tool_call_label(request.tool_call_id),
            shown.as_str(),
            expected.subject.as_str(),
            expected.reason
        );
        if effective.weakly_supports(shown) {
            problems.warn(R58, message, &frames);
        } else {
            problems.fail(R190, message, &frames);
        }
    }
    if let Some(tcid) = request.tool_call_id {
        if let Some((item, item_type)) = model.item_type_before(session_id, tcid, approval) {
            if item_type != shown.as_str() {
                frames.push(item);
                problems.fail(
                    R190,
                    format!(
                        "approval #{approval} shows subject \"{}\" but the timeline item for toolCallId \"{tcid}\" is \"{item_type}\" (#{item}). Expected the card and the item to agree.",
                        shown.as_str()
                    ),
                    &frames,
                );
            }
        }
    }
}

fn tool_call_label(id: Option<&str>) -> String {
    match id {
        Some(id) => format!("\"{id}\""),
        None => "(none)".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, assert_grade, buttons3, opts3};
    use serde_json::json;

    fn edit_case(shown: &str, item: Option<&str>) -> Case {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"call_1","title":"Editing files","kind":"edit",
            "status":"pending","content":[{"type":"diff","path":"/tmp/case/work/a","oldText":"x","newText":"y"}]}));
        if let Some(item) = item {
            c.item("call_1", item);
        }
        // codex-acp TS: a sparse request.
        c.permission(
            json!(0),
            json!({"toolCallId":"call_1","kind":"edit","status":"pending"}),
            opts3(),
        );
        c.approval(json!(0), "call_1", shown, buttons3());
        c.select(json!(0), "once");
        c.prompt_result("end_turn");
        c
    }

    #[test]
    fn edit_shown_as_file_change_passes() {
        let f = edit_case("file_change", Some("file_change")).grade(&SubjectKind);
        assert_eq!(f.grade, Grade::Pass, "{f:?}");
    }

    #[test]
    fn edit_shown_as_command_fails() {
        let f = edit_case("command", None).grade(&SubjectKind);
        assert_grade(
            &f,
            Grade::Fail,
            "shows subject \"command\". Expected \"file_change\": kind \"edit\"",
        );
    }

    #[test]
    fn card_disagreeing_with_item_fails() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        // qwen: the request is the first and only announcement; kind other, no evidence.
        c.item("call_9", "command");
        c.permission(
            json!(0),
            json!({"toolCallId":"call_9","title":"x","kind":"other"}),
            opts3(),
        );
        c.approval(json!(0), "call_9", "generic", buttons3());
        c.select(json!(0), "once");
        let f = c.grade(&SubjectKind);
        assert_grade(
            &f,
            Grade::Fail,
            "timeline item for toolCallId \"call_9\" is \"command\"",
        );
    }

    #[test]
    fn request_kind_other_does_not_override_announced_edit() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"write","kind":"edit"}),
        );
        c.permission(
            json!(0),
            json!({"toolCallId":"t","title":"/etc","kind":"other","locations":[{"path":"/etc/hosts"},{"path":"/etc"}]}),
            opts3(),
        );
        c.approval(json!(0), "t", "generic", buttons3());
        c.select(json!(0), "once");
        let f = c.grade(&SubjectKind);
        assert_grade(
            &f,
            Grade::Fail,
            "Expected \"file_change\": kind \"edit\" (from #",
        );
    }

    #[test]
    fn other_with_locations_shown_as_generic_warns_and_as_command_fails() {
        let run = |shown: &str| {
            let c = Case::new();
            c.handshake();
            c.prompt();
            // opencode external_directory as the only announcement.
            c.permission(
                json!(7),
                json!({"toolCallId":"toolu_01X","title":"/etc","kind":"other","status":"pending",
                    "locations":[{"path":"/etc/hosts"},{"path":"/etc"}],"rawInput":{"filepath":"/etc/hosts","parentDir":"/etc"}}),
                opts3(),
            );
            c.approval(json!(7), "toolu_01X", shown, buttons3());
            c.select(json!(7), "once");
            c.grade(&SubjectKind)
        };
        assert_eq!(run("file_change").grade, Grade::Pass);
        assert_grade(
            &run("generic"),
            Grade::Warn,
            "kind \"other\" and it has file locations",
        );
        assert_grade(&run("command"), Grade::Fail, "shows subject \"command\"");
    }

    #[test]
    fn unshown_request_fails_unless_policy_resolved_it() {
        let c = Case::asking_to_run();
        c.select(json!(0), "once");
        assert_grade(
            &c.grade(&SubjectKind),
            Grade::Fail,
            "never shown as an approval card yet answered it",
        );
        c.ev(json!({"type":"approval_resolved","sessionId":"ses_1","requestId":0,"outcome":"selected","optionId":"once","by":"policy"}));
        // Nothing was shown, so nothing was compared.
        assert_grade(
            &c.grade(&SubjectKind),
            Grade::NotApplicable,
            "no approval card was shown",
        );
    }

    #[test]
    fn unanswered_unshown_request_in_incomplete_run_is_left_to_the_run_end() {
        let mut c = Case::new();
        c.handshake();
        c.permission(
            json!(0),
            json!({"toolCallId":"c","kind":"execute"}),
            opts3(),
        );
        c.end = RunEnd::Incomplete {
            step: 3,
            reason: "no approval".into(),
        };
        assert_eq!(c.grade(&SubjectKind).grade, Grade::NotApplicable);
        c.end = RunEnd::Completed;
        assert_eq!(c.grade(&SubjectKind).grade, Grade::Fail);
    }

    #[test]
    fn no_permission_request_is_not_applicable() {
        let c = Case::new();
        c.handshake();
        assert_grade(
            &c.grade(&SubjectKind),
            Grade::NotApplicable,
            "no permission request",
        );
    }

    /// A card whose subject is no word of the vocabulary is no valid `approval` event (the
    /// harness ends a live run at such a line; a transcript recorded elsewhere may hold one):
    /// the request counts as never shown.
    #[test]
    fn a_card_with_an_unknown_subject_word_is_no_card() {
        let f = edit_case("edit", None).grade(&SubjectKind);
        assert_grade(&f, Grade::Fail, "was never shown as an approval card");
    }
}
