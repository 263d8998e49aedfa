//! The scenario file exactly as written (serde shapes with spans). Every table denies unknown
//! fields, so a typo is a parse error at the key rather than a silently ignored line.
//! [`super::parse`] turns these into the typed [`super::Scenario`].

use serde::Deserialize;
use toml::Spanned;

use crate::de::Ordered;

pub type S = Spanned<String>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    pub scenario: Spanned<RawMeta>,
    #[serde(default)]
    pub vars: Ordered<S>,
    pub setup: Option<Vec<Spanned<RawSetup>>>,
    pub step: Option<Vec<Spanned<BoxedStep>>>,
}

/// One `[[setup]]` entry: exactly one of `dir`, `file`, `symlink`; `target` goes with `symlink`
/// (required), `content` with `file` (optional).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSetup {
    pub dir: Option<S>,
    pub file: Option<S>,
    pub symlink: Option<S>,
    pub target: Option<S>,
    pub content: Option<S>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMeta {
    pub id: S,
    pub title: S,
    pub agent: S,
    pub version: S,
    pub profile: Option<S>,
    pub family: Option<S>,
    pub provenance: Spanned<Vec<S>>,
    pub requires: Option<Vec<S>>,
    pub description: Option<String>,
    pub recording: Option<Vec<S>>,
}

/// A step read into its own allocation: a [`RawStep`] has a slot for every key of every step
/// kind (about 1.5 KB), and a list of them read in place is copied whole each time it grows.
pub type BoxedStep = Box<RawStep>;

/// One `[[step]]` (or an inline table in `then`): the union of every step kind's keys. Which keys
/// may appear together is checked after deserializing, with a message that names the step kind.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    // The kind keys: exactly one per step.
    pub handshake: Option<Spanned<bool>>,
    pub expect: Option<S>,
    pub reply_to: Option<S>,
    pub send: Option<S>,
    #[serde(rename = "await")]
    pub await_: Option<S>,
    pub delay_ms: Option<Spanned<u64>>,
    pub fault: Option<S>,
    pub user: Option<S>,
    // Modifiers.
    pub timeout_ms: Option<Spanned<u64>>,
    #[serde(rename = "as")]
    pub as_: Option<S>,
    #[serde(rename = "match")]
    pub match_: Option<S>,
    pub capture: Option<Spanned<Ordered<S>>>,
    pub bind: Option<Spanned<Ordered<S>>>,
    pub reply: Option<S>,
    pub reply_error: Option<S>,
    pub result: Option<S>,
    pub error: Option<S>,
    pub on: Option<Vec<Spanned<RawOn>>>,
    pub on_timeout: Option<Spanned<Vec<Spanned<BoxedStep>>>>,
    pub frame: Option<S>,
    pub at: Option<Spanned<u64>>,
    pub line: Option<S>,
    pub session: Option<S>,
    pub cwd: Option<S>,
    pub text: Option<S>,
    pub request: Option<S>,
    pub kind: Option<S>,
    pub option: Option<S>,
    pub each: Option<Spanned<bool>>,
    pub pending: Option<S>,
    /// `load_session` / `resume_session`: the ACP id of the earlier session.
    pub session_id: Option<S>,
    // user = "set_mode" / "set_config_option" (modes and config options)
    pub mode: Option<S>,
    pub config: Option<S>,
    pub value: Option<S>,
}

/// The kind keys, in the order the README lists them.
pub const KIND_KEYS: &[&str] = &[
    "handshake",
    "expect",
    "reply_to",
    "send",
    "await",
    "delay_ms",
    "fault",
    "user",
];

impl RawStep {
    /// Every key present, with the byte offset of its value.
    pub fn present(&self) -> Vec<(&'static str, usize)> {
        fn at<T>(v: &Option<Spanned<T>>) -> Option<usize> {
            v.as_ref().map(|s| s.span().start)
        }
        let on = self
            .on
            .as_ref()
            .and_then(|v| v.first())
            .map(|s| s.span().start);
        [
            ("handshake", at(&self.handshake)),
            ("expect", at(&self.expect)),
            ("reply_to", at(&self.reply_to)),
            ("send", at(&self.send)),
            ("await", at(&self.await_)),
            ("delay_ms", at(&self.delay_ms)),
            ("fault", at(&self.fault)),
            ("user", at(&self.user)),
            ("timeout_ms", at(&self.timeout_ms)),
            ("as", at(&self.as_)),
            ("match", at(&self.match_)),
            ("capture", at(&self.capture)),
            ("bind", at(&self.bind)),
            ("reply", at(&self.reply)),
            ("reply_error", at(&self.reply_error)),
            ("result", at(&self.result)),
            ("error", at(&self.error)),
            ("on", on.or(self.on.as_ref().map(|_| 0))),
            ("on_timeout", at(&self.on_timeout)),
            ("frame", at(&self.frame)),
            ("at", at(&self.at)),
            ("line", at(&self.line)),
            ("session", at(&self.session)),
            ("cwd", at(&self.cwd)),
            ("text", at(&self.text)),
            ("request", at(&self.request)),
            ("kind", at(&self.kind)),
            ("option", at(&self.option)),
            ("each", at(&self.each)),
            ("session_id", at(&self.session_id)),
            ("pending", at(&self.pending)),
            ("mode", at(&self.mode)),
            ("config", at(&self.config)),
            ("value", at(&self.value)),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// One `[[step.on]]` case of an `await`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawOn {
    pub selected: Option<Spanned<Vec<S>>>,
    pub option: Option<Spanned<Vec<S>>>,
    pub cancelled: Option<Spanned<bool>>,
    pub unoffered: Option<Spanned<bool>>,
    pub error: Option<Spanned<bool>>,
    pub otherwise: Option<Spanned<bool>>,
    pub then: Option<Vec<Spanned<BoxedStep>>>,
}
