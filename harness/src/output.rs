//! Human-readable output: one line per finished case, the summary table, the numbered wire log.

use std::collections::BTreeMap;
use std::time::Duration;

use acp_vocab::transcript::{Direction, Entry};

use acp_judge::checks::{Grade, Trial};

/// The worst grade of a case, for its progress line: by the rank every report uses too.
fn worst(trials: &[Trial]) -> Grade {
    Grade::worst(trials.iter().map(|t| t.grade)).unwrap_or(Grade::NotApplicable)
}

/// `  FAIL  opencode@1.18/edit-permission  0.21 s  subject-kind, offered-options`
pub fn progress_line(case_id: &str, duration: Duration, trials: &[Trial]) -> String {
    let grade = worst(trials);
    let bad: Vec<&str> = trials
        .iter()
        .filter(|t| !matches!(t.grade, Grade::Pass | Grade::NotApplicable))
        .map(|t| t.check)
        .collect();
    let mut line = format!(
        "{:>8}  {}  {:.2} s",
        grade.as_str().to_uppercase(),
        case_id,
        duration.as_secs_f64()
    );
    if !bad.is_empty() {
        line.push_str("  ");
        line.push_str(&bad.join(", "));
    }
    line
}

/// Trial counts per agent@version and grade, added to as cases finish: the summary table a run
/// prints, without keeping the cases.
#[derive(Debug, Clone, Default)]
pub struct GradeTable {
    rows: BTreeMap<String, [usize; 9]>,
}

impl GradeTable {
    pub fn add(&mut self, agent: &str, version: &str, grade: Grade) {
        self.count(agent, version, grade, 1);
    }

    /// A trial regraded after it was counted (by the baseline, at the end of a run).
    pub fn regrade(&mut self, agent: &str, version: &str, from: Grade, to: Grade) {
        self.count(agent, version, from, -1);
        self.count(agent, version, to, 1);
    }

    fn count(&mut self, agent: &str, version: &str, grade: Grade, n: isize) {
        let row = self.rows.entry(format!("{agent}@{version}")).or_default();
        let i = Grade::ALL.iter().position(|g| *g == grade).unwrap_or(0);
        row[i] = row[i].saturating_add_signed(n);
    }

    /// Trials per grade over every agent version.
    pub fn totals(&self) -> impl Iterator<Item = (Grade, usize)> + '_ {
        Grade::ALL
            .into_iter()
            .enumerate()
            .map(|(i, g)| (g, self.rows.values().map(|row| row[i]).sum()))
    }

    /// The aligned table.
    pub fn render(&self) -> String {
        let grades = Grade::ALL;
        let mut total = [0usize; 9];
        let width = self.rows.keys().map(String::len).max().unwrap_or(5).max(5);
        let mut out = format!("{:width$}", "agent");
        for g in grades {
            out.push_str(&format!(" {:>7}", short(g)));
        }
        out.push('\n');
        for (key, row) in &self.rows {
            out.push_str(&format!("{key:width$}"));
            for (i, n) in row.iter().enumerate() {
                total[i] += n;
                out.push_str(&format!(" {n:>7}"));
            }
            out.push('\n');
        }
        out.push_str(&format!("{:width$}", "total"));
        for n in total {
            out.push_str(&format!(" {n:>7}"));
        }
        out.push('\n');
        out
    }
}

fn short(grade: Grade) -> &'static str {
    grade.info().label
}

/// One numbered line per transcript entry: index, time, connection, direction, raw frame.
pub fn wire_log(transcript: &[Entry]) -> String {
    let mut out = String::new();
    for e in transcript {
        let conn = match e.direction {
            Direction::ClientToAgent | Direction::AgentToClient => format!("conn {}", e.conn),
            _ => "      ".into(),
        };
        out.push_str(&format!(
            "{:>5} {:>9.3} ms  {conn}  {:<18} {}\n",
            e.index,
            e.at_us as f64 / 1000.0,
            e.direction.arrow(),
            e.raw
        ));
    }
    out
}
