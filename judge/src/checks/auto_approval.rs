//! `auto-approval` — what the client decides without its user stays within the policy it
//! declared (docs/architecture.md §5.5; ACP "Requesting Permission": the client decides how to present the
//! request and whether to ask the user; the options' kinds say what an answer grants).
//!
//! Every answer to a `session/request_permission` that the user did not give — no `choose`
//! command for that request before the answer (adapter), no `user_choose` note (wire-only: the
//! harness left the choice to the client), or an adapter that answered before any click — is a
//! decision of the client's own, judged against its declared policy (profile `[policy]`, or the
//! adapter's `hello`; undeclared = approves nothing by itself):
//!
//! * a `selected` option of kind `allow_*` needs every effective kind of the tool call inside the
//!   policy's kinds, or inside the kinds the user granted with `allow_always` earlier in the same
//!   session (a remembered grant). Effective kinds: every specific kind the agent announced for
//!   that `toolCallId` in that session up to the request (`tool_call`, updates, the request's own
//!   `toolCall`); a request's `other` or missing kind never hides an announced one. With no
//!   specific kind at all: `execute` if `rawInput.command` is a string, `edit` for diff content,
//!   else `other`. An execute announced as such and then requested as `read` is both — the
//!   riskier one decides. Outside → `fail`.
//! * under a workspace-scoped policy, every location the tool call names (locations, diff paths,
//!   path-like rawInput values, URLs) must resolve inside the workspace (`..`, symlinks of the
//!   case directory and a sibling sharing the workspace's name as prefix are outside; a URL is
//!   never inside) → else `fail`. A remembered grant is per kind and carries no scope.
//! * an `allow_always` option picked by the client itself needs the policy's `allow_always`
//!   (or a remembered grant for the kinds) → else `fail`.
//! * `cancelled` when nobody cancelled (no user Stop, no `$/cancel_request` for that request, no
//!   shutdown: an adapter's `shutdown` or a full-screen client's quit keys) → `warn`: the outcome says the turn was cancelled. Not when every reject option's
//!   id is also an allow option's: `cancelled` is then the only unambiguous no.
//! * a `reject_*` is always safe.
//! * an id the agent offered for an allow and a reject option alike (ACP: an `optionId` is
//!   unique), answered by the client itself → `warn`: it may have meant the reject, but the agent
//!   may read the grant.

mod fs_reach;
mod reach;

pub(crate) use reach::outside_reason;

use crate::rules::{RuleId, id::*};
use acp_vocab::method::Method;
use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::{Check, Finding, Problems};
use crate::policy::{DecisionPolicy, DeclaredPolicy, PolicySource, Scope};
use crate::record::CaseRecord;
use crate::wire_model::note_of;
use crate::wire_model::{
    ControlMsg, PermissionAnswer, PermissionRequest, WireModel, id_key, is_specific_kind,
};
use acp_vocab::control::{Command, Event};
use acp_vocab::note::Note;

pub struct AutoApproval;

impl Check for AutoApproval {
    fn id(&self) -> &'static str {
        "auto-approval"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R59, R60, R61, R120, R121, R194, R196]
    }

    fn requirement(&self) -> &'static str {
        "Every permission answer the user did not give stays within the client's declared policy: only the declared effective tool kinds, only inside the workspace when so scoped, allow_always only when granted; an fs read or write outside the workspace is served only after an approved request for that path or when the policy allows it anywhere."
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        // The client's own fs decisions (fs_reach.rs) count only outside the workspace.
        let served_outside = fs_reach::served_outside(model, &case.workspace, &case.symlinks);
        if model.permissions.is_empty() && served_outside.is_empty() {
            return Finding::not_applicable("scenario sends no permission request");
        }
        let declared = match declared_policy(model) {
            Ok(declared) => declared,
            Err(message) => {
                return Finding::new(
                    super::Grade::Error,
                    format!("the client's declared policy cannot be read: {message}"),
                    Vec::new(),
                );
            }
        };
        let judge = Judge {
            model,
            policy: declared.as_ref().map(|d| &d.policy),
            declared: declared.as_ref(),
            workspace: case.workspace.clone(),
            symlinks: &case.symlinks,
        };
        let mut problems = Problems::new();
        judge.own_fs(&served_outside, &mut problems);
        let mut grants: Grants = BTreeMap::new();
        for request in &model.permissions {
            if matches!(request.fault, Some("invalid" | "raw")) {
                continue;
            }
            let Some(&answer) = request.answers.first() else {
                continue;
            };
            let decision = Decision::of(model, request, answer);
            if decision.by_user() {
                remember_grant(model, request, &decision, &mut grants);
            } else {
                judge.own_decision(request, &decision, &grants, &mut problems);
            }
        }
        problems.finish("")
    }
}

