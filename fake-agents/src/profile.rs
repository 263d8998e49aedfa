//! Agent profiles: the shapes shared by every scenario of one agent version (scenarios/README.md,
//! "Agent profiles"): id formats, the `initialize` and `session/new` results, option sets.
//!
//! Profiles are compiled into the binary (`include_str!`), so the harness and the standalone
//! agent need no data files at run time; a unit test makes sure no file in `profiles/` is
//! forgotten in [`EMBEDDED`].

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::de::{Ordered, Src};
use crate::error::ScenarioError;
use crate::template;

/// Variables every scenario has, whatever its profile (README, "Templating"). `id` is not among
/// them: it is only valid as the id of a `send` frame.
pub const BUILTIN_VARS: &[&str] = &[
    "cwd",
    "outside",
    "cwdFromRoot",
    "outsideFromRoot",
    "sessionId",
    "toolCallId",
];

/// The built-in variables the harness sets from the case's folders: no profile, `[vars]` or
/// capture may set them.
pub const HARNESS_PATH_VARS: &[&str] = &["cwd", "outside", "cwdFromRoot", "outsideFromRoot"];

/// Defaults of the built-in variables a profile may override.
pub const DEFAULT_SESSION_ID: &str = "sess_1";
pub const DEFAULT_TOOL_CALL_ID: &str = "call_1";

/// Frames every profile must define (used by the `handshake` step).
pub const REQUIRED_FRAMES: &[&str] = &["initialize", "session_new"];

macro_rules! embedded {
    ($($key:literal),* $(,)?) => {
        &[$((concat!($key, ".toml"), include_str!(concat!("../profiles/", $key, ".toml")))),*]
    };
}

/// Every profile compiled in, as `(file name, text)`. Adding a profile is one line here.
pub const EMBEDDED: &[(&str, &str)] = embedded![
    "claude-agent-acp@0.25",
    "claude-agent-acp@0.85",
    "claude-agent-acp@0.101",
    "codex-acp@0.13",
    "codex-acp@1.6",
    "codex-acp@2.6",
    "opencode@1.15",
    "opencode@1.18",
    "qwen-code@0.14",
    "qwen-code@0.21",
    "qwen-code@0.24",
];

/// Display folder of embedded profiles in error messages.
pub const EMBEDDED_DIR: &str = "fake-agents/profiles";

/// One agent version's shapes.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub agent: String,
    pub version: String,
    pub title: String,
    pub sources: Vec<String>,
    /// Defaults for template variables, in file order (values are templates themselves).
    pub vars: Vec<(String, String)>,
    /// JSON values usable as `"${profile.NAME}"`, in file order (they may contain templates).
    pub frames: Vec<(String, Value)>,
    /// `[errors]`: the JSON-RPC error object the real agent answers a client request of that
    /// method with when the request is not one a scenario step takes (an `authenticate` with a
    /// method id the agent refuses). Plain JSON, no templates.
    pub errors: Vec<(String, Value)>,
    /// `[results]`: the result the real agent answers a client request of that method with when
    /// no scenario step takes it: a method it implements and advertises (opencode 1.18's
    /// `session/list`). JSON whose templates are filled with the case's variables.
    pub results: Vec<(String, Value)>,
    /// Where it was read from (for messages).
    pub file: String,
}

impl Profile {
    /// `agent@version`, the name scenarios use in `profile = …`.
    pub fn key(&self) -> String {
        format!("{}@{}", self.agent, self.version)
    }

