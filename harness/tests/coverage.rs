//! The protocol-surface coverage table (`acp-harness coverage`, shown in scenarios/README.md):
//! every stable method of the pinned schema in each direction and every `session/update`
//! variant is exercised by a scenario or explained in scenarios/coverage.toml, no explanation is
//! stale, and the README's generated section is current.

use acp_harness::coverage::cli::{readme_state, table_of};
use acp_harness::suite;

#[test]
fn every_item_has_a_scenario_or_a_sourced_explanation_and_none_is_stale() {
    let dir = suite::scenarios_dir(None).expect("scenarios folder");
    let table = table_of(&dir).expect("the corpus and scenarios/coverage.toml load");
    let problems = table.problems();
    assert!(
        problems.is_empty(),
        "the protocol-surface coverage table is not whole:\n{}\n(add a scenario, or explain the gap in scenarios/coverage.toml; then run: cargo run -p acp-harness -- coverage --write-readme)",
        problems.join("\n")
    );
    // The table really is read off the schema: the rows include both directions of
    // $/cancel_request and the unknown-variant row.
    let labels: Vec<String> = table.rows.iter().map(|r| r.item.label()).collect();
    for needle in [
        "agent→client $/cancel_request",
        "client→agent $/cancel_request",
        "client→agent session/cancel",
        "session/update usage_update",
        "extra unknown-update",
    ] {
        assert!(
            labels.iter().any(|l| l == needle),
            "no row {needle}: {labels:?}"
        );
    }
}

#[test]
fn the_readme_shows_the_current_table() {
    let dir = suite::scenarios_dir(None).expect("scenarios folder");
    let table = table_of(&dir).expect("table");
    let (want, now) = readme_state(&dir, &table).expect("README with its generated section");
    assert!(
        want == now,
        "scenarios/README.md's generated coverage section is stale; regenerate it with:\n  cargo run -p acp-harness -- coverage --write-readme"
    );
}
