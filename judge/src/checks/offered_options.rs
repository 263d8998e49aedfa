//! `offered-options` — the client answers with, and lets the user pick, exactly the options the
//! agent offered (docs/architecture.md §5.2; R59, R7).
//!
//! Requirement: every `selected` answer's `optionId` is one of the options offered in *that*
//! request ("The user selected one of the provided options"); each request is answered exactly
//! once (twice is `fail`; never, in a run that completed, is `fail`). With the control plane: the
//! card presents exactly the offered set (a dropped, invented or doubled option is `fail`), its
//! labels are distinguishable (two identical or empty labels are `warn`; case counts, and an
//! observed card's warning quotes what the observer saw), and every `choose`
//! command comes back on the wire as `selected` with exactly that `optionId` (anything else, or an
//! adapter `error` for that command, is `fail`) — including a second option of the same kind,
//! `reject_always`, and qwen's option id `cancel` (an option, not the cancelled outcome).
//!
//! Without an adapter, an option the harness chose by typing at the client's prompt (note
//! `user_choose`) must come back as the client's next answer to that request, as a `choose`
//! command must. A card a client profile's observer saw *with* its buttons (an `approval`
//! event in direction `o2h` that has `options`, e.g. acpx's `y/N` prompt) is held to the same
//! "presents exactly the offered set" rule.
//!
//! A request the harness duplicated on purpose (fault `duplicate`) may be answered once or twice.
//! A request whose agent the harness killed before it was answered (note `agent_killed`, a
//! scenario's `fault = "crash"`) is not required to be answered: nobody is left to answer.

use crate::rules::{RuleId, id::*};
use std::collections::{BTreeMap, HashMap};

use super::{Check, Finding, Problems, quoted_list};
use crate::record::{CaseRecord, RunEnd};
use crate::wire_model::note_of;
use crate::wire_model::{ControlMsg, PermissionAnswer, PermissionRequest, WireModel, id_key};
use acp_vocab::control::{Approval, Command, Event};
use acp_vocab::note::Note;

pub struct OfferedOptions;

impl Check for OfferedOptions {
    fn id(&self) -> &'static str {
        "offered-options"
    }

    fn rules(&self) -> &'static [RuleId] {
        &[R59, R7, R191, R195]
    }

    fn requirement(&self) -> &'static str {
        "Every permission request is answered exactly once, with one of the options offered in that request, and the user can see and choose every offered option."
    }

    fn evaluate_with(&self, case: &CaseRecord, model: &WireModel<'_>) -> Finding {
        if model.permissions.is_empty() {
            return Finding::not_applicable("scenario sends no permission request");
        }
        let mut problems = Problems::new();
        // Answers per duplicated request (conn, id): counted together.
        let mut duplicates: HashMap<(u32, String), usize> = HashMap::new();
        for request in &model.permissions {
            if request.fault == Some("duplicate") {
                *duplicates
                    .entry((request.conn, id_key(request.id)))
                    .or_default() += request.answers.len();
            }
        }
        // Adapter `error` events by the seq of the command they answer.
        let mut errors: HashMap<u64, Vec<(usize, &str)>> = HashMap::new();
        for c in &model.controls {
            if let Some(Event::Error {
                seq: Some(seq),
                message,
                ..
            }) = c.event()
            {
                errors.entry(*seq).or_default().push((c.index, message));
            }
        }
        for request in &model.permissions {
            check_answers(case, model, request, &duplicates, &mut problems);
            for &approval in &request.approvals {
                check_presented(model, request, approval, &mut problems);
            }
            if case.control_plane {
                for &choose in &request.chooses {
                    check_choose(case, model, request, choose, &errors, &mut problems);
                }
            }
        }
        if !case.control_plane {
            check_typed_choices(model, &mut problems);
        }
        problems.finish("")
    }
}

