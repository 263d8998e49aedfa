//! The scenario file exactly as written (serde shapes with spans). Every table denies unknown
//! fields, so a typo is a parse error at the key rather than a silently ignored line.
//! [`super::parse`] turns these into the typed [`super::Scenario`].

use serde::Deserialize;
use toml::Spanned;

use crate::de::Ordered;

pub type S = Spanned<String>;

#[derive(Deserialize, Debug)]
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
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct RawSetup {
    pub dir: Option<S>,
    pub file: Option<S>,
    pub symlink: Option<S>,
    pub target: Option<S>,
    pub content: Option<S>,
}

#[derive(Deserialize, Debug)]
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
/// A step has one to four of some thirty keys: each string slot is boxed, so an absent key costs
/// 8 bytes rather than 40 (a step was 1.5 KB, zeroed and written for each of 10⁵ steps).
#[derive(Deserialize, Default, Debug)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    // The kind keys: exactly one per step.
    pub handshake: Option<Spanned<bool>>,
    pub expect: Option<Box<S>>,
    pub reply_to: Option<Box<S>>,
    pub send: Option<Box<S>>,
    #[serde(rename = "await")]
    pub await_: Option<Box<S>>,
    pub delay_ms: Option<Spanned<u64>>,
    pub fault: Option<Box<S>>,
    pub user: Option<Box<S>>,
    // Modifiers.
    pub timeout_ms: Option<Spanned<u64>>,
    #[serde(rename = "as")]
    pub as_: Option<Box<S>>,
    #[serde(rename = "match")]
    pub match_: Option<Box<S>>,
    pub capture: Option<Box<Spanned<Ordered<S>>>>,
    pub bind: Option<Box<Spanned<Ordered<S>>>>,
    pub reply: Option<Box<S>>,
    pub reply_error: Option<Box<S>>,
    pub result: Option<Box<S>>,
    pub error: Option<Box<S>>,
    pub on: Option<Vec<Spanned<RawOn>>>,
    pub on_timeout: Option<Spanned<Vec<Spanned<BoxedStep>>>>,
    /// `await`: go on without the answer when it has not come in time.
    pub go_on: Option<Spanned<bool>>,
    pub frame: Option<Box<S>>,
    pub at: Option<Spanned<u64>>,
    pub line: Option<Box<S>>,
    /// `fault = "crash"`: the signal that kills the agent.
    pub signal: Option<Box<S>>,
    pub session: Option<Box<S>>,
    pub cwd: Option<Box<S>>,
    pub text: Option<Box<S>>,
    pub request: Option<Box<S>>,
    pub kind: Option<Box<S>>,
    pub option: Option<Box<S>>,
    pub each: Option<Spanned<bool>>,
    pub pending: Option<Box<S>>,
    /// `load_session` / `resume_session`: the ACP id of the earlier session.
    pub session_id: Option<Box<S>>,
    // user = "set_mode" / "set_config_option" (modes and config options)
    pub mode: Option<Box<S>>,
    pub config: Option<Box<S>>,
    pub value: Option<Box<S>>,
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
        fn at<T>(v: Option<&Spanned<T>>) -> Option<usize> {
            v.map(|s| s.span().start)
        }
        let on = self
            .on
            .as_ref()
            .and_then(|v| v.first())
            .map(|s| s.span().start);
        [
            ("handshake", at(self.handshake.as_ref())),
            ("expect", at(self.expect.as_deref())),
            ("reply_to", at(self.reply_to.as_deref())),
            ("send", at(self.send.as_deref())),
            ("await", at(self.await_.as_deref())),
            ("delay_ms", at(self.delay_ms.as_ref())),
            ("fault", at(self.fault.as_deref())),
            ("user", at(self.user.as_deref())),
            ("timeout_ms", at(self.timeout_ms.as_ref())),
            ("as", at(self.as_.as_deref())),
            ("match", at(self.match_.as_deref())),
            ("capture", at(self.capture.as_deref())),
            ("bind", at(self.bind.as_deref())),
            ("reply", at(self.reply.as_deref())),
            ("reply_error", at(self.reply_error.as_deref())),
            ("result", at(self.result.as_deref())),
            ("error", at(self.error.as_deref())),
            ("on", on.or(self.on.as_ref().map(|_| 0))),
            ("on_timeout", at(self.on_timeout.as_ref())),
            ("go_on", at(self.go_on.as_ref())),
            ("frame", at(self.frame.as_deref())),
            ("at", at(self.at.as_ref())),
            ("line", at(self.line.as_deref())),
            ("signal", at(self.signal.as_deref())),
            ("session", at(self.session.as_deref())),
            ("cwd", at(self.cwd.as_deref())),
            ("text", at(self.text.as_deref())),
            ("request", at(self.request.as_deref())),
            ("kind", at(self.kind.as_deref())),
            ("option", at(self.option.as_deref())),
            ("each", at(self.each.as_ref())),
            ("session_id", at(self.session_id.as_deref())),
            ("pending", at(self.pending.as_deref())),
            ("mode", at(self.mode.as_deref())),
            ("config", at(self.config.as_deref())),
            ("value", at(self.value.as_deref())),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect()
    }
}

/// One `[[step.on]]` case of an `await`.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
pub struct RawOn {
    pub selected: Option<Spanned<Vec<S>>>,
    pub option: Option<Spanned<Vec<S>>>,
    pub cancelled: Option<Spanned<bool>>,
    pub unoffered: Option<Spanned<bool>>,
    pub error: Option<Spanned<bool>>,
    pub otherwise: Option<Spanned<bool>>,
    pub then: Option<Vec<Spanned<BoxedStep>>>,
    /// `end = true`: the scenario ends after this case's `then` steps.
    pub end: Option<Spanned<bool>>,
}
