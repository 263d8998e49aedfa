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
fn flip_on_approval_retypes_the_item_from_the_approval_until_it_completes() {
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
    // The approval itself is correct; the row turns into a command row as it arrives.
    assert_eq!(case.expect("approval")["subject"], "file_change");
    let item = case.expect("item");
    assert_eq!(
        (&item["itemType"], &item["status"]),
        (&json!("command"), &json!("pending"))
    );
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "once"}));
    case.expect("approval_resolved");
    assert_eq!(case.wait_type("turn")["state"], "completed");
    let done = case.finish();
    assert_eq!(
        item_types(&done.events, "call_1"),
        ["file_change", "command", "command", "file_change"]
    );
}

#[test]
fn flip_on_approval_retypes_rejected_calls_until_they_fail() {
    let mut case = Case::mutant(
        &edit_then_permission(vec![
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                          "status": "failed"}),
            ),
            json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
        ]),
        "flip-on-approval",
    );
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "edit");
    case.wait_type("approval");
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "reject"}));
    case.wait_type("approval_resolved");
    assert_eq!(case.wait_type("turn")["state"], "completed");
    let done = case.finish();
    assert_eq!(
        item_types(&done.events, "call_1"),
        ["file_change", "command", "file_change"]
    );
}

#[test]
fn kind_from_request_ignores_the_announced_kind() {
    // Announced as edit; the request says `other` (opencode external_directory).
    let mut steps = handshake();
    steps.extend([
        json!({"recv": "session/prompt"}),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "write",
                      "kind": "edit"}),
        ),
        permission(
            json!(0),
            json!({"toolCallId": "call_1", "kind": "other", "title": "/tmp/dir",
                   "locations": [{"path": "/tmp/dir/a.md"}, {"path": "/tmp/dir"}]}),
            three_options(),
        ),
        json!({"await_response": 0}),
        json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
    ]);
    let mut case = Case::mutant(&steps, "kind-from-request");
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "write");
    assert_eq!(case.wait_type("item")["itemType"], "file_change");
    assert_eq!(case.wait_type("approval")["subject"], "generic");
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "once"}));
    assert_eq!(case.wait_type("turn")["state"], "completed");
    assert!(case.finish().status.success());
}

/// qwen's exec options plus a reject_always: two allow_always, one allow_once, two rejects.
fn five_options() -> Value {
    json!([
        {"optionId": "project", "name": "Always Allow in project", "kind": "allow_always"},
        {"optionId": "user", "name": "Always Allow for user", "kind": "allow_always"},
        {"optionId": "once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
        {"optionId": "never", "name": "Never", "kind": "reject_always"}
    ])
}

fn buttons(approval: &Value, field: &str) -> Vec<String> {
    approval["options"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| o[field].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn collapse_by_kind_and_duplicate_labels_change_only_the_buttons() {
    let mut steps = handshake();
    steps.extend([
        json!({"recv": "session/prompt"}),
        permission(
            json!(0),
            json!({"toolCallId": "c", "kind": "execute"}),
            five_options(),
        ),
        json!({"await_response": 0}),
        json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
    ]);
    let mut case = Case::mutant(&steps, "collapse-by-kind");
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "run");
    let approval = case.wait_type("approval");
    assert_eq!(
        buttons(&approval, "optionId"),
        ["project", "once", "cancel"]
    );
    // The second allow_always has no button: the click is refused.
    let seq = case.send(json!({"type": "choose", "requestId": 0, "optionId": "user"}));
    assert_eq!(case.wait_type("error")["seq"], seq);
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "project"}));
    assert_eq!(case.wait_type("turn")["state"], "completed");
    case.finish();

    let mut case = Case::mutant(&steps, "duplicate-labels");
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "run");
    let approval = case.wait_type("approval");
    assert_eq!(
        buttons(&approval, "label"),
        ["Allow", "Allow", "Allow", "Reject", "Reject"]
    );
    case.send(json!({"type": "choose", "requestId": 0, "optionId": "never"}));
    assert_eq!(case.wait_type("turn")["state"], "completed");
    let done = case.finish();
    assert_eq!(
        done.answer(&json!(0))[0]["result"]["outcome"]["optionId"],
        "never"
    );
}

