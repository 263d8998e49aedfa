//! `tool-call-status` — every tool call's row ends showing the status the agent last gave it
//! (R57: an update carries only the fields that change, so a status-only update changes the
//! status shown; R42, R50: a user cancel marks the calls still running `cancelled`, and the
//! agent's later updates still apply).
//!
//! Requirement: when the case ends, the latest `item` the client reported for each tool call
//! shows the agent's last `status` for it (every `tool_call`, `tool_call_update` and permission
//! request `toolCall` merged; none = `pending`), with two client-side statuses allowed:
//! * `cancelled` for a call still unfinished (`pending`/`in_progress`) when the user cancelled its
//!   session's turn, unless the agent reported a status for it afterwards (R50: then that one);
//! * `cancelled` or `failed` for a call the agent itself left unfinished: ACP says nothing of
//!   such a call, and a client may close it at the end of the turn.
//!
//! Catches: a completed or failed call shown as cancelled after a Stop (zed-industries/zed#30021:
//! "tool cancelled" status overapplied to failed tool calls), a row left `in_progress` because
//! the update that completed it carried only its status, a row that still shows the status of
//! a permission card the agent resolved.
//!
//! Grading: a status the agent never gave the call (and no cancel allows) is `fail` (R57); after
//! a cancel, a call left showing `pending`/`in_progress` is `warn` (R42, a SHOULD), and one kept
//! `cancelled` over a status the agent sent later is `warn` (R50). Only a run that completed is
//! judged: on any other the last row shown says nothing of the end. The control protocol's item
//! `status` is the client's own word: an item whose status is not one of ACP's
//! `pending | in_progress | completed | failed` or `cancelled` is not judged, and the check is
//! `not_applicable` when no item is.

use super::{Check, Finding, Problems};
use crate::record::{CaseRecord, RunEnd};
use crate::rules::{RuleId, id::*};
use crate::wire_model::{Side, WireModel};
use acp_vocab::method::Method;

pub struct ToolCallStatus;

/// The status words an item's status is judged in: ACP's `ToolCallStatus` and the client-side
/// `cancelled` (R42; v1's `ToolCallStatus` has no such value).
const STATUS_WORDS: &[&str] = &["pending", "in_progress", "completed", "failed", "cancelled"];

fn is_finished(status: &str) -> bool {
    matches!(status, "completed" | "failed")
}

