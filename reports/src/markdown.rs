//! The Markdown summary, for `$GITHUB_STEP_SUMMARY` (GitHub-flavoured Markdown): per run a
//! headline, a table of counts per agent version, and the trials that need attention with their
//! messages folded in `<details>`.
//!
//! Client text only appears HTML-escaped (inside `<summary>`), Markdown-escaped (table cells) or
//! inside a code fence longer than any backtick run it contains, so it cannot add markup.

use askama::Template;

use crate::grade::KnownGrade;
use crate::load::ReportError;
use crate::message;
use crate::model::{Counts, Model};
use crate::words::counted;

/// Trials listed with their message; the rest are counted.
const MAX_LISTED: usize = 30;

use crate::causes::SECURITY_CHECK;

#[derive(Template)]
#[template(path = "summary.md")]
struct Summary {
    runs: Vec<RunSummary>,
    report_hint: String,
}

struct RunSummary {
    icon: &'static str,
    headline: String,
    facts: String,
    rows: Vec<Row>,
    /// One line per cause of failure (crate::causes), Markdown-escaped.
    causes: Vec<String>,
    /// The single-cause hint, its text and the fence it goes in.
    hint: Option<(String, String)>,
    failures: Vec<Failure>,
    more: usize,
}

struct Row {
    key: String,
    verdict: String,
    pass: usize,
    fail: usize,
    warn: usize,
    expected: usize,
    na: usize,
    other: String,
}

struct Failure {
    grade: String,
    trial: String,
    headline: String,
    fence: String,
    message: String,
}

/// Grades with their own column.
const COLUMNS: [KnownGrade; 5] = [
    KnownGrade::Pass,
    KnownGrade::Fail,
    KnownGrade::Warn,
    KnownGrade::Expected,
    KnownGrade::NotApplicable,
];

/// The summary. `report_hint` is a last line (e.g. where the HTML report is); empty for none.
pub fn render(model: &Model, report_hint: &str) -> Result<String, ReportError> {
    let runs = model
        .runs
        .iter()
        .map(|run| {
            let failing = run.failing;
            let warn = run.counts.get(KnownGrade::Warn);
            let client = md_text(&run.client_label());
            let (icon, headline) = if run.counts.total() == 0 {
                ("⚠️", format!("no trials ran — {client}"))
            } else if failing > 0 {
                let failing = counted(failing, "failing trial");
                ("❌", format!("{failing} — {client}"))
            } else if warn > 0 {
                ("⚠️", format!("passed with {warn} warn — {client}"))
            } else {
                ("✅", format!("all trials passed — {client}"))
            };
            let mut facts = format!(
                "{} · {} · started {} · took {} · {} trials",
                md_text(&run.harness),
                md_text(&run.acp_schema),
                run.started,
                run.duration,
                run.counts.total()
            );
            facts.push_str(&format!(
                " · auto-approval policy: {}",
                md_text(&run.policy)
            ));
            if run.strict {
                facts.push_str(" · --strict");
            }
            if let Some(filter) = &run.filter {
                facts.push_str(&format!(" · filter {}", md_text(filter)));
            }
            let rows = run
                .agents
                .iter()
                .map(|a| row(&a.key, &a.counts, a.failing))
                .chain(std::iter::once(row("**all**", &run.counts, run.failing)))
                .collect();
            let mut attention: Vec<_> = run.agents.iter().flat_map(|a| &a.failing_trials).collect();
            // What a client approved by itself is the security finding: it leads (stable sort,
            // so the rest keeps the report's order).
            attention.sort_by_key(|t| t.check != SECURITY_CHECK);
            let mut failures: Vec<Failure> = attention
                .into_iter()
                .map(|t| {
                    let text = t.failure_text().trim_end().to_owned();
                    Failure {
                        grade: html_text(&t.grade.name),
                        trial: format!("<code>{}</code>", html_text(&t.name)),
                        headline: html_text(&message::headline(&t.message)),
                        fence: fence_for(&text),
                        message: text,
                    }
                })
                .collect();
            let more = failures.len().saturating_sub(MAX_LISTED);
            failures.truncate(MAX_LISTED);
            RunSummary {
                icon,
                headline,
                facts,
                rows,
                causes: run
                    .causes
                    .iter()
                    .map(|c| md_text(&c.cause.line()))
                    .collect(),
                hint: run
                    .single_cause_hint
                    .as_ref()
                    .map(|h| (fence_for(h), h.clone())),
                failures,
                more,
            }
        })
        .collect();
    let summary = Summary {
        runs,
        report_hint: md_text(report_hint),
    };
    let text = summary.render().map_err(|source| ReportError::Render {
        what: "summary.md".into(),
        source,
    })?;
    Ok(format!("{}\n", text.trim()))
}

fn row(key: &str, counts: &Counts, failing: usize) -> Row {
    let verdict = if failing > 0 {
        format!("❌ {failing} failing")
    } else if counts.get(KnownGrade::Warn) > 0 {
        "⚠️ passed".to_owned()
    } else {
        "✅ passed".to_owned()
    };
    let other: Vec<String> = counts
        .nonzero_chips()
        .into_iter()
        .filter(|c| !KnownGrade::from_name(&c.name).is_some_and(|k| COLUMNS.contains(&k)))
        .map(|c| format!("{} {}", c.n, md_text(&c.label)))
        .collect();
    Row {
        key: if key.starts_with("**") {
            key.to_owned()
        } else {
            format!("`{}`", key.replace('`', "'"))
        },
        verdict,
        pass: counts.get(KnownGrade::Pass),
        fail: counts.get(KnownGrade::Fail),
        warn: counts.get(KnownGrade::Warn),
        expected: counts.get(KnownGrade::Expected),
        na: counts.get(KnownGrade::NotApplicable),
        other: other.join(", "),
    }
}

/// Text for a Markdown table cell or paragraph: no markup, no line breaks, no cell breaks.
fn md_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

/// Text inside an HTML element of the summary (`<summary>`), on one line.
fn html_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' | '\r' => out.push(' '),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// A backtick fence longer than any backtick run in `text` (at least three).
fn fence_for(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_text_cannot_add_markup() {
        assert_eq!(
            md_text("<script>alert(1)</script> | *x*"),
            "&lt;script&gt;alert(1)&lt;/script&gt; \\| \\*x\\*"
        );
        assert_eq!(
            html_text("\"><img src=x onerror=alert(1)>"),
            "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"
        );
        assert_eq!(fence_for("a ```` b"), "`````");
        assert_eq!(fence_for("plain"), "```");
    }
}
