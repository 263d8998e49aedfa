//! The fast path must read exactly what the toml crate reads (values and spans: `Spanned`'s
//! `Debug` shows both), and decline whatever toml would refuse.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::super::raw::RawFile;
use super::read;

/// What the toml crate makes of `text`, as the parser read it before the fast path.
fn by_toml(text: &str) -> Result<String, String> {
    toml::from_str::<RawFile>(text)
        .map(|raw| format!("{raw:?}"))
        .map_err(|e| e.to_string())
}

/// Asserts the property for one text: if the fast path reads it, toml reads it to the same.
/// Returns whether the fast path took it.
#[track_caller]
fn same_as_toml(text: &str) -> bool {
    let Some(fast) = read(text) else {
        return false;
    };
    match by_toml(text) {
        Ok(slow) => assert_eq!(format!("{fast:?}"), slow, "read differently:\n{text}"),
        Err(e) => panic!("the fast path accepted what toml refuses ({e}):\n{text}"),
    }
    true
}

/// A scenario shaped like the bench's generated one (`harness/src/bench/generate.rs`), with
/// every kind of scalar the fast path takes.
fn generated(updates: usize) -> String {
    let mut text = String::from(
        r#"# generated
[scenario]
id = "updates"
title = "Updates"
agent = "test-agent"
version = "1.0"
profile = "test-agent@1.0"
provenance = [
  "tests",
]

[[step]]
user = "new_session"

[[step]]
handshake = true # a comment

[[step]]
user = "prompt"
text = "Run the tests"

[[step]]
expect = "session/prompt"
as = "prompt"
timeout_ms = 2500
"#,
    );
    for i in 0..updates {
        let _ = write!(
            text,
            r#"
[[step]]
send = '{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"${{sessionId}}","update":{{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"in_progress","content":[{{"type":"content","content":{{"type":"text","text":"test t{i} ... ok"}}}}]}}}}}}'
"#
        );
    }
    text.push_str(
        "\n  [[step]]  # indented\n\tdelay_ms\t=\t0\n\n[[step]]\nreply_to = \"prompt\"\nresult = '{\"stopReason\":\"end_turn\"}'",
    );
    text
}

fn shipped_scenarios() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "toml") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios")),
        &mut out,
    );
    out.sort();
    out
}

#[test]
fn a_generated_stream_of_sends_takes_the_fast_path_and_reads_as_toml_does() {
    let text = generated(50);
    assert!(same_as_toml(&text), "the fast path declined:\n{text}");
    let raw = read(&text).unwrap();
    assert_eq!(raw.step.as_ref().map(Vec::len), Some(4 + 50 + 2));
}

#[test]
fn a_long_tail_read_in_two_halves_reads_as_toml_does() {
    let text = generated(1200);
    assert!(
        text.len() > super::PARALLEL_FROM_BYTES + 4096,
        "{} bytes",
        text.len()
    );
    assert!(same_as_toml(&text), "the fast path declined");
    assert_eq!(
        read(&text).unwrap().step.map(|s| s.len()),
        Some(4 + 1200 + 2)
    );
    // A line in the second half it does not take: the whole file is declined.
    let broken = text.replacen("test t1100 ... ok\"}}]}}}'", "x\"}}]}}}'\ncapture = {}", 1);
    assert_ne!(broken, text);
    assert!(read(&broken).is_none());
}

#[test]
fn a_long_tail_of_multibyte_text_is_cut_at_a_character() {
    // Frames of mostly three-byte characters, and a comment at the end long enough to put the
    // tail's middle byte inside one.
    let text = generated(1200).replace("... ok", &"✓".repeat(200));
    let start = text.find("\n[[step]]").unwrap() + 1;
    let padded = (0..2000)
        .map(|pad| format!("{text}\n#{}", "x".repeat(pad)))
        .find(|t| !t.is_char_boundary(start + (t.len() - start) / 2))
        .expect("a padding that puts the middle inside a character");
    assert!(same_as_toml(&padded), "the fast path declined");
}

#[test]
fn every_shipped_scenario_reads_as_toml_does_when_the_fast_path_takes_it() {
    let files = shipped_scenarios();
    assert!(files.len() > 100, "{} scenario files", files.len());
    let mut taken = 0;
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        if same_as_toml(&text) {
            taken += 1;
        }
    }
    // Many hand-written scenarios use multi-line strings or `on` cases (declined), but not all.
    assert!(
        taken > 0,
        "the fast path took none of {} files",
        files.len()
    );
}

/// Byte-level edits of a valid file at every place of it: whatever the fast path still takes,
/// toml must take too, to the same values and spans.
#[test]
fn mutated_files_are_read_as_toml_does_or_declined() {
    let base = generated(2);
    let snippets = [
        "",
        "\r",
        "\n",
        "'",
        "\"",
        "\\",
        "#",
        "\t",
        " ",
        "[",
        "]",
        "[[step]]\n",
        "=",
        ".",
        "x",
        "0",
        "1",
        "-",
        "_",
        "e",
        "\u{1}",
        "\u{7f}",
        "'''",
        "true",
        "\"\"\"",
        "é",
        "step = 1\n",
        "send = 'x'\n",
        "as = 2\n",
    ];
    let mut taken = 0;
    let mut declined = 0;
    for at in (0..=base.len()).filter(|&i| base.is_char_boundary(i)) {
        for snippet in snippets {
            // An empty snippet means: delete the character at `at`.
            let mut text = base.clone();
            if snippet.is_empty() {
                if at == base.len() {
                    continue;
                }
                text.remove(at);
            } else {
                text.insert_str(at, snippet);
            }
            if same_as_toml(&text) {
                taken += 1;
            } else {
                declined += 1;
            }
        }
    }
    assert!(
        taken > 1000 && declined > 1000,
        "{taken} taken, {declined} declined"
    );
}

#[test]
fn what_it_declines() {
    let head = "[scenario]\nid = \"t\"\n";
    for tail in [
        "[[step]]\nsend = '''x'''\n",
        "[[step]]\ntext = \"a\\tb\"\n",
        "[[step]]\ncapture = { a = \"/b\" }\n",
        "[[step]]\nsend = 'x'\nsend = 'y'\n",
        "[[step]]\nhandshake = 1\n",
        "[[step]]\ndelay_ms = 1_000\n",
        "[[step]]\ndelay_ms = -1\n",
        "[[step]]\n\"send\" = 'x'\n",
        "[[step]]\n[[step.on]]\n",
        "[[step]]\r\nhandshake = true\r\n",
        "[[step]]\nsend = 'x' y\n",
        "[[step]]\nunknown = 'x'\n",
    ] {
        let text = format!("{head}{tail}");
        assert!(read(&text).is_none(), "took:\n{text}");
    }
    // No `[[step]]` at a line start, or a head toml refuses: the whole file goes to toml.
    assert!(read(head).is_none());
    assert!(read("[scenario\n[[step]]\nhandshake = true\n").is_none());
    assert!(read("step = []\n[scenario]\n[[step]]\nhandshake = true\n").is_none());
}
