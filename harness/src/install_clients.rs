//! `acp-harness install`: installs the real clients that client profiles name in `[install]`
//! into the harness's cache (builds from source beside downloads), so that their tests (and
//! `run --client <profile>`) find them there. `.ci/run` calls it before `cargo test`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::client_spec::ClientSpec;
use crate::client_spec::Install;
use crate::client_spec::install::{self, InstallError};

#[derive(clap::Args, Debug)]
pub struct InstallArgs {
    /// Client profiles to install (default: every profile in clients/ that has an [install]).
    #[arg(value_name = "PROFILE")]
    pub profiles: Vec<PathBuf>,
    /// Where to install (default: $ACP_HARNESS_CACHE, else $XDG_CACHE_HOME/acp-harness, else
    /// ~/.cache/acp-harness: where the real-client tests look).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
}

/// Installs every profile's client; exits 1 when one could not be installed (after trying all).
pub fn command(args: &InstallArgs) -> Result<ExitCode> {
    let cache = match &args.cache {
        Some(dir) => dir.clone(),
        None => install::cache_dir()
            .context("no cache directory: set ACP_HARNESS_CACHE or HOME, or pass --cache")?,
    };
    let explicit = !args.profiles.is_empty();
    let profiles = if explicit {
        args.profiles.clone()
    } else {
        default_profiles()?
    };
    let mut wanted = Vec::new();
    for profile in &profiles {
        let spec = ClientSpec::from_profile_with_program(profile, "client")
            .with_context(|| format!("cannot read {}", profile.display()))?;
        match spec.wire.install {
            Some(install) => wanted.push((spec.name, install)),
            None if explicit => bail!("{} has no [install] section", profile.display()),
            None => {}
        }
    }
    // Two lanes at once: clients compiled from source keep a core busy for minutes, while
    // downloads (npm, PyPI) mostly wait on the network and the disk. One after the other, the
    // seven real clients took 436 s; side by side, as long as the builds alone.
    let (builds, downloads): (Vec<_>, Vec<_>) = wanted
        .iter()
        .partition(|(_, install)| install.builds_from_source());
    let (built, downloaded) = std::thread::scope(|scope| {
        let built = scope.spawn(|| install_all(&builds, &cache));
        let downloaded = install_all(&downloads, &cache);
        (built.join(), downloaded)
    });
    let built = built.map_err(|_| anyhow::anyhow!("the install of a client panicked"))?;
    let mut failed = Vec::new();
    let mut installed = 0;
    for (name, outcome) in built.into_iter().chain(downloaded) {
        match outcome {
            Ok(program) => {
                installed += 1;
                println!("{name}: {}", program.display());
            }
            Err(why) => {
                eprintln!("acp-harness: cannot install {name}: {why}");
                failed.push(name);
            }
        }
    }
    if failed.is_empty() {
        eprintln!("{installed} client(s) ready in {}", cache.display());
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("not installed: {}", failed.join(", "));
        Ok(ExitCode::from(1))
    }
}

/// Installs each client of `clients` in turn: its name, and its program or why not.
fn install_all(
    clients: &[&(String, Install)],
    cache: &Path,
) -> Vec<(String, Result<PathBuf, String>)> {
    clients
        .iter()
        .map(|(name, install)| {
            let outcome = install::ensure(install, cache, &mut std::io::stderr()).map_err(|e| {
                let hint = match e {
                    InstallError::NoInstaller { .. } => format!(
                        "; install it, or run by hand: {}",
                        install.command_line(cache)
                    ),
                    _ => String::new(),
                };
                format!("{e}{hint}")
            });
            (name.clone(), outcome)
        })
        .collect()
}

/// Each client folder's main profile, `clients/<name>/<name>.toml`, in name order.
fn default_profiles() -> Result<Vec<PathBuf>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../clients");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|d| {
            let name = d.file_name()?.to_str()?.to_owned();
            let main = d.join(format!("{name}.toml"));
            main.is_file().then_some(main)
        })
        .collect();
    found.sort();
    Ok(found)
}
