//! `[files]` of a client profile: settings files written before the client starts, for clients
//! that take their agent from a settings file or an agent registry rather than from argv or the
//! environment.
//!
//! Each key is a path that starts with `{home}/` or `{cwd}/` (the case's empty home, its
//! workspace); each value is the file's content, where `{agent}` is the agent command as one
//! shell-quoted string, `{agent_argv}` the agent argv as a JSON array, `{cwd}` and `{home}` the two
//! directories. A path that leaves them (`..`, an absolute path, a symlink out) is refused: when
//! the profile is read, and again when the file is written.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::Expansion;

const ROOTS: [&str; 2] = ["{home}/", "{cwd}/"];

/// The relative part of a `[files]` key, if the key is well-formed.
fn relative(key: &str) -> Result<(&'static str, &Path), String> {
    let root = ROOTS
        .into_iter()
        .find(|r| key.starts_with(r))
        .ok_or_else(|| {
            format!("[files] {key:?}: a path must start with \"{{home}}/\" or \"{{cwd}}/\"")
        })?;
    let rest = Path::new(&key[root.len()..]);
    let inside = !rest.as_os_str().is_empty()
        && rest.components().all(|c| matches!(c, Component::Normal(_)));
    if !inside || key[root.len()..].contains('{') {
        return Err(format!(
            "[files] {key:?}: the path must name a file inside {} (no `..`, no absolute part, no other placeholder)",
            &root[..root.len() - 1]
        ));
    }
    Ok((root, rest))
}

/// Checks every key when the profile is read.
pub(super) fn validate(files: &BTreeMap<String, String>) -> Result<(), String> {
    files.keys().try_for_each(|k| relative(k).map(|_| ()))
}

/// Writes the profile's `[files]` for one case; returns the paths written.
pub fn write_files(
    files: &BTreeMap<String, String>,
    x: &Expansion<'_>,
) -> Result<Vec<PathBuf>, String> {
    let agent_argv = serde_json::to_string(x.agent_argv).unwrap_or_default();
    let mut written = Vec::new();
    for (key, template) in files {
        let (root, rest) = relative(key)?;
        let base = if root == "{home}/" { x.home } else { x.cwd };
        let path = base.join(rest);
        let parent = path.parent().unwrap_or(base);
        std::fs::create_dir_all(parent).map_err(|e| format!("[files] {key:?}: {e}"))?;
        // A directory of the case may not point elsewhere (a symlink the client left there).
        let real = parent
            .canonicalize()
            .map_err(|e| format!("[files] {key:?}: {e}"))?;
        let real_base = base
            .canonicalize()
            .map_err(|e| format!("[files] {key:?}: {e}"))?;
        if !real.starts_with(&real_base) {
            return Err(format!(
                "[files] {key:?}: {} is outside {}",
                real.display(),
                real_base.display()
            ));
        }
        let content = template
            .replace("{agent_argv}", &agent_argv)
            .replace("{agent}", &super::agent_line(x.agent_argv))
            .replace("{cwd}", &x.cwd.to_string_lossy())
            .replace("{home}", &x.home.to_string_lossy());
        std::fs::write(&path, content).map_err(|e| format!("[files] {key:?}: {e}"))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_in_home_or_cwd() {
        assert!(relative("{home}/.config/c.json").is_ok());
        assert!(relative("{cwd}/agent.json").is_ok());
        for bad in [
            "/etc/passwd",
            "{home}/../x",
            "{home}/",
            "x/{home}/y",
            "{cwd}/{home}/x",
        ] {
            assert!(relative(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn files_are_written_with_placeholders_filled() {
        let dir = tempfile::tempdir().unwrap();
        let (home, cwd) = (dir.path().join("home"), dir.path().join("work"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        let agent = ["/bin/fake agent".to_string(), "--connect".into()];
        let x = Expansion {
            agent_argv: &agent,
            prompt: "",
            cwd: &cwd,
            home: &home,
        };
        let files = BTreeMap::from([(
            "{home}/.config/c.json".to_string(),
            r#"{"argv":{agent_argv},"line":"{agent}","cwd":"{cwd}"}"#.to_string(),
        )]);
        let written = write_files(&files, &x).unwrap();
        let text = std::fs::read_to_string(&written[0]).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v["argv"],
            serde_json::json!(["/bin/fake agent", "--connect"])
        );
        assert_eq!(v["line"], "'/bin/fake agent' --connect");
        assert_eq!(v["cwd"], cwd.to_string_lossy().as_ref());
        // A symlink out of the case is refused when writing.
        std::os::unix::fs::symlink("/tmp", home.join("out")).unwrap();
        let out = BTreeMap::from([("{home}/out/x".to_string(), String::new())]);
        assert!(write_files(&out, &x).unwrap_err().contains("outside"));
    }
}
