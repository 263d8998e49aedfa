//! `diff` between the fixture runs, and between a run and an edited copy of it: every kind of
//! change is found, and nothing else.

mod common;

use acp_reports::diff::{Thresholds, diff, html, link_reports, text};
use acp_reports::grade::KnownGrade;
use acp_reports::report_pages::ReportPages;
use acp_reports::write_report;
use common::load;

#[test]
fn a_run_against_itself_has_no_changes() {
    let run = load("always-command");
    let d = diff(&run, &run, Thresholds::default());
    assert!(d.is_empty(), "{d:?}");
    assert!(text(&d).ends_with("no changes\n"));
}

#[test]
fn the_mutant_after_the_reference_is_three_new_failures_and_the_reverse_three_fixed() {
    let reference = load("reference");
    let mutant = load("always-command");
    let d = diff(&reference, &mutant, Thresholds::default());
    let names: Vec<&str> = d.new_failures.iter().map(|c| c.trial.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "acme@1.0/edit-approve::subject-kind",
            "acme@1.0/hostile-text::subject-kind",
            "acme@2.0/sparse-request::subject-kind"
        ]
    );
    assert!(
        d.new_failures
            .iter()
            .all(|c| c.old_grade == Some(KnownGrade::Pass.into())
                && c.new_grade == Some(KnownGrade::Fail.into()))
    );
    assert!(d.fixed.is_empty() && d.changed.is_empty() && d.cases_added.is_empty());

    let back = diff(&mutant, &reference, Thresholds::default());
    assert_eq!(back.fixed.len(), 3);
    assert!(back.new_failures.is_empty());
}

#[test]
fn every_kind_of_change_is_reported() {
    let old = load("always-command");
    let mut new = old.clone();
    let cases = &mut new.run.cases;
    // Changed message: the failing subject-kind of edit-approve now says something else.
    let edit = cases
        .iter_mut()
        .find(|c| c.id == "acme@1.0/edit-approve")
        .unwrap();
    let trial = edit
        .trials
        .iter_mut()
        .find(|t| t.check == "subject-kind")
        .unwrap();
    trial.message =
        "- [fail] approval #20 shows subject \"generic\". Expected \"file_change\".".into();
    // Only transcript indices and temp dirs differ: not a change.
    let sparse = cases
        .iter_mut()
        .find(|c| c.id == "acme@2.0/sparse-request")
        .unwrap();
    let trial = sparse
        .trials
        .iter_mut()
        .find(|t| t.check == "subject-kind")
        .unwrap();
    trial.message = trial
        .message
        .replace("#1", "#9")
        .replace("acp-case-", "acp-case-Zz");
    // Slower: 40 ms → 900 ms.
    sparse.duration_ms = 900;
    // Removed and added cases.
    cases.retain(|c| c.id != "acme@1.0/exec-each[skip]");
    let mut added = cases[0].clone();
    added.id = "acme@1.0/brand-new".into();
    for t in &mut added.trials {
        t.name = t
            .name
            .replace("hostile-text", "brand-new")
            .replace("edit-approve", "brand-new");
    }
    cases.push(added);
    // A new check on a case present in both runs.
    let mut extra = cases[1].trials[0].clone();
    extra.name = format!("{}::new-check", cases[1].id);
    extra.check = "new-check".into();
    extra.grade = KnownGrade::Warn.into();
    cases[1].trials.push(extra);
    // A passing trial now not applicable: no failure either side, another grade.
    let passing = cases
        .iter_mut()
        .flat_map(|c| c.trials.iter_mut())
        .find(|t| t.grade == KnownGrade::Pass)
        .unwrap();
    passing.grade = KnownGrade::NotApplicable.into();
    let regraded = passing.name.clone();

    let old_sparse_ms = old
        .run
        .cases
        .iter()
        .find(|c| c.id == "acme@2.0/sparse-request")
        .unwrap()
        .duration_ms;
    assert!(
        old_sparse_ms < 300,
        "the fixture's case is fast ({old_sparse_ms} ms)"
    );

    let d = diff(&old, &new, Thresholds::default());
    assert_eq!(
        d.changed
            .iter()
            .map(|c| c.trial.as_str())
            .collect::<Vec<_>>(),
        vec!["acme@1.0/edit-approve::subject-kind"]
    );
    assert_eq!(d.cases_removed, vec!["acme@1.0/exec-each[skip]"]);
    assert_eq!(d.cases_added, vec!["acme@1.0/brand-new"]);
    assert_eq!(d.trials_added.len(), 1);
    assert!(d.trials_added[0].ends_with("::new-check"));
    assert_eq!(d.slower.len(), 1);
    assert_eq!(d.slower[0].case, "acme@2.0/sparse-request");
    // The added case's failing subject-kind is a new failure; warn is not failing.
    assert_eq!(
        d.new_failures
            .iter()
            .map(|c| c.trial.as_str())
            .collect::<Vec<_>>(),
        vec!["acme@1.0/brand-new::subject-kind"]
    );

    assert_eq!(
        d.regraded
            .iter()
            .map(|c| c.trial.as_str())
            .collect::<Vec<_>>(),
        vec![regraded.as_str()]
    );

    let text = text(&d);
    assert!(
        text.contains("other grades (no failure either side) (1):"),
        "{text}"
    );
    assert!(text.contains("changed failure messages (1):"), "{text}");
    assert!(
        text.contains("+ [fail] approval #20 shows subject \"generic\""),
        "{text}"
    );
    assert!(
        text.contains("slower (by more than 50% and 250 ms) (1):"),
        "{text}"
    );
    assert!(text.trim_end().ends_with(
        "1 new failure, 0 fixed, 1 changed, 1 other grades, 1 case added, 1 removed, 1 slower"
    ));

    let page = html(&d).unwrap();
    for id in [
        "new-failures",
        "changed",
        "cases-added",
        "cases-removed",
        "trials-added",
        "regraded",
        "slower",
    ] {
        assert!(page.contains(&format!("id=\"{id}\"")), "no section {id}");
    }
    assert!(!page.contains("id=\"fixed\""));
}

