//! The expected-failures baseline (docs/architecture.md §7): lets a client land with known bugs,
//! and fails the run as soon as one of them is fixed, so the list never rots.
//!
//! A baseline is a TOML file of entries keyed by what they cover (format: clients/README.md,
//! "Baselines"):
//!
//! ```toml
//! [expected."subject-kind"]                                          # every trial of a check
//! reason = "takes the kind from the permission request alone"
//! issue = "https://github.com/owner/client/issues/12"                # optional
//!
//! [expected."opencode@1.18/external-directory-write::subject-kind"]  # one trial
//! reason = "…"
//! message = "approval #11 for request #9"                            # optional message prefix
//! ```
//!
//! An id is a check id, a trial name `<case>::<check>`, `<agent>@<version>/<scenario>::<check>`
//! for every option run of an `each` scenario, or `<case>::*` for every check of a case (a case
//! that never finishes grades every check `timeout` or `crash`: one entry says so, and keeps
//! saying so for checks added later). For each trial the most specific entry applies (trial,
//! scenario, case, check):
//!
//! * a failing trial (`fail`, `warn`, `timeout`, `crash`) whose message starts with the entry's
//!   `message` (if it has one; transcript indices like `#12` are not compared) becomes
//!   [`Grade::Expected`]; its message starts with
//!   `expected <grade> (baseline "<id>": <reason>[; <issue>])` and keeps the failure below. A
//!   failure with another message stays failing, and says which entry it did not match;
//! * `error` stays `error` (a harness bug is never a client's known bug);
//! * a passing trial named by a one-trial entry becomes [`Grade::Stale`]; for an entry that
//!   covers several trials, its passing trials become `stale` only if none of them failed. An
//!   entry with `intermittent = true` (a bug that shows in some runs only, a race in the client)
//!   is never stale: its passing trials stay `pass`, with a message that says so.
//!
//! An entry whose id names no check, scenario or trial makes the whole baseline invalid.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use crate::runner::CaseResult;
use acp_judge::checks::{Grade, Trial};

/// One expected failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// Why the client fails this (required: a baseline without reasons is a mute list).
    pub reason: String,
    /// Link to the bug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issue: Option<String>,
    /// The failure message must start with this, or the failure is a different one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The bug shows in some runs only (a race in the client): a passing trial is not stale.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub intermittent: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    expected: BTreeMap<String, Entry>,
}

/// A loaded baseline.
#[derive(Debug, Clone, Default)]
pub struct Baseline {
    pub path: PathBuf,
    pub entries: BTreeMap<String, Entry>,
}

/// How an id names trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Scope {
    /// Exactly one trial.
    Trial,
    /// Every option run of one scenario, one check.
    Scenario,
    /// Every check of one case (or of every option run of a scenario): `<case>::*`.
    Case,
    /// Every trial of one check.
    Check,
}

/// The check part of an id that names every check of a case: `<case>::*`.
const EVERY_CHECK: &str = "*";

/// `<agent>@<version>/<id>[<option>]` → `<agent>@<version>/<id>`.
fn scenario_of(case_id: &str) -> &str {
    match case_id.find('[') {
        Some(i) if case_id.ends_with(']') => &case_id[..i],
        _ => case_id,
    }
}

/// How `id` covers the trial `case_id::check`, if it does.
fn covers(id: &str, case_id: &str, check: &str) -> Option<Scope> {
    if id == check {
        return Some(Scope::Check);
    }
    let (case, id_check) = id.rsplit_once("::")?;
    if id_check == EVERY_CHECK {
        return (case == case_id || case == scenario_of(case_id)).then_some(Scope::Case);
    }
    if id_check != check {
        return None;
    }
    if case == case_id {
        Some(Scope::Trial)
    } else if case == scenario_of(case_id) && case != case_id {
        Some(Scope::Scenario)
    } else {
        None
    }
}

/// Grades a baseline entry can turn into `expected`.
fn expectable(grade: Grade) -> bool {
    matches!(
        grade,
        Grade::Fail | Grade::Warn | Grade::Timeout | Grade::Crash
    )
}

