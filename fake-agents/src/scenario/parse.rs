//! From the raw TOML shapes to typed steps, checking everything that can be checked without a
//! client: step shapes, JSON frames, template variables, aliases, and chosen options.
//!
//! Submodules add to [`Ctx`]: `setup_entries` (`[[setup]]`) · `steps` (step shapes, `expect`,
//! `await` cases) · `fault` · `user`; `frames_ahead` compiles a long scenario's frames on a
//! second thread.

mod fault;
mod frames_ahead;
mod setup_entries;
mod steps;
mod user;

use acp_vocab::family::Family;
use serde_json::Value;

use super::raw::{RawFile, S};
use super::{Scenario, ScenarioError, ScenarioMeta};
use crate::de::Src;
use crate::profile::{BUILTIN_VARS, Profile, Profiles};
use crate::template::{self, VarUse};

/// Parses scenario text. `file` is the display path used in errors (and as [`Scenario::path`]).
pub fn parse(file: &str, text: &str, profiles: &Profiles) -> Result<Scenario, ScenarioError> {
    let src = Src::new(file, text);
    // The fast path reads only what it is sure of; anything else (and every error) is the toml
    // crate's, as it always was.
    let raw: RawFile = match super::plain_steps::read(text) {
        Some(raw) => raw,
        None => src.toml()?,
    };
    let meta = raw.scenario.get_ref();
    let header = raw.scenario.span().start;

    let id = meta.id.get_ref();
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(src.err(
            meta.id.span().start,
            format!(
                "`id` must match [a-z0-9-]+ (it is the middle of every trial name), got {id:?}"
            ),
        ));
    }
    if meta.title.get_ref().trim().is_empty() {
        return Err(src.err(meta.title.span().start, "`title` must not be empty"));
    }
    for (key, v) in [("agent", &meta.agent), ("version", &meta.version)] {
        let s = v.get_ref();
        if s.is_empty()
            || s.chars()
                .any(|c| c.is_whitespace() || matches!(c, '/' | '@' | '[' | ']' | '\\'))
        {
            return Err(src.err(
                v.span().start,
                format!("`{key}` must be a non-empty name without spaces, `/`, `@` or brackets, got {s:?}"),
            ));
        }
    }
    if meta.provenance.get_ref().is_empty() {
        return Err(src.err(
            meta.provenance.span().start,
            "`provenance` needs at least one entry: the reference doc section, recording or source each frame follows",
        ));
    }
    for p in meta.provenance.get_ref() {
        if p.get_ref().trim().is_empty() {
            return Err(src.err(p.span().start, "empty `provenance` entry"));
        }
    }

    let profile = match &meta.profile {
        None => None,
        Some(key) => match profiles.get(key.get_ref()) {
            Some(p) => Some(p.clone()),
            None => {
                let known: Vec<&str> = profiles.keys().collect();
                return Err(src.err(
                    key.span().start,
                    format!(
                        "unknown profile `{}` (known: {})",
                        key.get_ref(),
                        if known.is_empty() {
                            "none".to_owned()
                        } else {
                            known.join(", ")
                        }
                    ),
                ));
            }
        },
    };

    let family = match &meta.family {
        None => None,
        Some(name) => Some(Family::from_id(name.get_ref()).ok_or_else(|| {
            let known: Vec<&str> = Family::ALL.iter().map(|f| f.id()).collect();
            src.err(
                name.span().start,
                format!(
                    "unknown family {:?} (known: {})",
                    name.get_ref(),
                    known.join(", ")
                ),
            )
        })?),
    };

    let mut requires = Vec::new();
    for r in meta.requires.iter().flatten() {
        let path = r.get_ref();
        if path.is_empty() || path.split('.').any(str::is_empty) {
            return Err(src.err(
                r.span().start,
                format!("`requires` entries are dotted paths into clientCapabilities, like \"fs.writeTextFile\"; got {path:?}"),
            ));
        }
        // A misspelt capability would make the scenario not applicable to every client, silently.
        if !KNOWN_CLIENT_CAPABILITIES.contains(&path.as_str()) && !path.starts_with("_meta.") {
            return Err(src.err(
                r.span().start,
                format!(
                    "unknown client capability {path:?} in `requires` (ACP v1 has: {}; extensions go under \"_meta.\")",
                    KNOWN_CLIENT_CAPABILITIES.join(", ")
                ),
            ));
        }
        requires.push(path.clone());
    }

    let mut recording = Vec::new();
    for r in meta.recording.iter().flatten() {
        recording.push(recording_path(&src, r)?);
    }

    let mut ctx = Ctx {
        src: &src,
        profile: profile.as_deref(),
        known: BUILTIN_VARS.iter().map(|s| s.to_string()).collect(),
        client_aliases: Vec::new(),
        requests: Vec::new(),
        each: None,
    };
    for (name, _) in profile.iter().flat_map(|p| p.vars.iter()) {
        ctx.learn(name);
    }

    let mut vars = Vec::new();
    for (name, value) in &raw.vars.0 {
        if !template::is_valid_name(name) || name.contains('.') {
            return Err(src.err(
                value.span().start,
                format!("invalid variable name `{name}` (letters, digits, `_`, `-`)"),
            ));
        }
        if name == "id" || crate::profile::HARNESS_PATH_VARS.contains(&name.as_str()) {
            return Err(src.err(
                value.span().start,
                format!("`{name}` is set by the harness and cannot be redefined in [vars]"),
            ));
        }
        src.check_text_vars(value, |used| ctx.text_var_rule(used))?;
        ctx.learn(name);
        vars.push((name.clone(), value.get_ref().clone()));
    }

    let setup = ctx.setup_entries(
        raw.setup.as_deref().unwrap_or_default(),
        profile.clone(),
        &vars,
    )?;

    let raw_steps = match &raw.step {
        Some(steps) if !steps.is_empty() => steps,
        _ => {
            return Err(src.err(header, "a scenario needs at least one [[step]]"));
        }
    };
    let steps = ctx.steps(raw_steps, None, None)?;
    let each = ctx.each.take().map(|(_, options)| options);

    Ok(Scenario {
        path: file.into(),
        meta: ScenarioMeta {
            id: id.clone(),
            title: meta.title.get_ref().clone(),
            agent: meta.agent.get_ref().clone(),
            version: meta.version.get_ref().clone(),
            family,
            provenance: meta
                .provenance
                .get_ref()
                .iter()
                .map(|p| p.get_ref().clone())
                .collect(),
            requires,
            description: meta.description.clone(),
            recording,
        },
        profile,
        vars,
        setup,
        steps,
        each,
    })
}