    pub fn frame(&self, name: &str) -> Option<&Value> {
        self.frames.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    /// The `[results]` entry for `method`.
    pub fn result_for(&self, method: &str) -> Option<&Value> {
        self.results
            .iter()
            .find(|(n, _)| n == method)
            .map(|(_, v)| v)
    }

    /// The `[errors]` entry for `method`.
    pub fn error_for(&self, method: &str) -> Option<&Value> {
        self.errors
            .iter()
            .find(|(n, _)| n == method)
            .map(|(_, v)| v)
    }

    pub fn var(&self, name: &str) -> Option<&str> {
        self.vars
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Parses a profile file. `file` is its display path; if its name is `agent@version.toml`, it
    /// must agree with the `[profile]` table.
    pub fn parse(file: &str, text: &str) -> Result<Profile, ScenarioError> {
        let src = Src::new(file, text);
        let raw: RawFile = src.toml()?;
        let meta = raw.profile.get_ref();

        let stem = file
            .rsplit('/')
            .next()
            .and_then(|n| n.strip_suffix(".toml"))
            .unwrap_or("");
        let key = format!("{}@{}", meta.agent.get_ref(), meta.version.get_ref());
        if stem.contains('@') && stem != key {
            return Err(src.err(
                meta.agent.span().start,
                format!("profile says `{key}` but its file is named `{stem}.toml`"),
            ));
        }

        let mut vars: Vec<(String, String)> = Vec::new();
        for (name, value) in &raw.vars.0 {
            if !template::is_valid_name(name) || name.contains('.') || name == "id" {
                return Err(src.err(
                    value.span().start,
                    format!("invalid variable name `{name}`"),
                ));
            }
            if HARNESS_PATH_VARS.contains(&name.as_str()) {
                return Err(src.err(
                    value.span().start,
                    format!("`{name}` is set by the harness and cannot be given a default"),
                ));
            }
            src.check_text_vars(value, |used| {
                if BUILTIN_VARS.contains(&used) || vars.iter().any(|(n, _)| n == used) {
                    Ok(())
                } else {
                    Err(format!(
                        "unknown variable `${{{used}}}` (a profile variable may use the built-in variables and the profile variables above it)"
                    ))
                }
            })?;
            vars.push((name.clone(), value.get_ref().clone()));
        }

        let mut frames = Vec::new();
        for (name, text) in &raw.frames.0 {
            let value = src.json(text, &format!("frame `{name}`"))?;
            frames.push((name.clone(), value, text));
        }
        for (_, value, text) in &frames {
            src.check_json_vars(text, value, |u| {
                if let Some(other) = u.name.strip_prefix("profile.") {
                    if !u.whole {
                        return Err(format!(
                            "`${{{}}}` must be a whole JSON string (\"${{{}}}\")",
                            u.name, u.name
                        ));
                    }
                    if !raw.frames.0.iter().any(|(n, _)| n == other) {
                        return Err(format!("this profile has no frame `{other}`"));
                    }
                    return Ok(());
                }
                if BUILTIN_VARS.contains(&u.name.as_str()) || vars.iter().any(|(n, _)| *n == u.name)
                {
                    Ok(())
                } else {
                    Err(format!(
                        "unknown variable `${{{}}}` (profile frames may use the built-in variables, the profile's [vars] and other profile frames)",
                        u.name
                    ))
                }
            })?;
        }
        for required in REQUIRED_FRAMES {
            if !frames.iter().any(|(n, _, _)| n == required) {
                return Err(src.err(
                    raw.profile.span().start,
                    format!(
                        "a profile needs a `{required}` entry in [frames] (used by `handshake`)"
                    ),
                ));
            }
        }
        if let Some((name, text)) = find_cycle(&frames) {
            return Err(src.err(
                text.span().start,
                format!("frame `{name}` refers to itself through `${{profile.…}}`"),
            ));
        }

        let mut errors = Vec::new();
        for (method, text) in &raw.errors.0 {
            let value = src.json(text, &format!("error for `{method}`"))?;
            src.check_json_vars(text, &value, |u| {
                Err(format!(
                    "`${{{}}}`: an [errors] entry is plain JSON (no templates)",
                    u.name
                ))
            })?;
            let code_ok = value.get("code").is_some_and(|c| c.is_i64());
            let message_ok = value.get("message").is_some_and(Value::is_string);
            if !value.is_object() || !code_ok || !message_ok {
                return Err(src.err(
                    text.span().start,
                    format!(
                        "the error for `{method}` must be a JSON-RPC error object with an integer `code` and a string `message`"
                    ),
                ));
            }
            errors.push((method.clone(), value));
        }
        let mut results = Vec::new();
        for (method, text) in &raw.results.0 {
            // Templates (`${sessionId}`, `${cwd}`) are filled when the request is answered.
            let value = src.json(text, &format!("result for `{method}`"))?;
            if errors.iter().any(|(m, _)| m == method) {
                return Err(src.err(
                    text.span().start,
                    format!("`{method}` has both an [errors] and a [results] entry"),
                ));
            }
            results.push((method.clone(), value));
        }

        Ok(Profile {
            agent: meta.agent.get_ref().clone(),
            version: meta.version.get_ref().clone(),
            title: meta.title.clone(),
            sources: meta.sources.clone(),
            vars,
            frames: frames.into_iter().map(|(n, v, _)| (n, v)).collect(),
            errors,
            results,
            file: file.to_owned(),
        })
    }
}

/// A frame that reaches itself through `${profile.…}` references, if any.
fn find_cycle<'a>(
    frames: &'a [(String, Value, &'a Spanned<String>)],
) -> Option<(&'a str, &'a Spanned<String>)> {
    let refs = |v: &Value| -> Vec<String> {
        template::uses(v)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|u| u.name.strip_prefix("profile.").map(str::to_owned))
            .collect()
    };
    for (start, value, text) in frames {
        let mut stack = refs(value);
        let mut seen = Vec::new();
        while let Some(name) = stack.pop() {
            if name == *start {
                return Some((start, text));
            }
            if seen.contains(&name) {
                continue;
            }
            if let Some((_, v, _)) = frames.iter().find(|(n, _, _)| *n == name) {
                stack.extend(refs(v));
            }
            seen.push(name);
        }
    }
    None
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    profile: Spanned<RawMeta>,
    #[serde(default)]
    vars: Ordered<Spanned<String>>,
    #[serde(default)]
    frames: Ordered<Spanned<String>>,
    #[serde(default)]
    errors: Ordered<Spanned<String>>,
    #[serde(default)]
    results: Ordered<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMeta {
    agent: Spanned<String>,
    version: Spanned<String>,
    title: String,
    sources: Vec<String>,
}