impl Baseline {
    /// Reads a baseline file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read baseline {}", path.display()))?;
        let file: File = toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?;
        for (id, entry) in &file.expected {
            if entry.reason.trim().is_empty() {
                bail!("{}: entry \"{id}\" has an empty reason", path.display());
            }
        }
        Ok(Baseline {
            path: path.to_path_buf(),
            entries: file.expected,
        })
    }

    /// `ACP_HARNESS_BASELINE`, if set (for `cargo test`).
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var("ACP_HARNESS_BASELINE") {
            Ok(p) if !p.trim().is_empty() => Self::load(Path::new(p.trim())).map(Some),
            _ => Ok(None),
        }
    }

    /// Fails if an entry names no check, and no scenario or trial of `case_ids` (every case of
    /// the suite, already loaded).
    pub fn validate_cases(&self, case_ids: &[String]) -> Result<()> {
        self.validate(case_ids, &check_ids())
    }

    /// The entries that cover every trial of a check (`[expected."subject-kind"]`): the only ones
    /// that can cover a case made up on the fly, such as a fuzz turn. Fails if one of them names
    /// no check.
    pub fn check_wide(&self) -> Result<Baseline> {
        let wide = Baseline {
            path: self.path.clone(),
            entries: self
                .entries
                .iter()
                .filter(|(id, _)| !id.contains("::"))
                .map(|(id, e)| (id.clone(), e.clone()))
                .collect(),
        };
        wide.validate(&[], &check_ids())?;
        Ok(wide)
    }

    /// Fails if an entry names no known check, scenario or trial. `cases` are every case id of
    /// the scenarios directory (not just the selected ones), `checks` every check id.
    pub fn validate(&self, cases: &[String], checks: &[&str]) -> Result<()> {
        let scenarios: BTreeSet<&str> = cases.iter().map(|c| scenario_of(c)).collect();
        let unknown: Vec<String> = self
            .entries
            .keys()
            .filter(|id| {
                if checks.contains(&id.as_str()) {
                    return false;
                }
                let Some((case, check)) = id.rsplit_once("::") else {
                    return true;
                };
                !((checks.contains(&check) || check == EVERY_CHECK)
                    && (cases.iter().any(|c| c == case) || scenarios.contains(case)))
            })
            .map(|id| format!("  \"{id}\""))
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        bail!(
            "{}: {} entr{} no known check, scenario or trial (ids are a check id, \
             `<case>::<check>`, `<agent>@<version>/<scenario>::<check>` or `<case>::*`; the checks \
             are {}; `acp-harness list` prints every trial):\n{}",
            self.path.display(),
            unknown.len(),
            if unknown.len() == 1 {
                "y names"
            } else {
                "ies name"
            },
            checks.join(", "),
            unknown.join("\n")
        )
    }

    /// The most specific entry covering a trial.
    fn entry_for(&self, case_id: &str, check: &str) -> Option<(&str, &Entry, Scope)> {
        self.entries
            .iter()
            .filter_map(|(id, e)| covers(id, case_id, check).map(|s| (id.as_str(), e, s)))
            .min_by_key(|(_, _, scope)| *scope)
    }

    /// Applies the baseline to one trial (what `cargo test` can do trial by trial): failures
    /// become `expected`, and a passing trial that a one-trial entry names becomes `stale`.
    /// Entries covering several trials are judged by [`Baseline::apply`].
    pub fn apply_trial(&self, case_id: &str, trial: &mut Trial) {
        let Some((id, entry, scope)) = self.entry_for(case_id, trial.check) else {
            return;
        };
        if expectable(trial.grade) {
            expect(id, entry, trial);
        } else if trial.grade == Grade::Pass && scope == Scope::Trial {
            stale(id, entry, trial);
        }
    }

    /// [`Baseline::apply_trial`] to every trial of one case.
    pub fn apply_case(&self, case_id: &str, trials: &mut [Trial]) {
        trials.iter_mut().for_each(|t| self.apply_trial(case_id, t));
    }

    /// True if an entry names this trial or its check: the baseline may regrade it.
    pub fn covers(&self, case_id: &str, check: &str) -> bool {
        self.entry_for(case_id, check).is_some()
    }

    /// True if an `intermittent = true` entry names this trial: its grade may differ from run
    /// to run (`acp-harness diff --same-grades --intermittent`).
    pub fn intermittent(&self, case_id: &str, check: &str) -> bool {
        self.entry_for(case_id, check)
            .is_some_and(|(_, entry, _)| entry.intermittent)
    }

    /// Applies the baseline to a whole run.
    pub fn apply(&self, results: &mut [CaseResult]) {
        let failed = self.failed_entries(case_trials(results));
        for r in results.iter_mut() {
            for t in &mut r.trials {
                self.regrade(&failed, &r.record.meta.case_id, t);
            }
        }
    }

    /// Applies the baseline to every trial of a run that it covers, each with its case's id
    /// (a trial it does not cover keeps its grade, so a run may hand over only those).
    pub fn apply_to(&self, trials: &mut [(String, Trial)]) {
        let failed = self.failed_entries(trials.iter().map(|(id, t)| (id.as_str(), t)));
        for (case_id, t) in trials.iter_mut() {
            self.regrade(&failed, case_id, t);
        }
    }

    /// The entries covering several trials that saw at least one failure among `trials`: those
    /// are not stale.
    fn failed_entries<'t>(
        &self,
        trials: impl IntoIterator<Item = (&'t str, &'t Trial)>,
    ) -> BTreeSet<&str> {
        let mut failed = BTreeSet::new();
        for (case_id, t) in trials {
            if let Some((id, entry, _)) = self.entry_for(case_id, t.check) {
                if expectable(t.grade) && matches_message(entry, &t.message) {
                    failed.insert(id);
                }
            }
        }
        failed
    }

    /// One trial of a run whose entries in `failed` saw a failure.
    fn regrade(&self, failed: &BTreeSet<&str>, case_id: &str, t: &mut Trial) {
        let Some((id, entry, scope)) = self.entry_for(case_id, t.check) else {
            return;
        };
        if expectable(t.grade) {
            expect(id, entry, t);
        } else if t.grade == Grade::Pass && (scope == Scope::Trial || !failed.contains(id)) {
            stale(id, entry, t);
        }
    }

    /// A baseline listing every trial of `results` that fails the run (under `strict`), keeping
    /// the entries of `self` that still cover a failure (their reasons and links), and giving new
    /// failures a one-trial entry whose reason is the failure's first line.
    pub fn blessed(&self, results: &[CaseResult], strict: bool) -> Baseline {
        self.blessed_from(case_trials(results), strict)
    }

    /// [`Baseline::blessed`] from a run's trials, each with its case's id (trials that do not
    /// fail may be left out).
    pub fn blessed_from<'t>(
        &self,
        trials: impl IntoIterator<Item = (&'t str, &'t Trial)>,
        strict: bool,
    ) -> Baseline {
        let mut entries = BTreeMap::new();
        for (case_id, t) in trials {
            let fails = t.grade.is_failing(strict) && t.grade != Grade::Error;
            if !fails {
                continue;
            }
            match self.entry_for(case_id, t.check) {
                Some((id, entry, _)) if matches_message(entry, &t.message) => {
                    entries.insert(id.to_owned(), entry.clone());
                }
                _ => {
                    // The finding's first line, without the `- [fail] ` of a list.
                    let first = t.message.lines().next().unwrap_or("").trim();
                    let first = first
                        .strip_prefix("- [")
                        .and_then(|rest| rest.split_once("] "))
                        .map_or(first, |(_, line)| line);
                    let reason = acp_judge::acp_schema::truncate_chars(
                        &format!("blessed as {}: {first}", t.grade.as_str()),
                        240,
                    );
                    entries.insert(
                        format!("{case_id}::{}", t.check),
                        Entry {
                            reason,
                            issue: None,
                            message: None,
                            intermittent: false,
                        },
                    );
                }
            }
        }
        Baseline {
            path: self.path.clone(),
            entries,
        }
    }

    /// Writes the baseline as TOML (comments of an earlier file are not kept).
    pub fn write(&self) -> Result<()> {
        let file = File {
            expected: self.entries.clone(),
        };
        let body = toml::to_string_pretty(&file).context("cannot serialize the baseline")?;
        let text = format!(
            "# Expected failures for acp-harness (clients/README.md, \"Baselines\"). Written by\n\
             # `acp-harness run --bless`; edit the reasons and add issue links.\n\n{body}"
        );
        std::fs::write(&self.path, text)
            .with_context(|| format!("cannot write baseline {}", self.path.display()))
    }
}

