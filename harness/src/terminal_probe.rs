//! What the harness sees of the terminal commands a client runs for the agent.
//!
//! The wire says what the client *answered* (`terminal/output`, `wait_for_exit`); the process
//! itself says what really happened. A scenario's command line writes probe files into the
//! workspace's `.acp-terminal/` directory (scenarios/README.md, "Terminal probes"):
//! `<name>.pid` (the pid of the process to watch: `echo $! > …` for a background child),
//! `<name>.exit` (the exit code it is about to exit with), `<name>.out` (the exact bytes it
//! then prints), `<name>.env` (its environment, `env > …`) and `<name>.cwd` (its working
//! directory, `pwd -P > …`), `<name>.tty` when its stdout is a terminal. The runner looks twice: when the scenario's last step is done (the client still
//! up: a command the agent released or killed must be gone by then) and after the client exited
//! (no command may outlive its client). A process still running then is killed here, so nothing
//! outlives the case, and the note says so; the `terminal` check grades both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use acp_vocab::note::TerminalProbe;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The probe directory inside the workspace.
pub const DIR: &str = ".acp-terminal";
/// At most this much of `<name>.out` is recorded.
const MAX_OUTPUT: usize = 1 << 20;
/// How long a process the client just signalled gets to die before it counts as running.
const DYING_GRACE: Duration = Duration::from_millis(500);

/// The probes of one case, gathered at scenario end and completed after the client exited.
#[derive(Debug, Default)]
pub struct Probes {
    probes: BTreeMap<String, TerminalProbe>,
}

impl Probes {
    /// At the scenario's end: read every probe and see which processes still run.
    pub fn at_scenario_end(workspace: &Path, root: &Path) -> Self {
        let mut probes = BTreeMap::new();
        for name in probe_names(workspace) {
            let mut probe = read_probe(workspace, &name);
            probe.running_at_scenario_end =
                probe.pid.is_some_and(|pid| running_after_grace(pid, root));
            probes.insert(name, probe);
        }
        Probes { probes }
    }

    /// After the client exited: probes written since are read too; a process still running is
    /// recorded as such and killed. Returns the notes' contents, by name.
    pub fn after_client_exit(mut self, workspace: &Path, root: &Path) -> Vec<TerminalProbe> {
        for name in probe_names(workspace) {
            let fresh = read_probe(workspace, &name);
            let probe = self.probes.entry(name).or_insert_with(|| fresh.clone());
            // The files may have been completed after the first look (exit code, output).
            probe.pid = probe.pid.or(fresh.pid);
            probe.exit_code = fresh.exit_code.or(probe.exit_code);
            probe.output = fresh.output.or(probe.output.take());
            probe.env = fresh.env.or(probe.env.take());
            probe.cwd = fresh.cwd.or(probe.cwd.take());
            probe.tty |= fresh.tty;
        }
        for probe in self.probes.values_mut() {
            let Some(pid) = probe.pid else { continue };
            if running_after_grace(pid, root) {
                probe.running_after_client_exit = true;
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                if running_after_grace(pid, root) {
                    eprintln!(
                        "acp-harness: terminal probe {}: pid {pid} survived SIGKILL",
                        probe.name
                    );
                }
            }
        }
        self.probes.into_values().collect()
    }
}

fn probe_names(workspace: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(workspace.join(DIR)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter_map(|e| {
            let path = e.path();
            let ext = path.extension()?.to_str()?;
            matches!(ext, "pid" | "exit" | "out" | "tty")
                .then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

fn file(workspace: &Path, name: &str, ext: &str) -> PathBuf {
    workspace.join(DIR).join(format!("{name}.{ext}"))
}

fn read_number(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

fn read_probe(workspace: &Path, name: &str) -> TerminalProbe {
    let output = std::fs::read(file(workspace, name, "out"))
        .ok()
        .map(|mut bytes| {
            bytes.truncate(MAX_OUTPUT);
            String::from_utf8_lossy(&bytes).into_owned()
        });
    let text = |ext: &str| {
        std::fs::read(file(workspace, name, ext))
            .ok()
            .map(|mut bytes| {
                bytes.truncate(MAX_OUTPUT);
                String::from_utf8_lossy(&bytes).into_owned()
            })
    };
    let env = text("env").map(|env| {
        env.lines()
            .filter_map(|line| line.split_once('='))
            .filter(|(name, _)| !name.is_empty())
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect()
    });
    let cwd = text("cwd").map(|cwd| cwd.trim_end_matches('\n').to_owned());
    TerminalProbe {
        name: name.to_owned(),
        pid: read_number(&file(workspace, name, "pid")).filter(|&pid| pid > 1),
        exit_code: read_number(&file(workspace, name, "exit")),
        output,
        env,
        cwd,
        tty: file(workspace, name, "tty").exists(),
        running_at_scenario_end: false,
        running_after_client_exit: false,
    }
}

/// Whether `pid` is a live (not zombie) process of this case: its cwd is inside the case
/// directory (a pid reused by someone else's process is not ours to judge or kill).
fn running(pid: i32, root: &Path) -> bool {
    let proc = PathBuf::from(format!("/proc/{pid}"));
    let Ok(stat) = std::fs::read_to_string(proc.join("stat")) else {
        return false;
    };
    // The state follows the parenthesised command name, which may itself hold ") ".
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    if matches!(state, Some('Z' | 'X') | None) {
        return false;
    }
    std::fs::read_link(proc.join("cwd")).is_ok_and(|cwd| cwd.starts_with(root))
}

fn running_after_grace(pid: i32, root: &Path) -> bool {
    let deadline = Instant::now() + DYING_GRACE;
    loop {
        if !running(pid, root) {
            return false;
        }
        if Instant::now() >= deadline {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_see_running_and_gone_processes_and_kill_leftovers() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let workspace = root.join("work");
        std::fs::create_dir_all(workspace.join(DIR)).unwrap();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .current_dir(&workspace)
            .spawn()
            .unwrap();
        std::fs::write(file(&workspace, "dev", "pid"), format!("{}\n", child.id())).unwrap();
        std::fs::write(file(&workspace, "build", "exit"), "3\n").unwrap();
        std::fs::write(file(&workspace, "build", "out"), "é\n").unwrap();
        std::fs::write(file(&workspace, "build", "tty"), "").unwrap();
        let probes = Probes::at_scenario_end(&workspace, &root);
        // Reaped by us as soon as it dies, so `running` sees it gone.
        let reaper = std::thread::spawn(move || child.wait());
        let notes = probes.after_client_exit(&workspace, &root);
        reaper.join().unwrap().unwrap();
        assert_eq!(notes.len(), 2);
        assert_eq!(notes[0].name, "build");
        assert_eq!(notes[0].exit_code, Some(3));
        assert_eq!(notes[0].output.as_deref(), Some("é\n"));
        assert!(notes[0].tty && !notes[1].tty);
        assert!(!notes[0].running_at_scenario_end);
        assert_eq!(notes[1].name, "dev");
        assert!(notes[1].running_at_scenario_end);
        assert!(notes[1].running_after_client_exit, "killed by the harness");
        let pid = notes[1].pid.unwrap();
        assert!(!running(pid, &root));
    }
}
