//! Finding the binaries that ship with the workspace (`acp-fake-agent`, `acp-reference-client`).
//!
//! They are looked up next to the running executable (`target/<profile>/`, or its parent when the
//! executable is a test binary in `target/<profile>/deps/`). When the harness runs from the
//! workspace (under `cargo run` / `cargo test`, which set `CARGO`) and a binary is missing or
//! older than its sources could be, it is built once with the same cargo, so that
//! `cargo test -p acp-harness` works on a fresh clone.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use anyhow::{Context, Result, bail};

/// A workspace binary and the package that builds it.
#[derive(Debug, Clone, Copy)]
pub struct WorkspaceBin {
    pub name: &'static str,
    pub package: &'static str,
    /// Environment variable that overrides the lookup with an explicit path.
    pub env_override: &'static str,
}

pub const FAKE_AGENT: WorkspaceBin = WorkspaceBin {
    name: "acp-fake-agent",
    package: "acp-fake-agents",
    env_override: "ACP_HARNESS_FAKE_AGENT",
};

pub const REFERENCE_CLIENT: WorkspaceBin = WorkspaceBin {
    name: "acp-reference-client",
    package: "acp-reference-client",
    env_override: "ACP_HARNESS_REFERENCE_CLIENT",
};

/// Serialises builds: several trials may ask for the same binary at once.
static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Directory that holds the workspace's binaries for the running build profile.
fn bin_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find the running executable")?;
    let dir = exe
        .parent()
        .context("running executable has no parent directory")?;
    Ok(if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().unwrap_or(dir).to_path_buf()
    } else {
        dir.to_path_buf()
    })
}

/// The absolute path of `bin`, building it with cargo if it is missing and cargo is at hand.
pub fn locate(bin: WorkspaceBin) -> Result<PathBuf> {
    if let Some(path) = std::env::var_os(bin.env_override) {
        let path = PathBuf::from(path);
        if !path.is_file() {
            bail!(
                "{}={} does not name a file",
                bin.env_override,
                path.display()
            );
        }
        return Ok(path);
    }
    let path = bin_dir()?.join(bin.name);
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if !path.is_file() {
        build(bin, &path)?;
    }
    Ok(path)
}

fn build(bin: WorkspaceBin, expected: &Path) -> Result<()> {
    let Some(cargo) = std::env::var_os("CARGO") else {
        bail!(
            "{} not found at {}; build it with `cargo build -p {}` or set {}",
            bin.name,
            expected.display(),
            bin.package,
            bin.env_override
        );
    };
    let release = expected
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "release");
    // Build every workspace binary the harness launches in one cargo call: the next lookup is
    // then free, and cargo compiles the shared dependencies once.
    let packages: Vec<&str> = [FAKE_AGENT, REFERENCE_CLIENT]
        .iter()
        .map(|b| b.package)
        .collect();
    eprintln!(
        "acp-harness: building {} (packages {})",
        bin.name,
        packages.join(", ")
    );
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet"]);
    for package in packages {
        cmd.args(["-p", package]);
    }
    if release {
        cmd.arg("--release");
    }
    let status = cmd
        .status()
        .with_context(|| format!("could not run cargo to build {}", bin.name))?;
    if !status.success() || !expected.is_file() {
        bail!("building {} failed ({status})", bin.name);
    }
    Ok(())
}
