//! Case verdicts shared between the processes of one cargo-nextest run.
//!
//! `cargo test` runs every conformance trial (`<case>::<check>`) as a thread of one process, and
//! the trials of a case share one play of it. cargo-nextest runs every trial in a process of its
//! own, so without sharing, a case with 18 checks would be played 18 times. Under nextest
//! (`NEXTEST_RUN_ID` is set) the first process that needs a case plays it, holding a lock file,
//! and writes the graded verdicts of all its checks; every other process of the same run waits on
//! the lock and reads them. `--partition hash:K/N` spreads a case's trials over the shards, so
//! each shard plays the cases it holds at least one trial of, once.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use acp_judge::checks::Grade;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

/// One check's verdict on a case, after the baseline: what the trial reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub check: String,
    pub grade: Grade,
    /// `Trial::failure_text`: the rule, then the finding (empty on a pass).
    pub text: String,
}

/// The directory that one nextest run's processes share.
#[derive(Debug, Clone)]
pub struct RunCache {
    dir: PathBuf,
}

/// Run directories older than this are removed when a new run starts (a run that was killed
/// leaves its directory behind).
const STALE_AFTER: Duration = Duration::from_secs(24 * 3600);

impl RunCache {
    /// The cache of the current nextest run, or `None` outside nextest.
    pub fn from_env() -> Option<RunCache> {
        let run_id = std::env::var("NEXTEST_RUN_ID").ok()?;
        Some(RunCache::under(
            &std::env::temp_dir().join("acp-harness-nextest"),
            &run_id,
        ))
    }

    /// The cache of run `run_id` under `root`.
    pub fn under(root: &Path, run_id: &str) -> RunCache {
        let safe: String = run_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        RunCache {
            dir: root.join(safe),
        }
    }

    /// The verdicts of `case_id`: read from the cache, or made by `play` (then stored for the
    /// run's other processes). Only one process plays a case; the others wait for it.
    pub fn get_or_play(
        &self,
        case_id: &str,
        play: impl FnOnce() -> Vec<Verdict>,
    ) -> Result<Vec<Verdict>, String> {
        self.create_dir()?;
        let stem = format!("{:016x}", crate::shard::case_hash(case_id));
        let lock_path = self.dir.join(format!("{stem}.lock"));
        let verdicts_path = self.dir.join(format!("{stem}.json"));
        let lock_file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| format!("cannot open {}: {e}", lock_path.display()))?;
        // Released when dropped, and by the kernel if this process dies while playing.
        let _lock = Flock::lock(lock_file, FlockArg::LockExclusive)
            .map_err(|(_, e)| format!("cannot lock {}: {e}", lock_path.display()))?;
        if let Some(stored) = read_stored(&verdicts_path, case_id)? {
            return Ok(stored);
        }
        let verdicts = play();
        write_stored(&verdicts_path, case_id, &verdicts)?;
        Ok(verdicts)
    }

    fn create_dir(&self) -> Result<(), String> {
        if self.dir.is_dir() {
            return Ok(());
        }
        if let Some(root) = self.dir.parent() {
            remove_stale_runs(root);
        }
        std::fs::create_dir_all(&self.dir)
            .map_err(|e| format!("cannot create {}: {e}", self.dir.display()))
    }
}

/// What a cache file holds: the case id (a guard against hash collisions) and its verdicts.
#[derive(Serialize, Deserialize)]
struct Stored {
    case_id: String,
    verdicts: Vec<Verdict>,
}

fn read_stored(path: &Path, case_id: &str) -> Result<Option<Vec<Verdict>>, String> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let stored: Stored = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{} is not a verdict file: {e}", path.display()))?;
    if stored.case_id != case_id {
        return Err(format!(
            "{} holds case {:?}, not {case_id:?} (hash collision)",
            path.display(),
            stored.case_id
        ));
    }
    Ok(Some(stored.verdicts))
}

fn write_stored(path: &Path, case_id: &str, verdicts: &[Verdict]) -> Result<(), String> {
    let stored = Stored {
        case_id: case_id.to_string(),
        verdicts: verdicts.to_vec(),
    };
    let json = serde_json::to_vec(&stored).map_err(|e| e.to_string())?;
    // Written whole, then renamed: a reader never sees half a file.
    let partial = path.with_extension("json.partial");
    let write = || -> std::io::Result<()> {
        let mut file = File::create(&partial)?;
        file.write_all(&json)?;
        std::fs::rename(&partial, path)
    };
    write().map_err(|e| format!("cannot write {}: {e}", path.display()))
}

fn remove_stale_runs(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let now = SystemTime::now();
    for entry in entries.flatten() {
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| now.duration_since(t).ok())
            .is_some_and(|age| age > STALE_AFTER);
        if old {
            // Best effort: another run may be removing it too.
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn verdict(check: &str) -> Verdict {
        Verdict {
            check: check.into(),
            grade: Grade::Fail,
            text: "R1 (MUST) …\nfinding".into(),
        }
    }

    #[test]
    fn a_case_is_played_once_per_run_however_many_ask_at_once() {
        let root = tempfile::tempdir().unwrap();
        let plays = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (root, plays) = (root.path().to_path_buf(), plays.clone());
                std::thread::spawn(move || {
                    // A cache per thread: each stands for a process of its own.
                    RunCache::under(&root, "run-1").get_or_play("agent@1/case", || {
                        plays.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(50));
                        vec![verdict("jsonrpc"), verdict("schema")]
                    })
                })
            })
            .collect();
        for thread in threads {
            let got = thread.join().unwrap().unwrap();
            assert_eq!(got, vec![verdict("jsonrpc"), verdict("schema")]);
        }
        assert_eq!(plays.load(Ordering::SeqCst), 1);
        // Another run plays it again; another case is played on its own.
        let again = RunCache::under(root.path(), "run-2");
        let mut played = false;
        again
            .get_or_play("agent@1/case", || {
                played = true;
                vec![]
            })
            .unwrap();
        assert!(played);
    }

    #[test]
    fn a_file_of_another_case_or_not_json_is_an_error_not_a_verdict() {
        let root = tempfile::tempdir().unwrap();
        let cache = RunCache::under(root.path(), "run/../x");
        assert!(cache.dir.starts_with(root.path()), "{:?}", cache.dir);
        cache.get_or_play("a", || vec![verdict("fs")]).unwrap();
        let stem = format!("{:016x}", crate::shard::case_hash("b"));
        std::fs::write(
            cache.dir.join(format!("{stem}.json")),
            r#"{"case_id":"not-b","verdicts":[]}"#,
        )
        .unwrap();
        let err = cache.get_or_play("b", Vec::new).unwrap_err();
        assert!(err.contains("hash collision"), "{err}");
        std::fs::write(cache.dir.join(format!("{stem}.json")), "{").unwrap();
        let err = cache.get_or_play("b", Vec::new).unwrap_err();
        assert!(err.contains("is not a verdict file"), "{err}");
    }
}
