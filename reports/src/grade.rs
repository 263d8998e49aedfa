//! The grades, in one place: their names in run.json, how reports show them, and whether they
//! fail a run. The harness counts its summary over [`GRADES`], so a grade added here shows up in
//! every report, legend and summary at once; a grade this table does not know (a newer harness)
//! is shown under its own name, in neutral colours, and counted as failing.

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
    /// Higher is worse: the worst grade of a case colours its row.
    pub rank: u8,
}

/// Every grade the reports know, in display order.
pub const GRADES: &[GradeInfo] = &[
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
        meaning: "a MUST of the spec was broken",
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
        meaning: "the harness failed, not the client",
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

/// Shown for a grade name [`GRADES`] does not list.
const UNKNOWN: GradeInfo = GradeInfo {
    name: "unknown",
    label: "unknown",
    css: "unknown",
    meaning: "a grade this report version does not know; counted as failing",
    outcome: Outcome::Error,
    rank: 9,
};

/// A grade as found in a run.json: its name, and what the reports know about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grade {
    pub name: String,
    pub info: GradeInfo,
}

impl Grade {
    pub fn of(name: &str) -> Grade {
        let info = GRADES
            .iter()
            .find(|g| g.name == name)
            .copied()
            .unwrap_or(UNKNOWN);
        Grade {
            name: name.to_owned(),
            info,
        }
    }

    pub fn is_known(&self) -> bool {
        self.info != UNKNOWN
    }

    /// The label: the table's, or the name itself for an unknown grade.
    pub fn label(&self) -> &str {
        if self.is_known() {
            self.info.label
        } else {
            &self.name
        }
    }

    pub fn css(&self) -> &'static str {
        self.info.css
    }

    /// True if this grade fails a run (warn only when `strict`).
    pub fn is_failing(&self, strict: bool) -> bool {
        match self.info.outcome {
            Outcome::Pass | Outcome::Skip => false,
            Outcome::Soft => strict,
            Outcome::Fail | Outcome::Error => true,
        }
    }

    /// True if a person should look at this trial (failing, warn, stale or unknown).
    pub fn needs_attention(&self) -> bool {
        self.is_failing(true)
    }
}

/// Names of every known grade, in display order.
pub fn names() -> impl Iterator<Item = &'static str> {
    GRADES.iter().map(|g| g.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grade_is_named_once_and_ranked_once() {
        let mut names: Vec<_> = names().collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), GRADES.len());
        let mut ranks: Vec<_> = GRADES.iter().map(|g| g.rank).collect();
        ranks.sort();
        ranks.dedup();
        assert_eq!(ranks.len(), GRADES.len());
    }

    #[test]
    fn unknown_grades_keep_their_name_and_fail() {
        let g = Grade::of("flaky");
        assert!(!g.is_known());
        assert_eq!(g.label(), "flaky");
        assert!(g.is_failing(false));
        assert_eq!(Grade::of("not_applicable").label(), "n/a");
    }

    #[test]
    fn warn_fails_only_under_strict_and_expected_never() {
        assert!(!Grade::of("warn").is_failing(false));
        assert!(Grade::of("warn").is_failing(true));
        assert!(!Grade::of("expected").is_failing(true));
        assert!(Grade::of("stale").is_failing(false));
        assert!(!Grade::of("pass").needs_attention());
    }
}
