//! Cases: the user's side of one recording, in the scenario vocabulary (TOML data).
//!
//! ```toml
//! description = "edit a file in the project"
//! [files]                                # created in the run's folder before launch
//! "proj/notes.md" = "helo world\n"         # below proj/, outside/ or a sibling proj-<name>/
//! [symlinks]                             # link (below the run's folder) = folder it points to
//! "proj/docs" = "outside"
//!
//! [[step]]
//! user = "new_session"
//! [[step]]
//! user = "set_mode"
//! mode = "{ask_mode}"                    # the recipe's ask_mode; skipped when it is ""
//! [[step]]
//! user = "prompt"
//! text = "Fix the typo in notes.md"
//! [[step]]
//! user = "choose"                        # waits for a permission request, answers it
//! kind = "allow_once"                    # allow_once|allow_always|reject_once|reject_always|cancelled
//! all = true                             # and every later one until the turn ends
//! [[step]]
//! await = "prompt_end"                   # prompt_end | permission | withdrawn
//! ```
//!
//! Every step may wait `delay_ms` first; an `await` (and `choose`) gives up after `timeout_ms`
//! (an error, or the next step when `optional = true`). A `set_mode` with `optional = true` goes
//! on when the agent refuses the mode (an error answer, recorded as such).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::template;

pub const PLACEHOLDERS: &[&str] = &["ask_mode", "proj", "outside"];
pub const KINDS: &[&str] = &[
    "allow_once",
    "allow_always",
    "reject_once",
    "reject_always",
    "cancelled",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    description: String,
    #[serde(default)]
    files: BTreeMap<String, String>,
    #[serde(default)]
    symlinks: BTreeMap<String, String>,
    #[serde(default, rename = "step")]
    steps: Vec<StepFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepFile {
    #[serde(default)]
    user: Option<String>,
    #[serde(default, rename = "await")]
    wait: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    all: bool,
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    optional: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    NewSession,
    SetMode(String),
    Prompt(String),
    Choose { kind: String, all: bool },
    Cancel,
    AwaitPromptEnd,
    AwaitPermission,
    AwaitWithdrawn,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub action: Action,
    pub delay_ms: u64,
    pub timeout_ms: Option<u64>,
    pub optional: bool,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub description: String,
    /// Files below the run's folder (`proj/…`, `outside/…`, a sibling `proj-<name>/…`).
    pub files: BTreeMap<String, String>,
    /// Symbolic links below the run's folder, each to a folder or file of it (run-relative
    /// paths, as `files`): a link in the project that leads out of it.
    pub symlinks: BTreeMap<String, String>,
    pub steps: Vec<Step>,
}

impl Case {
    pub fn load(path: &Path) -> Result<Case> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("case {}: cannot read it", path.display()))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Case::parse(&text, &name).with_context(|| format!("case {}", path.display()))
    }

    pub fn parse(text: &str, name: &str) -> Result<Case> {
        let file: CaseFile = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        for path in file.files.keys() {
            if !in_run(path, false) {
                bail!(
                    "files.\"{path}\": a case's file lies below proj/, outside/ or a sibling proj-<name>/"
                );
            }
        }
        for (link, target) in &file.symlinks {
            if !in_run(link, false) || !in_run(target, true) {
                bail!(
                    "symlinks.\"{link}\": a link and its target lie below proj/, outside/ or a sibling proj-<name>/"
                );
            }
        }
        let mut steps = Vec::new();
        for (n, s) in file.steps.into_iter().enumerate() {
            let at = format!("step[{n}]");
            let unused = |key: &str, set: bool| -> Result<()> {
                if set {
                    bail!("{at}: `{key}` does not apply to this step");
                }
                Ok(())
            };
            let action = match (s.user.as_deref(), s.wait.as_deref()) {
                (Some(_), Some(_)) => bail!("{at}: both `user` and `await`"),
                (None, None) => bail!("{at}: neither `user` nor `await`"),
                (Some("new_session"), None) => Action::NewSession,
                (Some("set_mode"), None) => {
                    let mode = s
                        .mode
                        .clone()
                        .ok_or_else(|| anyhow::anyhow!("{at}: set_mode needs `mode`"))?;
                    template::check(&mode, PLACEHOLDERS)
                        .map_err(|e| anyhow::anyhow!("{at}.mode: {e}"))?;
                    Action::SetMode(mode)
                }
                (Some("prompt"), None) => {
                    let text = s
                        .text
                        .clone()
                        .ok_or_else(|| anyhow::anyhow!("{at}: prompt needs `text`"))?;
                    template::check(&text, PLACEHOLDERS)
                        .map_err(|e| anyhow::anyhow!("{at}.text: {e}"))?;
                    Action::Prompt(text)
                }
                (Some("choose"), None) => {
                    let kind = s
                        .kind
                        .clone()
                        .ok_or_else(|| anyhow::anyhow!("{at}: choose needs `kind`"))?;
                    if !KINDS.contains(&kind.as_str()) {
                        bail!("{at}.kind: `{kind}` is not one of {}", KINDS.join(", "));
                    }
                    Action::Choose { kind, all: s.all }
                }
                (Some("cancel"), None) => Action::Cancel,
                (Some(other), None) => bail!(
                    "{at}.user: unknown action `{other}` (new_session, set_mode, prompt, choose, cancel)"
                ),
                (None, Some("prompt_end")) => Action::AwaitPromptEnd,
                (None, Some("permission")) => Action::AwaitPermission,
                (None, Some("withdrawn")) => Action::AwaitWithdrawn,
                (None, Some(other)) => {
                    bail!("{at}.await: unknown event `{other}` (prompt_end, permission, withdrawn)")
                }
            };
            unused(
                "mode",
                s.mode.is_some() && !matches!(action, Action::SetMode(_)),
            )?;
            unused(
                "text",
                s.text.is_some() && !matches!(action, Action::Prompt(_)),
            )?;
            unused(
                "kind",
                s.kind.is_some() && !matches!(action, Action::Choose { .. }),
            )?;
            unused("all", s.all && !matches!(action, Action::Choose { .. }))?;
            steps.push(Step {
                action,
                delay_ms: s.delay_ms,
                timeout_ms: s.timeout_ms,
                optional: s.optional,
            });
        }
        if !steps.iter().any(|s| s.action == Action::NewSession) {
            bail!("no `user = \"new_session\"` step");
        }
        Ok(Case {
            name: name.to_string(),
            description: file.description,
            files: file.files,
            symlinks: file.symlinks,
            steps,
        })
    }
}