/// The user's `allow_always` answers per session: (effective kinds, answer frame).
type Grants<'a> = BTreeMap<&'a str, Vec<(Vec<Kind>, usize)>>;

/// One effective tool kind and the frame it comes from.
#[derive(Debug, Clone, PartialEq)]
struct Kind {
    kind: String,
    frame: usize,
    /// How it was found: "announced" or the inference's reason.
    how: &'static str,
}

/// One answer to a request: what it says and who gave it.
struct Decision<'a> {
    index: usize,
    answer: PermissionAnswer<'a>,
    /// The kind of the selected option, if it was offered.
    option_kind: Option<&'a str>,
    /// The option the user clicked for this request before the answer went out; `None`: the
    /// client decided by itself.
    user_choice: Option<&'a str>,
}

impl<'a> Decision<'a> {
    fn of(model: &WireModel<'a>, request: &PermissionRequest<'a>, index: usize) -> Self {
        let answer = model.permission_answer(index);
        let option_kind = match answer {
            PermissionAnswer::Selected(id) => request.option(id).and_then(|o| o.kind),
            _ => None,
        };
        Decision {
            index,
            answer,
            option_kind,
            user_choice: user_choice(model, request, index),
        }
    }

    fn by_user(&self) -> bool {
        self.user_choice.is_some()
    }
}

/// The user answered if the harness clicked for this request before the answer went out: a
/// `choose` command (adapter) or a `user_choose` note (a prompt typed at a wire-only client).
/// Returns the option clicked, the latest one before the answer.
fn user_choice<'a>(
    model: &WireModel<'a>,
    request: &PermissionRequest<'a>,
    answer: usize,
) -> Option<&'a str> {
    let clicked = request
        .chooses
        .iter()
        .filter(|&&c| c < answer)
        .filter_map(
            |&c| match model.control_at(c).and_then(ControlMsg::command) {
                Some(Command::Choose { option_id, .. }) => Some((c, option_id.as_str())),
                _ => None,
            },
        );
    let key = id_key(request.id);
    let typed = model.notes.iter().filter_map(|(index, note)| {
        let ours = *index < answer
            && matches!(note_of(note), Some(Note::UserChoose { request_id, .. }) if id_key(&request_id) == key);
        ours.then(|| {
            (
                *index,
                note.get("optionId").and_then(Value::as_str).unwrap_or(""),
            )
        })
    });
    clicked.chain(typed).max_by_key(|(i, _)| *i).map(|(_, o)| o)
}

fn remember_grant<'a>(
    model: &WireModel<'a>,
    request: &PermissionRequest<'a>,
    decision: &Decision<'a>,
    grants: &mut Grants<'a>,
) {
    // What the user clicked decides the grant (a client that then sent another option id is
    // offered-options' finding, not a grant the user did not give).
    let clicked = decision
        .user_choice
        .and_then(|id| request.option(id))
        .and_then(|o| o.kind);
    if clicked.or(decision.option_kind) != Some("allow_always") {
        return;
    }
    let Some(session) = request.session_id else {
        return;
    };
    grants
        .entry(session)
        .or_default()
        .push((effective_kinds(model, request), decision.index));
}

