//! What the client approves without asking: its policy (`--policy`, declared in `hello`) and
//! the grants the user gave with an `allow_always` option, remembered per session.
//!
//! A careful editor decides on what the agent *said the tool does*, not on what the request
//! claims: every specific kind announced for the tool call must be approvable (an `execute`
//! later requested as `read` stays an execute), and every place it reaches must lie inside the
//! session's directory after the real filesystem resolved `..` and symlinks. Anything else goes
//! to the user. The harness's `auto-approval` check is the independent oracle for this module.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::approvals::PermissionOption;
use crate::mutation::Mutant;
use crate::timeline::Timeline;

/// The kinds a policy may name (ACP `ToolKind`).
const KINDS: [&str; 10] = [
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];

/// The `policy` object of `hello` (harness/CONTROL.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub approves: Vec<String>,
    /// `workspace` or `anywhere`.
    pub scope: &'static str,
    pub allow_always: bool,
}

impl Policy {
    /// The `policy` object of `hello`, in the shared vocabulary.
    pub fn to_hello(&self) -> acp_vocab::control::HelloPolicy {
        let kinds = acp_vocab::policy::ToolKind::ALL;
        acp_vocab::control::HelloPolicy {
            approves: Some(
                self.approves
                    .iter()
                    .filter_map(|a| kinds.into_iter().find(|k| k.as_str() == a))
                    .collect(),
            ),
            scope: acp_vocab::policy::Scope::parse(self.scope),
            allow_always: Some(self.allow_always),
        }
    }

