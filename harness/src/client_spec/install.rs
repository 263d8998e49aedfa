//! Installing a real client from its profile's `[install]` into the harness's cache, once.
//!
//! Where it goes: `<cache>/<package>/` (cache: `$ACP_HARNESS_CACHE`, else
//! `$XDG_CACHE_HOME/acp-harness`, else `~/.cache/acp-harness`): npm packages with
//! `npm install --prefix`, PyPI packages into a venv of their own, crates with
//! `cargo install --root`. Installs of one package are serialised by a lock file beside it, so
//! two test binaries (or two tests of one binary, or `acp-harness install` and a test) never
//! build the same client at once: the second waits and then finds it installed. An install that
//! fails leaves no half-installed prefix behind, and its error names the command and the tail of
//! its output.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

use super::Install;

/// How long one install step may take: `cargo install` of a client with a few hundred crates
/// takes minutes on two busy cores.
const STEP_LIMIT: Duration = Duration::from_secs(30 * 60);

/// How often a long install says it is still at work.
const PROGRESS_EVERY: Duration = Duration::from_secs(30);

/// How many lines of a failed step's output its error quotes.
const TAIL_LINES: usize = 25;

/// Why a client is not installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstallError {
    /// This machine lacks the tool the install needs (`npm`, `python3`).
    NoInstaller { missing: String },
    /// An install step failed or did not finish; `command` is the step, `tail` its output's end.
    Failed {
        command: String,
        why: String,
        tail: String,
    },
    /// Something else in the way: no cache directory, a lock or folder that cannot be made.
    Other(String),
}

impl std::fmt::Display for InstallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InstallError::NoInstaller { missing } => write!(f, "{missing} is not installed here"),
            InstallError::Failed { command, why, tail } => {
                write!(f, "`{command}` {why}")?;
                if !tail.is_empty() {
                    write!(f, "; its output ended with:\n{tail}")?;
                }
                Ok(())
            }
            InstallError::Other(why) => f.write_str(why),
        }
    }
}

/// The harness's cache directory, if one can be named.
pub fn cache_dir() -> Option<PathBuf> {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    var("ACP_HARNESS_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|d| d.join("acp-harness")))
        .or_else(|| var("HOME").map(|d| d.join(".cache/acp-harness")))
}

impl Install {
    /// Where this package is installed inside `cache`.
    pub fn prefix(&self, cache: &Path) -> PathBuf {
        cache.join(self.package())
    }

    /// The client's program once installed in `cache`.
    pub fn program(&self, cache: &Path) -> PathBuf {
        self.prefix(cache).join(&self.bin)
    }

    /// The commands that install the package into `prefix`, each an argv.
    pub fn steps(&self, prefix: &Path) -> Vec<Vec<String>> {
        let prefix = prefix.to_string_lossy().into_owned();
        let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        if let Some(spec) = &self.npm {
            vec![words(&[
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--prefix",
                &prefix,
                spec,
            ])]
        } else if let Some(requirement) = &self.pypi {
            let pip = format!("{prefix}/bin/pip");
            let mut install = words(&[
                &pip,
                "install",
                "--disable-pip-version-check",
                "--quiet",
                requirement,
            ]);
            install.extend(self.pip_args.iter().cloned());
            vec![words(&["python3", "-m", "venv", &prefix]), install]
        } else if let Some((name, version)) = self.cargo_crate() {
            // Unoptimised: a client under test spends its time waiting on pipes, and an
            // optimised build of a client with a few hundred crates takes nearly twice the CPU
            // (yopo 11.0.0: 127 s against 227 s), on the first `cargo test`'s critical path.
            vec![words(&[
                "cargo",
                "install",
                "--config",
                "profile.release.opt-level=0",
                "--locked",
                "--quiet",
                "--root",
                &prefix,
                name,
                "--version",
                version,
            ])]
        } else {
            Vec::new()
        }
    }

    /// The one line a person types to install the package into `cache` by hand.
    pub fn command_line(&self, cache: &Path) -> String {
        self.steps(&self.prefix(cache))
            .iter()
            .map(|argv| shell_words(argv))
            .collect::<Vec<_>>()
            .join(" && ")
    }

    /// True for a crate `cargo install` compiles, which takes minutes of CPU; npm and PyPI
    /// packages are downloads.
    pub fn builds_from_source(&self) -> bool {
        self.npm.is_none() && self.pypi.is_none() && self.cargo_crate().is_some()
    }

    /// The program a step's argv names, as the machine lacks it or not.
    fn installer(&self) -> &'static str {
        if self.npm.is_some() {
            "npm"
        } else if self.pypi.is_some() {
            "python3"
        } else {
            "cargo"
        }
    }
}

