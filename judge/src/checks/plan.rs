//! `plan` — the agent's plan as the client shows it: each `plan` update is the complete plan, and
//! the client replaces what it showed with it (R74).
//!
//! Requirement: every plan the client shows for a session (`plan` event) is one the agent sent for
//! that session, entry for entry (text and status, and priority when the client shows one), never
//! a mix of an old plan and a new one; and when the case ends the client shows the agent's last
//! plan of every session, an empty one (the agent cleared its todos) as no plan.
//!
//! Catches: a plan appended to the one shown before (LodyAI/Lody#264, review: a revised plan added
//! next to the obsolete one; hardbeat920/monocode#10: each plan snapshot appended as a new plan
//! card instead of replacing the last), a plan left standing after the agent cleared it, one
//! session's plan shown in another.
//!
//! Reading: the client's events lag the wire, so a shown plan may be any the agent sent at or
//! before the event (a client may skip a plan that was replaced at once); only the final state is
//! held to the last one. ACP does not require a client to show the plan at all: the check applies
//! to a client whose adapter reports `plan` events (one in the case), and otherwise grades
//! `not_applicable`.

use crate::rules::{RuleId, id::*};
use std::collections::BTreeMap;

use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use crate::wire_model::{Side, WireModel};
use acp_vocab::control::Event;
use acp_vocab::plan::PlanEntryShown;
use acp_vocab::transcript::Direction;

pub struct Plan;

/// One session's plans: every one the agent sent, and the last one the client showed, each with
/// the transcript index that carried it.
#[derive(Debug, Default)]
struct SessionPlans {
    sent: Vec<(Vec<PlanEntryShown>, usize)>,
    shown: Option<(Vec<PlanEntryShown>, usize)>,
}

impl Check for Plan {
    fn id(&self) -> &'static str {
        "plan"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R74]
    }

    fn needs_control_plane(&self) -> bool {
        true
    }

    fn requirement(&self) -> &'static str {
        "Show the agent's plan as it last sent it: each plan update replaces the whole plan shown (never appended to the old one), an empty one clears it, and each session shows its own."
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        // Needs the control plane (`grade_case` grades it not_applicable without one).
        let shows_plans = model.entries.iter().any(|e| {
            e.direction == Direction::AdapterToHarness && matches!(e.event(), Some(Event::Plan(_)))
        });
        if !shows_plans {
            return Finding::not_applicable(
                "the client reports no plan (its adapter printed no plan event); ACP does not require a client to show the agent's plan",
            );
        }
        let mut sessions: BTreeMap<String, SessionPlans> = BTreeMap::new();
        let mut problems = Problems::new();
        for entry in model.entries {
            let index = entry.index;
            if entry.direction == Direction::AdapterToHarness {
                if let Some(Event::Plan(plan)) = entry.event() {
                    let state = sessions.entry(plan.session_id.clone()).or_default();
                    if !state
                        .sent
                        .iter()
                        .any(|(sent, _)| same_plan(&plan.entries, sent))
                    {
                        problems.fail(
                            R74,
                            never_sent(&plan.session_id, &plan.entries, state, index),
                            &[index],
                        );
                    }
                    state.shown = Some((plan.entries.clone(), index));
                }
                continue;
            }
            let Some(msg) = model.msg(index) else {
                continue;
            };
            if msg.from != Side::Agent || msg.update_variant() != Some("plan") {
                continue;
            }
            let update = msg.params().and_then(|p| p.get("update"));
            let Some(entries) =
                PlanEntryShown::all_from_wire(update.and_then(|u| u.get("entries")))
            else {
                continue;
            };
            let sid = msg.params_session_id().unwrap_or_default();
            sessions
                .entry(sid.to_owned())
                .or_default()
                .sent
                .push((entries, index));
        }
        for (sid, state) in &sessions {
            let Some((last, at)) = state.sent.last() else {
                continue;
            };
            let shown = state.shown.as_ref().map(|(entries, _)| entries);
            if !shown.is_some_and(|entries| same_plan(entries, last)) {
                problems.fail(
                    R74,
                    format!(
                        "The agent's last plan in session {sid} (#{at}) is {}, but the client shows {} when the case ends.",
                        describe(last),
                        shown.map_or("no plan of it".to_owned(), |e| describe(e))
                    ),
                    &[*at],
                );
            }
        }
        problems.finish("")
    }
}

/// True if `shown` is the plan `sent`: the same entries in the same order.
fn same_plan(shown: &[PlanEntryShown], sent: &[PlanEntryShown]) -> bool {
    shown.len() == sent.len() && shown.iter().zip(sent).all(|(s, e)| s.shows(e))
}

