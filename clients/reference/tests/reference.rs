//! The reference behaviour of `acp-reference-client`, driven through its control plane against
//! `scripted-agent`.

mod common;

use common::{Case, handshake, permission, three_options, update};
use serde_json::{Value, json};

fn script(steps: &[Vec<Value>]) -> Vec<Value> {
    steps.concat()
}

#[test]
fn hello_comes_first_and_validates() {
    let mut case = Case::start(&[]);
    let hello = case.expect("hello");
    assert_eq!(hello["protocol"], "acp-harness-control");
    assert_eq!(hello["version"], 1);
    assert_eq!(hello["client"]["name"], "acp-reference-client");
    assert_eq!(
        hello["supports"],
        json!([
            "new_session",
            "prompt",
            "choose",
            "cancel",
            "load_session",
            "resume_session",
            "list_sessions",
            "close_session",
            "set_mode",
            "set_config_option"
        ])
    );
    let done = case.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.rest.is_empty(), "{:?}", done.rest);
}

#[test]
fn stdin_eof_is_a_shutdown() {
    let mut case = Case::start(&handshake());
    case.expect("hello");
    case.open_session("s1");
    case.close_stdin();
    let done = case.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert_eq!(done.sent("initialize").len(), 1);
}

#[test]
fn edit_permission_is_a_file_change_with_every_option_and_the_choice_is_sent_verbatim() {
    let tool_call = json!({
        "sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "Edit notes.md",
        "kind": "edit", "status": "pending",
        "content": [{"type": "diff", "path": "/w/notes.md", "oldText": "a", "newText": "b"}],
        "locations": [{"path": "/w/notes.md"}]
    });
    let mut case = Case::start(&script(&[
        handshake(),
        vec![
            json!({"recv": "session/prompt"}),
            update(tool_call),
            // opencode-style: the request says `other`; the announced `edit` stands.
            permission(
                json!(0),
                json!({"toolCallId": "call_1", "kind": "other", "title": "/w"}),
                three_options(),
            ),
            json!({"await_response": 0}),
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                          "status": "in_progress"}),
            ),
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_1",
                          "status": "completed"}),
            ),
            json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
        ],
    ]));
    case.expect("hello");
    let session_id = case.open_session("s1");
    assert_eq!(session_id, "ses_1");
    case.prompt("s1", "edit notes.md");

    let item = case.expect("item");
    assert_eq!(
        item,
        json!({"type": "item", "sessionId": "ses_1", "toolCallId": "call_1",
               "itemType": "file_change", "status": "pending", "title": "Edit notes.md"})
    );
    // The request's title replaces the item's title (a field present replaces).
    let item = case.expect("item");
    assert_eq!(
        (&item["itemType"], &item["title"]),
        (&json!("file_change"), &json!("/w"))
    );
    let approval = case.expect("approval");
    assert_eq!(
        approval,
        json!({"type": "approval", "sessionId": "ses_1", "requestId": 0, "toolCallId": "call_1",
               "subject": "file_change", "options": [
                   {"optionId": "once", "label": "Allow once"},
                   {"optionId": "always", "label": "Always allow"},
                   {"optionId": "reject", "label": "Reject"}]})
    );

    case.send(json!({"type": "choose", "requestId": 0, "optionId": "always"}));
    let resolved = case.expect("approval_resolved");
    assert_eq!(
        resolved,
        json!({"type": "approval_resolved", "sessionId": "ses_1", "requestId": 0,
               "outcome": "selected", "optionId": "always", "by": "user"})
    );
    let item = case.expect("item");
    assert_eq!(
        (&item["itemType"], &item["status"]),
        (&json!("file_change"), &json!("in_progress"))
    );
    let item = case.expect("item");
    assert_eq!(
        (&item["itemType"], &item["status"]),
        (&json!("file_change"), &json!("completed"))
    );
    let turn = case.expect("turn");
    assert_eq!(
        turn,
        json!({"type": "turn", "sessionId": "ses_1", "state": "completed", "stopReason": "end_turn"})
    );

    let cwd = case.cwd();
    let done = case.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.rest.is_empty(), "{:?}", done.rest);
    let init = done.sent("initialize");
    assert_eq!(init.len(), 1);
    assert_eq!(init[0]["id"], 0);
    assert_eq!(init[0]["params"]["protocolVersion"], 1);
    assert_eq!(
        init[0]["params"]["clientCapabilities"],
        json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true})
    );
    assert_eq!(
        init[0]["params"]["clientInfo"]["name"],
        "acp-reference-client"
    );
    let new = done.sent("session/new");
    assert_eq!(new[0]["params"], json!({"cwd": cwd, "mcpServers": []}));
    let prompt = done.sent("session/prompt");
    assert_eq!(
        prompt[0]["params"],
        json!({"sessionId": "ses_1", "prompt": [{"type": "text", "text": "edit notes.md"}]})
    );
    assert_eq!(
        done.answer(&json!(0)),
        [&json!({"jsonrpc": "2.0", "id": 0,
                 "result": {"outcome": {"outcome": "selected", "optionId": "always"}}})]
    );
    assert!(done.sent("session/cancel").is_empty());
}

