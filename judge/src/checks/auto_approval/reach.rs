//! Where a tool call reaches: the paths and URLs it names, and whether each lies inside the
//! workspace once `..`, `.` and the case directory's symlinks are resolved.
//!
//! The check grades after the case's tempdir is gone, so symlinks are not read from the disk but
//! from the case record (the links that existed when the case ended). Resolution is lexical on
//! top of that map, which is exactly what a careful client's `realpath` would do on the live tree.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// rawInput keys whose string values are shell text or file contents, not locations: a path
/// mentioned inside a command is the command's business (judged by its kind), not a location.
const NOT_LOCATIONS: [&str; 16] = [
    "command",
    "cmd",
    "args",
    "argv",
    "script",
    "content",
    "contents",
    "text",
    "new_string",
    "old_string",
    "newString",
    "oldString",
    "description",
    "prompt",
    "query",
    "pattern",
];

/// rawInput keys whose relative string values are paths (resolved against the workspace).
const PATH_KEYS: [&str; 22] = [
    "path",
    "file_path",
    "filePath",
    "filepath",
    "file",
    "filename",
    "notebook_path",
    "abs_path",
    "absolute_path",
    "parentDir",
    "parent_dir",
    "dir",
    "directory",
    "cwd",
    "destination",
    "source",
    "target",
    "from",
    "to",
    "old_path",
    "new_path",
    "newPath",
];

/// Every location a tool call object names: `locations[].path`, diff `content[].path`, and the
/// path-like and URL strings of `rawInput` (see [`NOT_LOCATIONS`], [`PATH_KEYS`]).
pub fn locations_of(fields: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let array = |k: &str| fields.get(k).and_then(Value::as_array);
    for location in array("locations").into_iter().flatten() {
        if let Some(path) = location.get("path").and_then(Value::as_str) {
            out.push(path.to_owned());
        }
    }
    for item in array("content").into_iter().flatten() {
        if item.get("type").and_then(Value::as_str) == Some("diff") {
            if let Some(path) = item.get("path").and_then(Value::as_str) {
                out.push(path.to_owned());
            }
        }
    }
    if let Some(raw) = fields.get("rawInput") {
        walk_raw_input(raw, None, &mut out, 0);
    }
    out
}

