//! `extends`: a profile that is another profile with a few top-level keys changed (another
//! permission mode of the same client, the same client on a terminal). The derived file names
//! its base, a file in the same folder; every top-level key the derived file writes replaces the
//! base's whole value of that key (a `[policy]` table replaces the base's `[policy]`, an `argv`
//! its `argv`), and everything else is the base's. A base may extend another in turn.
//!
//! Why whole keys and not a deep merge: a reader of the derived file sees everything that
//! differs, and a table is never half one file's and half the other's (a deep merge of
//! `[[observer.rule]]` arrays would have to say whether rules append or replace, and an
//! `[observer]` with the base's `command` and the derived file's rules would be both at once).
//! Why the same folder: relative paths in a profile (`program = "./…"`, a relative argv[0], a
//! cancel or observer command) resolve against the folder of the profile being run, so a base
//! elsewhere would see its paths resolve against the wrong folder.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use toml::{Table, Value};

/// Longest chain of bases followed (a longer one is almost surely a mistake, and a cycle is
/// reported before this is reached).
const MAX_DEPTH: usize = 8;

/// A profile file's text and, if it extends others, the merged table and the chain of bases.
pub(super) struct Merged {
    /// The derived file's own text (its TOML errors keep their line and column).
    pub text: String,
    /// `None` if the file extends nothing.
    pub table: Option<Table>,
    /// The bases followed, nearest first (for error messages).
    pub bases: Vec<PathBuf>,
}

impl Merged {
    /// "what it extends: b.toml, a.toml", for a message about a merged profile.
    pub fn described(&self) -> String {
        format!("what it extends: {}", names(&self.bases, ", "))
    }
}

/// Reads `path` and follows its `extends` chain.
pub(super) fn read(path: &Path) -> Result<Merged> {
    let text = read_text(path)?;
    let own = parse(&text, path)?;
    if !own.contains_key("extends") {
        return Ok(Merged {
            text,
            table: None,
            bases: Vec::new(),
        });
    }
    let mut chain = vec![path.to_path_buf()];
    let mut layers = vec![own];
    loop {
        let current = chain.last().expect("the chain starts with the profile");
        let Some(base) = layers.last().and_then(|t| t.get("extends")) else {
            break;
        };
        let base = base_path(base, current)?;
        if chain.iter().any(|seen| same_file(seen, &base)) {
            bail!(
                "{}: `extends` goes round in a circle: {} → {}",
                path.display(),
                names(&chain, " → "),
                file_name(&base)
            );
        }
        if chain.len() > MAX_DEPTH {
            bail!(
                "{}: `extends` follows more than {MAX_DEPTH} profiles ({}); flatten some of them",
                path.display(),
                names(&chain, " → ")
            );
        }
        let base_text = read_text(&base)
            .map_err(|e| anyhow::anyhow!("{}: `extends`: {e:#}", current.display()))?;
        layers.push(parse(&base_text, &base)?);
        chain.push(base);
    }
    // The farthest base first; each nearer file replaces the keys it writes.
    let mut merged = Table::new();
    for layer in layers.into_iter().rev() {
        for (key, value) in layer {
            merged.insert(key, value);
        }
    }
    merged.remove("extends");
    Ok(Merged {
        text,
        table: Some(merged),
        bases: chain.split_off(1),
    })
}

fn read_text(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        anyhow::anyhow!(
            "cannot read client profile {}: {e} (a client is a JSON argv array or a profile path)",
            path.display()
        )
    })
}

fn parse(text: &str, path: &Path) -> Result<Table> {
    toml::from_str::<Table>(text)
        .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))
}