/// Every effective kind of the request's tool call (module doc).
fn effective_kinds(model: &WireModel<'_>, request: &PermissionRequest<'_>) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = Vec::new();
    if let (Some(session), Some(tool_call_id)) = (request.session_id, request.tool_call_id) {
        for &frame in model.tool_frames(session, tool_call_id) {
            if frame > request.index {
                break;
            }
            let kind = model.tool_fields(frame).and_then(|f| f.kind);
            if let Some(kind) = kind.filter(|k| is_specific_kind(k)) {
                if !kinds.iter().any(|k| k.kind == kind) {
                    kinds.push(Kind {
                        kind: kind.to_owned(),
                        frame,
                        how: "announced",
                    });
                }
            }
        }
    }
    if kinds.is_empty() {
        let effective = &request.effective;
        let frame = effective.last_frame.unwrap_or(request.index);
        let (kind, how) = if effective.has_command() {
            (
                "execute",
                "no specific kind, and rawInput.command is a string",
            )
        } else if effective.has_diff() {
            ("edit", "no specific kind, and it has diff content")
        } else {
            ("other", "no specific kind")
        };
        kinds.push(Kind {
            kind: kind.to_owned(),
            frame,
            how,
        });
    }
    kinds
}

/// Where the request's tool call reaches: every location named by its frames up to the request.
fn locations(model: &WireModel<'_>, request: &PermissionRequest<'_>) -> Vec<(String, usize)> {
    let mut out: Vec<(String, usize)> = Vec::new();
    let mut add = |fields: &Value, frame: usize| {
        for location in reach::locations_of(fields) {
            if !out.iter().any(|(l, _)| *l == location) {
                out.push((location, frame));
            }
        }
    };
    if let (Some(session), Some(tool_call_id)) = (request.session_id, request.tool_call_id) {
        for &frame in model.tool_frames(session, tool_call_id) {
            if frame > request.index {
                break;
            }
            if let Some(fields) = model.tool_fields(frame) {
                add(&fields.tree(), frame);
            }
        }
    } else if let Some(fields) = request.tool_call {
        add(fields, request.index);
    }
    out
}

struct Judge<'m, 'a> {
    model: &'m WireModel<'a>,
    policy: Option<&'m DecisionPolicy>,
    /// The policy as declared, for the messages' words only.
    declared: Option<&'m DeclaredPolicy>,
    workspace: PathBuf,
    symlinks: &'m BTreeMap<PathBuf, PathBuf>,
}

impl Judge<'_, '_> {
    /// The declared policy in words, written only into a message: most answers break nothing,
    /// and the in-process fuzz target grades every turn.
    fn policy_words(&self) -> String {
        self.declared.map_or_else(
            || "no policy declared (the client approves nothing by itself)".to_owned(),
            DeclaredPolicy::describe,
        )
    }

    fn own_decision(
        &self,
        request: &PermissionRequest<'_>,
        decision: &Decision<'_>,
        grants: &Grants<'_>,
        problems: &mut Problems,
    ) {
        match decision.answer {
            // Rejects are always safe; an option that was not offered is offered-options'.
            PermissionAnswer::Selected(option_id) => {
                if request.id_allows_and_rejects(option_id) {
                    self.own_ambiguous(request, decision, option_id, problems)
                } else if let Some(kind @ ("allow_once" | "allow_always")) = decision.option_kind {
                    self.own_allow(request, decision, option_id, kind, grants, problems)
                }
            }
            PermissionAnswer::Cancelled => self.own_cancel(request, decision, problems),
            PermissionAnswer::Error | PermissionAnswer::Malformed => {}
        }
    }

