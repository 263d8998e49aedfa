//! What one case run leaves behind for the checks: the transcript plus the facts about the run
//! that are not frames (how the client ended, files on disk after the run). Checks are pure
//! functions of a [`CaseRecord`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use acp_vocab::transcript::Entry;
use serde::{Deserialize, Serialize};

/// Scenario metadata the checks and reports need.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseMeta {
    /// `<agent>@<version>/<scenario>` (plus `[optionId]` for expanded runs).
    pub case_id: String,
    pub title: String,
    pub agent: String,
    pub version: String,
    pub provenance: Vec<String>,
    /// Scenario file, relative to the scenarios directory.
    pub file: String,
}

/// How the run ended: the shared vocabulary's single run-end type.
pub use acp_vocab::run_end::RunEnd;

/// Everything a check may look at.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CaseRecord {
    pub meta: CaseMeta,
    pub transcript: Vec<Entry>,
    /// True if the client spoke the control protocol (an adapter said `hello`).
    pub control_plane: bool,
    /// Commands the adapter declared in `hello` (`new_session`, `prompt`, `choose`, `cancel`);
    /// for a client without an adapter, `choose` when its profile has inputs that answer its
    /// permission prompt (`[[choose]]`), so the harness could act as its user.
    pub control_supports: Vec<String>,
    /// The case's workspace (`${cwd}`) and the outside directory (`${outside}`).
    pub workspace: PathBuf,
    pub outside: PathBuf,
    /// For every path the agent asked the client to write (`fs/write_text_file`), the file's
    /// bytes right after the run (`None` if it did not exist). Taken before the tempdir is removed.
    pub files_after: BTreeMap<PathBuf, Option<Vec<u8>>>,
    /// Every symlink under the case directory when the case ended, link path → target
    /// (absolute), so a check can resolve a request's path as the disk did after the tempdir is
    /// gone (`${cwd}/docs/x` through a link to `${outside}` leaves the workspace). Taken next to
    /// `files_after`; left out of the JSON when empty, so older records still read.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub symlinks: BTreeMap<PathBuf, PathBuf>,
    pub end: RunEnd,
    /// Last lines of the client's stderr (bounded).
    pub stderr_tail: String,
    /// One command line that re-runs just this case.
    pub repro: String,
}
