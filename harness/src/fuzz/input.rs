//! The fuzz input: one permission turn, in terms of what the agent sends and what the user does.
//!
//! libFuzzer's bytes become a [`PermissionTurn`] through `arbitrary`; the committed seeds are the
//! same type written as JSON, so a person can read and write them ([`decode`] accepts both). The
//! shapes follow the four agents of docs/architecture.md §4: an announced `tool_call` or none (qwen-code sends
//! the request as the first and only announcement), a sparse request (codex-acp TS:
//! `{toolCallId, kind, status}`) or a full one, kind `other` with locations (opencode
//! `external_directory`), options with colliding ids, kinds and labels.
//!
//! Sizes are bounded by [`PermissionTurn::normalized`] (at most [`MAX_OPTIONS`] options,
//! [`MAX_ITEMS`] locations or argv words, [`MAX_TEXT`] characters per string), so every input is
//! a frame a client must handle in microseconds.

use arbitrary::{Arbitrary, Unstructured};
use serde::{Deserialize, Serialize};

/// Most options one request offers (docs/architecture.md §8: 0–8).
pub const MAX_OPTIONS: usize = 8;
/// Most locations, or words of a command argv, per tool call.
pub const MAX_ITEMS: usize = 4;
/// Most characters of a free-form string.
pub const MAX_TEXT: usize = 48;

/// Strings that make ids, labels and titles collide: option ids and names of the four agents,
/// their case and whitespace variants, empty and non-ASCII strings, and template syntax (which a
/// regression scenario must escape).
pub const WORDS: &[&str] = &[
    "",
    " ",
    "allow",
    "Allow",
    "ALLOW",
    "allow ",
    "Allow once",
    "allow_once",
    "once",
    "always",
    "Always allow",
    "allow_always",
    "proceed_once",
    "proceed_always",
    "reject",
    "Reject",
    "reject_once",
    "reject_always",
    "cancel",
    "Cancel",
    "yes",
    "no",
    "✓",
    "許可",
    "npm test",
    "notes.md",
    "src",
    "edit",
    "a\tb",
    "${cwd}",
    "$${x}",
];

/// A string: mostly one of [`WORDS`], sometimes anything.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Text(pub String);

impl<'a> Arbitrary<'a> for Text {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let pick = u8::arbitrary(u)? as usize;
        // Three in four strings come from the pool, so collisions are the common case.
        if pick < 192 {
            return Ok(Text(WORDS[pick % WORDS.len()].to_owned()));
        }
        Ok(Text(String::arbitrary(u)?))
    }
}

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn normalize(&mut self) {
        if let Some((end, _)) = self.0.char_indices().nth(MAX_TEXT) {
            self.0.truncate(end);
        }
    }
}

/// ACP `ToolKind`, or no `kind` field at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    #[default]
    Absent,
    Other,
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
}

impl Kind {
    /// The wire word, `None` for [`Kind::Absent`].
    pub fn wire(self) -> Option<&'static str> {
        Some(match self {
            Kind::Absent => return None,
            Kind::Other => "other",
            Kind::Read => "read",
            Kind::Edit => "edit",
            Kind::Delete => "delete",
            Kind::Move => "move",
            Kind::Search => "search",
            Kind::Execute => "execute",
            Kind::Think => "think",
            Kind::Fetch => "fetch",
            Kind::SwitchMode => "switch_mode",
        })
    }
}

/// ACP `ToolCallStatus` before the answer, or no `status` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    #[default]
    Absent,
    Pending,
    InProgress,
}

impl Status {
    pub fn wire(self) -> Option<&'static str> {
        match self {
            Status::Absent => None,
            Status::Pending => Some("pending"),
            Status::InProgress => Some("in_progress"),
        }
    }
}

/// Which absolute directory a path starts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Base {
    /// The session's `cwd`.
    #[default]
    Cwd,
    /// A directory outside the project (opencode `external_directory`).
    Outside,
    /// The file system root.
    Root,
    /// `<cwd>/..`: written under the workspace, resolving outside it.
    Parent,
    /// `<cwd>-evil`: a sibling that shares the workspace's name as a prefix (a string prefix test
    /// takes it for the workspace).
    Sibling,
}

/// A file location: `<base>/<name>` (just `<base>` when the name is empty: opencode lists the
/// file and then its directory).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Location {
    #[serde(default)]
    pub base: Base,
    #[serde(default)]
    pub name: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

