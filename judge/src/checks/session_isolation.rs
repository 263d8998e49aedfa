//! `session-isolation` — two sessions of one client never see each other's approvals, tool calls
//! or cancels (docs/architecture.md §5; R56, R43, R44).
//!
//! Requirement: when a client has two or more sessions, every approval card (and its resolution)
//! is shown in the session whose agent asked; a timeline item for a tool call is shown only in a
//! session where the agent announced that `toolCallId`, and its status and title follow that
//! session's own updates for that id (a change that shows what another session's frame for the
//! same id said, and not what its own session said, fails citing both frames); and a user cancel of one session sends
//! `session/cancel` for that session only and answers `cancelled` only that session's pending
//! permission requests.
//!
//! Why: a `toolCallId` is unique only *within a session* (R56) — codex-acp names every
//! unannounced MCP approval `elicitation-<server>` in every session — so a client must key tool
//! calls by (sessionId, toolCallId) and approvals by request, never by one global slot
//! (Nano-Collective/nanocoder#1080: "cancelling B cancels A's pending approval").
//!
//! Reading:
//! * A request of session X answered `cancelled`, or a `session/cancel` naming X, is blamed on
//!   another session's Stop only when the user cancelled another session before it and had not
//!   cancelled X (nor had the agent withdrawn the request with `$/cancel_request`).
//! * An item for a toolCallId that no session announced is not this check's business.
//! * Not applicable when the case has fewer than two sessions.

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use serde_json::Value;

use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use acp_vocab::control::Event;

use crate::wire_model::{PermissionAnswer, PermissionRequest, Side, WireModel, id_key};

pub struct SessionIsolation;

impl Check for SessionIsolation {
    fn id(&self) -> &'static str {
        "session-isolation"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R43, R44, R56]
    }

    fn requirement(&self) -> &'static str {
        "Each session's approvals, tool calls and cancels stay in that session, even when two sessions use the same toolCallId."
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        if model.session_ids.len() < 2 {
            return Finding::not_applicable("scenario has fewer than two sessions");
        }
        let mut problems = Problems::new();
        check_cards(model, &mut problems);
        check_items(model, &mut problems);
        check_item_state(model, &mut problems);
        check_cancels(model, &mut problems);
        problems.finish("")
    }
}

/// The permission request a card or resolution for `request_id` shown at `at` is about: one of
/// `shown_in` if there is such a request, else the latest one of another session before `at`.
fn request_for_card<'m, 'a>(
    model: &'m WireModel<'a>,
    request_id: &Value,
    shown_in: &str,
    at: usize,
) -> Result<(), &'m PermissionRequest<'a>> {
    let key = id_key(request_id);
    let candidates: Vec<&PermissionRequest<'a>> = model
        .permissions
        .iter()
        .filter(|p| p.index < at && id_key(p.id) == key)
        .collect();
    if candidates.is_empty() || candidates.iter().any(|p| p.session_id == Some(shown_in)) {
        return Ok(());
    }
    Err(candidates[candidates.len() - 1])
}

/// Approval cards and their resolutions appear in the session that asked.
fn check_cards(model: &WireModel<'_>, problems: &mut Problems) {
    for c in &model.controls {
        let (what, session_id, request_id) = match c.event() {
            Some(Event::Approval(card)) => ("approval", card.session_id.as_str(), &card.request_id),
            Some(Event::ApprovalResolved(resolved)) => (
                "approval_resolved",
                resolved.session_id.as_str(),
                &resolved.request_id,
            ),
            _ => continue,
        };
        if let Err(request) = request_for_card(model, request_id, session_id, c.index) {
            problems.fail(
                R56,
                format!(
                    "{what} #{} for request #{} (toolCallId {}) is shown in session \"{session_id}\", but session \"{}\" asked. Expected it in session \"{}\".",
                    c.index,
                    request.index,
                    request
                        .tool_call_id
                        .map_or("(none)".to_owned(), |t| format!("\"{t}\"")),
                    request.session_id.unwrap_or("?"),
                    request.session_id.unwrap_or("?"),
                ),
                &[request.index, c.index],
            );
        }
    }
}