impl Check for ToolCallStatus {
    fn id(&self) -> &'static str {
        "tool-call-status"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R57, R42, R50]
    }

    fn requirement(&self) -> &'static str {
        "Every tool call's row ends showing the status the agent last gave it (a status-only update included); after a Stop, calls still running show cancelled, and finished ones keep their status."
    }

    fn needs_control_plane(&self) -> bool {
        true
    }

    fn observable_with(&self) -> &'static [&'static str] {
        &["item"]
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        if case.end != RunEnd::Completed {
            return Finding::not_applicable(
                "the run did not complete: the rows shown when it stopped say nothing of how the tool calls ended",
            );
        }
        let cancels: Vec<(usize, &str)> = model
            .user_cancels()
            .iter()
            .filter_map(|c| Some((c.index, model.cancel_target(c)?)))
            .collect();
        let mut judged = 0;
        let mut problems = Problems::new();
        for (sid, tcid, first) in model.announced_tool_calls() {
            let items = model.item_events(sid, tcid);
            let Some(last) = items.last() else {
                continue; // no row: tool-call-row's finding
            };
            let Some(shown) = last.item().map(|item| item.status.as_str()) else {
                continue;
            };
            if !STATUS_WORDS.contains(&shown) {
                continue;
            }
            judged += 1;
            // Every status the agent set for the call, with the frame that set it.
            let statuses: Vec<(usize, &str)> = model
                .tool_frames(sid, tcid)
                .iter()
                .filter_map(|&i| Some((i, model.tool_fields(i)?.status?)))
                .collect();
            let status_before = |at: usize| {
                let n = statuses.partition_point(|&(i, _)| i < at);
                n.checked_sub(1).map_or("pending", |k| statuses[k].1)
            };
            let agent = status_before(usize::MAX);
            if shown == agent && is_finished(agent) {
                continue; // right whatever the user did
            }
            let said_at = statuses.last().map_or(first, |&(i, _)| i);
            // The client's session/cancel for the user's last Stop in the session at which the
            // client already showed the call, still unfinished. Only a row reported before the
            // Stop was sent to the client is known to have been there when it read the Stop: its
            // events and its wire frames travel on two pipes, and a Stop may overtake the agent's
            // frames in the client.
            let stop = cancels.iter().rev().find_map(|&(at, target)| {
                if target != sid || at < first {
                    return None;
                }
                let sent = client_cancel(model, sid, at)?;
                let shown_before = items.first().is_some_and(|e| e.index < at);
                (shown_before && !is_finished(status_before(sent))).then_some(sent)
            });
            let row = format!(
                "the row of tool call \"{tcid}\" (session \"{sid}\") shows \"{shown}\" when the case ends (#{})",
                last.index
            );
            match stop {
                // The agent said nothing of the call's status after the Stop: cancelled (R42).
                Some(at) if said_at < at => match shown {
                    "cancelled" => {}
                    _ if shown == agent || shown == "failed" => problems.warn(
                        R42,
                        format!(
                            "{row}: it was still {agent} when the client sent session/cancel (#{at}) for the user's Stop, and the agent never finished it. Expected the client to mark it \"cancelled\" then (R42)."
                        ),
                        &[at, last.index],
                    ),
                    _ => problems.fail(R57, never_given(&row, agent, said_at), &[said_at, last.index]),
                },
                // The agent reported a status after the Stop: that one (R50).
                Some(at) if shown == "cancelled" && shown != agent => problems.warn(
                    R50,
                    format!(
                        "{row}, the status the client gave it when it sent session/cancel (#{at}); the agent reported \"{agent}\" for it afterwards (#{said_at}). Expected the agent's later update to apply (R50)."
                    ),
                    &[at, said_at, last.index],
                ),
                _ if shown == agent => {}
                // A call the agent left unfinished, closed by the client.
                _ if !is_finished(agent) && matches!(shown, "cancelled" | "failed") => {}
                _ => {
                    let mut message = never_given(&row, agent, said_at);
                    if let Some(&(at, _)) = cancels
                        .iter()
                        .find(|&&(at, target)| target == sid && at > said_at)
                        .filter(|_| shown == "cancelled" && is_finished(agent))
                    {
                        message.push_str(&format!(
                            " The call had finished before the user's Stop (#{at}): a Stop marks only the calls still running (R42)."
                        ));
                    }
                    problems.fail(R57, message, &[said_at, last.index]);
                }
            }
        }
        if judged == 0 {
            return Finding::not_applicable(
                "no row to judge: the agent announced no tool call, or the client reported no row whose status is one of pending, in_progress, completed, failed, cancelled",
            );
        }
        problems.finish("")
    }
}

/// The client's `session/cancel` for session `sid` after the user's Stop at `at`.
fn client_cancel(model: &WireModel<'_>, sid: &str, at: usize) -> Option<usize> {
    model
        .session_msgs_from(sid, at)
        .find(|m| m.from == Side::Client && m.method() == Some(Method::SessionCancel.as_str()))
        .map(|m| m.index)
}