#[test]
fn every_offered_option_can_be_chosen_and_comes_back_verbatim() {
    // qwen offers `cancel` as a reject_once option; two options share the name "Allow".
    let options = json!([
        {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "proceed_always", "name": "Allow", "kind": "allow_always"},
        {"optionId": "second_once", "name": "Allow", "kind": "allow_once"},
        {"optionId": "reject_forever", "name": "Never", "kind": "reject_always"},
        {"optionId": "cancel", "name": "Cancel", "kind": "reject_once"}
    ]);
    let ids: Vec<Value> = vec![
        json!(5),
        json!("perm-b"),
        Value::Null,
        json!("perm-d"),
        json!(-3),
    ];
    let choices = [
        "proceed_once",
        "proceed_always",
        "second_once",
        "reject_forever",
        "cancel",
    ];
    // One kind per tool call: the user's allow_always on the second must not let the client
    // answer the later ones by itself (a remembered grant covers its own kind only).
    let kinds = ["execute", "edit", "delete", "move", "fetch"];
    let mut steps = handshake();
    steps.push(json!({"recv": "session/prompt"}));
    for (i, id) in ids.iter().enumerate() {
        let call = format!("call_{i}");
        steps.push(update(
            json!({"sessionUpdate": "tool_call", "toolCallId": call,
                                 "title": "rm -rf build", "kind": kinds[i],
                                 "rawInput": {"command": "rm -rf build"}}),
        ));
        steps.push(permission(
            id.clone(),
            json!({"toolCallId": call}),
            options.clone(),
        ));
        steps.push(json!({"await_response": id}));
    }
    steps.push(json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}));
    let mut case = Case::start(&steps);
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "clean");

    let subjects = [
        "command",
        "file_change",
        "file_change",
        "file_change",
        "fetch",
    ];
    for (i, (id, choice)) in ids.iter().zip(choices).enumerate() {
        let item = case.expect("item");
        assert_eq!(item["itemType"], subjects[i]);
        let approval = case.expect("approval");
        assert_eq!(approval["requestId"], *id);
        assert_eq!(approval["subject"], subjects[i]);
        let offered: Vec<&Value> = approval["options"]
            .as_array()
            .expect("options")
            .iter()
            .map(|o| &o["optionId"])
            .collect();
        assert_eq!(
            offered,
            options
                .as_array()
                .expect("array")
                .iter()
                .map(|o| &o["optionId"])
                .collect::<Vec<_>>()
        );
        let mut labels: Vec<&str> = approval["options"]
            .as_array()
            .expect("options")
            .iter()
            .map(|o| o["label"].as_str().expect("label"))
            .collect();
        assert_eq!(labels[0], "Allow (allow once) [proceed_once]");
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(
            labels.len(),
            5,
            "labels must be distinguishable: {approval}"
        );

        if i == 0 {
            // Errors first: an unknown request id (same value, other JSON type) and an
            // option that was not offered. Neither answers the request.
            let seq = case.send(json!({"type": "choose", "requestId": "5", "optionId": choice}));
            let error = case.expect("error");
            assert_eq!(error["seq"], seq);
            let seq = case.send(json!({"type": "choose", "requestId": 5, "optionId": "allow"}));
            let error = case.expect("error");
            assert_eq!(error["seq"], seq);
        }
        case.send(json!({"type": "choose", "requestId": id, "optionId": choice}));
        let resolved = case.expect("approval_resolved");
        assert_eq!(resolved["requestId"], *id);
        assert_eq!(resolved["optionId"], choice);
        assert_eq!(resolved["outcome"], "selected");
    }
    // Choosing again for an answered request is an error, not a second answer.
    let seq = case.send(json!({"type": "choose", "requestId": 5, "optionId": "proceed_once"}));
    let error = case.wait_type("error");
    assert_eq!(error["seq"], seq);

    let done = case.finish();
    assert!(done.status.success());
    for (id, choice) in ids.iter().zip(choices) {
        let answers = done.answer(id);
        assert_eq!(answers.len(), 1, "request {id} answered exactly once");
        assert_eq!(
            answers[0]["result"],
            json!({"outcome": {"outcome": "selected", "optionId": choice}})
        );
    }
}