#[test]
fn thresholds_need_both_the_percentage_and_the_milliseconds() {
    let old = load("reference");
    let mut new = old.clone();
    for c in &mut new.run.cases {
        c.duration_ms += 200; // Large in percent, small in time.
    }
    assert!(diff(&old, &new, Thresholds::default()).slower.is_empty());
    let loose = Thresholds {
        slower_pct: 50.0,
        slower_ms: 100,
    };
    assert_eq!(diff(&old, &new, loose).slower.len(), old.run.cases.len());
}

/// The diff page links each changed trial into both runs' reports: every link opens a case page
/// that exists and lands on that trial's section; a run whose report is not on disk gets none,
/// and a directory that holds no report is refused by name.
#[test]
fn the_diff_page_links_each_changed_trial_into_both_reports() {
    let reference = load("reference");
    let mutant = load("always-command");
    let tmp = tempfile::tempdir().unwrap();
    let (old_dir, new_dir) = (tmp.path().join("old/report"), tmp.path().join("new/report"));
    write_report(std::slice::from_ref(&reference), &old_dir).unwrap();
    write_report(std::slice::from_ref(&mutant), &new_dir).unwrap();
    let page_dir = tmp.path().join("pages");
    std::fs::create_dir_all(&page_dir).unwrap();

    let old = ReportPages::locate(&reference, Some(&old_dir)).unwrap();
    let new = ReportPages::locate(&mutant, Some(&new_dir)).unwrap();
    let mut d = diff(&reference, &mutant, Thresholds::default());
    link_reports(&mut d, old.as_ref(), new.as_ref(), &page_dir);
    assert_eq!(d.new_failures.len(), 3);
    let page = html(&d).unwrap();
    for change in &d.new_failures {
        for (href, report) in [(&change.old_href, "old"), (&change.new_href, "new")] {
            let href = href
                .as_deref()
                .unwrap_or_else(|| panic!("{}: no {report} link", change.trial));
            assert!(href.starts_with(&format!("../{report}/report/")), "{href}");
            assert!(
                page.contains(&format!("href=\"{href}\"")),
                "{href} not on the page"
            );
            let (file, anchor) = href.split_once('#').unwrap();
            let target = std::fs::read_to_string(page_dir.join(file))
                .unwrap_or_else(|e| panic!("{href} opens no page: {e}"));
            assert!(
                target.contains(&format!("id=\"{anchor}\"")),
                "{href}: no #{anchor}"
            );
            let check = change.trial.split_once("::").unwrap().1;
            assert_eq!(anchor, format!("check-{check}"));
        }
    }

    // Without a report on disk, nothing is linked (the fixtures have no report/ next to them).
    assert_eq!(ReportPages::locate(&reference, None).unwrap(), None);
    let mut unlinked = diff(&reference, &mutant, Thresholds::default());
    link_reports(&mut unlinked, None, new.as_ref(), &page_dir);
    assert!(
        unlinked
            .new_failures
            .iter()
            .all(|c| c.old_href.is_none() && c.new_href.is_some())
    );
    assert!(!html(&unlinked).unwrap().contains("class=\"before\""));

    // A named directory without a report is an error that names it.
    let err = ReportPages::locate(&reference, Some(&page_dir)).unwrap_err();
    assert!(err.to_string().contains("holds no report"), "{err}");
}