/// The program of `install`, installing it into `cache` first when it is not there. Progress
/// (what is installed where, a line every 30 s, how long it took) goes to `progress`.
pub fn ensure(
    install: &Install,
    cache: &Path,
    progress: &mut dyn Write,
) -> Result<PathBuf, InstallError> {
    let program = install.program(cache);
    if program.exists() {
        return Ok(program);
    }
    if !runs(install.installer()) {
        return Err(InstallError::NoInstaller {
            missing: install.installer().to_owned(),
        });
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| InstallError::Other(format!("cannot create {}: {e}", cache.display())))?;
    let lock_path = cache.join(format!(".{}.lock", install.package()));
    let lock = File::create(&lock_path)
        .map_err(|e| InstallError::Other(format!("cannot create {}: {e}", lock_path.display())))?;
    // Held until this function returns (the lock goes with the file when dropped).
    let _lock = match Flock::lock(lock, FlockArg::LockExclusiveNonblock) {
        Ok(held) => held,
        Err((lock, _)) => {
            let _ = writeln!(
                progress,
                "waiting for another process that installs {} …",
                install.package()
            );
            Flock::lock(lock, FlockArg::LockExclusive).map_err(|(_, e)| {
                InstallError::Other(format!("cannot lock {}: {e}", lock_path.display()))
            })?
        }
    };
    // Whoever held the lock may have installed it meanwhile.
    if program.exists() {
        return Ok(program);
    }
    let prefix = install.prefix(cache);
    // A prefix without the program is what an interrupted install left: start again.
    let _ = std::fs::remove_dir_all(&prefix);
    let started = Instant::now();
    let _ = writeln!(
        progress,
        "installing {} into {} (once; later runs use it): {}",
        install.package(),
        prefix.display(),
        install.command_line(cache)
    );
    let log_path = cache.join(format!(".{}.log", install.package()));
    let outcome = install
        .steps(&prefix)
        .iter()
        .try_for_each(|argv| run_step(argv, &log_path, install.package(), progress));
    let outcome = outcome.and_then(|()| {
        if program.exists() {
            Ok(())
        } else {
            Err(InstallError::Other(format!(
                "installing {} left no {}",
                install.package(),
                program.display()
            )))
        }
    });
    match outcome {
        Ok(()) => {
            let _ = writeln!(
                progress,
                "installed {} in {:.0} s",
                install.package(),
                started.elapsed().as_secs_f64()
            );
            let _ = std::fs::remove_file(&log_path);
            Ok(program)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&prefix);
            Err(e)
        }
    }
}