#[test]
fn cancel_answers_pending_approval_cancelled_sends_session_cancel_and_ends_cancelled() {
    let mut case = Case::start(&script(&[
        handshake(),
        vec![
            json!({"recv": "session/prompt"}),
            update(
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "ls",
                          "kind": "execute", "rawInput": {"command": "ls"}}),
            ),
            permission(json!(7), json!({"toolCallId": "t1"}), three_options()),
            json!({"recv": "session/cancel"}),
            json!({"await_response": 7}),
            // Spec #49/#50: updates after the cancel, before the prompt response.
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                          "status": "failed"}),
            ),
            json!({"respond": "session/prompt", "result": {"stopReason": "cancelled"}}),
        ],
    ]));
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "list");
    let item = case.expect("item");
    assert_eq!(item["itemType"], "command");
    let approval = case.expect("approval");
    assert_eq!(approval["subject"], "command");

    case.send(json!({"type": "cancel", "session": "s1"}));
    let resolved = case.expect("approval_resolved");
    assert_eq!(
        resolved,
        json!({"type": "approval_resolved", "sessionId": "ses_1", "requestId": 7,
               "outcome": "cancelled", "by": "cancel"})
    );
    let item = case.expect("item");
    assert_eq!(
        (&item["itemType"], &item["status"]),
        (&json!("command"), &json!("cancelled"))
    );
    let item = case.expect("item");
    assert_eq!(
        (&item["itemType"], &item["status"]),
        (&json!("command"), &json!("failed"))
    );
    let turn = case.expect("turn");
    assert_eq!(
        turn,
        json!({"type": "turn", "sessionId": "ses_1", "state": "cancelled", "stopReason": "cancelled"})
    );
    // The card is gone: choosing now is an error.
    case.send(json!({"type": "choose", "requestId": 7, "optionId": "once"}));
    case.expect("error");

    let done = case.finish();
    assert!(done.status.success());
    let cancels = done.sent("session/cancel");
    assert_eq!(cancels.len(), 1);
    assert_eq!(cancels[0]["params"], json!({"sessionId": "ses_1"}));
    assert!(
        cancels[0].get("id").is_none(),
        "session/cancel is a notification"
    );
    assert_eq!(
        done.answer(&json!(7)),
        [&json!({"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "cancelled"}}})]
    );
}

#[test]
fn a_request_arriving_after_cancel_is_answered_cancelled() {
    let mut case = Case::start(&script(&[
        handshake(),
        vec![
            json!({"recv": "session/prompt"}),
            json!({"recv": "session/cancel"}),
            permission(
                json!("late"),
                json!({"toolCallId": "t9", "kind": "edit", "title": "w"}),
                three_options(),
            ),
            json!({"await_response": "late"}),
            json!({"respond": "session/prompt", "result": {"stopReason": "cancelled"}}),
        ],
    ]));
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "go");
    case.send(json!({"type": "cancel", "session": "s1"}));
    case.expect("item");
    case.expect("approval");
    let resolved = case.expect("approval_resolved");
    assert_eq!(
        (&resolved["outcome"], &resolved["by"]),
        (&json!("cancelled"), &json!("cancel"))
    );
    assert_eq!(case.expect("turn")["state"], "cancelled");
    let done = case.finish();
    assert_eq!(
        done.answer(&json!("late"))[0]["result"],
        json!({"outcome": {"outcome": "cancelled"}})
    );
}

#[test]
fn permission_before_or_instead_of_tool_call_and_the_other_kind_fallbacks() {
    let options = three_options();
    let mut case = Case::start(&script(&[
        handshake(),
        vec![
            json!({"recv": "session/prompt"}),
            // codex Rust: the request comes before the tool_call.
            permission(
                json!(1),
                json!({"toolCallId": "a", "kind": "edit"}),
                options.clone(),
            ),
            update(
                json!({"sessionUpdate": "tool_call", "toolCallId": "a", "title": "Edit a",
                          "kind": "edit"}),
            ),
            // qwen: the request is the only announcement.
            permission(
                json!(2),
                json!({"toolCallId": "b", "title": "Write b", "kind": "edit",
                                         "content": [{"type": "diff", "path": "/w/b", "newText": "x"}]}),
                options.clone(),
            ),
            // opencode external_directory: kind other, locations = [file, dir].
            permission(
                json!(3),
                json!({"toolCallId": "c", "title": "/outside", "kind": "other",
                                         "locations": [{"path": "/outside/f"}, {"path": "/outside"}]}),
                options.clone(),
            ),
            // other + rawInput.command → command; nothing at all → generic.
            permission(
                json!(4),
                json!({"toolCallId": "d", "title": "x", "rawInput": {"command": "make"}}),
                options.clone(),
            ),
            permission(json!(5), json!({"toolCallId": "e", "title": "?"}), options),
            json!({"respond": "session/prompt", "result": {"stopReason": "max_tokens"}}),
        ],
    ]));
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "go");
    let mut expected = vec![
        ("a", "file_change"),
        ("b", "file_change"),
        ("c", "file_change"),
        ("d", "command"),
        ("e", "generic"),
    ]
    .into_iter();
    let (mut types, mut subjects) = (Vec::new(), Vec::new());
    loop {
        let event = case.next();
        match event["type"].as_str() {
            Some("item") => types.push((event["toolCallId"].clone(), event["itemType"].clone())),
            Some("approval") => {
                let (id, subject) = expected.next().expect("an expected approval");
                assert_eq!(event["toolCallId"], id);
                assert_eq!(event["subject"], subject, "{event}");
                subjects.push((event["toolCallId"].clone(), event["subject"].clone()));
            }
            Some("turn") => {
                assert_eq!(event["state"], "completed");
                break;
            }
            _ => panic!("unexpected {event}"),
        }
    }
    // Items: created by the request (with no title: the id is shown), then retitled by the
    // tool_call; every item keeps the approval's type.
    assert_eq!(types.len(), 6);
    for (id, item_type) in &types {
        let subject = subjects.iter().find(|(s, _)| s == id).map(|(_, t)| t);
        assert_eq!(
            Some(item_type),
            subject,
            "item {id} agrees with its approval"
        );
    }
    let first_a: Vec<&Value> = case
        .seen
        .iter()
        .filter(|e| e["type"] == "item" && e["toolCallId"] == "a")
        .map(|e| &e["title"])
        .collect();
    assert_eq!(first_a, [&json!("a"), &json!("Edit a")]);
    case.finish();
}