#[test]
fn no_cancelled_answer_sends_session_cancel_but_leaves_the_request_open() {
    let mut case = Case::mutant(
        &edit_then_permission(vec![])
            .into_iter()
            .take(5)
            .chain([
                json!({"recv": "session/cancel"}),
                json!({"respond": "session/prompt", "result": {"stopReason": "cancelled"}}),
            ])
            .collect::<Vec<_>>(),
        "no-cancelled-answer",
    );
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "edit");
    case.wait_type("approval");
    case.send(json!({"type": "cancel", "session": "s1"}));
    assert_eq!(case.wait_type("turn")["state"], "cancelled");
    let done = case.finish();
    assert_eq!(done.sent("session/cancel").len(), 1);
    assert!(done.answer(&json!(0)).is_empty(), "{:?}", done.agent_log);
    assert!(done.events.iter().all(|e| e["type"] != "approval_resolved"));
}

#[test]
fn cancel_as_failed_shows_a_cancelled_turn_as_failed() {
    let mut steps = handshake();
    steps.extend([
        json!({"recv": "session/prompt"}),
        json!({"respond": "session/prompt", "result": {"stopReason": "cancelled"}}),
    ]);
    let mut case = Case::mutant(&steps, "cancel-as-failed");
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "go");
    let turn = case.wait_type("turn");
    assert_eq!(turn["state"], "failed");
    assert!(
        turn["message"]
            .as_str()
            .unwrap_or_default()
            .contains("internal error")
    );
    case.finish();
}

#[test]
fn overwrite_same_tool_call_forgets_the_first_request() {
    let mut steps = handshake();
    steps.extend([
        json!({"recv": "session/prompt"}),
        permission(
            json!(0),
            json!({"toolCallId": "same", "kind": "execute"}),
            three_options(),
        ),
        permission(
            json!(1),
            json!({"toolCallId": "same", "kind": "execute"}),
            three_options(),
        ),
        json!({"recv": "session/cancel"}),
        json!({"await_response": 1}),
        json!({"respond": "session/prompt", "result": {"stopReason": "cancelled"}}),
    ]);
    let mut case = Case::mutant(&steps, "overwrite-same-tool-call");
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "go");
    case.wait_for(|e| e["type"] == "approval" && e["requestId"] == 1);
    case.send(json!({"type": "cancel", "session": "s1"}));
    assert_eq!(case.wait_type("turn")["state"], "cancelled");
    let done = case.finish();
    assert_eq!(
        done.answer(&json!(1))[0]["result"]["outcome"]["outcome"],
        "cancelled"
    );
    assert!(done.answer(&json!(0)).is_empty(), "{:?}", done.agent_log);
}

#[test]
fn session_new_mutants_send_what_their_bug_sends() {
    let steps = handshake();
    let mut case = Case::mutant(&steps, "relative-cwd");
    case.expect("hello");
    case.open_session("s1");
    let done = case.finish();
    assert_eq!(done.sent("session/new")[0]["params"]["cwd"], ".");

    let mut case = Case::mutant(&steps, "mcp-server-without-env");
    case.expect("hello");
    case.open_session("s1");
    let done = case.finish();
    let server = &done.sent("session/new")[0]["params"]["mcpServers"][0];
    assert_eq!(server["command"], "npx");
    assert!(server.get("env").is_none(), "{server}");

    let mut case = Case::mutant(&steps, "session-before-initialized");
    case.expect("hello");
    case.open_session("s1");
    let done = case.finish();
    // Both went out before the agent's answer could be read: session/new directly follows
    // initialize in what the agent received, and the session still opened.
    let methods: Vec<&str> = done
        .agent_log
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert_eq!(methods[..2], ["initialize", "session/new"]);
}

#[test]
fn editor_save_hooks_rewrite_the_written_file() {
    let mut steps = handshake();
    steps.extend([
        json!({"recv": "session/prompt"}),
        json!({"send": {"jsonrpc": "2.0", "id": "w", "method": "fs/write_text_file",
                        "params": {"sessionId": "ses_1", "path": "${work}/a.json",
                                   "content": "{  \n  \"a\": 1\n}"}}}),
        json!({"await_response": "w"}),
        json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
    ]);
    let mut case = Case::mutant(&steps, "editor-save-hooks");
    let file = case.path("a.json");
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "write");
    assert_eq!(case.wait_type("turn")["state"], "completed");
    assert_eq!(
        std::fs::read_to_string(&file).expect("written"),
        "{\n  \"a\": 1\n}\n"
    );
    case.finish();
}
