//! `session-cwd` — sessions are opened in the directory the user asked for, by absolute path
//! (R8, R32, R31).
//!
//! Requirement: every `session/new`, `session/load` and `session/resume` carries an absolute
//! `cwd`; a `session/new` made for a control-plane `new_session` command uses exactly that
//! command's `cwd`; every `additionalDirectories` entry is absolute, and the field is only
//! non-empty when the agent advertised `sessionCapabilities.additionalDirectories`.
//!
//! Reading: `session/new` requests are paired with `new_session` commands in order (each request
//! with the oldest earlier command not yet used). Paths are compared component-wise (a trailing
//! `/` does not matter). Without a control plane the harness never asked for a directory, so only
//! absoluteness is checked.

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use std::collections::VecDeque;
use std::path::Path;

use serde_json::Value;

use super::{Check, Finding, Problems};
use crate::record::CaseRecord;
use crate::wire_model::{Side, WireModel};
use acp_vocab::control::Command;

pub struct SessionCwd;

const METHODS: [&str; 3] = [
    Method::SessionNew.as_str(),
    Method::SessionLoad.as_str(),
    Method::SessionResume.as_str(),
];

impl Check for SessionCwd {
    fn id(&self) -> &'static str {
        "session-cwd"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R8, R31, R32]
    }

    fn requirement(&self) -> &'static str {
        "Every session is opened with the absolute cwd the user asked for, and absolute additionalDirectories only when the agent supports them."
    }

    fn evaluate_with(&self, _case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        let mut problems = Problems::new();
        let mut commands: VecDeque<(usize, &str)> = VecDeque::new();
        let mut controls = model.controls.iter().peekable();
        let mut any = false;
        for msg in &model.msgs {
            while let Some(c) = controls.next_if(|c| c.index < msg.index) {
                if let Some(Command::NewSession { cwd, .. }) = c.command() {
                    commands.push_back((c.index, cwd.as_str()));
                }
            }
            let Some(method) = msg.method() else { continue };
            if msg.from != Side::Client || !msg.is_request() || !METHODS.contains(&method) {
                continue;
            }
            any = true;
            let params = msg.params();
            let asked = if method == Method::SessionNew.as_str() {
                commands.pop_front()
            } else {
                None
            };
            match params.and_then(|p| p.get("cwd")).and_then(Value::as_str) {
                None => problems.fail(
                    R32,
                    format!("{method} #{} has no string cwd (R32).", msg.index),
                    &[msg.index],
                ),
                Some(cwd) if !Path::new(cwd).is_absolute() => problems.fail(
                    R32,
                    format!(
                        "{method} #{} has cwd \"{cwd}\", which is not an absolute path (R8, R32).",
                        msg.index
                    ),
                    &[msg.index],
                ),
                Some(cwd) => {
                    if let Some((command, want)) = asked {
                        if Path::new(cwd) != Path::new(want) {
                            problems.fail(
                                R32,
                                format!(
                                    "{method} #{} opens the session in \"{cwd}\". Expected \"{want}\", the cwd of the new_session command #{command} (R32).",
                                    msg.index
                                ),
                                &[command, msg.index],
                            );
                        }
                    }
                }
            }
            let extra = params
                .and_then(|p| p.get("additionalDirectories"))
                .and_then(Value::as_array);
            if let Some(dirs) = extra {
                for dir in dirs {
                    match dir.as_str() {
                        Some(d) if Path::new(d).is_absolute() => {}
                        _ => problems.fail(
                            R31,
                            format!(
                                "{method} #{} lists additional directory {dir}, which is not an absolute path (R31).",
                                msg.index
                            ),
                            &[msg.index],
                        ),
                    }
                }
                let advertised = model
                    .agent_init(msg.conn)
                    .and_then(|r| {
                        r.pointer("/agentCapabilities/sessionCapabilities/additionalDirectories")
                    })
                    .is_some_and(|v| !v.is_null());
                if !dirs.is_empty() && !advertised {
                    problems.fail(
                        R31,
                        format!(
                            "{method} #{} sends additionalDirectories although the agent did not advertise sessionCapabilities.additionalDirectories (R31).",
                            msg.index
                        ),
                        &[msg.index],
                    );
                }
            }
        }
        if !any {
            return Finding::not_applicable(
                "client sent no session/new, session/load or session/resume",
            );
        }
        problems.finish("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, WS, assert_grade};
    use serde_json::json;

    fn new_session(c: &Case, asked: &str, params: serde_json::Value) {
        c.cmd(json!({"type":"new_session","seq":1,"session":"s1","cwd":asked}));
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}));
        c.a2c(
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}),
        );
        c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":params}));
    }

    #[test]
    fn asked_cwd_passes_and_trailing_slash_is_equal() {
        let c = Case::new();
        c.handshake();
        assert_eq!(c.grade(&SessionCwd), Finding::pass());
        let c = Case::new();
        new_session(&c, &format!("{WS}/"), json!({"cwd":WS,"mcpServers":[]}));
        assert_eq!(c.grade(&SessionCwd).grade, Grade::Pass);
    }

    #[test]
    fn relative_cwd_fails() {
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":".","mcpServers":[]}}));
        assert_grade(
            &c.grade(&SessionCwd),
            Grade::Fail,
            "cwd \".\", which is not an absolute path",
        );
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s","cwd":"work","mcpServers":[]}}));
        assert_grade(&c.grade(&SessionCwd), Grade::Fail, "session/load #0");
    }

    #[test]
    fn other_cwd_than_asked_fails() {
        let c = Case::new();
        new_session(&c, WS, json!({"cwd":"/home/me","mcpServers":[]}));
        assert_grade(
            &c.grade(&SessionCwd),
            Grade::Fail,
            &format!("opens the session in \"/home/me\". Expected \"{WS}\""),
        );
    }

    #[test]
    fn additional_directories_must_be_absolute_and_advertised() {
        let c = Case::new();
        new_session(
            &c,
            WS,
            json!({"cwd":WS,"mcpServers":[],"additionalDirectories":["lib"]}),
        );
        let f = c.grade(&SessionCwd);
        assert_grade(
            &f,
            Grade::Fail,
            "additional directory \"lib\", which is not an absolute path",
        );
        assert!(f.message.contains("did not advertise"), "{}", f.message);

        let c = Case::new();
        c.cmd(json!({"type":"new_session","seq":1,"session":"s1","cwd":WS}));
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}));
        c.a2c(json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,
            "agentCapabilities":{"sessionCapabilities":{"additionalDirectories":{}}}}}));
        c.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":WS,"mcpServers":[],"additionalDirectories":["/opt/lib"]}}));
        assert_eq!(c.grade(&SessionCwd).grade, Grade::Pass);
    }

    #[test]
    fn no_session_request_is_not_applicable() {
        let c = Case::wire_only();
        c.c2a(json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}));
        assert_grade(
            &c.grade(&SessionCwd),
            Grade::NotApplicable,
            "no session/new",
        );
    }
}
