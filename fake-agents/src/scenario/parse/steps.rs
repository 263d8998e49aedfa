//! Steps: their shapes (one kind key, its allowed keys), `expect` and the cases of `await`.

use std::time::Duration;

use acp_vocab::split_work;
use toml::Spanned;

use super::{Ctx, Offered, R, frames_ahead, list_ids};
use crate::scenario::json_text;
use crate::scenario::raw::{BoxedStep, KIND_KEYS, RawOn, RawStep};
use crate::scenario::{
    Expect, Expected, OPTION_KINDS, OnCase, Reply, Step, StepKind, UserStep, When,
};
use crate::template;

impl Ctx<'_> {
    pub(super) fn steps(
        &mut self,
        raws: &[Spanned<BoxedStep>],
        prefix: Option<&str>,
        top: Option<usize>,
    ) -> R<Vec<Step>> {
        let mut out = Vec::with_capacity(raws.len());
        let label = |i: usize| match prefix {
            None => (i + 1).to_string(),
            Some(p) => format!("{p}.{}", i + 1),
        };
        // Only the top level: nested steps are few, and their frames are not compiled ahead.
        let split = if prefix.is_none() {
            frames_ahead::split_point(raws.len())
        } else {
            None
        };
        let Some(mid) = split else {
            for (i, raw) in raws.iter().enumerate() {
                out.push(self.step(raw, label(i), top.unwrap_or(i + 1), None)?);
            }
            self.crash_is_last(raws, &out, prefix.is_some())?;
            return Ok(out);
        };
        // A long scenario: the later steps' frames are compiled on another thread meanwhile
        // (or here, after the walk's part, if no thread can be started).
        let (walked, ahead) = split_work::alongside(
            "scenario-frames",
            || -> R<()> {
                for (i, raw) in raws[..mid].iter().enumerate() {
                    out.push(self.step(raw, label(i), top.unwrap_or(i + 1), None)?);
                }
                Ok(())
            },
            [&raws[mid..]],
            frames_ahead::compile_sends,
        );
        walked?;
        let mut compiled = ahead.into_iter().flatten();
        for (i, raw) in raws.iter().enumerate().skip(mid) {
            let ahead = compiled.next().flatten();
            out.push(self.step(raw, label(i), top.unwrap_or(i + 1), ahead)?);
        }
        self.crash_is_last(raws, &out, prefix.is_some())?;
        Ok(out)
    }

    /// A `fault = "crash"` step ends the agent, so nothing on the wire can follow it: after it
    /// come only `user = "prompt"` steps (the user typing into a session that the dead agent
    /// never opened: the client must not run that prompt as if it had). Inside an `on` case or
    /// `on_timeout` the steps after the branching step would be played, so it is refused there.
    fn crash_is_last(&self, raws: &[Spanned<BoxedStep>], steps: &[Step], nested: bool) -> R<()> {
        let Some(crash) = steps
            .iter()
            .position(|s| matches!(s.kind, StepKind::Crash(_)))
        else {
            return Ok(());
        };
        if nested {
            return Err(self.err(
                raws[crash].span().start,
                "fault = \"crash\" cannot be inside an `on` case or `on_timeout`: the steps after the branching step would still be played on a dead agent",
            ));
        }
        let after = steps[crash + 1..]
            .iter()
            .position(|s| !matches!(s.kind, StepKind::User(UserStep::Prompt { .. })));
        if let Some(i) = after {
            return Err(self.err(
                raws[crash + 1 + i].span().start,
                "only `user = \"prompt\"` steps can follow fault = \"crash\" (the agent is dead after it; nothing more can be played on the wire)",
            ));
        }
        Ok(())
    }

    /// One step; `compiled` is its `send` frame if it was compiled ahead ([`frames_ahead`]).
    pub(super) fn step(
        &mut self,
        raw: &Spanned<BoxedStep>,
        label: String,
        top: usize,
        compiled: Option<frames_ahead::Compiled>,
    ) -> R<Step> {
        let r = raw.get_ref();
        let start = raw.span().start;
        let line = self.src.text.line(start);
        let present: Vec<(&str, usize)> = r
            .present()
            .into_iter()
            .map(|(k, at)| (k, if at == 0 { start } else { at }))
            .collect();
        // The kind keys present: only the first two matter but for the error's list.
        let kinds = || present.iter().filter(|(k, _)| KIND_KEYS.contains(k));
        let mut first_two = kinds();
        let kind = match (first_two.next(), first_two.next()) {
            (None, _) => {
                return Err(self.err(
                    start,
                    format!("a step needs exactly one of {}", KIND_KEYS.join(", ")),
                ));
            }
            (Some((k, _)), None) => *k,
            (Some(_), Some((_, second))) => {
                let names: Vec<&str> = kinds().map(|(k, _)| *k).collect();
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
                let compiled = compiled
                    .unwrap_or_else(|| json_text::compile(s.get_ref()))
                    .map_err(|e| self.src.json_error(s, "`send`", &e))?;
                match compiled.uses {
                    Some(uses) => self
                        .src
                        .check_var_uses(s, uses, |u| self.json_var_rule(u, true))?,
                    // Kept as written: its tree has the uses.
                    None => {
                        self.json(s, "`send`", true)?;
                    }
                }
                if !compiled.is_object {
                    return Err(self.err(
                        s.span().start,
                        "a `send` frame must be a JSON object (a whole JSON-RPC message); use `fault` for anything else",
                    ));
                }
                let alias = match &r.as_ {
                    None => None,
                    Some(a) => {
                        // A request: few in a scenario, read as a tree.
                        let frame = self.src.json(s, "`send`")?;
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
                StepKind::Send {
                    frame: compiled.frame,
                    alias,
                }
            }
            "await" => {
                let alias = r.await_.as_ref().expect("present");
                let options = self.request(alias, "await")?;
                // Bound values are known from here on, including in this step's cases.
                let bind = self.pointer_vars(r.bind.as_deref())?;
                for (name, _) in &bind {
                    self.learn(name);
                }
                let mut cases = Vec::new();
                for (k, on) in r.on.iter().flatten().enumerate() {
                    cases.push(self.on_case(on, &options, &format!("{label}.{}", k + 1), top)?);
                }
                StepKind::Await {
                    alias: alias.get_ref().clone(),
                    bind,
                    cases,
                    go_on: match &r.go_on {
                        Some(v) => {
                            crate::de::expect_true(self.src, v, "go_on")?;
                            true
                        }
                        None => false,
                    },
                }
            }
            "delay_ms" => StepKind::Delay(Duration::from_millis(
                *r.delay_ms.as_ref().expect("present").get_ref(),
            )),
            "fault" if r.fault.as_deref().is_some_and(|f| f.get_ref() == "crash") => {
                StepKind::Crash(self.crash(r)?)
            }
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

    pub(super) fn expect(&mut self, r: &RawStep, label: &str, top: usize) -> R<StepKind> {
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
        let capture = self.pointer_vars(r.capture.as_deref())?;
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
        Ok(StepKind::Expect(Box::new(Expect {
            what,
            alias,
            pattern,
            capture,
            reply,
            on_timeout,
        })))
    }

    /// `capture` / `bind`: variable names and the JSON pointers that fill them.
    fn pointer_vars(
        &mut self,
        map: Option<&Spanned<crate::de::Ordered<crate::scenario::raw::S>>>,
    ) -> R<Vec<(String, String)>> {
        let mut out = Vec::new();
        for (name, pointer) in map.iter().flat_map(|c| c.get_ref().0.iter()) {
            if !template::is_valid_name(name) || name.contains('.') {
                return Err(self.err(
                    pointer.span().start,
                    format!("invalid variable name `{name}` (letters, digits, `_`, `-`)"),
                ));
            }
            if name == "id" || crate::profile::HARNESS_PATH_VARS.contains(&name.as_str()) {
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
            out.push((name.clone(), p.clone()));
        }
        Ok(out)
    }

    pub(super) fn on_case(
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
        let end = match &o.end {
            Some(v) => {
                crate::de::expect_true(self.src, v, "end")?;
                true
            }
            None => false,
        };
        Ok(OnCase {
            line: self.src.text.line(start),
            when,
            then,
            end,
        })
    }
}

/// Keys each step kind accepts besides its kind key.
pub(super) fn allowed_keys(kind: &str) -> &'static [&'static str] {
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
        "await" => &["on", "bind", "go_on", "timeout_ms"],
        "fault" => &["frame", "at", "line", "signal", "timeout_ms"],
        "user" => &[
            "session",
            "cwd",
            "text",
            "request",
            "kind",
            "option",
            "each",
            "pending",
            "session_id",
            "mode",
            "config",
            "value",
            "timeout_ms",
        ],
        _ => &[],
    }
}
