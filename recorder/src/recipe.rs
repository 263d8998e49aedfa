//! Agent recipes: how to install, configure and launch one agent version (TOML data, no Rust).
//!
//! ```toml
//! [agent]
//! name = "opencode"                 # recordings/<name>/<version>/
//! package = "opencode-ai"           # npm package, installed at {agents}/<package>@<version>
//! version = "1.18.33"
//! license = "MIT"
//! argv = ["{install}/node_modules/.bin/opencode", "acp"]
//! scripts = "opencode"              # model scripts: recorder/scripts/<scripts>/<case>.toml
//! ask_mode = ""                     # mode the cases' `set_mode` steps set ("" = leave the default)
//!
//! [agent.unrecordable]              # cases the scripts cover that this version cannot produce
//! plan = "offers the model no update_plan tool"
//!
//! [env]
//! OPENCODE_DISABLE_AUTOUPDATE = "1"
//!
//! [files]                           # written before launch; path and text take placeholders
//! "{home}/.config/opencode/opencode.json" = '''{ … "baseURL": "{base_url}/v1" … }'''
//! ```
//!
//! Placeholders: `{agents}` (install root), `{install}` (this package's install dir), `{run}`
//! (the run's folder), `{proj}`, `{outside}`, `{home}` (inside it), `{base_url}`
//! (`http://127.0.0.1:PORT` of the model server), `{port}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::template::{self, Vars};

