//! Reading a committed recording back: `<case>.jsonl` (the wire transcript, harness format) and
//! its `<case>.meta.json` beside it. Used by `to-scenario` and `check`.

use std::path::{Path, PathBuf};

use acp_vocab::envelope::Shape;
use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Which way a wire frame went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// The recorder (the client) wrote it to the agent.
    ToAgent,
    /// The agent wrote it.
    FromAgent,
}

/// One wire frame of a recording (notes are left out).
#[derive(Debug, Clone)]
pub struct Frame {
    /// The entry's index in the transcript (`i`), for messages.
    pub index: usize,
    pub dir: Dir,
    /// The frame's text as recorded (normalised, compact JSON).
    pub raw: String,
    /// The frame parsed; `None` when it is not JSON.
    pub json: Option<Value>,
}

impl Frame {
    pub fn method(&self) -> Option<&str> {
        self.json.as_ref()?.get("method")?.as_str()
    }

    pub fn id(&self) -> Option<&Value> {
        self.json.as_ref()?.get("id").filter(|id| !id.is_null())
    }

    /// A request: a method and a non-null id.
    pub fn is_request(&self) -> bool {
        self.shape()
            .is_some_and(|s| matches!(s, Shape::Request { id, .. } if !id.is_null()))
    }

    /// A response (result or error) with a non-null id.
    pub fn is_response(&self) -> bool {
        self.shape()
            .and_then(Shape::response_id)
            .is_some_and(|id| !id.is_null())
    }

    fn shape(&self) -> Option<Shape<'_>> {
        self.json.as_ref().map(Shape::of)
    }

    pub fn params(&self) -> Option<&Value> {
        self.json.as_ref()?.get("params")
    }
}

/// A recording read back.
#[derive(Debug, Clone)]
pub struct Recording {
    pub path: PathBuf,
    /// The case's name (the file's stem).
    pub case: String,
    pub frames: Vec<Frame>,
    /// `<case>.meta.json`, when it is there.
    pub meta: Option<Value>,
}

/// The largest recording file read (the biggest committed one is about 1.2 MB).
const MAX_BYTES: u64 = 64 << 20;

impl Recording {
    pub fn load(path: &Path) -> Result<Recording> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let Some(case) = name
            .strip_suffix(".jsonl")
            .filter(|c| !c.ends_with(".model"))
        else {
            bail!(
                "{}: not a recording (a recording is recordings/<agent>/<version>/<case>.jsonl)",
                path.display()
            );
        };
        let size = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        if size > MAX_BYTES {
            bail!(
                "{}: {size} bytes, more than a recording can be ({MAX_BYTES})",
                path.display()
            );
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let frames = parse_lines(&text).with_context(|| format!("{}", path.display()))?;
        let meta_path = path.with_file_name(format!("{case}.meta.json"));
        let meta = match std::fs::read_to_string(&meta_path) {
            Ok(t) => Some(
                serde_json::from_str(&t)
                    .with_context(|| format!("{}: not JSON", meta_path.display()))?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(e).with_context(|| format!("cannot read {}", meta_path.display()));
            }
        };
        Ok(Recording {
            path: path.to_path_buf(),
            case: case.to_string(),
            frames,
            meta,
        })
    }

    /// A string field of the meta file.
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.as_ref()?.get(key)?.as_str()
    }
}

/// The wire frames of a transcript file's text (one entry a line; notes and blank lines skipped).
pub fn parse_lines(text: &str) -> Result<Vec<Frame>> {
    let mut frames = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let entry: Value = serde_json::from_str(line)
            .with_context(|| format!("line {}: not a JSON transcript entry", n + 1))?;
        let dir = match entry.get("dir").and_then(Value::as_str) {
            Some("c2a") => Dir::ToAgent,
            Some("a2c") => Dir::FromAgent,
            Some(_) => continue,
            None => bail!("line {}: a transcript entry without `dir`", n + 1),
        };
        let raw = entry
            .get("raw")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow::anyhow!("line {}: a wire entry without `raw`", n + 1))?
            .to_string();
        let json = match entry.get("json") {
            Some(v) if v.is_object() => Some(v.clone()),
            _ => serde_json::from_str::<Value>(&raw)
                .ok()
                .filter(Value::is_object),
        };
        let index = entry
            .get("i")
            .and_then(Value::as_u64)
            .map(|i| i as usize)
            .unwrap_or(n);
        frames.push(Frame {
            index,
            dir,
            raw,
            json,
        });
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_wire_entries_and_skips_notes() {
        let text = concat!(
            r#"{"i":0,"t_us":1,"conn":1,"dir":"c2a","raw":"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\"}"}"#,
            "\n",
            r#"{"i":1,"t_us":2,"conn":0,"dir":"note","raw":"{}"}"#,
            "\n",
            r#"{"i":2,"t_us":3,"conn":1,"dir":"a2c","raw":"not json"}"#,
            "\n"
        );
        let frames = parse_lines(text).unwrap();
        assert_eq!(frames.len(), 2);
        assert!(frames[0].is_request());
        assert_eq!(frames[0].method(), Some("initialize"));
        assert_eq!(frames[1].index, 2);
        assert!(frames[1].json.is_none());
        let err = format!("{:#}", parse_lines("{\"dir\":\"c2a\"}\n").unwrap_err());
        assert!(err.contains("line 1") && err.contains("raw"), "{err}");
        assert!(parse_lines("nope\n").is_err());
    }
}
