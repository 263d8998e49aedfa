//! The outputs of `acp-harness run`, written as its cases finish, so that a run holds no more
//! than the cases in flight whatever its length (docs/performance.md, "Number of cases").
//!
//! When a case ends its transcript goes to `transcripts/`, and its run.json entry to a spool
//! file next to run.json; what stays in memory is where that entry is, the grade counts, the
//! failing trials' text and the trials a baseline may still regrade. At the end run.json is
//! written from the spool in the order of the cases (byte for byte what serialising every case
//! at once wrote), the spool is removed, and the report is made from run.json and the
//! transcripts on disk.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::ser::{Error as _, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::baseline::Baseline;
use crate::output::GradeTable;
use crate::run_json::{self, CaseJson, ClientSaid, RunHeader, ScenarioInfo, TrialJson};
use crate::runner::CaseResult;
use acp_judge::checks::{Grade, Trial};

/// Where the run.json entries of finished cases wait for run.json, inside `--out`.
const SPOOL: &str = ".cases.spool";

/// How the baseline takes part: applied at the end (trials it names are held until then), and
/// with `bless` first rewritten from this run's failures.
pub struct BaselineUse<'a> {
    pub baseline: &'a Baseline,
    pub bless: bool,
}

/// A trial held back for the baseline: its place in the run and what it is counted under.
struct Held {
    case: usize,
    position: usize,
    agent: String,
    version: String,
    case_id: String,
    trial: Trial,
}

/// A failing trial, as the end of a run prints it.
pub struct Failing {
    pub case_id: String,
    pub check: &'static str,
    pub grade: Grade,
    pub text: String,
}

/// The writer of one run's outputs.
pub struct RunWriter<'a> {
    out: PathBuf,
    scenarios: &'a ScenarioInfo,
    baseline: Option<BaselineUse<'a>>,
    strict: bool,
    spool: BufWriter<File>,
    spooled: u64,
    /// By the case's place in the run: where its entry is in the spool.
    entries: Vec<Option<(u64, usize)>>,
    table: GradeTable,
    said: ClientSaid,
    /// By (case, trial) place, so they print in the order of the run.
    failing: BTreeMap<(usize, usize), Failing>,
    held: Vec<Held>,
    /// The first error writing a case: the cases after it are dropped, and `finish` returns it.
    error: Option<anyhow::Error>,
}

/// What the end of a run shows besides the files.
pub struct Finished {
    pub table: GradeTable,
    pub failing: Vec<Failing>,
    /// The baseline `--bless` wrote.
    pub blessed: Option<Baseline>,
}

impl<'a> RunWriter<'a> {
    /// Starts the outputs in `out` (created if needed).
    pub fn create(
        out: &Path,
        scenarios: &'a ScenarioInfo,
        baseline: Option<BaselineUse<'a>>,
        strict: bool,
    ) -> Result<Self> {
        std::fs::create_dir_all(out.join("transcripts"))
            .with_context(|| format!("cannot create output directory {}", out.display()))?;
        let path = out.join(SPOOL);
        let spool = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(RunWriter {
            out: out.to_owned(),
            scenarios,
            baseline,
            strict,
            spool: BufWriter::new(spool),
            spooled: 0,
            entries: Vec::new(),
            table: GradeTable::default(),
            said: ClientSaid::default(),
            failing: BTreeMap::new(),
            held: Vec::new(),
            error: None,
        })
    }

    /// Takes the finished case at `index` (its place in the run): its transcript is written and
    /// dropped, its entry spooled. Its trials are the ones to report (the filter applied), not
    /// yet regraded by the baseline. After an error writing, cases are dropped (the run goes on,
    /// so that its clients are reaped) and [`RunWriter::finish`] returns the error.
    pub fn add(&mut self, index: usize, result: CaseResult) {
        if self.error.is_none() {
            self.error = self.spool(index, result).err();
        }
    }