pub const PLACEHOLDERS: &[&str] = &[
    "agents", "install", "run", "proj", "outside", "home", "base_url", "port",
];

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RecipeFile {
    agent: AgentTable,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    files: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentTable {
    name: String,
    package: String,
    version: String,
    license: String,
    argv: Vec<String>,
    scripts: String,
    #[serde(default)]
    ask_mode: String,
    #[serde(default)]
    startup_timeout_ms: Option<u64>,
    #[serde(default)]
    turn_timeout_ms: Option<u64>,
    #[serde(default)]
    settle_ms: Option<u64>,
    #[serde(default)]
    notes: Option<String>,
    #[serde(default)]
    unrecordable: BTreeMap<String, String>,
}

#[derive(Debug, Clone)]
pub struct Recipe {
    /// The file it came from.
    pub path: PathBuf,
    pub name: String,
    pub package: String,
    pub version: String,
    pub license: String,
    pub argv: Vec<String>,
    /// Folder of this agent's model scripts.
    pub scripts_dir: PathBuf,
    pub ask_mode: String,
    pub startup_timeout_ms: u64,
    pub turn_timeout_ms: u64,
    pub settle_ms: u64,
    pub notes: Option<String>,
    /// Cases the agent's scripts cover that this version cannot produce, with the reason: a
    /// full `record` or `check` leaves them out instead of recording a turn that is not the
    /// case's (a script step calling a tool this version no longer offers).
    pub unrecordable: BTreeMap<String, String>,
    pub env: BTreeMap<String, String>,
    pub files: BTreeMap<String, String>,
}

impl Recipe {
    pub fn load(path: &Path) -> Result<Recipe> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("recipe {}: cannot read it", path.display()))?;
        Recipe::parse(&text, path).with_context(|| format!("recipe {}", path.display()))
    }

    /// Parses a recipe; `path` locates its scripts folder (`../scripts/<scripts>` from the recipe).
    pub fn parse(text: &str, path: &Path) -> Result<Recipe> {
        let file: RecipeFile = toml::from_str(text).map_err(|e| anyhow::anyhow!("{e}"))?;
        let a = file.agent;
        for (key, value) in [
            ("agent.name", &a.name),
            ("agent.package", &a.package),
            ("agent.version", &a.version),
            ("agent.license", &a.license),
            ("agent.scripts", &a.scripts),
        ] {
            if value.trim().is_empty() {
                bail!("{key} is empty");
            }
        }
        if a.argv.is_empty() {
            bail!("agent.argv is empty");
        }
        if let Some((case, _)) = a.unrecordable.iter().find(|(_, why)| why.trim().is_empty()) {
            bail!("agent.unrecordable.{case}: give the reason");
        }
        for (n, arg) in a.argv.iter().enumerate() {
            template::check(arg, PLACEHOLDERS)
                .map_err(|e| anyhow::anyhow!("agent.argv[{n}]: {e}"))?;
        }
        for (key, value) in &file.env {
            template::check(value, PLACEHOLDERS).map_err(|e| anyhow::anyhow!("env.{key}: {e}"))?;
        }
        for (key, value) in &file.files {
            template::check(key, PLACEHOLDERS)
                .map_err(|e| anyhow::anyhow!("files.\"{key}\" (its path): {e}"))?;
            template::check(value, PLACEHOLDERS)
                .map_err(|e| anyhow::anyhow!("files.\"{key}\": {e}"))?;
            if !key.starts_with("{home}") && !key.starts_with("{run}") && !key.starts_with("{proj}")
            {
                bail!(
                    "files.\"{key}\": a file's path must start with {{home}}, {{run}} or {{proj}}"
                );
            }
        }
        let base = path.parent().unwrap_or(Path::new("."));
        Ok(Recipe {
            path: path.to_path_buf(),
            scripts_dir: base.join("..").join("scripts").join(&a.scripts),
            name: a.name,
            package: a.package,
            version: a.version,
            license: a.license,
            argv: a.argv,
            ask_mode: a.ask_mode,
            startup_timeout_ms: a.startup_timeout_ms.unwrap_or(90_000),
            turn_timeout_ms: a.turn_timeout_ms.unwrap_or(120_000),
            settle_ms: a.settle_ms.unwrap_or(2_000),
            notes: a.notes,
            unrecordable: a.unrecordable,
            env: file.env,
            files: file.files,
        })
    }

    /// `package@version`
    pub fn spec(&self) -> String {
        format!("{}@{}", self.package, self.version)
    }

    /// Where the package is installed below the agents root.
    pub fn install_dir(&self, agents: &Path) -> PathBuf {
        agents.join(self.spec())
    }

    /// The model script for `case`, if this agent has one.
    pub fn script_path(&self, case: &str) -> PathBuf {
        self.scripts_dir.join(format!("{case}.toml"))
    }

    /// argv, env and files with placeholders filled.
    pub fn filled(&self, vars: &Vars) -> Result<Filled> {
        let argv = self
            .argv
            .iter()
            .enumerate()
            .map(|(n, a)| {
                template::fill(a, vars).map_err(|e| anyhow::anyhow!("agent.argv[{n}]: {e}"))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut env = BTreeMap::new();
        for (k, v) in &self.env {
            env.insert(
                k.clone(),
                template::fill(v, vars).map_err(|e| anyhow::anyhow!("env.{k}: {e}"))?,
            );
        }
        let mut files = BTreeMap::new();
        for (k, v) in &self.files {
            let path =
                template::fill(k, vars).map_err(|e| anyhow::anyhow!("files.\"{k}\": {e}"))?;
            let text =
                template::fill(v, vars).map_err(|e| anyhow::anyhow!("files.\"{k}\": {e}"))?;
            files.insert(PathBuf::from(path), text);
        }
        Ok(Filled { argv, env, files })
    }
}

pub struct Filled {
    pub argv: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub files: BTreeMap<PathBuf, String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &str = "[agent]\nname = \"x\"\npackage = \"p\"\nversion = \"1\"\nlicense = \"MIT\"\n\
                      argv = [\"{install}/bin/x\"]\nscripts = \"x\"\n";

    fn err(text: &str) -> String {
        format!(
            "{:#}",
            Recipe::parse(text, Path::new("r/x.toml")).unwrap_err()
        )
    }

    #[test]
    fn parses() {
        let r = Recipe::parse(OK, Path::new("recipes/x.toml")).unwrap();
        assert_eq!(r.spec(), "p@1");
        assert!(r.scripts_dir.ends_with("scripts/x"));
        let vars: Vars = [("install".to_string(), "/i".to_string())].into();
        assert_eq!(r.filled(&vars).unwrap().argv, ["/i/bin/x"]);
    }

    #[test]
    fn unrecordable_cases_need_a_reason() {
        let r = Recipe::parse(
            &format!("{OK}[agent.unrecordable]\nplan = \"no plan tool\"\n"),
            Path::new("recipes/x.toml"),
        )
        .unwrap();
        assert_eq!(r.unrecordable["plan"], "no plan tool");
        assert!(
            err(&format!("{OK}[agent.unrecordable]\nplan = \" \"\n"))
                .contains("agent.unrecordable.plan")
        );
    }

    #[test]
    fn errors_name_the_key() {
        assert!(err(&format!("{OK}colour = 1\n")).contains("colour"));
        assert!(err(&format!("{OK}[env]\nA = \"{{nope}}\"\n")).contains("env.A"));
        assert!(
            err(&format!("{OK}[files]\n\"{{home}}/a\" = \"{{prt}}\"\n"))
                .contains("files.\"{home}/a\"")
        );
        assert!(err(&format!("{OK}[files]\n\"/etc/a\" = \"x\"\n")).contains("must start with"));
        assert!(
            err(&OK.replace("argv = [\"{install}/bin/x\"]", "argv = [\"{instal}/x\"]"))
                .contains("agent.argv[0]")
        );
        assert!(err(&OK.replace("license = \"MIT\"\n", "")).contains("license"));
        assert!(err(&OK.replace("[agent]", "[agent]\nmodel = \"x\"")).contains("model"));
    }
}
