//! acpx's rules as its profiles carry them (clients/acpx/), on lines acpx 0.19.1 prints.
use super::*;
use acp_vocab::transcript::{Direction, Recorder};

use crate::client_spec::ClientSpec;

const REQUEST: &str = r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"tc1","title":"cat ~/.ssh/id_rsa","rawInput":{"command":"cat ~/.ssh/id_rsa"}},"options":[{"optionId":"allow_always","kind":"allow_always","name":"Always Allow"},{"optionId":"allow","kind":"allow_once","name":"Allow"},{"optionId":"reject","kind":"reject_once","name":"Reject"}]}}"#;
const PROMPT: &str =
    r#"{"jsonrpc":"2.0","id":0,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#;

/// The rules of a clients/acpx profile, and a transcript with `wire` in it.
fn load(profile: &str, wire: &[(Direction, &str)]) -> (DataRules, Recorder) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../clients/acpx")
        .join(profile);
    let spec = ClientSpec::from_profile_with_program(&path, "acpx").unwrap();
    let observer = spec.wire.observer.as_ref().unwrap();
    let compiled = compile(observer, !spec.wire.choose.is_empty(), spec.wire.tty).unwrap();
    let mut rules = DataRules::new("acpx".into(), compiled, spec.wire.choose.clone());
    let rec = Recorder::new();
    for (dir, frame) in wire {
        rec.record(1, *dir, frame.as_bytes());
    }
    rules.wire.refresh(&rec, |_| {});
    (rules, rec)
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn valid(events: &[Value]) {
    for e in events {
        crate::control_schema::validate_control(e).unwrap_or_else(|err| panic!("{e}: {err}"));
    }
}

#[test]
fn escalation_meta_is_an_observed_approval_then_a_policy_answer() {
    let (mut acpx, _rec) = load("acpx.toml", &[(Direction::AgentToClient, REQUEST)]);
    assert!(acpx.stdout_line(REQUEST).is_empty());
    let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"reject"},"_meta":{"acpx":{"permissionEscalation":{"type":"permission_escalation","sessionId":"s1","toolCallId":"tc1","toolKind":"read","action":"escalate"}}}}}"#;
    let events = acpx.stdout_line(answer);
    valid(&events);
    assert_eq!(types(&events), ["approval", "approval_resolved"]);
    assert_eq!(events[0]["subject"], "read");
    assert_eq!(events[0]["toolCallId"], "tc1");
    assert_eq!(events[0]["requestId"], 0);
    assert!(events[0].get("options").is_none());
    assert_eq!(events[0]["observed"]["from"], "stdout (JSON)");
    assert!(
        events[0]["observed"]["evidence"]
            .as_str()
            .unwrap()
            .contains("\"toolKind\":\"read\""),
        "{}",
        events[0]
    );
    assert_eq!(events[1]["by"], "policy");
    assert_eq!(events[1]["optionId"], "reject");
    // `other` and no kind at all show as generic.
    let (mut acpx, _rec) = load("acpx.toml", &[(Direction::AgentToClient, REQUEST)]);
    let other = answer.replace(r#""toolKind":"read","#, "");
    assert_eq!(acpx.stdout_line(&other)[0]["subject"], "generic");
}

