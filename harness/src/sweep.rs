//! The last line of defence against processes that outlive their case.
//!
//! The runner kills the client's whole process group at the end of a case, which takes down the
//! client, the relay and anything else it started — unless a descendant moved to a process group
//! of its own (`setsid`, `setpgid`, a daemonising double fork). Such a process still carries the
//! case's environment: the runner gives every client `ACP_HARNESS_CWD=<the case's own
//! workspace>`, a value no other case shares, and children inherit it. So after the group kill,
//! every process of this user whose environment holds that exact entry is killed too.
//!
//! Reading a process's environment is the expensive part (the kernel copies it out of the other
//! process's memory), and every case ends with a sweep over every process of the machine: with
//! two dozen cases in flight, re-reading them all at each case's end took about a third of the
//! harness's CPU. So one memory, shared by the cases of this process, remembers what each process
//! said: processes started before this harness (never a case's) and processes marked by some
//! case. A pass then reads the environment only of processes it has not seen, and again of a
//! remembered process only to confirm its marker before killing it. Processes are remembered by
//! pid *and* the inode number procfs gave their `/proc/<pid>` directory, which is new for each
//! process, so a reused pid is a new process here.
//!
//! A process that cleared its environment escapes this; nothing short of a cgroup would catch it.
//! Linux only (`/proc`); elsewhere this does nothing.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::DirEntryExt;
use std::path::Path;
use std::sync::Mutex;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The environment variable that marks a case's processes (set on the client by the runner).
pub const MARKER_KEY: &str = "ACP_HARNESS_CWD";

/// The environment entry that marks the processes of the case whose workspace is `workspace`.
pub fn case_marker(workspace: &Path) -> String {
    format!("{MARKER_KEY}={}", workspace.display())
}

/// SIGKILLs every process (other than this one) whose environment contains exactly `marker`
/// (`KEY=value`), pass after pass until a pass finds no process it had not killed yet: a marked
/// process may fork between the moment a pass lists `/proc` and the moment it is killed (a shell
/// starting its next command), and its child is only in the next listing. A killed process forks
/// no more, so this ends; the passes are bounded all the same. Returns how many were found.
/// Unreadable entries are skipped.
pub fn kill_marked(marker: &str) -> usize {
    static MEMORY: Mutex<Option<Memory>> = Mutex::new(None);
    let mut memory = MEMORY.lock().unwrap_or_else(|e| e.into_inner());
    let table = Procfs;
    let memory = memory.get_or_insert_with(|| Memory::new(table.start_ticks(std::process::id())));
    sweep(&table, memory, marker.as_bytes())
}

/// [`kill_marked`] over any process table, with the memory of earlier passes.
fn sweep(table: &impl ProcessTable, memory: &mut Memory, marker: &[u8]) -> usize {
    const MAX_PASSES: usize = 8;
    // A killed process stays listed, environment and all, until it is torn down: it is not new.
    let mut killed = HashSet::new();
    for _ in 0..MAX_PASSES {
        if pass(table, memory, marker, &mut killed) == 0 {
            break;
        }
    }
    killed.len()
}

/// One process as `/proc` lists it: its pid and the inode number of its `/proc/<pid>` entry.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Listed {
    pid: u32,
    ino: u64,
}

impl Listed {
    /// Whether the inode number names the process: procfs lists a process it could not
    /// instantiate with inode 1, which must not be remembered.
    fn identifies(&self) -> bool {
        self.ino > 1
    }
}

/// What an earlier pass learnt about a process, for as long as it is listed.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Known {
    /// Started before this harness process, and unmarked: no case's.
    Older,
    /// Carried this marker entry (`KEY=value`) when it was read.
    Marked(Vec<u8>),
}

/// The memory shared by the passes of one harness process.
#[derive(Debug)]
struct Memory {
    /// When this harness process started (clock ticks since boot); `None` when unknown, and then
    /// no process is taken for older.
    own_start: Option<u64>,
    known: HashMap<Listed, Known>,
}

impl Memory {
    fn new(own_start: Option<u64>) -> Self {
        Memory {
            own_start,
            known: HashMap::new(),
        }
    }
}

/// The processes of the machine, as the sweep needs them.
trait ProcessTable {
    /// Every process listed now.
    fn list(&self) -> Vec<Listed>;
    /// The process's environment (`KEY=value` entries separated by NUL), if readable.
    fn environ(&self, pid: u32) -> Option<Vec<u8>>;
    /// When the process started, in clock ticks since boot, if readable.
    fn start_ticks(&self, pid: u32) -> Option<u64>;
    fn kill(&self, pid: u32);
}