    fn own_allow(
        &self,
        request: &PermissionRequest<'_>,
        decision: &Decision<'_>,
        option_id: &str,
        option_kind: &str,
        grants: &Grants<'_>,
        problems: &mut Problems,
    ) {
        let kinds = effective_kinds(self.model, request);
        let granted: Vec<&(Vec<Kind>, usize)> = request
            .session_id
            .and_then(|s| grants.get(s))
            .map(|g| g.iter().collect())
            .unwrap_or_default();
        let is_granted = |kind: &str| {
            granted
                .iter()
                .any(|(kinds, _)| kinds.iter().any(|k| k.kind == kind))
        };
        let by_policy = |kind: &str| self.policy.is_some_and(|p| p.approves_kind(kind));
        let head = format!(
            "permission request #{} (toolCallId {}) was approved by the client itself: it answered {} ({option_kind}) at #{} without a click from the user",
            request.index,
            request.tool_call_id.unwrap_or("(none)"),
            decision.answer.describe(),
            decision.index,
        );
        let mut frames = vec![request.index, decision.index];
        let outside_kinds: Vec<&Kind> = kinds
            .iter()
            .filter(|k| !by_policy(&k.kind) && !is_granted(&k.kind))
            .collect();
        if !outside_kinds.is_empty() {
            frames.extend(outside_kinds.iter().map(|k| k.frame));
            let which: Vec<String> = outside_kinds
                .iter()
                .map(|k| format!("{} ({} at #{})", k.kind, k.how, k.frame))
                .collect();
            problems.fail(
                R194,
                format!(
                    "{head}, but its effective kind {} is outside what it may approve by itself.{} Policy: {}.",
                    which.join(" and "),
                    self.grants_words(&granted),
                    self.policy_words()
                ),
                &frames,
            );
            return;
        }
        // The kinds are covered; the policy's scope applies to what only the policy covers.
        let scoped = self.policy.is_some_and(|p| p.scope == Scope::Workspace)
            && kinds.iter().any(|k| !is_granted(&k.kind));
        if scoped {
            for (location, frame) in locations(self.model, request) {
                if let Some(why) = reach::outside_reason(&location, &self.workspace, self.symlinks)
                {
                    frames.push(frame);
                    problems.fail(
                        R61,
                        format!(
                            "{head}, but the tool call reaches {why} (named at #{frame}), and the policy approves only inside the workspace. Policy: {}.",
                            self.policy_words()
                        ),
                        &frames,
                    );
                    return;
                }
            }
        }
        let always_allowed = self.policy.is_some_and(|p| p.allow_always)
            || kinds.iter().all(|k| is_granted(&k.kind));
        if option_kind == "allow_always" && !always_allowed {
            problems.fail(
                R194,
                format!(
                    "{head}, and the option it picked, \"{option_id}\", is allow_always: a lasting grant the user never gave, and the policy does not let the client grant it by itself. Policy: {}.",
                    self.policy_words()
                ),
                &frames,
            );
        }
    }

    /// The client answered by itself with an id the agent offered for an allow and a reject
    /// option alike. It may have meant the reject (acpx 0.19 answers the first `reject_*`
    /// option's id when it will not ask), so it is not blamed for approving; but the agent may
    /// read the answer as the allow, a grant nobody gave, and the client had a safe answer: a
    /// reject of an id of its own, or `cancelled` when there is none ([`offers_reject`]).
    fn own_ambiguous(
        &self,
        request: &PermissionRequest<'_>,
        decision: &Decision<'_>,
        option_id: &str,
        problems: &mut Problems,
    ) {
        let readings: Vec<String> = request
            .options_with(option_id)
            .map(|o| {
                let name = serde_json::Value::from(o.name.unwrap_or_default());
                format!("{} {name}", o.kind.unwrap_or("(no kind)"))
            })
            .collect();
        problems.warn(
            R196,
            format!(
                "permission request #{} (toolCallId {}) offers the optionId \"{option_id}\" for {} options ({}), and the client answered \"{option_id}\" by itself at #{}: the agent may read it as any of them, an approval included. Expected: option ids are unique, so a client that will not approve answers with a reject option whose id no allow option shares, or cancelled when there is none. Policy: {}.",
                request.index,
                request.tool_call_id.unwrap_or("(none)"),
                readings.len(),
                readings.join(", "),
                decision.index,
                self.policy_words()
            ),
            &[request.index, decision.index],
        );
    }