#[test]
fn a_prompt_response_is_not_a_permission_answer_and_exit_codes_are_turn_states() {
    let stop = r#"{"jsonrpc":"2.0","id":0,"result":{"stopReason":"cancelled"}}"#;
    let wire = [
        (Direction::ClientToAgent, PROMPT),
        (Direction::AgentToClient, REQUEST),
        (Direction::AgentToClient, stop),
    ];
    let (mut acpx, _rec) = load("acpx.toml", &wire);
    // id 0 both ways: the agent's prompt response must not resolve the permission request.
    assert!(acpx.stdout_line(stop).is_empty());
    let state = |acpx: &mut DataRules, code: Option<i32>| {
        let events = acpx.exited(&ExitInfo { code, signal: None });
        valid(&events);
        events.first().map(|e| {
            assert_eq!(e["sessionId"], "s1");
            e["state"].as_str().unwrap().to_owned()
        })
    };
    assert_eq!(state(&mut acpx, Some(0)).as_deref(), Some("cancelled"));
    assert_eq!(state(&mut acpx, Some(130)).as_deref(), Some("cancelled"));
    assert_eq!(state(&mut acpx, Some(5)).as_deref(), Some("failed"));
    assert_eq!(state(&mut acpx, Some(1)).as_deref(), Some("failed"));
    assert_eq!(state(&mut acpx, None), None);
    let turn = acpx.exited(&ExitInfo {
        code: Some(5),
        signal: None,
    });
    assert_eq!(turn[0]["stopReason"], "cancelled");
    assert!(
        turn[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("acpx exited with code 5 (PERMISSION_DENIED")
    );
    // No turn ever started, and acpx exits as if all went well: nothing to report.
    let (mut idle, _rec) = load("acpx.toml", &[]);
    assert!(
        idle.exited(&ExitInfo {
            code: Some(0),
            signal: None
        })
        .is_empty()
    );
}

/// No prompt reached the agent (it died or refused before a session was open): the failed turn
/// the rules would report is the client's error for the session it could not open.
#[test]
fn a_failed_launch_without_a_prompt_is_an_observed_error() {
    let (mut acpx, _rec) = load("acpx.toml", &[]);
    let events = acpx.exited(&ExitInfo {
        code: Some(1),
        signal: None,
    });
    valid(&events);
    assert_eq!(types(&events), ["error"]);
    assert_eq!(
        events[0]["message"],
        "acpx exited with code 1 (an error); shown as a failed turn, and no prompt reached the agent"
    );
    assert_eq!(events[0]["observed"]["from"], "exit status");
    assert_eq!(events[0]["observed"]["evidence"], "exit code 1");
    // Killed by a signal: the client showed nothing.
    let (mut acpx, _rec) = load("acpx.toml", &[]);
    assert!(
        acpx.exited(&ExitInfo {
            code: None,
            signal: Some("SIGKILL".into()),
        })
        .is_empty()
    );
    // chuk-acp says so on stderr before it exits: that line, still waiting for a session, is
    // the evidence, not the exit status.
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/chuk-acp/chuk-acp.toml");
    let spec = ClientSpec::from_profile_with_program(&path, "chuk-acp").unwrap();
    let compiled = compile(spec.wire.observer.as_ref().unwrap(), false, false).unwrap();
    assert!(compiled.reports().contains(&"error"));
    let mut rules = DataRules::new("chuk-acp".into(), compiled, Vec::new());
    assert!(rules.stderr_line("Error connecting to agent: ").is_empty());
    let events = rules.exited(&ExitInfo {
        code: Some(1),
        signal: None,
    });
    valid(&events);
    assert_eq!(types(&events), ["error"]);
    assert_eq!(events[0]["observed"]["from"], "stderr");
    assert!(rules.unmatched().is_empty());
}

#[test]
fn terminal_prompt_is_the_card_with_the_reachable_buttons() {
    let (mut acpx, _rec) = load("acpx-tty.toml", &[(Direction::AgentToClient, REQUEST)]);
    let text = "\u{1b}[1G\u{1b}[0J\r\n[permission] Allow cat ~/.ssh/id_rsa [re";
    assert!(acpx.terminal(text).is_empty());
    let events = acpx.terminal("ad]? (y/N) \u{1b}[59G");
    valid(&events);
    assert_eq!(types(&events), ["approval"]);
    assert_eq!(events[0]["subject"], "read");
    assert_eq!(events[0]["toolCallId"], "tc1");
    assert_eq!(
        events[0]["options"],
        json!([{"optionId":"allow","label":"y"},{"optionId":"reject","label":"n"}])
    );
    assert_eq!(events[0]["observed"]["from"], "terminal");
    assert_eq!(
        events[0]["observed"]["evidence"],
        "[permission] Allow cat ~/.ssh/id_rsa [read]? (y/N)"
    );
    // The escalation on stdout after the prompt is the same card: it stands once.
    acpx.user(UserAct::Cancelled);
    let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"},"_meta":{"acpx":{"permissionEscalation":{"toolKind":"execute"}}}}}"#;
    let resolved = acpx.stdout_line(answer);
    valid(&resolved);
    assert_eq!(types(&resolved), ["approval_resolved"]);
    assert_eq!(resolved[0]["by"], "cancel");
}

#[test]
fn an_event_without_its_request_waits_for_it_and_is_noted_if_none_comes() {
    let (mut acpx, rec) = load("acpx-tty.toml", &[]);
    assert!(
        acpx.terminal("[permission] Allow x [edit]? (y/N)")
            .is_empty()
    );
    rec.record(1, Direction::AgentToClient, REQUEST.as_bytes());
    acpx.wire.refresh(&rec, |_| {});
    let events = acpx.stdout_line("unrelated");
    assert_eq!(types(&events), ["approval"]);
    assert_eq!(events[0]["subject"], "file_change");
    // A second card for the only request is dropped; an answer to no request waits.
    assert!(
        acpx.terminal("[permission] Allow y [edit]? (y/N)")
            .is_empty()
    );
    let stray = r#"{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"cancelled"}}}"#;
    assert!(acpx.stdout_line(stray).is_empty());
    let notes = acpx.unmatched();
    assert_eq!(notes.len(), 1);
    assert!(matches!(notes[0], Note::ObserverUnmatched { .. }));
}

#[test]
fn chuk_acp_rules_read_stdout_and_stderr_lines() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients/chuk-acp/chuk-acp.toml");
    let spec = ClientSpec::from_profile_with_program(&path, "chuk-acp").unwrap();
    let compiled = compile(spec.wire.observer.as_ref().unwrap(), false, false).unwrap();
    let mut rules = DataRules::new("chuk-acp".into(), compiled, Vec::new());
    // No prompt on the wire yet: the turn waits for its session.
    assert!(rules.stdout_line("[Stop reason: end_turn]").is_empty());
    let rec = Recorder::new();
    rec.record(1, Direction::ClientToAgent, PROMPT.as_bytes());
    rules.wire.refresh(&rec, |_| {});
    let events = rules.stderr_line("Error connecting to agent: Prompt failed: boom");
    valid(&events);
    assert_eq!(types(&events), ["turn", "turn"]);
    assert_eq!(events[0]["state"], "completed");
    assert_eq!(events[0]["stopReason"], "end_turn");
    assert_eq!(events[1]["state"], "failed");
    assert_eq!(events[1]["sessionId"], "s1");
    assert_eq!(events[1]["observed"]["from"], "stderr");
    assert!(rules.stdout_line("Done.").is_empty());
    assert_eq!(
        rules.stdout_line("[Stop reason: refusal]")[0]["state"],
        "refused"
    );
}

