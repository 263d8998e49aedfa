//! Grading one fuzz turn with the harness's own checks, and the readable summary a finding
//! panics with.
//!
//! A turn is a [`CaseRecord`] like any scenario run, graded by [`grade_case`] (every check, the
//! same rules). What counts as a finding: `fail`, `error`, `timeout`, `crash`, and `warn` — a
//! fuzzer is strict, so two buttons both labelled "Allow" is a finding — except the warning of
//! `stable-item-type`, whose only warning says that *the agent itself* changed the tool call's
//! kind on the wire, which fuzz inputs do on purpose (announced `edit`, finished `execute`).

use std::fmt::Write as _;

use acp_judge::checks::{Grade, Trial, frame_line, grade_case};
use acp_judge::record::CaseRecord;
use acp_judge::wire_model::WireModel;

use super::input::PermissionTurn;

/// The checks' verdict on one turn.
#[derive(Debug, Clone)]
pub struct Verdict {
    pub trials: Vec<Trial>,
}

impl Verdict {
    pub fn of(record: &CaseRecord) -> Self {
        Verdict {
            trials: grade_case(record),
        }
    }

    /// The trials that make the fuzzer stop.
    pub fn findings(&self) -> Vec<&Trial> {
        self.trials.iter().filter(|t| is_finding(t)).collect()
    }

    pub fn passed(&self) -> bool {
        self.findings().is_empty()
    }
}

/// True if this trial is a bug the fuzzer reports.
pub fn is_finding(trial: &Trial) -> bool {
    match trial.grade {
        Grade::Fail | Grade::Error | Grade::Timeout | Grade::Crash => true,
        Grade::Warn => trial.check != "stable-item-type",
        Grade::Pass | Grade::NotApplicable | Grade::Expected | Grade::Stale => false,
    }
}

/// Lines of the wire log kept in a summary (the end of the turn matters most).
const LOG_LINES: usize = 60;

/// The summary a finding panics with: what was played, what broke, the turn's wire log, and how
/// to turn the crash artifact into a regression scenario.
pub fn summary(
    turn: &PermissionTurn,
    record: &CaseRecord,
    verdict: &Verdict,
    client: &str,
    fresh: Option<bool>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "acp-harness fuzz: the client broke an invariant in {}",
        record.meta.case_id
    );
    let _ = writeln!(out, "client: {client}");
    match fresh {
        Some(true) => {
            let _ = writeln!(out, "reproduces on a freshly started client: yes");
        }
        Some(false) => {
            let _ = writeln!(
                out,
                "reproduces on a freshly started client: NO (it depends on earlier turns of the long-lived client)"
            );
        }
        None => {}
    }
    let _ = writeln!(out, "\nturn: {}", turn.summary());
    let _ = writeln!(
        out,
        "input (JSON; a seed file may hold exactly this): {}",
        serde_json::to_string(turn).unwrap_or_default()
    );
    let _ = writeln!(out, "\nfindings:");
    for trial in verdict.findings() {
        let _ = writeln!(out, "  {} [{}]", trial.check, trial.grade.as_str());
        for line in trial.message.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    let model = WireModel::new(&record.transcript);
    let n = record.transcript.len();
    let _ = writeln!(out, "\nwire log of the turn (handshake included):");
    if n > LOG_LINES {
        let _ = writeln!(out, "  … {} earlier entries", n - LOG_LINES);
    }
    for entry in &record.transcript[n.saturating_sub(LOG_LINES)..] {
        let _ = writeln!(out, "  {}", frame_line(&model, entry.index));
    }
    let _ = writeln!(
        out,
        "\nturn the crash artifact into a regression scenario:\n  cargo run -p acp-harness -- fuzz-to-scenario <artifact>"
    );
    out
}
