//! Failures grouped by cause: what to fix, not how many trials broke.
//!
//! A client with one bug fails many trials: the same `cwd: "."` in every `session/new` fails
//! `session-cwd` in a hundred cases, and a client that dies fails every check of the case it died
//! in. People read causes, so the terminal summary, the report and summary.md lead with them:
//!
//! * a case that did not finish (crash, timeout, harness or adapter error) is **one** entry, not
//!   one per check: its trials without a verdict (`crash`, `timeout`, `error`) are that entry;
//!   findings that checks still made in it (`fail`, `warn`) are grouped like any other;
//! * failures of one check whose first lines differ only in frame numbers, ids, numbers and
//!   paths are one group;
//! * a crash's key includes its stderr signature (the last non-empty stderr line, shaped the same
//!   way), so two different crashes stay apart;
//! * a client that died after the user pressed Stop (a cancel signal that kills it) is the
//!   `cancel-stop` finding of that case: the case's dead trials join that cause instead of
//!   making one of their own.
//!
//! Groups are ordered: the security check (`auto-approval`) first, then by the number of cases,
//! then by name. JUnit keeps one test case per trial; it names the group in the message.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::grade::{Grade, KnownGrade};
use crate::message::headline;
use crate::run::{CaseJson, EndKind, TrialJson};
use crate::words::counted;

/// The check whose failures are security findings (a client approved something by itself).
pub const SECURITY_CHECK: &str = "auto-approval";

/// The check that judges what a client does on Stop.
const CANCEL_CHECK: &str = "cancel-stop";

/// One cause: the failures that share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// The check, or `None` for a case that did not finish.
    pub check: Option<String>,
    /// The grade its trials have (`fail`, `warn`, `crash`, `timeout`, `error`).
    pub grade: Grade,
    /// The rule the check's finding breaks (`R32`), when it names one.
    pub rule: Option<String>,
    /// The first case's headline, verbatim (the others differ only in numbers, ids, paths).
    pub example: String,
    /// The cases, in report order, without repeats.
    pub cases: Vec<String>,
    /// The trials it covers (a case that did not finish counts all its verdict-less trials).
    pub trials: usize,
    /// The first trial (`<case>::<check>`): where the report links to.
    pub first_trial: String,
    /// Every trial it covers, by name.
    pub members: Vec<String>,
}

impl Cause {
    /// True for the security check's findings.
    pub fn is_security(&self) -> bool {
        self.check.as_deref() == Some(SECURITY_CHECK)
    }

    /// `107 cases: session/new cwd is "." (session-cwd, R32)`, one line.
    pub fn line(&self) -> String {
        let n = self.cases.len();
        let what = match (&self.check, &self.rule) {
            (Some(check), Some(rule)) => format!("{check} {}, {rule}", self.grade),
            (Some(check), None) => format!("{check} {}", self.grade),
            (None, _) => format!("the case did not finish: {}", self.grade),
        };
        format!("{}: {} ({what})", counted(n, "case"), self.example)
    }
}

/// The causes of every failing trial of `cases` (grades that need attention), grouped.
pub fn group<C: std::borrow::Borrow<CaseJson>>(cases: impl IntoIterator<Item = C>) -> Vec<Cause> {
    let mut grouper = Grouper::default();
    for case in cases {
        grouper.add(case.borrow());
    }
    grouper.finish()
}

type Key = (Option<String>, String, String);

/// [`group`] one case at a time, so a report can feed it cases as it reads them from disk:
/// what it keeps grows with the failing trials, not with the cases.
#[derive(Debug, Default)]
pub struct Grouper {
    groups: BTreeMap<Key, Cause>,
    order: Vec<Key>,
}

impl Grouper {
    fn add_trial(&mut self, key: Key, case: &str, trial: &str, make: &dyn Fn() -> Cause) {
        let cause = self.groups.entry(key.clone()).or_insert_with(|| {
            self.order.push(key);
            make()
        });
        cause.trials += 1;
        cause.members.push(trial.to_owned());
        if cause.cases.last().map(String::as_str) != Some(case) {
            cause.cases.push(case.to_owned());
        }
    }

