//! The HTML report: `index.html` (clients × agent versions), one page per agent version of each
//! run (scenarios × checks), one page per case (checks, cited frames, numbered wire log).
//!
//! Pages are askama templates (`templates/`), so every value is HTML-escaped unless a template
//! says `|safe`, which only the stylesheet and script (constants of this crate) do. Every page is
//! self-contained (inline CSS and JS) and carries a Content-Security-Policy that allows no network
//! and only this crate's script (by hash): even markup that slipped through could not run.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use askama::Template;
use base64::Engine;
use sha2::{Digest, Sha256};

use crate::grade::{GRADES, Grade, KnownGrade};
use crate::load::{LoadedRun, ReportError};
use crate::message::{self, Segment};
use crate::model::{
    self, AgentView, CaseSlot, Chip, Counts, FamilyGroup, Model, Row, RunView, ScenarioGroup,
};
use crate::run::{CaseJson, EndKind, ProfileInfo};
use crate::transcript::{Frame, Line, Transcript};

const CSS: &str = include_str!("../templates/report.css");
const JS: &str = include_str!("../templates/report.js");

/// Wire log rows shown in full; past this, only rows near cited frames and the tail are shown.
const LOG_ROWS: usize = 3_000;
/// Rows kept around each cited frame of a long log, and at its end.
const LOG_CONTEXT: usize = 3;
const LOG_TAIL: usize = 200;
/// Characters of a cited frame quoted next to the finding.
const CITED_CHARS: usize = 400;

/// `acp-reports <version>`.
pub fn generator() -> String {
    format!("acp-reports {}", env!("CARGO_PKG_VERSION"))
}

/// The Content-Security-Policy of every page: nothing from the network, this crate's script only.
fn csp() -> String {
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(JS.as_bytes()));
    format!(
        "default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; \
         img-src 'none'; base-uri 'none'; form-action 'none'"
    )
}

/// A link in the page header.
#[derive(Debug, Clone)]
pub struct Crumb {
    pub label: String,
    /// Empty for the current page.
    pub href: String,
}

/// What every page has around its content.
#[derive(Debug, Clone)]
pub struct Chrome {
    pub title: String,
    pub home: String,
    pub crumbs: Vec<Crumb>,
    pub csp: String,
    pub generator: String,
    pub css: &'static str,
    pub js: &'static str,
}

impl Chrome {
    pub(crate) fn new(title: String, home: &str, crumbs: Vec<Crumb>) -> Chrome {
        Chrome {
            title,
            home: home.to_owned(),
            crumbs,
            csp: csp(),
            generator: generator(),
            css: CSS,
            js: JS,
        }
    }
}

fn crumb(label: impl Into<String>, href: impl Into<String>) -> Crumb {
    Crumb {
        label: label.into(),
        href: href.into(),
    }
}

/// One grade of the legend.
#[derive(Debug, Clone)]
pub struct LegendItem {
    pub label: &'static str,
    pub css: &'static str,
    pub meaning: &'static str,
}

fn legend() -> Vec<LegendItem> {
    GRADES
        .iter()
        .map(|g| LegendItem {
            label: g.label,
            css: g.css,
            meaning: g.meaning,
        })
        .collect()
}

/// An index column: one agent version.
#[derive(Debug, Clone)]
pub struct IndexColumn {
    pub key: String,
    pub profile: String,
}

/// An index cell: one client against one agent version (or all of them).
#[derive(Debug, Clone)]
pub struct IndexCell {
    /// Empty when the run has no case for this agent version.
    pub href: String,
    pub verdict: String,
    pub worst_css: &'static str,
    pub bar: Vec<Chip>,
    pub chips: Vec<Chip>,
}

impl IndexCell {
    fn new(counts: &Counts, strict: bool, href: String) -> IndexCell {
        let failing = counts.failing(strict);
        let warn = counts.get(KnownGrade::Warn);
        let (verdict, worst_css) = if failing > 0 {
            (format!("{failing} failing"), "fail")
        } else if warn > 0 {
            (format!("passed, {warn} warn"), "warn")
        } else if counts.get(KnownGrade::Pass) > 0 {
            ("passed".to_owned(), "pass")
        } else {
            ("nothing applicable".to_owned(), "na")
        };
        IndexCell {
            href,
            verdict,
            worst_css,
            bar: counts.nonzero_chips(),
            chips: counts.chips(),
        }
    }