/// A set of profiles, looked up by `agent@version`.
#[derive(Debug, Clone, Default)]
pub struct Profiles {
    map: BTreeMap<String, Arc<Profile>>,
}

impl Profiles {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses `(display path, text)` pairs; every broken file is reported.
    pub fn parse_all<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Profiles, Vec<ScenarioError>> {
        let mut set = Profiles::new();
        let mut errors = Vec::new();
        for (file, text) in files {
            match Profile::parse(file, text) {
                Ok(p) => set.insert(p),
                Err(e) => errors.push(e),
            }
        }
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(errors)
        }
    }

    /// The profiles compiled into this crate (parsed once).
    pub fn embedded() -> Result<&'static Profiles, &'static [ScenarioError]> {
        static EMBEDDED_SET: OnceLock<Result<Profiles, Vec<ScenarioError>>> = OnceLock::new();
        EMBEDDED_SET
            .get_or_init(|| {
                let files: Vec<(String, &str)> = EMBEDDED
                    .iter()
                    .map(|(name, text)| (format!("{EMBEDDED_DIR}/{name}"), *text))
                    .collect();
                Profiles::parse_all(files.iter().map(|(f, t)| (f.as_str(), *t)))
            })
            .as_ref()
            .map_err(Vec::as_slice)
    }

    /// Adds (or replaces) a profile.
    pub fn insert(&mut self, profile: Profile) {
        self.map.insert(profile.key(), Arc::new(profile));
    }

    pub fn get(&self, key: &str) -> Option<&Arc<Profile>> {
        self.map.get(key)
    }

    /// Every `agent@version`, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../tests/fixtures/test-agent@1.0.toml");

    #[test]
    fn every_file_in_the_profiles_folder_is_embedded() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/profiles");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.ends_with(".toml"))
                    .collect()
            })
            .unwrap_or_default();
        on_disk.sort();
        let mut listed: Vec<String> = EMBEDDED.iter().map(|(n, _)| n.to_string()).collect();
        listed.sort();
        assert_eq!(
            on_disk, listed,
            "add the missing profiles to EMBEDDED in profile.rs"
        );
    }

    #[test]
    fn embedded_profiles_parse_and_match_their_names() {
        let set = match Profiles::embedded() {
            Ok(set) => set,
            Err(errors) => panic!(
                "{}",
                errors
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        };
        for (name, _) in EMBEDDED {
            let key = name.trim_end_matches(".toml");
            let p = set.get(key).expect("listed profile is in the set");
            assert_eq!(p.key(), key);
            for f in REQUIRED_FRAMES {
                assert!(p.frame(f).is_some(), "{key} lacks {f}");
            }
        }
    }

    #[test]
    fn fixture_profile_parses() {
        let p = Profile::parse("tests/fixtures/test-agent@1.0.toml", FIXTURE).unwrap();
        assert_eq!(p.key(), "test-agent@1.0");
        assert_eq!(p.var("sessionId"), Some("ses_test"));
        assert!(p.frame("options").unwrap().is_array());
    }

    fn err(text: &str) -> String {
        Profile::parse("p/x@1.toml", text).unwrap_err().to_string()
    }

    const HEAD: &str = "[profile]\nagent = \"x\"\nversion = \"1\"\ntitle = \"t\"\nsources = []\n";

    #[test]
    fn bad_profiles_are_reported_with_positions() {
        // Missing required frame.
        let e = err(&format!("{HEAD}[frames]\ninitialize = '{{}}'\n"));
        assert!(
            e.starts_with("p/x@1.toml:1:1: ") && e.contains("session_new"),
            "{e}"
        );
        // Invalid JSON points into the literal string.
        let e = err(&format!(
            "{HEAD}[frames]\ninitialize = '{{\"a\":}}'\nsession_new = '{{}}'\n"
        ));
        // Column 20 is the `}` where a value was expected.
        assert!(e.starts_with("p/x@1.toml:7:20: invalid JSON"), "{e}");
        // Unknown variable.
        let e = err(&format!(
            "{HEAD}[frames]\ninitialize = '{{\"a\":\"${{nope}}\"}}'\nsession_new = '{{}}'\n"
        ));
        assert!(
            e.starts_with("p/x@1.toml:7:21: unknown variable `${nope}`"),
            "{e}"
        );
        // Name mismatch.
        let e = Profile::parse("y@2.toml", HEAD).unwrap_err().to_string();
        assert!(e.contains("file is named `y@2.toml`"), "{e}");
        // Self reference.
        let e = err(&format!(
            "{HEAD}[frames]\ninitialize = '\"${{profile.session_new}}\"'\nsession_new = '[\"${{profile.initialize}}\"]'\n"
        ));
        assert!(e.contains("refers to itself"), "{e}");
        // An [errors] entry that is not a JSON-RPC error object, or uses a template.
        let frames = "[frames]\ninitialize = '{}'\nsession_new = '{}'\n";
        let e = err(&format!(
            "{HEAD}{frames}[errors]\nauthenticate = '{{\"code\":\"x\",\"message\":\"m\"}}'\n"
        ));
        assert!(
            e.starts_with("p/x@1.toml:10:") && e.contains("integer `code`"),
            "{e}"
        );
        let e = err(&format!(
            "{HEAD}{frames}[errors]\nauthenticate = '{{\"code\":1,\"message\":\"${{sessionId}}\"}}'\n"
        ));
        assert!(e.contains("plain JSON (no templates)"), "{e}");
    }

    #[test]
    fn errors_are_read_per_method() {
        let p = Profile::parse(
            "p/x@1.toml",
            &format!(
                "{HEAD}[frames]\ninitialize = '{{}}'\nsession_new = '{{}}'\n[errors]\nauthenticate = '{{\"code\":-32602,\"message\":\"Invalid params\"}}'\n"
            ),
        )
        .unwrap();
        assert_eq!(p.error_for("authenticate").unwrap()["code"], -32602);
        assert!(p.error_for("session/new").is_none());
    }
}