/// A timeline item is shown only in a session where its tool call was announced.
fn check_items(model: &WireModel<'_>, problems: &mut Problems) {
    for ((session_id, tool_call_id), items) in model.items() {
        let Some(&(first, _)) = items.first() else {
            continue;
        };
        let announced_here = model
            .tool_frames(session_id, tool_call_id)
            .first()
            .is_some_and(|&f| f < first);
        if announced_here {
            continue;
        }
        let elsewhere = model
            .session_ids
            .iter()
            .filter(|&&other| other != session_id)
            .find_map(|&other| {
                let f = *model.tool_frames(other, tool_call_id).first()?;
                (f < first).then_some((other, f))
            });
        if let Some((other, frame)) = elsewhere {
            problems.fail(
                R56,
                format!(
                    "the timeline item #{first} in session \"{session_id}\" shows tool call \"{tool_call_id}\", which the agent announced only in session \"{other}\" (#{frame}). Expected tool calls keyed by (sessionId, toolCallId) (R56)."
                ),
                &[frame, first],
            );
        }
    }
}

/// An item's status and title follow its own session's frames for that id: a change that shows
/// what another session's frame for the same `toolCallId` said (and not what its own session
/// said) was caused by that frame (pingdotgg/t3code#304: tool calls keyed by id alone).
fn check_item_state<'m>(model: &WireModel<'m>, problems: &mut Problems) {
    for ((session_id, tool_call_id), _) in model.items() {
        let others: Vec<&str> = model
            .session_ids
            .iter()
            .copied()
            .filter(|&o| o != session_id && !model.tool_frames(o, tool_call_id).is_empty())
            .collect();
        if others.is_empty() {
            continue;
        }
        let mut previous: Option<(usize, Option<&str>, Option<&str>)> = None;
        for event in model.item_events(session_id, tool_call_id) {
            let Some(item) = event.item() else {
                continue;
            };
            // An empty field shows nothing to compare (transcripts recorded elsewhere may leave
            // it out; the control schema requires both).
            let shown_field = |s: &'m str| (!s.is_empty()).then_some(s);
            let (status, title) = (shown_field(&item.status), shown_field(&item.title));
            let own = model.described_before(session_id, tool_call_id, event.index);
            let fields = [
                ("status", status, previous.and_then(|p| p.1), own.status),
                ("title", title, previous.and_then(|p| p.2), own.title),
            ];
            for (field, shown, before, own_value) in fields {
                let (Some(shown), Some(own_value)) = (shown, own_value) else {
                    continue;
                };
                // Events lag the wire (the client reports after it processed a frame, while
                // later frames are already recorded): a value any of the session's own frames
                // said before the event is explained by that frame.
                let own_said = model
                    .tool_frames(session_id, tool_call_id)
                    .iter()
                    .take_while(|&&f| f < event.index)
                    .filter_map(|&f| model.tool_fields(f))
                    .any(|fields| fields.string(field) == Some(shown));
                if previous.is_some() && before == Some(shown) || shown == own_value || own_said {
                    continue;
                }
                // The other session's frame may be anywhere before the event: a client reports
                // after it processed everything already on the wire, so the frame that leaked is
                // often older than this row's previous event. The checks above already explain
                // every value the row's own session said.
                let culprit = others.iter().find_map(|&other| {
                    let before: Vec<usize> = model
                        .tool_frames(other, tool_call_id)
                        .iter()
                        .copied()
                        .filter(|&f| f < event.index)
                        .collect();
                    let said = before.iter().rev().copied().find(|&f| {
                        model.tool_fields(f).and_then(|fields| fields.string(field)) == Some(shown)
                    });
                    let theirs = model.described_before(other, tool_call_id, event.index);
                    let value = if field == "status" {
                        theirs.status
                    } else {
                        theirs.title
                    };
                    said.or_else(|| {
                        (value == Some(shown))
                            .then(|| before.last().copied())
                            .flatten()
                    })
                    .map(|frame| (other, frame))
                });
                if let Some((other, frame)) = culprit {
                    let mut frames = vec![frame, event.index];
                    frames.extend(own.last_frame);
                    problems.fail(
                        R56,
                        format!(
                            "the timeline item #{} for tool call \"{tool_call_id}\" in session \"{session_id}\" shows {field} \"{shown}\", which session \"{other}\" sent for its own tool call of that id (#{frame}); session \"{session_id}\" said \"{own_value}\"{}. Expected each session's row to follow its own updates: tool calls keyed by (sessionId, toolCallId) (R56).",
                            event.index,
                            own.last_frame.map_or(String::new(), |f| format!(" (#{f})"))
                        ),
                        &frames,
                    );
                }
            }
            previous = Some((event.index, status, title));
        }
    }
}