    /// Adds the failing trials of one case (cases in report order).
    pub fn add(&mut self, case: &CaseJson) {
        let unfinished = !matches!(case.end.kind, EndKind::Completed | EndKind::NotApplicable);
        // A client that died after the user pressed Stop (killed by the cancel signal, say)
        // broke cancellation, and `cancel-stop` says how: its dead trials are that cause.
        let died_on_stop = (case.end.kind == EndKind::Crash)
            .then(|| {
                case.trials.iter().find(|t| {
                    t.check == CANCEL_CHECK
                        && matches!(t.grade.known(), Some(KnownGrade::Fail | KnownGrade::Warn))
                })
            })
            .flatten();
        for trial in &case.trials {
            if !trial.grade.needs_attention() {
                continue;
            }
            let verdictless = matches!(
                trial.grade.known(),
                Some(KnownGrade::Crash | KnownGrade::Timeout | KnownGrade::Error)
            );
            if let (true, Some(cancel)) = (verdictless, died_on_stop) {
                let (key, first) = finding_key(cancel);
                self.add_trial(key, &case.id, &trial.name, &|| {
                    finding_cause(cancel, &first)
                });
                continue;
            }
            if unfinished && verdictless {
                let reason = case.end.reason().unwrap_or_default();
                let signature = stderr_signature(&case.stderr_tail);
                let key = (
                    None,
                    trial.grade.name.clone(),
                    format!("{} | {}", shape(reason), shape(signature)),
                );
                let example = end_example(case, signature);
                self.add_trial(key, &case.id, &trial.name, &|| Cause {
                    check: None,
                    grade: trial.grade.clone(),
                    rule: None,
                    example: example.clone(),
                    cases: Vec::new(),
                    trials: 0,
                    first_trial: trial.name.clone(),
                    members: Vec::new(),
                });
                continue;
            }
            let (key, first) = finding_key(trial);
            self.add_trial(key, &case.id, &trial.name, &|| finding_cause(trial, &first));
        }
    }

    /// The groups: the security check's first, then by the number of cases.
    pub fn finish(mut self) -> Vec<Cause> {
        let mut out: Vec<Cause> = self
            .order
            .into_iter()
            .filter_map(|k| self.groups.remove(&k))
            .collect();
        // Stable: equal groups keep the order they were first seen in.
        out.sort_by(|a, b| {
            b.is_security()
                .cmp(&a.is_security())
                .then(b.cases.len().cmp(&a.cases.len()))
        });
        out
    }
}

/// The group key of a check's finding, and its first line (what the cause shows).
fn finding_key(trial: &TrialJson) -> ((Option<String>, String, String), String) {
    // A check with several findings marks each (`- [fail] …`): the marker is the grade, already
    // part of the key.
    let first = headline(&trial.message);
    let first = match first.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((marker, rest)) if Grade::of(marker).needs_attention() => rest.to_owned(),
        _ => first,
    };
    let key = (
        Some(trial.check.clone()),
        trial.grade.name.clone(),
        shape(&first),
    );
    (key, first)
}

/// A new cause for `trial`'s finding, shown as `first`.
fn finding_cause(trial: &TrialJson, first: &str) -> Cause {
    Cause {
        check: Some(trial.check.clone()),
        grade: trial.grade.clone(),
        rule: trial.rule.as_ref().map(|r| r.id.clone()),
        example: first.to_owned(),
        cases: Vec::new(),
        trials: 0,
        first_trial: trial.name.clone(),
        members: Vec::new(),
    }
}

/// When every failing case shares one case-level cause, the client command or profile is the
/// likely culprit, not the scenarios: the sentence that says so, with the first case's stderr.
pub fn single_cause_hint<'a>(
    causes: &[Cause],
    cases: impl IntoIterator<Item = &'a CaseJson>,
) -> Option<String> {
    let cases: Vec<&CaseJson> = cases.into_iter().collect();
    let judged = cases
        .iter()
        .filter(|c| c.end.kind != EndKind::NotApplicable)
        .count();
    hint_for(causes, judged, |id| {
        cases.iter().find(|c| c.id == id).copied()
    })
}

