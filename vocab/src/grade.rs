//! The grades of a trial, in one place: their names in run.json, how the terminal and every
//! report show them, how bad each is next to the others, and whether it fails a run. The judge
//! grades with [`Grade`], the harness prints a case's worst grade by [`GradeInfo::rank`], and the
//! reports colour, count and legend by the same table, so a case never reads ERROR on its
//! progress line and FAIL in the report.

use serde::{Deserialize, Serialize};

/// The grade of one trial (docs/architecture.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grade {
    Pass,
    /// A MUST was broken.
    Fail,
    /// A SHOULD was broken (fails under `--strict`).
    Warn,
    /// The check cannot apply (capability not advertised, no control plane); the reason says why.
    NotApplicable,
    /// The case could not be judged: the harness failed, or the client's adapter broke the
    /// control protocol (the message says which).
    Error,
    Timeout,
    Crash,
    /// A failure the baseline lists: shown with the entry's reason, does not fail the run.
    Expected,
    /// A baseline entry whose failure did not happen: fails the run until the entry is removed.
    Stale,
}

/// What a grade means for a CI run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Passes.
    Pass,
    /// Passes the run unless `--strict`.
    Soft,
    /// Does not count either way (not applicable, expected failure).
    Skip,
    /// Fails the run: the client's fault.
    Fail,
    /// Fails the run: not (known to be) the client's fault.
    Error,
}

/// How one grade is named, shown and counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GradeInfo {
    /// The name in run.json.
    pub name: &'static str,
    /// Short label for matrix cells and tables.
    pub label: &'static str,
    /// CSS class suffix (`g-<css>`).
    pub css: &'static str,
    /// One sentence for legends.
    pub meaning: &'static str,
    pub outcome: Outcome,
    /// Higher is worse: the worst grade of a case names its progress line and colours its row.
    /// The client's own faults rank above the harness's: a crash or a broken MUST is what the
    /// person must see first, even where another check of the case could not be judged.
    pub rank: u8,
}

impl GradeInfo {
    /// True if this grade fails a run (warn only when `strict`).
    pub fn is_failing(&self, strict: bool) -> bool {
        match self.outcome {
            Outcome::Pass | Outcome::Skip => false,
            Outcome::Soft => strict,
            Outcome::Fail | Outcome::Error => true,
        }
    }
}

/// Every grade, in display order.
pub const GRADES: [GradeInfo; 9] = [
    GradeInfo {
        name: "pass",
        label: "pass",
        css: "pass",
        meaning: "the client did what the check requires",
        outcome: Outcome::Pass,
        rank: 1,
    },
    GradeInfo {
        name: "fail",
        label: "fail",
        css: "fail",
        meaning: "a MUST of the spec, or one of the harness's invariants, was broken",
        outcome: Outcome::Fail,
        rank: 7,
    },
    GradeInfo {
        name: "warn",
        label: "warn",
        css: "warn",
        meaning: "a SHOULD was broken; fails the run under --strict",
        outcome: Outcome::Soft,
        rank: 3,
    },
    GradeInfo {
        name: "expected",
        label: "expected",
        css: "expected",
        meaning: "a known failure listed in the baseline (with its reason); does not fail the run",
        outcome: Outcome::Skip,
        rank: 2,
    },
    GradeInfo {
        name: "stale",
        label: "stale",
        css: "stale",
        meaning: "a baseline entry that no longer fails: remove it from the baseline",
        outcome: Outcome::Fail,
        rank: 4,
    },
    GradeInfo {
        name: "not_applicable",
        label: "n/a",
        css: "na",
        meaning: "the scenario does not exercise the check, a capability was not advertised, \
                  or the client has no adapter (the reason says which)",
        outcome: Outcome::Skip,
        rank: 0,
    },
    GradeInfo {
        name: "error",
        label: "error",
        css: "error",
        meaning: "the harness or the scenario failed, not the client",
        outcome: Outcome::Error,
        rank: 5,
    },
    GradeInfo {
        name: "timeout",
        label: "timeout",
        css: "timeout",
        meaning: "the run did not finish in time; a run that did not finish cannot pass",
        outcome: Outcome::Fail,
        rank: 6,
    },
    GradeInfo {
        name: "crash",
        label: "crash",
        css: "crash",
        meaning: "the client died before the scenario ended (exit status or signal, stderr tail)",
        outcome: Outcome::Fail,
        rank: 8,
    },
];

