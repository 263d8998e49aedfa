//! What changed between two runs: new failures, fixed trials, failures whose message changed,
//! cases added and removed, and cases that got slower beyond a threshold. As text for a
//! terminal and as an HTML page.
//!
//! Trials are matched by name (`<case>::<check>`). Messages are compared after taking out what
//! differs between any two runs of the same behaviour: the appended frame quotes and repro line,
//! transcript indices (`#17`), and the harness's temporary directory names (`acp-case-XXXXXX`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use askama::Template;

use crate::grade::Grade;
use crate::html::{Chrome, Crumb};
use crate::load::{LoadedRun, ReportError};
use crate::message;
use crate::model::{duration, timestamp};
use crate::report_pages::ReportPages;
use crate::run::{CaseJson, RunJson, TrialJson};
use crate::words::counted;

/// When a case counts as slower.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    /// Relative growth, in percent.
    pub slower_pct: f64,
    /// Absolute growth, in milliseconds (both must be exceeded: tiny cases jitter).
    pub slower_ms: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            slower_pct: 50.0,
            slower_ms: 250,
        }
    }
}

/// One side of the diff.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    pub path: String,
    pub client: String,
    pub harness: String,
    pub started: String,
}

/// A trial present in both runs whose verdict or message changed.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialChange {
    pub trial: String,
    /// `None`: the trial is absent from that run.
    pub old_grade: Option<Grade>,
    pub new_grade: Option<Grade>,
    pub old_css: &'static str,
    pub new_css: &'static str,
    /// First finding lines.
    pub old_headline: String,
    pub new_headline: String,
    /// The trial on each run's case page, relative to the diff page ([`link_reports`]); `None`
    /// when that run's report is not on disk or has no page for it.
    pub old_href: Option<String>,
    pub new_href: Option<String>,
}

/// A case that got slower.
#[derive(Debug, Clone, PartialEq)]
pub struct Slower {
    pub case: String,
    pub old_ms: u64,
    pub new_ms: u64,
}

impl Slower {
    pub fn growth(&self) -> String {
        if self.old_ms == 0 {
            return "new cost".into();
        }
        format!(
            "+{:.0}%",
            (self.new_ms as f64 / self.old_ms as f64 - 1.0) * 100.0
        )
    }
    pub fn before(&self) -> String {
        duration(self.old_ms)
    }
    pub fn after(&self) -> String {
        duration(self.new_ms)
    }
}

/// Everything that changed.
#[derive(Debug, Clone, PartialEq)]
pub struct RunDiff {
    pub old: Side,
    pub new: Side,
    pub thresholds: Thresholds,
    /// Failing now, not failing before (including trials of cases that are new).
    pub new_failures: Vec<TrialChange>,
    /// Failing before, not failing now.
    pub fixed: Vec<TrialChange>,
    /// Failing in both, with another grade or another message.
    pub changed: Vec<TrialChange>,
    /// Failing in neither, with another grade (pass, warn, not_applicable, expected …): a
    /// verdict that moved without a failure, which `--same-grades` treats as a change.
    pub regraded: Vec<TrialChange>,
    pub cases_added: Vec<String>,
    pub cases_removed: Vec<String>,
    /// Trials of cases in both runs that only one run has (a check added or removed).
    pub trials_added: Vec<String>,
    pub trials_removed: Vec<String>,
    pub slower: Vec<Slower>,
}

impl RunDiff {
    pub fn is_empty(&self) -> bool {
        self.new_failures.is_empty()
            && self.fixed.is_empty()
            && self.changed.is_empty()
            && self.regraded.is_empty()
            && self.cases_added.is_empty()
            && self.cases_removed.is_empty()
            && self.trials_added.is_empty()
            && self.trials_removed.is_empty()
            && self.slower.is_empty()
    }

