//! Each mutant deviates from the reference exactly as described in `src/mutation.rs`, and
//! nowhere else that these scenarios can see.

mod common;

use common::{Case, handshake, permission, three_options, update};
use serde_json::{Value, json};

/// An `edit` tool call `call_1` announced, then a sparse permission request (id 0) for it.
fn edit_then_permission(after_answer: Vec<Value>) -> Vec<Value> {
    let mut steps = handshake();
    steps.extend([
        json!({"recv": "session/prompt"}),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Edit a.md",
                      "kind": "edit", "locations": [{"path": "/w/a.md"}]}),
        ),
        permission(
            json!(0),
            json!({"toolCallId": "call_1", "status": "pending"}),
            three_options(),
        ),
        json!({"await_response": 0}),
    ]);
    steps.extend(after_answer);
    steps
}

fn item_types(events: &[Value], tool_call_id: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "item" && e["toolCallId"] == tool_call_id)
        .map(|e| e["itemType"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn hello_names_the_mutant_in_the_version() {
    let mut case = Case::mutant(&[], "always-command");
    let hello = case.expect("hello");
    assert_eq!(hello["client"]["name"], "acp-reference-client");
    assert!(
        hello["client"]["version"]
            .as_str()
            .expect("version")
            .ends_with("+always-command")
    );
    assert!(case.finish().status.success());
}

#[test]
fn always_command_shows_every_approval_as_a_command_but_items_keep_their_type() {
    let mut case = Case::mutant(
        &edit_then_permission(vec![
            json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
        ]),
        "always-command",
    );
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "edit");
    assert_eq!(case.expect("item")["itemType"], "file_change");
    let approval = case.expect("approval");
    assert_eq!(approval["subject"], "command");
    // Everything else is the reference behaviour.
    assert_eq!(approval["options"].as_array().map(Vec::len), Some(3));
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "once"}));
    assert_eq!(case.expect("approval_resolved")["optionId"], "once");
    assert_eq!(case.expect("turn")["state"], "completed");
    let done = case.finish();
    assert_eq!(item_types(&done.events, "call_1"), ["file_change"]);
    assert_eq!(
        done.answer(&json!(0))[0]["result"]["outcome"]["optionId"],
        "once"
    );
}

#[test]
fn unoffered_option_answers_from_a_fixed_default_list() {
    let mut steps = edit_then_permission(vec![permission(
        json!(1),
        json!({"toolCallId": "call_2", "kind": "execute", "title": "ls"}),
        json!([
            {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
            {"optionId": "no", "name": "No", "kind": "reject_once"}
        ]),
    )]);
    steps.extend([
        json!({"await_response": 1}),
        json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
    ]);
    let mut case = Case::mutant(&steps, "unoffered-option");
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "go");
    let approval = case.wait_type("approval");
    assert_eq!(approval["subject"], "file_change");
    // The user clicks an offered button (an unoffered one is still refused) …
    let seq = case.send(json!({"type": "choose", "requestId": 0, "optionId": "allow"}));
    assert_eq!(case.expect("error")["seq"], seq);
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "always"}));
    let resolved = case.expect("approval_resolved");
    // … but the answer is built from the default list.
    assert_eq!(resolved["optionId"], "allow");
    case.wait_type("approval");
    case.send(json!({"type": "choose", "requestId": 1, "optionId": "no"}));
    assert_eq!(case.expect("approval_resolved")["optionId"], "reject");
    assert_eq!(case.wait_type("turn")["state"], "completed");
    let done = case.finish();
    assert_eq!(
        done.answer(&json!(0))[0]["result"],
        json!({"outcome": {"outcome": "selected", "optionId": "allow"}})
    );
    assert_eq!(
        done.answer(&json!(1))[0]["result"],
        json!({"outcome": {"outcome": "selected", "optionId": "reject"}})
    );
}

#[test]
fn cancel_as_reject_selects_the_first_reject_option_and_sends_no_session_cancel() {
    // The agent waits for a session/cancel that never comes; shutdown ends the case.
    let mut case = Case::mutant(
        &edit_then_permission(vec![json!({"recv": "session/cancel"})]),
        "cancel-as-reject",
    );
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "edit");
    case.wait_type("approval");
    case.send(json!({"type": "cancel", "session": "s1"}));
    let resolved = case.expect("approval_resolved");
    assert_eq!(
        resolved,
        json!({"type": "approval_resolved", "sessionId": "ses_1", "requestId": 0,
               "outcome": "selected", "optionId": "reject", "by": "cancel"})
    );
    // A cancel with nothing pending sends nothing at all.
    case.send(json!({"type": "cancel", "session": "s1"}));
    let done = case.finish();
    assert!(done.status.success());
    assert!(
        done.rest.iter().all(|e| e["type"] != "turn"),
        "the turn never ends: {:?}",
        done.rest
    );
    assert!(done.sent("session/cancel").is_empty());
    assert_eq!(
        done.answer(&json!(0)),
        [&json!({"jsonrpc": "2.0", "id": 0,
                 "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}})]
    );
}

#[test]
fn flip_on_approval_retypes_the_item_while_it_runs() {
    let mut case = Case::mutant(
        &edit_then_permission(vec![
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                          "status": "in_progress"}),
            ),
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                          "status": "completed"}),
            ),
            json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
        ]),
        "flip-on-approval",
    );
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "edit");
    assert_eq!(case.expect("item")["itemType"], "file_change");
    // The approval itself is correct.
    assert_eq!(case.expect("approval")["subject"], "file_change");
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "once"}));
    case.expect("approval_resolved");
    let item = case.expect("item");
    assert_eq!(
        (&item["itemType"], &item["status"]),
        (&json!("command"), &json!("pending"))
    );
    assert_eq!(case.wait_type("turn")["state"], "completed");
    let done = case.finish();
    assert_eq!(
        item_types(&done.events, "call_1"),
        ["file_change", "command", "command", "file_change"]
    );
}

#[test]
fn flip_on_approval_leaves_rejected_calls_alone() {
    let mut case = Case::mutant(
        &edit_then_permission(vec![
            json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
        ]),
        "flip-on-approval",
    );
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "edit");
    case.wait_type("approval");
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "reject"}));
    case.expect("approval_resolved");
    assert_eq!(case.expect("turn")["state"], "completed");
    let done = case.finish();
    assert_eq!(item_types(&done.events, "call_1"), ["file_change"]);
}