#[test]
fn a_rule_that_matches_empty_text_ends_and_keeps_char_boundaries() {
    let spec = spec(
        "[observer]\n[[observer.rule]]\non = \"terminal\"\nmatch = \"x*\"\nevent = \"turn\"\nstate = \"failed\"\n",
    );
    let mut rules = DataRules::new(
        "t".into(),
        compile(&spec, false, false).unwrap(),
        Vec::new(),
    );
    // No prompt on the wire: every match waits; the point is that this returns.
    assert!(rules.terminal("éé\u{1b}[1Gü").is_empty());
    assert_eq!(rules.unmatched().len(), 4);
}

#[test]
fn strip_escapes_keeps_text() {
    assert_eq!(strip_escapes("\u{1b}[59Gy\r\r\nok"), "y\nok");
}

fn spec(text: &str) -> ObserverSpec {
    toml::from_str::<toml::Table>(text)
        .unwrap()
        .get("observer")
        .cloned()
        .unwrap()
        .try_into()
        .unwrap()
}

#[test]
fn bad_rules_name_the_rule_and_the_key() {
    let cases = [
        (
            "on = \"json\"\nevent = \"turn\"\nstate = \"{code}\"",
            "uses {code}",
        ),
        ("on = \"exit\"\nevent = \"approval\"", "needs `subject`"),
        (
            "on = \"exit\"\nevent = \"turn\"\nstate = \"{session|nope}\"",
            "word table \"nope\"",
        ),
        (
            "on = \"stdout\"\nevent = \"turn\"\nstate = \"failed\"",
            "needs a `match`",
        ),
        (
            "on = \"exit\"\nmatch = \"x\"\nevent = \"turn\"\nstate = \"failed\"",
            "`match` is for",
        ),
        (
            "on = \"terminal\"\nmatch = \"x\"\nevent = \"approval\"\nsubject = \"read\"\noptions = \"choose\"",
            "needs [[choose]]",
        ),
        (
            "on = \"json\"\nwhen = \"x\"\nevent = \"turn\"\nstate = \"failed\"",
            "JSON pointer",
        ),
    ];
    for (rule, needle) in cases {
        let spec = spec(&format!("[observer]\n[[observer.rule]]\n{rule}\n"));
        let err = compile(&spec, false, false).unwrap_err();
        assert!(err.contains(needle), "{needle:?} not in {err}");
        assert!(err.starts_with("[[observer.rule]] #1"), "{err}");
    }
    let words = spec(
        "[observer]\n[[observer.rule]]\non = \"exit\"\nevent = \"turn\"\nstate = \"{stop_reason|s}\"\n[observer.words.s]\nx = \"done\"\n",
    );
    let err = compile(&words, false, false).unwrap_err();
    assert!(
        err.contains("[observer.words.s]: \"done\" is not a `state`"),
        "{err}"
    );
}

