//! Checks: one module per check, each a pure function of a [`CaseRecord`].
//!
//! A check returns a [`Finding`]; [`grade_case`] turns findings into graded trials, applying the
//! rules that do not belong to any single check (an incomplete run cannot pass, a crash is
//! reported as such, a harness error is never blamed on the client).

use serde::{Deserialize, Serialize};

use crate::record::CaseRecord;

/// The grade of one trial (DESIGN §5).
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
    /// The harness failed, not the client.
    Error,
    Timeout,
    Crash,
}

impl Grade {
    pub fn as_str(self) -> &'static str {
        match self {
            Grade::Pass => "pass",
            Grade::Fail => "fail",
            Grade::Warn => "warn",
            Grade::NotApplicable => "not_applicable",
            Grade::Error => "error",
            Grade::Timeout => "timeout",
            Grade::Crash => "crash",
        }
    }
}

/// What a check found: its grade, a message, and the transcript indices that prove it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub grade: Grade,
    /// Empty on pass; otherwise "Expected … / Actual …" in plain sentences.
    pub message: String,
    /// Transcript indices of the offending frames (cited and highlighted in reports).
    pub frames: Vec<usize>,
}

impl Finding {
    pub fn pass() -> Self {
        Finding {
            grade: Grade::Pass,
            message: String::new(),
            frames: Vec::new(),
        }
    }

    pub fn new(grade: Grade, message: impl Into<String>, frames: Vec<usize>) -> Self {
        Finding {
            grade,
            message: message.into(),
            frames,
        }
    }

    pub fn not_applicable(reason: impl Into<String>) -> Self {
        Self::new(Grade::NotApplicable, reason, Vec::new())
    }
}

/// One check. Implementations live in their own module and cite the spec rules they enforce
/// (numbers of `../shared/reference/acp-spec.md` §5) in their doc comment and in [`Check::rules`].
pub trait Check: Send + Sync {
    /// Stable id, the last part of a trial name (`…::subject-kind`).
    fn id(&self) -> &'static str;
    /// Spec rule numbers (acp-spec.md §5) this check enforces.
    fn rules(&self) -> &'static [u16];
    /// One sentence: what the client must do to pass.
    fn requirement(&self) -> &'static str;
    /// True if the check needs the control plane (it then grades `not_applicable` without one).
    fn needs_control_plane(&self) -> bool {
        false
    }
    fn evaluate(&self, case: &CaseRecord) -> Finding;
}
