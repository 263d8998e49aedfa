//! Which paths the client's own file system serves to the agent.
//!
//! ACP puts no permission step on `fs/*`; the agent asks `session/request_permission` first
//! when it wants the user's word. So this client serves, without asking:
//! * every path inside the session's workspace (its `cwd`), once `..` is applied and symlinks
//!   are resolved on the disk — a symlink in the workspace that points out leads outside;
//! * a path outside it only if an approved permission request of the same session (the user's
//!   click, or this client's own policy answer) named that path or a directory above it; a
//!   write there needs an approval of a tool call that is not read-only.
//!
//! Everything else is refused with a JSON-RPC error (-32603, `data.errorKind:
//! "path_outside_workspace"`, the words qwen-code's ACP file system reads for an outside path),
//! so nothing outside the workspace is read or changed by a decision the user never made. The
//! harness judges exactly this (`auto-approval`, R120/R121).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::json;

use crate::mutation::Mutant;
use crate::rpc::RpcError;

/// Tool kinds whose approval grants no write.
const READ_ONLY_KINDS: [&str; 4] = ["read", "search", "fetch", "think"];

/// Paths outside the workspace that approved requests opened, per session.
#[derive(Debug, Default)]
pub struct FsGrants {
    /// session id → (approved location, normalised; write allowed).
    by_session: BTreeMap<String, Vec<(PathBuf, bool)>>,
}

impl FsGrants {
    /// An approved request of `session` for a tool call of these kinds naming these places.
    pub fn grant(&mut self, session: &str, places: &[String], kinds: &[String], cwd: &Path) {
        let write = kinds.iter().any(|k| !READ_ONLY_KINDS.contains(&k.as_str()));
        let list = self.by_session.entry(session.to_owned()).or_default();
        for place in places {
            if place.starts_with("http://") || place.starts_with("https://") {
                continue;
            }
            list.push((normalise(&cwd.join(place)), write));
        }
    }

    /// `Ok` if the client may serve this fs call by itself (module doc).
    pub fn check(
        &self,
        session: &str,
        cwd: &Path,
        path: &Path,
        write: bool,
        mutant: Option<Mutant>,
    ) -> Result<(), RpcError> {
        // MUTANT serve-any-path (QwenLM/qwen-code vscode-ide-companion acpFileHandler.ts): the
        // path is served as given, wherever it leads.
        if mutant == Some(Mutant::ServeAnyPath) {
            return Ok(());
        }
        // MUTANT write-any-path (flazouh/acepe#50: the write command skipped the path check
        // its read counterpart made): a write is served wherever it leads.
        if mutant == Some(Mutant::WriteAnyPath) && write {
            return Ok(());
        }
        if inside(cwd, path) {
            return Ok(());
        }
        let lexical = normalise(path);
        let approved = self.by_session.get(session).is_some_and(|list| {
            list.iter()
                .any(|(place, may_write)| lexical.starts_with(place) && (*may_write || !write))
        });
        if approved {
            return Ok(());
        }
        Err(RpcError {
            code: -32603,
            message: format!(
                "{} is outside the session's workspace {} and no approved permission request covers it",
                path.display(),
                cwd.display()
            ),
            data: Some(json!({"errorKind": "path_outside_workspace", "path": path})),
        })
    }
}

/// `path` lies inside `cwd` after `..` and every symlink on the disk are resolved. A path that
/// does not exist yet (a write creating it) is judged by its nearest existing ancestor.
fn inside(cwd: &Path, path: &Path) -> bool {
    let lexical = normalise(path);
    let Ok(root) = std::fs::canonicalize(cwd) else {
        return false;
    };
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    let resolved = loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            break rest.iter().rev().fold(real, |p: PathBuf, c| p.join(c));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return false,
        }
    };
    resolved.starts_with(root)
}

/// `.` removed and `..` applied without touching the disk (`/..` stays `/`).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inside_resolves_dotdot_and_symlinks() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("work");
        let out = dir.path().join("outside");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::os::unix::fs::symlink(&out, ws.join("docs")).unwrap();
        assert!(inside(&ws, &ws.join("a.md")));
        assert!(inside(&ws, &ws.join("new/dir/b.md")));
        assert!(!inside(&ws, &ws.join("../outside/x")));
        assert!(!inside(&ws, &ws.join("docs/x")));
        assert!(!inside(&ws, &dir.path().join("work-evil/x")));
        assert!(!inside(&ws, &out.join("../../../../etc/passwd")));
    }

    #[test]
    fn an_approved_place_opens_its_subtree_and_a_read_grants_no_write() {
        let dir = tempfile::tempdir().expect("tempdir");
        let ws = dir.path().join("work");
        std::fs::create_dir_all(&ws).unwrap();
        let out = dir.path().join("outside");
        let mut grants = FsGrants::default();
        let file = out.join("notes.txt");
        let refused = grants.check("s", &ws, &file, false, None).unwrap_err();
        assert_eq!(refused.code, -32603);
        grants.grant(
            "s",
            &[out.to_string_lossy().into_owned()],
            &["read".into()],
            &ws,
        );
        assert!(grants.check("s", &ws, &file, false, None).is_ok());
        assert!(grants.check("s", &ws, &file, true, None).is_err());
        assert!(grants.check("other", &ws, &file, false, None).is_err());
        assert!(
            grants
                .check("s", &ws, &out.join("../elsewhere"), false, None)
                .is_err()
        );
        assert!(
            grants
                .check(
                    "s",
                    &ws,
                    Path::new("/etc/passwd"),
                    false,
                    Some(Mutant::ServeAnyPath)
                )
                .is_ok()
        );
    }
}