    fn empty() -> IndexCell {
        IndexCell {
            href: String::new(),
            verdict: String::new(),
            worst_css: "none",
            bar: Vec::new(),
            chips: Vec::new(),
        }
    }
}

/// An index row: one run (client).
#[derive(Debug, Clone)]
pub struct IndexRow {
    pub client: String,
    pub source: String,
    pub harness: String,
    pub started: String,
    pub strict: bool,
    pub cells: Vec<IndexCell>,
    pub total: IndexCell,
}

#[derive(Template)]
#[template(path = "index.html")]
struct IndexPage<'a> {
    chrome: Chrome,
    failing: usize,
    columns: Vec<IndexColumn>,
    rows: Vec<IndexRow>,
    runs: &'a [RunView],
    profiles: Vec<ProfileInfo>,
    legend: Vec<LegendItem>,
}

#[derive(Template)]
#[template(path = "agent.html")]
struct AgentPage<'a> {
    chrome: Chrome,
    run: &'a RunView,
    agent: &'a AgentView,
    legend: Vec<LegendItem>,
    /// Where the rows' cases are read from, one scenario at a time as the page is written.
    cases: &'a LoadedRun,
    /// The first case that could not be read (the page is then not written).
    failed: RefCell<Option<ReportError>>,
}

impl AgentPage<'_> {
    /// The scenarios of `family` with their rows, each made when the template reaches it.
    fn scenarios<'f>(
        &'f self,
        family: &'f FamilyGroup,
    ) -> impl Iterator<Item = ScenarioGroup> + 'f {
        family
            .scenarios
            .iter()
            .map_while(|span| self.keep_error(self.agent.scenario(self.cases, span)))
    }

    /// The rows of `group`, each made when the template reaches it: a scenario's rows are never
    /// all in memory, however many cases it has.
    fn rows<'g>(&'g self, group: &'g ScenarioGroup) -> impl Iterator<Item = Cow<'g, Row>> + 'g {
        let rest = group
            .rest
            .clone()
            .map_while(|pos| self.keep_error(self.agent.row(self.cases, pos)))
            .map(Cow::Owned);
        group.first.iter().map(Cow::Borrowed).chain(rest)
    }

    /// The value, or `None` with the error kept for [`write_agent_page`] (the first one).
    fn keep_error<T>(&self, result: Result<T, ReportError>) -> Option<T> {
        result
            .map_err(|e| {
                self.failed.borrow_mut().get_or_insert(e);
            })
            .ok()
    }
}

/// A trial on its case page.
#[derive(Debug, Clone)]
pub struct TrialView {
    pub check: String,
    pub anchor: String,
    pub label: String,
    pub css: &'static str,
    /// Needs attention: shown open, with the finding and the cited frames.
    pub bad: bool,
    pub requirement: String,
    pub rules: String,
    /// The rule the finding breaks, shown next to what was observed and expected.
    pub broken: Option<crate::run::RuleJson>,
    pub finding: Vec<Vec<Segment>>,
    /// The finding lines split into observed / expected.
    pub split: Vec<message::Split>,
    /// True if any line says what was expected (then the split is shown as a table).
    pub has_expected: bool,
    pub cited: Vec<CitedFrame>,
}

/// A cited frame quoted under a finding.
#[derive(Debug, Clone)]
pub struct CitedFrame {
    pub index: usize,
    pub dir_label: String,
    pub dir_css: &'static str,
    pub summary: String,
    pub raw: String,
    /// What a person saw on a full-screen client's screen ([`Frame::screen`]).
    pub screen: Option<String>,
}

/// One row of the wire log: a frame, or a note that rows were left out.
#[derive(Debug, Clone)]
pub struct LogRow {
    pub frame: Option<LogFrame>,
    pub gap: String,
}

#[derive(Debug, Clone)]
pub struct LogFrame {
    pub index: usize,
    /// Milliseconds since the case started, `12.345`.
    pub time: String,
    pub conn: String,
    pub dir_label: String,
    pub dir_css: &'static str,
    /// `wire`, `control` or `note` (for the plane filters).
    pub plane: &'static str,
    pub summary: String,
    pub raw: String,
    /// What a person saw on a full-screen client's screen ([`Frame::screen`]).
    pub screen: Option<String>,
    /// The raw text is complete JSON (the pretty-printer may reformat it).
    pub json: bool,
    /// Checks that cite this frame in a failing trial.
    pub cited_by: Vec<String>,
    pub cited: bool,
}