/// [`single_cause_hint`] from the number of judged cases (every case but the not applicable
/// ones) and a way to find the first failing case by id (read only when a hint is due).
pub fn hint_for<C: std::borrow::Borrow<CaseJson>>(
    causes: &[Cause],
    judged: usize,
    find: impl FnOnce(&str) -> Option<C>,
) -> Option<String> {
    let [only] = causes else { return None };
    if only.check.is_some() {
        return None;
    }
    if judged < 2 || only.cases.len() != judged {
        return None;
    }
    let first = find(&only.cases[0])?;
    let stderr = first.borrow().stderr_tail.trim();
    Some(format!(
        "Every case failed the same way: the client command or profile is the likely culprit, not the scenarios. The first case's stderr:\n{}",
        if stderr.is_empty() {
            "(empty)".to_owned()
        } else {
            stderr
                .lines()
                .map(|l| format!("    {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
    ))
}

/// What a case that did not finish says about itself: its end, and its stderr signature.
fn end_example(case: &CaseJson, signature: &str) -> String {
    let end = case.end.describe();
    if signature.is_empty() {
        end
    } else {
        format!("{end} — stderr: {signature}")
    }
}

/// The last non-empty line of a stderr tail: where a crash usually says what it died of.
fn stderr_signature(tail: &str) -> &str {
    tail.lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// The text with what varies between cases of one cause (frame numbers, ids, numbers, paths,
/// scenario files) replaced by placeholders.
pub fn shape(text: &str) -> String {
    static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
        [
            // Absolute paths (case workspaces differ per case).
            (r#"/[^\s"'`,;()\[\]{}]+"#, "<path>"),
            (r"[\w.-]+\.toml(:\d+)?", "<scenario>"),
            (
                r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
                "<id>",
            ),
            // Ids that mix letters and digits (call_9f2c…, toolu_01Hq…, ses_1).
            (r"\b[A-Za-z]+[_-][A-Za-z0-9_-]*\d[A-Za-z0-9_-]*\b", "<id>"),
            (r"\d+(\.\d+)*", "<n>"),
        ]
        .into_iter()
        .map(|(p, to)| (Regex::new(p).expect("a valid pattern"), to))
        .collect()
    });
    let mut out = text.to_owned();
    for (pattern, to) in PATTERNS.iter() {
        out = pattern.replace_all(&out, *to).into_owned();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{CaseEnd, RuleJson, TrialJson};

    fn trial(case: &str, check: &str, grade: KnownGrade, message: &str) -> TrialJson {
        TrialJson {
            name: format!("{case}::{check}"),
            check: check.into(),
            grade: grade.into(),
            rules: vec![32],
            requirement: "r.".into(),
            rule: (grade == KnownGrade::Fail).then(|| RuleJson {
                id: "R32".into(),
                level: "MUST".into(),
                binds: "client".into(),
                requirement: "r.".into(),
                link: "https://agentclientprotocol.com/".into(),
            }),
            message: message.into(),
            frames: vec![],
        }
    }

    fn case(id: &str, end: CaseEnd, stderr: &str, trials: Vec<TrialJson>) -> CaseJson {
        let (agent, version) = ("opencode".to_owned(), "1.18".to_owned());
        CaseJson {
            id: id.into(),
            title: String::new(),
            agent,
            version,
            file: String::new(),
            provenance: vec![],
            description: None,
            requires: vec![],
            profile: None,
            family: None,
            end,
            duration_ms: 0,
            transcript: String::new(),
            frames: 0,
            stderr_tail: stderr.into(),
            repro: String::new(),
            trials,
        }
    }

    fn crash(reason: &str) -> CaseEnd {
        let mut detail = serde_json::Map::new();
        detail.insert("exit_code".into(), 1.into());
        detail.insert("reason".into(), reason.into());
        CaseEnd {
            kind: EndKind::Crash,
            detail,
        }
    }

    #[test]
    fn failures_that_differ_only_in_numbers_ids_and_paths_are_one_cause() {
        let cases: Vec<CaseJson> = (0..3)
            .map(|i| {
                let id = format!("opencode@1.18/s{i}");
                let msg = format!(
                    "session/new #{} has cwd \".\" for session ses_{i}, not /tmp/acp-case-{i}/work\n#4 client → agent {{}}",
                    4 + i
                );
                case(
                    &id,
                    CaseEnd::completed(),
                    "",
                    vec![
                        trial(&id, "session-cwd", KnownGrade::Fail, &msg),
                        trial(&id, "jsonrpc", KnownGrade::Pass, ""),
                    ],
                )
            })
            .collect();
        let causes = group(&cases);
        assert_eq!(causes.len(), 1, "{causes:#?}");
        assert_eq!(causes[0].cases.len(), 3);
        assert_eq!(causes[0].trials, 3);
        assert_eq!(causes[0].first_trial, "opencode@1.18/s0::session-cwd");
        assert_eq!(
            causes[0].line(),
            "3 cases: session/new #4 has cwd \".\" for session ses_0, not /tmp/acp-case-0/work (session-cwd fail, R32)"
        );
    }

    #[test]
    fn a_client_killed_on_stop_is_one_cancel_stop_cause() {
        let killed = |id: &str| {
            case(
                id,
                crash("the client exited before the scenario ended: exit code 130 (…)"),
                "KeyboardInterrupt\n",
                ["jsonrpc", "schema", "turn-end"]
                    .iter()
                    .map(|c| trial(id, c, KnownGrade::Crash, "the client crashed"))
                    .chain([trial(
                        id,
                        "cancel-stop",
                        KnownGrade::Fail,
                        "after the user cancel #10 the client never sent session/cancel",
                    )])
                    .collect(),
            )
        };
        let causes = group(&[killed("a@1/x"), killed("b@2/x")]);
        assert_eq!(causes.len(), 1, "{causes:#?}");
        assert_eq!(causes[0].check.as_deref(), Some("cancel-stop"));
        assert_eq!(causes[0].cases, ["a@1/x", "b@2/x"]);
        assert_eq!(causes[0].trials, 8, "every trial of both cases");
        // A crash without a cancel-stop finding stays a case of its own.
        let mut alone = killed("c@1/x");
        alone.trials.retain(|t| t.check != "cancel-stop");
        let causes = group(&[alone]);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].check, None);
    }

    #[test]
    fn a_crashed_case_is_one_entry_and_different_crashes_stay_apart() {
        let checks = ["subject-kind", "jsonrpc", "schema"];
        let crashed = |id: &str, stderr: &str| {
            case(
                id,
                crash(
                    "the client exited before the scenario ended: exit code 1 (step 7 (a.toml:40): …)",
                ),
                stderr,
                checks
                    .iter()
                    .map(|c| trial(id, c, KnownGrade::Crash, "the client crashed"))
                    .chain([trial(
                        id,
                        "unknown-messages",
                        KnownGrade::Fail,
                        "died of frame #9",
                    )])
                    .collect(),
            )
        };
        let cases = [
            crashed("a@1/x", "error: unknown variant `usage_update`\n"),
            crashed("a@1/y", "error: unknown variant `usage_update`\n"),
            crashed("a@1/z", "thread 'main' panicked at src/main.rs:3:5\n"),
        ];
        let causes = group(&cases);
        let crashes: Vec<&Cause> = causes.iter().filter(|c| c.check.is_none()).collect();
        assert_eq!(crashes.len(), 2, "{causes:#?}");
        assert_eq!(crashes[0].cases, ["a@1/x", "a@1/y"]);
        assert_eq!(crashes[0].trials, 6);
        assert!(
            crashes[0].example.contains("usage_update"),
            "{}",
            crashes[0].example
        );
        // The finding a check still made is grouped as a finding.
        let unknown: Vec<&Cause> = causes
            .iter()
            .filter(|c| c.check.as_deref() == Some("unknown-messages"))
            .collect();
        assert_eq!(unknown.len(), 1);
        assert_eq!(unknown[0].cases.len(), 3);
    }

    #[test]
    fn the_security_check_leads_then_the_largest_groups() {
        let mk = |id: &str, check: &str| {
            case(
                id,
                CaseEnd::completed(),
                "",
                vec![trial(
                    id,
                    check,
                    KnownGrade::Fail,
                    &format!("{check} broke"),
                )],
            )
        };
        let cases = [
            mk("a@1/1", "session-cwd"),
            mk("a@1/2", "session-cwd"),
            mk("a@1/3", "turn-end"),
            mk("a@1/4", SECURITY_CHECK),
        ];
        let causes = group(&cases);
        let order: Vec<&str> = causes.iter().filter_map(|c| c.check.as_deref()).collect();
        assert_eq!(order, [SECURITY_CHECK, "session-cwd", "turn-end"]);
    }

    #[test]
    fn one_cause_in_every_case_points_at_the_client_command() {
        let dead = |id: &str| {
            case(
                id,
                crash("the client exited before the scenario ended: exit code 2"),
                "usage: my-client [--agent CMD]\n",
                vec![trial(
                    id,
                    "jsonrpc",
                    KnownGrade::Crash,
                    "the client crashed",
                )],
            )
        };
        let cases = [dead("a@1/1"), dead("a@1/2")];
        let causes = group(&cases);
        let hint = single_cause_hint(&causes, &cases).expect("a hint");
        assert!(hint.contains("client command or profile"), "{hint}");
        assert!(hint.contains("    usage: my-client"), "{hint}");
        // Not when another case passed.
        let mut mixed = cases.to_vec();
        mixed.push(case("a@1/3", CaseEnd::completed(), "", vec![]));
        assert!(single_cause_hint(&group(&mixed), &mixed).is_none());
    }

    #[test]
    fn a_finding_marked_with_its_grade_groups_with_the_same_finding_unmarked() {
        let cases = [
            case(
                "a@1/1",
                CaseEnd::completed(),
                "",
                vec![trial(
                    "a@1/1",
                    "cancel-stop",
                    KnownGrade::Fail,
                    "- [fail] no session/cancel after #9\n- [fail] other",
                )],
            ),
            case(
                "a@1/2",
                CaseEnd::completed(),
                "",
                vec![trial(
                    "a@1/2",
                    "cancel-stop",
                    KnownGrade::Fail,
                    "no session/cancel after #8",
                )],
            ),
        ];
        let causes = group(&cases);
        assert_eq!(causes.len(), 1, "{causes:#?}");
        assert_eq!(causes[0].example, "no session/cancel after #9");
    }

    #[test]
    fn shape_hides_what_varies_between_cases() {
        assert_eq!(
            shape(
                "request #12 (id 3) for call_9f2c4e7a1b3d in /tmp/acp-case-x/work/a.txt at a.toml:56"
            ),
            "request #<n> (id <n>) for <id> in <path> at <scenario>"
        );
    }
}