    /// `2 new failures, 1 fixed, …`.
    pub fn summary(&self) -> String {
        format!(
            "{}, {} fixed, {} changed, {}{} added, {} removed, {} slower",
            counted(self.new_failures.len(), "new failure"),
            self.fixed.len(),
            self.changed.len(),
            // Listed only when some moved: most diffs compare failures, not passes.
            if self.regraded.is_empty() {
                String::new()
            } else {
                format!("{} other grades, ", self.regraded.len())
            },
            counted(self.cases_added.len(), "case"),
            self.cases_removed.len(),
            self.slower.len()
        )
    }
}

fn side(loaded: &LoadedRun) -> Side {
    let run = &loaded.run;
    let client = match run.client.reported_version() {
        Some(v) => format!("{} {v}", run.client.display_name()),
        None => run.client.display_name().to_owned(),
    };
    Side {
        path: loaded.path.display().to_string(),
        client,
        harness: format!("{} {}", run.harness.name, run.harness.version),
        started: timestamp(run.started_unix_ms),
    }
}

/// A message with what varies between equal runs taken out.
pub fn normalize(message: &str) -> String {
    let finding: Vec<String> = message::finding(message, &[])
        .into_iter()
        .map(|segments| segments.iter().map(|s| s.text()).collect())
        .collect();
    let text = finding.join("\n");
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if c == '#' && chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) {
            while chars.peek().is_some_and(|(_, d)| d.is_ascii_digit()) {
                chars.next();
            }
            out.push_str("#…");
        } else if text[at..].starts_with("acp-case-") {
            out.push_str("acp-case-");
            for _ in 0.."acp-case".len() {
                chars.next();
            }
            while chars.peek().is_some_and(|(_, d)| d.is_ascii_alphanumeric()) {
                chars.next();
            }
            out.push('…');
        } else {
            out.push(c);
        }
    }
    out
}

fn trials(run: &RunJson) -> BTreeMap<&str, (&TrialJson, bool)> {
    let strict = run.config.strict;
    run.cases
        .iter()
        .flat_map(|c| &c.trials)
        .map(|t| (t.name.as_str(), (t, t.grade.is_failing(strict))))
        .collect()
}

fn change(name: &str, old: Option<&TrialJson>, new: Option<&TrialJson>) -> TrialChange {
    let grade = |t: Option<&TrialJson>| t.map(|t| t.grade.clone());
    let css = |t: Option<&TrialJson>| t.map_or("none", |t| t.grade.css());
    let headline =
        |t: Option<&TrialJson>| t.map(|t| message::headline(&t.message)).unwrap_or_default();
    TrialChange {
        trial: name.to_owned(),
        old_grade: grade(old),
        new_grade: grade(new),
        old_css: css(old),
        new_css: css(new),
        old_headline: headline(old),
        new_headline: headline(new),
        old_href: None,
        new_href: None,
    }
}

/// Links every changed trial of `d` into the two runs' reports, for a diff page written into the
/// directory `page_dir`. A side without a report (`None`) keeps its trials unlinked.
pub fn link_reports(
    d: &mut RunDiff,
    old: Option<&ReportPages>,
    new: Option<&ReportPages>,
    page_dir: &Path,
) {
    for change in d
        .new_failures
        .iter_mut()
        .chain(d.fixed.iter_mut())
        .chain(d.changed.iter_mut())
        .chain(d.regraded.iter_mut())
    {
        change.old_href = old.and_then(|r| r.trial_href(&change.trial, page_dir));
        change.new_href = new.and_then(|r| r.trial_href(&change.trial, page_dir));
    }
}