/// A `recording` entry: a relative path with `/` separators, no `.`/`..` segments, naming a
/// `.json` or `.jsonl` file (the fidelity test resolves it and fails if it is missing).
fn recording_path(src: &Src<'_>, r: &S) -> Result<String, ScenarioError> {
    let path = r.get_ref();
    let segments_ok = !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && path
            .split('/')
            .all(|seg| !seg.is_empty() && seg != "." && seg != "..");
    if !segments_ok || !(path.ends_with(".json") || path.ends_with(".jsonl")) {
        return Err(src.err(
            r.span().start,
            format!(
                "`recording` entries are relative paths of .json/.jsonl recordings below the recordings folder, like \"codex-acp/data/approval-file-change.json\"; got {path:?}"
            ),
        ));
    }
    Ok(path.clone())
}

/// The boolean client capabilities of ACP v1 as `requires` paths (`ClientCapabilities` in the
/// ACP schema, agentclientprotocol.com/protocol/schema).
const KNOWN_CLIENT_CAPABILITIES: &[&str] = &["fs.readTextFile", "fs.writeTextFile", "terminal"];

/// What is known at the current point of the file (document order).
struct Ctx<'a> {
    src: &'a Src<'a>,
    profile: Option<&'a Profile>,
    /// Template variables defined so far: built-ins, profile and scenario `[vars]`, captures.
    known: Vec<String>,
    /// `as` names of client requests (`expect … as`), for `reply_to`.
    client_aliases: Vec<String>,
    /// `as` names of requests we send, with their statically known options `(optionId, kind)`.
    requests: Vec<(String, Offered)>,
    /// The `each = true` step (its label) and the options it expands into.
    each: Option<(String, Vec<String>)>,
}

type R<T> = Result<T, ScenarioError>;

/// A request's options `(optionId, kind)`, if known before running.
type Offered = Option<Vec<(String, String)>>;

/// Keys each step kind accepts besides its kind key.
impl<'a> Ctx<'a> {
    fn err(&self, offset: usize, msg: impl Into<String>) -> ScenarioError {
        self.src.err(offset, msg)
    }

    fn learn(&mut self, name: &str) {
        if !self.known.iter().any(|k| k == name) {
            self.known.push(name.to_owned());
        }
    }

