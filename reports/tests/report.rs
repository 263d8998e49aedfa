//! The report written from the fixture runs: its pages link together, the failing frame is
//! highlighted and reachable, nothing loads from the network, JUnit and the Markdown summary say
//! what the runs say, and odd input (unknown grades, missing transcripts) still makes a report.

mod common;

use std::path::Path;

use acp_reports::{LoadedRun, write_report};
use acp_vocab::family::Family;
use common::{all_fixtures, attr_values, load, pages};

fn written(
    runs: &[LoadedRun],
) -> (
    tempfile::TempDir,
    std::collections::BTreeMap<std::path::PathBuf, String>,
) {
    let dir = tempfile::tempdir().unwrap();
    write_report(runs, dir.path()).unwrap();
    let pages = pages(dir.path());
    (dir, pages)
}

fn page<'a>(
    pages: &'a std::collections::BTreeMap<std::path::PathBuf, String>,
    path: &str,
) -> &'a str {
    pages.get(Path::new(path)).unwrap_or_else(|| {
        panic!(
            "no page {path}; pages: {:?}",
            pages.keys().collect::<Vec<_>>()
        )
    })
}

#[test]
fn the_index_shows_every_client_against_every_agent_version() {
    let (_dir, pages) = written(&all_fixtures());
    let index = page(&pages, "index.html");
    for client in [
        "acp-reference-client 0.1.0<",
        "acp-reference-client 0.1.0+always-command",
        ">sh<",
    ] {
        assert!(index.contains(client), "index lacks {client}");
    }
    assert!(index.contains("<code>acme@1.0</code>") && index.contains("<code>acme@2.0</code>"));
    // Each client row links to its two agent-version pages.
    let links: Vec<String> = attr_values(index, "href")
        .into_iter()
        .filter(|h| h.ends_with("acme-1.0.html") || h.ends_with("acme-2.0.html"))
        .collect();
    assert_eq!(links.len(), 6, "{links:?}");
    // The counts the index shows are the runs' own: 3 failing for the mutant, 50 crashes.
    assert!(index.contains("3 failing"), "mutant's failing count");
    assert!(index.contains("50 crash"), "crashing client's crash count");
    assert!(index.contains("53 failing trials across 3 client runs and 2 agent versions"));
}