    /// A preset name (`read-only`, `workspace-write`, `approve-all`) or a JSON object
    /// `{"approves":[…],"scope":…,"allowAlways":…}`.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let preset = |kinds: &[&str], scope| Policy {
            approves: kinds.iter().map(|k| (*k).to_owned()).collect(),
            scope,
            allow_always: false,
        };
        match text {
            "read-only" => return Ok(preset(&["read", "search"], "workspace")),
            "workspace-write" => {
                return Ok(preset(
                    &["read", "search", "edit", "delete", "move"],
                    "workspace",
                ));
            }
            "approve-all" => return Ok(preset(&KINDS, "anywhere")),
            _ => {}
        }
        let json: Value = serde_json::from_str(text).map_err(|_| {
            format!(
                "unknown policy {text:?}: use read-only, workspace-write, approve-all or a JSON object"
            )
        })?;
        let approves = json
            .get("approves")
            .and_then(Value::as_array)
            .map(|kinds| {
                kinds
                    .iter()
                    .map(|k| match k.as_str() {
                        Some(kind) if KINDS.contains(&kind) => Ok(kind.to_owned()),
                        _ => Err(format!("unknown tool kind {k} in --policy")),
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?
            .unwrap_or_default();
        let scope = match json.get("scope").and_then(Value::as_str) {
            None | Some("workspace") => "workspace",
            Some("anywhere") => "anywhere",
            Some(other) => return Err(format!("unknown scope {other:?} in --policy")),
        };
        Ok(Policy {
            approves,
            scope,
            allow_always: json
                .get("allowAlways")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        })
    }

    /// The policy a decision mutant runs with when none is given: the one under which its bug
    /// shows (the reference client itself approves nothing without `--policy`).
    pub fn for_mutant(mutant: Option<Mutant>) -> Option<Policy> {
        let name = match mutant? {
            Mutant::ApproveByRequestKind | Mutant::ApproveByTitleGuess => "read-only",
            Mutant::WorkspacePrefixCheck => "workspace-write",
            _ => return None,
        };
        Policy::parse(name).ok()
    }
}

/// What the client knows about one tool call when its request arrives.
pub struct ToolFacts<'a> {
    /// Every specific kind announced for it, in order.
    pub kinds: &'a [String],
    /// Every place (path or URL) named by any announcement.
    pub places: &'a [String],
    /// The request's own `toolCall`.
    pub request: &'a Map<String, Value>,
    /// The tool call as every announcement merged it: what its kind is inferred from when no
    /// announcement named a specific one (a command given by an earlier update is still an
    /// execute when the request itself is sparse; found by the permission_mapping fuzz target).
    pub call: &'a Map<String, Value>,
}

/// The policy, the remembered grants, and the mutant that may bend them.
#[derive(Debug, Default)]
pub struct Decider {
    policy: Option<Policy>,
    mutant: Option<Mutant>,
    /// Session id → kinds the user granted with `allow_always`.
    grants: HashMap<String, Vec<String>>,
}

impl Decider {
    pub fn new(policy: Option<Policy>, mutant: Option<Mutant>) -> Self {
        Decider {
            policy,
            mutant,
            grants: HashMap::new(),
        }
    }

    pub fn policy(&self) -> Option<&Policy> {
        self.policy.as_ref()
    }

    /// The user chose an `allow_always` option for a tool call of these kinds.
    pub fn remember(&mut self, session_id: &str, kinds: &[String]) {
        let granted = self.grants.entry(session_id.to_owned()).or_default();
        for kind in kinds {
            if !granted.contains(kind) {
                granted.push(kind.clone());
            }
        }
    }

    /// The option to answer with by itself, or `None` to ask the user. `options` are
    /// (optionId, kind) as offered.
    pub fn decide(
        &self,
        session_id: &str,
        workspace: &Path,
        facts: &ToolFacts<'_>,
        options: &[(String, String)],
    ) -> Option<String> {
        let by_policy = |kind: &str| {
            self.policy
                .as_ref()
                .is_some_and(|p| p.approves.iter().any(|k| k == kind))
        };
        // An id that also names an option of another kind is ambiguous: the agent may take the
        // answer for that other option (an "always", a reject), so the client leaves it to the user.
        let unambiguous = |id: &str, kind: &str| {
            options
                .iter()
                .all(|(other, other_kind)| other != id || other_kind == kind)
        };
        let pick = |kind: &str| {
            options
                .iter()
                .find(|(id, k)| k == kind && unambiguous(id, kind))
                .map(|(id, _)| id.clone())
        };
        // MUTANT approve-by-request-kind (felinics/Memoh#972): a request whose own
        // `toolCall.kind` the policy approves is approved at once with the first allow_once —
        // no announced kinds, no policy evaluation of where it reaches.
        if self.mutant == Some(Mutant::ApproveByRequestKind) {
            return request_kind(facts.request)
                .filter(|k| by_policy(k))
                .and_then(|_| pick("allow_once"));
        }
        let mut kinds = effective_kinds(facts.kinds, facts.call);
        // MUTANT approve-by-title-guess (acpx approve-reads, src/permissions.ts inferToolKind):
        // the request's kind, else a guess from the first word of its title.
        if self.mutant == Some(Mutant::ApproveByTitleGuess) {
            let guessed = request_kind(facts.request)
                .or_else(|| title_guess(facts.request))
                .unwrap_or("other");
            kinds = vec![guessed.to_owned()];
        }
        let granted = self.grants.get(session_id);
        let is_granted = |kind: &str| {
            // MUTANT remembered-any-kind (see mutation.rs): one "always allow" opens every kind.
            granted.is_some_and(|g| {
                g.iter().any(|k| k == kind)
                    || (self.mutant == Some(Mutant::RememberedAnyKind) && !g.is_empty())
            })
        };
        if !kinds.iter().all(|k| is_granted(k) || by_policy(k)) {
            return None;
        }
        let all_granted = kinds.iter().all(|k| is_granted(k));
        let scoped = !all_granted && self.policy.as_ref().is_some_and(|p| p.scope == "workspace");
        // The workspace is resolved once per request, not once per place it reaches.
        let root = OnceCell::new();
        if scoped
            && !facts
                .places
                .iter()
                .all(|place| self.inside(place, workspace, &root))
        {
            return None;
        }
        pick("allow_once").or_else(|| {
            let may_always = all_granted || self.policy.as_ref().is_some_and(|p| p.allow_always);
            may_always.then(|| pick("allow_always")).flatten()
        })
    }

    /// The option to answer a request with by itself, from what `timeline` knows about its tool
    /// call and the options as parsed for its card (what the client asks for every request, and
    /// the in-process fuzz target too).
    pub fn answer_for(
        &self,
        timeline: &Timeline,
        session_id: &str,
        workspace: &Path,
        request: &Map<String, Value>,
        options: &[PermissionOption],
    ) -> Option<String> {
        let tool_call_id = request.get("toolCallId")?.as_str()?;
        let (kinds, places) = timeline.facts(session_id, tool_call_id);
        let facts = ToolFacts {
            kinds,
            places,
            request,
            call: timeline.call(session_id, tool_call_id).unwrap_or(request),
        };
        let offered: Vec<(String, String)> = options
            .iter()
            .map(|o| (o.option_id.clone(), o.kind.clone()))
            .collect();
        self.decide(session_id, workspace, &facts, &offered)
    }

    /// Whether `place` lies inside `workspace`; `root` is the workspace as the filesystem
    /// resolves it, looked up on first use.
    fn inside(&self, place: &str, workspace: &Path, root: &OnceCell<Root>) -> bool {
        if place.starts_with("http://") || place.starts_with("https://") || place.starts_with('~') {
            return false;
        }
        let path = workspace.join(place);
        // MUTANT workspace-prefix-check (path-traversal class, e.g. CVE-2025-53110 in
        // modelcontextprotocol/servers' filesystem server): "inside" is a string prefix test on
        // the path as written, so `<ws>/../x` and the sibling `<ws>-evil/x` pass.
        if self.mutant == Some(Mutant::WorkspacePrefixCheck) {
            return path
                .to_string_lossy()
                .starts_with(workspace.to_string_lossy().as_ref());
        }
        let root = root.get_or_init(|| Root::of(workspace));
        real_path(&path, root.known(workspace)).starts_with(&root.real)
    }
}

/// The workspace as the filesystem resolves it, for one request.
struct Root {
    real: PathBuf,
    /// `real` is `canonicalize(workspace)` itself (it exists): a place's walk up its ancestors
    /// that reaches the workspace's very path reuses it instead of asking the filesystem again.
    canonical: bool,
}

impl Root {
    fn of(workspace: &Path) -> Root {
        match std::fs::canonicalize(workspace) {
            Ok(real) => Root {
                real,
                canonical: true,
            },
            Err(_) => Root {
                real: real_path(workspace, None),
                canonical: false,
            },
        }
    }

    /// `(workspace, its canonical path)` when that is known.
    fn known<'a>(&'a self, workspace: &'a Path) -> Option<(&'a Path, &'a Path)> {
        self.canonical.then_some((workspace, self.real.as_path()))
    }
}

