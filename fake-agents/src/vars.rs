//! The template variables of one run: built-ins (`${cwd}`, `${outside}`, `${cwdFromRoot}`,
//! `${outsideFromRoot}`, `${sessionId}`, `${toolCallId}`), the profile's and the scenario's
//! `[vars]`, captures, and `${profile.NAME}`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::profile::{DEFAULT_SESSION_ID, DEFAULT_TOOL_CALL_ID, Profile};
use crate::template;

/// How deep `${profile.A}` may refer to `${profile.B}` … (cycles are refused when profiles are
/// parsed; this only bounds the work).
const MAX_DEPTH: usize = 16;

#[derive(Debug, Default, Clone)]
pub struct Vars {
    map: HashMap<String, Value>,
    profile: Option<Arc<Profile>>,
}

/// `path` without its leading `/` (the path relative to the filesystem root).
fn from_root(path: &Path) -> String {
    path.to_string_lossy().trim_start_matches('/').to_owned()
}

impl Vars {
    /// The variables a scenario starts with: built-ins, then the profile's `[vars]`, then the
    /// scenario's (later ones may use earlier ones and override them). `Vars::initial` does the
    /// same from a whole `Scenario`; it is defined next to that type
    /// so that this module does not import the scenario module (which imports this one).
    pub fn from_parts(
        profile: Option<Arc<Profile>>,
        scenario_vars: &[(String, String)],
        cwd: &Path,
        outside: &Path,
    ) -> Result<Vars, String> {
        let mut vars = Vars {
            map: HashMap::new(),
            profile,
        };
        vars.set("cwd", json!(cwd.to_string_lossy()));
        vars.set("outside", json!(outside.to_string_lossy()));
        // The same paths relative to the filesystem root (opencode titles a file by its path from
        // the worktree, which is `/` in a folder that is not a git repository).
        vars.set("cwdFromRoot", json!(from_root(cwd)));
        vars.set("outsideFromRoot", json!(from_root(outside)));
        vars.set("sessionId", json!(DEFAULT_SESSION_ID));
        vars.set("toolCallId", json!(DEFAULT_TOOL_CALL_ID));
        let profile_vars = vars.profile.clone();
        let profile_vars = profile_vars.iter().flat_map(|p| p.vars.iter());
        for (name, value) in profile_vars.chain(scenario_vars.iter()) {
            let filled = vars
                .fill_str(value)
                .map_err(|e| format!("[vars] {name}: {e}"))?;
            vars.set(name, Value::String(filled));
        }
        Ok(vars)
    }

    fn lookup(&self, name: &str, depth: usize) -> Result<Value, String> {
        if let Some(frame) = name.strip_prefix("profile.") {
            let profile = self
                .profile
                .as_ref()
                .ok_or_else(|| format!("`${{{name}}}` used without a profile"))?;
            let value = profile
                .frame(frame)
                .ok_or_else(|| format!("profile {} has no frame `{frame}`", profile.key()))?;
            if depth > MAX_DEPTH {
                return Err(format!("`${{{name}}}` nests too deeply"));
            }
            return template::expand(value, &mut |n| self.lookup(n, depth + 1));
        }
        self.map.get(name).cloned().ok_or_else(|| {
            format!(
                "variable `${{{name}}}` has no value here (the step that captures it did not run)"
            )
        })
    }

    /// The JSON value of one variable (`${name}` as a whole string).
    pub fn value_of(&self, name: &str) -> Result<Value, String> {
        self.lookup(name, 0)
    }

    /// Fills every template in a JSON value.
    pub fn fill(&self, value: &Value) -> Result<Value, String> {
        template::expand(value, &mut |n| self.lookup(n, 0))
    }

    /// Fills every template in a text.
    pub fn fill_str(&self, s: &str) -> Result<String, String> {
        template::expand_str(s, &mut |n| self.lookup(n, 0))
    }

    pub fn set(&mut self, name: &str, value: Value) {
        self.map.insert(name.to_owned(), value);
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name)
    }
}