/// Whether `path` (run-relative) lies in a folder the run makes for the case: `proj/`,
/// `outside/`, or a sibling of the project whose name starts with the project's (`proj-<name>/`,
/// the folder a string-prefix workspace check takes for the project). `folder`: the path may
/// also be one of those folders itself.
pub(crate) fn in_run(path: &str, folder: bool) -> bool {
    if path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return false;
    }
    let top = path.split('/').next().unwrap_or_default();
    let known = top == "proj"
        || top == "outside"
        || top.strip_prefix("proj-").is_some_and(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    known && (folder || path.contains('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        format!("{:#}", Case::parse(text, "c").unwrap_err())
    }

    const HEAD: &str = "description = \"d\"\n[[step]]\nuser = \"new_session\"\n";

    #[test]
    fn parses() {
        let c = Case::parse(
            &format!("{HEAD}[[step]]\nuser = \"prompt\"\ntext = \"hi\"\n[[step]]\nuser = \"choose\"\nkind = \"allow_once\"\nall = true\n[[step]]\nawait = \"withdrawn\"\ntimeout_ms = 3000\noptional = true\n"),
            "c",
        )
        .unwrap();
        assert_eq!(c.steps.len(), 4);
        assert_eq!(
            c.steps[2].action,
            Action::Choose {
                kind: "allow_once".into(),
                all: true
            }
        );
        assert!(c.steps[3].optional);
    }

    #[test]
    fn files_and_links_stay_in_the_run_s_folders() {
        let case = Case::parse(
            "description = \"d\"\n[files]\n\"proj-backup/a.md\" = \"x\"\n[symlinks]\n\"proj/docs\" = \"outside\"\n[[step]]\nuser = \"new_session\"\n",
            "c",
        )
        .unwrap();
        assert_eq!(case.symlinks["proj/docs"], "outside");
        assert!(case.files.contains_key("proj-backup/a.md"));
        for bad in [
            "proj/../x",
            "projx/a",
            "proj-/a",
            "home/a",
            "proj",
            "/etc/x",
        ] {
            assert!(!in_run(bad, false), "{bad}");
        }
        assert!(in_run("outside", true));
        assert!(err("description = \"d\"\n[symlinks]\n\"proj/docs\" = \"/etc\"\n[[step]]\nuser = \"new_session\"\n").contains("symlinks.\"proj/docs\""));
    }

    #[test]
    fn errors_name_the_key() {
        assert!(
            err(&format!(
                "{HEAD}[[step]]\nuser = \"choose\"\nkind = \"allow\"\n"
            ))
            .contains("step[1].kind")
        );
        assert!(err(&format!("{HEAD}[[step]]\nuser = \"dance\"\n")).contains("step[1].user"));
        assert!(err(&format!("{HEAD}[[step]]\nawait = \"x\"\n")).contains("step[1].await"));
        assert!(
            err(&format!(
                "{HEAD}[[step]]\nuser = \"cancel\"\ntext = \"x\"\n"
            ))
            .contains("`text`")
        );
        assert!(
            err(&format!(
                "{HEAD}[[step]]\nuser = \"prompt\"\ntext = \"{{cwd}}\"\n"
            ))
            .contains("{cwd}")
        );
        assert!(err(&format!("{HEAD}colour = 1\n")).contains("colour"));
        assert!(err("description = \"d\"\n").contains("new_session"));
        assert!(err("description = \"d\"\n[files]\n\"/etc/x\" = \"\"\n[[step]]\nuser = \"new_session\"\n").contains("files.\"/etc/x\""));
    }
}
