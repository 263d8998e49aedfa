//! Shared by the acp-reports integration tests: the fixture runs (tests/fixtures, made by
//! tests/fixtures/regenerate.sh from real harness runs) and a small reader for the written pages.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acp_reports::LoadedRun;

/// The fixture runs: `reference`, `always-command`, `crashing`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
        .join("run.json")
}

pub fn load(name: &str) -> LoadedRun {
    acp_reports::load_run(&fixture(name)).expect("fixture run.json loads")
}

pub fn all_fixtures() -> Vec<LoadedRun> {
    ["reference", "always-command", "crashing"]
        .iter()
        .map(|n| load(n))
        .collect()
}

/// Every file written under `dir`, by path relative to it.
pub fn pages(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                let text = std::fs::read_to_string(&path).unwrap();
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), text);
            }
        }
    }
    out
}

/// Values of `attr="…"` in an HTML text, entity-decoded for the few entities askama writes.
pub fn attr_values(html: &str, attr: &str) -> Vec<String> {
    let needle = format!(" {attr}=\"");
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        let end = rest.find('"').unwrap();
        out.push(decode(&rest[..end]));
        rest = &rest[end..];
    }
    out
}

pub fn decode(text: &str) -> String {
    text.replace("&#34;", "\"")
        .replace("&#39;", "'")
        .replace("&#60;", "<")
        .replace("&#62;", ">")
        .replace("&#38;", "&")
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Every tag (`<…>`) of an HTML text. Escaped text never contains `<`, so these are exactly the
/// page's markup.
pub fn tags(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at..];
        let end = rest.find('>').map_or(rest.len(), |e| e + 1);
        out.push(&rest[..end]);
        rest = &rest[end..];
    }
    out
}