/// The finding for a shown plan that matches none the agent sent for that session.
fn never_sent(sid: &str, shown: &[PlanEntryShown], state: &SessionPlans, index: usize) -> String {
    let last = match state.sent.last() {
        Some((entries, at)) => format!(
            "The agent's last plan before it (#{at}) is {}",
            describe(entries)
        ),
        None => "The agent sent no plan for that session before it".to_owned(),
    };
    let appended = state.sent.len() >= 2 && {
        let all: Vec<&PlanEntryShown> = state.sent.iter().flat_map(|(e, _)| e).collect();
        shown.len() > state.sent.last().map_or(0, |(e, _)| e.len())
            && shown.iter().all(|s| all.iter().any(|e| s.shows(e)))
    };
    let hint = if appended {
        " (entries of earlier plans kept next to the new ones: each plan update replaces the whole plan)"
    } else {
        ""
    };
    format!(
        "The client shows a plan the agent never sent in session {sid} (#{index}): {}{hint}. {last}.",
        describe(shown)
    )
}

/// `2 entries: "Extract parseArgs" (in_progress), "Add tests" (pending)`; at most six named.
fn describe(entries: &[PlanEntryShown]) -> String {
    const NAMED: usize = 6;
    if entries.is_empty() {
        return "empty (no plan)".to_owned();
    }
    let mut named: Vec<String> = entries
        .iter()
        .take(NAMED)
        .map(|e| format!("{:?} ({})", e.content, e.status))
        .collect();
    if entries.len() > NAMED {
        named.push(format!("… {} more", entries.len() - NAMED));
    }
    let count = if entries.len() == 1 {
        "1 entry".to_owned()
    } else {
        format!("{} entries", entries.len())
    };
    format!("{count}: {}", named.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::Case;
    use serde_json::Value;

    fn plan_update(entries: &str) -> String {
        format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s1","update":{{"sessionUpdate":"plan","entries":{entries}}}}}}}"#
        )
    }

    fn shown(session: &str, entries: &str) -> String {
        format!(r#"{{"type":"plan","sessionId":"{session}","entries":{entries}}}"#)
    }

    const FIRST: &str = r#"[{"content":"Extract parseArgs","status":"in_progress","priority":"medium"},{"content":"Add tests","status":"pending","priority":"medium"}]"#;
    const SECOND: &str = r#"[{"content":"Add tests","status":"in_progress","priority":"medium"}]"#;

    fn case(events: &[(bool, String)]) -> Finding {
        let c = Case::new();
        for (from_agent, line) in events {
            let v: Value = serde_json::from_str(line).expect("test JSON");
            if *from_agent {
                c.a2c(v);
            } else {
                c.ev(v);
            }
        }
        Plan.evaluate(&c.record())
    }

    #[test]
    fn a_client_that_replaces_the_plan_passes() {
        let f = case(&[
            (true, plan_update(FIRST)),
            (false, shown("s1", FIRST)),
            (true, plan_update(SECOND)),
            (false, shown("s1", SECOND)),
            (true, plan_update("[]")),
            (false, shown("s1", "[]")),
        ]);
        assert_eq!(f.grade, Grade::Pass, "{}", f.message);
    }

    #[test]
    fn a_plan_appended_to_the_old_one_fails() {
        let appended = r#"[{"content":"Extract parseArgs","status":"in_progress"},{"content":"Add tests","status":"pending"},{"content":"Add tests","status":"in_progress"}]"#;
        let f = case(&[
            (true, plan_update(FIRST)),
            (false, shown("s1", FIRST)),
            (true, plan_update(SECOND)),
            (false, shown("s1", appended)),
        ]);
        assert_eq!(f.grade, Grade::Fail, "{}", f.message);
        assert!(
            f.message.contains("a plan the agent never sent"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("entries of earlier plans kept"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("but the client shows 3 entries"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_cleared_plan_left_standing_fails_at_the_end() {
        let f = case(&[
            (true, plan_update(FIRST)),
            (false, shown("s1", FIRST)),
            (true, plan_update("[]")),
        ]);
        assert_eq!(f.grade, Grade::Fail, "{}", f.message);
        assert!(
            f.message
                .contains("is empty (no plan), but the client shows 2 entries"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_plan_shown_in_another_session_fails() {
        let f = case(&[(true, plan_update(FIRST)), (false, shown("s2", FIRST))]);
        assert_eq!(f.grade, Grade::Fail, "{}", f.message);
        assert!(
            f.message.contains("never sent in session s2"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("shows no plan of it when the case ends"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_shown_status_or_priority_that_differs_fails() {
        let wrong = r#"[{"content":"Extract parseArgs","status":"completed"},{"content":"Add tests","status":"pending","priority":"high"}]"#;
        let f = case(&[(true, plan_update(FIRST)), (false, shown("s1", wrong))]);
        assert_eq!(f.grade, Grade::Fail, "{}", f.message);
    }

    #[test]
    fn a_plan_replaced_before_the_client_showed_it_may_be_skipped() {
        let f = case(&[
            (true, plan_update(FIRST)),
            (true, plan_update(SECOND)),
            (false, shown("s1", FIRST)),
            (false, shown("s1", SECOND)),
        ]);
        assert_eq!(f.grade, Grade::Pass, "{}", f.message);
    }

    #[test]
    fn a_client_that_reports_no_plan_is_not_judged() {
        let f = case(&[(true, plan_update(FIRST))]);
        assert_eq!(f.grade, Grade::NotApplicable, "{}", f.message);
    }
}
