//! What the case left on disk that the checks read after its tempdir is gone.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acp_vocab::method::Method;
use acp_vocab::transcript::Direction;
use serde_json::Value;

/// Bytes on disk, after the run, of every file the agent asked the client to read or write.
/// Only paths inside the case's tempdir are read: a scenario never makes the harness read the
/// user's own files into a report.
pub(super) fn files_after(
    transcript: &[acp_vocab::transcript::Entry],
    root: &Path,
) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut out = BTreeMap::new();
    for entry in transcript {
        if entry.direction != Direction::AgentToClient {
            continue;
        }
        // Most agent frames are not file requests: read only those whose text can name one (a
        // frame without a `\` holds its strings as written), and keep no parse of any frame.
        if !entry.raw.contains("_text_file") && !entry.raw.contains('\\') {
            continue;
        }
        let Some(json) = entry.parse_json() else {
            continue;
        };
        let json = json.as_ref();
        let method = json.get("method").and_then(Value::as_str);
        if !matches!(
            method.and_then(Method::parse),
            Some(Method::FsWriteTextFile | Method::FsReadTextFile)
        ) {
            continue;
        }
        let Some(path) = json.pointer("/params/path").and_then(Value::as_str) else {
            continue;
        };
        let path = PathBuf::from(path);
        let inside = path.is_absolute()
            && !path
                .components()
                .any(|c| matches!(c, std::path::Component::ParentDir))
            && path.starts_with(root);
        let bytes = if inside {
            std::fs::read(&path).ok()
        } else {
            None
        };
        out.insert(path, bytes);
    }
    out
}
