//! Finding the binaries that ship with the workspace (`acp-fake-agent`, `acp-reference-client`).
//!
//! They are looked up next to the running executable (`target/<profile>/`, or its parent when the
//! executable is a test binary in `target/<profile>/deps/`). When the harness runs from the
//! workspace (under `cargo run` / `cargo test`, which set `CARGO`), the first lookup of each
//! package in a process runs `cargo build` for it with the same cargo: a no-op when the binary is
//! fresh, a rebuild when its sources changed, so that `cargo test -p acp-harness` on a fresh
//! clone, or after an edit to the reference client, never runs a missing or stale binary.

use std::collections::BTreeSet;
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

/// Packages already brought up to date by this process. The mutex also serialises builds:
/// several trials may ask for the same binary at once.
static BUILT: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());

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
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if std::env::var_os("CARGO").is_some() {
        if !built.contains(bin.package) {
            build(bin, &path)?;
            built.extend([FAKE_AGENT.package, REFERENCE_CLIENT.package, bin.package]);
        }
    } else if !path.is_file() {
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
    // Build the binaries every run launches together with the one asked for, in one cargo call:
    // the next lookup is then free, and cargo compiles the shared dependencies once.
    let packages: BTreeSet<&str> = [FAKE_AGENT.package, REFERENCE_CLIENT.package, bin.package]
        .into_iter()
        .collect();
    // Quiet when the binary exists: then this is usually cargo's sub-second freshness check.
    if !expected.is_file() {
        eprintln!(
            "acp-harness: building {} (packages {})",
            bin.name,
            packages.iter().copied().collect::<Vec<_>>().join(", ")
        );
    }
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