/// A rule never matches text older than the last match: a word the last match ended with does
/// not start a second match once more text arrives.
#[test]
fn rules_read_only_text_after_the_last_match() {
    let spec = spec(
        "[observer]\n[[observer.rule]]\non = \"terminal\"\nmatch = 'done (?P<why>\\w+)'\nevent = \"turn\"\nstate = \"completed\"\nmessage = \"{why}\"\n[[observer.rule]]\non = \"terminal\"\nmatch = '(?P<w>\\w+) again'\nevent = \"turn\"\nstate = \"cancelled\"\nmessage = \"{w}\"\n",
    );
    let mut rules = DataRules::new(
        "t".into(),
        compile(&spec, false, false).unwrap(),
        Vec::new(),
    );
    let rec = Recorder::new();
    rec.record(1, Direction::ClientToAgent, PROMPT.as_bytes());
    rules.wire.refresh(&rec, |_| {});
    let events = rules.terminal("done stop");
    assert_eq!(types(&events), ["turn"]);
    assert_eq!(events[0]["message"], "stop");
    // "stop again" would match, but "stop" is part of the last match.
    assert!(rules.terminal(" again").is_empty());
    let events = rules.terminal(" then again");
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["message"], "then");
}

const SCREEN_RULES: &str = r#"
[observer]
[[observer.rule]]
on = "screen"
box_containing = "Permission"
match = 'Permission: (?P<title>.+)'
event = "approval"
subject = "command"
title = "{title}"
[[observer.rule]]
on = "screen"
region = { row = 9, col = 0, rows = 1, cols = 40 }
match = 'Done: (?P<stop>\w+)'
event = "turn"
state = "completed"
stopReason = "{stop}"
"#;

fn screen_rules() -> (DataRules, Recorder) {
    let compiled = compile_for(&spec(SCREEN_RULES), false, true, Some((10, 40))).unwrap();
    let mut rules = DataRules::new("tui".into(), compiled, Vec::new()).with_screen(10, 40);
    let rec = Recorder::new();
    rec.record(1, Direction::ClientToAgent, PROMPT.as_bytes());
    rec.record(1, Direction::AgentToClient, REQUEST.as_bytes());
    rules.wire.refresh(&rec, |_| {});
    (rules, rec)
}