/// One pass over the processes listed now; returns how many it killed that `killed` did not
/// hold, and adds them. Forgets the processes no longer listed.
fn pass(
    table: &impl ProcessTable,
    memory: &mut Memory,
    marker: &[u8],
    killed: &mut HashSet<u32>,
) -> usize {
    let me = std::process::id();
    let listed = table.list();
    let mut found = 0;
    for process in &listed {
        if process.pid == me || killed.contains(&process.pid) {
            continue;
        }
        let remembered = match memory.known.get(process) {
            Some(Known::Older) => continue,
            Some(Known::Marked(entry)) if entry.as_slice() != marker => continue,
            Some(Known::Marked(_)) => true,
            None => false,
        };
        // A remembered match is confirmed on the environment itself before the kill; a
        // process not remembered is read (and remembered when that says enough).
        let Some(environ) = table.environ(process.pid) else {
            continue;
        };
        if !remembered {
            learn(table, memory, *process, &environ);
        }
        if environ.split(|&b| b == 0).any(|var| var == marker) {
            found += 1;
            killed.insert(process.pid);
            table.kill(process.pid);
        }
    }
    let listed: HashSet<Listed> = listed.into_iter().collect();
    memory.known.retain(|process, _| listed.contains(process));
    found
}

/// Remembers what `environ` says of `process`: the case it is marked by, or that it is older
/// than this harness. A younger unmarked process is not remembered: it may be this harness's
/// own child between its fork and its `exec` with a case's marker, and is read again next time.
fn learn(table: &impl ProcessTable, memory: &mut Memory, process: Listed, environ: &[u8]) {
    if !process.identifies() {
        return;
    }
    let key = MARKER_KEY.as_bytes();
    let entry = environ
        .split(|&b| b == 0)
        .find(|var| var.len() > key.len() && var.starts_with(key) && var[key.len()] == b'=');
    let known = match entry {
        Some(entry) => Known::Marked(entry.to_vec()),
        None => match (table.start_ticks(process.pid), memory.own_start) {
            (Some(start), Some(own)) if start < own => Known::Older,
            _ => return,
        },
    };
    memory.known.insert(process, known);
}

/// The real process table: `/proc`.
struct Procfs;

