//! Loading run.json files and, through them, the transcripts they reference.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

use acp_vocab::family::Family;

use crate::run::{CaseJson, RUN_SCHEMA, RunJson};
use crate::transcript::{self, Transcript};

/// Why a report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a run.json: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path} has schema {found:?}; this report reads {RUN_SCHEMA:?}")]
    Schema { path: PathBuf, found: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot render {what}: {source}")]
    Render { what: String, source: askama::Error },
    #[error("cannot write JUnit XML: {0}")]
    Junit(std::io::Error),
    #[error(
        "{path} is not empty and holds no earlier report (no index.html written by acp-reports): refusing to write the report into it; name an empty or new directory"
    )]
    NotAReportDir { path: PathBuf },
    #[error("{path} holds no report written by acp-reports (no index.html of ours in it)")]
    NotAReport { path: PathBuf },
    #[error("cannot merge {path} with the other shards: {reason}")]
    Merge { path: PathBuf, reason: String },
}

/// The fields of a case that say which agent page it is on and where.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct CaseKey {
    pub id: String,
    pub agent: String,
    pub version: String,
    #[serde(default)]
    pub family: Option<Family>,
}

impl CaseKey {
    fn of(case: &CaseJson) -> CaseKey {
        CaseKey {
            id: case.id.clone(),
            agent: case.agent.clone(),
            version: case.version.clone(),
            family: case.family,
        }
    }

    /// `agent@version`, as [`CaseJson::agent_version`].
    pub fn agent_version(&self) -> String {
        format!("{}@{}", self.agent, self.version)
    }
}

/// A run.json and the directory its transcripts are relative to.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The run.json path as given.
    pub path: PathBuf,
    /// The run. Its `cases` are empty for a run opened with [`open_run`], whose cases stay on
    /// disk: read them with [`LoadedRun::case`] (every reader of a run does).
    pub run: RunJson,
    /// For a run merged from shards ([`crate::merge`]): the directory each case's transcript path
    /// is relative to (its shard's), by case id. Empty for a run read from one run.json.
    case_dirs: BTreeMap<String, PathBuf>,
    /// Where the cases of a run opened with [`open_run`] are in its run.json.
    on_disk: Option<CaseSpans>,
}

/// The byte ranges of the elements of run.json's `cases` array: element `i` is the JSON text
/// from `starts[i]` up to the next start (or `end`), after the comma and the white space that
/// lead it.
#[derive(Debug, Clone)]
struct CaseSpans {
    starts: Vec<u64>,
    end: u64,
}

impl CaseSpans {
    /// The JSON text of case `index`, read from `path`.
    fn read(&self, path: &Path, index: usize) -> Result<Vec<u8>, ReportError> {
        let start = self.starts[index];
        let end = self.starts.get(index + 1).copied().unwrap_or(self.end);
        let read = |source| ReportError::Read {
            path: path.to_owned(),
            source,
        };
        let mut file = std::fs::File::open(path).map_err(read)?;
        file.seek(SeekFrom::Start(start)).map_err(read)?;
        let mut text = vec![0; usize::try_from(end - start).unwrap_or(usize::MAX)];
        file.read_exact(&mut text).map_err(read)?;
        let at = text
            .iter()
            .position(|b| !matches!(b, b',' | b' ' | b'\n' | b'\r' | b'\t'))
            .unwrap_or(text.len());
        text.drain(..at);
        Ok(text)
    }
}

impl LoadedRun {
    /// Wraps a run already in memory whose transcripts live relative to `path`'s directory.
    pub fn new(path: impl Into<PathBuf>, run: RunJson) -> Self {
        LoadedRun {
            path: path.into(),
            run,
            case_dirs: BTreeMap::new(),
            on_disk: None,
        }
    }

    /// The number of cases.
    pub fn case_count(&self) -> usize {
        match &self.on_disk {
            Some(spans) => spans.starts.len(),
            None => self.run.cases.len(),
        }
    }