/// Screen rules read the rendered screen once settled: a box found by its text, a region; the
/// evidence is what the person saw; a card repainted unchanged is one card.
#[test]
fn screen_rules_read_the_settled_screen() {
    let (mut rules, _rec) = screen_rules();
    let card = "\x1b[2J\x1b[1;1H┌──────────────────────┐\r\n│ Permission: ls -la   │\r\n│ 1) Allow  2) Reject  │\r\n└──────────────────────┘";
    rules.screen_bytes(card.as_bytes());
    // Bytes alone make no event: only a settled screen counts.
    assert!(rules.terminal(card).is_empty());
    let events = rules.settled();
    valid(&events);
    assert_eq!(types(&events), ["approval"]);
    assert_eq!(events[0]["requestId"], 0);
    assert_eq!(events[0]["observed"]["from"], "screen");
    assert_eq!(
        events[0]["observed"]["evidence"],
        "Permission: ls -la\n 1) Allow  2) Reject"
    );
    // The same card repainted: no second match. A cursor blink elsewhere changes nothing.
    rules.screen_bytes(card.as_bytes());
    assert!(rules.settled().is_empty());
    // The turn ends on the status line (row 9); the old card is still on screen, unmatched.
    rules.screen_bytes(b"\x1b[10;1HDone: end_turn");
    let events = rules.settled();
    assert_eq!(types(&events), ["turn"]);
    assert_eq!(events[0]["stopReason"], "end_turn");
    assert!(rules.screen_text().unwrap().ends_with("Done: end_turn"));
}

/// Two requests whose cards read the same (no title, same command): once the client took the
/// user's answer, the card on screen is the second one, even with the text of the first; until
/// then a repaint of the answered card is not.
#[test]
fn a_card_like_the_one_answered_is_the_next_card() {
    let (mut rules, rec) = screen_rules();
    rec.record(
        1,
        Direction::AgentToClient,
        REQUEST.replace("\"id\":0", "\"id\":1").as_bytes(),
    );
    rules.wire.refresh(&rec, |_| {});
    let card = "\x1b[2J\x1b[1;1H┌──────────────────────┐\r\n│ Permission: ls -la   │\r\n│ 1) Allow  2) Reject  │\r\n└──────────────────────┘";
    rules.screen_bytes(card.as_bytes());
    let events = rules.settled();
    assert_eq!(types(&events), ["approval"]);
    assert_eq!(events[0]["requestId"], 0);
    rules.user(UserAct::Chose);
    // Not yet taken: the same screen, repainted.
    rules.screen_bytes(card.as_bytes());
    assert!(rules.settled().is_empty());
    // Taken: the status line moved on, and the card shown is the next request's.
    rules.screen_bytes(format!("{card}\x1b[10;1HAnswered").as_bytes());
    let events = rules.settled();
    assert_eq!(types(&events), ["approval"]);
    assert_eq!(events[0]["requestId"], 1);
    // Without a new answer, that card repainted is still one card.
    rules.screen_bytes(format!("{card}\x1b[10;1HAnswered").as_bytes());
    assert!(rules.settled().is_empty());
}

/// Two requests whose cards read the same, on a screen that reads the same before and after
/// the answer (nothing else on it moves): the client's answer on the wire, and its drawing
/// after it, make the card on screen the next request's.
#[test]
fn a_card_redrawn_after_the_answer_is_the_next_card_even_on_the_same_screen() {
    let (mut rules, rec) = screen_rules();
    let card = "\x1b[2J\x1b[1;1H┌──────────────────────┐\r\n│ Permission: ls -la   │\r\n│ 1) Allow  2) Reject  │\r\n└──────────────────────┘";
    rules.screen_bytes(card.as_bytes());
    assert_eq!(rules.settled()[0]["requestId"], 0);
    rules.user(UserAct::Chose);
    // Drawn again before any answer: the same card.
    rules.screen_bytes(card.as_bytes());
    assert!(rules.settled().is_empty());
    // The client answers request 0, the agent asks again, the client draws the same card.
    rec.record(
        1,
        Direction::ClientToAgent,
        br#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}"#,
    );
    rec.record(
        1,
        Direction::AgentToClient,
        REQUEST.replace("\"id\":0", "\"id\":1").as_bytes(),
    );
    rules.wire.refresh(&rec, |_| {});
    rules.screen_bytes(card.as_bytes());
    let events = rules.settled();
    assert_eq!(types(&events), ["approval"]);
    assert_eq!(events[0]["requestId"], 1);
    // Repainted without a new answer: still one card.
    rules.screen_bytes(card.as_bytes());
    assert!(rules.settled().is_empty());
}