impl ProcessTable for Procfs {
    fn list(&self) -> Vec<Listed> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|entry| {
                let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
                Some(Listed {
                    pid,
                    ino: entry.ino(),
                })
            })
            .collect()
    }

    fn environ(&self, pid: u32) -> Option<Vec<u8>> {
        // Only our own processes are readable; a process that exits meanwhile is just skipped.
        std::fs::read(format!("/proc/{pid}/environ")).ok()
    }

    fn start_ticks(&self, pid: u32) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        start_ticks_of_stat(&stat)
    }

    fn kill(&self, pid: u32) {
        if let Ok(pid) = i32::try_from(pid) {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// Field 22 of `/proc/<pid>/stat` (proc(5): `starttime`), counted after the command name in
/// parentheses, which may itself hold spaces and parentheses.
fn start_ticks_of_stat(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn kills_a_marked_process_in_another_process_group() {
        let marker_value = format!("/tmp/acp-sweep-test-{}", std::process::id());
        let mut child = Command::new("sleep")
            .arg("60")
            .env(MARKER_KEY, &marker_value)
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

    #[test]
    fn reads_the_start_time_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 \
                    987654 1000000 200 18446744073709551615";
        assert_eq!(start_ticks_of_stat(stat), Some(987654));
        assert_eq!(start_ticks_of_stat("4242 (x) S 1"), None);
    }

    /// A process table in memory: each process with its inode, environment and start time.
    #[derive(Default)]
    struct FakeTable {
        processes: RefCell<Vec<(Listed, Vec<u8>, u64)>>,
        environ_reads: RefCell<usize>,
        killed: RefCell<Vec<u32>>,
    }

    impl FakeTable {
        fn add(&self, pid: u32, ino: u64, environ: &str, start: u64) {
            self.processes.borrow_mut().push((
                Listed { pid, ino },
                environ.replace(' ', "\0").into_bytes(),
                start,
            ));
        }
        fn remove(&self, pid: u32) {
            self.processes.borrow_mut().retain(|(p, ..)| p.pid != pid);
        }
        /// Process `pid` replaced: an exec (same inode) or a reused pid (a new one).
        fn replace(&self, pid: u32, ino: u64, environ: &str, start: u64) {
            self.remove(pid);
            self.add(pid, ino, environ, start);
        }
        /// The environment and start time of `pid`, if listed.
        fn find(&self, pid: u32) -> Option<(Vec<u8>, u64)> {
            let processes = self.processes.borrow();
            let (_, environ, start) = processes.iter().find(|(p, ..)| p.pid == pid)?;
            Some((environ.clone(), *start))
        }
        fn reads(&self) -> usize {
            std::mem::take(&mut self.environ_reads.borrow_mut())
        }
    }

    impl ProcessTable for FakeTable {
        fn list(&self) -> Vec<Listed> {
            self.processes.borrow().iter().map(|(p, ..)| *p).collect()
        }
        fn environ(&self, pid: u32) -> Option<Vec<u8>> {
            *self.environ_reads.borrow_mut() += 1;
            self.find(pid).map(|(environ, _)| environ)
        }
        fn start_ticks(&self, pid: u32) -> Option<u64> {
            self.find(pid).map(|(_, start)| start)
        }
        fn kill(&self, pid: u32) {
            self.killed.borrow_mut().push(pid);
            self.remove(pid);
        }
    }

    const OWN_START: u64 = 1_000;

    #[test]
    fn reads_each_environment_once_and_skips_older_and_other_cases_processes() {
        let table = FakeTable::default();
        table.add(1, 10, "PATH=/bin", 5); // older than the harness
        table.add(300, 11, "ACP_HARNESS_CWD=/w/other PATH=/bin", 1_500);
        table.add(301, 12, "ACP_HARNESS_CWD=/w/mine", 1_600);
        let mut memory = Memory::new(Some(OWN_START));
        assert_eq!(sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/none"), 0);
        assert_eq!(table.reads(), 3, "a first pass reads every environment");
        assert_eq!(sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/none"), 0);
        assert_eq!(table.reads(), 0, "known processes are not read again");
        assert_eq!(sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/mine"), 1);
        assert_eq!(*table.killed.borrow(), [301]);
        assert_eq!(
            table.reads(),
            1,
            "a remembered match is confirmed before the kill"
        );
    }

    #[test]
    fn a_reused_pid_is_a_new_process() {
        let table = FakeTable::default();
        table.add(300, 11, "ACP_HARNESS_CWD=/w/other", 1_500);
        let mut memory = Memory::new(Some(OWN_START));
        assert_eq!(sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/mine"), 0);
        // Process 300 exits and a process of this case gets its pid, with a new inode.
        table.replace(300, 99, "ACP_HARNESS_CWD=/w/mine", 1_700);
        assert_eq!(sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/mine"), 1);
        assert_eq!(*table.killed.borrow(), [300]);
        assert!(memory.known.is_empty(), "gone processes are forgotten");
    }

    #[test]
    fn a_young_unmarked_process_is_read_again_because_it_may_be_about_to_exec() {
        let table = FakeTable::default();
        // The harness's own child between fork and exec: the harness's environment, no marker.
        table.add(400, 20, "PATH=/bin", 2_000);
        let mut memory = Memory::new(Some(OWN_START));
        assert_eq!(sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/mine"), 0);
        // It execs the client with the case's marker, then leaves the client's group.
        table.replace(400, 20, "ACP_HARNESS_CWD=/w/mine", 2_000);
        assert_eq!(sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/mine"), 1);
    }

    #[test]
    fn an_unidentified_listing_or_an_unknown_own_start_is_never_remembered() {
        let table = FakeTable::default();
        table.add(1, 1, "ACP_HARNESS_CWD=/w/other", 5);
        table.add(2, 30, "PATH=/bin", 5);
        let mut memory = Memory::new(None);
        sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/mine");
        sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/mine");
        assert_eq!(table.reads(), 4, "both are read at every pass");
        assert!(memory.known.is_empty());
    }

    #[test]
    fn a_marked_process_that_dropped_its_marker_is_not_killed() {
        let table = FakeTable::default();
        table.add(500, 40, "ACP_HARNESS_CWD=/w/mine", 2_000);
        let mut memory = Memory::new(Some(OWN_START));
        sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/none");
        // It execs with an environment of its own: the kill follows the environment only.
        table.replace(500, 40, "PATH=/bin", 2_000);
        assert_eq!(sweep(&table, &mut memory, b"ACP_HARNESS_CWD=/w/mine"), 0);
        assert!(table.killed.borrow().is_empty());
    }
}
