//! `session-load` — a reopened session shows the history the agent replayed, once, as it was
//! (R140–R143).
//!
//! Requirement: on `session/load` the agent replays the conversation as `session/update`s and
//! answers when it is done (ACP session-setup, "Loading Sessions"). Every replayed update must
//! reach the reopened session, also those that arrive before the answer (R140: a client that
//! registers the session only when the load resolves drops them, zed-industries/zed#54431); each
//! entry is shown once (R141: mrmans0n/alas#406 showed its own transcript plus the replay); the
//! timeline is the replayed conversation, in order, each message in its speaker's voice with its
//! text (R142); a load the agent refuses is reported to the user and the session is not shown as
//! loaded (R143).
//!
//! Reading: the replay of a `session/load` is every agent `session/update` of the loaded
//! `sessionId` between the request and its answer. It is folded into entries the way CONTROL.md
//! defines `history` (chunks of one kind and `messageId` join into one message, an empty chunk
//! starts nothing, one entry per `toolCallId`; other update variants are not entries) and
//! compared with the `history` of the client's `session_loaded` event for that session. Whether
//! the agent advertised `loadSession` at all is the `initialize` check's (R25, R28); an agent
//! version that advertises no `loadSession` leaves nothing here to grade.

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use std::borrow::Cow;

use acp_vocab::control::{Command, Event, HistoryEntry, HistoryKind, SessionLoaded};
use acp_vocab::transcript::Direction;
use serde_json::Value;

use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use crate::wire_model::{Side, WireModel};

pub struct SessionLoad;

impl Check for SessionLoad {
    fn id(&self) -> &'static str {
        "session-load"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R140, R141, R142, R143]
    }

    fn requirement(&self) -> &'static str {
        "A session reopened with session/load shows every update the agent replayed before its answer, once, in order and in its speaker's voice; a refused load is reported, not shown as loaded."
    }

    fn needs_control_plane(&self) -> bool {
        true
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let loads: Vec<_> = model
            .msgs
            .iter()
            .filter(|m| m.from == Side::Client && m.is_request_for(Method::SessionLoad))
            .collect();
        if loads.is_empty() {
            return Finding::not_applicable(match load_commands(case).first() {
                Some((i, _)) => format!(
                    "the user asked to reopen a session (load_session #{i}) but the client sent no session/load (the agent {}advertised loadSession)",
                    if advertised_load(model) {
                        ""
                    } else {
                        "had not "
                    }
                ),
                None => "the scenario reopens no session with session/load".into(),
            });
        }
        let events = control_events(case);
        let mut problems = Problems::new();
        for load in loads {
            let Some(session_id) = load.params_session_id() else {
                continue;
            };
            let answer = model
                .answers_to(load.index)
                .first()
                .and_then(|&i| model.msg(i));
            let end = answer.map_or(usize::MAX, |a| a.index);
            // A replayed tool call update may be read from its text: its tree is parsed here.
            let replay: Vec<(usize, Cow<'_, Value>)> = model
                .msgs
                .iter()
                .filter(|m| m.index > load.index && m.index < end)
                .filter(|m| m.from == Side::Agent && m.is_notification_for(Method::SessionUpdate))
                .filter(|m| m.params_session_id() == Some(session_id))
                .filter_map(|m| Some((m.index, m.tool_fields()?.tree())))
                .collect();
            let Some(answer) = answer else {
                continue; // never answered: the run did not finish, nothing to compare
            };
            let shown = events.iter().find_map(|(i, e)| match e {
                Event::SessionLoaded(l) if *i > load.index && l.session_id == session_id => {
                    Some((*i, l))
                }
                _ => None,
            });
            if answer.is_error_response() {
                refused(
                    &mut problems,
                    &events,
                    load.index,
                    answer.index,
                    session_id,
                    shown,
                );
                continue;
            }
            let Some((shown_at, loaded)) = shown else {
                problems.fail(
                    R140,
                    format!(
                        "session/load #{} of {session_id:?} was answered at #{} with {} replayed entries, but the client never showed the session loaded (no session_loaded event).",
                        load.index,
                        answer.index,
                        fold(replay.iter().map(|(_, u)| u.as_ref())).len()
                    ),
                    &[load.index, answer.index],
                );
                continue;
            };
            let mut frames = vec![load.index];
            frames.extend(replay.iter().map(|(i, _)| *i).take(8));
            frames.extend([answer.index, shown_at]);
            compare(
                &mut problems,
                &fold(replay.iter().map(|(_, u)| u.as_ref())),
                loaded,
                shown_at,
                &frames,
            );
        }
        problems.finish("")
    }
}