    fn grants_words(&self, granted: &[&(Vec<Kind>, usize)]) -> String {
        if granted.is_empty() {
            return String::new();
        }
        let list: Vec<String> = granted
            .iter()
            .map(|(kinds, at)| {
                let kinds: Vec<&str> = kinds.iter().map(|k| k.kind.as_str()).collect();
                format!("{} (the user's allow_always at #{at})", kinds.join(", "))
            })
            .collect();
        format!(
            " The user's remembered grants in this session cover only {}.",
            list.join("; ")
        )
    }

    fn own_cancel(
        &self,
        request: &PermissionRequest<'_>,
        decision: &Decision<'_>,
        problems: &mut Problems,
    ) {
        if cancel_happened(self.model, request, decision.index) || !offers_reject(request) {
            return;
        }
        problems.warn(
            R196,
            format!(
                "permission request #{} was answered cancelled at #{} although nobody cancelled (no Stop, no $/cancel_request for it): the cancelled outcome tells the agent the prompt turn was cancelled. Expected: an option of the request, or a reject when the client will not ask. Policy: {}.",
                request.index, decision.index, self.policy_words()
            ),
            &[request.index, decision.index],
        );
    }
}

/// Whether the request offers a reject option that says only no: one whose id no allow option
/// shares. Without one, a client that will not approve has no way to say no but the `cancelled`
/// outcome (the protocol's outcomes are an offered option or `cancelled`): acpx 0.19 does
/// exactly that under its escalate policy, and is right to.
fn offers_reject(request: &PermissionRequest<'_>) -> bool {
    request
        .options
        .iter()
        .any(|o| o.is_reject() && !request.id_allows_and_rejects(o.option_id))
}

/// A user Stop, the agent's `$/cancel_request` for the request, or a shutdown, before the
/// answer. A Stop in another session counts too: a cancel that leaks across sessions is
/// `session-isolation`'s finding, not a decision of the client's own.
fn cancel_happened(model: &WireModel<'_>, request: &PermissionRequest<'_>, answer: usize) -> bool {
    let stopped = model.user_cancels().iter().any(|c| c.index < answer);
    let withdrawn = model
        .msgs_from(request.index)
        .iter()
        .take_while(|m| m.index < answer)
        .any(|m| {
            m.is_notification_for(Method::CancelRequest)
                && m.params()
                    .and_then(|p| p.get("requestId"))
                    .is_some_and(|id| id_key(id) == id_key(request.id))
        });
    let shutdown = model
        .controls
        .iter()
        .any(|c| c.index < answer && matches!(c.command(), Some(Command::Shutdown { .. })));
    // A full-screen client closed with its quit keys (the `shutdown` of a client without an
    // adapter): a card still open is answered on the way out.
    let quit = model
        .notes
        .iter()
        .any(|(i, note)| *i < answer && matches!(note_of(note), Some(Note::UserQuit { .. })));
    stopped || withdrawn || shutdown || quit
}

/// The policy the client declared: a `declared_policy` note (written by the harness from the
/// client profile), else the `policy` of the adapter's `hello`. `Ok(None)`: undeclared.
pub fn declared_policy(model: &WireModel<'_>) -> Result<Option<DeclaredPolicy>, String> {
    for (_, note) in &model.notes {
        if let Some(Note::DeclaredPolicy(declared)) = note_of(note) {
            return Ok(Some(declared));
        }
    }
    for control in &model.controls {
        let Some(Event::Hello(hello)) = control.event() else {
            continue;
        };
        return match &hello.policy {
            None => Ok(None),
            Some(policy) => DecisionPolicy::from_hello_policy(policy)
                .map(|policy| {
                    Some(DeclaredPolicy {
                        source: PolicySource::Hello,
                        name: None,
                        policy,
                    })
                })
                .map_err(|e| format!("the hello's policy: {e}")),
        };
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
