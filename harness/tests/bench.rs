//! `acp-harness bench` end to end, made cheap: every section on a two-case corpus and tiny
//! series. It asserts what the benchmark wrote, never how fast anything was: speed is measured
//! by the benchmark itself (docs/performance.md), not by timed tests.

use std::process::Command;

use serde_json::Value;

#[test]
fn every_section_runs_and_the_json_has_the_figures() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let out = Command::new(env!("CARGO_BIN_EXE_acp-harness"))
        .args([
            "bench",
            "--quick",
            "--filter",
            "opencode@1.18/session-setup",
            "--filter",
            "qwen-code@0.14/cancel-pending-permission",
            "--frames",
            "10,40",
            "--cases",
            "2,4",
            "--large",
            "50",
            "--out",
        ])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();

    assert_eq!(report["schema"], "acp-harness/bench/v1");
    assert_eq!(
        report["config"]["sections"],
        serde_json::json!(["baseline", "suite", "large", "scale-frames", "scale-cases"])
    );
    // A debug build says so, on stderr and in the JSON.
    let debug = report["build_profile"] == "debug";
    assert_eq!(debug, stderr.contains("debug build"), "{stderr}");

    for section in ["baseline", "suite"] {
        let figures = &report[section];
        assert_eq!(figures["cases"], 2, "{section}: {figures}");
        assert_eq!(figures["incomplete"], 0, "{section}: {figures}");
        assert!(positive(&figures["median"]["wall_ms"]), "{section}");
        assert!(positive(&figures["cases_per_s"]), "{section}");
        assert!(
            positive(&figures["median"]["harness_peak_rss_kib"]),
            "{section}"
        );
    }
    assert_eq!(report["baseline"]["graded"], false);
    assert_eq!(report["suite"]["graded"], true);
    assert_eq!(
        report["suite"]["failing_trials"], 0,
        "the reference client passes"
    );
    assert!(positive(&report["suite"]["outputs_ms"]));
    assert!(positive(&report["ratio"]["wall"]));
    assert!(positive(&report["ratio"]["cpu"]));

    let large = &report["large"];
    assert_eq!(large["updates"], 50);
    assert_eq!(large["passed"], true, "{large}");
    assert!(large["frames"].as_u64().unwrap() > 50, "{large}");
    assert!(positive(&large["median_ms"]));

    let frames = report["scale_frames"]["points"].as_array().unwrap();
    assert_eq!(frames.len(), 2);
    assert!(frames.iter().all(|p| p["passed"] == true), "{frames:?}");
    assert!(frames[1]["frames"].as_u64() > frames[0]["frames"].as_u64());
    // One round (--quick): each point is that round.
    for p in frames {
        assert_eq!(
            p["rounds_wall_ms"],
            serde_json::json!([p["sample"]["wall_ms"]]),
            "{p}"
        );
        assert_eq!(
            p["rounds_parse_ms"],
            serde_json::json!([p["parse_ms"]]),
            "{p}"
        );
        assert_eq!(
            p["rounds_peak_rss_kib"],
            serde_json::json!([p["sample"]["harness_peak_rss_kib"]]),
            "{p}"
        );
    }
    // Two points make a fitted slope (its value is the machine's business).
    assert!(report["scale_frames"]["growth"]["time_exponent"].is_f64());
    let cases = report["scale_cases"]["points"].as_array().unwrap();
    let counts: Vec<_> = cases.iter().map(|p| p["cases"].as_u64()).collect();
    assert_eq!(counts, [Some(2), Some(4)]);
    // Each point ran the cases and wrote run.json, then made the report from disk.
    for p in cases {
        assert!(positive(&p["sample"]["wall_ms"]), "{p}");
        // One round (--quick): the point is that round.
        assert_eq!(
            p["rounds_wall_ms"],
            serde_json::json!([p["sample"]["wall_ms"]]),
            "{p}"
        );
        assert!(positive(&p["report"]["wall_ms"]), "{p}");
        assert!(positive(&p["report"]["harness_peak_rss_kib"]), "{p}");
    }

    let goals = report["goals"].as_array().unwrap();
    let (corpus_goals, rest) = goals.split_at(4);
    let (cases_goals, frames_goals) = rest.split_at(7);
    assert!(
        corpus_goals
            .iter()
            .all(|g| g["met"].is_boolean() && positive(&g["value"])),
        "{goals:?}"
    );
    // The cases series' goals compare points at 10, 30, 1,000 and 10,000 cases: with 2 and 4
    // only the fitted slopes (the run's, the report's) are measured, and the rest say they were
    // not.
    let measured = |goals: &[serde_json::Value]| -> Vec<bool> {
        goals.iter().map(|g| g["met"].is_boolean()).collect()
    };
    assert_eq!(
        measured(cases_goals),
        [false, false, true, false, false, false, true],
        "{cases_goals:?}"
    );
    for slope in [&cases_goals[2], &cases_goals[6]] {
        assert!(slope["goal"].as_str().unwrap().contains("exponent"));
    }
    // The frames series' memory slope is measured; the 10⁵-update goals need that point.
    assert_eq!(
        measured(frames_goals),
        [true, false, false],
        "{frames_goals:?}"
    );
    assert!(
        frames_goals[0]["goal"]
            .as_str()
            .unwrap()
            .contains("a frame")
    );
    // Where the cases' directories went, and on what: it shapes the cases series.
    let temp_dir = &report["machine"]["temp_dir"];
    assert!(temp_dir["path"].is_string(), "{temp_dir}");
    assert!(stdout.contains("case directories in "), "{stdout}");
    // The table on stdout has the same sections.
    for heading in ["baseline", "suite", "ratio", "large", "scale:", "goals"] {
        assert!(stdout.contains(heading), "no {heading:?} in\n{stdout}");
    }
}

fn positive(v: &Value) -> bool {
    v.as_f64().is_some_and(|x| x > 0.0 && x.is_finite())
}