    /// Case `index` (in run.json's order): borrowed from memory, or read from run.json.
    pub fn case(&self, index: usize) -> Result<Cow<'_, CaseJson>, ReportError> {
        match &self.on_disk {
            None => Ok(Cow::Borrowed(&self.run.cases[index])),
            Some(spans) => self.parse(&spans.read(&self.path, index)?).map(Cow::Owned),
        }
    }

    /// What case `index` is of, and its place in a report: a cheaper read than [`Self::case`].
    pub fn case_key(&self, index: usize) -> Result<CaseKey, ReportError> {
        match &self.on_disk {
            None => Ok(CaseKey::of(&self.run.cases[index])),
            Some(spans) => self.parse(&spans.read(&self.path, index)?),
        }
    }

    fn parse<T: serde::de::DeserializeOwned>(&self, text: &[u8]) -> Result<T, ReportError> {
        serde_json::from_slice(text).map_err(|source| ReportError::Parse {
            path: self.path.clone(),
            source,
        })
    }

    /// The same run with every case in memory (a merge of shards needs them all).
    pub fn into_memory(mut self) -> Result<LoadedRun, ReportError> {
        if self.on_disk.is_some() {
            let cases = (0..self.case_count())
                .map(|i| self.case(i).map(Cow::into_owned))
                .collect::<Result<Vec<_>, _>>()?;
            self.run.cases = cases;
            self.on_disk = None;
        }
        Ok(self)
    }

    /// The same run, each case's transcript read relative to the directory given for its id.
    pub(crate) fn with_case_dirs(mut self, case_dirs: BTreeMap<String, PathBuf>) -> Self {
        self.case_dirs = case_dirs;
        self
    }

    /// True for a run merged from shards: its cases come from several run.json files.
    pub fn is_merged(&self) -> bool {
        !self.case_dirs.is_empty()
    }

    /// The directory `case`'s relative paths start from.
    pub fn case_dir(&self, case: &CaseJson) -> &Path {
        self.case_dirs
            .get(&case.id)
            .map_or_else(|| self.dir(), PathBuf::as_path)
    }

    /// The directory the run's relative paths start from.
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// A case's transcript, read from its file. Paths that leave the run's directory are
    /// refused: a report only ever reads the files the run wrote.
    pub fn transcript(&self, case: &CaseJson) -> Transcript {
        let Some(rel) = transcript_path(case) else {
            return Transcript {
                missing: Some(format!(
                    "transcript path {:?} is not inside the run's directory",
                    case.transcript
                )),
                ..Transcript::default()
            };
        };
        transcript::read(&self.case_dir(case).join(rel))
    }
}

/// `case`'s transcript path, if it stays inside the run's directory (a report only ever reads
/// the files the run wrote).
pub(crate) fn transcript_path(case: &CaseJson) -> Option<&Path> {
    let rel = Path::new(&case.transcript);
    let inside = rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    (!case.transcript.is_empty() && inside).then_some(rel)
}

/// The one field of a run.json read before the rest.
#[derive(serde::Deserialize)]
struct Head {
    #[serde(default)]
    schema: serde_json::Value,
}

/// Reads and checks one run.json.
pub fn load_run(path: &Path) -> Result<LoadedRun, ReportError> {
    let text = std::fs::read(path).map_err(|source| ReportError::Read {
        path: path.to_owned(),
        source,
    })?;
    // Check the schema first, so a future format is named as such and not as a parse error.
    // Only that field is kept: a whole `Value` of a long run's file would be several times the
    // size of the run itself (docs/performance.md, "Number of cases").
    if let Ok(head) = serde_json::from_slice::<Head>(&text) {
        let found = head.schema.as_str().unwrap_or("");
        if found != RUN_SCHEMA {
            return Err(ReportError::Schema {
                path: path.to_owned(),
                found: found.to_owned(),
            });
        }
    }
    let run = serde_json::from_slice(&text).map_err(|source| ReportError::Parse {
        path: path.to_owned(),
        source,
    })?;
    Ok(LoadedRun::new(path, run))
}

/// Opens one run.json without keeping its cases: reads it once, streaming, for the rest of the
/// run and for where each case is; [`LoadedRun::case`] then reads one case at a time. The
/// memory a report needs so stays the same however many cases the run has
/// (docs/performance.md, "Number of cases").
pub fn open_run(path: &Path) -> Result<LoadedRun, ReportError> {
    let file = std::fs::File::open(path).map_err(|source| ReportError::Read {
        path: path.to_owned(),
        source,
    })?;
    let consumed = Cell::new(0u64);
    let reader = Counted {
        inner: BufReader::new(file),
        consumed: &consumed,
    };
    let parse = |source| ReportError::Parse {
        path: path.to_owned(),
        source,
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let (mut head, spans) = RunSeed {
        consumed: &consumed,
    }
    .deserialize(&mut de)
    .map_err(parse)?;
    de.end().map_err(parse)?;
    // Checked before the rest, so a future format is named as such and not as a parse error.
    let found = head.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if found != RUN_SCHEMA {
        return Err(ReportError::Schema {
            path: path.to_owned(),
            found: found.to_owned(),
        });
    }
    let Some(spans) = spans else {
        return Err(parse(serde::de::Error::missing_field("cases")));
    };
    head.insert("cases".into(), serde_json::Value::Array(Vec::new()));
    let run = serde_json::from_value(serde_json::Value::Object(head)).map_err(parse)?;
    let mut loaded = LoadedRun::new(path, run);
    loaded.on_disk = Some(spans);
    Ok(loaded)
}

/// [`open_run`] for several run.json files, failing on the first that cannot be read.
pub fn open_runs<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<LoadedRun>, ReportError> {
    paths.iter().map(|p| open_run(p.as_ref())).collect()
}

/// A reader that counts the bytes read through it. serde_json reads a reader one byte at a
/// time and looks ahead only inside a value, so between two elements of an array the count is
/// exactly where the last element ended.
struct Counted<'a, R> {
    inner: R,
    consumed: &'a Cell<u64>,
}