#[test]
fn fs_requests_and_unknown_requests_are_answered_and_garbage_is_tolerated() {
    let file_s = "${work}/new/dir/out.txt";
    let missing = "${work}/missing.txt";
    let content = "line 1\r\nline 2\nline 3 é\n\ttab \u{0}nul";
    let mut case = Case::start(&script(&[
        handshake(),
        vec![
            json!({"recv": "session/prompt"}),
            json!({"send_raw": "this is not json"}),
            json!({"send_raw": "[1, 2, 3]"}),
            json!({"send_raw": "{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}"}),
            json!({"send": {"jsonrpc": "2.0", "method": "_vendor/unknown", "params": {}}}),
            json!({"send": {"jsonrpc": "2.0", "id": "w1", "method": "fs/write_text_file",
                            "params": {"sessionId": "ses_1", "path": file_s, "content": content}}}),
            json!({"await_response": "w1"}),
            json!({"send": {"jsonrpc": "2.0", "id": 2, "method": "fs/read_text_file",
                            "params": {"sessionId": "ses_1", "path": file_s, "line": 2, "limit": 2}}}),
            json!({"await_response": 2}),
            json!({"send": {"jsonrpc": "2.0", "id": 3, "method": "fs/read_text_file",
                            "params": {"sessionId": "ses_1", "path": "relative.txt"}}}),
            json!({"await_response": 3}),
            json!({"send": {"jsonrpc": "2.0", "id": 4, "method": "fs/read_text_file",
                            "params": {"sessionId": "ses_1", "path": missing}}}),
            json!({"await_response": 4}),
            json!({"send": {"jsonrpc": "2.0", "id": null, "method": "_vendor/query",
                            "params": {"sessionId": "ses_1"}}}),
            json!({"await_response": null}),
            json!({"send": {"jsonrpc": "2.0", "id": 6, "method": "fs/write_text_file",
                            "params": {"sessionId": "ses_1", "path": "rel.txt", "content": "x"}}}),
            json!({"await_response": 6}),
            json!({"respond": "session/prompt", "result": {"stopReason": "end_turn"}}),
        ],
    ]));
    let file = case.path("new/dir/out.txt");
    let missing = case.path("missing.txt").to_string_lossy().into_owned();
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "files");
    assert_eq!(case.expect("turn")["state"], "completed");
    // The turn ended after every fs request was answered: the files are final.
    assert_eq!(
        std::fs::read(&file).expect("file written"),
        content.as_bytes()
    );
    assert!(!case.dir.path().join("rel.txt").exists());
    let done = case.finish();
    assert!(done.status.success());
    assert_eq!(done.answer(&json!("w1"))[0]["result"], json!({}));
    assert_eq!(
        done.answer(&json!(2))[0]["result"],
        json!({"content": "line 2\nline 3 é\n"})
    );
    assert_eq!(done.answer(&json!(3))[0]["error"]["code"], -32602);
    let not_found = &done.answer(&json!(4))[0]["error"];
    assert_eq!(not_found["code"], -32002);
    assert_eq!(not_found["data"], json!({"uri": missing}));
    assert_eq!(done.answer(&Value::Null)[0]["error"]["code"], -32601);
    assert_eq!(done.answer(&json!(6))[0]["error"]["code"], -32602);
    // Nothing answered the notification or the stray response.
    assert!(done.answer(&json!(99)).is_empty());
}

