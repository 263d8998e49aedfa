use std::path::Path;

use super::*;
use crate::profile::{Profile, Profiles};

fn profiles() -> Profiles {
    let mut set = Profiles::new();
    set.insert(
        Profile::parse(
            "tests/fixtures/test-agent@1.0.toml",
            include_str!("../../tests/fixtures/test-agent@1.0.toml"),
        )
        .unwrap(),
    );
    set
}

const HEAD: &str = r#"[scenario]
id = "t"
title = "T"
agent = "test-agent"
version = "1.0"
profile = "test-agent@1.0"
provenance = ["tests"]
"#;

fn ok(body: &str) -> Scenario {
    let text = format!("{HEAD}{body}");
    parse("t.toml", &text, &profiles()).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses `HEAD + body`, expects an error, and checks it points at the `nth` occurrence of
/// `marker` in the text (found independently by searching) and mentions `words`.
#[track_caller]
fn err_at(body: &str, marker: &str, nth: usize, words: &str) {
    let text = format!("{HEAD}{body}");
    let e = parse("t.toml", &text, &profiles()).unwrap_err();
    let offset = text
        .match_indices(marker)
        .nth(nth)
        .unwrap_or_else(|| panic!("marker {marker:?} not in text"))
        .0;
    let (line, col) = SourceText::new(&text).line_col(offset);
    assert_eq!(
        (e.line, e.col),
        (line, col),
        "error {e} should point at {marker:?} ({line}:{col})"
    );
    assert!(e.message.contains(words), "{e} should mention {words:?}");
    assert!(e.to_string().starts_with(&format!("t.toml:{line}:{col}: ")));
}

const PERM: &str = r#"
[[step]]
handshake = true

[[step]]
expect = "session/prompt"
as = "prompt"

[[step]]
send = '''{"jsonrpc":"2.0","id":"${id}","method":"session/request_permission",
  "params":{"sessionId":"${sessionId}","options":"${profile.options}","toolCall":{"toolCallId":"${toolCallId}"}}}'''
as = "perm"
"#;

#[test]
fn the_shipped_scenarios_parse() {
    let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"));
    let (scenarios, errors) = load_dir(dir);
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert!(!scenarios.is_empty());
    // Deterministic order: sorted by path.
    let paths: Vec<_> = scenarios.iter().map(|s| s.path.clone()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted);
}

#[test]
fn a_full_scenario_parses_into_typed_steps() {
    let s = ok(&format!(
        r#"{PERM}
[[step]]
user = "choose"
request = "perm"
kind = "allow_always"

[[step]]
await = "perm"
timeout_ms = 250

[[step.on]]
selected = ["allow_once"]
then = [{{ send = '{{"jsonrpc":"2.0","method":"x"}}' }}, {{ delay_ms = 5 }}]

[[step.on]]
option = ["cancel"]

[[step.on]]
otherwise = true

[[step]]
reply_to = "prompt"
result = '{{"stopReason":"end_turn"}}'
"#
    ));
    assert_eq!(s.key(), "test-agent@1.0/t");
    assert_eq!(s.steps.len(), 6);
    assert_eq!(s.steps[0].kind, StepKind::Handshake);
    assert_eq!(s.steps[0].line, 9);
    let StepKind::Await { alias, cases, .. } = &s.steps[4].kind else {
        panic!("step 5 is an await")
    };
    assert_eq!(alias, "perm");
    assert_eq!(s.steps[4].timeout, Some(Duration::from_millis(250)));
    assert_eq!(cases.len(), 3);
    assert_eq!(cases[0].when, When::Selected(vec!["allow_once".into()]));
    assert_eq!(cases[0].then.len(), 2);
    assert_eq!(cases[0].then[1].label, "5.1.2");
    assert_eq!(cases[0].then[1].top, 5);
    assert_eq!(
        cases[0].then[1].kind,
        StepKind::Delay(Duration::from_millis(5))
    );
    assert_eq!(cases[1].when, When::Option(vec!["cancel".into()]));
    assert_eq!(s.cases().len(), 1);
    assert_eq!(s.cases()[0].id, "test-agent@1.0/t");
    assert_eq!(
        s.cases()[0].step_ref(&s.steps[4]),
        format!("step 5 (t.toml:{})", s.steps[4].line)
    );
}

#[test]
fn each_expands_into_one_case_per_offered_option() {
    let s = ok(&format!(
        "{PERM}\n[[step]]\nuser = \"choose\"\nrequest = \"perm\"\neach = true\n\n[[step]]\nawait = \"perm\"\n"
    ));
    let ids: Vec<String> = s.cases().into_iter().map(|c| c.id).collect();
    assert_eq!(
        ids,
        [
            "test-agent@1.0/t[once]",
            "test-agent@1.0/t[always_project]",
            "test-agent@1.0/t[always_user]",
            "test-agent@1.0/t[cancel]"
        ]
    );
    assert_eq!(s.cases()[3].each_option.as_deref(), Some("cancel"));
}

#[test]
fn toml_syntax_errors_have_positions() {
    err_at("[[step]]\nsend = 'abc\n", "\n", 8, "literal string");
}

#[test]
fn unknown_and_missing_fields() {
    err_at(
        "[[step]]\ndelay_ms = 1\nbogus = 2\n",
        "bogus",
        0,
        "unknown field `bogus`",
    );
    err_at(
        &format!(
            "{PERM}\n[[step]]\nawait = \"perm\"\n[[step.on]]\ncancelled = true\nthen = []\nfoo = 1\n"
        ),
        "foo",
        0,
        "unknown field `foo`",
    );
    let text = "[scenario]\nid = \"t\"\nagent = \"a\"\nversion = \"1\"\nprovenance = [\"x\"]\n[[step]]\ndelay_ms = 1\n";
    let e = parse("t.toml", text, &profiles()).unwrap_err();
    assert_eq!((e.line, e.col), (1, 1));
    assert!(e.message.contains("missing field `title`"), "{e}");
    err_at("", "[scenario]", 0, "at least one [[step]]");
    let e = parse(
        "t.toml",
        &HEAD.replace("provenance = [\"tests\"]", "provenance = []"),
        &profiles(),
    )
    .unwrap_err();
    assert!(e.message.contains("provenance"), "{e}");
}

#[test]
fn bad_ids_are_refused() {
    let text = format!(
        "{}[[step]]\ndelay_ms = 1\n",
        HEAD.replace("id = \"t\"", "id = \"Bad Id\"")
    );
    let e = parse("t.toml", &text, &profiles()).unwrap_err();
    assert_eq!((e.line, e.col), (2, 6), "{e}");
}

#[test]
fn a_step_needs_exactly_one_kind() {
    err_at(
        "[[step]]\ntimeout_ms = 5\n",
        "[[step]]",
        0,
        "exactly one of handshake",
    );
    err_at(
        "[[step]]\nexpect = \"x\"\nsend = '{}'\n",
        "'{}'",
        0,
        "expect and send",
    );
    err_at(
        "[[step]]\nsend = '{}'\nreply = '{}'\n",
        "'{}'",
        1,
        "`reply` does not belong in a `send` step",
    );
    err_at(
        "[[step]]\nuser = \"prompt\"\ntext = \"hi\"\nrequest = \"x\"\n",
        "\"x\"",
        0,
        "does not belong in user = \"prompt\"",
    );
}

#[test]
fn invalid_json_points_into_the_frame() {
    // '''-strings drop the newline after the opening delimiter: the error is on the next line.
    err_at(
        "[[step]]\nsend = '''\n{\"jsonrpc\":\"2.0\",\n \"method\": x}'''\n",
        "x}",
        0,
        "invalid JSON in `send`",
    );
    err_at("[[step]]\nsend = '{\"a\":1,}'\n", "}'", 0, "invalid JSON");
    // Basic strings have escapes: the error points at the string.
    err_at(
        "[[step]]\nsend = \"{\\\"a\\\":}\"\n",
        "\"{",
        0,
        "invalid JSON",
    );
}

#[test]
fn the_case_folders_from_the_root_are_built_in_and_not_settable() {
    let s = ok("[[step]]\nuser = \"prompt\"\ntext = '${cwdFromRoot} ${outsideFromRoot}'\n");
    let filled = s
        .fill_text(
            "${cwdFromRoot}|${outsideFromRoot}|${cwd}",
            std::path::Path::new("/tmp/r/proj"),
            std::path::Path::new("/tmp/r/outside"),
        )
        .unwrap();
    assert_eq!(filled, "tmp/r/proj|tmp/r/outside|/tmp/r/proj");
    err_at(
        "[vars]\ncwdFromRoot = \"x\"\n[[step]]\ndelay_ms = 1\n",
        "\"x\"",
        0,
        "set by the harness",
    );
}

#[test]
fn unknown_template_variables_are_parse_errors() {
    err_at(
        "[[step]]\nsend = '''{\"jsonrpc\":\"2.0\",\"method\":\"m\",\n\"params\":{\"a\":\"${cwd}/${nope}\"}}'''\n",
        "${nope}",
        0,
        "unknown variable `${nope}`",
    );
    err_at(
        "[vars]\nf = '${cwd}/${later}'\nlater = \"x\"\n[[step]]\ndelay_ms = 1\n",
        "${later}",
        0,
        "unknown variable",
    );
    // In a basic string (escapes possible) the error points at the string.
    err_at(
        "[vars]\nf = \"${later}\"\n[[step]]\ndelay_ms = 1\n",
        "\"${later}",
        0,
        "unknown variable",
    );
    err_at(
        "[[step]]\nuser = \"prompt\"\ntext = 'hello ${who}'\n",
        "${who}",
        0,
        "unknown variable",
    );
    // Captured names are known after their step, not before.
    err_at(
        "[[step]]\nsend = '{\"v\":\"${x}\"}'\n[[step]]\nexpect = \"m\"\ncapture = { x = \"/params/x\" }\n[[step]]\nsend = '{\"v\":\"${x}\"}'\n",
        "${x}",
        0,
        "unknown variable `${x}`",
    );
    ok(
        "[[step]]\nexpect = \"m\"\ncapture = { x = \"/params/x\" }\n[[step]]\nsend = '{\"v\":\"${x}\",\"w\":\"$${y}\"}'\n",
    );
    err_at(
        "[[step]]\nsend = '{\"v\":\"${unterminated\"}'\n",
        "${unterminated",
        0,
        "unterminated",
    );
}

#[test]
fn id_and_profile_variables_have_rules() {
    err_at(
        "[[step]]\nsend = '{\"id\":\"${id}\",\"method\":\"m\",\"params\":{\"n\":\"${id}\"}}'\n",
        "${id}",
        1,
        "only valid as the whole \"id\"",
    );
    err_at(
        "[[step]]\nexpect = \"m\"\nreply = '{\"v\":\"${id}\"}'\n",
        "${id}",
        0,
        "only valid as the whole \"id\"",
    );
    err_at(
        "[[step]]\nsend = '{\"v\":\"x ${profile.options}\"}'\n",
        "${profile.options}",
        0,
        "whole JSON string",
    );
    err_at(
        "[[step]]\nsend = '{\"v\":\"${profile.nope}\"}'\n",
        "${profile.nope}",
        0,
        "has no frame `nope`",
    );
}

#[test]
fn aliases_must_be_defined_earlier() {
    err_at(
        "[[step]]\nawait = \"perm\"\n",
        "\"perm\"",
        0,
        "names no request",
    );
    err_at(
        &format!("[[step]]\nawait = \"perm\"\n{PERM}"),
        "\"perm\"",
        0,
        "names no request",
    );
    err_at(
        "[[step]]\nreply_to = \"prompt\"\nresult = '{}'\n",
        "\"prompt\"",
        0,
        "names no client request",
    );
    err_at(
        "[[step]]\nuser = \"choose\"\nrequest = \"p\"\nkind = \"allow_once\"\n",
        "\"p\"",
        0,
        "names no request",
    );
    err_at(
        "[[step]]\nuser = \"cancel\"\npending = \"p\"\n",
        "\"p\"",
        0,
        "names no request",
    );
}

#[test]
fn choose_must_name_an_offered_option() {
    err_at(
        &format!("{PERM}[[step]]\nuser = \"choose\"\nrequest = \"perm\"\noption = \"never\"\n"),
        "\"never\"",
        0,
        "does not offer option \"never\"",
    );
    err_at(
        &format!(
            "{PERM}[[step]]\nuser = \"choose\"\nrequest = \"perm\"\nkind = \"reject_always\"\n"
        ),
        "\"reject_always\"",
        0,
        "offers no option of kind",
    );
    err_at(
        &format!("{PERM}[[step]]\nuser = \"choose\"\nrequest = \"perm\"\nkind = \"allow\"\n"),
        "\"allow\"",
        0,
        "unknown option kind",
    );
    err_at(
        &format!("{PERM}[[step]]\nawait = \"perm\"\n[[step.on]]\noption = [\"once\", \"twice\"]\n"),
        "\"twice\"",
        0,
        "does not offer option \"twice\"",
    );
    err_at(
        &format!(
            "{PERM}[[step]]\nuser = \"choose\"\nrequest = \"perm\"\nkind = \"allow_once\"\neach = true\n"
        ),
        "\"choose\"",
        0,
        "exactly one of `kind`, `option`, `each = true`",
    );
    err_at(
        &format!(
            "{PERM}[[step]]\nuser = \"choose\"\nrequest = \"perm\"\neach = true\n[[step]]\nuser = \"choose\"\nrequest = \"perm\"\neach = true\n"
        ),
        "true",
        2,
        "only one `each = true`",
    );
    // Options from an inline array are checked too.
    err_at(
        "[[step]]\nsend = '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"session/request_permission\",\"params\":{\"options\":[{\"optionId\":\"a\",\"kind\":\"allow_once\",\"name\":\"A\"}]}}'\nas = \"p\"\n[[step]]\nuser = \"choose\"\nrequest = \"p\"\noption = \"b\"\n",
        "\"b\"",
        0,
        "(it offers: \"a\")",
    );
}

#[test]
fn on_cases_have_one_condition() {
    err_at(
        &format!("{PERM}[[step]]\nawait = \"perm\"\n[[step.on]]\ncancelled = true\nerror = true\n"),
        "true",
        2,
        "exactly one condition",
    );
    err_at(
        &format!("{PERM}[[step]]\nawait = \"perm\"\n[[step.on]]\nthen = []\n"),
        "[[step.on]]",
        0,
        "needs one of selected",
    );
    err_at(
        &format!("{PERM}[[step]]\nawait = \"perm\"\n[[step.on]]\nselected = [\"allow\"]\n"),
        "\"allow\"",
        0,
        "unknown option kind",
    );
}

#[test]
fn handshake_needs_a_profile_and_profiles_must_exist() {
    let text = format!(
        "{}[[step]]\nhandshake = true\n",
        HEAD.replace("profile = \"test-agent@1.0\"\n", "")
    );
    let e = parse("t.toml", &text, &profiles()).unwrap_err();
    assert!(e.message.contains("set `profile"), "{e}");
    let text = format!(
        "{}[[step]]\ndelay_ms = 1\n",
        HEAD.replace("test-agent@1.0", "nobody@9")
    );
    let e = parse("t.toml", &text, &profiles()).unwrap_err();
    assert!(
        e.message
            .contains("unknown profile `nobody@9` (known: test-agent@1.0)"),
        "{e}"
    );
    assert_eq!((e.line, e.col), (6, 11));
}

#[test]
fn family_is_optional_and_checked() {
    let text = format!("{}[[step]]\ndelay_ms = 1\n", HEAD);
    assert_eq!(
        parse("t.toml", &text, &profiles()).unwrap().meta.family,
        None
    );
    let with = |family: &str| {
        format!(
            "{}[[step]]\ndelay_ms = 1\n",
            HEAD.replace(
                "[scenario]\n",
                &format!("[scenario]\nfamily = \"{family}\"\n")
            )
        )
    };
    let scenario = parse("t.toml", &with("cancel"), &profiles()).unwrap();
    assert_eq!(scenario.meta.family, Some(Family::Cancel));
    let e = parse("t.toml", &with("permission"), &profiles()).unwrap_err();
    assert!(
        e.message
            .contains("unknown family \"permission\" (known: setup, tool-calls, permissions,"),
        "{e}"
    );
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn faults_are_checked() {
    err_at(
        "[[step]]\nfault = \"melt\"\n",
        "\"melt\"",
        0,
        "unknown fault",
    );
    err_at(
        "[[step]]\nfault = \"split\"\n",
        "\"split\"",
        0,
        "needs `frame",
    );
    err_at(
        "[[step]]\nfault = \"raw\"\nframe = '{}'\n",
        "'{}'",
        0,
        "does not belong",
    );
    // (The 0 after the two in HEAD's "1.0".)
    err_at(
        "[[step]]\nfault = \"split\"\nframe = '{}'\nat = 0\n",
        "0",
        2,
        "at least 1",
    );
    let s = ok("[[step]]\nfault = \"raw\"\nline = 'not json ${x}'\n");
    assert_eq!(
        s.steps[0].kind,
        StepKind::Fault(Fault::Raw {
            line: "not json ${x}".into()
        })
    );
}

/// `fault = "crash"`: SIGTERM by default, followed by user prompts only, no frame, a known signal.
#[test]
fn crash_steps_are_checked() {
    let s = ok("[[step]]\ndelay_ms = 1\n\n[[step]]\nfault = \"crash\"\n");
    assert_eq!(s.steps[1].kind, StepKind::Crash(CrashSignal::Term));
    let s = ok("[[step]]\nfault = \"crash\"\nsignal = \"SIGKILL\"\n");
    assert_eq!(s.steps[0].kind, StepKind::Crash(CrashSignal::Kill));
    err_at(
        "[[step]]\nfault = \"crash\"\n\n[[step]]\ndelay_ms = 1\n",
        "[[step]]",
        1,
        "only `user = \"prompt\"` steps can follow fault = \"crash\"",
    );
    // The user may still type a prompt after the agent died (into a session it never opened).
    let s = ok(
        "[[step]]\nuser = \"new_session\"\n\n[[step]]\nfault = \"crash\"\n\n[[step]]\nuser = \"prompt\"\ntext = \"hi\"\n",
    );
    assert_eq!(s.steps[1].kind, StepKind::Crash(CrashSignal::Term));
    err_at(
        "[[step]]\nfault = \"crash\"\n\n[[step]]\nuser = \"prompt\"\ntext = \"hi\"\n\n[[step]]\nuser = \"new_session\"\n",
        "[[step]]",
        2,
        "only `user = \"prompt\"` steps can follow",
    );
    err_at(
        "[[step]]\nfault = \"crash\"\nsignal = \"SIGHUP\"\n",
        "\"SIGHUP\"",
        0,
        "unknown signal \"SIGHUP\" (signals: SIGTERM, SIGKILL)",
    );
    err_at(
        "[[step]]\nfault = \"crash\"\nframe = '{}'\n",
        "'{}'",
        0,
        "does not belong in fault = \"crash\"",
    );
    err_at(
        "[[step]]\nfault = \"split\"\nframe = '{}'\nsignal = \"SIGKILL\"\n",
        "\"SIGKILL\"",
        0,
        "only in fault = \"crash\"",
    );
    err_at(
        &format!(
            "{PERM}\n[[step]]\nawait = \"perm\"\n[[step.on]]\nselected = [\"allow_once\"]\n[[step.on.then]]\nfault = \"crash\"\n"
        ),
        "[[step.on.then]]",
        0,
        "cannot be inside an `on` case",
    );
}

#[test]
fn files_must_be_utf8() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    let mut bytes = format!("{HEAD}[[step]]\n").into_bytes();
    bytes.extend_from_slice(b"delay_ms = 1 # caf\xe9\n");
    std::fs::write(&path, bytes).unwrap();
    let e = load_with(&path, &profiles()).unwrap_err();
    assert_eq!((e.line, e.col), (9, 19), "{e}");
    assert!(e.message.contains("UTF-8"));
}

#[test]
fn load_dir_checks_layout_and_ignores_other_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let good = format!("{HEAD}[[step]]\ndelay_ms = 1\n");
    std::fs::create_dir_all(root.join("test-agent/1.0")).unwrap();
    std::fs::create_dir_all(root.join("elsewhere")).unwrap();
    std::fs::write(root.join("README.md"), "not a scenario").unwrap();
    std::fs::write(root.join("test-agent/1.0/notes.txt"), "ignored").unwrap();
    std::fs::write(root.join("test-agent/1.0/t.toml"), &good).unwrap();
    std::fs::write(root.join("elsewhere/t.toml"), &good).unwrap();
    std::fs::write(root.join("test-agent/1.0/broken.toml"), "[scenario\n").unwrap();
    let (scenarios, errors) = load_dir_with(root, &profiles());
    assert_eq!(scenarios.len(), 1);
    assert_eq!(scenarios[0].key(), "test-agent@1.0/t");
    assert_eq!(scenarios[0].meta.title, "T");
    let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains(
            "elsewhere/t.toml:1:1: scenario `test-agent@1.0/t` must live at `test-agent/1.0/t.toml`"
        ),
        "{}",
        errors[0]
    );
    assert!(errors[1].contains("broken.toml:1:"), "{}", errors[1]);
}