#[test]
fn every_link_and_anchor_resolves() {
    let (dir, pages) = written(&all_fixtures());
    let mut checked = 0;
    for (path, text) in pages
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "html"))
    {
        let base = dir.path().join(path).parent().unwrap().to_path_buf();
        for href in attr_values(text, "href") {
            assert!(
                !href.contains(':'),
                "{path:?} links outside the report: {href}"
            );
            let (file, anchor) = href.split_once('#').unwrap_or((&href, ""));
            let target = if file.is_empty() {
                dir.path().join(path)
            } else {
                base.join(file)
            };
            let target_text = std::fs::read_to_string(&target)
                .unwrap_or_else(|_| panic!("{path:?} links to missing {href}"));
            if !anchor.is_empty() {
                assert!(
                    target_text.contains(&format!(" id=\"{anchor}\"")),
                    "{path:?} links to {href}, which has no such anchor"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 200, "only {checked} links checked");
}

#[test]
fn the_failing_frame_is_two_clicks_from_the_index() {
    let (dir, pages) = written(&[load("always-command")]);
    let index = page(&pages, "index.html");
    // Click 1: the index cell of acme@1.0.
    let agent_href = attr_values(index, "href")
        .into_iter()
        .find(|h| h.ends_with("acme-1.0.html"))
        .unwrap();
    let agent_path = Path::new(&agent_href);
    let agent = page(&pages, &agent_href);
    assert!(agent.contains("Needs attention"));
    // Click 2: an offending-frame link in the "needs attention" list.
    let frame_href = attr_values(agent, "href")
        .into_iter()
        .find(|h| h.contains("edit-approve") && h.contains("#f"))
        .expect("a direct link to an offending frame");
    let (case_file, anchor) = frame_href.split_once('#').unwrap();
    let case_path = agent_path.parent().unwrap().join(case_file);
    let case = std::fs::read_to_string(dir.path().join(&case_path)).unwrap();
    // The frame is in the wire log, marked as cited by the failing check.
    let row_at = case
        .find(&format!("<tr id=\"{anchor}\""))
        .expect("the frame's row");
    let row = &case[row_at..row_at + case[row_at..].find("</tr>").unwrap()];
    assert!(row.contains(" cited\""), "{row}");
    assert!(row.contains("⚑ subject-kind"), "{row}");
    // The failing check's section says what was required and links the same frame.
    assert!(case.contains("id=\"check-subject-kind\""));
    assert!(case.contains(&format!("class=\"fref\" href=\"#{anchor}\"")));
    assert!(case.contains("rules R56 R57 R58 R59"));
    // …and which rule the finding breaks, next to what was observed and expected.
    let breaks = case
        .find("<div>breaks</div>")
        .expect("the broken rule is shown");
    let found = case.find("<div>found</div>").expect("the finding");
    assert!(breaks < found);
    assert!(case[breaks..found].contains("R58"));
    assert!(case[breaks..found].contains("tool-calls#requesting-permission"));
}

#[test]
fn pages_are_self_contained_and_allow_no_network() {
    let (_dir, pages) = written(&all_fixtures());
    for (path, text) in pages
        .iter()
        .filter(|(p, _)| p.extension().is_some_and(|e| e == "html"))
    {
        for tag in common::tags(text) {
            assert!(!tag.contains(" src="), "{path:?} loads something: {tag}");
        }
        assert!(!text.contains("<link"), "{path:?} links a resource");
        assert!(!text.contains("<iframe"), "{path:?}");
        assert!(
            text.contains("content=\"default-src &#39;none&#39;; script-src &#39;sha256-"),
            "{path:?} has no CSP"
        );
        assert_eq!(
            text.matches("<script>").count(),
            1,
            "{path:?}: one inline script"
        );
        assert_eq!(
            text.matches("<style>").count(),
            1,
            "{path:?}: one inline stylesheet"
        );
    }
}

#[test]
fn client_text_is_escaped_everywhere() {
    let (_dir, pages) = written(&all_fixtures());
    let mut seen = 0;
    // HTML pages and JUnit XML; summary.md has its own test (payloads only inside code fences).
    for (path, text) in pages.iter().filter(|(p, _)| !p.ends_with("summary.md")) {
        assert!(
            !text.contains("<script>alert"),
            "{path:?} has a live script"
        );
        assert!(!text.contains("<img"), "{path:?} has a live img");
        for tag in common::tags(text) {
            assert!(!tag.contains("onerror"), "{path:?}: {tag}");
        }
        seen += text
            .matches("&#60;script&#62;alert(1)&#60;/script&#62;")
            .count();
    }
    assert!(
        seen > 10,
        "the payloads should appear, escaped ({seen} times)"
    );
}

#[test]
fn junit_has_a_suite_per_agent_version_and_a_testcase_per_trial() {
    let run = load("always-command");
    let (_dir, pages) = written(std::slice::from_ref(&run));
    let xml = page(&pages, "junit.xml");
    let report = quick_junit::Report::deserialize_from_str(xml).unwrap();
    let names: Vec<&str> = report.test_suites.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, vec!["acme@1.0", "acme@2.0"]);
    let trials: usize = run.run.cases.iter().map(|c| c.trials.len()).sum();
    let cases: usize = report.test_suites.iter().map(|s| s.test_cases.len()).sum();
    assert_eq!(cases, trials);
    let failing = report
        .test_suites
        .iter()
        .flat_map(|s| &s.test_cases)
        .find(|c| {
            c.classname.as_ref().map(|n| n.as_str()) == Some("edit-approve")
                && c.name.as_str() == "subject-kind"
        })
        .unwrap();
    match &failing.status {
        quick_junit::TestCaseStatus::NonSuccess {
            kind,
            description,
            message,
            ..
        } => {
            assert_eq!(*kind, quick_junit::NonSuccessKind::Failure);
            // The trial names its cause: the same finding in three cases is cause #1.
            let message = message.as_ref().unwrap().as_str();
            assert!(message.ends_with(" [cause #1: 3 cases]"), "{message}");
            let text = description.as_ref().unwrap().as_str();
            let (cause, text) = text.split_once('\n').unwrap();
            assert!(cause.starts_with("cause #1: 3 cases: "), "{cause}");
            let trial = run
                .run
                .cases
                .iter()
                .flat_map(|c| &c.trials)
                .find(|t| t.name == "acme@1.0/edit-approve::subject-kind");
            // The rule the finding breaks, on its own line, then the message.
            let trial = trial.unwrap();
            assert!(trial.rule.is_some());
            assert_eq!(text, trial.failure_text());
            assert!(text.starts_with("R58 (MAY) "), "{text}");
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    insta::assert_snapshot!("junit_always_command", xml);
}

#[test]
fn the_markdown_summary_of_a_fixed_run() {
    let (_dir, pages) = written(&[load("always-command")]);
    insta::assert_snapshot!("summary_always_command", page(&pages, "summary.md"));
}

#[test]
fn the_markdown_summary_names_every_run() {
    let (_dir, pages) = written(&all_fixtures());
    let md = page(&pages, "summary.md");
    assert_eq!(
        md.matches("\n## ").count() + usize::from(md.starts_with("## ")),
        3,
        "{md}"
    );
    assert!(md.contains("## ✅ acp-harness: all trials passed — acp-reference-client 0.1.0"));
    assert!(md.contains("## ❌ acp-harness: 50 failing trials — sh"));
    // 50 crashes are more than the summary lists; it says how many it left out.
    assert!(md.contains("… and 20 more: see the HTML report."));
    // Outside code fences, no client text can open a tag.
    let mut fenced = false;
    for line in md.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            assert!(
                !line.contains("<script>alert") && !line.contains("<img"),
                "{line}"
            );
        }
    }
}

#[test]
fn unknown_grades_are_shown_under_their_name_and_fail_in_junit() {
    let mut run = load("reference");
    run.run.cases[0].trials[0].grade = acp_reports::grade::Grade::of("flaky");
    let (_dir, pages) = written(&[run]);
    let case_page = pages
        .iter()
        .find(|(p, text)| {
            p.starts_with("acp-reference-client-0.1.0/cases") && text.contains("g-unknown")
        })
        .map(|(_, t)| t)
        .expect("a case page shows the unknown grade");
    assert!(case_page.contains(">flaky<"));
    assert!(page(&pages, "junit.xml").contains("type=\"unknown grade &quot;flaky&quot;\""));
    assert!(page(&pages, "index.html").contains("1 failing"));
}

#[test]
fn agent_pages_group_scenarios_by_family_in_report_order() {
    let mut run = load("reference");
    // The fixture's scenarios carry no family (it predates them): give some one, out of order.
    let scenarios: Vec<String> = {
        let mut ids: Vec<String> = run
            .run
            .cases
            .iter()
            .map(|c| c.scenario().to_owned())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    };
    assert!(scenarios.len() >= 3, "{scenarios:?}");
    let family_of = |scenario: &str| match scenarios.iter().position(|s| s == scenario) {
        Some(0) => Some(Family::Cancel),
        Some(1) => Some(Family::Setup),
        _ => None,
    };
    for case in &mut run.run.cases {
        case.family = family_of(case.scenario());
    }
    let (_dir, pages) = written(&[run]);
    let agent = page(&pages, "acp-reference-client-0.1.0/acme-1.0.html");
    let setup = agent.find("id=\"family-setup\"").expect("a setup heading");
    let cancel = agent
        .find("id=\"family-cancel\"")
        .expect("a cancel heading");
    let other = agent
        .find("id=\"family-other\"")
        .expect("an Other scenarios heading");
    assert!(
        setup < cancel && cancel < other,
        "setup, cancel, then the rest"
    );
    assert!(agent.contains(Family::Setup.title()) && agent.contains("Other scenarios"));
    // Each scenario's rows sit under its own family's heading.
    let row_of = |scenario: &str| {
        agent
            .find(&format!("<code>{scenario}</code>"))
            .unwrap_or_else(|| panic!("no row for {scenario}"))
    };
    assert!(setup < row_of(&scenarios[1]) && row_of(&scenarios[1]) < cancel);
    assert!(cancel < row_of(&scenarios[0]) && row_of(&scenarios[0]) < other);
    assert!(other < row_of(&scenarios[2]));
    assert_eq!(agent.matches("class=\"family-row").count(), 3);
}

#[test]
fn a_run_without_its_transcripts_still_makes_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let run_json = dir.path().join("run.json");
    std::fs::copy(common::fixture("always-command"), &run_json).unwrap();
    let mut run = acp_reports::load_run(&run_json).unwrap();
    run.run.cases[0].transcript = "../../etc/passwd".into();
    let out = dir.path().join("report");
    write_report(&[run], &out).unwrap();
    let pages = pages(&out);
    let missing = pages
        .values()
        .filter(|t| t.contains("No wire log: cannot read"))
        .count();
    assert_eq!(missing, 4, "four transcripts are missing");
    assert!(pages.values().any(|t| t.contains("is not inside the run")));
}