#[test]
fn turn_end_states_follow_the_stop_reason_or_the_error() {
    let mut case = Case::start(&script(&[
        handshake(),
        vec![
            json!({"recv": "session/prompt", "error": {"code": -32603, "message": "model overloaded"}}),
            json!({"recv": "session/prompt", "result": {"stopReason": "refusal"}}),
            json!({"recv": "session/prompt", "result": {"stopReason": "max_turn_requests"}}),
        ],
    ]));
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "one");
    let turn = case.expect("turn");
    assert_eq!(turn["state"], "failed");
    assert!(
        turn["message"]
            .as_str()
            .expect("message")
            .contains("model overloaded")
    );
    case.prompt("s1", "two");
    let turn = case.expect("turn");
    assert_eq!(
        (&turn["state"], &turn["stopReason"]),
        (&json!("refused"), &json!("refusal"))
    );
    case.prompt("s1", "three");
    assert_eq!(case.expect("turn")["state"], "completed");
    // Stop in an idle session does nothing: the next event answers the next command.
    case.send(json!({"type": "cancel", "session": "s1"}));
    let seq = case.send(json!({"type": "prompt", "session": "nope", "text": "x"}));
    assert_eq!(case.expect("error")["seq"], seq);
    let done = case.finish();
    assert!(done.status.success());
    assert!(done.sent("session/cancel").is_empty());
}

