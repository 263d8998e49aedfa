//! Shards of one run merged back into one: the same cases, counts and transcripts as the run they
//! were cut from; shards that do not belong together are refused by name or kept apart; a merged
//! run written to disk loads and reads like any other.

mod common;

use acp_reports::LoadedRun;
use acp_reports::merge::{merge_shards, write_run};
use common::load;

/// [`shards`], each shard in a directory of its own under `root` holding only its cases'
/// transcripts, as on separate CI runners.
fn shards_on_disk(name: &str, n: usize, root: &std::path::Path) -> (LoadedRun, Vec<LoadedRun>) {
    let (whole, parts) = shards(name, n);
    let parts = parts
        .into_iter()
        .enumerate()
        .map(|(k, part)| {
            let dir = root.join(format!("shard-{}", k + 1));
            for case in &part.run.cases {
                let to = dir.join(&case.transcript);
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(whole.dir().join(&case.transcript), &to).unwrap();
            }
            LoadedRun::new(dir.join("run.json"), part.run)
        })
        .collect();
    (whole, parts)
}

/// The fixture run cut into `n` shards (case i goes to shard i % n + 1), each with its own summary,
/// and each loaded from the fixture's own directory (so its transcripts resolve as before).
fn shards(name: &str, n: usize) -> (LoadedRun, Vec<LoadedRun>) {
    let whole = load(name);
    let parts = (0..n)
        .map(|k| {
            let mut part = whole.clone();
            part.run.config.shard = Some(format!("{}/{n}", k + 1));
            part.run.cases = whole
                .run
                .cases
                .iter()
                .enumerate()
                .filter(|(i, _)| i % n == k)
                .map(|(_, c)| c.clone())
                .collect();
            part.run.summary = part.run.summary.keys().map(|g| (g.clone(), 0)).collect();
            for trial in part.run.cases.iter().flat_map(|c| &c.trials) {
                *part
                    .run
                    .summary
                    .entry(trial.grade.name.clone())
                    .or_default() += 1;
            }
            part.run.started_unix_ms = whole.run.started_unix_ms + 10 * k as u64;
            part
        })
        .collect();
    (whole, parts)
}

#[test]
fn the_shards_of_a_run_merge_into_that_run() {
    let root = tempfile::tempdir().unwrap();
    let (whole, parts) = shards_on_disk("always-command", 3, root.path());
    assert!(parts.iter().all(|p| !p.run.cases.is_empty()));
    let merged = merge_shards(parts).unwrap();
    assert_eq!(merged.len(), 1, "three shards of one client are one run");
    let run = &merged[0];
    assert!(run.is_merged());
    let ids = |r: &LoadedRun| r.run.cases.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    let mut expected = ids(&whole);
    expected.sort();
    assert_eq!(ids(run), expected);
    assert_eq!(run.run.summary, whole.run.summary);
    assert_eq!(run.run.config.shard, None, "every slice: the whole run");
    assert_eq!(run.run.started_unix_ms, whole.run.started_unix_ms);
    for case in &run.run.cases {
        let transcript = run.transcript(case);
        assert!(
            transcript.missing.is_none(),
            "{}: {:?}",
            case.id,
            transcript.missing
        );
    }
}

#[test]
fn a_partial_set_says_which_slices_it_holds_and_other_runs_stay_apart() {
    let (_, mut parts) = shards("always-command", 3);
    parts.remove(1);
    let other_client = load("reference");
    let mut runs = parts;
    runs.push(other_client);
    let merged = merge_shards(runs).unwrap();
    assert_eq!(merged.len(), 2);
    assert_eq!(merged[0].run.config.shard.as_deref(), Some("1+3/3"));
    assert!(
        !merged[1].is_merged(),
        "a run that is no shard is left as it is"
    );
    // Another N is another run: not merged.
    let (_, a) = shards("always-command", 2);
    let (_, b) = shards("always-command", 3);
    let apart = merge_shards(vec![a[0].clone(), b[1].clone()]).unwrap();
    assert_eq!(apart.len(), 2);
}

#[test]
fn shards_that_do_not_fit_are_refused_by_name() {
    let (_, parts) = shards("always-command", 2);
    let twice = merge_shards(vec![parts[0].clone(), parts[0].clone()]).unwrap_err();
    assert!(
        twice.to_string().contains("slice 1/2 is given twice"),
        "{twice}"
    );
    let mut overlapping = parts.clone();
    let stolen = overlapping[0].run.cases[0].clone();
    overlapping[1].run.cases.push(stolen.clone());
    let err = merge_shards(overlapping).unwrap_err().to_string();
    assert!(
        err.contains(&format!("case {} is also in", stolen.id)),
        "{err}"
    );
    let mut strict = parts.clone();
    strict[1].run.config.strict = !strict[0].run.config.strict;
    let err = merge_shards(strict).unwrap_err().to_string();
    assert!(err.contains("--strict or --filter differs"), "{err}");
    let mut bad = parts;
    bad[0].run.config.shard = Some("3/2".into());
    let err = merge_shards(bad).unwrap_err().to_string();
    assert!(err.contains("not K/N"), "{err}");
}

#[test]
fn a_merged_run_written_to_disk_loads_with_its_transcripts() {
    let root = tempfile::tempdir().unwrap();
    let (whole, parts) = shards_on_disk("always-command", 2, root.path());
    let merged = merge_shards(parts).unwrap().remove(0);
    let out = tempfile::tempdir().unwrap();
    let dir = out.path().join("merged");
    let path = write_run(&merged, &dir).unwrap();
    let again = acp_reports::load_run(&path).unwrap();
    assert!(
        !again.is_merged(),
        "on disk it is one run.json like any other"
    );
    assert_eq!(again.run.cases.len(), whole.run.cases.len());
    assert_eq!(again.run.summary, whole.run.summary);
    for case in &again.run.cases {
        let transcript = again.transcript(case);
        assert!(
            transcript.missing.is_none(),
            "{}: {:?}",
            case.id,
            transcript.missing
        );
    }
    let err = write_run(&merged, &dir).unwrap_err().to_string();
    assert!(err.contains("a run.json is already there"), "{err}");
}
