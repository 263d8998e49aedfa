//! `acp-harness coverage`: print, check or write the protocol-surface coverage table.

use std::path::PathBuf;
use std::process::ExitCode;

use acp_fake_agents::scenario;
use anyhow::{Context, Result, bail};
use clap::Args;

use super::{README_BEGIN, README_END, Table, data, readme_with};
use crate::suite;

/// Which stable ACP v1 methods (both directions) and `session/update` variants the scenario
/// corpus exercises, against the pinned schema.
///
/// Each row is a method of agent-client-protocol-schema 1.20.0 in one direction, a
/// `session/update` variant, or a message beyond the schema a client must survive (an unknown
/// variant, `_` extension notifications and requests). A method counts for a scenario when one of
/// its frames sends it (agent → client) or a step expects it from the client (client → agent).
/// Where no scenario does, `scenarios/coverage.toml` must say why, with public sources; an
/// explanation for something a scenario now covers is stale and must go. Unstable methods are
/// listed apart.
///
/// Examples:  acp-harness coverage                  (the Markdown table)
///            acp-harness coverage --json           (every scenario of every row)
///            acp-harness coverage --check          (exit 1 on a gap, a stale entry, a stale README)
///            acp-harness coverage --write-readme   (regenerate scenarios/README.md's section)
#[derive(Args, Debug)]
pub struct CoverageArgs {
    /// Print JSON instead of Markdown.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 (listing why) when an item has neither scenario nor explanation, an explanation is
    /// stale or names nothing, or scenarios/README.md's generated section differs.
    #[arg(long, conflicts_with = "write_readme")]
    pub check: bool,
    /// Rewrite the generated section of <scenarios>/README.md.
    #[arg(long)]
    pub write_readme: bool,
    /// Scenarios folder (default: ./scenarios, else the repository's).
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
}

/// Builds the table of the corpus in `dir`.
pub fn table_of(dir: &std::path::Path) -> Result<Table> {
    let (scenarios, errors) = scenario::load_dir(dir);
    if !errors.is_empty() {
        let text: Vec<String> = errors.iter().map(ToString::to_string).collect();
        bail!(
            "{} scenario file(s) are invalid:\n{}",
            errors.len(),
            text.join("\n")
        );
    }
    Ok(Table::build(&scenarios, &data::load(dir)?))
}

/// The README as it should be, and as it is.
pub fn readme_state(dir: &std::path::Path, table: &Table) -> Result<(String, String)> {
    let path = dir.join("README.md");
    let now = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let want = readme_with(&now, &table.markdown()).with_context(|| {
        format!(
            "{} has no generated section (lines {README_BEGIN:?} … {README_END:?})",
            path.display()
        )
    })?;
    Ok((want, now))
}

pub fn command(args: &CoverageArgs) -> Result<ExitCode> {
    let dir = suite::scenarios_dir(args.scenarios.as_deref())?;
    let table = table_of(&dir)?;
    if args.write_readme {
        let (want, now) = readme_state(&dir, &table)?;
        if want != now {
            std::fs::write(dir.join("README.md"), want)?;
        }
    }
    if args.json {
        crate::outln!("{}", serde_json::to_string_pretty(&table.json())?);
    } else if !args.check {
        crate::out!("{}", table.markdown());
    }
    let mut problems = table.problems();
    if args.check {
        let (want, now) = readme_state(&dir, &table)?;
        if want != now {
            problems.push(format!(
                "{}: the generated coverage section is stale; run: acp-harness coverage --write-readme",
                dir.join("README.md").display()
            ));
        }
    }
    for p in &problems {
        eprintln!("coverage: {p}");
    }
    Ok(if problems.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