/// Runs one install step with its output in `log`, bounded by [`STEP_LIMIT`].
fn run_step(
    argv: &[String],
    log_path: &Path,
    package: &str,
    progress: &mut dyn Write,
) -> Result<(), InstallError> {
    let command = shell_words(argv);
    let failed = |why: String, tail: String| InstallError::Failed {
        command: command.clone(),
        why,
        tail,
    };
    let mut log = File::options()
        .create(true)
        .read(true)
        .write(true)
        .truncate(true)
        .open(log_path)
        .map_err(|e| InstallError::Other(format!("cannot create {}: {e}", log_path.display())))?;
    let log_err = log
        .try_clone()
        .map_err(|e| InstallError::Other(format!("{}: {e}", log_path.display())))?;
    let log_out = log
        .try_clone()
        .map_err(|e| InstallError::Other(format!("{}: {e}", log_path.display())))?;
    let (program, args) = argv.split_first().expect("an install step has a program");
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log_out)
        .stderr(log_err)
        .spawn()
        .map_err(|e| failed(format!("could not start: {e}"), String::new()))?;
    let started = Instant::now();
    let mut said = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(e) => {
                return Err(failed(
                    format!("could not be waited for: {e}"),
                    String::new(),
                ));
            }
        }
        if started.elapsed() > STEP_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(
                format!("did not finish within {} min", STEP_LIMIT.as_secs() / 60),
                tail(&mut log),
            ));
        }
        if said.elapsed() >= PROGRESS_EVERY {
            said = Instant::now();
            let _ = writeln!(
                progress,
                "… still installing {package} ({:.0} s)",
                started.elapsed().as_secs_f64()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    if status.success() {
        Ok(())
    } else {
        Err(failed(format!("failed ({status})"), tail(&mut log)))
    }
}

/// The last [`TAIL_LINES`] lines of `log`.
fn tail(log: &mut File) -> String {
    let mut text = String::new();
    let _ = log.seek(SeekFrom::Start(0));
    let _ = log.read_to_string(&mut text);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

/// True if `program --version` runs.
fn runs(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `argv` as one line a POSIX shell reads back as the same words.
fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|w| {
            let plain = !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=@:+,".contains(c));
            if plain {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yopo() -> Install {
        Install {
            npm: None,
            pypi: None,
            pip_args: Vec::new(),
            cargo: Some("yopo@11.0.0".into()),
            bin: "bin/yopo".into(),
        }
    }

    fn npm(spec: &str, bin: &str) -> Install {
        Install {
            npm: Some(spec.into()),
            pypi: None,
            pip_args: Vec::new(),
            cargo: None,
            bin: bin.into(),
        }
    }

    #[test]
    fn the_command_line_is_what_a_person_types() {
        let pypi = Install {
            npm: None,
            pypi: Some("acpc==0.1.0".into()),
            pip_args: vec!["--ignore-requires-python".into()],
            cargo: None,
            bin: "bin/acpc".into(),
        };
        assert_eq!(
            pypi.command_line(Path::new("/c")),
            "python3 -m venv /c/acpc==0.1.0 && /c/acpc==0.1.0/bin/pip install \
             --disable-pip-version-check --quiet acpc==0.1.0 --ignore-requires-python"
        );
        let cargo = yopo();
        assert_eq!(
            cargo.command_line(Path::new("/my cache")),
            "cargo install --config profile.release.opt-level=0 --locked --quiet --root '/my cache/yopo@11.0.0' yopo --version 11.0.0"
        );
    }

    #[test]
    fn only_crates_are_built_from_source() {
        assert!(yopo().builds_from_source());
        assert!(!npm("acpx@0.19.1", "node_modules/.bin/acpx").builds_from_source());
    }

    #[test]
    fn a_failed_install_names_its_command_and_output_and_leaves_nothing_behind() {
        // `npm` exists only if node does; the failing step is a bogus package either way, so
        // where npm is missing the error says that instead.
        let cache = tempfile::tempdir().expect("tempdir");
        let install = npm("./no-such-package-dir", "node_modules/.bin/nothing");
        let mut progress = Vec::new();
        let err = ensure(&install, cache.path(), &mut progress).expect_err("cannot install");
        match &err {
            InstallError::Failed { command, tail, .. } => {
                assert!(command.starts_with("npm install"), "{command}");
                assert!(!tail.is_empty(), "no output quoted");
                let said = String::from_utf8_lossy(&progress);
                assert!(said.contains("installing ./no-such-package-dir"), "{said}");
            }
            InstallError::NoInstaller { missing } => assert_eq!(missing, "npm"),
            other => panic!("unexpected: {other}"),
        }
        assert!(!install.prefix(cache.path()).exists(), "half install kept");
    }

    #[test]
    fn an_installed_program_is_found_without_installing() {
        let cache = tempfile::tempdir().expect("tempdir");
        let install = npm("x@1", "bin/x");
        std::fs::create_dir_all(cache.path().join("x@1/bin")).expect("mkdir");
        std::fs::write(cache.path().join("x@1/bin/x"), "").expect("write");
        let mut progress = Vec::new();
        let found = ensure(&install, cache.path(), &mut progress).expect("found");
        assert_eq!(found, cache.path().join("x@1/bin/x"));
        assert!(
            progress.is_empty(),
            "it installed nothing, so it says nothing"
        );
    }
}