#[derive(Template)]
#[template(path = "case.html")]
struct CasePage<'a> {
    chrome: Chrome,
    run: &'a RunView,
    case: &'a CaseJson,
    chips: Vec<Chip>,
    end: String,
    end_ok: bool,
    duration: String,
    profile: Option<ProfileInfo>,
    trials: Vec<TrialView>,
    log: Vec<LogRow>,
    log_notes: Vec<String>,
}

/// Label, CSS class and plane of a transcript direction.
pub fn direction(dir: &str) -> (String, &'static str, &'static str) {
    match dir {
        "c2a" => ("client → agent".into(), "c2a", "wire"),
        "a2c" => ("agent → client".into(), "a2c", "wire"),
        "h2c" => ("harness → adapter".into(), "h2c", "control"),
        "c2h" => ("adapter → harness".into(), "c2h", "control"),
        // A control event a client profile's observer derived (no adapter): styled as one.
        "o2h" => ("observer → harness".into(), "c2h", "control"),
        "note" => ("harness note".into(), "note", "note"),
        other => (other.to_owned(), "unknown", "note"),
    }
}

fn render<T: Template>(what: &str, page: &T) -> Result<String, ReportError> {
    page.render().map_err(|source| ReportError::Render {
        what: what.to_owned(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), ReportError> {
    create_parent(path)?;
    std::fs::write(path, text).map_err(|source| ReportError::Write {
        path: path.to_owned(),
        source,
    })
}

fn create_parent(path: &Path) -> Result<(), ReportError> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
            path: dir.to_owned(),
            source,
        }),
        None => Ok(()),
    }
}

/// Writes `index.html` under `out`; returns its path.
pub fn write_index(model: &Model, out: &Path) -> Result<PathBuf, ReportError> {
    let index = out.join("index.html");
    write(&index, &render("index.html", &index_page(model))?)?;
    Ok(index)
}

/// Writes the page of `agent` of `view` (whose cases `loaded` holds) under `out`.
pub fn write_agent_page(
    loaded: &LoadedRun,
    view: &RunView,
    agent: &AgentView,
    out: &Path,
) -> Result<(), ReportError> {
    let page = AgentPage {
        chrome: Chrome::new(
            format!("{} — {}", agent.key, view.client_label()),
            "../index.html",
            vec![
                crumb("all runs", "../index.html"),
                crumb(view.client_label(), "../index.html"),
                crumb(agent.key.clone(), ""),
            ],
        ),
        run: view,
        agent,
        legend: legend(),
        cases: loaded,
        failed: RefCell::new(None),
    };
    let path = out.join(&view.dir).join(&agent.page);
    create_parent(&path)?;
    let written = |source| ReportError::Write {
        path: path.clone(),
        source,
    };
    let file = std::fs::File::create(&path).map_err(written)?;
    let mut file = std::io::BufWriter::new(file);
    // Written as it is made: its rows are never all in memory.
    let result = page.write_into(&mut file).and_then(|()| file.flush());
    if let Some(failed) = page.failed.borrow_mut().take() {
        return Err(failed);
    }
    result.map_err(written)
}

/// Writes the page of `case`, at `slot` of `agent` of `view`, under `out`.
pub fn write_case_page(
    loaded: &LoadedRun,
    model: &Model,
    (view, agent): (&RunView, &AgentView),
    slot: CaseSlot,
    case: &CaseJson,
    out: &Path,
) -> Result<(), ReportError> {
    let page = slot.page(case);
    let transcript = loaded.transcript(case);
    let html = render(
        &page,
        &case_page(view, agent, case, &transcript, &model.profiles),
    )?;
    write(&out.join(&view.dir).join(page), &html)
}

