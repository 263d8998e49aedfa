//! `tool-call-title` — every tool call's row ends showing the title the agent last gave it in
//! its own session (R57: an update carries only the fields that change, so a `title` in a
//! `tool_call_update` or a permission request's `toolCall` replaces the title shown).
//!
//! Requirement: when the case ends, the latest `item` the client reported for each tool call
//! does not show a title the agent replaced: claude-agent-acp announces a command as
//! "Terminal", then retitles it with the backticked command, then with its description; codex-acp
//! and opencode retitle a call when its input is known. A row that keeps an earlier title hides
//! what is being run (zed-industries/zed#49456: ACP terminal titles were not always updated to
//! their latest value, so the user approved a command they could not see).
//!
//! What is judged: a client may show a title in its own words (a prefix, an icon, the id for a
//! call announced without one), and `session-isolation` judges a title taken from another
//! session. So a row is judged only when its last title is one the agent gave that call in that
//! session; it fails when that title is not the agent's last one. A blank title is no title (a
//! client may keep the one it showed). Only a run that completed is judged: on any other the
//! last row shown says nothing of the end, and the row at the end is the client's final state
//! whichever pipe the harness read first.

use super::{Check, Finding, Problems};
use crate::record::{CaseRecord, RunEnd};
use crate::rules::{RuleId, id::*};
use crate::wire_model::WireModel;

pub struct ToolCallTitle;

impl Check for ToolCallTitle {
    fn id(&self) -> &'static str {
        "tool-call-title"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R57]
    }

    fn requirement(&self) -> &'static str {
        "Every tool call's row ends showing the title the agent last gave it in its session: a title in an update replaces the one shown."
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
                "the run did not complete: the rows shown when it stopped say nothing of the titles they end with",
            );
        }
        let mut judged = 0;
        let mut problems = Problems::new();
        for (sid, tcid, _) in model.announced_tool_calls() {
            let items = model.item_events(sid, tcid);
            let Some((last, shown)) = items
                .last()
                .and_then(|e| Some((e.index, e.item()?.title.as_str())))
            else {
                continue; // no row: tool-call-row's finding
            };
            // Every non-blank title the agent gave the call in this session, in order.
            let titles: Vec<(usize, &str)> = model
                .tool_frames(sid, tcid)
                .iter()
                .filter_map(|&i| Some((i, model.tool_fields(i)?.title?)))
                .filter(|(_, t)| !t.trim().is_empty())
                .collect();
            let Some(&(said_at, agent)) = titles.last() else {
                continue; // the agent gave no title: the client's own words
            };
            let Some(&(earlier_at, _)) = titles.iter().find(|(_, t)| *t == shown) else {
                continue; // the client's own words, or another session's (session-isolation)
            };
            judged += 1;
            if shown == agent {
                continue;
            }
            problems.fail(
                R57,
                format!(
                    "the row of tool call \"{tcid}\" (session \"{sid}\") ends showing the title \"{shown}\" (#{last}), which the agent replaced: it gave that title at #{earlier_at} and retitled the call \"{agent}\" at #{said_at}. Expected the row to show \"{agent}\": a title in a tool_call_update (or a permission request's toolCall) replaces the one shown."
                ),
                &[earlier_at, said_at, last],
            );
        }
        if judged == 0 {
            return Finding::not_applicable(
                "no row to judge: the agent gave no tool call a title, or the client's rows show titles in its own words",
            );
        }
        problems.finish("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, assert_grade};
    use serde_json::json;

    fn row(c: &Case, title: &str) -> usize {
        c.ev(
            json!({"type":"item","sessionId":SID,"toolCallId":"t1","itemType":"command",
            "status":"pending","title":title}),
        )
    }

    /// claude-agent-acp's shape: "Terminal", then the backticked command, then its description.
    fn retitled(c: &Case, rows: &[&str]) {
        c.handshake();
        c.prompt();
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Terminal","kind":"execute",
            "status":"pending"}),
        );
        c.update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"`npm run build`"}),
        );
        c.update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Run the build script",
            "status":"completed"}),
        );
        for title in rows {
            row(c, title);
        }
        c.prompt_result("end_turn");
    }

    #[test]
    fn the_agents_last_title_passes() {
        let c = Case::new();
        retitled(&c, &["Terminal", "`npm run build`", "Run the build script"]);
        assert_eq!(c.grade(&ToolCallTitle).grade, Grade::Pass);
    }

    #[test]
    fn a_row_that_keeps_the_first_title_fails() {
        let c = Case::new();
        retitled(&c, &["Terminal"]);
        let f = c.grade(&ToolCallTitle);
        assert_grade(&f, Grade::Fail, "ends showing the title \"Terminal\" (#");
        assert!(
            f.message
                .contains("retitled the call \"Run the build script\""),
            "{}",
            f.message
        );
        // Stopped one title short.
        let c = Case::new();
        retitled(&c, &["Terminal", "`npm run build`"]);
        assert_grade(
            &c.grade(&ToolCallTitle),
            Grade::Fail,
            "title \"`npm run build`\"",
        );
    }

    #[test]
    fn a_permission_requests_title_replaces_the_title_too() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Shell","kind":"execute"}),
        );
        row(&c, "Shell");
        c.permission(
            json!(0),
            json!({"toolCallId":"t1","title":"rm -rf build"}),
            crate::checks::testkit::opts3(),
        );
        c.select(json!(0), "once");
        c.prompt_result("end_turn");
        assert_grade(&c.grade(&ToolCallTitle), Grade::Fail, "\"Shell\"");
    }

    #[test]
    fn titles_in_the_clients_own_words_and_blank_titles_are_not_judged() {
        // Its own words throughout: nothing to judge.
        let c = Case::new();
        retitled(&c, &["$ npm run build"]);
        assert_eq!(c.grade(&ToolCallTitle).grade, Grade::NotApplicable);
        // A blank retitle keeps the title shown.
        let c = Case::new();
        c.handshake();
        c.prompt();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls -la","kind":"execute"}));
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"  "}));
        row(&c, "ls -la");
        c.prompt_result("end_turn");
        assert_eq!(c.grade(&ToolCallTitle).grade, Grade::Pass);
    }

    #[test]
    fn an_unfinished_run_is_not_judged() {
        let mut c = Case::new();
        retitled(&c, &["Terminal"]);
        c.end = RunEnd::Incomplete {
            step: 3,
            reason: "waited".into(),
        };
        assert_eq!(c.grade(&ToolCallTitle).grade, Grade::NotApplicable);
    }
}