/// Every specific kind announced; with none, what the call carries (a command → execute, a diff
/// → edit, else other).
pub fn effective_kinds(kinds: &[String], call: &Map<String, Value>) -> Vec<String> {
    if !kinds.is_empty() {
        return kinds.to_vec();
    }
    let raw_command = call
        .get("rawInput")
        .and_then(|r| r.get("command"))
        .is_some_and(Value::is_string);
    let diff = call
        .get("content")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|i| i.get("type").and_then(Value::as_str) == Some("diff"))
        });
    let kind = if raw_command {
        "execute"
    } else if diff {
        "edit"
    } else {
        "other"
    };
    vec![kind.to_owned()]
}

fn request_kind(request: &Map<String, Value>) -> Option<&str> {
    request
        .get("kind")
        .and_then(Value::as_str)
        .filter(|k| *k != "other")
}

/// acpx's title matchers, as its `TOOL_KIND_TITLE_MATCHERS` table reads the first word.
fn title_guess(request: &Map<String, Value>) -> Option<&'static str> {
    let title = request.get("title")?.as_str()?;
    let head = title
        .split(|c: char| c == ':' || c.is_whitespace())
        .next()?
        .to_lowercase();
    match head.as_str() {
        "read" | "cat" | "view" | "open" | "ls" | "list" => Some("read"),
        "grep" | "search" | "find" | "glob" | "rg" => Some("search"),
        "edit" | "write" | "patch" => Some("edit"),
        "bash" | "run" | "exec" | "shell" => Some("execute"),
        "fetch" | "curl" | "web" => Some("fetch"),
        _ => None,
    }
}

