//! The client's own file system is a decision too (R120, R121): an `fs/read_text_file` or
//! `fs/write_text_file` the client serves for a path outside the workspace is judged like an
//! automatic permission answer.
//!
//! ACP has no permission step on `fs/*`: the agent asks `session/request_permission` first when
//! it wants the user's word, and then sends the fs call. So a served fs call outside the
//! workspace is fine when
//! * an earlier `session/request_permission` of the same session, answered with an `allow_*`
//!   option (by the user, or by the client's policy — that answer is judged on its own), named a
//!   location that covers the path (the same path, or a directory above it, compared after `.`
//!   and `..` are applied); for a write the approved tool call must not be read-only
//!   (`read`, `search`, `fetch`, `think`: a read approval does not let the agent write there); or
//! * the client's declared policy approves that kind by itself anywhere (`read` for a read,
//!   `edit` for a write, with scope `anywhere`).
//!
//! Anything else outside the workspace that the client answered with success is a decision of
//! its own beyond its policy → `fail`. "Outside" is [`super::reach::outside_reason`]: `..`
//! applied, the case directory's symlinks followed, a sibling sharing the workspace's name as a
//! prefix is outside. Inside the workspace nothing is judged here: opening a session in it and
//! advertising `fs.*` is the user's grant (and R65 holds a client to writing there).
//! A refusal (an error response) is always safe.

use crate::rules::id::*;
use acp_vocab::method::Method;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Judge, effective_kinds, locations, reach};
use crate::checks::Problems;
use crate::wire_model::{PermissionAnswer, PermissionRequest, Side, WireModel, WireMsg};
use acp_vocab::policy::Scope;

/// Tool kinds whose approval grants no write.
const READ_ONLY_KINDS: [&str; 4] = ["read", "search", "fetch", "think"];

/// One served fs request outside the workspace, with why it is outside.
pub(super) struct OutsideFs<'m, 'a> {
    msg: &'m WireMsg<'a>,
    write: bool,
    path: &'a str,
    answer: usize,
    why: String,
}

/// Every fs request the client answered with success whose path lies outside the workspace.
pub(super) fn served_outside<'m, 'a>(
    model: &'m WireModel<'a>,
    workspace: &Path,
    symlinks: &BTreeMap<PathBuf, PathBuf>,
) -> Vec<OutsideFs<'m, 'a>> {
    let mut out = Vec::new();
    if workspace.as_os_str().is_empty() {
        return out; // a record without a workspace (not from a run): nothing to resolve against
    }
    for msg in model.msgs.iter().filter(|m| m.from == Side::Agent) {
        let write = match msg.method().and_then(Method::parse) {
            Some(Method::FsWriteTextFile) => true,
            Some(Method::FsReadTextFile) => false,
            _ => continue,
        };
        if !msg.is_request() || msg.fault.is_some() {
            continue;
        }
        let Some(path) = msg
            .params()
            .and_then(|p| p.get("path"))
            .and_then(Value::as_str)
        else {
            continue;
        };
        let Some(&answer) = model.answers_to(msg.index).first() else {
            continue;
        };
        if model.msg(answer).and_then(|r| r.result()).is_none() {
            continue; // refused: always safe
        }
        if let Some(why) = reach::outside_reason(path, workspace, symlinks) {
            out.push(OutsideFs {
                msg,
                write,
                path,
                answer,
                why,
            });
        }
    }
    out
}

impl Judge<'_, '_> {
    /// Judges each served outside fs request (module doc).
    pub(super) fn own_fs(&self, served: &[OutsideFs<'_, '_>], problems: &mut Problems) {
        for fs in served {
            let kind = if fs.write { "edit" } else { "read" };
            let by_policy = self
                .policy
                .is_some_and(|p| p.scope == Scope::Anywhere && p.approves_kind(kind));
            if by_policy || self.approved_request_covers(fs).is_some() {
                continue;
            }
            let method = if fs.write {
                Method::FsWriteTextFile.as_str()
            } else {
                Method::FsReadTextFile.as_str()
            };
            // R120/R121 let a client serve it only as its settings allow: the declared policy.
            problems.fail(
                R194,
                format!(
                    "{method} #{} was served at #{} without the user's word: {}. No approved permission request of the session named that path{}, and the policy does not let the client {} outside the workspace by itself. Expected an error response (or the agent's permission request first). Policy: {}.",
                    fs.msg.index,
                    fs.answer,
                    fs.why,
                    if fs.write { " for a write" } else { "" },
                    if fs.write { "write" } else { "read" },
                    self.policy_words()
                ),
                &[fs.msg.index, fs.answer],
            );
        }
    }

    /// The approved permission request (its index) whose locations cover this fs request.
    fn approved_request_covers(&self, fs: &OutsideFs<'_, '_>) -> Option<usize> {
        let session = fs.msg.params_session_id();
        let target = absolute(fs.path, &self.workspace);
        self.model
            .permissions
            .iter()
            .filter(|r| r.session_id.is_some() && r.session_id == session)
            .filter(|r| self.approved_before(r, fs.msg.index))
            .filter(|r| {
                !fs.write
                    || effective_kinds(self.model, r)
                        .iter()
                        .any(|k| !READ_ONLY_KINDS.contains(&k.kind.as_str()))
            })
            .find(|r| {
                locations(self.model, r).iter().any(|(location, _)| {
                    !location.starts_with("http://")
                        && !location.starts_with("https://")
                        && target.starts_with(absolute(location, &self.workspace))
                })
            })
            .map(|r| r.index)
    }

    /// The request's first answer came before `at` and selected an offered `allow_*` option.
    fn approved_before(&self, request: &PermissionRequest<'_>, at: usize) -> bool {
        let Some(&answer) = request.answers.first() else {
            return false;
        };
        if answer > at {
            return false;
        }
        match self.model.permission_answer(answer) {
            PermissionAnswer::Selected(id) => request
                .option(id)
                .and_then(|o| o.kind)
                .is_some_and(|k| k.starts_with("allow_")),
            _ => false,
        }
    }
}

/// `path` made absolute against the workspace, `.` and `..` applied (lexically: what the user
/// approved is the path as the agent wrote it).
fn absolute(path: &str, workspace: &Path) -> PathBuf {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        workspace.join(path)
    };
    reach::normalise(&joined)
}
