//! Where recipes, cases, scripts and recordings live, and how a recording is written.
//!
//! ```text
//! recorder/recipes/<package@version>.toml   agent recipes
//! recorder/cases/<case>.toml                the user's side of each case
//! recorder/scripts/<agent>/<case>.toml      the model's side, in the agent's tool names
//! recordings/<agent>/<version>/<case>.jsonl          the wire transcript (harness format)
//! recordings/<agent>/<version>/<case>.model.jsonl    the model requests the agent made
//! recordings/<agent>/<version>/<case>.meta.json      package@version, recipe, case, script
//! ```

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::json;

use crate::case::Case;
use crate::recipe::Recipe;
use crate::run::Recorded;

/// `recorder/` (the recipe's folder's parent).
pub fn recorder_dir(recipe: &Recipe) -> PathBuf {
    recipe.path.parent().unwrap_or(Path::new(".")).join("..")
}

pub fn cases_dir(recipe: &Recipe) -> PathBuf {
    recorder_dir(recipe).join("cases")
}

pub fn recordings_root(recipe: &Recipe) -> PathBuf {
    recorder_dir(recipe).join("..").join("recordings")
}

/// The cases (by name, sorted) that have both a case file and a model script for this recipe.
pub fn cases_with_scripts(recipe: &Recipe) -> Result<Vec<String>> {
    let dir = cases_dir(recipe);
    let mut names = Vec::new();
    for entry in
        std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?
    {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "toml")
            && let Some(stem) = path.file_stem().map(|s| s.to_string_lossy().into_owned())
            && recipe.script_path(&stem).is_file()
        {
            names.push(stem);
        }
    }
    names.sort();
    Ok(names)
}

/// The folder of one version's recordings.
pub fn version_dir(root: &Path, recipe: &Recipe) -> PathBuf {
    root.join(&recipe.name).join(&recipe.version)
}

/// A path relative to the repository (for meta files), `/`-separated.
fn repo_relative(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    match text.find("recorder/") {
        Some(i) => text[i..].to_string(),
        None => text,
    }
    .replace("/recipes/../", "/")
}

/// Writes a finished recording (temp files first, renamed at the end: a failed write leaves
/// no half recording under the final names).
pub fn write(
    root: &Path,
    recipe: &Recipe,
    case: &Case,
    script_path: &Path,
    rec: &Recorded,
) -> Result<PathBuf> {
    let dir = version_dir(root, recipe);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut wire = String::new();
    for e in &rec.entries {
        wire += &serde_json::to_string(e)?;
        wire.push('\n');
    }
    let mut model = String::new();
    for r in &rec.model {
        model += &serde_json::to_string(r)?;
        model.push('\n');
    }
    let meta = json!({
        "package": recipe.package,
        "version": recipe.version,
        "agent": recipe.name,
        "license": recipe.license,
        "recipe": repo_relative(&recipe.path),
        "case": case.name,
        "case_file": format!("recorder/cases/{}.toml", case.name),
        "description": case.description,
        "model_script": repo_relative(script_path),
        "recorded_with": format!("acp-record {}", env!("CARGO_PKG_VERSION")),
        "agent_exit": rec.exit,
        "frames": rec.entries.len(),
        "model_requests": rec.model.len(),
    });
    let files = [
        (format!("{}.jsonl", case.name), wire),
        (format!("{}.model.jsonl", case.name), model),
        (
            format!("{}.meta.json", case.name),
            serde_json::to_string_pretty(&meta)? + "\n",
        ),
    ];
    for (name, text) in &files {
        std::fs::write(dir.join(format!(".{name}.tmp")), text)?;
    }
    for (name, _) in &files {
        std::fs::rename(dir.join(format!(".{name}.tmp")), dir.join(name))?;
    }
    Ok(dir.join(&files[0].0))
}
