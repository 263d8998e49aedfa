//! Every source the repository cites must be one a user can open: an upstream repository, path
//! and commit, an issue or pull request, or a file of this repository (`docs/`,
//! `judge/rules.toml`). The project was built from research notes that users do not have; this
//! test fails, naming file and line, wherever a tracked file still points at them.

use std::fs;
use std::path::{Path, PathBuf};

/// Citations of material outside the repository. Built with `concat!` so that this file does
/// not match itself.
const FORBIDDEN: &[&str] = &[
    concat!("..", "/shared"),
    concat!("acp-spec", ".md"),
    concat!("acp-spec", " §"),
    concat!("agents-", "opencode-qwen"),
    concat!("agents-", "codex-claude"),
    concat!("reference", "/recordings"),
    concat!("DESIGN", ".md"),
    concat!("DESIGN", " §"),
];

/// Directories that hold build output, dependencies or run output, never tracked sources.
const SKIPPED_DIRS: &[&str] = &["target", ".git", "node_modules", "acp-results", "acp-bench"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("harness/ has a parent")
        .to_path_buf()
}

/// Every regular file below `dir`, symlinks not followed, skipped directories left out.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if kind.is_dir() {
            // `target-*`: fuzz builds of their own (fuzz/README.md: `--target-dir fuzz/target-mapping`).
            if !SKIPPED_DIRS.contains(&&*name) && !name.starts_with("target-") {
                walk(&path, files);
            }
        } else if kind.is_file() && !name.ends_with(".snap.new") {
            files.push(path);
        }
    }
}

/// Whether `line` carries a JSON-RPC message as recorded from an agent, escaped or not.
fn is_wire_frame(line: &str) -> bool {
    line.contains(r#""jsonrpc":"2.0""#) || line.contains(r#"\"jsonrpc\":\"2.0\""#)
}

/// `file:line: text` for each line of `text` that cites something in [`FORBIDDEN`].
fn offending_lines(relative: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        // A JSON-RPC frame quoted verbatim (a recording, a scenario's `send`) is an agent's
        // words, not ours: qwen-code's bundled skills name their own design notes.
        .filter(|(_, line)| !is_wire_frame(line))
        .filter(|(_, line)| FORBIDDEN.iter().any(|pattern| line.contains(pattern)))
        .map(|(index, line)| format!("{relative}:{}: {}", index + 1, line.trim()))
        .collect()
}

#[test]
fn no_file_cites_sources_users_cannot_open() {
    let root = workspace_root();
    let mut files = Vec::new();
    walk(&root, &mut files);
    files.sort();
    assert!(
        files.iter().any(|file| file.ends_with("README.md")),
        "the walk found no README.md below {}: wrong root",
        root.display()
    );
    let mut offending = Vec::new();
    for file in &files {
        // Binary files (images, fuzz corpus entries) cannot hold a citation a person reads.
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        let relative = file
            .strip_prefix(&root)
            .unwrap_or(file.as_path())
            .to_string_lossy();
        offending.extend(offending_lines(&relative, &text));
    }
    assert!(
        offending.is_empty(),
        "{} line(s) cite material outside the repository; cite the public source (upstream \
         repository, path and commit, or an issue/PR URL), a spec rule as R<n> \
         (judge/rules.toml), or docs/architecture.md §<n> / docs/agents/ instead:\n{}",
        offending.len(),
        offending.join("\n")
    );
}

#[test]
fn every_forbidden_pattern_is_detected() {
    for pattern in FORBIDDEN {
        let text = format!("first line\nsee {pattern} for details\n");
        let found = offending_lines("x.md", &text);
        assert_eq!(found.len(), 1, "{pattern} was not detected");
        assert!(found[0].starts_with("x.md:2: "), "{found:?}");
    }
    assert!(offending_lines("x.md", "docs/architecture.md §5.1, R43\n").is_empty());
}
