//! Data observers: the `[[observer.rule]]`s of a client profile, compiled and run.
//!
//! A rule looks at one source (stdout lines, stderr lines, the terminal's text, stdout's JSON
//! objects, the exit status); when it matches, its field templates make one control event.
//! `approval` and `approval_resolved` events are then matched to the ACP request they are about,
//! from the wire the harness relayed ([`WireView`]):
//!
//! * a captured `requestId` or `toolCallId` must be the request's own;
//! * a captured `title` prefers the oldest request with that `toolCall.title`, else the oldest
//!   one (a client may print a title its own way);
//! * among those, the oldest request without a card (for `approval`) or without a resolution
//!   (for `approval_resolved`) is taken; the first card of a request stands, a second is dropped;
//! * `sessionId`, `requestId` and `toolCallId` the rule left out come from that request. An event
//!   that matches no request yet waits for one (it is noted as unmatched if none comes).
//!
//! `options = "choose"` gives the card the buttons the profile's `[[choose]]` inputs select for
//! that request, each labelled with the key the profile types (case kept: `a` and `A` are two). `approval_resolved` without `by` says who answered from what the user did: the
//! user's input or cancel at a card with buttons → `user` / `cancel`; a `cancelled` outcome after
//! the user cancelled → `cancel`; else `policy`. `item` and `turn` events without `sessionId` are
//! about the session of the client's last `session/prompt`.

use std::collections::HashSet;

use acp_vocab::control::{Event, Observed, PresentedOption, TurnState};
use acp_vocab::note::Note;
use regex::Regex;
use serde_json::{Map, Value, json};

use super::UserAct;
use super::screen::Screen;
use super::template::{Template, Words};
use super::wire::WireView;
use crate::client_spec::ChooseInput;
use crate::client_spec::observer::{Codes, ObserverSpec, Source};
use crate::launch::ExitInfo;
use acp_judge::wire_model::id_key;

/// Terminal text kept while looking for a match.
const MAX_TERMINAL_TEXT: usize = 64 << 10;
/// Longest evidence quoted in an event.
const MAX_EVIDENCE: usize = 300;
/// Longest screen text (a box or region) quoted in an event.
const MAX_SCREEN_EVIDENCE: usize = 2000;

mod compile;

use compile::Rule;
pub use compile::{Compiled, EVENT_TYPES, OBSERVED_TYPES, compile, compile_for};

/// An event a rule made, before it is matched to its request.
#[derive(Debug)]
struct Draft {
    event: Map<String, Value>,
    buttons: bool,
    from: Source,
    evidence: String,
}

/// What became of a draft.
enum Settled {
    Ready(Value),
    /// No request (or no prompt) to match it to yet.
    Wait,
    /// A second card or resolution for a request: the first stands.
    Drop,
}

/// A data observer at work for one case.
pub struct DataRules {
    name: String,
    compiled: Compiled,
    choose: Vec<ChooseInput>,
    pub wire: WireView,
    terminal: String,
    /// Requests (indices into `wire.requests`) with a card, with a card that has buttons, and
    /// with a resolution.
    carded: HashSet<usize>,
    prompting: HashSet<usize>,
    resolved: HashSet<usize>,
    waiting: Vec<Draft>,
    user_act: Option<UserAct>,
    cancelled: bool,
    /// A `[tui]` client's screen, and what the rules last saw on it.
    tui: Option<Box<Tui>>,
}

/// A `[tui]` client's screen, per rule the texts it matched on the last settled screen it read,
/// and the screens on which the user acted, with the event the act calls for: once the screen
/// differs from one, a match of a rule for that event is new even with the text of the last one
/// (a card like the one answered: two requests with the same title; a status line back at
/// "ready" after the prompt: the turn's end, not the ready screen the prompt was typed on).
/// A card that reads exactly like the one answered, on a screen that reads exactly like the one
/// the user chose on, is new too once the client answered on the wire and drew after that
/// (`chose`: the wire's answer count when the user chose, and whether the client drew after a
/// later answer).
struct Tui {
    screen: Screen,
    shown: Vec<Vec<String>>,
    acted_on: Vec<(String, &'static str)>,
    chose: Option<(usize, bool)>,
}

impl DataRules {
    pub fn new(name: String, compiled: Compiled, choose: Vec<ChooseInput>) -> Self {
        DataRules {
            name,
            compiled,
            choose,
            wire: WireView::default(),
            terminal: String::new(),
            carded: HashSet::new(),
            prompting: HashSet::new(),
            resolved: HashSet::new(),
            waiting: Vec::new(),
            user_act: None,
            cancelled: false,
            tui: None,
        }
    }