/// Compares two runs.
pub fn diff(old: &LoadedRun, new: &LoadedRun, thresholds: Thresholds) -> RunDiff {
    let old_cases: BTreeMap<&str, &CaseJson> =
        old.run.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let new_cases: BTreeMap<&str, &CaseJson> =
        new.run.cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let old_trials = trials(&old.run);
    let new_trials = trials(&new.run);
    let case_of = |trial: &str| trial.split_once("::").map_or(trial, |(c, _)| c).to_owned();

    let mut d = RunDiff {
        old: side(old),
        new: side(new),
        thresholds,
        new_failures: Vec::new(),
        fixed: Vec::new(),
        changed: Vec::new(),
        regraded: Vec::new(),
        cases_added: new_cases
            .keys()
            .filter(|k| !old_cases.contains_key(*k))
            .map(|k| k.to_string())
            .collect(),
        cases_removed: old_cases
            .keys()
            .filter(|k| !new_cases.contains_key(*k))
            .map(|k| k.to_string())
            .collect(),
        trials_added: Vec::new(),
        trials_removed: Vec::new(),
        slower: Vec::new(),
    };
    for (name, (new_t, new_failing)) in &new_trials {
        let old_entry = old_trials.get(name);
        match old_entry {
            None => {
                if old_cases.contains_key(case_of(name).as_str()) {
                    d.trials_added.push(name.to_string());
                }
                if *new_failing {
                    d.new_failures.push(change(name, None, Some(new_t)));
                }
            }
            Some((old_t, old_failing)) => match (old_failing, new_failing) {
                (false, true) => d.new_failures.push(change(name, Some(old_t), Some(new_t))),
                (true, false) => d.fixed.push(change(name, Some(old_t), Some(new_t))),
                (true, true)
                    if old_t.grade != new_t.grade
                        || normalize(&old_t.message) != normalize(&new_t.message) =>
                {
                    d.changed.push(change(name, Some(old_t), Some(new_t)));
                }
                (false, false) if old_t.grade != new_t.grade => {
                    d.regraded.push(change(name, Some(old_t), Some(new_t)));
                }
                _ => {}
            },
        }
    }
    // A trial that disappeared (with its case, or its check) is listed as removed, not fixed.
    for name in old_trials.keys() {
        if !new_trials.contains_key(name) && new_cases.contains_key(case_of(name).as_str()) {
            d.trials_removed.push(name.to_string());
        }
    }
    for (id, new_case) in &new_cases {
        if let Some(old_case) = old_cases.get(id) {
            let grew = new_case.duration_ms.saturating_sub(old_case.duration_ms);
            let pct_limit = old_case.duration_ms as f64 * thresholds.slower_pct / 100.0;
            if grew > thresholds.slower_ms && grew as f64 > pct_limit {
                d.slower.push(Slower {
                    case: id.to_string(),
                    old_ms: old_case.duration_ms,
                    new_ms: new_case.duration_ms,
                });
            }
        }
    }
    d.slower
        .sort_by_key(|s| std::cmp::Reverse(s.new_ms - s.old_ms));
    d
}

/// The diff as plain text.
pub fn text(d: &RunDiff) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "old: {} ({}, {}, {})\nnew: {} ({}, {}, {})\n",
        d.old.path,
        d.old.client,
        d.old.harness,
        d.old.started,
        d.new.path,
        d.new.client,
        d.new.harness,
        d.new.started
    );
    let changes = |out: &mut String, title: &str, list: &[TrialChange]| {
        if list.is_empty() {
            return;
        }
        let _ = writeln!(out, "{title} ({}):", list.len());
        for c in list {
            let _ = writeln!(
                out,
                "  {:>8}  {}  (was {})",
                grade_name(c.new_grade.as_ref()).to_uppercase(),
                c.trial,
                grade_name(c.old_grade.as_ref())
            );
            if c.old_headline != c.new_headline && !c.old_headline.is_empty() {
                let _ = writeln!(out, "            - {}", c.old_headline);
            }
            if !c.new_headline.is_empty() {
                let _ = writeln!(out, "            + {}", c.new_headline);
            }
        }
        out.push('\n');
    };
    changes(&mut out, "new failures", &d.new_failures);
    changes(&mut out, "fixed", &d.fixed);
    changes(&mut out, "changed failure messages", &d.changed);
    changes(
        &mut out,
        "other grades (no failure either side)",
        &d.regraded,
    );
    let names = |out: &mut String, title: &str, list: &[String]| {
        if list.is_empty() {
            return;
        }
        let _ = writeln!(out, "{title} ({}):", list.len());
        for name in list {
            let _ = writeln!(out, "  {name}");
        }
        out.push('\n');
    };
    names(&mut out, "cases added", &d.cases_added);
    names(&mut out, "cases removed", &d.cases_removed);
    names(&mut out, "trials added (new checks)", &d.trials_added);
    names(&mut out, "trials removed", &d.trials_removed);
    if !d.slower.is_empty() {
        let _ = writeln!(
            out,
            "slower (by more than {}% and {} ms) ({}):",
            d.thresholds.slower_pct,
            d.thresholds.slower_ms,
            d.slower.len()
        );
        for s in &d.slower {
            let _ = writeln!(
                out,
                "  {}  {} → {} ({})",
                s.case,
                s.before(),
                s.after(),
                s.growth()
            );
        }
        out.push('\n');
    }
    if d.is_empty() {
        out.push_str("no changes\n");
    } else {
        let _ = writeln!(out, "{}", d.summary());
    }
    out
}

