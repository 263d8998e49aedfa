//! Loading run.json files and, through them, the transcripts they reference.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

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
    Junit(#[from] quick_junit::SerializeError),
    #[error(
        "{path} is not empty and holds no earlier report (no index.html written by acp-reports): refusing to write the report into it; name an empty or new directory"
    )]
    NotAReportDir { path: PathBuf },
    #[error("{path} holds no report written by acp-reports (no index.html of ours in it)")]
    NotAReport { path: PathBuf },
    #[error("cannot merge {path} with the other shards: {reason}")]
    Merge { path: PathBuf, reason: String },
}

/// A run.json and the directory its transcripts are relative to.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// The run.json path as given.
    pub path: PathBuf,
    pub run: RunJson,
    /// For a run merged from shards ([`crate::merge`]): the directory each case's transcript path
    /// is relative to (its shard's), by case id. Empty for a run read from one run.json.
    case_dirs: BTreeMap<String, PathBuf>,
}

impl LoadedRun {
    /// Wraps a run already in memory whose transcripts live relative to `path`'s directory.
    pub fn new(path: impl Into<PathBuf>, run: RunJson) -> Self {
        LoadedRun {
            path: path.into(),
            run,
            case_dirs: BTreeMap::new(),
        }
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
    }
}