impl<R: Read> Read for Counted<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.set(self.consumed.get() + n as u64);
        Ok(n)
    }
}

/// A run.json's top-level object: every field but `cases` as JSON, and where the cases are.
struct RunSeed<'a> {
    consumed: &'a Cell<u64>,
}

type HeadFields = serde_json::Map<String, serde_json::Value>;

impl<'de> DeserializeSeed<'de> for RunSeed<'_> {
    type Value = (HeadFields, Option<CaseSpans>);

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for RunSeed<'_> {
    type Value = (HeadFields, Option<CaseSpans>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a run.json object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut head = HeadFields::new();
        let mut spans = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "cases" {
                spans = Some(map.next_value_seed(CasesSeed {
                    consumed: self.consumed,
                })?);
            } else {
                head.insert(key, map.next_value()?);
            }
        }
        Ok((head, spans))
    }
}

/// The `cases` array, skipped element by element, noting where each one ends.
struct CasesSeed<'a> {
    consumed: &'a Cell<u64>,
}

impl<'de> DeserializeSeed<'de> for CasesSeed<'_> {
    type Value = CaseSpans;

    fn deserialize<D: serde::Deserializer<'de>>(self, de: D) -> Result<Self::Value, D::Error> {
        de.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for CasesSeed<'_> {
    type Value = CaseSpans;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an array of cases")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        // Called right after the `[`: the first case starts here.
        let mut starts = Vec::new();
        let mut start = self.consumed.get();
        while seq.next_element::<IgnoredAny>()?.is_some() {
            starts.push(start);
            start = self.consumed.get();
        }
        Ok(CaseSpans { starts, end: start })
    }
}

/// Reads several run.json files, failing on the first that cannot be read.
pub fn load_runs<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<LoadedRun>, ReportError> {
    paths.iter().map(|p| load_run(p.as_ref())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_files_name_the_path_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        std::fs::write(&path, "{").unwrap();
        let err = load_run(&path).unwrap_err().to_string();
        assert!(err.contains("is not a run.json"), "{err}");
        std::fs::write(&path, r#"{"schema":"acp-harness/run/v9"}"#).unwrap();
        let err = load_run(&path).unwrap_err().to_string();
        assert!(err.contains("acp-harness/run/v9"), "{err}");
        let err = load_run(&dir.path().join("nope.json"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot read"), "{err}");
        for open in [open_run(&dir.path().join("nope.json")), open_run(&path)] {
            assert!(open.is_err());
        }
        std::fs::write(&path, r#"{"schema":"acp-harness/run/v9","cases":[{}]}"#).unwrap();
        let err = open_run(&path).unwrap_err().to_string();
        assert!(err.contains("acp-harness/run/v9"), "{err}");
    }

    #[test]
    fn an_opened_run_reads_each_case_as_loading_it_whole_does() {
        let dir = tempfile::tempdir().unwrap();
        let case = |id: &str| {
            serde_json::json!({
                "id": id, "title": "t", "agent": "a", "version": "1", "file": "f",
                "provenance": [], "end": {"kind": "completed"}, "duration_ms": 1,
                "transcript": "x", "frames": 0, "stderr_tail": "[, ]", "repro": "", "trials": []
            })
        };
        let run = serde_json::json!({
            "schema": RUN_SCHEMA, "harness": {"name": "h", "version": "1"}, "acp_schema": "s",
            "client": {"name": "c", "source": "s", "argv": [], "reported": null},
            "config": {"step_timeout_ms": 1, "case_timeout_ms": 1, "jobs": 1, "strict": false,
                "filter": null, "scenarios_dir": "d"},
            "started_unix_ms": 0, "duration_ms": 0, "summary": {},
            "cases": [case("a@1/x"), case("a@1/y]"), case("a@1/z")]
        });
        let path = dir.path().join("run.json");
        // Pretty and compact: the spans hold whatever white space run.json has.
        for text in [
            serde_json::to_string_pretty(&run).unwrap(),
            serde_json::to_string(&run).unwrap(),
        ] {
            std::fs::write(&path, text).unwrap();
            let whole = load_run(&path).unwrap();
            let opened = open_run(&path).unwrap();
            assert!(opened.run.cases.is_empty());
            assert_eq!(opened.case_count(), 3);
            for (i, case) in whole.run.cases.iter().enumerate() {
                assert_eq!(&*opened.case(i).unwrap(), case);
                assert_eq!(opened.case_key(i).unwrap(), whole.case_key(i).unwrap());
                assert_eq!(opened.case_key(i).unwrap().id, case.id);
            }
            let back = opened.into_memory().unwrap();
            assert_eq!(back.run, whole.run);
        }
    }
}