fn check_answers(
    case: &CaseRecord,
    model: &WireModel<'_>,
    request: &PermissionRequest<'_>,
    duplicates: &HashMap<(u32, String), usize>,
    problems: &mut Problems,
) {
    for &answer in &request.answers {
        if let PermissionAnswer::Selected(option_id) = model.permission_answer(answer) {
            if !request.offers(option_id) {
                problems.fail(
                    R59,
                    format!(
                        "answer #{answer} selected optionId \"{option_id}\", which request #{} did not offer. Expected one of: {}.",
                        request.index,
                        quoted_list(request.offered_ids())
                    ),
                    &[request.index, answer],
                );
            }
        }
    }
    let duplicated = request.fault == Some("duplicate");
    let answers = if duplicated {
        duplicates
            .get(&(request.conn, id_key(request.id)))
            .copied()
            .unwrap_or(0)
    } else {
        request.answers.len()
    };
    if !duplicated && request.answers.len() > 1 {
        let mut frames = vec![request.index];
        frames.extend(&request.answers);
        let list: Vec<String> = request
            .answers
            .iter()
            .map(|&a| format!("#{a} {}", model.permission_answer(a).describe()))
            .collect();
        problems.fail(
            R7,
            format!(
                "request #{} was answered {} times ({}). Expected exactly one answer.",
                request.index,
                request.answers.len(),
                list.join(", ")
            ),
            &frames,
        );
    }
    // A request its agent died on (note `agent_killed`) can no longer be answered.
    if answers == 0
        && case.end == RunEnd::Completed
        && super::agent_killed_after(model, request.conn, request.index).is_none()
    {
        problems.fail(
            R7,
            format!(
                "request #{} (id {}) was never answered although the run completed. Expected exactly one answer.",
                request.index, request.id
            ),
            &[request.index],
        );
    }
}