    fn spool(&mut self, index: usize, mut result: CaseResult) -> Result<()> {
        let record = &mut result.record;
        self.said.add(index, &record.transcript);
        run_json::write_transcript(&self.out, &record.meta.case_id, &record.transcript)?;
        // The entry counts the transcript's frames; the frames themselves are on disk now.
        let case = run_json::case_json(&result, self.scenarios);
        result.record.transcript = Vec::new();
        let start = self.spooled;
        let line = serde_json::to_vec(&case)?;
        self.spool
            .write_all(&line)
            .context("cannot write the run's spool")?;
        self.spooled += line.len() as u64;
        if self.entries.len() <= index {
            self.entries.resize(index + 1, None);
        }
        self.entries[index] = Some((start, line.len()));
        let meta = &result.record.meta;
        for (position, trial) in result.trials.into_iter().enumerate() {
            if self.holds(&meta.case_id, &trial) {
                self.held.push(Held {
                    case: index,
                    position,
                    agent: meta.agent.clone(),
                    version: meta.version.clone(),
                    case_id: meta.case_id.clone(),
                    trial,
                });
            } else {
                self.count(
                    index,
                    position,
                    &meta.agent,
                    &meta.version,
                    &meta.case_id,
                    &trial,
                );
            }
        }
        Ok(())
    }

    /// A trial the baseline may regrade at the end, or (with `--bless`) one it is made from.
    fn holds(&self, case_id: &str, trial: &Trial) -> bool {
        self.baseline.as_ref().is_some_and(|b| {
            b.baseline.covers(case_id, trial.check)
                || (b.bless && trial.grade.is_failing(self.strict))
        })
    }

    fn count(
        &mut self,
        case: usize,
        position: usize,
        agent: &str,
        version: &str,
        case_id: &str,
        trial: &Trial,
    ) {
        self.table.add(agent, version, trial.grade);
        if trial.grade.is_failing(self.strict) {
            self.failing.insert(
                (case, position),
                Failing {
                    case_id: case_id.to_owned(),
                    check: trial.check,
                    grade: trial.grade,
                    text: trial.failure_text(),
                },
            );
        }
    }

    /// Applies the baseline (blessing it first with `--bless`, which writes it), then writes
    /// run.json from the spool and removes the spool.
    pub fn finish(mut self, header: RunHeader<'_>) -> Result<Finished> {
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        // The baseline reads (case id, trial) pairs; where each goes back is kept aside.
        let (places, mut held): (Vec<_>, Vec<_>) = std::mem::take(&mut self.held)
            .into_iter()
            .map(|h| {
                (
                    (h.case, h.position, h.agent, h.version),
                    (h.case_id, h.trial),
                )
            })
            .unzip();
        let blessed = match &self.baseline {
            Some(BaselineUse {
                baseline,
                bless: true,
            }) => {
                let pairs = held.iter().map(|(id, t)| (id.as_str(), t));
                let blessed = baseline.blessed_from(pairs, self.strict);
                blessed.write()?;
                Some(blessed)
            }
            _ => None,
        };
        if let Some(b) = blessed
            .as_ref()
            .or(self.baseline.as_ref().map(|b| b.baseline))
        {
            b.apply_to(&mut held);
        }
        let mut regraded: BTreeMap<usize, Vec<(usize, TrialJson)>> = BTreeMap::new();
        for ((case_id, trial), (case, position, agent, version)) in held.iter().zip(places) {
            self.count(case, position, &agent, &version, case_id, trial);
            regraded
                .entry(case)
                .or_default()
                .push((position, run_json::trial_json(case_id, trial)));
        }
        self.spool.flush().context("cannot write the run's spool")?;
        let summary = run_json::summary(self.table.totals());
        let run = run_json::header_json(header, self.scenarios, &self.said, summary);
        let cases = Spooled {
            file: self.spool.get_ref(),
            entries: &self.entries,
            regraded: &regraded,
        };
        let path = self.out.join("run.json");
        let write = || -> Result<()> {
            let mut file = BufWriter::new(File::create(&path)?);
            serde_json::to_writer_pretty(&mut file, &run.with_cases(cases))?;
            file.flush()?;
            Ok(())
        };
        write().with_context(|| format!("cannot write {}", path.display()))?;
        let spool = self.out.join(SPOOL);
        std::fs::remove_file(&spool)
            .with_context(|| format!("cannot remove {}", spool.display()))?;
        Ok(Finished {
            table: self.table,
            failing: self.failing.into_values().collect(),
            blessed,
        })
    }
}