    /// The client is a full-screen program on a `rows`×`cols` terminal (`[tui]`).
    pub fn with_screen(mut self, rows: u16, cols: u16) -> Self {
        self.tui = Some(Box::new(Tui {
            screen: Screen::new(rows, cols),
            shown: vec![Vec::new(); self.compiled.rules.len()],
            acted_on: Vec::new(),
            chose: None,
        }));
        self
    }

    /// Bytes the client wrote to its terminal, for the screen.
    pub fn screen_bytes(&mut self, bytes: &[u8]) {
        if let Some(tui) = self.tui.as_mut() {
            tui.screen.feed(bytes);
            if let Some((at, drew)) = tui.chose.as_mut() {
                *drew |= self.wire.answers > *at;
            }
        }
    }

    /// The screen's text now (`None` without `[tui]`).
    pub fn screen_text(&self) -> Option<String> {
        self.tui.as_ref().map(|t| t.screen.text(None))
    }

    /// The screen, if any.
    pub fn screen(&self) -> Option<&Screen> {
        self.tui.as_deref().map(|t| &t.screen)
    }

    /// The screen has been still for the settle time: `screen` rules read it. A rule makes an
    /// event for the first of its matches that was not on the last screen it read, not again
    /// while the same text stays on screen (a card that is repainted is one card; an old
    /// message above a new one is not matched again, nor when it scrolls); once it is gone, a
    /// new appearance counts again.
    pub fn settled(&mut self) -> Vec<Value> {
        let Some(tui) = self.tui.as_mut() else {
            return Vec::new();
        };
        let mut shown = std::mem::take(&mut tui.shown);
        shown.resize(self.compiled.rules.len(), Vec::new());
        let now = tui.screen.text(None);
        // The client answered the request the user chose for and drew since: whatever card is
        // on screen now is not the one answered, even if it reads the same.
        let answered = tui.chose.is_some_and(|(_, drew)| drew);
        let taken = |(before, event): &(String, &'static str)| {
            *before != now || (answered && *event == "approval")
        };
        for (_, event) in tui.acted_on.iter().filter(|a| taken(a)) {
            // The client took the user's act (its screen moved on): what the rules for that
            // event match now is new.
            for (i, rule) in self.compiled.rules.iter().enumerate() {
                if rule.event == *event {
                    shown[i].clear();
                }
            }
        }
        tui.acted_on.retain(|a| !taken(a));
        if !tui.acted_on.iter().any(|(_, event)| *event == "approval") {
            tui.chose = None;
        }
        let mut drafts = Vec::new();
        let screen = &self.tui.as_ref().expect("checked above").screen;
        for (i, rule) in self.compiled.rules.iter().enumerate() {
            if rule.on != Source::Screen {
                continue;
            }
            let narrowed = match (&rule.region, &rule.box_containing) {
                (Some(region), _) => Some(*region),
                (None, Some(needle)) => match screen.box_containing(needle) {
                    Some(inside) => Some(inside),
                    None => {
                        shown[i].clear();
                        continue;
                    }
                },
                (None, None) => None,
            };
            let text = screen.text(narrowed);
            let all: Vec<regex::Captures<'_>> = rule
                .regex
                .as_ref()
                .map(|re| re.captures_iter(&text).collect())
                .unwrap_or_default();
            let whole = |c: &regex::Captures<'_>| c.get(0).map_or("", |m| m.as_str()).to_owned();
            let new = all.iter().find(|c| !shown[i].contains(&whole(c)));
            if let Some(caps) = new {
                let mut draft = self.captured(rule, caps);
                if narrowed.is_some() {
                    // What the person saw: the whole box or region the rule read.
                    draft.evidence = clip(text.trim().to_owned(), MAX_SCREEN_EVIDENCE);
                }
                drafts.push(draft);
            }
            shown[i] = all.iter().map(whole).collect();
        }
        if let Some(tui) = self.tui.as_mut() {
            tui.shown = shown;
        }
        self.settle(drafts)
    }

    pub fn reports(&self) -> Vec<&'static str> {
        self.compiled.reports()
    }

    pub fn sources(&self) -> String {
        self.compiled.sources()
    }

