//! `acp-harness install`: installs the real clients that client profiles name in `[install]`
//! into the harness's cache, one after the other, so that their tests (and `run --client
//! <profile>`) find them there. `.ci/run` calls it before `cargo test`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::client_spec::ClientSpec;
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
    let mut failed = Vec::new();
    let mut installed = 0;
    for profile in &profiles {
        let spec = ClientSpec::from_profile_with_program(profile, "client")
            .with_context(|| format!("cannot read {}", profile.display()))?;
        let Some(install) = spec.wire.install else {
            if explicit {
                bail!("{} has no [install] section", profile.display());
            }
            continue;
        };
        match install::ensure(&install, &cache, &mut std::io::stderr()) {
            Ok(program) => {
                installed += 1;
                println!("{}: {}", spec.name, program.display());
            }
            Err(e) => {
                let hint = match e {
                    InstallError::NoInstaller { .. } => format!(
                        "; install it, or run by hand: {}",
                        install.command_line(&cache)
                    ),
                    _ => String::new(),
                };
                eprintln!("acp-harness: cannot install {}: {e}{hint}", spec.name);
                failed.push(spec.name);
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