#[derive(Template)]
#[template(path = "diff.html")]
struct DiffPage<'a> {
    chrome: Chrome,
    d: &'a RunDiff,
    /// (title, anchor, trials)
    trial_sections: Vec<(&'static str, &'static str, &'a [TrialChange])>,
    /// (title, anchor, names)
    name_sections: Vec<(&'static str, &'static str, &'a [String])>,
}

/// The diff as a self-contained HTML page.
pub fn html(d: &RunDiff) -> Result<String, ReportError> {
    let page = DiffPage {
        chrome: Chrome::new(
            format!("diff: {} → {}", d.old.client, d.new.client),
            "",
            vec![Crumb {
                label: "run diff".into(),
                href: String::new(),
            }],
        ),
        d,
        trial_sections: vec![
            ("New failures", "new-failures", &d.new_failures),
            ("Fixed", "fixed", &d.fixed),
            ("Changed failure messages", "changed", &d.changed),
            (
                "Other grades (no failure either side)",
                "regraded",
                &d.regraded,
            ),
        ],
        name_sections: vec![
            ("Cases added", "cases-added", &d.cases_added),
            ("Cases removed", "cases-removed", &d.cases_removed),
            ("Trials added (new checks)", "trials-added", &d.trials_added),
            ("Trials removed", "trials-removed", &d.trials_removed),
        ],
    };
    page.render().map_err(|source| ReportError::Render {
        what: "diff.html".into(),
        source,
    })
}

// Used by the template.
impl TrialChange {
    pub fn old_label(&self) -> String {
        model_label(self.old_grade.as_ref())
    }
    pub fn new_label(&self) -> String {
        model_label(self.new_grade.as_ref())
    }
}

/// What a side without the trial shows in place of its grade.
const ABSENT: &str = "absent";

fn grade_name(grade: Option<&Grade>) -> &str {
    grade.map_or(ABSENT, |g| g.name.as_str())
}

fn model_label(grade: Option<&Grade>) -> String {
    grade.map_or(ABSENT, Grade::label).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_hides_indices_tempdirs_and_the_appendix() {
        let a = "- [fail] approval #17 for \"/tmp/acp-case-alch5c/work/notes.md\" (#43).\n#17 adapter → harness {}\nrepro: x";
        let b = "- [fail] approval #16 for \"/tmp/acp-case-Q9x1ZZ/work/notes.md\" (#43).\n#16 adapter → harness {}\nrepro: y";
        assert_eq!(normalize(a), normalize(b));
        assert_eq!(
            normalize(a),
            "[fail] approval #… for \"/tmp/acp-case-…/work/notes.md\" (#…)."
        );
        assert_ne!(
            normalize(a),
            normalize("- [fail] approval #17 for another file")
        );
    }

    #[test]
    fn growth_is_relative() {
        let s = Slower {
            case: "c".into(),
            old_ms: 100,
            new_ms: 400,
        };
        assert_eq!(s.growth(), "+300%");
    }
}
