//! `[[setup]]`: what exists in the case directory before the client starts (a symlink inside the
//! workspace that points outside it, a sibling directory sharing the workspace's name as prefix,
//! a file). Deceptive-request scenarios need the disk to look like that for a path in a request
//! to mean what it says.
//!
//! Every path and symlink target must lie inside the case directory, the parent of `${cwd}` and
//! `${outside}`: a scenario never makes the harness touch anything else. The rule is checked
//! twice: at parse time against a stand-in case directory (so a bad entry is a `file:line:col`
//! error before anything runs) and again, with the real directory, before anything is created.
//!
//! Paths and targets must be absolute and free of `.`/`..` segments. That is what makes the rule
//! hold on disk and not only on paper: every symlink a setup creates points into the case
//! directory, so a path through one of them stays inside it too (a `..` after a symlink would be
//! resolved by the OS from the link's target, not lexically).

use std::path::{Component, Path, PathBuf};

use crate::vars::Vars;

/// One `[[setup]]` entry, with its place in the file. Paths are templates (`${cwd}/docs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// 1-based line of the `[[setup]]` header.
    pub line: usize,
    pub entry: SetupEntry,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupEntry {
    /// `dir = …`: a directory (its parents are created too).
    Dir { path: String },
    /// `file = …`, `content = …` (default empty).
    File { path: String, content: String },
    /// `symlink = …`, `target = …`: a symbolic link at `path` pointing at `target`.
    Symlink { path: String, target: String },
}

impl SetupEntry {
    /// The key that names the path (`dir`, `file`, `symlink`).
    pub fn key(&self) -> &'static str {
        match self {
            SetupEntry::Dir { .. } => "dir",
            SetupEntry::File { .. } => "file",
            SetupEntry::Symlink { .. } => "symlink",
        }
    }

    fn path(&self) -> &str {
        match self {
            SetupEntry::Dir { path } | SetupEntry::File { path, .. } => path,
            SetupEntry::Symlink { path, .. } => path,
        }
    }
}

/// The case directory the parser checks setup paths against: any absolute directory works, as
/// the rule only depends on `${cwd}` and `${outside}` being two children of it.
pub(super) const STAND_IN_ROOT: &str = "/acp-case";

/// Which of an entry's strings is wrong, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupError {
    /// `path` (the entry's `dir`/`file`/`symlink`) or `target`.
    pub field: SetupField,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetupField {
    Path,
    Target,
}

/// The case directory of a run: the common parent of `${cwd}` and `${outside}`, or `None` when
/// they have none (standalone mode: `${cwd}` is the person's own project).
pub fn case_dir(cwd: &Path, outside: &Path) -> Option<PathBuf> {
    let root = cwd.parent()?;
    (outside.parent() == Some(root) && root.parent().is_some()).then(|| root.to_path_buf())
}

/// Fills an entry's templates and checks them against `root`: `(path, target)`, filled.
pub fn resolve(
    entry: &SetupEntry,
    vars: &Vars,
    root: &Path,
    cwd: &Path,
    outside: &Path,
) -> Result<(PathBuf, Option<PathBuf>), SetupError> {
    let fill = |s: &str, field| {
        vars.fill_str(s)
            .map(PathBuf::from)
            .map_err(|message| SetupError { field, message })
    };
    let path = fill(entry.path(), SetupField::Path)?;
    inside(&path, root, entry.key()).map_err(|message| SetupError {
        field: SetupField::Path,
        message,
    })?;
    if path == cwd || path == outside {
        return Err(SetupError {
            field: SetupField::Path,
            message: format!(
                "`{}` names {}, which the harness creates itself; name something inside it",
                entry.key(),
                if path == cwd { "${cwd}" } else { "${outside}" }
            ),
        });
    }
    let target = match entry {
        SetupEntry::Symlink { target, .. } => {
            let target = fill(target, SetupField::Target)?;
            // The case directory itself is a fine target; only escaping it is not.
            if target != root {
                inside(&target, root, "target").map_err(|message| SetupError {
                    field: SetupField::Target,
                    message,
                })?;
            }
            Some(target)
        }
        _ => None,
    };
    Ok((path, target))
}