/// `rawInput` of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawInput {
    /// No `rawInput` field.
    #[default]
    Absent,
    /// `"rawInput": null` (counts as absent).
    Null,
    /// `{}` (opencode's first `tool_call`).
    Empty,
    /// `{"command": "<string>", "description"?: …}`: a shell command.
    Command {
        command: Text,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<Text>,
    },
    /// `{"command": [argv…]}` (codex-acp Rust): not a command *string*.
    Argv(Vec<Text>),
    /// `{"filePath": "<path>"}`.
    File(Location),
    /// A bare JSON string.
    Scalar(Text),
    /// A bare JSON string holding a path (some agents send the path alone).
    ScalarPath(Location),
}

/// `content` of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    /// No `content` field.
    #[default]
    Absent,
    /// `[]`.
    Empty,
    /// One `diff` item.
    Diff {
        path: Location,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old_text: Option<Text>,
        new_text: Text,
    },
    /// One text content item.
    Text(Text),
}

/// `_meta`: one key, one string value.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Arbitrary, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    pub key: Text,
    pub value: Text,
}

/// The fields of a `tool_call`, a `tool_call_update` or a request's full `toolCall`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCallShape {
    #[serde(default)]
    pub kind: Kind,
    /// `None`: no `title` field (a `tool_call` must have one: it then carries `""`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<Text>,
    #[serde(default)]
    pub status: Status,
    /// `None`: no `locations` field; `Some([])`: an empty list.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<Location>>,
    #[serde(default)]
    pub raw_input: RawInput,
    #[serde(default)]
    pub content: Content,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// The request's `toolCall`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestShape {
    /// codex-acp TS 1.6: `{toolCallId, kind, status: "pending"}` and nothing else.
    Sparse { kind: Kind },
    /// Every field the shape gives.
    Full(Box<ToolCallShape>),
}

/// `PermissionOptionKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

impl OptionKind {
    pub fn wire(self) -> &'static str {
        match self {
            OptionKind::AllowOnce => "allow_once",
            OptionKind::AllowAlways => "allow_always",
            OptionKind::RejectOnce => "reject_once",
            OptionKind::RejectAlways => "reject_always",
        }
    }

    pub fn is_allow(self) -> bool {
        matches!(self, OptionKind::AllowOnce | OptionKind::AllowAlways)
    }
}

/// One offered `PermissionOption`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Arbitrary, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OptionShape {
    pub id: Text,
    pub name: Text,
    pub kind: OptionKind,
}

/// The JSON type of the request's id (its value is fresh per turn).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdStyle {
    #[default]
    Number,
    String,
    /// `"id": null` (legal JSON-RPC; the answer must echo it).
    Null,
}

/// What the person at the client does once the approval card is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Click the button of offered option `i % n`.
    Choose(u8),
    /// Press Stop.
    Cancel,
    /// Leave the card alone: the client's policy may answer (R60); if it does not, the
    /// agent withdraws the request with `$/cancel_request` (R52).
    Leave,
}

/// The `tool_call_update` the agent sends once the answer is in (`completed` after an allow
/// option, else `failed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Finish {
    /// `{toolCallId, status}` only (opencode after anomalyco/opencode#34091).
    #[default]
    Partial,
    /// With a `kind` again (which may differ: then the agent itself changed the kind).
    WithKind(Kind),
    /// No update at all.
    Silent,
}

/// The auto-approval policy the client runs with (the reference client's `--policy`, declared
/// in its `hello`). The driver keeps one client per policy; a client that does not take
/// `--policy` runs as it declares itself and the input's policy is ignored (fuzz/README.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Arbitrary, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicyChoice {
    /// No `--policy`: the client's own default (the reference client approves nothing by
    /// itself; a decision mutant runs with the policy its bug shows under).
    #[default]
    ClientDefault,
    /// `read`, `search` inside the workspace.
    ReadOnly,
    /// `read`, `search`, `edit`, `delete`, `move` inside the workspace.
    WorkspaceWrite,
    /// Every kind, anywhere (never `allow_always` by itself).
    ApproveAll,
    /// `read`, `edit`, `execute` inside the workspace, `allow_always` too: the only choice that
    /// lets the client pick an `allow_always` option by itself.
    TrustedWorkspace,
}

impl PolicyChoice {
    /// Every choice.
    pub const ALL: [PolicyChoice; 5] = [
        PolicyChoice::ClientDefault,
        PolicyChoice::ReadOnly,
        PolicyChoice::WorkspaceWrite,
        PolicyChoice::ApproveAll,
        PolicyChoice::TrustedWorkspace,
    ];

