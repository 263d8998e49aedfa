//! `[[setup]]` entries: path keys, companion keys, templates, and paths kept inside the case
//! directory.

use toml::Spanned;

use super::{Ctx, R};
use crate::profile::Profile;
use crate::scenario::raw::{RawSetup, S};
use crate::scenario::setup::{self, Setup, SetupEntry, SetupField};

impl Ctx<'_> {
    /// `[[setup]]` entries: one path key each, its companion keys, templates known here, and
    /// every path inside the case directory (checked against a stand-in one, so the error has
    /// the entry's position; the runner checks again with the real directory).
    pub(super) fn setup_entries(
        &self,
        raws: &[Spanned<RawSetup>],
        profile: Option<std::sync::Arc<Profile>>,
        vars: &[(String, String)],
    ) -> R<Vec<Setup>> {
        let root = std::path::Path::new(setup::STAND_IN_ROOT);
        let (cwd, outside) = (root.join("work"), root.join("outside"));
        let filled = crate::vars::Vars::from_parts(profile, vars, &cwd, &outside)
            .map_err(|e| self.err(0, e))?;
        let mut out: Vec<Setup> = Vec::new();
        let mut seen: Vec<std::path::PathBuf> = Vec::new();
        for raw in raws {
            let r = raw.get_ref();
            let start = raw.span().start;
            let entry = self.setup_entry(r, start)?;
            let (path_s, target_s) = match (&r.dir, &r.file, &r.symlink) {
                (Some(p), _, _) | (_, Some(p), _) => (p, None),
                (_, _, Some(p)) => (p, r.target.as_ref()),
                _ => unreachable!("setup_entry checked that one path key is present"),
            };
            let (path, _) = setup::resolve(&entry, &filled, root, &cwd, &outside).map_err(|e| {
                let at = match (e.field, target_s) {
                    (SetupField::Target, Some(t)) => t.span().start,
                    _ => path_s.span().start,
                };
                self.err(at, e.message)
            })?;
            if seen.contains(&path) {
                return Err(self.err(
                    path_s.span().start,
                    format!(
                        "an earlier [[setup]] entry already creates {:?}",
                        path_s.get_ref()
                    ),
                ));
            }
            seen.push(path);
            out.push(Setup {
                line: self.src.text.line(start),
                entry,
            });
        }
        Ok(out)
    }

    pub(super) fn setup_entry(&self, r: &RawSetup, start: usize) -> R<SetupEntry> {
        let keys: Vec<(&str, &S)> = [("dir", &r.dir), ("file", &r.file), ("symlink", &r.symlink)]
            .into_iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
            .collect();
        let (key, path) = match keys.as_slice() {
            [] => {
                return Err(self.err(
                    start,
                    "a [[setup]] entry needs one of `dir`, `file`, `symlink`",
                ));
            }
            [_, (_, second), ..] => {
                return Err(self.err(
                    second.span().start,
                    "a [[setup]] entry creates one thing: write one [[setup]] per `dir`, `file`, `symlink`",
                ));
            }
            [(key, path)] => (*key, self.text(path)?),
        };
        let refuse = |companion: &str, v: &Option<S>| -> R<()> {
            match v {
                Some(v) => Err(self.err(
                    v.span().start,
                    format!("`{companion}` does not belong in a `{key}` entry"),
                )),
                None => Ok(()),
            }
        };
        Ok(match key {
            "dir" => {
                refuse("target", &r.target)?;
                refuse("content", &r.content)?;
                SetupEntry::Dir { path }
            }
            "file" => {
                refuse("target", &r.target)?;
                SetupEntry::File {
                    path,
                    content: match &r.content {
                        Some(c) => self.text(c)?,
                        None => String::new(),
                    },
                }
            }
            _ => {
                refuse("content", &r.content)?;
                let Some(target) = &r.target else {
                    return Err(self.err(
                        start,
                        "a `symlink` entry needs `target = \"…\"` (what the link points at)",
                    ));
                };
                SetupEntry::Symlink {
                    path,
                    target: self.text(target)?,
                }
            }
        })
    }
}