/// The base `extends` names: a file name in the folder of the profile that names it.
fn base_path(value: &Value, profile: &Path) -> Result<PathBuf> {
    let at = profile.display();
    let Some(name) = value.as_str() else {
        bail!("{at}: `extends` is the file name of another profile in this folder, a string");
    };
    let plain = Path::new(name)
        .file_name()
        .is_some_and(|f| f == std::ffi::OsStr::new(name));
    if name.is_empty() || !plain || name == "." || name == ".." {
        bail!(
            "{at}: `extends = {name:?}`: name a profile in this folder by its file name alone \
             (relative paths in a profile resolve against its own folder)"
        );
    }
    Ok(profile.parent().unwrap_or(Path::new(".")).join(name))
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

fn names(chain: &[PathBuf], separator: &str) -> String {
    chain
        .iter()
        .map(|p| file_name(p))
        .collect::<Vec<_>>()
        .join(separator)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        dir
    }

    #[test]
    fn a_file_without_extends_is_read_as_it_is() {
        let dir = folder(&[("a.toml", "name = \"a\"\n")]);
        let merged = read(&dir.path().join("a.toml")).unwrap();
        assert!(merged.table.is_none());
        assert!(merged.bases.is_empty());
        assert_eq!(merged.text, "name = \"a\"\n");
    }

    #[test]
    fn the_nearest_file_replaces_whole_top_level_keys() {
        let dir = folder(&[
            (
                "base.toml",
                "name = \"base\"\nargv = [\"x\"]\n[policy]\nname = \"p\"\nflags = [\"--p\"]\n[env]\nHOME = \"h\"\n",
            ),
            (
                "middle.toml",
                "extends = \"base.toml\"\nname = \"middle\"\n[policy]\nname = \"q\"\n",
            ),
            ("top.toml", "extends = \"middle.toml\"\nname = \"top\"\n"),
        ]);
        let merged = read(&dir.path().join("top.toml")).unwrap();
        let table = merged.table.unwrap();
        assert_eq!(table["name"].as_str(), Some("top"));
        assert_eq!(table["argv"].as_array().unwrap().len(), 1);
        // The middle file's [policy] replaced the base's whole table: no `flags` left.
        let policy = table["policy"].as_table().unwrap();
        assert_eq!(policy["name"].as_str(), Some("q"));
        assert!(!policy.contains_key("flags"));
        assert_eq!(table["env"]["HOME"].as_str(), Some("h"));
        assert!(!table.contains_key("extends"));
        assert_eq!(merged.bases.len(), 2);
    }

    #[test]
    fn bad_chains_are_named() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[("a.toml", "extends = \"a.toml\"\n")],
                "in a circle: a.toml → a.toml",
            ),
            (
                &[
                    ("a.toml", "extends = \"b.toml\"\n"),
                    ("b.toml", "extends = \"a.toml\"\n"),
                ],
                "in a circle: a.toml → b.toml → a.toml",
            ),
            (&[("a.toml", "extends = \"gone.toml\"\n")], "gone.toml"),
            (
                &[("a.toml", "extends = \"../b.toml\"\n")],
                "by its file name alone",
            ),
            (
                &[("a.toml", "extends = \"sub/b.toml\"\n")],
                "by its file name alone",
            ),
            (&[("a.toml", "extends = 3\n")], "a string"),
            (
                &[
                    ("a.toml", "extends = \"b.toml\"\n"),
                    ("b.toml", "name = \n"),
                ],
                "b.toml",
            ),
        ];
        for (files, needle) in cases {
            let dir = folder(files);
            let err = format!("{:#}", read(&dir.path().join("a.toml")).err().unwrap());
            assert!(err.contains(needle), "{needle:?} not in {err}");
        }
    }

    #[test]
    fn a_long_chain_is_refused() {
        let files: Vec<(String, String)> = (0..=MAX_DEPTH + 1)
            .map(|i| {
                (
                    format!("p{i}.toml"),
                    format!("extends = \"p{}.toml\"\n", i + 1),
                )
            })
            .chain([(
                format!("p{}.toml", MAX_DEPTH + 2),
                "name = \"end\"\n".to_owned(),
            )])
            .collect();
        let refs: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let dir = folder(&refs);
        let err = format!("{:#}", read(&dir.path().join("p0.toml")).err().unwrap());
        assert!(err.contains("more than 8 profiles"), "{err}");
    }
}
