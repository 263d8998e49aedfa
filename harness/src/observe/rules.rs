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
//! that request. `approval_resolved` without `by` says who answered from what the user did: the
//! user's input or cancel at a card with buttons → `user` / `cancel`; a `cancelled` outcome after
//! the user cancelled → `cancel`; else `policy`. `item` and `turn` events without `sessionId` are
//! about the session of the client's last `session/prompt`.

use std::collections::HashSet;

use acp_vocab::control::{Observed, PresentedOption};
use acp_vocab::note::Note;
use regex::Regex;
use serde_json::{Map, Value, json};

use super::UserAct;
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

/// The events a rule may make: (type, fields it may set, fields it must set).
const EVENTS: &[(&str, &[&str], &[&str])] = &[
    (
        "approval",
        &[
            "sessionId",
            "requestId",
            "toolCallId",
            "title",
            "subject",
            "options",
        ],
        &["subject"],
    ),
    (
        "approval_resolved",
        &[
            "sessionId",
            "requestId",
            "toolCallId",
            "title",
            "outcome",
            "optionId",
            "by",
        ],
        &["outcome"],
    ),
    (
        "item",
        &["sessionId", "toolCallId", "itemType", "status", "title"],
        &["toolCallId", "itemType", "status", "title"],
    ),
    (
        "turn",
        &["sessionId", "state", "stopReason", "message"],
        &["state"],
    ),
];

/// The event types an observer may report at all.
pub const EVENT_TYPES: [&str; 4] = ["approval", "approval_resolved", "item", "turn"];

const SUBJECTS: &[&str] = &[
    "command",
    "file_change",
    "read",
    "search",
    "fetch",
    "think",
    "mode_switch",
    "generic",
];

/// The closed vocabulary of a field (CONTROL.md), if it has one.
fn vocabulary(field: &str) -> Option<&'static [&'static str]> {
    Some(match field {
        "subject" | "itemType" => SUBJECTS,
        "outcome" => &["selected", "cancelled"],
        "by" => &["user", "cancel", "policy"],
        "state" => &["running", "completed", "cancelled", "failed", "refused"],
        _ => return None,
    })
}

/// Values a template may use besides captures: what the wire says, and the exit code.
const CONTEXT: &[&str] = &["session", "stop_reason"];

#[derive(Debug)]
struct Rule {
    on: Source,
    regex: Option<Regex>,
    when: Option<String>,
    codes: Option<Codes>,
    event: &'static str,
    fields: Vec<(&'static str, Template)>,
    buttons: bool,
}

/// A profile's rules, checked.
#[derive(Debug)]
pub struct Compiled {
    rules: Vec<Rule>,
    words: Words,
}

impl Compiled {
    /// The event types these rules can report, in the order of [`EVENT_TYPES`].
    pub fn reports(&self) -> Vec<&'static str> {
        EVENT_TYPES
            .into_iter()
            .filter(|t| self.rules.iter().any(|r| r.event == *t))
            .collect()
    }

    /// The sources the rules read, in words.
    pub fn sources(&self) -> String {
        let mut seen: Vec<&str> = Vec::new();
        for r in &self.rules {
            if !seen.contains(&r.on.describe()) {
                seen.push(r.on.describe());
            }
        }
        seen.join(", ")
    }
}

