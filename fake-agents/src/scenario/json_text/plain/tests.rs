//! What the compact reader takes, it reads to what `serde_json`'s reading gives; it takes the
//! frames a long scenario is made of, and declines everything it cannot mirror.

use super::super::{Compiled, compile_by_serde};
use super::compile;

/// The frames of the benchmark's generated scenario (harness/src/bench/generate.rs) and a few
/// more shapes: templates whole, spliced and in several places, nested arrays, every literal,
/// keys that a JSON pointer escapes, text that is not ASCII.
const FRAMES: &[&str] = &[
    r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"${sessionId}","update":{"sessionUpdate":"tool_call_update","toolCallId":"${toolCallId}","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"test t7 ... ok"}}]}}}"#,
    r#"{"jsonrpc":"2.0","id":"${id}","method":"session/request_permission","params":{"sessionId":"${sessionId}","toolCall":{"toolCallId":"${toolCallId}","title":"cargo test","kind":"execute","status":"pending","rawInput":{"command":"cargo test"}},"options":"${profile.permission_options}"}}"#,
    r#"{"a":[[1,[true,false,null]],{"d/e~":"x${n}y","k":"$${lit} ${p}-${q}"}],"n":0,"big":1234567890123456789,"é":"😀 ünïcode","e":{},"l":[]}"#,
    r#"[{"a":{"b":{"c":{"d":["${deep}"]}}}},{"a":"${shallow}"},"${bad name}","${open"]"#,
    r#""${whole}""#,
    r#"{"x":{"a":1},"y":{"a":2},"a":3}"#,
];

/// One-character edits: inserted at every place of every frame (and every character deleted).
const SNIPPETS: &[&str] = &[
    " ", "\n", "\t", "\"", "\\", "\\n", "\u{1}", "\u{7f}", "{", "}", "[", "]", ",", ":", "0", "7",
    "-", ".", "e", "E", "$", "${", "}}", "x", "é", "true", "nul", "\"a\":1,", "\"a\"",
];

fn same(fast: &Compiled, slow: &Compiled) -> bool {
    fast.frame == slow.frame && fast.is_object == slow.is_object && fast.uses == slow.uses
}

/// Checks one text: what the reader takes, serde reads without error to the same. Returns
/// whether the reader took it.
fn agrees(text: &str) -> bool {
    let Some(fast) = compile(text) else {
        return false;
    };
    let slow = compile_by_serde(text)
        .unwrap_or_else(|e| panic!("taken, but serde refuses it ({e}): {text}"));
    assert!(same(&fast, &slow), "read differently: {text}");
    true
}

#[test]
fn the_frames_of_a_long_scenario_are_taken_and_read_as_serde_reads_them() {
    for frame in FRAMES {
        assert!(agrees(frame), "declined: {frame}");
    }
}

#[test]
fn every_one_character_edit_is_declined_or_read_as_serde_reads_it() {
    let (mut taken, mut declined) = (0, 0);
    for frame in FRAMES {
        let places: Vec<usize> = (0..=frame.len())
            .filter(|&i| frame.is_char_boundary(i))
            .collect();
        for (n, &at) in places.iter().enumerate() {
            let mut edits: Vec<String> = SNIPPETS
                .iter()
                .map(|s| format!("{}{s}{}", &frame[..at], &frame[at..]))
                .collect();
            if let Some(&next) = places.get(n + 1) {
                edits.push(format!("{}{}", &frame[..at], &frame[next..]));
            }
            for text in &edits {
                if agrees(text) {
                    taken += 1;
                } else {
                    declined += 1;
                }
            }
        }
    }
    // Both ways are exercised: the edits are not all refused, nor all taken.
    assert!(taken > 1_000, "taken {taken}");
    assert!(declined > 1_000, "declined {declined}");
}

#[test]
fn what_compact_text_cannot_mirror_is_declined_and_read_by_serde() {
    for text in [
        r#"{"a": 1}"#,
        "{\"a\":1}\n",
        r#"{"a":"\u0041"}"#,
        r#"{"a":"x\"y"}"#,
        r#"{"a":-1}"#,
        r#"{"a":1.5}"#,
        r#"{"a":1e3}"#,
        r#"{"a":01}"#,
        r#"{"a":12345678901234567890}"#,
        "{\"a\":\"\u{7f}\"}",
        r#"{"a":1,"a":2}"#,
        r#"{"${k}":1}"#,
        r#"{"a":1,}"#,
        r#"[1,]"#,
        r#"{"a"}"#,
        "",
        "tru",
        "nullx",
    ] {
        assert!(compile(text).is_none(), "taken: {text:?}");
        // The caller's reading is serde's, errors included.
        let ours = super::super::compile(text).map(|c| (c.frame, c.is_object, c.uses));
        let serde = compile_by_serde(text).map(|c| (c.frame, c.is_object, c.uses));
        assert_eq!(
            ours.as_ref().map_err(ToString::to_string),
            serde.as_ref().map_err(ToString::to_string),
            "{text:?}"
        );
    }
}

#[test]
fn deep_nesting_is_left_to_serde_and_its_limit() {
    let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    assert!(compile(&nested(super::MAX_DEPTH)).is_some());
    assert!(compile(&nested(super::MAX_DEPTH + 1)).is_none());
    let too_deep = nested(1_000);
    let error = super::super::compile(&too_deep)
        .err()
        .expect("serde's limit");
    assert_eq!(
        error.to_string(),
        compile_by_serde(&too_deep).err().unwrap().to_string()
    );
}
