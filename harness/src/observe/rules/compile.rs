//! Checking and compiling a profile's `[[observer.rule]]`s: every rule names a known event, sets
//! only the fields that event has, with words of the closed vocabularies; the error names the
//! rule and the key.

use super::*;
use crate::observe::screen::Region;

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

/// The event types an observer's rules may make.
pub const EVENT_TYPES: [&str; 4] = ["approval", "approval_resolved", "item", "turn"];

/// The event types an observer may report at all: also `error`, which rules derive from a turn
/// (`DataRules::exited`) and an outside program may print.
pub const OBSERVED_TYPES: [&str; 5] = {
    let e = EVENT_TYPES;
    [e[0], e[1], e[2], e[3], "error"]
};

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
pub(super) struct Rule {
    pub(super) on: Source,
    pub(super) regex: Option<Regex>,
    pub(super) when: Option<String>,
    pub(super) codes: Option<Codes>,
    pub(super) event: &'static str,
    pub(super) fields: Vec<(&'static str, Template)>,
    pub(super) buttons: bool,
    pub(super) region: Option<Region>,
    pub(super) box_containing: Option<String>,
}

/// A profile's rules, checked.
#[derive(Debug)]
pub struct Compiled {
    pub(super) rules: Vec<Rule>,
    pub(super) words: Words,
}

impl Compiled {
    /// The event types these rules can report, in the order of [`EVENT_TYPES`].
    /// Rules that report a turn also report an `error` for a session that could not be opened
    /// (`DataRules::exited`).
    pub fn reports(&self) -> Vec<&'static str> {
        let mut reports: Vec<&'static str> = EVENT_TYPES
            .into_iter()
            .filter(|t| self.rules.iter().any(|r| r.event == *t))
            .collect();
        if reports.contains(&"turn") {
            reports.push("error");
        }
        reports
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
    compile_for(spec, has_choose, tty, None)
}

/// [`compile`] for a profile whose `[tui]` screen is `screen` (rows, columns): `on = "screen"`
/// rules need one, and their regions must lie on it.
pub fn compile_for(
    spec: &ObserverSpec,
    has_choose: bool,
    tty: bool,
    screen: Option<(u16, u16)>,
) -> Result<Compiled, String> {
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
            (Some(p), Source::Stdout | Source::Stderr | Source::Terminal | Source::Screen) => Some(
                Regex::new(p).map_err(|e| format!("{at}: `match` is not a valid regex: {e}"))?,
            ),
            (None, Source::Stdout | Source::Stderr | Source::Terminal | Source::Screen) => {
                return Err(format!(
                    "{at}: on = {:?} needs a `match` regex",
                    r.on.describe()
                ));
            }
            (Some(_), _) => {
                return Err(format!(
                    "{at}: `match` is for on = \"stdout\", \"stderr\", \"terminal\" or \"screen\""
                ));
            }
            (None, _) => None,
        };
        if r.on == Source::Screen {
            let Some((rows, cols)) = screen else {
                return Err(format!(
                    "{at}: on = \"screen\" needs a [tui] section (the client's screen)"
                ));
            };
            if let Some(why) = r.region.and_then(|g| g.outside(rows, cols)) {
                return Err(format!("{at}: `region`: {why}"));
            }
            if r.region.is_some() && r.box_containing.is_some() {
                return Err(format!("{at}: give `region` or `box_containing`, not both"));
            }
            if r.box_containing.as_deref().is_some_and(str::is_empty) {
                return Err(format!("{at}: `box_containing` must not be empty"));
            }
        } else if r.region.is_some() || r.box_containing.is_some() {
            return Err(format!(
                "{at}: `region` and `box_containing` are for on = \"screen\""
            ));
        }
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
                    "{at}: unknown key `{key}` (this event's fields: {}; and on, match, when, code, region, box_containing, event)",
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
            region: r.region,
            box_containing: r.box_containing.clone(),
        });
    }
    Ok(Compiled {
        rules,
        words: spec.words.clone(),
    })
}
