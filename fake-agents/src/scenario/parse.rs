//! From the raw TOML shapes to typed steps, checking everything that can be checked without a
//! client: step shapes, JSON frames, template variables, aliases, and chosen options.

use std::time::Duration;

use serde_json::Value;
use toml::Spanned;

use super::raw::{KIND_KEYS, RawFile, RawOn, RawSetup, RawStep, S};
use super::setup::{self, Setup, SetupEntry, SetupField};
use super::{
    Choice, Expect, Expected, Fault, OPTION_KINDS, OnCase, Reply, Scenario, ScenarioError,
    ScenarioMeta, Step, StepKind, UserStep, When,
};
use crate::de::Src;
use crate::profile::{BUILTIN_VARS, Profile, Profiles};
use crate::template::{self, VarUse};

/// Parses scenario text. `file` is the display path used in errors (and as [`Scenario::path`]).
pub fn parse(file: &str, text: &str, profiles: &Profiles) -> Result<Scenario, ScenarioError> {
    let src = Src::new(file, text);
    let raw: RawFile = src.toml()?;
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
        if matches!(name.as_str(), "cwd" | "outside" | "id") {
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

/// The boolean client capabilities of ACP v1 (`clientCapabilities`, acp-spec.md §3), as `requires`
/// paths.
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
fn allowed_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "handshake" => &["timeout_ms"],
        "expect" => &[
            "as",
            "match",
            "capture",
            "reply",
            "reply_error",
            "on_timeout",
            "timeout_ms",
        ],
        "reply_to" => &["result", "error", "timeout_ms"],
        "send" => &["as", "timeout_ms"],
        "await" => &["on", "timeout_ms"],
        "fault" => &["frame", "at", "line", "timeout_ms"],
        "user" => &[
            "session",
            "cwd",
            "text",
            "request",
            "kind",
            "option",
            "each",
            "pending",
            "timeout_ms",
        ],
        _ => &[],
    }
}

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

    /// `[[setup]]` entries: one path key each, its companion keys, templates known here, and
    /// every path inside the case directory (checked against a stand-in one, so the error has
    /// the entry's position; the runner checks again with the real directory).
    fn setup_entries(
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

    fn setup_entry(&self, r: &RawSetup, start: usize) -> R<SetupEntry> {
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

    fn steps(
        &mut self,
        raws: &[Spanned<RawStep>],
        prefix: Option<&str>,
        top: Option<usize>,
    ) -> R<Vec<Step>> {
        let mut out = Vec::with_capacity(raws.len());
        for (i, raw) in raws.iter().enumerate() {
            let label = match prefix {
                None => (i + 1).to_string(),
                Some(p) => format!("{p}.{}", i + 1),
            };
            out.push(self.step(raw, label, top.unwrap_or(i + 1))?);
        }
        Ok(out)
    }

    fn step(&mut self, raw: &Spanned<RawStep>, label: String, top: usize) -> R<Step> {
        let r = raw.get_ref();
        let start = raw.span().start;
        let line = self.src.text.line(start);
        let present: Vec<(&str, usize)> = r
            .present()
            .into_iter()
            .map(|(k, at)| (k, if at == 0 { start } else { at }))
            .collect();
        let kinds: Vec<(&str, usize)> = present
            .iter()
            .copied()
            .filter(|(k, _)| KIND_KEYS.contains(k))
            .collect();
        let kind = match kinds.as_slice() {
            [] => {
                return Err(self.err(
                    start,
                    format!("a step needs exactly one of {}", KIND_KEYS.join(", ")),
                ));
            }
            [(k, _)] => *k,
            [_, (_, second), ..] => {
                let names: Vec<&str> = kinds.iter().map(|(k, _)| *k).collect();
                return Err(self.err(
                    *second,
                    format!(
                        "a step has exactly one kind key; this one has {} (start a new [[step]] for each)",
                        names.join(" and ")
                    ),
                ));
            }
        };
        let allowed = allowed_keys(kind);
        for (key, at) in &present {
            if *key != kind && !allowed.contains(key) {
                return Err(self.err(
                    *at,
                    format!(
                        "`{key}` does not belong in a `{kind}` step{}",
                        if allowed.is_empty() {
                            " (it takes no other keys)".to_owned()
                        } else {
                            format!(" (it takes: {})", allowed.join(", "))
                        }
                    ),
                ));
            }
        }
        let timeout = match &r.timeout_ms {
            Some(t) if *t.get_ref() == 0 => {
                return Err(self.err(t.span().start, "`timeout_ms` must be at least 1"));
            }
            Some(t) => Some(Duration::from_millis(*t.get_ref())),
            None => None,
        };

        let kind = match kind {
            "handshake" => {
                let v = r.handshake.as_ref().expect("present");
                crate::de::expect_true(self.src, v, "handshake")?;
                if self.profile.is_none() {
                    return Err(self.err(
                        v.span().start,
                        "`handshake` replies with the profile's frames: set `profile = \"agent@version\"` in [scenario]",
                    ));
                }
                StepKind::Handshake
            }
            "expect" => self.expect(r, &label, top)?,
            "reply_to" => {
                let alias = r.reply_to.as_ref().expect("present");
                if !self.client_aliases.contains(alias.get_ref()) {
                    return Err(self.err(
                        alias.span().start,
                        format!(
                            "`reply_to = {:?}` names no client request: remember one earlier with `expect = … as = {:?}`",
                            alias.get_ref(),
                            alias.get_ref()
                        ),
                    ));
                }
                let reply = match (&r.result, &r.error) {
                    (Some(v), None) => Reply::Result(self.json(v, "`result`", false)?),
                    (None, Some(v)) => Reply::Error(self.json(v, "`error`", false)?),
                    (Some(_), Some(e)) => {
                        return Err(self.err(
                            e.span().start,
                            "`reply_to` takes `result` or `error`, not both",
                        ));
                    }
                    (None, None) => {
                        return Err(self.err(
                            alias.span().start,
                            "`reply_to` needs `result = '…'` or `error = '…'`",
                        ));
                    }
                };
                StepKind::ReplyTo {
                    alias: alias.get_ref().clone(),
                    reply,
                }
            }
            "send" => {
                let s = r.send.as_ref().expect("present");
                let frame = self.json(s, "`send`", true)?;
                if !frame.is_object() {
                    return Err(self.err(
                        s.span().start,
                        "a `send` frame must be a JSON object (a whole JSON-RPC message); use `fault` for anything else",
                    ));
                }
                let alias = match &r.as_ {
                    None => None,
                    Some(a) => {
                        if frame.get("id").is_none() || frame.get("method").is_none() {
                            return Err(self.err(
                                a.span().start,
                                "`as` names a request, but this frame has no \"id\" and \"method\"",
                            ));
                        }
                        let name = self.alias_name(a)?;
                        let options = self.static_options(&frame);
                        self.requests.push((name.clone(), options));
                        Some(name)
                    }
                };
                StepKind::Send { frame, alias }
            }
            "await" => {
                let alias = r.await_.as_ref().expect("present");
                let options = self.request(alias, "await")?;
                let mut cases = Vec::new();
                for (k, on) in r.on.iter().flatten().enumerate() {
                    cases.push(self.on_case(on, &options, &format!("{label}.{}", k + 1), top)?);
                }
                StepKind::Await {
                    alias: alias.get_ref().clone(),
                    cases,
                }
            }
            "delay_ms" => StepKind::Delay(Duration::from_millis(
                *r.delay_ms.as_ref().expect("present").get_ref(),
            )),
            "fault" => StepKind::Fault(self.fault(r)?),
            "user" => StepKind::User(self.user(r, &label)?),
            other => unreachable!("kind key {other} is listed in KIND_KEYS"),
        };
        Ok(Step {
            label,
            top,
            line,
            timeout,
            kind,
        })
    }

    fn expect(&mut self, r: &RawStep, label: &str, top: usize) -> R<StepKind> {
        let e = r.expect.as_ref().expect("present");
        let what = match e.get_ref().as_str() {
            "" => {
                return Err(self.err(
                    e.span().start,
                    "`expect` needs a method name or \"response\"",
                ));
            }
            "response" => Expected::Response,
            m => Expected::Method(m.to_owned()),
        };
        if what == Expected::Response {
            for (key, v) in [
                ("as", &r.as_),
                ("reply", &r.reply),
                ("reply_error", &r.reply_error),
            ] {
                if let Some(v) = v {
                    return Err(self.err(
                        v.span().start,
                        format!("`{key}` is for client requests; a response cannot be answered"),
                    ));
                }
            }
        }
        let pattern = match &r.match_ {
            Some(m) => Some(self.json(m, "`match`", false)?),
            None => None,
        };
        let mut capture = Vec::new();
        for (name, pointer) in r.capture.iter().flat_map(|c| c.get_ref().0.iter()) {
            if !template::is_valid_name(name) || name.contains('.') {
                return Err(self.err(
                    pointer.span().start,
                    format!("invalid variable name `{name}` (letters, digits, `_`, `-`)"),
                ));
            }
            if matches!(name.as_str(), "cwd" | "outside" | "id") {
                return Err(self.err(
                    pointer.span().start,
                    format!("`{name}` is set by the harness and cannot be captured"),
                ));
            }
            let p = pointer.get_ref();
            if !(p.is_empty() || p.starts_with('/')) {
                return Err(self.err(
                    pointer.span().start,
                    format!("{p:?} is not a JSON pointer (like \"/params/sessionId\")"),
                ));
            }
            capture.push((name.clone(), p.clone()));
        }
        // Captured values are known from here on, including in this step's reply.
        for (name, _) in &capture {
            self.learn(name);
        }
        let reply = match (&r.reply, &r.reply_error) {
            (Some(v), None) => Some(Reply::Result(self.json(v, "`reply`", false)?)),
            (None, Some(v)) => Some(Reply::Error(self.json(v, "`reply_error`", false)?)),
            (Some(_), Some(v)) => {
                return Err(self.err(v.span().start, "use `reply` or `reply_error`, not both"));
            }
            (None, None) => None,
        };
        let alias = match &r.as_ {
            Some(a) => {
                let name = self.alias_name(a)?;
                self.client_aliases.push(name.clone());
                Some(name)
            }
            None => None,
        };
        let on_timeout = match &r.on_timeout {
            Some(steps) => {
                Some(self.steps(steps.get_ref(), Some(&format!("{label}.0")), Some(top))?)
            }
            None => None,
        };
        Ok(StepKind::Expect(Expect {
            what,
            alias,
            pattern,
            capture,
            reply,
            on_timeout,
        }))
    }

    fn on_case(
        &mut self,
        on: &Spanned<RawOn>,
        options: &Offered,
        prefix: &str,
        top: usize,
    ) -> R<OnCase> {
        let o = on.get_ref();
        let start = on.span().start;
        let mut keys: Vec<(&str, usize)> = Vec::new();
        for (k, at) in [
            ("selected", o.selected.as_ref().map(|s| s.span().start)),
            ("option", o.option.as_ref().map(|s| s.span().start)),
            ("cancelled", o.cancelled.as_ref().map(|s| s.span().start)),
            ("unoffered", o.unoffered.as_ref().map(|s| s.span().start)),
            ("error", o.error.as_ref().map(|s| s.span().start)),
            ("otherwise", o.otherwise.as_ref().map(|s| s.span().start)),
        ] {
            if let Some(at) = at {
                keys.push((k, at));
            }
        }
        let when = match keys.as_slice() {
            [] => {
                return Err(self.err(
                    start,
                    "an `on` case needs one of selected, option, cancelled, unoffered, error, otherwise",
                ));
            }
            [_, (_, second), ..] => {
                return Err(self.err(
                    *second,
                    "an `on` case has exactly one condition; write one [[step.on]] per condition",
                ));
            }
            [(k, _)] => match *k {
                "selected" => {
                    let list = o.selected.as_ref().expect("present");
                    if list.get_ref().is_empty() {
                        return Err(
                            self.err(list.span().start, "`selected` needs at least one kind")
                        );
                    }
                    for kind in list.get_ref() {
                        if !OPTION_KINDS.contains(&kind.get_ref().as_str()) {
                            return Err(self.err(
                                kind.span().start,
                                format!(
                                    "unknown option kind {:?} (kinds: {})",
                                    kind.get_ref(),
                                    OPTION_KINDS.join(", ")
                                ),
                            ));
                        }
                    }
                    When::Selected(list.get_ref().iter().map(|s| s.get_ref().clone()).collect())
                }
                "option" => {
                    let list = o.option.as_ref().expect("present");
                    if list.get_ref().is_empty() {
                        return Err(
                            self.err(list.span().start, "`option` needs at least one optionId")
                        );
                    }
                    for id in list.get_ref() {
                        if let Some(options) = options
                            && !options.iter().any(|(o, _)| o == id.get_ref())
                        {
                            return Err(self.err(
                                id.span().start,
                                format!(
                                    "the request does not offer option {:?} (it offers: {})",
                                    id.get_ref(),
                                    list_ids(options)
                                ),
                            ));
                        }
                    }
                    When::Option(list.get_ref().iter().map(|s| s.get_ref().clone()).collect())
                }
                flag => {
                    let v = match flag {
                        "cancelled" => &o.cancelled,
                        "unoffered" => &o.unoffered,
                        "error" => &o.error,
                        _ => &o.otherwise,
                    };
                    crate::de::expect_true(self.src, v.as_ref().expect("present"), flag)?;
                    match flag {
                        "cancelled" => When::Cancelled,
                        "unoffered" => When::Unoffered,
                        "error" => When::Error,
                        _ => When::Otherwise,
                    }
                }
            },
        };
        let then = match &o.then {
            Some(steps) => self.steps(steps, Some(prefix), Some(top))?,
            None => Vec::new(),
        };
        Ok(OnCase {
            line: self.src.text.line(start),
            when,
            then,
        })
    }

    fn fault(&mut self, r: &RawStep) -> R<Fault> {
        let f = r.fault.as_ref().expect("present");
        let kind = f.get_ref().as_str();
        let (needs, refuses): (&str, &[(&str, Option<usize>)]) = match kind {
            "split" => (
                "frame",
                &[("line", r.line.as_ref().map(|s| s.span().start))],
            ),
            "duplicate" | "invalid" => (
                "frame",
                &[
                    ("line", r.line.as_ref().map(|s| s.span().start)),
                    ("at", r.at.as_ref().map(|s| s.span().start)),
                ],
            ),
            "raw" => (
                "line",
                &[
                    ("frame", r.frame.as_ref().map(|s| s.span().start)),
                    ("at", r.at.as_ref().map(|s| s.span().start)),
                ],
            ),
            other => {
                return Err(self.err(
                    f.span().start,
                    format!("unknown fault {other:?} (faults: split, duplicate, raw, invalid)"),
                ));
            }
        };
        for (key, at) in refuses {
            if let Some(at) = at {
                return Err(self.err(*at, format!("`{key}` does not belong in fault = {kind:?}")));
            }
        }
        if kind == "raw" {
            let Some(line) = &r.line else {
                return Err(self.err(f.span().start, "fault = \"raw\" needs `line = '…'`"));
            };
            return Ok(Fault::Raw {
                line: line.get_ref().clone(),
            });
        }
        let Some(frame) = &r.frame else {
            return Err(self.err(
                f.span().start,
                format!("fault = {kind:?} needs `{needs} = '…'`"),
            ));
        };
        let frame = self.json(frame, "`frame`", false)?;
        Ok(match kind {
            "split" => {
                let at = match &r.at {
                    Some(a) if *a.get_ref() == 0 => {
                        return Err(self.err(
                            a.span().start,
                            "`at` must be at least 1 (a byte offset into the frame)",
                        ));
                    }
                    Some(a) => Some(usize::try_from(*a.get_ref()).unwrap_or(usize::MAX)),
                    None => None,
                };
                Fault::Split { frame, at }
            }
            "duplicate" => Fault::Duplicate { frame },
            _ => Fault::Invalid { frame },
        })
    }

    fn user(&mut self, r: &RawStep, label: &str) -> R<UserStep> {
        let u = r.user.as_ref().expect("present");
        let action = u.get_ref().as_str();
        let allowed: &[&str] = match action {
            "new_session" => &["session", "cwd"],
            "prompt" => &["session", "text"],
            "choose" => &["request", "kind", "option", "each"],
            "cancel" => &["session", "pending"],
            other => {
                return Err(self.err(
                    u.span().start,
                    format!("unknown user action {other:?} (actions: new_session, prompt, choose, cancel)"),
                ));
            }
        };
        for (key, at) in r.present() {
            if !matches!(key, "user" | "timeout_ms") && !allowed.contains(&key) {
                return Err(self.err(
                    at,
                    format!(
                        "`{key}` does not belong in user = {action:?} (it takes: {})",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        let session = match &r.session {
            Some(s) => self.text(s)?,
            None => "s1".to_owned(),
        };
        Ok(match action {
            "new_session" => UserStep::NewSession {
                session,
                cwd: match &r.cwd {
                    Some(c) => self.text(c)?,
                    None => "${cwd}".to_owned(),
                },
            },
            "prompt" => {
                let Some(text) = &r.text else {
                    return Err(self.err(u.span().start, "user = \"prompt\" needs `text = \"…\"`"));
                };
                UserStep::Prompt {
                    session,
                    text: self.text(text)?,
                }
            }
            "cancel" => {
                let pending = match &r.pending {
                    Some(p) => {
                        self.request(p, "pending")?;
                        Some(p.get_ref().clone())
                    }
                    None => None,
                };
                UserStep::Cancel { session, pending }
            }
            _ => {
                let Some(request) = &r.request else {
                    return Err(self.err(
                        u.span().start,
                        "user = \"choose\" needs `request = \"<as name>\"`",
                    ));
                };
                let options = self.request(request, "request")?;
                let choice = match (&r.kind, &r.option, &r.each) {
                    (Some(k), None, None) => {
                        if !OPTION_KINDS.contains(&k.get_ref().as_str()) {
                            return Err(self.err(
                                k.span().start,
                                format!(
                                    "unknown option kind {:?} (kinds: {})",
                                    k.get_ref(),
                                    OPTION_KINDS.join(", ")
                                ),
                            ));
                        }
                        if let Some(options) = &options
                            && !options.iter().any(|(_, kind)| kind == k.get_ref())
                        {
                            return Err(self.err(
                                k.span().start,
                                format!(
                                    "request {:?} offers no option of kind {:?} (it offers: {})",
                                    request.get_ref(),
                                    k.get_ref(),
                                    list_kinds(options)
                                ),
                            ));
                        }
                        Choice::Kind(k.get_ref().clone())
                    }
                    (None, Some(o), None) => {
                        if let Some(options) = &options
                            && !options.iter().any(|(id, _)| id == o.get_ref())
                        {
                            return Err(self.err(
                                o.span().start,
                                format!(
                                    "request {:?} does not offer option {:?} (it offers: {})",
                                    request.get_ref(),
                                    o.get_ref(),
                                    list_ids(options)
                                ),
                            ));
                        }
                        Choice::Option(o.get_ref().clone())
                    }
                    (None, None, Some(e)) => {
                        crate::de::expect_true(self.src, e, "each")?;
                        let at = e.span().start;
                        if let Some((other, _)) = &self.each {
                            return Err(self.err(
                                at,
                                format!("only one `each = true` per scenario (step {other} has one already)"),
                            ));
                        }
                        let ids: Vec<String> = match &options {
                            Some(o) if !o.is_empty() => {
                                o.iter().map(|(id, _)| id.clone()).collect()
                            }
                            _ => {
                                return Err(self.err(
                                    at,
                                    format!(
                                        "`each = true` needs the options of request {:?} to be known before running: an array or \"${{profile.NAME}}\" in params.options",
                                        request.get_ref()
                                    ),
                                ));
                            }
                        };
                        self.each = Some((label.to_owned(), ids));
                        Choice::Each
                    }
                    _ => {
                        return Err(self.err(
                            u.span().start,
                            "user = \"choose\" needs exactly one of `kind`, `option`, `each = true`",
                        ));
                    }
                };
                UserStep::Choose {
                    request: request.get_ref().clone(),
                    choice,
                }
            }
        })
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