/// The path as the filesystem resolves it: the longest existing ancestor canonicalised, the rest
/// appended with `..` applied. `known`: a path (byte for byte, so that `canonicalize` would get
/// the same argument) already canonicalised during this request, with its answer.
fn real_path(path: &Path, known: Option<(&Path, &Path)>) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        let resolved = match known {
            Some((dir, real)) if dir.as_os_str() == existing.as_os_str() => Ok(real.to_path_buf()),
            _ => std::fs::canonicalize(&existing),
        };
        if let Ok(real) = resolved {
            let mut out = real;
            for part in rest.iter().rev() {
                match Path::new(part).components().next() {
                    Some(Component::ParentDir) => {
                        out.pop();
                    }
                    Some(Component::CurDir) | None => {}
                    Some(_) => out.push(part),
                }
            }
            return out;
        }
        match (existing.file_name(), existing.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_owned());
                existing = parent.to_path_buf();
            }
            _ => {
                // `..` as the last component has no file_name: resolve it lexically.
                match existing.parent() {
                    Some(parent) if existing.ends_with("..") => {
                        rest.push("..".into());
                        existing = parent.to_path_buf();
                    }
                    _ => return path.to_path_buf(),
                }
            }
        }
    }
}

/// Every place a tool call object names: locations, diff paths, and rawInput strings that are
/// absolute paths, URLs or values of path keys. Borrowed from `fields`: the timeline copies only
/// the places it has not noted yet (most announcements repeat the ones before).
pub fn places_of(fields: &Map<String, Value>) -> Vec<&str> {
    let mut out = Vec::new();
    let mut paths = |key: &str, item_key: &str| {
        let items = fields
            .get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        out.extend(
            items
                .iter()
                .filter(|i| {
                    key != "content" || i.get("type").and_then(Value::as_str) == Some("diff")
                })
                .filter_map(|i| i.get(item_key).and_then(Value::as_str)),
        );
    };
    paths("locations", "path");
    paths("content", "path");
    if let Some(raw) = fields.get("rawInput") {
        raw_input_places(raw, None, &mut out, 0);
    }
    out
}

/// The places in a `rawInput` value, at any depth (a bare string, arrays, nested objects): strings
/// that are absolute paths, URLs or home paths, and non-empty values of path keys. Command text
/// and file contents are not places.
fn raw_input_places<'a>(value: &'a Value, key: Option<&str>, out: &mut Vec<&'a str>, depth: usize) {
    if depth > 16 {
        return;
    }
    match value {
        Value::String(s) => {
            let looks_like_place = s.starts_with('/')
                || s.starts_with('~')
                || s.starts_with("http://")
                || s.starts_with("https://");
            if looks_like_place || (!s.is_empty() && key.is_some_and(is_path_key)) {
                out.push(s);
            }
        }
        Value::Array(items) => {
            for item in items {
                raw_input_places(item, key, out, depth + 1);
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                if !matches!(
                    k.as_str(),
                    "command" | "cmd" | "content" | "new_string" | "old_string"
                ) {
                    raw_input_places(v, Some(k), out, depth + 1);
                }
            }
        }
        _ => {}
    }
}

