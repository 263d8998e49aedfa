//! A scenario long enough for its frames to be compiled ahead reads to the same steps, and
//! reports the same first error at the same place, as the walk alone would.

use std::fmt::Write as _;

use super::{PARALLEL_FROM, split_point};
use crate::profile::{Profile, Profiles};
use crate::scenario::json_text;
use crate::scenario::{ScenarioError, StepKind, parse};
use crate::source::SourceText;

fn profiles() -> Profiles {
    let mut set = Profiles::new();
    set.insert(
        Profile::parse(
            "tests/fixtures/test-agent@1.0.toml",
            include_str!("../../../../tests/fixtures/test-agent@1.0.toml"),
        )
        .unwrap(),
    );
    set
}

const UPDATES: usize = PARALLEL_FROM + 100;

/// The frame of update `i`.
fn update(i: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"${{sessionId}}","update":{{"sessionUpdate":"tool_call_update","toolCallId":"${{toolCallId}}","content":[{{"type":"content","content":{{"type":"text","text":"t{i}"}}}}]}}}}}}"#
    )
}

/// A scenario of [`UPDATES`] `send` steps after a handshake; `frame(i)` may replace the frame
/// of update `i`.
fn scenario(frame: impl Fn(usize) -> Option<String>) -> String {
    let mut text = String::from(
        "[scenario]\nid = \"long\"\ntitle = \"Long\"\nagent = \"test-agent\"\nversion = \"1.0\"\nprofile = \"test-agent@1.0\"\nprovenance = [\"tests\"]\n\n[[step]]\nhandshake = true\n",
    );
    for i in 0..UPDATES {
        let frame = frame(i).unwrap_or_else(|| update(i));
        let _ = write!(text, "\n[[step]]\nsend = '{frame}'\n");
    }
    text
}

fn error_at(text: &str, marker: &str) -> (usize, usize) {
    let offset = text.find(marker).expect("marker in text");
    SourceText::new(text).line_col(offset)
}

fn parse_err(text: &str) -> ScenarioError {
    parse("long.toml", text, &profiles()).unwrap_err()
}

#[test]
fn this_scenario_is_long_enough_to_compile_ahead() {
    assert!(split_point(UPDATES + 1).is_some() || std::thread::available_parallelism().is_err());
    assert_eq!(split_point(PARALLEL_FROM - 1), None);
}

#[test]
fn every_frame_compiled_ahead_is_what_the_walk_compiles() {
    let text = scenario(|_| None);
    let parsed = parse("long.toml", &text, &profiles()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed.steps.len(), UPDATES + 1);
    for (i, step) in parsed.steps[1..].iter().enumerate() {
        let StepKind::Send { frame, alias: None } = &step.kind else {
            panic!("step {} is {:?}", step.label, step.kind);
        };
        let expected = json_text::compile(&update(i)).unwrap().frame;
        assert_eq!(frame, &expected, "step {}", step.label);
        assert_eq!(step.label, (i + 2).to_string());
        // Each step is 3 lines: blank, header, `send`.
        assert_eq!(step.line, 12 + 3 * i);
    }
}

#[test]
fn an_error_in_a_frame_compiled_ahead_is_reported_at_its_place() {
    let late = UPDATES - 3;
    let text = scenario(|i| (i == late).then(|| r#"{"jsonrpc":"2.0",BROKEN}"#.to_owned()));
    let e = parse_err(&text);
    assert_eq!((e.line, e.col), error_at(&text, "BROKEN"), "{e}");
    assert!(e.message.starts_with("invalid JSON in `send`"), "{e}");

    let text = scenario(|i| (i == late).then(|| update(i).replace("${toolCallId}", "${nope}")));
    let e = parse_err(&text);
    assert_eq!((e.line, e.col), error_at(&text, "${nope}"), "{e}");
    assert!(e.message.contains("unknown variable `${nope}`"), "{e}");
}

#[test]
fn of_two_errors_the_first_in_the_file_is_reported() {
    // One in the steps the walk compiles itself, one in those compiled ahead: the first wins.
    let (early, late) = (5, UPDATES - 3);
    let text = scenario(|i| match i {
        _ if i == early => Some(update(i).replace("${toolCallId}", "${early}")),
        _ if i == late => Some(r#"{"jsonrpc":"2.0",BROKEN}"#.to_owned()),
        _ => None,
    });
    let e = parse_err(&text);
    assert_eq!((e.line, e.col), error_at(&text, "${early}"), "{e}");

    // Both compiled ahead: the first of them.
    let (first, second) = (UPDATES - 30, UPDATES - 3);
    let text = scenario(|i| match i {
        _ if i == first => Some(r#"{"jsonrpc":"2.0",FIRST}"#.to_owned()),
        _ if i == second => Some(r#"{"jsonrpc":"2.0",SECOND}"#.to_owned()),
        _ => None,
    });
    let e = parse_err(&text);
    assert_eq!((e.line, e.col), error_at(&text, "FIRST"), "{e}");
}