    /// The reference client's `--policy` argument, `None` for [`PolicyChoice::ClientDefault`].
    pub fn flag(self) -> Option<&'static str> {
        Some(match self {
            PolicyChoice::ClientDefault => return None,
            PolicyChoice::ReadOnly => "read-only",
            PolicyChoice::WorkspaceWrite => "workspace-write",
            PolicyChoice::ApproveAll => "approve-all",
            PolicyChoice::TrustedWorkspace => {
                r#"{"approves":["read","edit","execute"],"scope":"workspace","allowAlways":true}"#
            }
        })
    }

    /// The name seeds and summaries use.
    pub fn name(self) -> &'static str {
        match self {
            PolicyChoice::ClientDefault => "client-default",
            PolicyChoice::ReadOnly => "read-only",
            PolicyChoice::WorkspaceWrite => "workspace-write",
            PolicyChoice::ApproveAll => "approve-all",
            PolicyChoice::TrustedWorkspace => "trusted-workspace",
        }
    }

    fn is_default(&self) -> bool {
        *self == PolicyChoice::ClientDefault
    }
}

/// One permission turn: prompt → (announcement) → request → user action → answer → stop reason.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Arbitrary, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionTurn {
    /// The policy of the client that plays the turn.
    #[serde(default, skip_serializing_if = "PolicyChoice::is_default")]
    pub policy: PolicyChoice,
    /// A `tool_call` announced before the request; `None`: the request is the first
    /// announcement (qwen-code 0.14).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub announce: Option<ToolCallShape>,
    /// A `tool_call_update` between the announcement and the request (opencode's
    /// `in_progress` update with the real input).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<ToolCallShape>,
    pub request: RequestShape,
    #[serde(default)]
    pub request_id: IdStyle,
    #[serde(default)]
    pub options: Vec<OptionShape>,
    /// `_meta` of the request's params.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    pub action: Action,
    #[serde(default)]
    pub finish: Finish,
}

/// `count` deterministic pseudo-random raw inputs of `len` bytes each (xorshift64 from `seed`),
/// decoded; those that do not decode are skipped. For the tests and throughput measurements that
/// run without libFuzzer.
pub fn pseudo_random_turns(
    seed: u64,
    count: usize,
    len: usize,
) -> impl Iterator<Item = PermissionTurn> {
    let mut state = seed;
    (0..count).filter_map(move |_| {
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        decode(&bytes)
    })
}

/// The input a fuzz target's bytes stand for: a JSON [`PermissionTurn`] (the committed seeds), or
/// else whatever `arbitrary` makes of the bytes. Always normalized. `None` only for bytes that
/// `arbitrary` cannot use at all.
pub fn decode(data: &[u8]) -> Option<PermissionTurn> {
    if data.first() == Some(&b'{') {
        if let Ok(turn) = serde_json::from_slice::<PermissionTurn>(data) {
            return Some(turn.normalized());
        }
    }
    PermissionTurn::arbitrary_take_rest(Unstructured::new(data))
        .ok()
        .map(PermissionTurn::normalized)
}

impl PermissionTurn {
    /// Within the size bounds, and with an action the user can carry out: choosing among zero
    /// options is pressing Stop.
    pub fn normalized(mut self) -> Self {
        self.options.truncate(MAX_OPTIONS);
        if self.options.is_empty() && matches!(self.action, Action::Choose(_)) {
            self.action = Action::Cancel;
        }
        if let Action::Choose(i) = self.action {
            // The index names an offered option.
            self.action = Action::Choose((i as usize % self.options.len()) as u8);
        }
        for shape in [&mut self.announce, &mut self.progress]
            .into_iter()
            .flatten()
        {
            shape.normalize();
        }
        if let RequestShape::Full(shape) = &mut self.request {
            shape.normalize();
        }
        for option in &mut self.options {
            option.id.normalize();
            option.name.normalize();
        }
        if let Some(meta) = &mut self.meta {
            meta.normalize();
        }
        self
    }

    /// The option the user clicks, for [`Action::Choose`].
    pub fn chosen(&self) -> Option<&OptionShape> {
        match self.action {
            Action::Choose(i) => self.options.get(i as usize),
            _ => None,
        }
    }

    /// The kind of the first offered option with this id (what an agent looks up when the answer
    /// names it), `None` if no option has it.
    pub fn kind_of(&self, option_id: &str) -> Option<OptionKind> {
        self.options
            .iter()
            .find(|o| o.id.as_str() == option_id)
            .map(|o| o.kind)
    }

