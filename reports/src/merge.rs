//! Shards of one run (`acp-harness run --shard K/N` on several CI runners) made into one run
//! again, so the report, the summary and `diff` see the client as if one runner had played every
//! case. Shards belong together when they tested the same client (`client.source`) with the same
//! harness version and the same N; each keeps reading its transcripts from its own directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::load::{LoadedRun, ReportError, transcript_path};
use crate::run::RunJson;

/// `runs` with the shards of each run merged into one, in the order the first shard of each
/// came; runs that are not shards are left as they are.
pub fn merge_shards(runs: Vec<LoadedRun>) -> Result<Vec<LoadedRun>, ReportError> {
    let mut out: Vec<Vec<LoadedRun>> = Vec::new();
    for run in runs {
        let together = match shard_of(&run)? {
            None => None,
            Some((_, n)) => out.iter().position(|group| {
                let first = &group[0];
                shard_of(first).ok().flatten().is_some_and(|(_, m)| m == n)
                    && first.run.client.source == run.run.client.source
                    && first.run.harness == run.run.harness
            }),
        };
        match together {
            Some(i) => out[i].push(run),
            None => out.push(vec![run]),
        }
    }
    out.into_iter()
        .map(|group| {
            if group.len() == 1 {
                Ok(group.into_iter().next().expect("one run"))
            } else {
                // Merging checks and moves every case: the shards are read whole.
                let group = group
                    .into_iter()
                    .map(LoadedRun::into_memory)
                    .collect::<Result<Vec<_>, _>>()?;
                merge(group)
            }
        })
        .collect()
}

/// `Some((k, n))` for a run of slice K of N; an error for a `config.shard` that says neither.
fn shard_of(run: &LoadedRun) -> Result<Option<(usize, usize)>, ReportError> {
    let Some(shard) = &run.run.config.shard else {
        return Ok(None);
    };
    let parsed = shard.split_once('/').and_then(|(k, n)| {
        let (k, n) = (k.parse::<usize>().ok()?, n.parse::<usize>().ok()?);
        (1..=n).contains(&k).then_some((k, n))
    });
    parsed.map(Some).ok_or_else(|| ReportError::Merge {
        path: run.path.clone(),
        reason: format!("config.shard is {shard:?}, not K/N with 1 ≤ K ≤ N"),
    })
}

/// One run made of the shards in `group` (same client, harness and N).
fn merge(mut group: Vec<LoadedRun>) -> Result<LoadedRun, ReportError> {
    group.sort_by_key(|run| shard_of(run).ok().flatten().map(|(k, _)| k));
    let n = shard_of(&group[0])?.map_or(1, |(_, n)| n);
    let mut slices = Vec::new();
    let mut case_dirs: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut seen: BTreeMap<String, &Path> = BTreeMap::new();
    for run in &group {
        let (k, _) = shard_of(run)?.expect("grouped as a shard");
        if slices.contains(&k) {
            return Err(ReportError::Merge {
                path: run.path.clone(),
                reason: format!("slice {k}/{n} is given twice"),
            });
        }
        slices.push(k);
        if run.run.config.strict != group[0].run.config.strict
            || run.run.config.filter != group[0].run.config.filter
        {
            return Err(ReportError::Merge {
                path: run.path.clone(),
                reason: format!(
                    "its --strict or --filter differs from {}'s: the shards are not slices of one run",
                    group[0].path.display()
                ),
            });
        }
        for case in &run.run.cases {
            if let Some(other) = seen.insert(case.id.clone(), &run.path) {
                return Err(ReportError::Merge {
                    path: run.path.clone(),
                    reason: format!(
                        "case {} is also in {}: shards of one run hold disjoint cases",
                        case.id,
                        other.display()
                    ),
                });
            }
            case_dirs.insert(case.id.clone(), run.dir().to_owned());
        }
    }
    let first = &group[0].run;
    let start = group
        .iter()
        .map(|r| r.run.started_unix_ms)
        .min()
        .unwrap_or(0);
    let end = group
        .iter()
        .map(|r| r.run.started_unix_ms + r.run.duration_ms)
        .max()
        .unwrap_or(start);
    let mut summary: BTreeMap<String, usize> = BTreeMap::new();
    for run in &group {
        for (grade, count) in &run.run.summary {
            *summary.entry(grade.clone()).or_default() += count;
        }
    }
    let mut profiles: Vec<_> = group
        .iter()
        .flat_map(|r| r.run.profiles.iter().cloned())
        .collect();
    profiles.sort_by(|a, b| a.key.cmp(&b.key));
    profiles.dedup_by(|a, b| a.key == b.key);
    let mut cases: Vec<_> = group
        .iter()
        .flat_map(|r| r.run.cases.iter().cloned())
        .collect();
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    let mut config = first.config.clone();
    // Every slice present: the whole run. Otherwise say which slices the report holds.
    config.shard = (slices.len() != n).then(|| {
        let list: Vec<String> = slices.iter().map(ToString::to_string).collect();
        format!("{}/{n}", list.join("+"))
    });
    let client = {
        let mut client = first.client.clone();
        client.reported = group.iter().find_map(|r| r.run.client.reported.clone());
        client
    };
    let merged = RunJson {
        schema: first.schema.clone(),
        harness: first.harness.clone(),
        acp_schema: first.acp_schema.clone(),
        client,
        config,
        started_unix_ms: start,
        duration_ms: end - start,
        summary,
        checks: first.checks.clone(),
        profiles,
        cases,
    };
    Ok(LoadedRun::new(group[0].path.clone(), merged).with_case_dirs(case_dirs))
}

/// Writes `run` (typically merged from shards) as a run.json of its own in `out`, with every
/// case's transcript copied next to it, so `report` and `diff` take it like any other run.
/// Refuses to replace a run.json already in `out`. Returns the run.json path.
pub fn write_run(run: &LoadedRun, out: &Path) -> Result<PathBuf, ReportError> {
    let path = out.join("run.json");
    if path.exists() {
        return Err(ReportError::Merge {
            path: path.clone(),
            reason: "a run.json is already there; name a new directory".into(),
        });
    }
    let write_err = |path: &Path| {
        let path = path.to_owned();
        move |source| ReportError::Write { path, source }
    };
    for case in &run.run.cases {
        // A case without a readable transcript keeps its entry; its report page says so.
        let Some(rel) = transcript_path(case) else {
            continue;
        };
        let from = run.case_dir(case).join(rel);
        if !from.is_file() {
            continue;
        }
        let to = out.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(write_err(parent))?;
        }
        std::fs::copy(&from, &to).map_err(write_err(&to))?;
    }
    std::fs::create_dir_all(out).map_err(write_err(out))?;
    let json = serde_json::to_string_pretty(&run.run).expect("a run serialises");
    std::fs::write(&path, json + "\n").map_err(write_err(&path))?;
    Ok(path)
}