/// Whether a `rawInput` key names a place: it contains "path" in any case, or is one of the
/// usual short names. Compared byte-wise without lowercasing the key (no allocation per key): only
/// the ASCII letters P, A, T, H lowercase to "p", "a", "t", "h", so this is `to_lowercase()`'s
/// answer.
fn is_path_key(key: &str) -> bool {
    key.as_bytes()
        .windows(4)
        .any(|w| w.eq_ignore_ascii_case(b"path"))
        || matches!(key, "file" | "dir" | "directory" | "cwd" | "url")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The byte-wise test gives `to_lowercase()`'s answer, non-ASCII keys included.
    #[test]
    fn path_keys_are_found_in_any_case() {
        let lowercased = |key: &str| {
            key.to_lowercase().contains("path")
                || matches!(key, "file" | "dir" | "directory" | "cwd" | "url")
        };
        for (key, expected) in [
            ("path", true),
            ("filePath", true),
            ("FILE_PATH", true),
            ("pAtH", true),
            ("Ünïpath", true),
            ("x\u{0130}PATH", true),
            ("file", true),
            ("cwd", true),
            ("", false),
            ("pat", false),
            ("File", false),
            ("CWD", false),
            ("command", false),
            ("pa\u{0307}th", false),
            ("p\u{0410}th", false),
            ("\u{FF50}\u{FF41}\u{FF54}\u{FF48}", false),
            ("\u{212A}", false),
        ] {
            assert_eq!(is_path_key(key), expected, "{key}");
            assert_eq!(lowercased(key), expected, "{key}");
        }
    }

    fn facts<'a>(
        kinds: &'a [String],
        places: &'a [String],
        request: &'a Map<String, Value>,
    ) -> ToolFacts<'a> {
        ToolFacts {
            kinds,
            places,
            request,
            call: request,
        }
    }

    fn opts() -> Vec<(String, String)> {
        vec![
            ("once".into(), "allow_once".into()),
            ("always".into(), "allow_always".into()),
            ("no".into(), "reject_once".into()),
        ]
    }

    #[test]
    fn read_only_approves_reads_inside_only() {
        let ws = tempfile::tempdir().unwrap();
        let ws = ws.path().canonicalize().unwrap();
        let d = Decider::new(Policy::parse("read-only").ok(), None);
        let empty = Map::new();
        let read = vec!["read".to_owned()];
        let inside = vec![ws.join("a.md").to_string_lossy().into_owned()];
        let up = vec![format!("{}/../x", ws.display())];
        let sibling = vec![format!("{}-evil/x", ws.display())];
        assert_eq!(
            d.decide("s", &ws, &facts(&read, &inside, &empty), &opts()),
            Some("once".into())
        );
        assert_eq!(
            d.decide("s", &ws, &facts(&read, &up, &empty), &opts()),
            None
        );
        assert_eq!(
            d.decide("s", &ws, &facts(&read, &sibling, &empty), &opts()),
            None
        );
        let exec = vec!["read".to_owned(), "execute".to_owned()];
        assert_eq!(
            d.decide("s", &ws, &facts(&exec, &inside, &empty), &opts()),
            None
        );
    }

    /// A workspace `work` (with `x/`) next to `outside`, and `work/docs` a symlink to `outside`:
    /// the tempdir (keep it alive), the resolved root, and the workspace.
    fn workspace_with_a_link_out() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = root.join("work");
        std::fs::create_dir_all(ws.join("x")).unwrap();
        std::fs::create_dir(root.join("outside")).unwrap();
        std::os::unix::fs::symlink(root.join("outside"), ws.join("docs")).unwrap();
        (dir, root, ws)
    }

    #[test]
    fn a_symlink_out_of_the_workspace_is_not_inside() {
        let (_dir, _root, ws) = workspace_with_a_link_out();
        let d = Decider::new(Policy::parse("read-only").ok(), None);
        let read = vec!["read".to_owned()];
        let linked = vec![ws.join("docs/secret").to_string_lossy().into_owned()];
        let empty = Map::new();
        assert_eq!(
            d.decide("s", &ws, &facts(&read, &linked, &empty), &opts()),
            None
        );
        let plain = vec![ws.join("x/../x/a").to_string_lossy().into_owned()];
        assert!(
            d.decide("s", &ws, &facts(&read, &plain, &empty), &opts())
                .is_some()
        );
    }

    /// A place's walk that reuses the workspace's canonical path (once per request) resolves
    /// every place as the walk that asks the filesystem for each ancestor: inside, missing,
    /// through `..`, a symlink out, a sibling, a relative place, a workspace that does not exist.
    #[test]
    fn reusing_the_workspace_resolution_changes_no_answer() {
        let (_dir, root, ws) = workspace_with_a_link_out();
        let missing_ws = root.join("gone/work");
        for workspace in [&ws, &missing_ws] {
            let r = Root::of(workspace);
            assert_eq!(r.canonical, workspace == &ws);
            assert_eq!(r.real, real_path(workspace, None));
            for place in [
                "a.md",
                "x/a/b",
                "x/../../outside/f",
                "docs/secret",
                "docs/../y",
                "..",
                "../work-evil/x",
                "./x/./a/",
                "/etc/passwd",
            ] {
                let path = workspace.join(place);
                assert_eq!(
                    real_path(&path, r.known(workspace)),
                    real_path(&path, None),
                    "{place} in {workspace:?}"
                );
            }
        }
        let r = Root::of(&ws);
        let (dir, real) = r.known(&ws).expect("the workspace exists");
        assert_eq!((dir, real), (ws.as_path(), ws.as_path()));
    }

    #[test]
    fn grants_cover_their_kinds_in_their_session() {
        let mut d = Decider::new(None, None);
        let empty = Map::new();
        let read = vec!["read".to_owned()];
        let exec = vec!["execute".to_owned()];
        let ws = Path::new("/nonexistent-ws");
        assert_eq!(d.decide("s", ws, &facts(&read, &[], &empty), &opts()), None);
        d.remember("s", &read);
        assert_eq!(
            d.decide("s", ws, &facts(&read, &[], &empty), &opts()),
            Some("once".into())
        );
        assert_eq!(d.decide("t", ws, &facts(&read, &[], &empty), &opts()), None);
        assert_eq!(d.decide("s", ws, &facts(&exec, &[], &empty), &opts()), None);
    }

    #[test]
    fn the_kind_is_inferred_from_the_merged_call_not_the_sparse_request() {
        let d = Decider::new(Policy::parse(r#"{"approves":["other"]}"#).ok(), None);
        let sparse = json!({"toolCallId":"c","kind":"other","status":"pending"});
        let merged = json!({"toolCallId":"c","kind":"other","rawInput":{"command":"rm -rf /"}});
        let facts = ToolFacts {
            kinds: &[],
            places: &[],
            request: sparse.as_object().unwrap(),
            call: merged.as_object().unwrap(),
        };
        assert_eq!(d.decide("s", Path::new("/ws"), &facts, &opts()), None);
    }

    #[test]
    fn an_option_id_shared_with_another_kind_is_never_picked() {
        let d = Decider::new(Policy::parse("approve-all").ok(), None);
        let empty = Map::new();
        let exec = vec!["execute".to_owned()];
        let ws = Path::new("/nonexistent-ws");
        let shared = vec![
            ("x".to_owned(), "allow_always".to_owned()),
            ("x".to_owned(), "allow_once".to_owned()),
            ("y".to_owned(), "allow_once".to_owned()),
        ];
        assert_eq!(
            d.decide("s", ws, &facts(&exec, &[], &empty), &shared),
            Some("y".into())
        );
        assert_eq!(
            d.decide("s", ws, &facts(&exec, &[], &empty), &shared[..2]),
            None
        );
    }

    #[test]
    fn presets_and_json_parse_and_bad_words_are_refused() {
        assert_eq!(
            Policy::parse("read-only").unwrap().approves,
            ["read", "search"]
        );
        let p = Policy::parse(r#"{"approves":["fetch"],"scope":"anywhere","allowAlways":true}"#)
            .unwrap();
        assert_eq!((p.scope, p.allow_always), ("anywhere", true));
        assert!(Policy::parse("yolo").is_err());
        assert!(Policy::parse(r#"{"approves":["raed"]}"#).is_err());
        assert!(Policy::parse(r#"{"scope":"home"}"#).is_err());
    }

    #[test]
    fn places_come_from_locations_diffs_and_path_like_raw_input() {
        let fields = json!({"locations":[{"path":"/w/a"}],
            "content":[{"type":"diff","path":"/w/b","newText":""},{"type":"content"}],
            "rawInput":{"filePath":"c","command":"cat /etc/x","url":"https://e.test","n":1}});
        let mut got = places_of(fields.as_object().unwrap());
        got.sort();
        assert_eq!(got, ["/w/a", "/w/b", "c", "https://e.test"]);
        // A bare string and nested values are places too (found by mapping_inprocess: a read of
        // `"rawInput": "/etc/passwd"` was approved under read-only).
        let bare = json!({"rawInput": "/etc/passwd"});
        assert_eq!(places_of(bare.as_object().unwrap()), ["/etc/passwd"]);
        let nested = json!({"rawInput": {"opts": {"paths": ["/x", "y"]}}});
        assert_eq!(places_of(nested.as_object().unwrap()), ["/x", "y"]);
    }
}
