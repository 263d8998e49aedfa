//! Reading a case's transcript (JSON Lines, one entry a line; format in harness/RUN_JSON.md).
//!
//! Reading is lenient: a line that is not an entry is kept as [`Line::Unreadable`] so the report
//! still shows everything else, and very large transcripts (a flooding client) are cut at
//! [`MAX_LINES`] with the cut reported.

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

/// Most transcript lines read from one file.
pub const MAX_LINES: usize = 200_000;
/// Longest raw frame kept (characters); longer ones are cut and marked.
pub const MAX_RAW_CHARS: usize = 4_000;

/// One recorded frame.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Frame {
    #[serde(rename = "i")]
    pub index: usize,
    /// Microseconds since the case started.
    #[serde(rename = "t_us", default)]
    pub at_us: u64,
    /// Agent connection (0 for control frames and notes).
    #[serde(default)]
    pub conn: u32,
    /// `c2a`, `a2c`, `h2c`, `c2h` or `note`.
    pub dir: String,
    pub raw: String,
    #[serde(default)]
    pub json: Option<Value>,
    #[serde(default)]
    pub invalid_utf8: bool,
    /// The fault a scenario's `fault` step put into this frame on purpose (`split`,
    /// `duplicate`, `raw`, `invalid`): shown so nobody takes it for the agent's or the client's
    /// mistake. Read as a word, like `dir`, so a newer kind still renders.
    #[serde(default)]
    pub fault: Option<String>,
}

impl Frame {
    /// A few words saying what the frame is: `session/request_permission (id 0)`, `result of
    /// id 0`, `approval`, …
    pub fn summary(&self) -> String {
        match &self.fault {
            Some(fault) => format!("{} (harness fault: {fault})", self.what()),
            None => self.what(),
        }
    }

    /// The screen text a person saw, when the frame carries one: the box, region or match an
    /// observer's `screen` rule read on a full-screen client (an `o2h` event whose `observed.from`
    /// is `screen`), or that client's last screen (the `screen` note). Shown as a screen, not as
    /// a JSON string, next to the frame.
    pub fn screen(&self) -> Option<&str> {
        let json = self.json.as_ref()?;
        match self.dir.as_str() {
            "o2h" if json.pointer("/observed/from")?.as_str()? == "screen" => {
                json.pointer("/observed/evidence")?.as_str()
            }
            "note" if json.get("type")?.as_str()? == "screen" => json.get("text")?.as_str(),
            _ => None,
        }
    }

    fn what(&self) -> String {
        let Some(json) = self.json.as_ref().and_then(Value::as_object) else {
            return if self.invalid_utf8 {
                "not UTF-8".into()
            } else {
                "not JSON".into()
            };
        };
        let id = json.get("id").map(|id| match id {
            Value::String(s) => format!("\"{s}\""),
            other => other.to_string(),
        });
        if let Some(method) = json.get("method").and_then(Value::as_str) {
            let update = json
                .get("params")
                .and_then(|p| p.get("update"))
                .and_then(|u| u.get("sessionUpdate"))
                .and_then(Value::as_str);
            return match (id, update) {
                (Some(id), _) => format!("{method} (id {id})"),
                (None, Some(update)) => format!("{method}: {update}"),
                (None, None) => method.to_owned(),
            };
        }
        if let Some(kind) = json.get("type").and_then(Value::as_str) {
            let detail = ["subject", "itemType", "state", "command"]
                .iter()
                .find_map(|k| json.get(*k).and_then(Value::as_str));
            return match detail {
                Some(d) => format!("{kind}: {d}"),
                None => kind.to_owned(),
            };
        }
        match (id, json.contains_key("error")) {
            (Some(id), true) => format!("error for id {id}"),
            (Some(id), false) => format!("result for id {id}"),
            (None, _) => "JSON".into(),
        }
    }
}

/// One line of a transcript file.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    Frame(Frame),
    /// A line that is not a transcript entry (1-based line number, why).
    Unreadable {
        line: usize,
        error: String,
    },
}

/// A case's transcript as read from disk.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Transcript {
    pub lines: Vec<Line>,
    /// Set when the file had more than [`MAX_LINES`] lines.
    pub cut: bool,
    /// Set when the file could not be read at all (the report says why).
    pub missing: Option<String>,
}

impl Transcript {
    /// A transcript from frames already in memory, cut as [`read`] cuts a file (at
    /// [`MAX_LINES`] frames, each raw frame at [`MAX_RAW_CHARS`]).
    pub fn from_frames(frames: impl IntoIterator<Item = Frame>) -> Transcript {
        let mut transcript = Transcript::default();
        for (n, mut frame) in frames.into_iter().enumerate() {
            if n >= MAX_LINES {
                transcript.cut = true;
                break;
            }
            cut_raw(&mut frame.raw);
            transcript.lines.push(Line::Frame(frame));
        }
        transcript
    }

    pub fn frames(&self) -> impl Iterator<Item = &Frame> {
        self.lines.iter().filter_map(|l| match l {
            Line::Frame(f) => Some(f),
            Line::Unreadable { .. } => None,
        })
    }

    pub fn frame(&self, index: usize) -> Option<&Frame> {
        // Entries are written in index order; fall back to a scan if a file was edited.
        match self.lines.get(index) {
            Some(Line::Frame(f)) if f.index == index => Some(f),
            _ => self.frames().find(|f| f.index == index),
        }
    }
}

