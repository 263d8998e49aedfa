//! `user` steps: each action's keys, and `choose` checked against the options a request offers.

use acp_vocab::control::CommandType;

use super::{Ctx, R, list_ids, list_kinds};
use crate::scenario::raw::RawStep;
use crate::scenario::{Choice, OPTION_KINDS, UserStep};

impl Ctx<'_> {
    pub(super) fn user(&mut self, r: &RawStep, label: &str) -> R<UserStep> {
        let u = r.user.as_ref().expect("present");
        let action = u.get_ref().as_str();
        let allowed: &[&str] = match action {
            "new_session" => &["session", "cwd"],
            "prompt" => &["session", "text"],
            "choose" => &["request", "kind", "option", "each"],
            "cancel" => &["session", "pending"],
            // session lifecycle
            "load_session" | "resume_session" => &["session", "session_id", "cwd"],
            "list_sessions" => &["cwd"],
            "close_session" => &["session"],
            // modes and config options
            "set_mode" => &["session", "mode"],
            "set_config_option" => &["session", "config", "value"],
            other => {
                return Err(self.err(
                    u.span().start,
                    format!(
                        "unknown user action {other:?} (actions: {})",
                        CommandType::ALL.map(CommandType::as_str).join(", ")
                    ),
                ));
            }
        };
        for (key, at) in r.present() {
            if !matches!(key, "user" | "timeout_ms") && !allowed.contains(&key) {
                return Err(self.err(
                    at,
                    format!(
                        "`{key}` does not belong in user = {action:?} (it takes: {})",
                        allowed.join(", ")
                    ),
                ));
            }
        }
        let session = match &r.session {
            Some(s) => self.text(s)?,
            None => "s1".to_owned(),
        };
        let cwd = match &r.cwd {
            Some(c) => Some(self.text(c)?),
            None => None,
        };
        Ok(match action {
            // ----- session lifecycle
            "load_session" | "resume_session" => {
                let Some(id) = &r.session_id else {
                    return Err(self.err(
                        u.span().start,
                        format!("user = {action:?} needs `session_id = \"…\"` (the earlier session's ACP id)"),
                    ));
                };
                let (session_id, cwd) = (self.text(id)?, cwd.unwrap_or_else(|| "${cwd}".into()));
                if action == "load_session" {
                    UserStep::LoadSession {
                        session,
                        session_id,
                        cwd,
                    }
                } else {
                    UserStep::ResumeSession {
                        session,
                        session_id,
                        cwd,
                    }
                }
            }
            "list_sessions" => UserStep::ListSessions { cwd },
            "close_session" => UserStep::CloseSession { session },
            // -----
            "new_session" => UserStep::NewSession {
                session,
                cwd: cwd.unwrap_or_else(|| "${cwd}".to_owned()),
            },
            "prompt" => {
                let Some(text) = &r.text else {
                    return Err(self.err(u.span().start, "user = \"prompt\" needs `text = \"…\"`"));
                };
                UserStep::Prompt {
                    session,
                    text: self.text(text)?,
                }
            }
            "cancel" => {
                let pending = match &r.pending {
                    Some(p) => {
                        self.request(p, "pending")?;
                        Some(p.get_ref().clone())
                    }
                    None => None,
                };
                UserStep::Cancel { session, pending }
            }
            // ---- modes and config options ----
            "set_mode" => {
                let Some(mode) = &r.mode else {
                    return Err(self.err(
                        u.span().start,
                        "user = \"set_mode\" needs `mode = \"<modeId>\"`",
                    ));
                };
                UserStep::SetMode {
                    session,
                    mode: self.text(mode)?,
                }
            }
            "set_config_option" => {
                let (Some(config), Some(value)) = (&r.config, &r.value) else {
                    return Err(self.err(
                        u.span().start,
                        "user = \"set_config_option\" needs `config = \"<configId>\"` and `value = \"<value>\"`",
                    ));
                };
                UserStep::SetConfigOption {
                    session,
                    config: self.text(config)?,
                    value: self.text(value)?,
                }
            }
            // ---- end of modes and config options ----
            _ => {
                let Some(request) = &r.request else {
                    return Err(self.err(
                        u.span().start,
                        "user = \"choose\" needs `request = \"<as name>\"`",
                    ));
                };
                let options = self.request(request, "request")?;
                let choice = match (&r.kind, &r.option, &r.each) {
                    (Some(k), None, None) => {
                        if !OPTION_KINDS.contains(&k.get_ref().as_str()) {
                            return Err(self.err(
                                k.span().start,
                                format!(
                                    "unknown option kind {:?} (kinds: {})",
                                    k.get_ref(),
                                    OPTION_KINDS.join(", ")
                                ),
                            ));
                        }
                        if let Some(options) = &options
                            && !options.iter().any(|(_, kind)| kind == k.get_ref())
                        {
                            return Err(self.err(
                                k.span().start,
                                format!(
                                    "request {:?} offers no option of kind {:?} (it offers: {})",
                                    request.get_ref(),
                                    k.get_ref(),
                                    list_kinds(options)
                                ),
                            ));
                        }
                        Choice::Kind(k.get_ref().clone())
                    }
                    (None, Some(o), None) => {
                        if let Some(options) = &options
                            && !options.iter().any(|(id, _)| id == o.get_ref())
                        {
                            return Err(self.err(
                                o.span().start,
                                format!(
                                    "request {:?} does not offer option {:?} (it offers: {})",
                                    request.get_ref(),
                                    o.get_ref(),
                                    list_ids(options)
                                ),
                            ));
                        }
                        Choice::Option(o.get_ref().clone())
                    }
                    (None, None, Some(e)) => {
                        crate::de::expect_true(self.src, e, "each")?;
                        let at = e.span().start;
                        if let Some((other, _)) = &self.each {
                            return Err(self.err(
                                at,
                                format!("only one `each = true` per scenario (step {other} has one already)"),
                            ));
                        }
                        let ids: Vec<String> = match &options {
                            Some(o) if !o.is_empty() => {
                                o.iter().map(|(id, _)| id.clone()).collect()
                            }
                            _ => {
                                return Err(self.err(
                                    at,
                                    format!(
                                        "`each = true` needs the options of request {:?} to be known before running: an array or \"${{profile.NAME}}\" in params.options",
                                        request.get_ref()
                                    ),
                                ));
                            }
                        };
                        self.each = Some((label.to_owned(), ids));
                        Choice::Each
                    }
                    _ => {
                        return Err(self.err(
                            u.span().start,
                            "user = \"choose\" needs exactly one of `kind`, `option`, `each = true`",
                        ));
                    }
                };
                UserStep::Choose {
                    request: request.get_ref().clone(),
                    choice,
                }
            }
        })
    }
}
