//! The grades as the reports read them from run.json: by name, with the one table of
//! `acp_vocab::grade` ([`GRADES`]) behind each, so a grade added there shows up in every report,
//! legend and summary at once; a grade the table does not know (a newer harness) is kept, shown
//! under its own name, in neutral colours, and counted as failing.
//!
//! A [`Grade`] is what run.json's `grade` field reads into and writes back (its name, as it
//! was); code asks what it is by comparing it with a [`KnownGrade`], never with a name.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The grades this version knows, as the judge grades them: what a [`Grade`] is compared with.
pub use acp_vocab::grade::Grade as KnownGrade;
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
    /// The grade named `name` (an unknown name is kept).
    pub fn of(name: &str) -> Grade {
        Grade::from(name.to_owned())
    }

    pub fn is_known(&self) -> bool {
        self.info != UNKNOWN
    }

    /// The grade as this version knows it; `None` for a newer harness's grade.
    pub fn known(&self) -> Option<KnownGrade> {
        KnownGrade::from_name(&self.name)
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

impl From<String> for Grade {
    fn from(name: String) -> Grade {
        let info = GRADES
            .iter()
            .find(|g| g.name == name)
            .copied()
            .unwrap_or(UNKNOWN);
        Grade { name, info }
    }
}

impl From<KnownGrade> for Grade {
    fn from(grade: KnownGrade) -> Grade {
        Grade {
            name: grade.as_str().to_owned(),
            info: *grade.info(),
        }
    }
}

/// `trial.grade == KnownGrade::Warn`: false for every known grade when this one is unknown.
impl PartialEq<KnownGrade> for Grade {
    fn eq(&self, other: &KnownGrade) -> bool {
        self.name == other.as_str()
    }
}

/// The name, as run.json has it.
impl fmt::Display for Grade {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// As its name: the bytes run.json had, a grade this version does not know included.
impl Serialize for Grade {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.name)
    }
}

/// Any name: an unknown one is kept (a newer harness's grade), not an error.
impl<'de> Deserialize<'de> for Grade {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Grade, D::Error> {
        String::deserialize(deserializer).map(Grade::from)
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
        assert_eq!(g.known(), None);
        assert!(KnownGrade::ALL.iter().all(|k| g != *k));
    }

    #[test]
    fn a_grade_is_its_name_in_json_known_or_not() {
        for k in KnownGrade::ALL {
            let g: Grade = serde_json::from_value(serde_json::json!(k.as_str())).unwrap();
            assert_eq!(g, Grade::from(k));
            assert_eq!(g, k);
            assert_eq!(g.known(), Some(k));
            assert_eq!(serde_json::to_value(&g).unwrap(), k.as_str());
        }
        let g: Grade = serde_json::from_str(r#""flaky""#).unwrap();
        assert_eq!(g.to_string(), "flaky");
        assert_eq!(serde_json::to_string(&g).unwrap(), r#""flaky""#);
    }
}
