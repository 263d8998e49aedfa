//! `acp-record`: records real ACP agents against a scripted model server (docs/recording.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use acp_recorder::case::Case;
use acp_recorder::recipe::Recipe;
use acp_recorder::run::{self, Options};
use acp_recorder::script::Script;
use acp_recorder::{check, layout, scenario};
use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "acp-record",
    about = "Record real ACP agents against a scripted model server"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(clap::Args, Clone)]
struct Where {
    /// Install root of the agents (each package at <agents>/<package>@<version>; default
    /// $ACP_RECORD_AGENTS, else ~/.cache/acp-harness/agents).
    #[arg(long)]
    agents: Option<PathBuf>,
    /// Folder for run folders (default ~/.cache/acp-record/runs; not below /tmp).
    #[arg(long)]
    runs: Option<PathBuf>,
    /// Keep run folders.
    #[arg(long)]
    keep: bool,
    /// Print frames as they travel.
    #[arg(short, long)]
    verbose: bool,
}

#[derive(Subcommand)]
enum Cmd {
    /// Record cases of one agent recipe into recordings/<agent>/<version>/.
    Record {
        recipe: PathBuf,
        /// Cases to record (default: every case the recipe has a model script for).
        #[arg(long = "case")]
        cases: Vec<String>,
        /// Recordings root (default: recordings/ at the repository root).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        at: Where,
    },
    /// Re-record a recipe's committed cases and print what changed (exit 1 on drift).
    Check {
        recipe: PathBuf,
        #[arg(long = "case")]
        cases: Vec<String>,
        /// Recordings root (default: recordings/ at the repository root).
        #[arg(long)]
        recordings: Option<PathBuf>,
        /// Folder for the new recordings and drift.txt (default: a new folder in the system
        /// temp dir).
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        at: Where,
    },
    /// Turn a recording into a scenario file.
    ToScenario {
        recording: PathBuf,
        /// Write here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Validate recipes, cases and model scripts without launching anything.
    Lint { recipes: Vec<PathBuf> },
}

fn options(at: &Where) -> Result<Options> {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let agents = at
        .agents
        .clone()
        .or_else(|| std::env::var_os("ACP_RECORD_AGENTS").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from(&home).join(".cache/acp-harness/agents"));
    let runs = at
        .runs
        .clone()
        .unwrap_or_else(|| PathBuf::from(&home).join(".cache/acp-record/runs"));
    if runs.starts_with(std::env::temp_dir()) {
        bail!(
            "--runs {}: run folders must not lie below the system temp dir (codex's sandbox treats it as writable)",
            runs.display()
        );
    }
    Ok(Options {
        agents,
        runs,
        keep: at.keep,
        verbose: at.verbose,
    })
}

/// Loads the recipe and each case + script it will run, so every data error shows before launch.
/// A case to record: the case, its model script, and the script's file.
type Planned = (Case, Script, PathBuf);

/// The cases a run records: those asked for, or every case with a model script. A case the
/// recipe lists as `agent.unrecordable` is left out of a full run and refused by name; a listed
/// case without a model script is a typo.
fn cases_to_record(
    unrecordable: &BTreeMap<String, String>,
    with_scripts: Vec<String>,
    wanted: &[String],
) -> Result<Vec<String>> {
    if let Some(case) = unrecordable.keys().find(|c| !with_scripts.contains(c)) {
        bail!("agent.unrecordable.{case}: no such case with a model script");
    }
    if let Some((case, why)) = wanted.iter().find_map(|c| unrecordable.get_key_value(c)) {
        bail!("case `{case}` cannot be recorded with this version: {why}");
    }
    Ok(if wanted.is_empty() {
        with_scripts
            .into_iter()
            .filter(|c| !unrecordable.contains_key(c))
            .collect()
    } else {
        wanted.to_vec()
    })
}

fn plan(recipe: &Path, wanted: &[String]) -> Result<(Recipe, Vec<Planned>)> {
    let recipe = Recipe::load(recipe)?;
    let cases_dir = layout::cases_dir(&recipe);
    let names = cases_to_record(
        &recipe.unrecordable,
        layout::cases_with_scripts(&recipe)?,
        wanted,
    )
    .with_context(|| format!("recipe {}", recipe.path.display()))?;
    if names.is_empty() {
        bail!(
            "recipe {}: no case has a model script in {}",
            recipe.path.display(),
            recipe.scripts_dir.display()
        );
    }
    let mut out = Vec::new();
    for name in names {
        let case = Case::load(&cases_dir.join(format!("{name}.toml")))?;
        let script_path = recipe.script_path(&name);
        if !script_path.is_file() {
            bail!(
                "recipe {}: no model script for case `{name}` ({} is missing)",
                recipe.path.display(),
                script_path.display()
            );
        }
        let script = Script::load(&script_path)?;
        out.push((case, script, script_path));
    }
    Ok((recipe, out))
}

async fn record(recipe: &Path, cases: &[String], out: Option<PathBuf>, at: &Where) -> Result<bool> {
    let opts = options(at)?;
    let (recipe, plan) = plan(recipe, cases)?;
    let out = out.unwrap_or_else(|| layout::recordings_root(&recipe));
    let mut ok = true;
    for (case, script, script_path) in &plan {
        eprintln!("recording {} {} …", recipe.spec(), case.name);
        let started = std::time::Instant::now();
        match run::record(&recipe, case, script, &opts).await {
            Ok(rec) => {
                let path = layout::write(&out, &recipe, case, script_path, &rec)?;
                eprintln!(
                    "  {} frames, {} model requests, {:.1} s → {}",
                    rec.entries.len(),
                    rec.model.len(),
                    started.elapsed().as_secs_f64(),
                    path.display()
                );
            }
            Err(e) => {
                ok = false;
                eprintln!("  FAILED (nothing written): {e:#}");
            }
        }
    }
    Ok(ok)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("acp-record: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result: Result<bool> = rt.block_on(async {
        match cli.command {
            Cmd::Record {
                recipe,
                cases,
                out,
                at,
            } => record(&recipe, &cases, out, &at).await,
            Cmd::Check {
                recipe,
                cases,
                recordings,
                out,
                at,
            } => {
                let opts = options(&at)?;
                let (recipe, plan) = plan(&recipe, &cases)?;
                let out = out.unwrap_or_else(|| {
                    std::env::temp_dir().join(format!("acp-record-check-{}", std::process::id()))
                });
                check::run(&recipe, &plan, recordings, &out, &opts).await
            }
            Cmd::ToScenario { recording, out } => {
                let text = scenario::from_recording(&recording)?;
                match out {
                    Some(path) => std::fs::write(&path, text)
                        .with_context(|| format!("cannot write {}", path.display()))?,
                    None => print!("{text}"),
                }
                Ok(true)
            }
            Cmd::Lint { recipes } => {
                for r in &recipes {
                    let (recipe, plan) = plan(r, &[])?;
                    eprintln!("{}: {} cases ok", recipe.spec(), plan.len());
                }
                Ok(true)
            }
        }
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("acp-record: {e:#}");
            ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unrecordable_cases_are_left_out_refused_and_must_exist() {
        let unrecordable = BTreeMap::from([("plan".to_owned(), "no plan tool".to_owned())]);
        let scripted = || vec!["edit".to_owned(), "plan".to_owned()];
        assert_eq!(
            cases_to_record(&unrecordable, scripted(), &[]).unwrap(),
            ["edit"]
        );
        let refused = cases_to_record(&unrecordable, scripted(), &["plan".to_owned()]);
        assert!(format!("{:#}", refused.unwrap_err()).contains("no plan tool"));
        let typo = cases_to_record(&unrecordable, vec!["edit".to_owned()], &[]);
        assert!(format!("{:#}", typo.unwrap_err()).contains("agent.unrecordable.plan"));
        assert_eq!(
            cases_to_record(&BTreeMap::new(), scripted(), &["edit".to_owned()]).unwrap(),
            ["edit"]
        );
    }
}