/// A user cancel, resolved to its session.
struct Cancel<'a> {
    index: usize,
    session_id: &'a str,
}

/// A cancel of one session never cancels another.
fn check_cancels(model: &WireModel<'_>, problems: &mut Problems) {
    let cancels: Vec<Cancel<'_>> = model
        .user_cancels()
        .into_iter()
        .filter_map(|c| {
            Some(Cancel {
                index: c.index,
                session_id: c.session_id?,
            })
        })
        .collect();
    if cancels.is_empty() {
        return;
    }
    // The cancel of another session to blame for something that happened to `session_id` at
    // `at`, if the user never cancelled `session_id` before `at`.
    let blame = |session_id: &str, at: usize| -> Option<&Cancel<'_>> {
        let before: Vec<&Cancel<'_>> = cancels.iter().filter(|c| c.index < at).collect();
        if before.iter().any(|c| c.session_id == session_id) {
            return None;
        }
        before
            .into_iter()
            .rev()
            .find(|c| c.session_id != session_id)
    };
    for msg in model.msgs.iter().filter(|m| m.from == Side::Client) {
        if !msg.is_notification_for(Method::SessionCancel) {
            continue;
        }
        let Some(target) = msg.params_session_id() else {
            continue;
        };
        if let Some(cancel) = blame(target, msg.index) {
            problems.fail(
                R43,
                format!(
                    "client sent session/cancel #{} for session \"{target}\", but the user cancelled only session \"{}\" (#{}).",
                    msg.index, cancel.session_id, cancel.index
                ),
                &[cancel.index, msg.index],
            );
        }
    }
    for request in &model.permissions {
        let Some(session_id) = request.session_id else {
            continue;
        };
        for &answer in &request.answers {
            if model.permission_answer(answer) != PermissionAnswer::Cancelled
                || withdrawn(model, request, answer)
            {
                continue;
            }
            if let Some(cancel) = blame(session_id, answer) {
                problems.fail(
                    R44,
                    format!(
                        "request #{} of session \"{session_id}\" was answered cancelled (#{answer}) after the user cancelled session \"{}\" (#{}); nobody cancelled session \"{session_id}\". Expected it to stay pending for its own session's user (R43 applies to the cancelled session only).",
                        request.index, cancel.session_id, cancel.index
                    ),
                    &[cancel.index, request.index, answer],
                );
            }
        }
    }
}

