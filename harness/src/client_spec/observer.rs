//! `[observer]` of a client profile, as written: rules that turn what a client without an adapter
//! shows into control events, or an outside program that does it (format: clients/README.md,
//! "Observers"). Checked when the profile is read by compiling it (`crate::observe::compile`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// `[observer]`: exactly one of `rule` (data) or `command` (a program).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObserverSpec {
    /// Names the observer in the transcript's `observer` note and in `observed.by` (default:
    /// the profile's `name`).
    #[serde(default)]
    pub name: Option<String>,
    /// An outside observer: this argv gets the client's streams as JSON lines on its stdin and
    /// prints control events (a relative argv[0] `./…` resolves against the profile's folder).
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// With `command`: the event types the program can report (the rules' events otherwise).
    #[serde(default)]
    pub reports: Vec<String>,
    /// Data rules, tried in order.
    #[serde(default, rename = "rule")]
    pub rules: Vec<RuleSpec>,
    /// Word tables for `{capture|table}`: the client's word → the control vocabulary; `"*"`
    /// stands for any other word (and for a missing capture).
    #[serde(default)]
    pub words: BTreeMap<String, BTreeMap<String, String>>,
}

/// Where a rule looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// Each stdout line (regex `match`).
    Stdout,
    /// Each stderr line (regex `match`; not with `tty = true`, where stderr is the terminal).
    Stderr,
    /// The terminal's text with ANSI escapes and carriage returns removed (regex `match`).
    Terminal,
    /// The rendered screen of a `[tui]` client once it has settled (regex `match`; `region`
    /// or `box_containing` narrow it).
    Screen,
    /// Each stdout line that is a JSON object (JSON pointers; `when` must exist in it).
    Json,
    /// The client's exit status (`code`).
    Exit,
}

impl Source {
    /// How an event's `observed.from` names the source.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Stdout => "stdout",
            Source::Stderr => "stderr",
            Source::Terminal => "terminal",
            Source::Screen => "screen",
            Source::Json => "stdout (JSON)",
            Source::Exit => "exit status",
        }
    }
}

/// `code = 5` or `code = [5, 130]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Codes {
    One(i64),
    Many(Vec<i64>),
}

impl Codes {
    pub fn contains(&self, code: i64) -> bool {
        match self {
            Codes::One(c) => *c == code,
            Codes::Many(cs) => cs.contains(&code),
        }
    }
}

/// One `[[observer.rule]]`: where to look, what to look for, and the event's fields as
/// templates (every other key of the table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleSpec {
    pub on: Source,
    /// `stdout`, `stderr`, `terminal`: a regex (Rust `regex` syntax); named groups are captures.
    #[serde(default, rename = "match")]
    pub pattern: Option<String>,
    /// `json`: a JSON pointer that must exist in the object.
    #[serde(default)]
    pub when: Option<String>,
    /// `exit`: the exit codes this rule is for (none: any exit with a code).
    #[serde(default)]
    pub code: Option<Codes>,
    /// `screen`: read only this rectangle of the screen.
    #[serde(default)]
    pub region: Option<crate::observe::screen::Region>,
    /// `screen`: read only the inside of the box drawn around this text.
    #[serde(default)]
    pub box_containing: Option<String>,
    /// `approval`, `approval_resolved`, `item` or `turn`.
    pub event: String,
    /// The event's fields (`subject = "{kind|acp_kind}"`, …).
    #[serde(flatten)]
    pub fields: BTreeMap<String, String>,
}
