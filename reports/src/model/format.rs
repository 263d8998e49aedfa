//! The small pieces every view and writer shares: trial counts per grade, the order of agent
//! versions, durations, timestamps, rule lists and the anchors of case pages.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::grade::{GRADES, Grade, KnownGrade};
use crate::run::TrialJson;

/// Grades the index always shows a count for, even when zero.
const ALWAYS_COUNTED: [KnownGrade; 5] = [
    KnownGrade::Pass,
    KnownGrade::Fail,
    KnownGrade::Warn,
    KnownGrade::Expected,
    KnownGrade::NotApplicable,
];

/// Trial counts per grade.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    by_grade: BTreeMap<String, usize>,
}

/// One count, ready to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chip {
    pub name: String,
    pub label: String,
    pub css: &'static str,
    pub meaning: &'static str,
    pub n: usize,
}

impl Counts {
    pub fn of<'a>(trials: impl IntoIterator<Item = &'a TrialJson>) -> Counts {
        let mut counts = Counts::default();
        for t in trials {
            counts.add(&t.grade, 1);
        }
        counts
    }

    pub fn add(&mut self, grade: &Grade, n: usize) {
        // Counted by name: an unknown grade has a count of its own.
        *self.by_grade.entry(grade.name.clone()).or_default() += n;
    }

    pub fn get(&self, grade: KnownGrade) -> usize {
        self.named(grade.as_str())
    }

    fn named(&self, name: &str) -> usize {
        self.by_grade.get(name).copied().unwrap_or(0)
    }

    pub fn total(&self) -> usize {
        self.by_grade.values().sum()
    }

    /// Trials that fail the run.
    pub fn failing(&self, strict: bool) -> usize {
        self.by_grade
            .iter()
            .filter(|(g, _)| Grade::of(g).is_failing(strict))
            .map(|(_, n)| n)
            .sum()
    }

    /// Every grade with a count: the known ones in table order (the always-counted ones even at
    /// zero), then unknown ones by name.
    pub fn chips(&self) -> Vec<Chip> {
        let known = GRADES
            .iter()
            .filter(|g| {
                self.named(g.name) > 0
                    || KnownGrade::from_name(g.name).is_some_and(|k| ALWAYS_COUNTED.contains(&k))
            })
            .map(|g| Grade::of(g.name));
        let unknown = self
            .by_grade
            .keys()
            .map(|name| Grade::of(name))
            .filter(|g| !g.is_known());
        known
            .chain(unknown)
            .map(|g| Chip {
                n: self.named(&g.name),
                label: g.label().to_owned(),
                css: g.css(),
                meaning: g.info.meaning,
                name: g.name,
            })
            .collect()
    }

    /// Only the grades with a non-zero count.
    pub fn nonzero_chips(&self) -> Vec<Chip> {
        self.chips().into_iter().filter(|c| c.n > 0).collect()
    }
}

/// Compares `agent@version` keys: by agent, then by version numerically (`0.9` < `0.14`).
pub fn cmp_agent_versions(a: &str, b: &str) -> Ordering {
    let split = |k: &str| {
        let (agent, version) = k.split_once('@').unwrap_or((k, ""));
        let parts: Vec<(u64, String)> = version
            .split(['.', '-'])
            .map(|p| (p.parse::<u64>().unwrap_or(u64::MAX), p.to_owned()))
            .collect();
        (agent.to_owned(), parts)
    };
    split(a).cmp(&split(b))
}

/// The worst grade among trials (by rank), or `None` for no trials.
pub fn worst<'a>(trials: impl IntoIterator<Item = &'a TrialJson>) -> Option<&'a Grade> {
    trials
        .into_iter()
        .map(|t| &t.grade)
        .max_by_key(|g| g.info.rank)
}

/// `142 ms`, `1.25 s`, `2 min 5 s`.
pub fn duration(ms: u64) -> String {
    match ms {
        0..=999 => format!("{ms} ms"),
        1_000..=59_999 => format!("{:.2} s", ms as f64 / 1000.0),
        _ => format!("{} min {} s", ms / 60_000, (ms % 60_000) / 1000),
    }
}

/// A Unix time in milliseconds as RFC 3339 UTC, to the second.
pub fn timestamp(unix_ms: u64) -> String {
    i64::try_from(unix_ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .map(|t| format!("{t:.0}"))
        .unwrap_or_else(|| format!("{unix_ms} ms after 1970"))
}

/// `#56 #57 #58`.
pub fn rules_text(rules: &[u16]) -> String {
    rules
        .iter()
        .map(|r| format!("R{r}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Anchor of a trial on its case page.
pub fn check_anchor(check: &str) -> String {
    format!("check-{}", crate::slug::page_stem(check))
}

/// Anchor of a frame on its case page.
pub fn frame_anchor(index: usize) -> String {
    format!("f{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_numerically_within_an_agent() {
        let mut keys = vec![
            "qwen-code@0.21",
            "opencode@1.18",
            "qwen-code@0.14",
            "opencode@1.9",
            "codex-acp@1.6",
        ];
        keys.sort_by(|a, b| cmp_agent_versions(a, b));
        assert_eq!(
            keys,
            vec![
                "codex-acp@1.6",
                "opencode@1.9",
                "opencode@1.18",
                "qwen-code@0.14",
                "qwen-code@0.21"
            ]
        );
    }

    #[test]
    fn counts_always_show_the_main_grades_and_any_unknown_one() {
        let mut counts = Counts::default();
        counts.add(&KnownGrade::Pass.into(), 3);
        counts.add(&KnownGrade::Crash.into(), 1);
        counts.add(&Grade::of("flaky"), 2);
        let names: Vec<String> = counts.chips().into_iter().map(|c| c.name).collect();
        assert_eq!(
            names,
            vec![
                "pass",
                "fail",
                "warn",
                "expected",
                "not_applicable",
                "crash",
                "flaky"
            ]
        );
        assert_eq!(counts.failing(false), 3);
        assert_eq!(counts.nonzero_chips().len(), 3);
    }

    #[test]
    fn durations_and_timestamps_read_well() {
        assert_eq!(duration(142), "142 ms");
        assert_eq!(duration(1250), "1.25 s");
        assert_eq!(duration(125_000), "2 min 5 s");
        assert_eq!(timestamp(0), "1970-01-01T00:00:00Z");
        assert_eq!(timestamp(u64::MAX), format!("{} ms after 1970", u64::MAX));
    }
}