impl Grade {
    /// Every grade, in the order the terminal's summary table shows them (the reports show
    /// them in [`GRADES`]' order).
    pub const ALL: [Grade; 9] = [
        Grade::Pass,
        Grade::Fail,
        Grade::Warn,
        Grade::NotApplicable,
        Grade::Error,
        Grade::Timeout,
        Grade::Crash,
        Grade::Expected,
        Grade::Stale,
    ];

    /// The name in run.json (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Pass => "pass",
            Grade::Fail => "fail",
            Grade::Warn => "warn",
            Grade::NotApplicable => "not_applicable",
            Grade::Error => "error",
            Grade::Timeout => "timeout",
            Grade::Crash => "crash",
            Grade::Expected => "expected",
            Grade::Stale => "stale",
        }
    }

    /// Its row of [`GRADES`].
    pub fn info(self) -> &'static GradeInfo {
        GRADES
            .iter()
            .find(|info| info.name == self.as_str())
            .expect("GRADES has a row for every grade")
    }

    /// The grade named `name` in run.json, if this version knows it.
    pub fn from_name(name: &str) -> Option<Grade> {
        Grade::ALL.into_iter().find(|g| g.as_str() == name)
    }

    /// True if this grade fails a run (warn only when `strict`).
    pub fn is_failing(self, strict: bool) -> bool {
        self.info().is_failing(strict)
    }

    /// Higher is worse ([`GradeInfo::rank`]).
    pub fn rank(self) -> u8 {
        self.info().rank
    }

    /// The worst of `grades` by [`rank`](Self::rank); `None` for none.
    pub fn worst(grades: impl IntoIterator<Item = Grade>) -> Option<Grade> {
        grades.into_iter().max_by_key(|g| g.rank())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grade_has_its_own_row_name_and_rank() {
        assert_eq!(Grade::ALL.len(), GRADES.len());
        for g in Grade::ALL {
            assert_eq!(g.info().name, g.as_str());
            // The serde name and the table's name are one.
            let json = serde_json::to_value(g).unwrap();
            assert_eq!(json, g.as_str(), "{g:?}");
            assert_eq!(Grade::from_name(g.as_str()), Some(g));
        }
        let mut names: Vec<_> = GRADES.iter().map(|g| g.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), GRADES.len());
        let mut ranks: Vec<_> = GRADES.iter().map(|g| g.rank).collect();
        ranks.sort();
        ranks.dedup();
        assert_eq!(ranks.len(), GRADES.len());
        assert_eq!(Grade::from_name("flaky"), None);
    }

    #[test]
    fn a_case_with_a_failure_and_an_error_is_shown_failing() {
        assert_eq!(
            Grade::worst([Grade::Pass, Grade::Error, Grade::Fail]),
            Some(Grade::Fail)
        );
        assert_eq!(
            Grade::worst([Grade::Fail, Grade::Crash]),
            Some(Grade::Crash)
        );
        assert_eq!(Grade::worst([]), None);
    }

    #[test]
    fn warn_fails_only_under_strict_and_expected_never() {
        assert!(!Grade::Warn.is_failing(false));
        assert!(Grade::Warn.is_failing(true));
        assert!(!Grade::Expected.is_failing(true));
        assert!(Grade::Stale.is_failing(false));
        assert!(Grade::Error.is_failing(false));
        assert!(!Grade::NotApplicable.is_failing(true));
    }
}