#[test]
fn two_sessions_reusing_a_tool_call_id_stay_apart() {
    let options = three_options();
    let perm = |session: &str, id: i64| {
        json!({"send": {"jsonrpc": "2.0", "id": id, "method": "session/request_permission",
                        "params": {"sessionId": session, "toolCall": {"toolCallId": "same"},
                                   "options": options}}})
    };
    let tool_call = |session: &str, kind: &str| {
        json!({"send": {"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": session,
            "update": {"sessionUpdate": "tool_call", "toolCallId": "same", "title": kind, "kind": kind}}}})
    };
    let mut case = Case::start(&[
        json!({"recv": "initialize", "result": {"protocolVersion": 1}}),
        json!({"recv": "session/new", "result": {"sessionId": "A"}}),
        json!({"recv": "session/new", "result": {"sessionId": "B"}}),
        json!({"recv": "session/prompt", "as": "pa"}),
        json!({"recv": "session/prompt", "as": "pb"}),
        tool_call("A", "edit"),
        tool_call("B", "execute"),
        perm("A", 10),
        perm("B", 11),
        json!({"recv": "session/cancel"}),
        json!({"await_response": 10}),
        json!({"respond": "pa", "result": {"stopReason": "cancelled"}}),
        json!({"await_response": 11}),
        json!({"respond": "pb", "result": {"stopReason": "end_turn"}}),
    ]);
    case.expect("hello");
    assert_eq!(case.open_session("a"), "A");
    assert_eq!(case.open_session("b"), "B");
    case.prompt("a", "x");
    case.prompt("b", "y");
    let approvals: Vec<Value> = (0..2).map(|_| case.wait_type("approval")).collect();
    assert_eq!(
        (
            approvals[0]["sessionId"].clone(),
            approvals[0]["subject"].clone()
        ),
        (json!("A"), json!("file_change"))
    );
    assert_eq!(
        (
            approvals[1]["sessionId"].clone(),
            approvals[1]["subject"].clone()
        ),
        (json!("B"), json!("command"))
    );
    case.send(json!({"type": "cancel", "session": "a"}));
    let resolved = case.expect("approval_resolved");
    assert_eq!(resolved["requestId"], 10);
    let turn = case.wait_type("turn");
    assert_eq!(
        (&turn["sessionId"], &turn["state"]),
        (&json!("A"), &json!("cancelled"))
    );
    case.send(json!({"type": "choose", "requestId": 11, "optionId": "once"}));
    let resolved = case.expect("approval_resolved");
    assert_eq!(
        (&resolved["sessionId"], &resolved["by"]),
        (&json!("B"), &json!("user"))
    );
    let turn = case.expect("turn");
    assert_eq!(
        (&turn["sessionId"], &turn["state"]),
        (&json!("B"), &json!("completed"))
    );
    let done = case.finish();
    assert_eq!(done.sent("session/cancel").len(), 1);
    assert_eq!(
        done.answer(&json!(11))[0]["result"]["outcome"]["optionId"],
        "once"
    );
}

#[test]
fn wrong_protocol_version_is_reported_and_no_session_opens() {
    let mut case = Case::start(&[json!({"recv": "initialize", "result": {"protocolVersion": 2}})]);
    case.expect("hello");
    let cwd = case.cwd();
    let seq = case.send(json!({"type": "new_session", "session": "s1", "cwd": cwd}));
    let error = case.expect("error");
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("protocolVersion")
    );
    let error = case.expect("error");
    assert_eq!(error["seq"], seq);
    let done = case.finish();
    assert!(done.status.success());
    assert!(done.sent("session/new").is_empty());
}

#[test]
fn relative_cwd_and_unknown_sessions_are_errors_not_wire_traffic() {
    let mut case = Case::start(&handshake());
    case.expect("hello");
    let seq = case.send(json!({"type": "new_session", "session": "s1", "cwd": "work"}));
    assert_eq!(case.expect("error")["seq"], seq);
    let seq = case.send(json!({"type": "prompt", "session": "nope", "text": "hi"}));
    assert_eq!(case.expect("error")["seq"], seq);
    let seq = case.send(json!({"type": "cancel", "session": "nope"}));
    assert_eq!(case.expect("error")["seq"], seq);
    let done = case.finish();
    assert!(done.status.success());
    assert!(
        done.agent_log.is_empty(),
        "no agent traffic: {:?}",
        done.agent_log
    );
}

#[test]
fn a_missing_or_invalid_agent_command_is_a_clear_error_and_exit_1() {
    let mut case = Case::start_with(&[], &[], false);
    case.expect("hello");
    let error = case.expect("error");
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("ACP_HARNESS_AGENT")
    );
    let status = case.wait_exit();
    assert_eq!(status.code(), Some(1));
}