    fn known_var(&self, name: &str) -> Result<(), String> {
        if self.known.iter().any(|k| k == name) {
            Ok(())
        } else {
            Err(format!(
                "unknown variable `${{{name}}}` (known here: {}); write `$${{` for a literal `${{`",
                self.known.join(", ")
            ))
        }
    }

    fn text_var_rule(&self, name: &str) -> Result<(), String> {
        if name == "id" {
            return Err("`${id}` is only valid as the whole \"id\" of a `send` frame".into());
        }
        if name.starts_with("profile.") {
            return Err(format!(
                "`${{{name}}}` is only valid in a JSON frame, as a whole string"
            ));
        }
        self.known_var(name)
    }

    fn json_var_rule(&self, u: &VarUse, allow_id: bool) -> Result<(), String> {
        if u.name == "id" {
            return if allow_id && u.whole && u.pointer == "/id" {
                Ok(())
            } else {
                Err("`${id}` is only valid as the whole \"id\" of a `send` frame (\"id\":\"${id}\"), where it makes a fresh request id".into())
            };
        }
        if let Some(frame) = u.name.strip_prefix("profile.") {
            let Some(profile) = self.profile else {
                return Err(format!(
                    "`${{{}}}` needs a `profile = \"agent@version\"` in [scenario]",
                    u.name
                ));
            };
            if !u.whole {
                return Err(format!(
                    "`${{{0}}}` is only valid as a whole JSON string (\"${{{0}}}\"): it is replaced by a JSON value",
                    u.name
                ));
            }
            if profile.frame(frame).is_none() {
                let names: Vec<&str> = profile.frames.iter().map(|(n, _)| n.as_str()).collect();
                return Err(format!(
                    "profile `{}` has no frame `{frame}` (it has: {})",
                    profile.key(),
                    names.join(", ")
                ));
            }
            return Ok(());
        }
        self.known_var(&u.name)
    }

    /// A JSON frame/pattern/reply: parsed with exact positions, variables checked.
    fn json(&self, s: &S, what: &str, allow_id: bool) -> R<Value> {
        let value = self.src.json(s, what)?;
        self.src
            .check_json_vars(s, &value, |u| self.json_var_rule(u, allow_id))?;
        Ok(value)
    }

    /// A plain text template.
    fn text(&self, s: &S) -> R<String> {
        self.src
            .check_text_vars(s, |name| self.text_var_rule(name))?;
        Ok(s.get_ref().clone())
    }

    fn alias_name(&self, s: &S) -> R<String> {
        let name = s.get_ref();
        if name.is_empty() || name.chars().any(char::is_whitespace) {
            return Err(self.err(
                s.span().start,
                "an `as` name must be non-empty, without spaces",
            ));
        }
        // One name, one request: a later `reply_to`, `await` or `choose` could not tell which
        // of two requests it means (and silently taking the last one hides a copy-paste slip).
        if self.client_aliases.contains(name) || self.requests.iter().any(|(n, _)| n == name) {
            return Err(self.err(
                s.span().start,
                format!("`as` name {name:?} is already used earlier in this scenario; give each request its own name"),
            ));
        }
        Ok(name.clone())
    }

    fn request(&self, s: &S, key: &str) -> R<Offered> {
        match self.requests.iter().rev().find(|(n, _)| n == s.get_ref()) {
            Some((_, options)) => Ok(options.clone()),
            None => Err(self.err(
                s.span().start,
                format!(
                    "`{key} = {:?}` names no request: define it earlier with `send = … as = {:?}`",
                    s.get_ref(),
                    s.get_ref()
                ),
            )),
        }
    }

    /// The options a sent request offers, if they can be known before running: an array in the
    /// frame, or `"${profile.NAME}"`.
    fn static_options(&self, frame: &Value) -> Option<Vec<(String, String)>> {
        let options = frame.pointer("/params/options")?;
        let options = match options {
            Value::String(s) => {
                let name = template::whole_var(s)?.strip_prefix("profile.")?;
                self.profile?.frame(name)?
            }
            other => other,
        };
        options
            .as_array()?
            .iter()
            .map(|o| {
                Some((
                    o.get("optionId")?.as_str()?.to_owned(),
                    o.get("kind")?.as_str()?.to_owned(),
                ))
            })
            .collect()
    }
}

fn list_ids(options: &[(String, String)]) -> String {
    options
        .iter()
        .map(|(id, _)| format!("{id:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn list_kinds(options: &[(String, String)]) -> String {
    options
        .iter()
        .map(|(id, kind)| format!("{id:?} ({kind})"))
        .collect::<Vec<_>>()
        .join(", ")
}
