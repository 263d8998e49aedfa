//! Directories a fuzz process made, removed when it exits.
//!
//! libFuzzer ends a run with `exit` (`-runs`, `-max_total_time`, the end of `-runs=0`), which runs
//! the `atexit` handlers but drops no Rust static: the long-lived clients' tempdirs (the driver is
//! a static) were left behind, one set a run: 178 after a morning of measurements, and thousands
//! over a night of `-fork` jobs. The in-process target's workspace goes the same way. A process
//! that aborts (a finding: the target panics and libFuzzer aborts) still leaves its own; nothing
//! runs then.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, Once};

use tempfile::TempDir;

/// A tempdir removed when dropped, as any, and also when the process exits without dropping it.
pub struct ExitSafeDir(TempDir);

impl ExitSafeDir {
    pub fn new(dir: TempDir) -> ExitSafeDir {
        remove_at_exit(dir.path());
        ExitSafeDir(dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for ExitSafeDir {
    fn drop(&mut self) {
        // The tempdir removes itself right after this.
        forget(self.0.path());
    }
}

/// The directories to remove, in the order registered.
struct Registry(Mutex<Vec<PathBuf>>);

impl Registry {
    const fn new() -> Registry {
        Registry(Mutex::new(Vec::new()))
    }

    fn lock(&self) -> MutexGuard<'_, Vec<PathBuf>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn add(&self, dir: &Path) {
        self.lock().push(dir.to_owned());
    }

    fn forget(&self, dir: &Path) {
        self.lock().retain(|d| d != dir);
    }

    /// `try_lock`: were a thread to hold the list while the process exits, waiting for it would
    /// hang the exit; the directories would then stay, as before.
    fn remove_all(&self) {
        if let Ok(dirs) = self.0.try_lock() {
            for dir in dirs.iter() {
                let _ = std::fs::remove_dir_all(dir);
            }
        }
    }
}

static DIRS: Registry = Registry::new();
static HANDLER: Once = Once::new();

/// Remove `dir` (and everything in it) when the process exits, unless [`forget`] says it is gone.
pub fn remove_at_exit(dir: &Path) {
    HANDLER.call_once(|| {
        // SAFETY: `remove_all` is a plain function that neither unwinds nor depends on anything
        // `exit` tears down before the handlers run.
        unsafe { libc::atexit(remove_all) };
    });
    DIRS.add(dir);
}

/// `dir` was removed already (its owner dropped it): nothing to do for it at exit.
pub fn forget(dir: &Path) {
    DIRS.forget(dir);
}

extern "C" fn remove_all() {
    DIRS.remove_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registered directory is removed with everything in it; a forgotten one is not touched.
    /// (A registry of the test's own: the process's would remove other tests' directories.)
    #[test]
    fn registered_directories_are_removed_and_forgotten_ones_left() {
        let registry = Registry::new();
        let root = tempfile::tempdir().unwrap();
        let (kept, gone) = (root.path().join("kept"), root.path().join("gone"));
        for dir in [&kept, &gone] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("f"), "x").unwrap();
            registry.add(dir);
        }
        registry.forget(&kept);
        registry.remove_all();
        assert!(kept.join("f").exists());
        assert!(!gone.exists());
        assert_eq!(*registry.lock(), [gone]);
    }
}