/// The spooled cases, in the order of the run, read back one at a time as run.json is
/// written; the trials the baseline regraded replace the spooled ones.
struct Spooled<'s> {
    file: &'s File,
    entries: &'s [Option<(u64, usize)>],
    regraded: &'s BTreeMap<usize, Vec<(usize, TrialJson)>>,
}

impl Spooled<'_> {
    fn case(&self, index: usize, (start, len): (u64, usize)) -> std::io::Result<CaseJson> {
        let mut bytes = vec![0; len];
        self.file.read_exact_at(&mut bytes, start)?;
        let mut case: CaseJson = serde_json::from_slice(&bytes)?;
        for (position, trial) in self.regraded.get(&index).into_iter().flatten() {
            if let Some(slot) = case.trials.get_mut(*position) {
                *slot = trial.clone();
            }
        }
        Ok(case)
    }
}

impl Serialize for Spooled<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let written = self.entries.iter().flatten().count();
        let mut seq = serializer.serialize_seq(Some(written))?;
        for (index, entry) in self.entries.iter().enumerate() {
            if let Some(entry) = entry {
                let case = self.case(index, *entry).map_err(S::Error::custom)?;
                seq.serialize_element(&case)?;
            }
        }
        seq.end()
    }
}

/// The report of the run in `out` (`out/report/`), made from its run.json and transcripts.
pub fn write_report(out: &Path) -> Result<acp_reports::Written, acp_reports::ReportError> {
    // Opened, not loaded: the report reads one case at a time, however long the run.
    let run = acp_reports::open_run(&out.join("run.json"))?;
    acp_reports::write_report(&[run], &out.join("report"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_spec::ClientSpec;
    use crate::runner::RunConfig;
    use acp_judge::checks::testkit;
    use std::time::Duration;

    /// A trial whose message, unless it passed, names its check.
    fn trial(check: &'static str, grade: Grade) -> Trial {
        let message = match grade {
            Grade::Pass => String::new(),
            _ => format!("{check} went wrong"),
        };
        crate::baseline::tests::trial(check, grade, &message)
    }

    /// A finished case whose client says `initialize` with `clientInfo` named after the case.
    fn result(case_id: &str, trials: Vec<Trial>) -> CaseResult {
        let case = testkit::Case::new();
        case.c2a(
            serde_json::json!({"jsonrpc":"2.0","id":0,"method":"initialize",
            "params":{"clientInfo":{"name":case_id}}}),
        );
        case.rec.record(
            1,
            acp_vocab::transcript::Direction::AgentToClient,
            b"not json",
        );
        let mut record = case.record();
        record.meta.case_id = case_id.to_owned();
        CaseResult {
            record,
            trials,
            duration: Duration::from_millis(7),
            timing: Default::default(),
        }
    }

    fn header<'a>(client: &'a ClientSpec, cfg: &'a RunConfig) -> RunHeader<'a> {
        RunHeader::plain(client, cfg, 1, 2)
    }

    fn setup() -> (ClientSpec, RunConfig) {
        let client = ClientSpec::from_argv(vec!["client".into()]).unwrap();
        let cfg = RunConfig {
            step_timeout: Duration::from_secs(1),
            case_timeout: Duration::from_secs(1),
            settle_timeout: None,
            max_frame: 1 << 20,
            jobs: 2,
            scenarios_dir: PathBuf::from("scenarios"),
            fake_agent: PathBuf::new(),
            grade: true,
        };
        (client, cfg)
    }

    /// Grades of each case's trials in the run.json written to `dir`.
    fn grades(dir: &Path) -> Vec<Vec<Grade>> {
        let run = acp_reports::load_run(&dir.join("run.json")).unwrap().run;
        run.cases
            .iter()
            .map(|c| c.trials.iter().map(|t| t.grade.known().unwrap()).collect())
            .collect()
    }

    #[test]
    fn run_json_from_the_spool_is_what_serialising_the_cases_at_once_wrote() {
        let (client, cfg) = setup();
        let dir = tempfile::tempdir().unwrap();
        let scenarios = ScenarioInfo::default();
        let results = [
            result("a@1/x", vec![trial("fs", Grade::Pass)]),
            result(
                "a@1/y",
                vec![trial("fs", Grade::Fail), trial("jsonrpc", Grade::Pass)],
            ),
            result("b@2/z", vec![trial("fs", Grade::Warn)]),
        ];
        let mut writer = RunWriter::create(dir.path(), &scenarios, None, false).unwrap();
        // Cases end out of order; the run's order is the one they were given in.
        for index in [2, 0, 1] {
            writer.add(index, results[index].clone());
        }
        let finished = writer.finish(header(&client, &cfg)).unwrap();

        let mut said = ClientSaid::default();
        for (index, r) in results.iter().enumerate().rev() {
            said.add(index, &r.record.transcript);
        }
        assert_eq!(said.reported(), Some(serde_json::json!({"name": "a@1/x"})));
        let mut table = GradeTable::default();
        for r in &results {
            for t in &r.trials {
                table.add(&r.record.meta.agent, &r.record.meta.version, t.grade);
            }
        }
        let at_once = run_json::header_json(
            header(&client, &cfg),
            &scenarios,
            &said,
            run_json::summary(table.totals()),
        )
        .with_cases(
            results
                .iter()
                .map(|r| run_json::case_json(r, &scenarios))
                .collect::<Vec<_>>(),
        );
        let written = std::fs::read_to_string(dir.path().join("run.json")).unwrap();
        assert_eq!(written, serde_json::to_string_pretty(&at_once).unwrap());
        assert!(!dir.path().join(SPOOL).exists(), "the spool is removed");
        assert_eq!(finished.table.render(), table.render());
        let failing: Vec<_> = finished.failing.iter().map(|f| &f.case_id).collect();
        assert_eq!(failing, ["a@1/y"]);
        // Each transcript is on disk, frame for frame.
        for r in &results {
            let file = dir
                .path()
                .join(run_json::transcript_file(&r.record.meta.case_id));
            let read = acp_reports::transcript::read(&file);
            assert_eq!(read.frames().count(), r.record.transcript.len());
        }
    }

    #[test]
    fn the_baseline_regrades_at_the_end_what_it_covers() {
        let (client, cfg) = setup();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("baseline.toml");
        std::fs::write(&path, "[expected.\"fs\"]\nreason = \"r\"\n").unwrap();
        let baseline = Baseline::load(&path).unwrap();
        let scenarios = ScenarioInfo::default();
        let run = |results: &[CaseResult], out: &Path| {
            let using = BaselineUse {
                baseline: &baseline,
                bless: false,
            };
            let mut writer = RunWriter::create(out, &scenarios, Some(using), false).unwrap();
            for (index, r) in results.iter().enumerate().rev() {
                writer.add(index, r.clone());
            }
            writer.finish(header(&client, &cfg)).unwrap()
        };
        // A failure anywhere keeps the entry for every case: the fail is expected, the pass
        // that the case after it has is not stale.
        let out = dir.path().join("failing");
        let finished = run(
            &[
                result("a@1/x", vec![trial("fs", Grade::Fail)]),
                result("a@1/y", vec![trial("fs", Grade::Pass)]),
            ],
            &out,
        );
        assert_eq!(grades(&out), [[Grade::Expected], [Grade::Pass]]);
        assert!(finished.failing.is_empty());
        // No failure left: every trial it names is stale, and fails the run.
        let out = dir.path().join("fixed");
        let finished = run(
            &[
                result(
                    "a@1/x",
                    vec![trial("fs", Grade::Pass), trial("jsonrpc", Grade::Pass)],
                ),
                result("a@1/y", vec![trial("fs", Grade::Pass)]),
            ],
            &out,
        );
        assert_eq!(
            grades(&out),
            [vec![Grade::Stale, Grade::Pass], vec![Grade::Stale]]
        );
        let failing: Vec<_> = finished
            .failing
            .iter()
            .map(|f| (f.case_id.as_str(), f.grade))
            .collect();
        assert_eq!(failing, [("a@1/x", Grade::Stale), ("a@1/y", Grade::Stale)]);
        let summary = acp_reports::load_run(&out.join("run.json"))
            .unwrap()
            .run
            .summary;
        let count = |g: Grade| summary[g.as_str()];
        assert_eq!((count(Grade::Stale), count(Grade::Pass)), (2, 1));
    }
}
