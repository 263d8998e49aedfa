//! A permission request the client refuses on the wire (an error, no card) ends the harness's
//! wait for the card at once: the user's click or Stop aimed at it is skipped with a note that
//! says so, the case runs to its end, and the checks grade the refusal — not a step timeout.

use std::time::Duration;

use acp_harness::client_spec::ClientSpec;
use acp_harness::runner::{RunConfig, run_case};
use acp_harness::suite;
use acp_judge::checks::Grade;
use acp_judge::record::RunEnd;
use acp_vocab::transcript::Direction;

#[test]
fn a_request_refused_on_the_wire_skips_the_stop_without_a_timeout() {
    let scenarios = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut cfg = RunConfig::new(scenarios.canonicalize().unwrap()).unwrap();
    cfg.step_timeout = Duration::from_secs(5);
    // codex-acp 1.6 asks with `"rawInput": null`; this mutant answers such a request -32602.
    let case = suite::find_case(
        &cfg.scenarios_dir,
        "codex-acp@1.6/cancel-pending-permission",
    )
    .expect("the case exists");
    let client = ClientSpec::mutant("require-raw-input").expect("the mutant exists");
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(run_case(&case, &client, &cfg));

    assert_eq!(
        result.record.end,
        RunEnd::Completed,
        "{:?}",
        result.record.end
    );
    let skipped = result.record.transcript.iter().any(|e| {
        e.direction == Direction::Note
            && e.raw.contains("user_cancel_skipped")
            && e.raw.contains("on the wire")
    });
    assert!(
        skipped,
        "no note says the Stop was skipped for a wire answer"
    );
    for trial in &result.trials {
        assert_ne!(
            trial.grade,
            Grade::Timeout,
            "{}: {}",
            trial.check,
            trial.message
        );
    }
    let schema = result.trials.iter().find(|t| t.check == "schema").unwrap();
    assert_eq!(schema.grade, Grade::Fail, "{}", schema.message);
}
