use super::*;
use acp_fake_agents::profile::Profiles;

const SCENARIO: &str = r#"
[scenario]
id = "x"
title = "t"
agent = "a"
version = "1"
provenance = ["p"]

[[step]]
expect = "initialize"
reply = '{"protocolVersion":1}'

[[step]]
send = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":1,"size":2}}}'

[[step]]
fault = "invalid"
frame = '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"made_up"}}}'

[[step]]
send = '{"jsonrpc":"2.0","id":"e","method":"_x/ask","params":{}}'
as = "ext"
"#;

fn scenarios() -> Vec<Scenario> {
    vec![acp_fake_agents::scenario::parse("a/1/x.toml", SCENARIO, &Profiles::new()).unwrap()]
}

fn row<'t>(table: &'t Table, item: &Item) -> &'t Row {
    table.rows.iter().find(|r| &r.item == item).unwrap()
}

fn usage() -> Item {
    Item::Update("usage_update".into())
}

#[test]
fn frames_and_expectations_count_and_the_unknown_variant_is_an_extra() {
    let table = Table::build(&scenarios(), &ExplanationFile::default());
    for item in [
        client_method("initialize"),
        Item::Method {
            method: "session/update".into(),
            from: Side::Agent,
        },
        usage(),
        Item::Extra(Extra::UnknownUpdate),
        Item::Extra(Extra::ExtensionRequest),
    ] {
        assert_eq!(row(&table, &item).scenarios, ["a@1/x"], "{item:?}");
    }
    assert!(
        row(&table, &Item::Extra(Extra::ExtensionNotification))
            .scenarios
            .is_empty()
    );
}

#[test]
fn an_item_with_neither_scenario_nor_explanation_is_a_problem() {
    let table = Table::build(&scenarios(), &ExplanationFile::default());
    let problems = table.problems();
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("agent→client terminal/create: no scenario")),
        "{problems:#?}"
    );
    assert!(
        !problems
            .iter()
            .any(|p| p.starts_with("session/update usage_update"))
    );
}

#[test]
fn an_explanation_for_a_covered_item_is_stale_and_a_misnamed_one_an_orphan() {
    let data = parse(
        r#"
[[explanation]]
update = "usage_update"
why = "nobody"
sources = ["https://example.org/x"]

[[explanation]]
method = "terminal/nonsense"
from = "agent"
why = "typo"
sources = ["https://example.org/y"]

[[unstable]]
name = "session/prompt"
feature = "unstable_nothing"
"#,
    );
    let table = Table::build(&scenarios(), &data);
    let problems = table.problems();
    for needle in [
        "session/update usage_update: scenarios/coverage.toml explains why nothing covers it, but 1 scenario now does",
        "agent→client terminal/nonsense names nothing",
        "`session/prompt` is listed as unstable",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(needle)),
            "{needle}: {problems:#?}"
        );
    }
}

#[test]
fn an_explanation_needs_a_source_and_one_item() {
    assert!(
        data::parse("[[explanation]]\nupdate = \"plan\"\nwhy = \"w\"\nsources = []\n").is_err()
    );
    assert!(
        data::parse(
            "[[explanation]]\nupdate = \"plan\"\nextra = \"unknown-update\"\nwhy = \"w\"\nsources = [\"s\"]\n"
        )
        .is_err()
    );
    assert!(
        data::parse("[[explanation]]\nmethod = \"x\"\nwhy = \"w\"\nsources = [\"s\"]\n").is_err()
    );
}

#[test]
fn the_readme_section_is_replaced_between_its_markers() {
    let readme = format!("head\n{README_BEGIN}\nold\n{README_END}\ntail\n");
    assert_eq!(
        readme_with(&readme, "new\n").unwrap(),
        format!("head\n{README_BEGIN}\nnew\n{README_END}\ntail\n")
    );
    assert!(readme_with("no markers", "x").is_none());
}

fn parse(text: &str) -> ExplanationFile {
    data::parse(text).unwrap()
}