/// Every check's id.
fn check_ids() -> Vec<&'static str> {
    acp_judge::checks::all_checks()
        .iter()
        .map(|c| c.id())
        .collect()
}

/// Every trial of `results` with its case's id.
fn case_trials(results: &[CaseResult]) -> impl Iterator<Item = (&str, &Trial)> {
    results.iter().flat_map(|r| {
        r.trials
            .iter()
            .map(move |t| (r.record.meta.case_id.as_str(), t))
    })
}

/// True if the entry has no `message`, or the failure starts with it. Transcript indices
/// (`#12`) are not compared: they shift whenever a scenario or the client's timing changes.
/// A trial with several findings lists them as `- [fail] …` lines, the failing one first; the
/// marker is not part of what a baseline quotes.
fn matches_message(entry: &Entry, message: &str) -> bool {
    entry.message.as_deref().is_none_or(|prefix| {
        without_indices(without_finding_marker(message.trim_start()))
            .starts_with(&without_indices(without_finding_marker(prefix.trim())))
    })
}

/// `- [fail] text` → `text`; any other message unchanged.
fn without_finding_marker(message: &str) -> &str {
    message
        .strip_prefix("- [")
        .and_then(|rest| rest.split_once("] "))
        .map_or(message, |(_, text)| text)
}