    /// One line for people: `announce edit → request sparse other → 3 options → choose "once"`.
    pub fn summary(&self) -> String {
        let kind = |k: Kind| k.wire().unwrap_or("no kind");
        let mut parts = Vec::new();
        if !self.policy.is_default() {
            parts.push(format!("policy {}", self.policy.name()));
        }
        if let Some(a) = &self.announce {
            parts.push(format!("tool_call {}", kind(a.kind)));
        }
        if let Some(p) = &self.progress {
            parts.push(format!("tool_call_update {}", kind(p.kind)));
        }
        parts.push(match &self.request {
            RequestShape::Sparse { kind: k } => format!("sparse request {}", kind(*k)),
            RequestShape::Full(s) => format!("full request {}", kind(s.kind)),
        });
        parts.push(format!("{} option(s)", self.options.len()));
        parts.push(match (self.action, self.chosen()) {
            (Action::Choose(i), Some(o)) => format!("user chooses option {i} {:?}", o.id.as_str()),
            (Action::Cancel, _) => "user presses Stop".to_owned(),
            _ => "user leaves the card alone".to_owned(),
        });
        parts.join(" → ")
    }
}

impl ToolCallShape {
    fn normalize(&mut self) {
        if let Some(title) = &mut self.title {
            title.normalize();
        }
        if let Some(locations) = &mut self.locations {
            locations.truncate(MAX_ITEMS);
            for l in locations {
                l.name.normalize();
            }
        }
        match &mut self.raw_input {
            RawInput::Command {
                command,
                description,
            } => {
                command.normalize();
                if let Some(d) = description {
                    d.normalize();
                }
            }
            RawInput::Argv(words) => {
                words.truncate(MAX_ITEMS);
                words.iter_mut().for_each(Text::normalize);
            }
            RawInput::File(l) | RawInput::ScalarPath(l) => l.name.normalize(),
            RawInput::Scalar(t) => t.normalize(),
            RawInput::Absent | RawInput::Null | RawInput::Empty => {}
        }
        match &mut self.content {
            Content::Diff {
                path,
                old_text,
                new_text,
            } => {
                path.name.normalize();
                if let Some(t) = old_text {
                    t.normalize();
                }
                new_text.normalize();
            }
            Content::Text(t) => t.normalize(),
            Content::Absent | Content::Empty => {}
        }
        if let Some(meta) = &mut self.meta {
            meta.normalize();
        }
    }
}

impl Meta {
    fn normalize(&mut self) {
        self.key.normalize();
        self.value.normalize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_seeds_and_arbitrary_bytes_both_decode() {
        let json = br#"{"request":{"sparse":{"kind":"edit"}},"options":[{"id":"once","name":"Allow","kind":"allow_once"}],"action":{"choose":7}}"#;
        let turn = decode(json).expect("json decodes");
        assert_eq!(turn.request, RequestShape::Sparse { kind: Kind::Edit });
        // The index is reduced to an offered option.
        assert_eq!(turn.action, Action::Choose(0));
        assert_eq!(turn.chosen().map(|o| o.id.as_str()), Some("once"));

        // Any bytes make some turn, and the same bytes make the same turn.
        for seed in 0u8..64 {
            let bytes: Vec<u8> = (0..200u32)
                .map(|i| (i as u8).wrapping_mul(seed).wrapping_add(seed))
                .collect();
            let a = decode(&bytes).expect("arbitrary decodes");
            assert_eq!(Some(&a), decode(&bytes).as_ref());
            assert!(a.options.len() <= MAX_OPTIONS);
        }
    }

    #[test]
    fn normalizing_bounds_sizes_and_makes_choose_possible() {
        let long = Text("x".repeat(500));
        let turn = PermissionTurn {
            policy: PolicyChoice::ClientDefault,
            announce: None,
            progress: None,
            request: RequestShape::Full(Box::new(ToolCallShape {
                title: Some(long.clone()),
                locations: Some(vec![Location::default(); 20]),
                ..Default::default()
            })),
            request_id: IdStyle::Number,
            options: vec![
                OptionShape {
                    id: long,
                    name: Text::default(),
                    kind: OptionKind::AllowOnce,
                };
                12
            ],
            meta: None,
            action: Action::Choose(11),
            finish: Finish::Partial,
        }
        .normalized();
        assert_eq!(turn.options.len(), MAX_OPTIONS);
        assert_eq!(turn.options[0].id.as_str().chars().count(), MAX_TEXT);
        assert_eq!(turn.action, Action::Choose(3));
        let RequestShape::Full(shape) = &turn.request else {
            panic!("full")
        };
        assert_eq!(shape.locations.as_ref().map(Vec::len), Some(MAX_ITEMS));

        let none = PermissionTurn {
            options: Vec::new(),
            action: Action::Choose(2),
            ..turn
        }
        .normalized();
        assert_eq!(none.action, Action::Cancel);
    }

    #[test]
    fn json_round_trips() {
        let bytes: Vec<u8> = (0..400u32).map(|i| (i * 37 % 251) as u8).collect();
        let turn = decode(&bytes).expect("decodes");
        let json = serde_json::to_vec(&turn).expect("serializes");
        assert_eq!(decode(&json), Some(turn));
    }
}
