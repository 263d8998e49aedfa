//! The grades as the reports read them from run.json: by name, with the one table of
//! `acp_vocab::grade` ([`GRADES`]) behind each, so a grade added there shows up in every report,
//! legend and summary at once; a grade the table does not know (a newer harness) is shown under
//! its own name, in neutral colours, and counted as failing.

pub use acp_vocab::grade::{GRADES, GradeInfo, Outcome};

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

    /// True if this grade fails a run (warn only when `strict`; an unknown grade always).
    pub fn is_failing(&self, strict: bool) -> bool {
        self.info.is_failing(strict)
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
    fn unknown_grades_keep_their_name_and_fail() {
        let g = Grade::of("flaky");
        assert!(!g.is_known());
        assert_eq!(g.label(), "flaky");
        assert!(g.is_failing(false));
        assert_eq!(Grade::of("not_applicable").label(), "n/a");
    }
}
