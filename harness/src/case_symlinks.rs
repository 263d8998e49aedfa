//! The symlinks under a case directory when the case ends (`CaseRecord::symlinks`), so a check
//! can resolve a request's path the way the disk did, after the tempdir is gone: a path through
//! `${cwd}/docs` that links to `${outside}` leaves the workspace although its text does not.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bounds on the walk: a client may fill its `HOME` in the case directory with caches, and the
/// record must stay small and the walk quick. Links beyond the bound are not recorded.
const MAX_DEPTH: usize = 16;
const MAX_ENTRIES: usize = 20_000;

/// Every symlink below `root` (not following any), link path → target. A relative target is
/// made absolute by joining it to the link's directory (not normalised further: `..` after a
/// symlinked directory means something else on disk than on paper).
pub fn symlinks_under(root: &Path) -> BTreeMap<PathBuf, PathBuf> {
    let mut out = BTreeMap::new();
    let mut budget = MAX_ENTRIES;
    walk(root, 0, &mut budget, &mut out);
    out
}

fn walk(dir: &Path, depth: usize, budget: &mut usize, out: &mut BTreeMap<PathBuf, PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            if let Ok(target) = std::fs::read_link(&path) {
                let target = match path.parent() {
                    Some(parent) if target.is_relative() => parent.join(target),
                    _ => target,
                };
                out.insert(path, target);
            }
        } else if kind.is_dir() && depth < MAX_DEPTH {
            walk(&path, depth + 1, budget, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_links_with_absolute_targets_and_does_not_follow_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("work/sub")).unwrap();
        std::fs::create_dir(root.join("outside")).unwrap();
        std::fs::write(root.join("outside/secret"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("outside"), root.join("work/docs")).unwrap();
        std::os::unix::fs::symlink("../../outside/secret", root.join("work/sub/rel")).unwrap();
        // A loop must not be followed.
        std::os::unix::fs::symlink(root.join("work"), root.join("work/sub/loop")).unwrap();

        let links = symlinks_under(root);
        assert_eq!(
            links,
            BTreeMap::from([
                (root.join("work/docs"), root.join("outside")),
                (root.join("work/sub/loop"), root.join("work")),
                (
                    root.join("work/sub/rel"),
                    root.join("work/sub/../../outside/secret")
                ),
            ])
        );
    }

    #[test]
    fn a_missing_directory_has_no_links() {
        assert!(symlinks_under(Path::new("/nonexistent-acp-case-dir")).is_empty());
    }
}