fn index_page(model: &Model) -> IndexPage<'_> {
    let columns = model
        .agent_versions
        .iter()
        .map(|key| IndexColumn {
            key: key.clone(),
            profile: model
                .profiles
                .get(key)
                .map(|p| p.title.clone())
                .unwrap_or_default(),
        })
        .collect();
    let rows = model
        .runs
        .iter()
        .map(|run| IndexRow {
            client: run.client_label(),
            source: run.source.clone(),
            harness: run.harness.clone(),
            started: run.started.clone(),
            strict: run.strict,
            cells: model
                .agent_versions
                .iter()
                .map(|key| match run.agent(key) {
                    Some(agent) => IndexCell::new(
                        &agent.counts,
                        run.strict,
                        format!("{}/{}", run.dir, agent.page),
                    ),
                    None => IndexCell::empty(),
                })
                .collect(),
            total: IndexCell::new(&run.counts, run.strict, String::new()),
        })
        .collect();
    IndexPage {
        chrome: Chrome::new(
            "ACP client conformance".into(),
            "index.html",
            vec![crumb("all runs", "")],
        ),
        failing: model.failing(),
        columns,
        rows,
        runs: &model.runs,
        profiles: model.profiles.values().cloned().collect(),
        legend: legend(),
    }
}

fn case_page<'a>(
    run: &'a RunView,
    agent: &AgentView,
    case: &'a CaseJson,
    transcript: &Transcript,
    profiles: &BTreeMap<String, ProfileInfo>,
) -> CasePage<'a> {
    // Frames cited by trials that need attention, and by which checks.
    let mut cited_by: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for t in &case.trials {
        if t.grade.needs_attention() {
            for f in &t.frames {
                cited_by.entry(*f).or_default().push(t.check.clone());
            }
        }
    }
    let mut trials: Vec<TrialView> = case
        .trials
        .iter()
        .map(|t| {
            let g = &t.grade;
            let bad = g.needs_attention();
            let finding = message::finding(&t.message, &t.frames);
            let split: Vec<message::Split> = finding
                .iter()
                .cloned()
                .map(message::split_expected)
                .collect();
            TrialView {
                has_expected: split.iter().any(|l| !l.expected.is_empty()),
                split,
                finding,
                check: t.check.clone(),
                anchor: model::check_anchor(&t.check),
                label: g.label().to_owned(),
                css: g.css(),
                bad,
                requirement: t.requirement.clone(),
                rules: model::rules_text(&t.rules),
                broken: t.rule.clone().filter(|_| bad),
                cited: if bad {
                    t.frames
                        .iter()
                        .map(|i| cited_frame(*i, transcript))
                        .collect()
                } else {
                    Vec::new()
                },
            }
        })
        .collect();
    // The trials that need attention first, worst first; the rest in check order.
    trials.sort_by_key(|t| !t.bad);
    let (log, log_notes) = wire_log(transcript, &cited_by);
    let mut chips = Counts::of(&case.trials).nonzero_chips();
    chips.sort_by_key(|c| std::cmp::Reverse(Grade::of(&c.name).info.rank));
    let agent_page = format!("../{}", agent.page);
    CasePage {
        chrome: Chrome::new(
            format!("{} — {}", case.id, run.client_label()),
            "../../index.html",
            vec![
                crumb("all runs", "../../index.html"),
                crumb(run.client_label(), "../../index.html"),
                crumb(agent.key.clone(), agent_page),
                crumb(case.short_id(), ""),
            ],
        ),
        run,
        case,
        chips,
        end_ok: case.end.kind == EndKind::Completed,
        end: case.end.describe(),
        duration: model::duration(case.duration_ms),
        profile: case
            .profile
            .as_ref()
            .and_then(|p| profiles.get(p))
            .or_else(|| profiles.get(&case.agent_version()))
            .cloned(),
        trials,
        log,
        log_notes,
    }
}

fn cited_frame(index: usize, transcript: &Transcript) -> CitedFrame {
    match transcript.frame(index) {
        Some(f) => {
            let (dir_label, dir_css, _) = direction(&f.dir);
            let mut raw: String = f.raw.chars().take(CITED_CHARS).collect();
            if raw.len() < f.raw.len() {
                raw.push_str(" …");
            }
            CitedFrame {
                index,
                dir_label,
                dir_css,
                summary: f.summary(),
                raw,
                screen: f.screen().map(str::to_owned),
            }
        }
        None => CitedFrame {
            index,
            dir_label: "?".into(),
            dir_css: "unknown",
            summary: "not in the transcript".into(),
            raw: String::new(),
            screen: None,
        },
    }
}