    /// One stdout line: `stdout` rules, then `json` rules if it is a JSON object.
    pub fn stdout_line(&mut self, line: &str) -> Vec<Value> {
        let mut drafts = self.line_drafts(Source::Stdout, line);
        if let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) {
            let obj = Value::Object(obj);
            for rule in self.compiled.rules.iter().filter(|r| r.on == Source::Json) {
                let evidence = match &rule.when {
                    Some(p) => match obj.pointer(p) {
                        Some(v) => format!("{p} = {v}"),
                        None => continue,
                    },
                    None => line.to_owned(),
                };
                let lookup = |name: &str| match name.strip_prefix('/') {
                    Some(_) => obj.pointer(name).cloned(),
                    None => self.context(name, None),
                };
                drafts.push(self.draft(rule, &lookup, evidence));
            }
        }
        self.settle(drafts)
    }

    pub fn stderr_line(&mut self, line: &str) -> Vec<Value> {
        let drafts = self.line_drafts(Source::Stderr, line);
        self.settle(drafts)
    }

    fn line_drafts(&self, on: Source, line: &str) -> Vec<Draft> {
        let mut drafts = Vec::new();
        for rule in self.compiled.rules.iter().filter(|r| r.on == on) {
            if let Some(caps) = rule.regex.as_ref().and_then(|re| re.captures(line)) {
                drafts.push(self.captured(rule, &caps));
            }
        }
        drafts
    }

    fn captured(&self, rule: &Rule, caps: &regex::Captures<'_>) -> Draft {
        let lookup = |name: &str| match caps.name(name) {
            Some(m) => Some(Value::String(m.as_str().to_owned())),
            None => self.context(name, None),
        };
        let evidence = caps.get(0).map_or("", |m| m.as_str()).trim().to_owned();
        self.draft(rule, &lookup, evidence)
    }

    /// Text the client wrote to its terminal. Rules read only the text after the end of the
    /// last match (of any terminal rule): a repaint older than that is never matched again.
    pub fn terminal(&mut self, text: &str) -> Vec<Value> {
        self.terminal.push_str(&strip_escapes(text));
        let mut drafts = Vec::new();
        loop {
            // The earliest match of any terminal rule, the first rule on a tie.
            let found = self
                .compiled
                .rules
                .iter()
                .filter(|r| r.on == Source::Terminal)
                .filter_map(|r| Some((r, r.regex.as_ref()?.captures(&self.terminal)?)))
                .min_by_key(|(_, caps)| caps.get(0).map_or(usize::MAX, |m| m.start()));
            let Some((rule, caps)) = found else { break };
            let end = caps.get(0).map_or(self.terminal.len(), |m| m.end());
            drafts.push(self.captured(rule, &caps));
            // An empty match at the start still moves on, by one character.
            let end = match end {
                0 => self.terminal.chars().next().map_or(0, char::len_utf8),
                n => n,
            };
            self.terminal.drain(..end);
            if end == 0 {
                break;
            }
        }
        if self.terminal.len() > MAX_TERMINAL_TEXT {
            let cut = self.terminal.len() - MAX_TERMINAL_TEXT;
            let cut = (cut..self.terminal.len())
                .find(|&i| self.terminal.is_char_boundary(i))
                .unwrap_or(self.terminal.len());
            self.terminal.drain(..cut);
        }
        self.settle(drafts)
    }

    /// The client exited: the first `exit` rule for its code, about the last prompt's session.
    /// With no `session/prompt` on the wire, what it showed of its launch ([`Self::launch_failed`]).
    pub fn exited(&mut self, exit: &ExitInfo) -> Vec<Value> {
        let Some(code) = exit.code else {
            return Vec::new(); // killed: the client showed nothing
        };
        let rule = self.compiled.rules.iter().find(|r| {
            r.on == Source::Exit && r.codes.as_ref().is_none_or(|c| c.contains(code.into()))
        });
        let lookup = |name: &str| self.context(name, Some(code));
        let draft = rule.map(|rule| self.draft(rule, &lookup, format!("exit code {code}")));
        if self.wire.session().is_none() {
            return self.launch_failed(draft);
        }
        self.settle(draft.into_iter().collect())
    }

    /// The client exits and no prompt of it ever reached the agent (the agent died or refused
    /// before a session was open): a turn its rules showed ended other than `completed` (a
    /// stdout or stderr rule's, still waiting for a session, then the exit rule's) is what the
    /// client showed of the session it could not open, reported as an `error`. A `completed`
    /// one is not: that is a client reporting success for a session that never opened, which
    /// the `session-open` check finds by the missing error.
    fn launch_failed(&mut self, exit_draft: Option<Draft>) -> Vec<Value> {
        let failed_state = |d: &Draft| -> Option<TurnState> {
            if d.event.get("type")? != "turn" {
                return None;
            }
            let state: TurnState = serde_json::from_value(d.event.get("state")?.clone()).ok()?;
            (state.is_end() && state != TurnState::Completed).then_some(state)
        };
        let draft = match self.waiting.iter().position(|d| failed_state(d).is_some()) {
            Some(i) => self.waiting.remove(i),
            None => match exit_draft {
                Some(d) if failed_state(&d).is_some() => d,
                _ => return Vec::new(),
            },
        };
        let state = failed_state(&draft).unwrap_or(TurnState::Failed);
        let said = match draft.event.get("message").and_then(Value::as_str) {
            Some(m) => format!("{m}; "),
            None => String::new(),
        };
        let error = Event::Error {
            seq: None,
            message: format!("{said}shown as a {state} turn, and no prompt reached the agent"),
            observed: Some(self.observed(&draft)),
        };
        vec![serde_json::to_value(error).expect("an event always serialises")]
    }

    /// What the user is about to do.
    pub fn user(&mut self, act: UserAct) {
        self.user_act = Some(act);
        if act == UserAct::Cancelled {
            self.cancelled = true;
        }
        if act == UserAct::Chose {
            self.acted_on("approval");
            if let Some(tui) = self.tui.as_mut() {
                tui.chose = Some((self.wire.answers, false));
            }
        }
    }

    /// The user is about to type a prompt into a `[tui]` client: a turn its rules saw before
    /// (a status line that reads the same at rest and at a turn's end) is not this turn's end.
    pub fn prompt_typed(&mut self) {
        self.waiting
            .retain(|d| !(d.from == Source::Screen && d.event.get("type") == Some(&json!("turn"))));
        self.acted_on("turn");
    }

    fn acted_on(&mut self, event: &'static str) {
        if let Some(tui) = self.tui.as_mut() {
            let now = tui.screen.text(None);
            tui.acted_on.push((now, event));
        }
    }

    /// Events that never matched a request, as notes for the transcript.
    pub fn unmatched(&mut self) -> Vec<Note> {
        std::mem::take(&mut self.waiting)
            .into_iter()
            .map(|d| Note::ObserverUnmatched {
                event: Value::Object(d.event),
                evidence: d.evidence,
                reason: "no permission request (or no session/prompt) on the wire to match it to"
                    .into(),
            })
            .collect()
    }

    fn context(&self, name: &str, code: Option<i32>) -> Option<Value> {
        match name {
            "session" => self.wire.session().map(|s| json!(s)),
            "stop_reason" => self.wire.stop_reason.as_ref().map(|s| json!(s)),
            "code" => code.map(|c| json!(c.to_string())),
            _ => None,
        }
    }

    /// Who observed `draft`'s event, where, and what was seen.
    fn observed(&self, draft: &Draft) -> Observed {
        Observed {
            by: self.name.clone(),
            from: draft.from.describe().to_owned(),
            evidence: draft.evidence.clone(),
        }
    }

    fn draft(
        &self,
        rule: &Rule,
        lookup: &dyn Fn(&str) -> Option<Value>,
        evidence: String,
    ) -> Draft {
        let mut event = Map::new();
        event.insert("type".into(), json!(rule.event));
        for (field, template) in &rule.fields {
            if let Some(value) = template.render(lookup, &self.compiled.words) {
                event.insert((*field).to_owned(), value);
            }
        }
        Draft {
            event,
            buttons: rule.buttons,
            from: rule.on,
            evidence: clip(evidence, MAX_EVIDENCE),
        }
    }

    /// Matches drafts (new ones and those still waiting) to the wire; returns the ready events.
    fn settle(&mut self, drafts: Vec<Draft>) -> Vec<Value> {
        let mut queue = std::mem::take(&mut self.waiting);
        queue.extend(drafts);
        let mut ready = Vec::new();
        for draft in queue {
            match self.complete(&draft) {
                Settled::Ready(event) => ready.push(event),
                Settled::Wait => self.waiting.push(draft),
                Settled::Drop => {}
            }
        }
        ready
    }

    fn complete(&mut self, draft: &Draft) -> Settled {
        let mut event = draft.event.clone();
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match kind {
            "approval" | "approval_resolved" => {
                let card = kind == "approval";
                let Some(i) = self.request_for(&event, card) else {
                    return Settled::Wait;
                };
                if (card && self.carded.contains(&i)) || (!card && self.resolved.contains(&i)) {
                    return Settled::Drop;
                }
                let request = &self.wire.requests[i];
                event.insert("requestId".into(), request.id.clone());
                event
                    .entry("sessionId")
                    .or_insert_with(|| json!(request.session_id));
                event.remove("title");
                if card {
                    event
                        .entry("toolCallId")
                        .or_insert_with(|| json!(request.tool_call_id.clone().unwrap_or_default()));
                    if draft.buttons {
                        let options: Vec<Value> = self
                            .choose
                            .iter()
                            .flat_map(|c| c.reachable(&request.options))
                            .filter_map(|r| {
                                serde_json::to_value(PresentedOption {
                                    option_id: r.id.to_owned(),
                                    label: r.label,
                                })
                                .ok()
                            })
                            .collect();
                        // One button per option, however many inputs reach it.
                        let mut seen = HashSet::new();
                        let options: Vec<Value> = options
                            .into_iter()
                            .filter(|o| seen.insert(o["optionId"].to_string()))
                            .collect();
                        event.insert("options".into(), Value::Array(options));
                        self.prompting.insert(i);
                    }
                    self.carded.insert(i);
                } else {
                    event.remove("toolCallId");
                    if !event.contains_key("by") {
                        let cancelled = event.get("outcome") == Some(&json!("cancelled"));
                        let by = self.who_answered(i, cancelled);
                        event.insert("by".into(), json!(by));
                    }
                    self.resolved.insert(i);
                }
            }
            _ => {
                if !event.contains_key("sessionId") {
                    let Some(session) = self.wire.session() else {
                        return Settled::Wait;
                    };
                    event.insert("sessionId".into(), json!(session));
                }
            }
        }
        let observed = self.observed(draft);
        event.insert(
            "observed".into(),
            serde_json::to_value(observed).unwrap_or_default(),
        );
        Settled::Ready(Value::Object(event))
    }

    /// The request an `approval` (`card`) or `approval_resolved` is about (module docs).
    fn request_for(&self, event: &Map<String, Value>, card: bool) -> Option<usize> {
        let id = event.get("requestId").map(id_key);
        let tool = event.get("toolCallId").and_then(Value::as_str);
        let title = event.get("title").and_then(Value::as_str);
        let candidates: Vec<usize> = (0..self.wire.requests.len())
            .filter(|&i| {
                let r = &self.wire.requests[i];
                id.as_ref().is_none_or(|k| *k == id_key(&r.id))
                    && tool.is_none_or(|t| r.tool_call_id.as_deref() == Some(t))
            })
            .collect();
        let first = *candidates.first()?;
        let free = |i: &&usize| {
            if card {
                !self.carded.contains(i)
            } else {
                !self.resolved.contains(i)
            }
        };
        let titled = title.and_then(|t| {
            candidates
                .iter()
                .filter(free)
                .find(|&&i| self.wire.requests[i].title.as_deref() == Some(t))
        });
        Some(
            titled
                .or_else(|| candidates.iter().find(free))
                .copied()
                .unwrap_or(first),
        )
    }

    fn who_answered(&mut self, request: usize, cancelled: bool) -> &'static str {
        match (self.prompting.contains(&request), self.user_act.take()) {
            (true, Some(UserAct::Chose)) => "user",
            (true, Some(UserAct::Cancelled)) => "cancel",
            (false, _) if cancelled && self.cancelled => "cancel",
            _ => "policy",
        }
    }
}

/// Evidence quoted in an event: at most `max` bytes.
fn clip(mut evidence: String, max: usize) -> String {
    if evidence.len() > max {
        let cut = (0..=max)
            .rev()
            .find(|&i| evidence.is_char_boundary(i))
            .unwrap_or(0);
        evidence.truncate(cut);
        evidence.push('…');
    }
    evidence
}

/// Removes ANSI escape sequences (CSI `ESC [ … final`, and two-byte `ESC x`) and carriage returns.
pub fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                if chars.next_if_eq(&'[').is_some() {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests;