/// `#` followed by digits → `#`.
fn without_indices(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut after_hash = false;
    for c in text.chars() {
        if after_hash && c.is_ascii_digit() {
            continue;
        }
        after_hash = c == '#';
        out.push(c);
    }
    out
}

/// Turns a failing trial into `expected`, or notes why it is not the expected failure.
fn expect(id: &str, entry: &Entry, trial: &mut Trial) {
    if !matches_message(entry, &trial.message) {
        trial.message = format!(
            "{}\n(baseline \"{id}\" expects a failure starting with {:?}; this is a different one)",
            trial.message,
            entry.message.as_deref().unwrap_or("")
        );
        return;
    }
    let issue = entry
        .issue
        .as_deref()
        .map_or(String::new(), |i| format!("; {i}"));
    trial.message = format!(
        "expected {} (baseline \"{id}\": {}{issue})\n{}",
        trial.grade.as_str(),
        entry.reason.trim(),
        trial.message
    );
    trial.grade = Grade::Expected;
}

/// A passing trial an entry names: `stale`, unless the entry's bug is intermittent (then the
/// pass says that the bug did not show this time).
fn stale(id: &str, entry: &Entry, trial: &mut Trial) {
    if entry.intermittent {
        trial.message = format!(
            "baseline \"{id}\" expects an intermittent failure ({}); it did not show in this run",
            entry.reason.trim()
        );
        return;
    }
    trial.grade = Grade::Stale;
    trial.message = format!(
        "baseline \"{id}\" expects a failure ({}) but this trial passed: the bug looks fixed; remove the entry (or re-run with --bless)",
        entry.reason.trim()
    );
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn baseline(text: &str) -> Baseline {
        let file: File = toml::from_str(text).unwrap();
        Baseline {
            path: PathBuf::from("b.toml"),
            entries: file.expected,
        }
    }

    pub(crate) fn trial(check: &'static str, grade: Grade, message: &str) -> Trial {
        Trial {
            check,
            rules: &[],
            requirement: "",
            grade,
            rule: None,
            message: message.into(),
            frames: Vec::new(),
        }
    }

    const CASES: [&str; 3] = ["a@1/x", "a@1/each[one]", "a@1/each[two]"];

    /// A case made up on the spot (a fuzz turn) is covered by check-wide entries only; a typo
    /// among them is refused, one naming a suite trial is left aside.
    #[test]
    fn check_wide_entries_cover_any_case_and_a_typo_is_refused() {
        let b = baseline(
            r#"
            [expected."subject-kind"]
            reason = "takes the kind from the request"
            [expected."a@1/x::auto-approval"]
            reason = "one trial"
            "#,
        );
        let wide = b.check_wide().expect("valid");
        assert_eq!(wide.entries.keys().collect::<Vec<_>>(), ["subject-kind"]);
        let mut t = trial("subject-kind", Grade::Fail, "shows subject \"read\"");
        wide.apply_trial("fuzz/turn-7", &mut t);
        assert_eq!(t.grade, Grade::Expected, "{}", t.message);
        let mut other = trial("auto-approval", Grade::Fail, "approved");
        b.apply_trial("fuzz/turn-7", &mut other);
        assert_eq!(other.grade, Grade::Fail);

        let typo = baseline("[expected.\"subject_kind\"]\nreason = \"r\"\n");
        let err = typo.check_wide().expect_err("no such check").to_string();
        assert!(err.contains("\"subject_kind\""), "{err}");
    }

    #[test]
    fn ids_are_checks_trials_or_scenarios() {
        let cases: Vec<String> = CASES.iter().map(|c| c.to_string()).collect();
        let checks = ["subject-kind", "fs"];
        let ok = baseline(
            r#"
[expected."fs"]
reason = "r"
[expected."a@1/x::subject-kind"]
reason = "r"
[expected."a@1/each::fs"]
reason = "r"
[expected."a@1/each[two]::fs"]
reason = "r"
"#,
        );
        ok.validate(&cases, &checks).unwrap();
        let bad = baseline(
            r#"
[expected."subject-kinds"]
reason = "r"
[expected."a@1/y::fs"]
reason = "r"
[expected."a@1/x::nope"]
reason = "r"
"#,
        );
        let err = bad.validate(&cases, &checks).unwrap_err().to_string();
        for id in ["subject-kinds", "a@1/y::fs", "a@1/x::nope"] {
            assert!(err.contains(id), "{id} missing from {err}");
        }
        assert!(err.contains("3 entries"), "{err}");
    }

    #[test]
    fn a_failure_becomes_expected_with_its_reason_and_a_pass_becomes_stale() {
        let b = baseline(
            r#"
[expected."a@1/x::fs"]
reason = "writes nothing"
issue = "https://example.org/1"
"#,
        );
        let mut t = trial("fs", Grade::Fail, "file missing");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Expected);
        assert!(
            t.message.starts_with(
                "expected fail (baseline \"a@1/x::fs\": writes nothing; https://example.org/1)\nfile missing"
            ),
            "{}",
            t.message
        );
        let mut t = trial("fs", Grade::Pass, "");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Stale);
        assert!(t.message.contains("writes nothing"));
        let mut t = trial("fs", Grade::Error, "harness bug");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Error);
        let mut t = trial("fs", Grade::NotApplicable, "no fs");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::NotApplicable);
    }

    #[test]
    fn an_intermittent_entry_expects_failures_but_a_pass_is_not_stale() {
        let b = baseline(
            r#"
[expected."a@1/x::session-open"]
reason = "a race: mostly exits 0"
intermittent = true
[expected."session-open"]
reason = "check-wide"
intermittent = true
"#,
        );
        let mut t = trial("session-open", Grade::Fail, "never told the user");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Expected);
        let mut t = trial("session-open", Grade::Pass, "");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Pass);
        assert!(t.message.contains("intermittent failure"), "{}", t.message);
        // A whole run in which the check-wide entry's bug never showed: still not stale.
        let mut trials = vec![("a@1/y".to_owned(), trial("session-open", Grade::Pass, ""))];
        b.apply_to(&mut trials);
        assert_eq!(trials[0].1.grade, Grade::Pass);
        // The key survives --bless.
        let failing = [("a@1/x".to_owned(), trial("session-open", Grade::Fail, "x"))];
        let blessed = b.blessed_from(failing.iter().map(|(c, t)| (c.as_str(), t)), false);
        assert!(blessed.entries["a@1/x::session-open"].intermittent);
    }

    #[test]
    fn a_message_prefix_must_match() {
        let b = baseline(
            r#"
[expected."fs"]
reason = "r"
message = "file missing"
"#,
        );
        let mut t = trial("fs", Grade::Fail, "wrong bytes");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Fail);
        assert!(t.message.contains("different one"), "{}", t.message);
        let mut t = trial("fs", Grade::Fail, "file missing at #3");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Expected);
        // Transcript indices may differ from the run the entry was written from.
        let b = baseline(
            "[expected.\"fs\"]\nreason = \"r\"\nmessage = \"approval #11 for request #9 shows\"\n",
        );
        let mut t = trial("fs", Grade::Fail, "approval #12 for request #9 shows read");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Expected);
        let mut t = trial("fs", Grade::Fail, "approval #12 for request #9 hides read");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Fail);
        // Several findings: the failing one comes first, behind its `- [fail] ` marker.
        let mut t = trial(
            "fs",
            Grade::Fail,
            "- [fail] approval #12 for request #9 shows read\n- [warn] answered cancelled",
        );
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Expected);
        // An entry written with the marker matches a trial with one finding or several.
        let b =
            baseline("[expected.\"fs\"]\nreason = \"r\"\nmessage = \"- [fail] approval #1 for\"\n");
        for message in [
            "approval #3 for request #2 shows read",
            "- [fail] approval #3 for request #2 shows read\n- [fail] approval #5 for",
        ] {
            let mut t = trial("fs", Grade::Fail, message);
            b.apply_trial("a@1/x", &mut t);
            assert_eq!(t.grade, Grade::Expected, "{message}");
        }
    }

    fn result(case_id: &str, trials: Vec<Trial>) -> CaseResult {
        let mut record = acp_judge::checks::testkit::Case::new().record();
        record.meta.case_id = case_id.to_owned();
        CaseResult {
            record,
            trials,
            duration: std::time::Duration::ZERO,
            timing: Default::default(),
        }
    }

    #[test]
    fn an_entry_for_several_trials_is_stale_only_when_none_fails() {
        let b = baseline("[expected.\"fs\"]\nreason = \"r\"\n");
        let mut run = vec![
            result("a@1/x", vec![trial("fs", Grade::Fail, "m")]),
            result("a@1/y", vec![trial("fs", Grade::Pass, "")]),
        ];
        b.apply(&mut run);
        assert_eq!(run[0].trials[0].grade, Grade::Expected);
        assert_eq!(run[1].trials[0].grade, Grade::Pass);
        let mut fixed = vec![
            result("a@1/x", vec![trial("fs", Grade::Pass, "")]),
            result("a@1/y", vec![trial("fs", Grade::NotApplicable, "")]),
        ];
        b.apply(&mut fixed);
        assert_eq!(fixed[0].trials[0].grade, Grade::Stale);
        assert_eq!(fixed[1].trials[0].grade, Grade::NotApplicable);
    }

    /// `<case>::*` covers every check of its case (and of the option runs of its scenario),
    /// after the more specific entries, and is stale only when none of them fails.
    #[test]
    fn a_case_wide_entry_covers_every_check_of_its_case() {
        let b = baseline(
            "[expected.\"a@1/x::*\"]\nreason = \"times out\"\n\
             [expected.\"a@1/x::fs\"]\nreason = \"own\"\n\
             [expected.\"a@1/e::*\"]\nreason = \"each\"\n",
        );
        b.validate(
            &["a@1/x".to_owned(), "a@1/e[allow]".to_owned()],
            &["fs", "jsonrpc"],
        )
        .unwrap();
        let mut run = vec![
            result(
                "a@1/x",
                vec![
                    trial("fs", Grade::Timeout, "t"),
                    trial("jsonrpc", Grade::Timeout, "t"),
                ],
            ),
            result("a@1/e[allow]", vec![trial("jsonrpc", Grade::Crash, "c")]),
            result("a@1/y", vec![trial("jsonrpc", Grade::Timeout, "t")]),
        ];
        b.apply(&mut run);
        assert_eq!(run[0].trials[0].grade, Grade::Expected);
        assert!(
            run[0].trials[0].message.contains("\"a@1/x::fs\""),
            "{}",
            run[0].trials[0].message
        );
        assert_eq!(run[0].trials[1].grade, Grade::Expected);
        assert!(run[0].trials[1].message.contains("\"a@1/x::*\": times out"));
        assert_eq!(run[1].trials[0].grade, Grade::Expected);
        assert_eq!(run[2].trials[0].grade, Grade::Timeout);
        let mut fixed = vec![result("a@1/x", vec![trial("jsonrpc", Grade::Pass, "")])];
        b.apply(&mut fixed);
        assert_eq!(fixed[0].trials[0].grade, Grade::Stale);
        // An unknown case is still refused.
        let bad = baseline("[expected.\"a@1/nope::*\"]\nreason = \"r\"\n");
        assert!(bad.validate(&["a@1/x".to_owned()], &["fs"]).is_err());
    }

    #[test]
    fn bless_keeps_matching_entries_and_adds_new_failures() {
        let b = baseline(
            r#"
[expected."fs"]
reason = "kept"
issue = "https://example.org/2"
[expected."a@1/z::subject-kind"]
reason = "fixed since"
"#,
        );
        let run = vec![
            result(
                "a@1/x",
                vec![
                    trial("fs", Grade::Fail, "file missing"),
                    trial(
                        "subject-kind",
                        Grade::Fail,
                        "- [fail] shows read\n- [warn] x",
                    ),
                    trial("jsonrpc", Grade::Error, "harness bug"),
                ],
            ),
            result("a@1/z", vec![trial("subject-kind", Grade::Pass, "")]),
        ];
        let blessed = b.blessed(&run, false);
        let ids: Vec<&str> = blessed.entries.keys().map(String::as_str).collect();
        assert_eq!(ids, ["a@1/x::subject-kind", "fs"]);
        assert_eq!(
            blessed.entries["fs"].issue.as_deref(),
            Some("https://example.org/2")
        );
        assert_eq!(
            blessed.entries["a@1/x::subject-kind"].reason,
            "blessed as fail: shows read"
        );
        // What bless writes reads back the same.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baseline.toml");
        Baseline {
            path: path.clone(),
            ..blessed.clone()
        }
        .write()
        .unwrap();
        assert_eq!(Baseline::load(&path).unwrap().entries, blessed.entries);
    }

    #[test]
    fn the_most_specific_entry_wins() {
        let b = baseline(
            r#"
[expected."fs"]
reason = "check-wide"
[expected."a@1/each::fs"]
reason = "scenario"
[expected."a@1/each[two]::fs"]
reason = "trial"
"#,
        );
        let reason = |case: &str| {
            let mut t = trial("fs", Grade::Fail, "m");
            b.apply_trial(case, &mut t);
            t.message
        };
        assert!(reason("a@1/each[two]").contains("\"a@1/each[two]::fs\": trial"));
        assert!(reason("a@1/each[one]").contains("\"a@1/each::fs\": scenario"));
        assert!(reason("a@1/x").contains("\"fs\": check-wide"));
        // A check-wide entry does not make a single passing trial stale.
        let mut t = trial("fs", Grade::Pass, "");
        b.apply_trial("a@1/x", &mut t);
        assert_eq!(t.grade, Grade::Pass);
    }
}