#[test]
fn help_lists_the_mutants_and_an_unknown_mutant_exits_2() {
    let out = std::process::Command::new(common::CLIENT)
        .arg("--help")
        .output()
        .expect("run --help");
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for (name, check) in [
        ("always-command", "subject-kind"),
        ("unoffered-option", "offered-options"),
        ("cancel-as-reject", "cancel-stop"),
        ("flip-on-approval", "stable-item-type"),
    ] {
        assert!(help.contains(name) && help.contains(check), "{help}");
    }
    let out = std::process::Command::new(common::CLIENT)
        .args(["--mutant", "nope"])
        .output()
        .expect("run --mutant nope");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown mutant `nope`"));
}

#[test]
fn the_schema_used_by_these_tests_really_rejects_bad_events() {
    let validator = common::schema();
    assert!(validator.is_valid(&json!({"type": "error", "message": "x"})));
    assert!(!validator.is_valid(&json!({"type": "error", "message": "x", "extra": 1})));
    assert!(
        !validator.is_valid(&json!({"type": "item", "sessionId": "s", "toolCallId": "c",
                                         "itemType": "shell", "status": "", "title": ""}))
    );
}

#[test]
fn the_agent_dying_mid_turn_fails_the_turn_and_the_client_lives_on() {
    let mut case = Case::start(&script(&[
        handshake(),
        vec![
            json!({"recv": "session/prompt"}),
            permission(
                json!(0),
                json!({"toolCallId": "t", "kind": "read", "title": "cat"}),
                three_options(),
            ),
            json!({"exit": 3}),
        ],
    ]));
    case.expect("hello");
    case.open_session("s1");
    case.prompt("s1", "read");
    case.expect("item");
    assert_eq!(case.expect("approval")["subject"], "read");
    let turn = case.expect("turn");
    assert_eq!(turn["state"], "failed");
    assert!(
        turn["message"]
            .as_str()
            .expect("message")
            .contains("exited")
    );
    // The card closed with the agent; nothing is sent anywhere.
    let seq = case.send(json!({"type": "choose", "requestId": 0, "optionId": "once"}));
    assert_eq!(case.expect("error")["seq"], seq);
    let seq = case.send(json!({"type": "prompt", "session": "s1", "text": "again"}));
    assert_eq!(case.expect("error")["seq"], seq);
    let done = case.finish();
    assert!(done.status.success(), "{}", done.stderr);
    assert!(done.answer(&json!(0)).is_empty());
}

#[test]
fn an_agent_that_ignores_eof_is_killed_and_reaped_at_shutdown() {
    // The agent records its pid, never reads stdin and never exits by itself.
    let dir = tempfile::tempdir().expect("tempdir");
    let pid_file = dir.path().join("agent.pid");
    let agent = json!([
        "sh",
        "-c",
        format!("echo $$ > '{}'; exec sleep 60", pid_file.display())
    ]);
    let mut case = Case::start_agent(&[], &[], Some(agent));
    case.expect("hello");
    let cwd = case.cwd();
    case.send(json!({"type": "new_session", "session": "s1", "cwd": cwd}));
    let started = std::time::Instant::now();
    let done = case.finish(); // sends shutdown
    assert!(done.status.success(), "{}", done.stderr);
    assert!(started.elapsed() < common::TIMEOUT);
    assert!(done.stderr.contains("killing it"), "{}", done.stderr);
    let pid = std::fs::read_to_string(&pid_file).expect("agent pid");
    let status =
        std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap_or_default();
    // Gone, or at worst a zombie of the exited client re-parented to init: never running.
    assert!(
        status.is_empty() || status.contains("State:\tZ"),
        "agent still alive: {status}"
    );
}

#[test]
fn an_agent_that_cannot_be_spawned_fails_the_session_with_a_reason() {
    let mut case = Case::start_agent(&[], &[], Some(json!(["/nonexistent/agent", "--flag"])));
    case.expect("hello");
    let cwd = case.cwd();
    let seq = case.send(json!({"type": "new_session", "session": "s1", "cwd": cwd}));
    let error = case.expect("error");
    assert_eq!(error["seq"], seq);
    assert!(
        error["message"]
            .as_str()
            .expect("message")
            .contains("cannot spawn agent"),
        "{error}"
    );
    assert!(case.finish().status.success());
}
