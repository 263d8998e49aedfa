//! The last line of defence against processes that outlive their case.
//!
//! The runner kills the client's whole process group at the end of a case, which takes down the
//! client, the relay and anything else it started — unless a descendant moved to a process group
//! of its own (`setsid`, `setpgid`, a daemonising double fork). Such a process still carries the
//! case's environment: the runner gives every client `ACP_HARNESS_CWD=<the case's own
//! workspace>`, a value no other case shares, and children inherit it. So after the group kill,
//! every process of this user whose environment holds that exact entry is killed too.
//!
//! A process that cleared its environment escapes this; nothing short of a cgroup would catch it.
//! Linux only (`/proc`); elsewhere this does nothing.

use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The environment entry that marks the processes of the case whose workspace is `workspace`.
pub fn case_marker(workspace: &Path) -> String {
    format!("ACP_HARNESS_CWD={}", workspace.display())
}

/// SIGKILLs every process (other than this one) whose environment contains exactly `marker`
/// (`KEY=value`), pass after pass until a pass finds no process it had not killed yet: a marked
/// process may fork between the moment a pass lists `/proc` and the moment it is killed (a shell
/// starting its next command), and its child is only in the next listing. A killed process forks
/// no more, so this ends; the passes are bounded all the same. Returns how many were found.
/// Unreadable entries are skipped.
pub fn kill_marked(marker: &str) -> usize {
    const MAX_PASSES: usize = 8;
    // A killed process stays listed, environment and all, until it is torn down: it is not new.
    let mut killed = std::collections::HashSet::new();
    for _ in 0..MAX_PASSES {
        if kill_marked_once(marker, &mut killed) == 0 {
            break;
        }
    }
    killed.len()
}

/// One pass of [`kill_marked`] over the processes listed now; returns how many it killed that
/// `killed` did not hold, and adds them.
fn kill_marked_once(marker: &str, killed: &mut std::collections::HashSet<u32>) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let me = std::process::id();
    let needle = marker.as_bytes();
    let mut found = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me || killed.contains(&pid) {
            continue;
        }
        // Only our own processes are readable; a process that exits meanwhile is just skipped.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|&b| b == 0).any(|var| var == needle) {
            found += 1;
            killed.insert(pid);
            if let Ok(pid) = i32::try_from(pid) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn kills_a_marked_process_in_another_process_group() {
        let marker_value = format!("/tmp/acp-sweep-test-{}", std::process::id());
        let mut child = Command::new("sleep")
            .arg("60")
            .env("ACP_HARNESS_CWD", &marker_value)
            .process_group(0)
            .spawn()
            .expect("spawn sleep");
        // Wait (bounded) until the child's environment is readable.
        let environ = format!("/proc/{}/environ", child.id());
        let marker = case_marker(Path::new(&marker_value));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !std::fs::read(&environ)
            .is_ok_and(|e| e.split(|&b| b == 0).any(|v| v == marker.as_bytes()))
        {
            assert!(std::time::Instant::now() < deadline, "child never started");
            std::thread::yield_now();
        }
        assert_eq!(kill_marked(&marker), 1);
        let status = child.wait().expect("reap");
        assert!(!status.success());
        // Nothing else carries it.
        assert_eq!(kill_marked(&marker), 0);
    }
}