#[test]
fn a_run_without_cases_makes_a_report_that_says_so() {
    let mut run = load("reference");
    run.run.cases.clear();
    let (_dir, pages) = written(&[run]);
    let index = page(&pages, "index.html");
    assert!(
        index.contains("No failing trials across 1 client run and 0 agent versions."),
        "{index}"
    );
    assert!(page(&pages, "summary.md").contains("no trials ran"));
    assert!(page(&pages, "junit.xml").contains("tests=\"0\""));
}

#[test]
fn an_earlier_report_is_replaced_whole_and_other_directories_are_refused() {
    let runs = all_fixtures();
    let dir = tempfile::tempdir().unwrap();
    write_report(&runs, dir.path()).unwrap();
    // A page of the earlier report that the next one does not write is gone afterwards.
    let stale = dir.path().join("stale-case.html");
    std::fs::write(&stale, "old").unwrap();
    write_report(&runs, dir.path()).unwrap();
    assert!(!stale.exists(), "the earlier report was not replaced whole");
    assert!(dir.path().join("index.html").exists());

    // Someone's directory with other files in it is left untouched.
    let theirs = tempfile::tempdir().unwrap();
    let notes = theirs.path().join("notes.txt");
    std::fs::write(&notes, "mine").unwrap();
    let err = write_report(&runs, theirs.path()).unwrap_err().to_string();
    assert!(err.contains("holds no earlier report"), "{err}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "mine");
    assert!(!theirs.path().join("index.html").exists());
}

#[test]
fn a_report_from_run_json_on_disk_is_the_report_from_memory() {
    let names = ["reference", "always-command", "crashing"];
    let opened = |names: &[&str]| -> Vec<LoadedRun> {
        names
            .iter()
            .map(|n| acp_reports::open_run(&common::fixture(n)).unwrap())
            .collect()
    };
    for name in names {
        let on_disk = opened(&[name]);
        assert!(
            on_disk[0].run.cases.is_empty(),
            "{name}: cases stay on disk"
        );
        let (_a, from_disk) = written(&on_disk);
        let (_b, from_memory) = written(&[load(name)]);
        assert_eq!(
            from_disk.keys().collect::<Vec<_>>(),
            from_memory.keys().collect::<Vec<_>>()
        );
        for (path, text) in &from_memory {
            assert!(
                from_disk[path] == *text,
                "{name}: {} differs",
                path.display()
            );
        }
    }
    let (_a, from_disk) = written(&opened(&names));
    let (_b, from_memory) = written(&all_fixtures());
    assert!(from_disk == from_memory);
}

#[test]
fn junit_is_written_byte_for_byte_as_quick_junit_writes_it() {
    // quick_junit reads the streamed document back and writes it again: the same bytes, so
    // streaming it changed nothing of its form (its content is what the other tests check).
    let mut strict = load("always-command");
    strict.run.config.strict = true;
    for runs in [all_fixtures(), vec![load("crashing")], vec![strict]] {
        let (_dir, pages) = written(&runs);
        let xml = page(&pages, "junit.xml");
        let again = quick_junit::Report::deserialize_from_str(xml)
            .unwrap()
            .to_string()
            .unwrap();
        assert_eq!(again, xml);
    }
}

#[test]
fn a_scenario_of_many_cases_has_a_row_for_each_in_order() {
    // Its rows are made one at a time as the page is written (a scenario can have any number
    // of cases): every one must still be there, under the scenario's one heading, in id order.
    let mut run = load("reference");
    let each = run
        .run
        .cases
        .iter()
        .find(|c| c.id == "acme@1.0/exec-each[run]")
        .expect("the fixture's each scenario")
        .clone();
    for i in 0..40 {
        let mut case = each.clone();
        case.id = format!("acme@1.0/exec-each[o{i}]");
        run.run.cases.push(case);
    }
    let mut ids: Vec<String> = run
        .run
        .cases
        .iter()
        .filter(|c| c.scenario() == "exec-each" && c.agent == "acme")
        .map(|c| c.short_id().trim_start_matches("exec-each").to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids.len(), 42);
    let (_dir, pages) = written(&[run]);
    let agent = page(&pages, "acp-reference-client-0.1.0/acme-1.0.html");
    assert_eq!(agent.matches("<code>exec-each</code>").count(), 1);
    assert_eq!(agent.matches(" option\">").count(), ids.len());
    let mut from = agent.find("<code>exec-each</code>").unwrap();
    for label in &ids {
        let at = agent[from..]
            .find(&format!("<code>{label}</code>"))
            .unwrap_or_else(|| panic!("no row {label} after the one before it"));
        from += at;
    }
}

/// A full-screen client's case: the event its observer read from the screen, and its last
/// screen, are shown as the screen a person saw (rows kept, text escaped) next to the frame,
/// both in the wire log and under the finding that cites the event.
#[test]
fn screen_text_is_shown_as_the_person_saw_it_next_to_the_frames() {
    let dir = tempfile::tempdir().unwrap();
    let run_json = dir.path().join("run.json");
    std::fs::copy(common::fixture("always-command"), &run_json).unwrap();
    let transcripts = dir.path().join("transcripts");
    std::fs::create_dir(&transcripts).unwrap();
    let name = "acme@1.0_edit-approve.jsonl";
    let original = std::fs::read_to_string(
        common::fixture("always-command")
            .with_file_name("transcripts")
            .join(name),
    )
    .unwrap();
    let card = "┌──────────────────────┐\n│ Permission: <b>x</b> │\n│ 1) Allow once        │\n└──────────────────────┘";
    let mut lines: Vec<String> = original.lines().map(str::to_owned).collect();
    // Frame 14, cited by the failing subject-kind trial, as an observed event read from the
    // screen; then the last-screen note.
    let mut event: serde_json::Value = serde_json::from_str(&lines[14]).unwrap();
    assert_eq!(event["i"], 14);
    event["dir"] = "o2h".into();
    event["json"]["observed"] =
        serde_json::json!({"by": "tui", "from": "screen", "evidence": card});
    event["raw"] = event["json"].to_string().into();
    lines[14] = event.to_string();
    let last = lines.len();
    let note = serde_json::json!({"type": "screen", "text": "Done: end_turn\n> "});
    lines.push(
        serde_json::json!({"i": last, "t_us": 99999, "conn": 0, "dir": "note", "raw": note.to_string(), "json": note})
            .to_string(),
    );
    std::fs::write(transcripts.join(name), lines.join("\n") + "\n").unwrap();
    let run = acp_reports::load_run(&run_json).unwrap();
    let (_out, pages) = written(&[run]);
    let (_, case) = pages
        .iter()
        .find(|(p, _)| p.to_string_lossy().ends_with("edit-approve.html"))
        .expect("the case page");
    let shown = "<pre class=\"screen\">┌──────────────────────┐\n│ Permission: &#60;b&#62;x&#60;/b&#62; │\n│ 1) Allow once        │\n└──────────────────────┘</pre>";
    let row = |i: usize| {
        let at = case
            .find(&format!("<tr id=\"f{i}\""))
            .expect("the frame's row");
        &case[at..at + case[at..].find("</tr>").unwrap()]
    };
    assert!(row(14).contains(shown), "{}", row(14));
    assert!(row(14).contains("observer → harness"), "{}", row(14));
    assert!(
        row(last).contains("<pre class=\"screen\">Done: end_turn\n&#62; </pre>"),
        "{}",
        row(last)
    );
    // Under the finding, next to the cited frame.
    let cited = case.find("<table class=\"cited\">").expect("cited frames");
    let cited = &case[cited..cited + case[cited..].find("</table>").unwrap()];
    assert!(cited.contains(shown), "{cited}");
    // A frame read from elsewhere carries no screen.
    assert_eq!(row(12).matches("class=\"screen\"").count(), 0);
}