#[test]
fn helpers_for_the_harness() {
    let s = ok(&format!(
        "[vars]\nsessionId = \"ses_over\"\nfile = \"${{cwd}}/a.md\"\n{PERM}\n[[step]]\nuser = \"new_session\"\nsession = \"s2\"\n[[step]]\nuser = \"prompt\"\ntext = \"edit ${{file}}\"\n"
    ));
    assert_eq!(s.first_prompt().as_deref(), Some("edit ${file}"));
    assert_eq!(
        s.fill_text("edit ${file}", Path::new("/w"), Path::new("/o")),
        Ok("edit /w/a.md".to_owned())
    );
    assert_eq!(s.session_ids(), [("s2".to_owned(), "ses_over".to_owned())]);
    // Without [vars], the profile's session id.
    let s = ok(PERM);
    assert_eq!(s.session_ids(), [("s1".to_owned(), "ses_test".to_owned())]);
    assert_eq!(s.first_prompt(), None);
    assert_eq!(s.all_steps().len(), 3);
}

#[test]
fn recordings_are_relative_json_paths() {
    let with = |list: &str| format!("{HEAD}recording = {list}\n[[step]]\ndelay_ms = 1\n");
    let s = parse(
        "t.toml",
        &with(r#"["codex-acp/data/a.json", "claude-agent-acp/plain/b.jsonl"]"#),
        &profiles(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        s.meta.recording,
        ["codex-acp/data/a.json", "claude-agent-acp/plain/b.jsonl"]
    );
    assert!(ok("[[step]]\ndelay_ms = 1\n").meta.recording.is_empty());
    for bad in ["/abs/a.json", "a/../b.json", "a/b.txt", "", "a//b.json"] {
        let text = with(&format!("[{bad:?}]"));
        let e = parse("t.toml", &text, &profiles()).unwrap_err();
        assert_eq!(e.line, 8, "{bad}: {e}");
        assert!(e.message.contains("`recording` entries"), "{bad}: {e}");
    }
}

#[test]
fn on_timeout_takes_nested_steps_on_expect_only_and_go_on_is_for_await() {
    let s = ok(r#"
[[step]]
expect = "session/prompt"
as = "prompt"

[[step]]
expect = "session/cancel"
timeout_ms = 100
on_timeout = [ { reply_to = "prompt", result = '{"stopReason":"end_turn"}' } ]
"#);
    let StepKind::Expect(e) = &s.steps[1].kind else {
        panic!("expect step")
    };
    let steps = e.on_timeout.as_ref().expect("on_timeout steps");
    assert_eq!(steps[0].label, "2.0.1");
    assert_eq!(s.all_steps().len(), 3);
    let s = ok(r#"
[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"fs/write_text_file","params":{"sessionId":"s","path":"/p","content":""}}'
as = "write"

[[step]]
await = "write"
timeout_ms = 1000
go_on = true
"#);
    let StepKind::Await { go_on, .. } = &s.steps[1].kind else {
        panic!("await step")
    };
    assert!(go_on);
    err_at(
        "[[step]]\nsend = '{\"jsonrpc\":\"2.0\",\"id\":\"${id}\",\"method\":\"x\"}'\nas = \"r\"\n\n[[step]]\nawait = \"r\"\non_timeout = []\n",
        "[]",
        0,
        "does not belong in a `await` step",
    );
    err_at(
        "[[step]]\ndelay_ms = 1\non_timeout = []\n",
        "[]",
        0,
        "does not belong in a `delay_ms` step",
    );
}

fn scenarios_root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"))
}

/// The coverage matrix of scenarios/README.md: its `(agent, version)` columns and its rows, each
/// row's cells split (the family name first).
fn coverage_matrix() -> (Vec<(String, String)>, Vec<Vec<String>>) {
    let readme =
        std::fs::read_to_string(scenarios_root().join("README.md")).expect("scenarios/README.md");
    let table: Vec<String> = readme
        .lines()
        .skip_while(|l| !l.starts_with("### Coverage matrix"))
        .skip(1)
        // The matrix ends at the next heading (the generated protocol-surface table follows).
        .take_while(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with('|'))
        .map(str::to_owned)
        .collect();
    assert!(table.len() > 2, "no coverage matrix in scenarios/README.md");
    let cells = |row: &str| -> Vec<String> {
        row.trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_owned())
            .collect()
    };
    let header = cells(&table[0]);
    let columns: Vec<(String, String)> = header[1..]
        .iter()
        .map(|h| {
            let (agent, version) = h.rsplit_once(' ').expect("`agent version` header");
            (agent.to_owned(), version.to_owned())
        })
        .collect();
    let rows: Vec<Vec<String>> = table[2..].iter().map(|r| cells(r)).collect();
    for row in &rows {
        assert_eq!(
            row.len(),
            columns.len() + 1,
            "row has the wrong number of cells: {row:?}"
        );
    }
    (columns, rows)
}

/// The scenario ids a cell names (backticked, `[option]` suffix dropped); none for a "—" cell.
fn named_ids(cell: &str) -> Vec<&str> {
    if cell.starts_with('—') {
        return Vec::new();
    }
    cell.split('`')
        .skip(1)
        .step_by(2)
        .map(|name| name.split('[').next().unwrap_or(name))
        .collect()
}

/// The coverage matrix in scenarios/README.md: every cell names scenarios of that column's agent
/// version that exist (an `[option]` suffix names one run of an `each` scenario), or starts with
/// "—" and says why the agent does not do this.
#[test]
fn coverage_matrix_cells_name_existing_scenarios() {
    let root = scenarios_root();
    let (columns, rows) = coverage_matrix();
    let mut problems = Vec::new();
    for cells in &rows {
        for ((agent, version), cell) in columns.iter().zip(&cells[1..]) {
            let named = named_ids(cell);
            if named.is_empty() && !cell.starts_with('—') {
                problems.push(format!(
                    "{} / {agent} {version}: names no scenario: {cell:?}",
                    cells[0]
                ));
            }
            for id in named {
                let file = root.join(agent).join(version).join(format!("{id}.toml"));
                if !file.is_file() {
                    problems.push(format!(
                        "{} / {agent} {version}: no scenario `{id}`",
                        cells[0]
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The families of issue 11 (what a client decides by itself): each has its row in the matrix,
/// and every `deceptive-*` / `remembered-*` scenario of a profiled version is named in its column,
/// so a scenario cannot be added (or lost) without the matrix saying so.
#[test]
fn decision_families_are_in_the_coverage_matrix() {
    const ROWS: &[&str] = &[
        "deceptive: kindless request for an announced execute titled like a read",
        "deceptive: request kind read for a tool announced as execute",
        "deceptive: other write outside the workspace",
        "deceptive: read outside the workspace",
        "deceptive: path leaving the workspace through ..",
        "deceptive: sibling directory with the workspace's name as prefix",
        "deceptive: fetch of an external URL",
        "deceptive: switch_mode to a permissive mode",
        "deceptive: symlink in the workspace pointing outside",
        "remembered allow_always, then another kind",
    ];
    let (columns, rows) = coverage_matrix();
    let mut problems = Vec::new();
    for family in ROWS {
        if !rows.iter().any(|r| r[0] == *family) {
            problems.push(format!("no row `{family}` in the coverage matrix"));
        }
    }
    for (i, (agent, version)) in columns.iter().enumerate() {
        let named: Vec<&str> = rows
            .iter()
            .filter(|r| ROWS.contains(&r[0].as_str()))
            .flat_map(|r| named_ids(&r[i + 1]))
            .collect();
        let dir = scenarios_root().join(agent).join(version);
        for entry in std::fs::read_dir(&dir).expect("scenario folder").flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".toml") else {
                continue;
            };
            if (id.starts_with("deceptive-") || id.starts_with("remembered-"))
                && !named.contains(&id)
            {
                problems.push(format!(
                    "{agent} {version}: `{id}` is not named in the decision rows"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_misspelt_required_capability_is_an_error_not_a_silent_not_applicable() {
    err_at(
        "requires = [\"fs.writeTextfile\"]\n[[step]]\nhandshake = true\n",
        "\"fs.writeTextfile\"",
        0,
        "unknown client capability \"fs.writeTextfile\"",
    );
    let s = ok(
        "requires = [\"fs.writeTextFile\", \"_meta.acme.preview\"]\n[[step]]\nhandshake = true\n",
    );
    assert_eq!(s.meta.requires, ["fs.writeTextFile", "_meta.acme.preview"]);
}

#[test]
fn an_as_name_used_twice_is_an_error() {
    let body = format!(
        "{PERM}\n[[step]]\nsend = '{{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"method\":\"session/request_permission\",\"params\":{{}}}}'\nas = \"perm\"\n"
    );
    err_at(&body, "\"perm\"", 1, "`as` name \"perm\" is already used");
    let body = format!("{PERM}\n[[step]]\nexpect = \"session/prompt\"\nas = \"prompt\"\n");
    err_at(&body, "\"prompt\"", 1, "already used");
}

const STEP: &str = "\n[[step]]\ndelay_ms = 1\n";

#[test]
fn setup_entries_are_parsed_in_file_order_and_created_in_the_case_dir() {
    let s = ok(&format!(
        r#"
[vars]
evil = "${{cwd}}-evil"

[[setup]]
symlink = "${{cwd}}/docs"
target = "${{outside}}"

[[setup]]
dir = "${{evil}}"

[[setup]]
file = "${{cwd}}/src/README.md"
content = "hello ${{sessionId}}\n"
{STEP}"#
    ));
    assert_eq!(
        s.setup.iter().map(|e| e.entry.key()).collect::<Vec<_>>(),
        ["symlink", "dir", "file"]
    );
    let dir = tempfile::tempdir().unwrap();
    let (cwd, outside) = (dir.path().join("work"), dir.path().join("outside"));
    std::fs::create_dir(&cwd).unwrap();
    std::fs::create_dir(&outside).unwrap();
    let created = setup::create(&s, &cwd, &outside).unwrap();
    assert_eq!(created.len(), 3);
    assert_eq!(std::fs::read_link(cwd.join("docs")).unwrap(), outside);
    assert!(dir.path().join("work-evil").is_dir());
    assert_eq!(
        std::fs::read_to_string(cwd.join("src/README.md")).unwrap(),
        "hello ses_test\n"
    );
    // Nothing is overwritten: a second run over the same directory fails at the first entry.
    let again = setup::create(&s, &cwd, &outside).unwrap_err();
    assert!(
        again.contains("t.toml:") && again.contains("File exists"),
        "{again}"
    );
}

#[test]
fn setup_without_a_case_dir_is_refused_rather_than_created_in_a_project() {
    let s = ok(&format!("\n[[setup]]\ndir = \"${{cwd}}-evil\"\n{STEP}"));
    // A person's project and the standalone `${outside}` tempdir have different parents.
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("proj");
    std::fs::create_dir(&project).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let e = setup::create(&s, &project, elsewhere.path()).unwrap_err();
    assert!(e.contains("share no case directory"), "{e}");
    assert!(!home.path().join("proj-evil").exists());
}

#[test]
fn bad_setup_entries_are_errors_at_their_place() {
    err_at(
        &format!("\n[[setup]]\ndir = \"/etc/acp\"\n{STEP}"),
        "\"/etc/acp\"",
        0,
        "must lie inside the case directory",
    );
    err_at(
        &format!("\n[[setup]]\ndir = \"${{cwd}}/./x\"\n{STEP}"),
        "\"${cwd}/./x\"",
        0,
        "must not contain `.` or `..`",
    );
    err_at(
        &format!("\n[[setup]]\nsymlink = \"${{cwd}}/d\"\ntarget = \"docs\"\n{STEP}"),
        "\"docs\"",
        0,
        "must be an absolute path",
    );
    err_at(
        &format!("\n[[setup]]\ndir = \"${{cwd}}\"\n{STEP}"),
        "\"${cwd}\"",
        0,
        "which the harness creates itself",
    );
    err_at(
        &format!("\n[[setup]]\nsymlink = \"${{cwd}}/d\"\n{STEP}"),
        "[[setup]]",
        0,
        "needs `target",
    );
    err_at(
        &format!("\n[[setup]]\ndir = \"${{cwd}}/a\"\nfile = \"${{cwd}}/b\"\n{STEP}"),
        "\"${cwd}/b\"",
        0,
        "creates one thing",
    );
    err_at(
        &format!("\n[[setup]]\ndir = \"${{cwd}}/a\"\ncontent = \"x\"\n{STEP}"),
        "\"x\"",
        0,
        "`content` does not belong in a `dir` entry",
    );
    err_at(
        &format!("\n[[setup]]\ndir = \"${{cwd}}/a\"\n\n[[setup]]\nfile = \"${{cwd}}/a\"\n{STEP}"),
        "\"${cwd}/a\"",
        1,
        "already creates",
    );
    err_at(
        &format!("\n[[setup]]\ndir = \"${{nope}}/a\"\n{STEP}"),
        "\"${nope}",
        0,
        "unknown variable",
    );
}

const CREATE: &str = r#"
[[step]]
handshake = true

[[step]]
send = '{"jsonrpc":"2.0","id":"${id}","method":"terminal/create","params":{"sessionId":"s","command":"true"}}'
as = "create"
"#;

#[test]
fn await_binds_values_of_the_answer_for_later_steps() {
    let s = ok(&format!(
        r#"{CREATE}
[[step]]
await = "create"
bind = {{ terminalId = "/terminalId" }}

[[step.on]]
otherwise = true
then = [ {{ send = '{{"jsonrpc":"2.0","method":"x/y","params":{{"t":"${{terminalId}}"}}}}' }} ]

[[step]]
send = '{{"jsonrpc":"2.0","id":"${{id}}","method":"terminal/release","params":{{"sessionId":"s","terminalId":"${{terminalId}}"}}}}'
as = "release"
"#
    ));
    let StepKind::Await { bind, .. } = &s.steps[2].kind else {
        panic!("step 3 is an await")
    };
    assert_eq!(bind, &vec![("terminalId".into(), "/terminalId".into())]);
}

#[test]
fn bind_is_checked_at_parse_time() {
    // A bound name is unknown before its await.
    err_at(
        &format!(
            r#"{CREATE}
[[step]]
send = '{{"jsonrpc":"2.0","method":"x/y","params":{{"t":"${{terminalId}}"}}}}'

[[step]]
await = "create"
bind = {{ terminalId = "/terminalId" }}
"#
        ),
        "${terminalId}",
        0,
        "terminalId",
    );
    err_at(
        &format!("{CREATE}\n[[step]]\nawait = \"create\"\nbind = {{ t = \"terminalId\" }}\n"),
        "\"terminalId\" }",
        0,
        "not a JSON pointer",
    );
    err_at(
        &format!("{CREATE}\n[[step]]\nawait = \"create\"\nbind = {{ cwd = \"/x\" }}\n"),
        "\"/x\"",
        0,
        "set by the harness",
    );
    // Only `await` takes `bind`.
    err_at(
        &format!("{CREATE}\n[[step]]\nexpect = \"x/y\"\nbind = {{ t = \"/x\" }}\n"),
        "{ t",
        0,
        "bind",
    );
}

/// The "Families" table of scenarios/README.md: family id → (heading, matrix row names).
fn families_table() -> Vec<(String, String, Vec<String>)> {
    let readme =
        std::fs::read_to_string(scenarios_root().join("README.md")).expect("scenarios/README.md");
    readme
        .lines()
        .skip_while(|l| !l.starts_with("### Families"))
        .skip(1)
        .take_while(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 3, "a Families row has 3 cells: {l}");
            let rows = cells[2].split(" · ").map(str::to_owned).collect();
            (
                cells[0].trim_matches('`').to_owned(),
                cells[1].to_owned(),
                rows,
            )
        })
        .collect()
}

/// Every family is in the README's Families table, once, with the heading the report prints;
/// every coverage-matrix row belongs to exactly one family ("every `deceptive:` row" stands for the
/// rows starting so); every shipped scenario names a family, and one the matrix agrees with: the
/// family of a row that names its id (in any version's column), when a row does.
#[test]
fn families_follow_the_coverage_matrix() {
    let table = families_table();
    let ids: Vec<&str> = table.iter().map(|(id, _, _)| id.as_str()).collect();
    let all: Vec<&str> = Family::ALL.iter().map(|f| f.id()).collect();
    assert_eq!(
        ids, all,
        "the Families table lists every family once, in order"
    );
    for (id, heading, _) in &table {
        let family = Family::from_id(id).unwrap();
        assert_eq!(heading, family.title(), "heading of `{id}`");
    }
    let (_, rows) = coverage_matrix();
    let family_of_row = |row: &str| -> Vec<Family> {
        table
            .iter()
            .filter(|(_, _, names)| {
                names.iter().any(|n| {
                    n == row || (n == "every `deceptive:` row" && row.starts_with("deceptive: "))
                })
            })
            .map(|(id, _, _)| Family::from_id(id).unwrap())
            .collect()
    };
    let mut problems = Vec::new();
    for row in &rows {
        let families = family_of_row(&row[0]);
        if families.len() != 1 {
            problems.push(format!(
                "matrix row `{}` belongs to {} families in the Families table",
                row[0],
                families.len()
            ));
        }
    }
    let (scenarios, errors) = load_dir(scenarios_root());
    assert!(errors.is_empty(), "{errors:?}");
    for scenario in &scenarios {
        let meta = &scenario.meta;
        let Some(family) = meta.family else {
            problems.push(format!("{}: no `family`", scenario.path.display()));
            continue;
        };
        let naming: Vec<Family> = rows
            .iter()
            .filter(|r| {
                r[1..]
                    .iter()
                    .any(|cell| named_ids(cell).contains(&meta.id.as_str()))
            })
            .flat_map(|r| family_of_row(&r[0]))
            .collect();
        if !naming.is_empty() && !naming.contains(&family) {
            problems.push(format!(
                "{}@{}/{}: family `{}`, but the matrix rows naming it are {:?}",
                meta.agent,
                meta.version,
                meta.id,
                family.id(),
                naming.iter().map(|f| f.id()).collect::<Vec<_>>()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