fn check_presented(
    model: &WireModel<'_>,
    request: &PermissionRequest<'_>,
    approval: usize,
    problems: &mut Problems,
) {
    // An observer's card without its buttons (`options` absent) presents nothing to compare.
    let Some(Event::Approval(Approval {
        options: Some(options),
        observed,
        ..
    })) = model.control_at(approval).and_then(ControlMsg::event)
    else {
        return;
    };
    let frames = [request.index, approval];
    let offered = request.offered_ids();
    let presented: Vec<&str> = options.iter().map(|o| o.option_id.as_str()).collect();
    let dropped: Vec<&str> = offered
        .iter()
        .copied()
        .filter(|id| !presented.contains(id))
        .collect();
    let invented: Vec<&str> = presented
        .iter()
        .copied()
        .filter(|id| !offered.contains(id))
        .collect();
    if !dropped.is_empty() {
        let described: Vec<String> = dropped
            .iter()
            .map(|id| match request.option(id).and_then(|o| o.kind) {
                Some(kind) => format!("\"{id}\" ({kind})"),
                None => format!("\"{id}\""),
            })
            .collect();
        problems.fail(
            R191,
            format!(
                "approval #{approval} does not present offered option(s) {} of request #{}. Expected buttons: {}; shown: {}.",
                described.join(", "),
                request.index,
                quoted_list(offered.iter().copied()),
                quoted_list(presented.iter().copied())
            ),
            &frames,
        );
    }
    if !invented.is_empty() {
        problems.fail(
            R191,
            format!(
                "approval #{approval} presents option(s) {} that request #{} did not offer. Expected buttons: {}.",
                quoted_list(invented.iter().copied()),
                request.index,
                quoted_list(offered.iter().copied())
            ),
            &frames,
        );
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &presented {
        *counts.entry(id).or_default() += 1;
    }
    // An agent that offers one optionId twice (against R59) gets two buttons for it, not more.
    for (id, n) in counts {
        let offered_n = offered.iter().filter(|o| **o == id).count();
        if n > offered_n.max(1) {
            problems.fail(
                R191,
                format!("approval #{approval} presents option \"{id}\" {n} times. Expected one button per offered option."),
                &frames,
            );
        }
    }
    // Labels must tell the buttons apart, as a person reads them: case counts ("a" and "A" are
    // two keys), and so does the option's own name the client shows next to a key.
    let on_screen = observed
        .as_ref()
        .map(|o| format!(" (on screen, from {}: {:?})", o.from, o.evidence))
        .unwrap_or_default();
    let mut by_label: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for option in options {
        let label = option.label.trim();
        if label.is_empty() {
            problems.warn(
                R195,
                format!(
                    "approval #{approval} shows option \"{}\" with an empty label{on_screen}.",
                    option.option_id
                ),
                &frames,
            );
            continue;
        }
        by_label.entry(label).or_default().push(&option.option_id);
    }
    for (label, ids) in by_label.into_iter().filter(|(_, ids)| ids.len() > 1) {
        problems.warn(
            R195,
            format!(
                "approval #{approval} labels options {} all \"{label}\": the user cannot tell them apart{on_screen}.",
                quoted_list(ids.iter().copied())
            ),
            &frames,
        );
    }
}

/// Without an adapter the harness chooses by typing at the client's prompt (note
/// `user_choose`): the client's next answer to that request must select that option.
fn check_typed_choices(model: &WireModel<'_>, problems: &mut Problems) {
    for &(index, note) in &model.notes {
        let Some(Note::UserChoose {
            request_id,
            option_id,
            input,
        }) = note_of(note)
        else {
            continue;
        };
        let Some(request) = model
            .permissions
            .iter()
            .rev()
            .find(|r| r.index < index && id_key(r.id) == id_key(&request_id))
        else {
            continue;
        };
        let Some(answer) = request.answers.iter().copied().find(|&a| a > index) else {
            continue; // never answered: check_answers says so
        };
        match model.permission_answer(answer) {
            PermissionAnswer::Selected(id) if id == option_id => {}
            other => problems.fail(
                R59,
                format!(
                    "the user chose \"{option_id}\" by typing {input:?} (#{index}) on request #{}, but the client answered {} (#{answer}). Expected {{\"outcome\":\"selected\",\"optionId\":\"{option_id}\"}}.",
                    request.index,
                    other.describe()
                ),
                &[request.index, index, answer],
            ),
        }
    }
}

fn check_choose(
    case: &CaseRecord,
    model: &WireModel<'_>,
    request: &PermissionRequest<'_>,
    choose: usize,
    errors: &HashMap<u64, Vec<(usize, &str)>>,
    problems: &mut Problems,
) {
    let Some(Command::Choose { seq, option_id, .. }) =
        model.control_at(choose).and_then(ControlMsg::command)
    else {
        return;
    };
    let option_id = option_id.as_str();
    // An adapter error in reply to this command.
    {
        let error = errors
            .get(seq)
            .and_then(|list| list.iter().find(|(i, _)| *i > choose))
            .copied();
        if let Some((index, message)) = error {
            problems.fail(
                R191,
                format!(
                    "could not choose offered option \"{option_id}\" of request #{}: the adapter replied with error #{index} \"{message}\".",
                    request.index
                ),
                &[request.index, choose, index],
            );
            return;
        }
    }
    let answer = request
        .answers
        .iter()
        .copied()
        .find(|&a| a > choose)
        .or_else(|| request.answers.last().copied());
    match answer {
        Some(answer) => match model.permission_answer(answer) {
            PermissionAnswer::Selected(id) if id == option_id => {}
            other => problems.fail(
                R191,
                format!(
                    "the user chose \"{option_id}\" (#{choose}) on request #{}, but the client answered {} (#{answer}). Expected {{\"outcome\":\"selected\",\"optionId\":\"{option_id}\"}}.",
                    request.index,
                    other.describe()
                ),
                &[request.index, choose, answer],
            ),
        },
        None if case.end == RunEnd::Completed
            && super::agent_killed_after(model, request.conn, request.index).is_none() =>
        {
            problems.fail(
            R7,
            format!(
                "the user chose \"{option_id}\" (#{choose}) on request #{}, but the client never answered it.",
                request.index
            ),
            &[request.index, choose],
        )
        }
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Grade;
    use crate::checks::testkit::{Case, assert_grade, buttons3, opts3};
    use acp_vocab::note::FaultKind;
    use serde_json::{Value, json};

    /// A request with `opts3`, a card with `buttons`, a choose of `choose`, the answer `answer`.
    fn case(buttons: Value, choose: &str, answer: Option<&str>) -> Case {
        let c = Case::asking_to_run();
        c.approval(json!(0), "c", "command", buttons);
        c.cmd(json!({"type":"choose","seq":3,"requestId":0,"optionId":choose}));
        if let Some(answer) = answer {
            c.select(json!(0), answer);
        }
        c.prompt_result("end_turn");
        c
    }

    #[test]
    fn chosen_option_comes_back_verbatim() {
        for option in ["once", "always", "reject"] {
            let f = case(buttons3(), option, Some(option)).grade(&OfferedOptions);
            assert_eq!(f.grade, Grade::Pass, "{option}: {f:?}");
        }
    }

    #[test]
    fn unoffered_answer_fails() {
        let f = case(buttons3(), "once", Some("allow")).grade(&OfferedOptions);
        assert_grade(
            &f,
            Grade::Fail,
            "selected optionId \"allow\", which request #",
        );
        assert!(f.message.contains("did not offer"));
    }

    #[test]
    fn different_option_than_chosen_fails() {
        // Options collapsed by kind: the client answers the first reject it knows.
        let f = case(buttons3(), "reject", Some("once")).grade(&OfferedOptions);
        assert_grade(&f, Grade::Fail, "the user chose \"reject\"");
    }

    #[test]
    fn cancelled_instead_of_qwen_cancel_option_fails() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        let opts = json!([{"optionId":"proceed_once","kind":"allow_once","name":"Allow"},
                          {"optionId":"cancel","kind":"reject_once","name":"Reject"}]);
        c.permission(json!(0), json!({"toolCallId":"c","kind":"execute"}), opts);
        c.approval(
            json!(0),
            "c",
            "command",
            json!([{"optionId":"proceed_once","label":"Allow"},{"optionId":"cancel","label":"Reject"}]),
        );
        c.cmd(json!({"type":"choose","seq":3,"requestId":0,"optionId":"cancel"}));
        c.cancelled(json!(0));
        assert_grade(&c.grade(&OfferedOptions), Grade::Fail, "answered cancelled");
    }

    #[test]
    fn an_id_offered_twice_may_have_two_buttons_but_not_three() {
        let c = Case::new();
        c.handshake();
        c.prompt();
        let opts = json!([{"optionId":"allow","kind":"allow_once","name":"Allow"},
                          {"optionId":"allow","kind":"allow_always","name":"Allow always"}]);
        c.permission(json!(0), json!({"toolCallId":"c","kind":"execute"}), opts);
        let two = json!([{"optionId":"allow","label":"Allow"},{"optionId":"allow","label":"Allow always"}]);
        c.approval(json!(0), "c", "command", two);
        c.select(json!(0), "allow");
        assert_eq!(c.grade(&OfferedOptions).grade, Grade::Pass);
        let three = json!([{"optionId":"allow","label":"A"},{"optionId":"allow","label":"B"},{"optionId":"allow","label":"C"}]);
        c.approval(json!(0), "c", "command", three);
        assert_grade(
            &c.grade(&OfferedOptions),
            Grade::Fail,
            "presents option \"allow\" 3 times",
        );
    }

    #[test]
    fn dropped_and_invented_buttons_fail() {
        let dropped = json!([{"optionId":"once","label":"Allow once"},{"optionId":"reject","label":"Reject"}]);
        let f = case(dropped, "once", Some("once")).grade(&OfferedOptions);
        assert_grade(
            &f,
            Grade::Fail,
            "does not present offered option(s) \"always\" (allow_always)",
        );
        let invented = json!([{"optionId":"once","label":"Allow once"},{"optionId":"always","label":"Always"},
            {"optionId":"reject","label":"Reject"},{"optionId":"skip","label":"Skip"}]);
        let f = case(invented, "once", Some("once")).grade(&OfferedOptions);
        assert_grade(&f, Grade::Fail, "presents option(s) \"skip\" that request");
    }

    #[test]
    fn identical_labels_warn() {
        let same = json!([{"optionId":"once","label":"Allow"},{"optionId":"always","label":"Allow "},
            {"optionId":"reject","label":"Reject"}]);
        let f = case(same, "once", Some("once")).grade(&OfferedOptions);
        assert_grade(
            &f,
            Grade::Warn,
            "labels options \"once\", \"always\" all \"Allow\"",
        );
    }

    /// Keys `a` and `A` next to the options' names are two labels a person tells apart; an
    /// observed card's warning quotes what the observer saw.
    #[test]
    fn labels_differ_by_case_and_warnings_quote_the_screen() {
        let keys = json!([{"optionId":"once","label":"a"},{"optionId":"always","label":"A"},
            {"optionId":"reject","label":"r"}]);
        let f = case(keys, "once", Some("once")).grade(&OfferedOptions);
        assert_grade(&f, Grade::Pass, "");
        let c = Case::asking_to_run();
        c.ev(json!({"type":"approval","sessionId":crate::checks::testkit::SID,"requestId":0,
            "toolCallId":"c","subject":"command",
            "options":[{"optionId":"once","label":"y"},{"optionId":"always","label":"y"},
                       {"optionId":"reject","label":"n"}],
            "observed":{"by":"tui","from":"screen","evidence":"Run ls? [y] once [y] always [n] no"}}));
        c.select(json!(0), "once");
        let f = c.grade(&OfferedOptions);
        assert_grade(&f, Grade::Warn, "all \"y\"");
        assert!(
            f.message
                .contains("on screen, from screen: \"Run ls? [y] once"),
            "{}",
            f.message
        );
    }

    /// Without an adapter: the option typed at the prompt must be the one answered.
    #[test]
    fn a_typed_choice_must_be_the_answer() {
        for (answer, grade) in [("reject", Grade::Pass), ("once", Grade::Fail)] {
            let c = Case::wire_only();
            c.handshake();
            c.prompt();
            c.permission(
                json!(0),
                json!({"toolCallId":"c","kind":"execute"}),
                opts3(),
            );
            c.note(
                serde_json::from_value(json!({"type":"user_choose","requestId":0,
                    "optionId":"reject","input":"3"}))
                .unwrap(),
            );
            c.select(json!(0), answer);
            let f = c.grade(&OfferedOptions);
            assert_eq!(f.grade, grade, "{answer}: {f:?}");
            if grade == Grade::Fail {
                assert!(f.message.contains("by typing \"3\""), "{}", f.message);
            }
        }
    }

    #[test]
    fn adapter_error_on_choose_fails() {
        let c = Case::asking_to_run();
        c.approval(json!(0), "c", "command", buttons3());
        c.cmd(json!({"type":"choose","seq":3,"requestId":0,"optionId":"always"}));
        c.ev(json!({"type":"error","seq":3,"message":"no button always"}));
        let f = c.grade(&OfferedOptions);
        assert_grade(
            &f,
            Grade::Fail,
            "could not choose offered option \"always\"",
        );
    }

    #[test]
    fn answered_twice_or_never_fails() {
        let c = case(buttons3(), "once", Some("once"));
        c.select(json!(0), "once");
        assert_grade(&c.grade(&OfferedOptions), Grade::Fail, "answered 2 times");

        let mut c = Case::wire_only();
        c.handshake();
        c.prompt();
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        assert_grade(&c.grade(&OfferedOptions), Grade::Fail, "never answered");
        c.end = RunEnd::Timeout {
            after_ms: 1,
            reason: "budget".into(),
        };
        assert_eq!(c.grade(&OfferedOptions).grade, Grade::Pass);
    }

    /// The harness killed the agent while its request waited (a scenario's `fault = "crash"`):
    /// nobody can answer it any more, even after the user's choice; a kill of another
    /// connection's agent excuses nothing.
    #[test]
    fn a_request_whose_agent_was_killed_need_not_be_answered() {
        for (conn, grade) in [(1, Grade::Pass), (2, Grade::Fail)] {
            let c = case(buttons3(), "once", None);
            c.note(acp_vocab::note::Note::AgentKilled {
                conn,
                signal: "SIGKILL".into(),
                step: Some("9".into()),
            });
            assert_eq!(c.grade(&OfferedOptions).grade, grade, "connection {conn}");
        }
    }

    #[test]
    fn duplicated_request_may_be_answered_once() {
        let c = Case::wire_only();
        c.handshake();
        c.prompt();
        c.fault_next(FaultKind::Duplicate, 2);
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        c.permission(json!(0), json!({"toolCallId":"c"}), opts3());
        c.select(json!(0), "once");
        assert_eq!(c.grade(&OfferedOptions).grade, Grade::Pass);
    }

    #[test]
    fn wire_only_checks_answers_only() {
        let c = Case::wire_only();
        c.handshake();
        c.prompt();
        c.permission(json!("p-1"), json!({"toolCallId":"c"}), opts3());
        c.select(json!("p-1"), "reject");
        assert_eq!(c.grade(&OfferedOptions).grade, Grade::Pass);
        let c = Case::wire_only();
        c.handshake();
        assert_grade(
            &c.grade(&OfferedOptions),
            Grade::NotApplicable,
            "no permission request",
        );
    }
}