/// Reads a transcript file; never fails (a missing file is reported in the result).
pub fn read(path: &Path) -> Transcript {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) => {
            return Transcript {
                missing: Some(format!("cannot read {}: {err}", path.display())),
                ..Transcript::default()
            };
        }
    };
    let mut transcript = Transcript::default();
    for (n, line) in BufReader::new(file).split(b'\n').enumerate() {
        if n >= MAX_LINES {
            transcript.cut = true;
            break;
        }
        let line = match line {
            Ok(line) => line,
            Err(err) => {
                transcript.lines.push(Line::Unreadable {
                    line: n + 1,
                    error: err.to_string(),
                });
                break;
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        transcript
            .lines
            .push(match serde_json::from_slice::<Frame>(&line) {
                Ok(mut frame) => {
                    cut_raw(&mut frame.raw);
                    Line::Frame(frame)
                }
                Err(err) => Line::Unreadable {
                    line: n + 1,
                    error: err.to_string(),
                },
            });
    }
    transcript
}

/// Cuts a raw frame to [`MAX_RAW_CHARS`], saying how much was left out.
fn cut_raw(raw: &mut String) {
    if let Some((at, _)) = raw.char_indices().nth(MAX_RAW_CHARS) {
        let rest = raw[at..].chars().count();
        raw.truncate(at);
        raw.push_str(&format!(" … ({rest} more characters)"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(json: &str) -> Frame {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn summaries_name_methods_results_and_control_events() {
        let f = frame(
            r#"{"i":3,"t_us":1,"conn":1,"dir":"a2c","raw":"","json":{"jsonrpc":"2.0","id":0,"method":"session/request_permission"}}"#,
        );
        assert_eq!(f.summary(), "session/request_permission (id 0)");
        let f = frame(
            r#"{"i":3,"dir":"a2c","raw":"","json":{"method":"session/update","params":{"update":{"sessionUpdate":"tool_call"}}}}"#,
        );
        assert_eq!(f.summary(), "session/update: tool_call");
        let f = frame(r#"{"i":3,"dir":"c2a","raw":"","json":{"id":"a","result":{}}}"#);
        assert_eq!(f.summary(), "result for id \"a\"");
        let f =
            frame(r#"{"i":3,"dir":"c2h","raw":"","json":{"type":"approval","subject":"command"}}"#);
        assert_eq!(f.summary(), "approval: command");
        let f = frame(r#"{"i":3,"dir":"c2a","raw":"garbage"}"#);
        assert_eq!(f.summary(), "not JSON");
    }

    /// The screen text of a full-screen client comes out of an observed event read from the
    /// screen and of the last-screen note; nothing else carries one.
    #[test]
    fn screen_text_comes_from_screen_events_and_the_screen_note() {
        let f = frame(
            r#"{"i":4,"dir":"o2h","raw":"","json":{"type":"approval","observed":{"by":"d","from":"screen","evidence":"Permission: ls\n 1) Allow"}}}"#,
        );
        assert_eq!(f.screen(), Some("Permission: ls\n 1) Allow"));
        let f =
            frame(r#"{"i":9,"dir":"note","raw":"","json":{"type":"screen","text":"Ready\n>"}}"#);
        assert_eq!(f.screen(), Some("Ready\n>"));
        for other in [
            r#"{"i":4,"dir":"o2h","raw":"","json":{"type":"turn","observed":{"by":"d","from":"stdout","evidence":"done"}}}"#,
            r#"{"i":4,"dir":"c2a","raw":"","json":{"type":"screen","text":"x"}}"#,
            r#"{"i":4,"dir":"note","raw":"x"}"#,
        ] {
            assert_eq!(frame(other).screen(), None, "{other}");
        }
    }

    #[test]
    fn a_faulted_frame_says_so() {
        let f = frame(r#"{"i":3,"dir":"a2c","raw":"{","fault":"raw"}"#);
        assert_eq!(f.summary(), "not JSON (harness fault: raw)");
    }

    #[test]
    fn unreadable_lines_and_missing_files_are_reported_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        std::fs::write(
            &path,
            "{\"i\":0,\"t_us\":5,\"conn\":0,\"dir\":\"note\",\"raw\":\"x\"}\nnot json\n\n",
        )
        .unwrap();
        let t = read(&path);
        assert_eq!(t.lines.len(), 2);
        assert!(t.frame(0).is_some());
        assert!(matches!(t.lines[1], Line::Unreadable { line: 2, .. }));
        let t = read(&dir.path().join("absent.jsonl"));
        assert!(t.missing.as_deref().unwrap().contains("cannot read"));
    }

    #[test]
    fn frames_in_memory_are_cut_like_a_file() {
        let long = frame(&format!(
            r#"{{"i":0,"dir":"a2c","raw":"{}"}}"#,
            "x".repeat(MAX_RAW_CHARS + 1)
        ));
        let t = Transcript::from_frames([long]);
        assert!(!t.cut);
        assert!(t.frame(0).unwrap().raw.ends_with("(1 more characters)"));
    }

    #[test]
    fn long_frames_are_cut_on_a_char_boundary() {
        let mut raw = "é".repeat(MAX_RAW_CHARS + 10);
        cut_raw(&mut raw);
        assert!(raw.ends_with("(10 more characters)"));
        let mut short = "abc".to_string();
        cut_raw(&mut short);
        assert_eq!(short, "abc");
    }
}