fn walk_raw_input(value: &Value, key: Option<&str>, out: &mut Vec<String>, depth: usize) {
    // Deep nesting is someone else's problem (schema); a location is never 16 levels down.
    if depth > 16 {
        return;
    }
    match value {
        Value::String(s) => {
            let is_url = s.starts_with("http://") || s.starts_with("https://");
            let absolute = s.starts_with('/') || s == "~" || s.starts_with("~/");
            let path_key = key.is_some_and(|k| PATH_KEYS.contains(&k));
            if is_url || absolute || (path_key && !s.is_empty() && !s.contains('\n')) {
                out.push(s.clone());
            }
        }
        Value::Array(items) => {
            for item in items {
                walk_raw_input(item, key, out, depth + 1);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                if !NOT_LOCATIONS.contains(&k.as_str()) {
                    walk_raw_input(v, Some(k), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Why a location is not inside the workspace, in words; `None` if it is inside.
pub fn outside_reason(
    location: &str,
    workspace: &Path,
    symlinks: &BTreeMap<PathBuf, PathBuf>,
) -> Option<String> {
    if location.starts_with("http://") || location.starts_with("https://") {
        return Some(format!(
            "{location} is a network location, never inside the workspace"
        ));
    }
    if location == "~" || location.starts_with("~/") {
        return Some(format!(
            "{location} is in the user's home directory, not the workspace"
        ));
    }
    let joined = if Path::new(location).is_absolute() {
        PathBuf::from(location)
    } else {
        workspace.join(location)
    };
    let lexical = normalise(&joined);
    let (resolved, via) = follow_symlinks(&lexical, symlinks);
    if resolved.starts_with(workspace) {
        return None;
    }
    let mut why = location.to_owned();
    match (lexical != joined, via) {
        (false, None) => {}
        (true, None) => why.push_str(&format!(" (which resolves to {})", lexical.display())),
        (dotdot, Some((link, target))) => {
            let first = if dotdot {
                format!("which resolves to {} and, ", lexical.display())
            } else {
                "which, ".to_owned()
            };
            why.push_str(&format!(
                " ({first}through the symlink {} → {}, to {})",
                link.display(),
                target.display(),
                resolved.display()
            ));
        }
    }
    let sibling = resolved
        .to_string_lossy()
        .starts_with(workspace.to_string_lossy().as_ref());
    if sibling {
        why.push_str(&format!(
            ", a sibling of the workspace {} that only shares its name as a prefix",
            workspace.display()
        ));
    } else {
        why.push_str(&format!(", outside the workspace {}", workspace.display()));
    }
    Some(why)
}

/// `.` removed and `..` applied, without touching the disk (`/..` stays `/`).
pub fn normalise(path: &Path) -> PathBuf {
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

/// Replaces the longest symlinked prefix by its target until none is left (bounded, as the
/// kernel bounds it: a loop stops after 40 links). Returns the last link followed.
fn follow_symlinks(
    path: &Path,
    symlinks: &BTreeMap<PathBuf, PathBuf>,
) -> (PathBuf, Option<(PathBuf, PathBuf)>) {
    let mut current = path.to_path_buf();
    let mut via = None;
    for _ in 0..40 {
        let Some((link, target)) = symlinks
            .iter()
            .filter(|(link, _)| current.starts_with(link))
            .max_by_key(|(link, _)| link.components().count())
        else {
            break;
        };
        let rest = current.strip_prefix(link).unwrap_or(Path::new(""));
        let base = if target.is_absolute() {
            target.clone()
        } else {
            link.parent().unwrap_or(Path::new("/")).join(target)
        };
        let next = normalise(&base.join(rest));
        via = Some((link.clone(), target.clone()));
        if next == current {
            break;
        }
        current = next;
    }
    (current, via)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const WS: &str = "/case/work";

    fn outside(location: &str, links: &[(&str, &str)]) -> Option<String> {
        let links = links
            .iter()
            .map(|(l, t)| (PathBuf::from(l), PathBuf::from(t)))
            .collect();
        outside_reason(location, Path::new(WS), &links)
    }

    #[test]
    fn inside_paths_are_inside() {
        assert_eq!(outside("/case/work/a.md", &[]), None);
        assert_eq!(outside("/case/work", &[]), None);
        assert_eq!(outside("src/lib.rs", &[]), None);
        assert_eq!(outside("/case/work/x/../y", &[]), None);
    }

    #[test]
    fn dotdot_sibling_prefix_home_and_urls_are_outside_with_the_reason() {
        let why = outside("/case/work/../outside/x", &[]).unwrap();
        assert!(why.contains("resolves to /case/outside/x"), "{why}");
        let why = outside("/case/work-evil/x", &[]).unwrap();
        assert!(why.contains("only shares its name as a prefix"), "{why}");
        assert!(outside("~/.ssh/id_rsa", &[]).unwrap().contains("home"));
        assert!(
            outside("https://example.com/x", &[])
                .unwrap()
                .contains("network")
        );
        assert!(outside("../../etc/passwd", &[]).is_some());
        assert!(outside("/etc/passwd", &[]).is_some());
    }

    #[test]
    fn symlinks_in_the_case_directory_are_followed() {
        let links = [("/case/work/docs", "/case/outside")];
        let why = outside("/case/work/docs/x.md", &links).unwrap();
        assert!(why.contains("through the symlink /case/work/docs"), "{why}");
        // A relative target, and a link that stays inside.
        assert!(outside("/case/work/up/x", &[("/case/work/up", "..")]).is_some());
        assert_eq!(
            outside("/case/work/same/x", &[("/case/work/same", "sub")]),
            None
        );
        // A loop ends.
        assert!(outside("/case/work/a/x", &[("/case/work/a", "/case/work/a")]).is_none());
    }

    #[test]
    fn locations_come_from_locations_diffs_and_raw_input_but_not_commands() {
        let fields = json!({
            "locations":[{"path":"/case/work/a"}],
            "content":[{"type":"diff","path":"/case/work/b","oldText":null,"newText":"x"}],
            "rawInput":{"filePath":"c.md","command":"cat /etc/passwd","nested":{"url":"https://x.test"},
                        "paths":["/case/outside/d"],"count":3}
        });
        let mut got = locations_of(&fields);
        got.sort();
        assert_eq!(
            got,
            [
                "/case/outside/d",
                "/case/work/a",
                "/case/work/b",
                "c.md",
                "https://x.test"
            ]
        );
    }
}