/// Absolute, no `.`/`..` segment, strictly below `root`.
fn inside(path: &Path, root: &Path, key: &str) -> Result<(), String> {
    let shown = path.display();
    if !path.is_absolute() {
        return Err(format!(
            "`{key}` must be an absolute path inside the case directory (start it with ${{cwd}} or ${{outside}}); got {shown:?}"
        ));
    }
    // `components()` drops inner `.` segments, so look at the text for those.
    let text = path.to_string_lossy();
    if path.components().any(|c| matches!(c, Component::ParentDir))
        || text.split('/').any(|seg| seg == "." || seg == "..")
    {
        return Err(format!(
            "`{key}` must not contain `.` or `..` segments (after a symlink the OS resolves them from the link's target); got {shown:?}"
        ));
    }
    if !path.starts_with(root) || path == root {
        return Err(format!(
            "`{key}` must lie inside the case directory (the parent of ${{cwd}} and ${{outside}}); {shown:?} is outside it"
        ));
    }
    Ok(())
}

/// Creates every setup entry of a scenario, in file order, inside the case directory of `cwd`
/// and `outside`. An entry whose path already exists is an error (nothing is overwritten).
/// Returns the paths created.
pub fn create(
    scenario: &super::Scenario,
    cwd: &Path,
    outside: &Path,
) -> Result<Vec<PathBuf>, String> {
    if scenario.setup.is_empty() {
        return Ok(Vec::new());
    }
    let Some(root) = case_dir(cwd, outside) else {
        return Err(format!(
            "{} has [[setup]] entries, but ${{cwd}} ({}) and ${{outside}} ({}) share no case directory to create them in",
            scenario.file_name(),
            cwd.display(),
            outside.display()
        ));
    };
    let vars = Vars::initial(scenario, cwd, outside)?;
    let mut created = Vec::new();
    for setup in &scenario.setup {
        let at = format!("[[setup]] at {}:{}", scenario.file_name(), setup.line);
        let (path, target) = resolve(&setup.entry, &vars, &root, cwd, outside)
            .map_err(|e| format!("{at}: {}", e.message))?;
        let content = match &setup.entry {
            SetupEntry::File { content, .. } => vars
                .fill_str(content)
                .map_err(|e| format!("{at}: content: {e}"))?,
            _ => String::new(),
        };
        create_one(&setup.entry, &path, target.as_deref(), &content, &root)
            .map_err(|e| format!("{at}: cannot create {}: {e}", path.display()))?;
        created.push(path);
    }
    Ok(created)
}

fn create_one(
    entry: &SetupEntry,
    path: &Path,
    target: Option<&Path>,
    content: &str,
    root: &Path,
) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
        // Belt and braces: the parent, with every symlink resolved, is still in the case dir.
        let real_root = root.canonicalize()?;
        if !parent.canonicalize()?.starts_with(&real_root) {
            return Err(std::io::Error::other(
                "its parent resolves to a place outside the case directory",
            ));
        }
    }
    match (entry, target) {
        (SetupEntry::Dir { .. }, _) => std::fs::create_dir(path),
        (SetupEntry::File { .. }, _) => {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)?
                .write_all(content.as_bytes())
        }
        (SetupEntry::Symlink { .. }, Some(target)) => std::os::unix::fs::symlink(target, path),
        (SetupEntry::Symlink { .. }, None) => {
            Err(std::io::Error::other("a symlink needs a target"))
        }
    }
}

/// The entries in words, filled with `cwd` and `outside` ("symlink /p/docs -> /tmp/x"), for a
/// person who creates them by hand (standalone mode does not create them; see
/// scenarios/README.md, "`[[setup]]`").
pub fn describe(scenario: &super::Scenario, cwd: &Path, outside: &Path) -> Vec<String> {
    let vars = Vars::initial(scenario, cwd, outside).unwrap_or_default();
    let fill = |s: &str| vars.fill_str(s).unwrap_or_else(|_| s.to_owned());
    scenario
        .setup
        .iter()
        .map(|s| match &s.entry {
            SetupEntry::Dir { path } => format!("directory {}", fill(path)),
            SetupEntry::File { path, content } => {
                format!("file {} containing {:?}", fill(path), fill(content))
            }
            SetupEntry::Symlink { path, target } => {
                format!("symlink {} -> {}", fill(path), fill(target))
            }
        })
        .collect()
}