/// A status line that reads the same at rest and at a turn's end ("● ready"): what it showed
/// before the prompt was typed is not the turn's end; once the screen moved on after the
/// prompt, the same text is.
#[test]
fn a_ready_status_before_the_prompt_is_not_the_turn_end() {
    let compiled = compile_for(&spec(SCREEN_RULES), false, true, Some((10, 40))).unwrap();
    let mut rules = DataRules::new("tui".into(), compiled, Vec::new()).with_screen(10, 40);
    let done = "\x1b[2J\x1b[10;1HDone: idle";
    rules.screen_bytes(done.as_bytes());
    // No prompt yet: the match waits for one.
    assert!(rules.settled().is_empty());
    rules.prompt_typed();
    let rec = Recorder::new();
    rec.record(1, Direction::ClientToAgent, PROMPT.as_bytes());
    rules.wire.refresh(&rec, |_| {});
    // The prompt reached the agent; the screen has not moved on: no turn end.
    rules.screen_bytes(done.as_bytes());
    assert!(rules.settled().is_empty());
    // The prompt is shown, the status line reads as before: this turn's end.
    rules.screen_bytes(format!("{done}\x1b[1;1H> Run the tests").as_bytes());
    let events = rules.settled();
    assert_eq!(types(&events), ["turn"]);
    assert_eq!(events[0]["stopReason"], "idle");
}

/// A rule over the whole screen takes the first match that was not on the last screen it read:
/// an error shown below an old one is new; the old one scrolled to the top, or alone after the
/// new one scrolled away, is not matched again.
#[test]
fn a_screen_rule_never_matches_text_older_than_its_last_match() {
    let text = r#"
[observer]
[[observer.rule]]
on = "screen"
match = '⚠ (?P<why>.+)'
event = "turn"
state = "failed"
message = "{why}"
"#;
    let compiled = compile_for(&spec(text), false, true, Some((10, 40))).unwrap();
    let mut rules = DataRules::new("tui".into(), compiled, Vec::new()).with_screen(10, 40);
    let rec = Recorder::new();
    rec.record(1, Direction::ClientToAgent, PROMPT.as_bytes());
    rules.wire.refresh(&rec, |_| {});
    let messages = |events: Vec<Value>| -> Vec<String> {
        events
            .iter()
            .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    rules.screen_bytes("\x1b[2J\x1b[3;1H⚠ disk full".as_bytes());
    assert_eq!(messages(rules.settled()), ["disk full"]);
    // A new error below the old one: the new one, not the old one again.
    rules.screen_bytes("\x1b[5;1H⚠ connection closed".as_bytes());
    assert_eq!(messages(rules.settled()), ["connection closed"]);
    // Both scroll up by two rows: nothing new.
    rules.screen_bytes("\x1b[2J\x1b[1;1H⚠ disk full\x1b[3;1H⚠ connection closed".as_bytes());
    assert!(rules.settled().is_empty());
    // The old one scrolls off the top: what is left is not new either.
    rules.screen_bytes("\x1b[2J\x1b[1;1H⚠ connection closed".as_bytes());
    assert!(rules.settled().is_empty());
    // Gone, then shown again: a new appearance.
    rules.screen_bytes(b"\x1b[2J\x1b[1;1Hready");
    assert!(rules.settled().is_empty());
    rules.screen_bytes("\x1b[2J\x1b[1;1H⚠ connection closed".as_bytes());
    assert_eq!(messages(rules.settled()), ["connection closed"]);
}

#[test]
fn screen_rules_need_a_tui_and_regions_on_the_screen() {
    let err = compile_for(&spec(SCREEN_RULES), false, true, None).unwrap_err();
    assert!(err.contains("#1") && err.contains("needs a [tui]"), "{err}");
    let err = compile_for(&spec(SCREEN_RULES), false, true, Some((8, 40))).unwrap_err();
    assert!(
        err.contains("#2") && err.contains("`region`: rows 9..10"),
        "{err}"
    );
    let wrong = SCREEN_RULES.replace("on = \"screen\"\nregion", "on = \"stdout\"\nregion");
    let err = compile_for(&spec(&wrong), false, true, Some((10, 40))).unwrap_err();
    assert!(err.contains("are for on = \"screen\""), "{err}");
}