/// R143: the refused load is the user's to see, and not shown as a loaded session.
fn refused(
    problems: &mut Problems,
    events: &[(usize, &Event)],
    load: usize,
    answer: usize,
    session_id: &str,
    shown: Option<(usize, &SessionLoaded)>,
) {
    if let Some((at, _)) = shown {
        problems.fail(
            R143,
            format!(
                "the agent refused session/load #{load} of {session_id:?} (error #{answer}), but the client shows the session loaded (session_loaded #{at})."
            ),
            &[load, answer, at],
        );
        return;
    }
    let reported = events
        .iter()
        .any(|(i, e)| *i > answer && matches!(e, Event::Error { .. }));
    if !reported {
        problems.fail(
            R143,
            format!(
                "the agent refused session/load #{load} of {session_id:?} (error #{answer}). Expected the client to tell the user (an error event); it reported nothing."
            ),
            &[load, answer],
        );
    }
}

/// R140–R142: the shown history against the replayed one.
fn compare(
    problems: &mut Problems,
    expected: &[HistoryEntry],
    loaded: &SessionLoaded,
    shown_at: usize,
    frames: &[usize],
) {
    let shown = &loaded.history;
    let describe = |e: &HistoryEntry| match (&e.text, &e.tool_call_id) {
        (_, Some(id)) => format!("{} {id}", e.kind.as_str()),
        (Some(t), None) => format!("{} {:?}", e.kind.as_str(), truncate(t)),
        (None, None) => e.kind.as_str().to_owned(),
    };
    let count = |list: &[HistoryEntry], e: &HistoryEntry| list.iter().filter(|x| *x == e).count();
    let missing: Vec<String> = expected
        .iter()
        .filter(|e| count(shown, e) < count(expected, e))
        .map(describe)
        .collect();
    let doubled: Vec<String> = shown
        .iter()
        .filter(|e| count(shown, e) > count(expected, e))
        .map(describe)
        .collect();
    let sid = &loaded.session_id;
    if shown.len() < expected.len() {
        problems.fail(
            R140,
            format!(
                "the agent replayed {} entries into {sid:?} before answering session/load; the client shows {} (session_loaded #{shown_at}). Missing: {}. A session registered only when the load answers drops its replay (zed-industries/zed#54431).",
                expected.len(),
                shown.len(),
                list(&missing)
            ),
            frames,
        );
    } else if shown.len() > expected.len() {
        // Same length but other entries is a mismatch (R142), not a doubling.
        problems.fail(
            R141,
            format!(
                "the agent replayed {} entries into {sid:?}; the client shows {} (session_loaded #{shown_at}): {} shown more often than replayed.",
                expected.len(),
                shown.len(),
                if doubled.is_empty() { "entries".to_owned() } else { list(&doubled) }
            ),
            frames,
        );
    } else if let Some((n, (want, got))) = expected
        .iter()
        .zip(shown)
        .enumerate()
        .find(|(_, (w, g))| w != g)
    {
        problems.fail(
            R142,
            format!(
                "entry {} of the history of {sid:?} is {} as replayed; the client shows {} (session_loaded #{shown_at}).",
                n + 1,
                describe(want),
                describe(got)
            ),
            frames,
        );
    }
}