/// Checks and compiles `[observer]` rules; the error names the rule and the key.
pub fn compile(spec: &ObserverSpec, has_choose: bool, tty: bool) -> Result<Compiled, String> {
    for (table, words) in &spec.words {
        if words.is_empty() {
            return Err(format!("[observer.words.{table}] is empty"));
        }
    }
    let mut rules = Vec::new();
    for (i, r) in spec.rules.iter().enumerate() {
        let at = format!("[[observer.rule]] #{} (event = {:?})", i + 1, r.event);
        let &(event, allowed, required) =
            EVENTS.iter().find(|(t, ..)| *t == r.event).ok_or_else(|| {
                format!(
                    "[[observer.rule]] #{}: unknown event {:?} (one of {})",
                    i + 1,
                    r.event,
                    EVENT_TYPES.join(", ")
                )
            })?;
        let regex = match (&r.pattern, r.on) {
            (Some(p), Source::Stdout | Source::Stderr | Source::Terminal) => Some(
                Regex::new(p).map_err(|e| format!("{at}: `match` is not a valid regex: {e}"))?,
            ),
            (None, Source::Stdout | Source::Stderr | Source::Terminal) => {
                return Err(format!(
                    "{at}: on = {:?} needs a `match` regex",
                    r.on.describe()
                ));
            }
            (Some(_), _) => {
                return Err(format!(
                    "{at}: `match` is for on = \"stdout\", \"stderr\" or \"terminal\""
                ));
            }
            (None, _) => None,
        };
        if r.when.is_some() && r.on != Source::Json {
            return Err(format!("{at}: `when` is for on = \"json\""));
        }
        if let Some(when) = &r.when {
            if !when.starts_with('/') {
                return Err(format!("{at}: `when` must be a JSON pointer (\"/…\")"));
            }
        }
        if r.code.is_some() && r.on != Source::Exit {
            return Err(format!("{at}: `code` is for on = \"exit\""));
        }
        if r.on == Source::Stderr && tty {
            return Err(format!(
                "{at}: with tty = true stderr is the terminal: use on = \"terminal\""
            ));
        }
        let captures: Vec<&str> = regex
            .as_ref()
            .map(|re| re.capture_names().flatten().collect())
            .unwrap_or_default();
        let mut fields = Vec::new();
        let mut buttons = false;
        for (key, text) in &r.fields {
            let Some(&field) = allowed.iter().find(|f| **f == key.as_str()) else {
                return Err(format!(
                    "{at}: unknown key `{key}` (this event's fields: {}; and on, match, when, code, event)",
                    allowed.join(", ")
                ));
            };
            if field == "options" {
                if text != "choose" {
                    return Err(format!(
                        "{at}: `options` can only be \"choose\" (the buttons the [[choose]] inputs select)"
                    ));
                }
                if !has_choose {
                    return Err(format!(
                        "{at}: options = \"choose\" needs [[choose]] inputs in the profile"
                    ));
                }
                buttons = true;
                continue;
            }
            let template = Template::parse(text).map_err(|e| format!("{at}: `{key}`: {e}"))?;
            for (name, table) in template.vars() {
                let known = if name.starts_with('/') {
                    r.on == Source::Json
                } else {
                    captures.contains(&name)
                        || CONTEXT.contains(&name)
                        || (name == "code" && r.on == Source::Exit)
                };
                if !known {
                    return Err(format!(
                        "{at}: `{key}` uses {{{name}}}, which is neither a named group of `match`{} nor one of {{session}}, {{stop_reason}}{}",
                        if r.on == Source::Json {
                            ", a JSON pointer"
                        } else {
                            ""
                        },
                        if r.on == Source::Exit { ", {code}" } else { "" }
                    ));
                }
                if let Some(table) = table {
                    let words = spec.words.get(table).ok_or_else(|| {
                        format!("{at}: `{key}` uses the word table {table:?}, which [observer.words] does not have")
                    })?;
                    if let Some(vocab) = vocabulary(field) {
                        if let Some(bad) = words.values().find(|w| !vocab.contains(&w.as_str())) {
                            return Err(format!(
                                "[observer.words.{table}]: {bad:?} is not a `{field}` (one of {})",
                                vocab.join(", ")
                            ));
                        }
                    }
                }
            }
            if let (Some(value), Some(vocab)) = (template.literal(), vocabulary(field)) {
                if !vocab.contains(&value.as_str()) {
                    return Err(format!(
                        "{at}: `{key}` = {value:?} is not one of {}",
                        vocab.join(", ")
                    ));
                }
            }
            fields.push((field, template));
        }
        if let Some(missing) = required.iter().find(|f| !r.fields.contains_key(**f)) {
            return Err(format!("{at}: needs `{missing}`"));
        }
        rules.push(Rule {
            on: r.on,
            regex,
            when: r.when.clone(),
            codes: r.code.clone(),
            event,
            fields,
            buttons,
        });
    }
    Ok(Compiled {
        rules,
        words: spec.words.clone(),
    })
}

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
        }
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

    /// Text the client wrote to its terminal.
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
    pub fn exited(&mut self, exit: &ExitInfo) -> Vec<Value> {
        let Some(code) = exit.code else {
            return Vec::new(); // killed: the client showed nothing
        };
        if self.wire.session().is_none() {
            return Vec::new(); // no turn ever started
        }
        let rule = self.compiled.rules.iter().find(|r| {
            r.on == Source::Exit && r.codes.as_ref().is_none_or(|c| c.contains(code.into()))
        });
        let Some(rule) = rule else {
            return Vec::new();
        };
        let lookup = |name: &str| self.context(name, Some(code));
        let draft = self.draft(rule, &lookup, format!("exit code {code}"));
        self.settle(vec![draft])
    }

    /// What the user is about to do.
    pub fn user(&mut self, act: UserAct) {
        self.user_act = Some(act);
        if act == UserAct::Cancelled {
            self.cancelled = true;
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
        let mut evidence = evidence;
        if evidence.len() > MAX_EVIDENCE {
            let cut = (0..=MAX_EVIDENCE)
                .rev()
                .find(|&i| evidence.is_char_boundary(i))
                .unwrap_or(0);
            evidence.truncate(cut);
            evidence.push('…');
        }
        Draft {
            event,
            buttons: rule.buttons,
            from: rule.on,
            evidence,
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
                            .filter_map(|c| {
                                let id = c.selected(&request.options)?;
                                serde_json::to_value(PresentedOption {
                                    option_id: id.to_owned(),
                                    label: c.input.trim().to_owned(),
                                })
                                .ok()
                            })
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
        let observed = Observed {
            by: self.name.clone(),
            from: draft.from.describe().to_owned(),
            evidence: draft.evidence.clone(),
        };
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
mod tests {
    //! acpx's rules as its profiles carry them (clients/acpx/), on lines acpx 0.19.1 prints.
    use super::*;
    use acp_vocab::transcript::{Direction, Recorder};

    use crate::client_spec::ClientSpec;

    const REQUEST: &str = r#"{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"tc1","title":"cat ~/.ssh/id_rsa","rawInput":{"command":"cat ~/.ssh/id_rsa"}},"options":[{"optionId":"allow_always","kind":"allow_always","name":"Always Allow"},{"optionId":"allow","kind":"allow_once","name":"Allow"},{"optionId":"reject","kind":"reject_once","name":"Reject"}]}}"#;
    const PROMPT: &str = r#"{"jsonrpc":"2.0","id":0,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}"#;

    /// The rules of a clients/acpx profile, and a transcript with `wire` in it.
    fn load(profile: &str, wire: &[(Direction, &str)]) -> (DataRules, Recorder) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../clients/acpx")
            .join(profile);
        let spec = ClientSpec::from_profile_with_program(&path, "acpx").unwrap();
        let observer = spec.wire.observer.as_ref().unwrap();
        let compiled = compile(observer, !spec.wire.choose.is_empty(), spec.wire.tty).unwrap();
        let mut rules = DataRules::new("acpx".into(), compiled, spec.wire.choose.clone());
        let rec = Recorder::new();
        for (dir, frame) in wire {
            rec.record(1, *dir, frame.as_bytes());
        }
        rules.wire.refresh(&rec, |_| {});
        (rules, rec)
    }

    fn types(events: &[Value]) -> Vec<&str> {
        events.iter().map(|e| e["type"].as_str().unwrap()).collect()
    }

    fn valid(events: &[Value]) {
        for e in events {
            crate::control::validate_control(e).unwrap_or_else(|err| panic!("{e}: {err}"));
        }
    }

    #[test]
    fn escalation_meta_is_an_observed_approval_then_a_policy_answer() {
        let (mut acpx, _rec) = load("acpx.toml", &[(Direction::AgentToClient, REQUEST)]);
        assert!(acpx.stdout_line(REQUEST).is_empty());
        let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"reject"},"_meta":{"acpx":{"permissionEscalation":{"type":"permission_escalation","sessionId":"s1","toolCallId":"tc1","toolKind":"read","action":"escalate"}}}}}"#;
        let events = acpx.stdout_line(answer);
        valid(&events);
        assert_eq!(types(&events), ["approval", "approval_resolved"]);
        assert_eq!(events[0]["subject"], "read");
        assert_eq!(events[0]["toolCallId"], "tc1");
        assert_eq!(events[0]["requestId"], 0);
        assert!(events[0].get("options").is_none());
        assert_eq!(events[0]["observed"]["from"], "stdout (JSON)");
        assert!(
            events[0]["observed"]["evidence"]
                .as_str()
                .unwrap()
                .contains("\"toolKind\":\"read\""),
            "{}",
            events[0]
        );
        assert_eq!(events[1]["by"], "policy");
        assert_eq!(events[1]["optionId"], "reject");
        // `other` and no kind at all show as generic.
        let (mut acpx, _rec) = load("acpx.toml", &[(Direction::AgentToClient, REQUEST)]);
        let other = answer.replace(r#""toolKind":"read","#, "");
        assert_eq!(acpx.stdout_line(&other)[0]["subject"], "generic");
    }

    #[test]
    fn a_prompt_response_is_not_a_permission_answer_and_exit_codes_are_turn_states() {
        let stop = r#"{"jsonrpc":"2.0","id":0,"result":{"stopReason":"cancelled"}}"#;
        let wire = [
            (Direction::ClientToAgent, PROMPT),
            (Direction::AgentToClient, REQUEST),
            (Direction::AgentToClient, stop),
        ];
        let (mut acpx, _rec) = load("acpx.toml", &wire);
        // id 0 both ways: the agent's prompt response must not resolve the permission request.
        assert!(acpx.stdout_line(stop).is_empty());
        let state = |acpx: &mut DataRules, code: Option<i32>| {
            let events = acpx.exited(&ExitInfo { code, signal: None });
            valid(&events);
            events.first().map(|e| {
                assert_eq!(e["sessionId"], "s1");
                e["state"].as_str().unwrap().to_owned()
            })
        };
        assert_eq!(state(&mut acpx, Some(0)).as_deref(), Some("cancelled"));
        assert_eq!(state(&mut acpx, Some(130)).as_deref(), Some("cancelled"));
        assert_eq!(state(&mut acpx, Some(5)).as_deref(), Some("failed"));
        assert_eq!(state(&mut acpx, Some(1)).as_deref(), Some("failed"));
        assert_eq!(state(&mut acpx, None), None);
        let turn = acpx.exited(&ExitInfo {
            code: Some(5),
            signal: None,
        });
        assert_eq!(turn[0]["stopReason"], "cancelled");
        assert!(
            turn[0]["message"]
                .as_str()
                .unwrap()
                .starts_with("acpx exited with code 5 (PERMISSION_DENIED")
        );
        // No turn ever started: nothing to report.
        let (mut idle, _rec) = load("acpx.toml", &[]);
        assert!(
            idle.exited(&ExitInfo {
                code: Some(0),
                signal: None
            })
            .is_empty()
        );
    }

    #[test]
    fn terminal_prompt_is_the_card_with_the_reachable_buttons() {
        let (mut acpx, _rec) = load("acpx-tty.toml", &[(Direction::AgentToClient, REQUEST)]);
        let text = "\u{1b}[1G\u{1b}[0J\r\n[permission] Allow cat ~/.ssh/id_rsa [re";
        assert!(acpx.terminal(text).is_empty());
        let events = acpx.terminal("ad]? (y/N) \u{1b}[59G");
        valid(&events);
        assert_eq!(types(&events), ["approval"]);
        assert_eq!(events[0]["subject"], "read");
        assert_eq!(events[0]["toolCallId"], "tc1");
        assert_eq!(
            events[0]["options"],
            json!([{"optionId":"allow","label":"y"},{"optionId":"reject","label":"n"}])
        );
        assert_eq!(events[0]["observed"]["from"], "terminal");
        assert_eq!(
            events[0]["observed"]["evidence"],
            "[permission] Allow cat ~/.ssh/id_rsa [read]? (y/N)"
        );
        // The escalation on stdout after the prompt is the same card: it stands once.
        acpx.user(UserAct::Cancelled);
        let answer = r#"{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"},"_meta":{"acpx":{"permissionEscalation":{"toolKind":"execute"}}}}}"#;
        let resolved = acpx.stdout_line(answer);
        valid(&resolved);
        assert_eq!(types(&resolved), ["approval_resolved"]);
        assert_eq!(resolved[0]["by"], "cancel");
    }

    #[test]
    fn an_event_without_its_request_waits_for_it_and_is_noted_if_none_comes() {
        let (mut acpx, rec) = load("acpx-tty.toml", &[]);
        assert!(
            acpx.terminal("[permission] Allow x [edit]? (y/N)")
                .is_empty()
        );
        rec.record(1, Direction::AgentToClient, REQUEST.as_bytes());
        acpx.wire.refresh(&rec, |_| {});
        let events = acpx.stdout_line("unrelated");
        assert_eq!(types(&events), ["approval"]);
        assert_eq!(events[0]["subject"], "file_change");
        // A second card for the only request is dropped; an answer to no request waits.
        assert!(
            acpx.terminal("[permission] Allow y [edit]? (y/N)")
                .is_empty()
        );
        let stray = r#"{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"cancelled"}}}"#;
        assert!(acpx.stdout_line(stray).is_empty());
        let notes = acpx.unmatched();
        assert_eq!(notes.len(), 1);
        assert!(matches!(notes[0], Note::ObserverUnmatched { .. }));
    }

    #[test]
    fn chuk_acp_rules_read_stdout_and_stderr_lines() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../clients/chuk-acp/chuk-acp.toml");
        let spec = ClientSpec::from_profile_with_program(&path, "chuk-acp").unwrap();
        let compiled = compile(spec.wire.observer.as_ref().unwrap(), false, false).unwrap();
        let mut rules = DataRules::new("chuk-acp".into(), compiled, Vec::new());
        // No prompt on the wire yet: the turn waits for its session.
        assert!(rules.stdout_line("[Stop reason: end_turn]").is_empty());
        let rec = Recorder::new();
        rec.record(1, Direction::ClientToAgent, PROMPT.as_bytes());
        rules.wire.refresh(&rec, |_| {});
        let events = rules.stderr_line("Error connecting to agent: Prompt failed: boom");
        valid(&events);
        assert_eq!(types(&events), ["turn", "turn"]);
        assert_eq!(events[0]["state"], "completed");
        assert_eq!(events[0]["stopReason"], "end_turn");
        assert_eq!(events[1]["state"], "failed");
        assert_eq!(events[1]["sessionId"], "s1");
        assert_eq!(events[1]["observed"]["from"], "stderr");
        assert!(rules.stdout_line("Done.").is_empty());
        assert_eq!(
            rules.stdout_line("[Stop reason: refusal]")[0]["state"],
            "refused"
        );
    }

    #[test]
    fn a_rule_that_matches_empty_text_ends_and_keeps_char_boundaries() {
        let spec = spec(
            "[observer]\n[[observer.rule]]\non = \"terminal\"\nmatch = \"x*\"\nevent = \"turn\"\nstate = \"failed\"\n",
        );
        let mut rules = DataRules::new(
            "t".into(),
            compile(&spec, false, false).unwrap(),
            Vec::new(),
        );
        // No prompt on the wire: every match waits; the point is that this returns.
        assert!(rules.terminal("éé\u{1b}[1Gü").is_empty());
        assert_eq!(rules.unmatched().len(), 4);
    }

    #[test]
    fn strip_escapes_keeps_text() {
        assert_eq!(strip_escapes("\u{1b}[59Gy\r\r\nok"), "y\nok");
    }

    fn spec(text: &str) -> ObserverSpec {
        toml::from_str::<toml::Table>(text)
            .unwrap()
            .get("observer")
            .cloned()
            .unwrap()
            .try_into()
            .unwrap()
    }

    #[test]
    fn bad_rules_name_the_rule_and_the_key() {
        let cases = [
            (
                "on = \"json\"\nevent = \"turn\"\nstate = \"{code}\"",
                "uses {code}",
            ),
            ("on = \"exit\"\nevent = \"approval\"", "needs `subject`"),
            (
                "on = \"exit\"\nevent = \"turn\"\nstate = \"{session|nope}\"",
                "word table \"nope\"",
            ),
            (
                "on = \"stdout\"\nevent = \"turn\"\nstate = \"failed\"",
                "needs a `match`",
            ),
            (
                "on = \"exit\"\nmatch = \"x\"\nevent = \"turn\"\nstate = \"failed\"",
                "`match` is for",
            ),
            (
                "on = \"terminal\"\nmatch = \"x\"\nevent = \"approval\"\nsubject = \"read\"\noptions = \"choose\"",
                "needs [[choose]]",
            ),
            (
                "on = \"json\"\nwhen = \"x\"\nevent = \"turn\"\nstate = \"failed\"",
                "JSON pointer",
            ),
        ];
        for (rule, needle) in cases {
            let spec = spec(&format!("[observer]\n[[observer.rule]]\n{rule}\n"));
            let err = compile(&spec, false, false).unwrap_err();
            assert!(err.contains(needle), "{needle:?} not in {err}");
            assert!(err.starts_with("[[observer.rule]] #1"), "{err}");
        }
        let words = spec(
            "[observer]\n[[observer.rule]]\non = \"exit\"\nevent = \"turn\"\nstate = \"{stop_reason|s}\"\n[observer.words.s]\nx = \"done\"\n",
        );
        let err = compile(&words, false, false).unwrap_err();
        assert!(
            err.contains("[observer.words.s]: \"done\" is not a `state`"),
            "{err}"
        );
    }
}