/// True if the agent withdrew `request` with `$/cancel_request` before the answer at `answer`.
fn withdrawn(model: &WireModel<'_>, request: &PermissionRequest<'_>, answer: usize) -> bool {
    model.msgs.iter().any(|m| {
        m.from == Side::Agent
            && m.conn == request.conn
            && m.index < answer
            && m.is_notification_for(Method::CancelRequest)
            && m.params()
                .and_then(|p| p.get("requestId"))
                .is_some_and(|id| id_key(id) == id_key(request.id))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, SID, WS, assert_grade, buttons3, opts3};
    use serde_json::json;

    const SID2: &str = "ses_2";

    /// Two sessions, `ses_1` (handle s1) and `ses_2` (handle s2), both prompting; each gets a
    /// permission request for the same toolCallId `t` (ids 10 and 11).
    fn two_sessions() -> Case {
        let c = Case::new();
        c.handshake();
        c.cmd(json!({"type":"new_session","seq":3,"session":"s2","cwd":WS}));
        c.c2a(json!({"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        c.a2c(json!({"jsonrpc":"2.0","id":3,"result":{"sessionId":SID2}}));
        c.ev(json!({"type":"session_opened","session":"s2","sessionId":SID2}));
        c.prompt();
        c.c2a(
            json!({"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":SID2,
            "prompt":[{"type":"text","text":"go"}]}}),
        );
        c.permission(
            json!(10),
            json!({"toolCallId":"t","kind":"execute"}),
            opts3(),
        );
        c.a2c(json!({"jsonrpc":"2.0","id":11,"method":"session/request_permission",
            "params":{"sessionId":SID2,"toolCall":{"toolCallId":"t","kind":"execute"},"options":opts3()}}));
        c
    }

    fn card(c: &Case, session: &str, id: u64) -> usize {
        c.ev(
            json!({"type":"approval","sessionId":session,"requestId":id,"toolCallId":"t",
            "subject":"command","options":buttons3()}),
        )
    }

    #[test]
    fn one_session_is_not_applicable() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        assert_grade(
            &c.grade(&SessionIsolation),
            Grade::NotApplicable,
            "fewer than two sessions",
        );
    }

    #[test]
    fn separate_sessions_pass() {
        let c = two_sessions();
        card(&c, SID, 10);
        card(&c, SID2, 11);
        c.cmd(json!({"type":"cancel","seq":5,"session":"s2"}));
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID2}}));
        c.cancelled(json!(11));
        c.select(json!(10), "once");
        assert_eq!(c.grade(&SessionIsolation), Finding::pass());
    }

    #[test]
    fn a_card_in_the_wrong_session_fails() {
        let c = two_sessions();
        let wrong = card(&c, SID2, 10);
        card(&c, SID2, 11);
        let f = c.grade(&SessionIsolation);
        assert_grade(&f, Grade::Fail, &format!("approval #{wrong} for request"));
        assert!(
            f.message
                .contains("is shown in session \"ses_2\", but session \"ses_1\" asked")
        );
    }

    #[test]
    fn a_cancel_that_answers_the_other_session_fails() {
        let c = two_sessions();
        card(&c, SID, 10);
        card(&c, SID2, 11);
        c.cmd(json!({"type":"cancel","seq":5,"session":"s2"}));
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID2}}));
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(11));
        c.cancelled(json!(10));
        let f = c.grade(&SessionIsolation);
        assert_grade(&f, Grade::Fail, "session/cancel");
        assert!(
            f.message
                .contains("of session \"ses_1\" was answered cancelled"),
            "{}",
            f.message
        );
    }

    #[test]
    fn a_withdrawn_request_may_be_answered_cancelled() {
        let c = two_sessions();
        c.cmd(json!({"type":"cancel","seq":5,"session":"s2"}));
        c.a2c(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":10}}));
        c.cancelled(json!(10));
        assert_eq!(c.grade(&SessionIsolation).grade, Grade::Pass);
    }

    #[test]
    fn an_item_for_a_tool_call_of_the_other_session_fails() {
        let c = Case::new();
        c.handshake();
        c.cmd(json!({"type":"new_session","seq":3,"session":"s2","cwd":WS}));
        c.c2a(json!({"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        c.a2c(json!({"jsonrpc":"2.0","id":3,"result":{"sessionId":SID2}}));
        let announced =
            c.update(json!({"sessionUpdate":"tool_call","toolCallId":"only-in-1","title":"x"}));
        let item = c.ev(
            json!({"type":"item","sessionId":SID2,"toolCallId":"only-in-1",
            "itemType":"generic","status":"pending","title":"x"}),
        );
        let f = c.grade(&SessionIsolation);
        assert_grade(
            &f,
            Grade::Fail,
            &format!("announced only in session \"{SID}\" (#{announced})"),
        );
        assert!(f.frames.contains(&item));
    }

    /// Both sessions announce tool call "t" and update it differently.
    fn same_id_two_states(c: &Case) -> (usize, usize) {
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"npm test","kind":"execute","status":"pending"}));
        c.ev(json!({"type":"item","sessionId":SID,"toolCallId":"t","itemType":"command","status":"pending","title":"npm test"}));
        c.a2c(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":SID2,"update":
            {"sessionUpdate":"tool_call","toolCallId":"t","title":"npm test","kind":"execute","status":"pending"}}}));
        c.ev(json!({"type":"item","sessionId":SID2,"toolCallId":"t","itemType":"command","status":"pending","title":"npm test"}));
        let b = c.a2c(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":SID2,"update":
            {"sessionUpdate":"tool_call_update","toolCallId":"t","status":"failed","title":"aborted"}}}));
        (b, 0)
    }

    #[test]
    fn each_row_following_its_own_session_passes() {
        let c = two_sessions();
        same_id_two_states(&c);
        c.ev(json!({"type":"item","sessionId":SID2,"toolCallId":"t","itemType":"command","status":"failed","title":"aborted"}));
        c.update(json!({"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed"}));
        c.ev(json!({"type":"item","sessionId":SID,"toolCallId":"t","itemType":"command","status":"completed","title":"npm test"}));
        assert_eq!(c.grade(&SessionIsolation), Finding::pass());
    }

    #[test]
    fn a_late_event_showing_an_earlier_own_value_passes() {
        // The client reports its row for session 1's own tool_call after the wire already holds
        // session 2's tool_call (same title) and session 1's retitling request: the title shown
        // is session 1's own earlier one, not session 2's.
        let c = two_sessions();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"u","title":"Shell","kind":"execute","status":"pending"}));
        c.a2c(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":SID2,"update":
            {"sessionUpdate":"tool_call","toolCallId":"u","title":"Shell","kind":"execute","status":"pending"}}}));
        c.permission(
            json!(12),
            json!({"toolCallId":"u","title":"npm test"}),
            opts3(),
        );
        c.ev(json!({"type":"item","sessionId":SID,"toolCallId":"u","itemType":"command","status":"pending","title":"Shell"}));
        assert_eq!(c.grade(&SessionIsolation).grade, Grade::Pass);
    }

    #[test]
    fn a_row_changed_by_the_other_sessions_update_fails_citing_both() {
        let c = two_sessions();
        let (b, _) = same_id_two_states(&c);
        // Keyed by toolCallId alone: session 2's update lands on session 1's row.
        let wrong = c.ev(json!({"type":"item","sessionId":SID,"toolCallId":"t","itemType":"command","status":"failed","title":"aborted"}));
        let f = c.grade(&SessionIsolation);
        assert_grade(
            &f,
            Grade::Fail,
            &format!("shows status \"failed\", which session \"{SID2}\" sent"),
        );
        assert!(f.message.contains("shows title \"aborted\""), "{f:?}");
        assert!(f.frames.contains(&b) && f.frames.contains(&wrong), "{f:?}");
    }

    #[test]
    fn a_leak_from_a_frame_older_than_the_rows_previous_event_fails() {
        // Everything is on the wire before the client reports anything (the common case: events
        // lag the wire). Session 2's retitle precedes session 1's first row event, and session
        // 1's second event shows session 2's title: found although the frame is "old".
        let c = two_sessions();
        c.update(json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"npm test","kind":"execute","status":"pending"}));
        let b = c.a2c(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":SID2,"update":
            {"sessionUpdate":"tool_call","toolCallId":"t","title":"npm run lint","kind":"execute","status":"pending"}}}));
        c.update(
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t","status":"in_progress"}),
        );
        c.ev(json!({"type":"item","sessionId":SID,"toolCallId":"t","itemType":"command","status":"pending","title":"npm test"}));
        let wrong = c.ev(json!({"type":"item","sessionId":SID,"toolCallId":"t","itemType":"command","status":"in_progress","title":"npm run lint"}));
        let f = c.grade(&SessionIsolation);
        assert_grade(
            &f,
            Grade::Fail,
            &format!("shows title \"npm run lint\", which session \"{SID2}\" sent"),
        );
        assert!(f.frames.contains(&b) && f.frames.contains(&wrong), "{f:?}");
    }
}