/// The finding for a row whose status the agent never gave the call last.
fn never_given(row: &str, agent: &str, said_at: usize) -> String {
    format!(
        "{row}, but the agent's last status for it is \"{agent}\" (#{said_at}). Expected the row to show \"{agent}\": an update carries only the fields that change, and its status replaces the one shown."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, assert_grade, assert_names_its_rule};
    use serde_json::json;

    fn row(c: &Case, status: &str) -> usize {
        c.ev(
            json!({"type":"item","sessionId":SID,"toolCallId":"t1","itemType":"file_change",
            "status":status,"title":"edit"}),
        )
    }

    fn started(c: &Case) {
        c.handshake();
        c.prompt();
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"edit","kind":"edit",
            "status":"pending"}),
        );
        row(c, "pending");
        c.update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"in_progress"}),
        );
        row(c, "in_progress");
    }

    /// The user's Stop and the client's session/cancel for it.
    fn cancel(c: &Case) -> usize {
        c.cmd(json!({"type":"cancel","seq":3,"session":"s1"}));
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}))
    }

    #[test]
    fn the_agents_last_status_passes_and_a_status_only_update_counts() {
        let c = Case::new();
        started(&c);
        c.update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}),
        );
        row(&c, "completed");
        c.prompt_result("end_turn");
        assert_eq!(c.grade(&ToolCallStatus).grade, Grade::Pass);
    }

    #[test]
    fn a_row_left_in_progress_after_the_agent_completed_it_fails() {
        let c = Case::new();
        started(&c);
        c.update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}),
        );
        c.prompt_result("end_turn");
        let finding = c.grade(&ToolCallStatus);
        assert_grade(
            &finding,
            Grade::Fail,
            "shows \"in_progress\" when the case ends (#",
        );
        assert!(
            finding
                .message
                .contains("the agent's last status for it is \"completed\""),
            "{}",
            finding.message
        );
        assert_names_its_rule(&ToolCallStatus, &finding);
    }

    #[test]
    fn a_stop_marks_running_calls_cancelled_but_not_finished_ones() {
        // Running at the Stop, never finished by the agent: cancelled is right.
        let c = Case::new();
        started(&c);
        cancel(&c);
        row(&c, "cancelled");
        c.prompt_result("cancelled");
        assert_eq!(c.grade(&ToolCallStatus).grade, Grade::Pass);

        // Left in_progress after the Stop: R42, a SHOULD.
        let c = Case::new();
        started(&c);
        cancel(&c);
        c.prompt_result("cancelled");
        assert_grade(
            &c.grade(&ToolCallStatus),
            Grade::Warn,
            "Expected the client to mark it \"cancelled\"",
        );

        // Failed before the Stop, shown cancelled (zed-industries/zed#30021).
        let c = Case::new();
        started(&c);
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"failed"}));
        row(&c, "failed");
        cancel(&c);
        row(&c, "cancelled");
        c.prompt_result("cancelled");
        assert_grade(
            &c.grade(&ToolCallStatus),
            Grade::Fail,
            "a Stop marks only the calls still running (R42)",
        );
    }

    /// The Stop overtook the agent's frames: the client first showed the call after the Stop was
    /// sent to it (here even before its session/cancel), so it may have had nothing to mark.
    #[test]
    fn a_call_first_shown_after_the_clients_cancel_is_not_held_to_r42() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"edit","kind":"edit",
            "status":"pending"}),
        );
        c.cmd(json!({"type":"cancel","seq":3,"session":"s1"}));
        row(&c, "pending");
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.prompt_result("cancelled");
        assert_eq!(c.grade(&ToolCallStatus).grade, Grade::Pass);
    }

    #[test]
    fn the_agents_status_after_a_stop_replaces_cancelled() {
        let c = Case::new();
        started(&c);
        cancel(&c);
        row(&c, "cancelled");
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"failed"}));
        c.prompt_result("cancelled");
        assert_grade(
            &c.grade(&ToolCallStatus),
            Grade::Warn,
            "the agent reported \"failed\" for it afterwards",
        );

        let c = Case::new();
        started(&c);
        cancel(&c);
        row(&c, "cancelled");
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"failed"}));
        row(&c, "failed");
        c.prompt_result("cancelled");
        assert_eq!(c.grade(&ToolCallStatus).grade, Grade::Pass);
    }

    #[test]
    fn a_call_the_agent_left_unfinished_may_be_closed_by_the_client() {
        for closed in ["failed", "cancelled", "in_progress"] {
            let c = Case::new();
            started(&c);
            row(&c, closed);
            c.prompt_result("end_turn");
            assert_eq!(c.grade(&ToolCallStatus).grade, Grade::Pass, "{closed}");
        }
        // But not shown completed.
        let c = Case::new();
        started(&c);
        row(&c, "completed");
        c.prompt_result("end_turn");
        assert_grade(
            &c.grade(&ToolCallStatus),
            Grade::Fail,
            "shows \"completed\"",
        );
    }

    #[test]
    fn the_permission_requests_status_merges_and_no_status_is_pending() {
        // Announced only by its permission request, without a status: pending.
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.permission(
            json!(0),
            json!({"toolCallId":"t1","title":"edit","kind":"edit"}),
            crate::checks::testkit::opts3(),
        );
        row(&c, "pending");
        c.select(json!(0), "allow");
        c.prompt_result("end_turn");
        assert_eq!(c.grade(&ToolCallStatus).grade, Grade::Pass);
    }

    #[test]
    fn words_of_the_clients_own_and_unfinished_runs_are_not_judged() {
        let c = Case::new();
        started(&c);
        row(&c, "Running…");
        c.update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}),
        );
        c.prompt_result("end_turn");
        assert_eq!(c.grade(&ToolCallStatus).grade, Grade::NotApplicable);

        let mut c = Case::new();
        started(&c);
        c.update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}),
        );
        c.end = RunEnd::Incomplete {
            step: 9,
            reason: "waited".into(),
        };
        assert_eq!(c.grade(&ToolCallStatus).grade, Grade::NotApplicable);
    }
}