/// The replayed updates as history entries (CONTROL.md `history`).
pub fn fold<'a>(updates: impl Iterator<Item = &'a Value>) -> Vec<HistoryEntry> {
    let mut out: Vec<HistoryEntry> = Vec::new();
    let mut last_id: Option<&str> = None;
    for u in updates {
        let kind = match u.get("sessionUpdate").and_then(Value::as_str) {
            Some("user_message_chunk") => HistoryKind::UserMessage,
            Some("agent_message_chunk") => HistoryKind::AgentMessage,
            Some("agent_thought_chunk") => HistoryKind::AgentThought,
            Some("tool_call" | "tool_call_update") => {
                let Some(id) = u.get("toolCallId").and_then(Value::as_str) else {
                    continue;
                };
                if !out.iter().any(|e| e.tool_call_id.as_deref() == Some(id)) {
                    out.push(HistoryEntry {
                        kind: HistoryKind::ToolCall,
                        text: None,
                        tool_call_id: Some(id.to_owned()),
                    });
                    last_id = None;
                }
                continue;
            }
            _ => continue,
        };
        let text = u
            .get("content")
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
            .and_then(|c| c.get("text"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let id = u.get("messageId").and_then(Value::as_str);
        let continues = out.last().is_some_and(|l| {
            l.kind == kind
                && match (last_id, id) {
                    (Some(a), Some(b)) => a == b,
                    (None, None) => true,
                    _ => false,
                }
        });
        match out.last_mut() {
            Some(l) if continues => l.text.get_or_insert_with(String::new).push_str(text),
            _ if text.is_empty() => continue,
            _ => out.push(HistoryEntry {
                kind,
                text: Some(text.to_owned()),
                tool_call_id: None,
            }),
        }
        last_id = id;
    }
    out
}

/// The adapter's control events, typed, with their transcript indices.
fn control_events(case: &CaseRecord) -> Vec<(usize, &Event)> {
    // The events as the transcript already parsed them (once per entry, for every check).
    case.transcript
        .iter()
        .filter(|e| e.direction == Direction::AdapterToHarness)
        .filter_map(|e| Some((e.index, e.event()?)))
        .collect()
}

/// `load_session` commands (index, ACP session id).
fn load_commands(case: &CaseRecord) -> Vec<(usize, String)> {
    case.transcript
        .iter()
        .filter_map(|e| match e.command()? {
            Command::LoadSession { session_id, .. } => Some((e.index, session_id.clone())),
            _ => None,
        })
        .collect()
}

fn advertised_load(model: &WireModel<'_>) -> bool {
    model
        .agent_init(1)
        .and_then(|r| r.pointer("/agentCapabilities/loadSession"))
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn truncate(s: &str) -> String {
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s.to_owned()
    }
}

fn list(items: &[String]) -> String {
    items.join(", ")
}

#[cfg(test)]
mod tests {
    use super::super::Grade;
    use super::super::testkit::{Case, WS, assert_grade};
    use super::*;
    use serde_json::json;

    const OLD: &str = "ses_old";

    /// initialize (advertising loadSession), then a session/load of OLD whose replay is
    /// `replay`, answered with `answer`.
    fn load(replay: &[Value], answer: Value) -> Case {
        let c = Case::new();
        c.cmd(json!({"type":"load_session","seq":1,"session":"s1","sessionId":OLD,"cwd":WS}));
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}));
        c.a2c(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}));
        c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":OLD,"cwd":WS,"mcpServers":[]}}));
        for u in replay {
            c.a2c(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":OLD,"update":u}}));
        }
        let mut a = json!({"jsonrpc":"2.0","id":1});
        a.as_object_mut()
            .unwrap()
            .extend(answer.as_object().unwrap().clone());
        c.a2c(a);
        c
    }

    fn replay() -> Vec<Value> {
        vec![
            json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"Fix the bug"}}),
            json!({"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"I will "}}),
            json!({"sessionUpdate":"agent_message_chunk","messageId":"m1","content":{"type":"text","text":"edit it."}}),
            json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","kind":"execute"}),
            json!({"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}),
        ]
    }

    fn loaded(c: &Case, history: Value) {
        c.ev(json!({"type":"session_loaded","session":"s1","sessionId":OLD,"how":"load","history":history}));
    }

    fn full() -> Value {
        json!([{"kind":"user_message","text":"Fix the bug"},{"kind":"agent_message","text":"I will edit it."},{"kind":"tool_call","toolCallId":"t1"}])
    }

    #[test]
    fn the_replayed_history_shown_once_in_order_passes() {
        let c = load(&replay(), json!({"result":{}}));
        loaded(&c, full());
        assert_grade(&c.grade(&SessionLoad), Grade::Pass, "");
    }

    #[test]
    fn a_dropped_replay_fails_r140() {
        let c = load(&replay(), json!({"result":{}}));
        loaded(&c, json!([]));
        let f = c.grade(&SessionLoad);
        assert_grade(&f, Grade::Fail, "Missing: user_message");
        assert_eq!(f.rule, Some(140));
    }

    #[test]
    fn a_replay_shown_twice_fails_r141() {
        let c = load(&replay(), json!({"result":{}}));
        let mut twice = full().as_array().unwrap().clone();
        twice.extend(full().as_array().unwrap().clone());
        loaded(&c, Value::Array(twice));
        let f = c.grade(&SessionLoad);
        assert_grade(&f, Grade::Fail, "shown more often");
        assert_eq!(f.rule, Some(141));
    }

    #[test]
    fn a_user_message_in_the_agents_voice_fails_r142() {
        let c = load(&replay(), json!({"result":{}}));
        loaded(
            &c,
            json!([{"kind":"agent_message","text":"Fix the bug"},{"kind":"agent_message","text":"I will edit it."},{"kind":"tool_call","toolCallId":"t1"}]),
        );
        let f = c.grade(&SessionLoad);
        assert_grade(&f, Grade::Fail, "entry 1");
        assert_eq!(f.rule, Some(142));
    }

    #[test]
    fn a_refused_load_must_be_reported_r143() {
        let c = load(
            &[],
            json!({"error":{"code":-32002,"message":"Resource not found"}}),
        );
        let f = c.grade(&SessionLoad);
        assert_grade(&f, Grade::Fail, "reported nothing");
        assert_eq!(f.rule, Some(143));
        let c = load(
            &[],
            json!({"error":{"code":-32002,"message":"Resource not found"}}),
        );
        c.ev(json!({"type":"error","seq":1,"message":"session/load failed"}));
        assert_grade(&c.grade(&SessionLoad), Grade::Pass, "");
    }

    #[test]
    fn no_load_is_not_applicable() {
        let c = Case::new();
        c.handshake();
        assert_grade(
            &c.grade(&SessionLoad),
            Grade::NotApplicable,
            "reopens no session",
        );
    }
}