fn log_frame(f: &Frame, cited_by: &BTreeMap<usize, Vec<String>>) -> LogFrame {
    let (dir_label, dir_css, plane) = direction(&f.dir);
    let checks = cited_by.get(&f.index).cloned().unwrap_or_default();
    LogFrame {
        index: f.index,
        time: format!("{:.3}", f.at_us as f64 / 1000.0),
        conn: if plane == "wire" {
            f.conn.to_string()
        } else {
            String::new()
        },
        dir_label,
        dir_css,
        plane,
        summary: f.summary(),
        json: f.json.is_some() && !f.raw.ends_with(" more characters)"),
        raw: f.raw.clone(),
        screen: f.screen().map(str::to_owned),
        cited: !checks.is_empty(),
        cited_by: checks,
    }
}

/// The rows of the wire log, eliding the middle of very long logs (but never a cited frame).
fn wire_log(
    transcript: &Transcript,
    cited_by: &BTreeMap<usize, Vec<String>>,
) -> (Vec<LogRow>, Vec<String>) {
    let mut notes = Vec::new();
    if let Some(missing) = &transcript.missing {
        notes.push(format!("No wire log: {missing}."));
    }
    if transcript.cut {
        notes.push(format!(
            "The transcript is longer than {} lines; the rest is in the transcript file.",
            crate::transcript::MAX_LINES
        ));
    }
    let total = transcript.lines.len();
    let keep = |pos: usize, line: &Line| -> bool {
        if total <= LOG_ROWS || pos < LOG_ROWS / 2 || pos + LOG_TAIL >= total {
            return true;
        }
        match line {
            Line::Frame(f) => cited_by.keys().any(|c| f.index.abs_diff(*c) <= LOG_CONTEXT),
            Line::Unreadable { .. } => true,
        }
    };
    let mut rows = Vec::new();
    let mut skipped = 0usize;
    for (pos, line) in transcript.lines.iter().enumerate() {
        if !keep(pos, line) {
            skipped += 1;
            continue;
        }
        if skipped > 0 {
            rows.push(gap(format!("… {skipped} frames not shown …")));
            skipped = 0;
        }
        rows.push(match line {
            Line::Frame(f) => LogRow {
                frame: Some(log_frame(f, cited_by)),
                gap: String::new(),
            },
            Line::Unreadable { line, error } => {
                gap(format!("transcript line {line} is unreadable: {error}"))
            }
        });
    }
    if skipped > 0 {
        rows.push(gap(format!("… {skipped} frames not shown …")));
    }
    if total > LOG_ROWS {
        notes.push(format!(
            "{total} frames: the middle of the log is shortened to the frames around the cited ones."
        ));
    }
    (rows, notes)
}

fn gap(text: String) -> LogRow {
    LogRow {
        frame: None,
        gap: text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_csp_allows_exactly_our_script() {
        let csp = csp();
        assert!(csp.starts_with("default-src 'none'; script-src 'sha256-"));
        let script = csp.split(';').find(|d| d.contains("script-src")).unwrap();
        assert!(!script.contains("unsafe-inline"), "{csp}");
        assert!(!JS.contains("</script"));
        assert!(!CSS.contains("</style"));
    }

    #[test]
    fn long_logs_keep_the_head_the_tail_and_the_cited_frames() {
        let lines: Vec<Line> = (0..10_000)
            .map(|i| {
                Line::Frame(Frame {
                    index: i,
                    at_us: i as u64,
                    conn: 1,
                    dir: "c2a".into(),
                    raw: "{}".into(),
                    json: Some(serde_json::json!({})),
                    invalid_utf8: false,
                    fault: None,
                })
            })
            .collect();
        let transcript = Transcript {
            lines,
            ..Transcript::default()
        };
        let cited = BTreeMap::from([(5_000, vec!["jsonrpc".to_string()])]);
        let (rows, notes) = wire_log(&transcript, &cited);
        let shown: Vec<usize> = rows
            .iter()
            .filter_map(|r| r.frame.as_ref().map(|f| f.index))
            .collect();
        assert!(shown.contains(&0) && shown.contains(&9_999) && shown.contains(&5_000));
        assert!(!shown.contains(&4_000));
        assert!(rows.iter().any(|r| r.gap.contains("frames not shown")));
        assert_eq!(notes.len(), 1);
        let cited_row = rows
            .iter()
            .filter_map(|r| r.frame.as_ref())
            .find(|f| f.index == 5_000)
            .unwrap();
        assert!(cited_row.cited);
    }
}
