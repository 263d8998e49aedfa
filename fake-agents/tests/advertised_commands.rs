//! Scenarios prompt only with what the agent advertised: a prompt that is a slash command
//! (`/summary …`) follows an `available_commands_update` of that session listing the command, as
//! real agents send it right after `session/new` (docs/agents/). A client that offers or sends
//! only advertised commands is right to do something else with an unadvertised one.

use std::collections::HashSet;
use std::path::Path;

use acp_fake_agents::scenario::{Scenario, StepKind, UserStep, load_dir};
use serde_json::Value;

/// The command names an `available_commands_update` frame lists (a `${profile.NAME}` update is
/// looked up in the scenario's agent profile).
fn advertised(scenario: &Scenario, frame: &Value) -> Vec<String> {
    let mut update = frame.pointer("/params/update").cloned().unwrap_or_default();
    if let Some(name) = update
        .as_str()
        .and_then(|s| s.strip_prefix("${profile.")?.strip_suffix('}'))
    {
        update = scenario
            .profile
            .as_ref()
            .and_then(|p| p.frames.iter().find(|(n, _)| n == name))
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
    }
    if update.get("sessionUpdate").and_then(Value::as_str) != Some("available_commands_update") {
        return Vec::new();
    }
    update
        .get("availableCommands")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| Some(c.get("name")?.as_str()?.to_owned()))
        .collect()
}

/// `Err` naming the first slash-command prompt no earlier step advertised.
fn check(scenario: &Scenario) -> Result<usize, String> {
    let mut known: HashSet<String> = HashSet::new();
    let mut prompts = 0;
    for step in scenario.all_steps() {
        match &step.kind {
            StepKind::Send { frame, .. } => {
                if let Ok(value) = frame.value() {
                    known.extend(advertised(scenario, &value));
                }
            }
            StepKind::User(UserStep::Prompt { text, .. }) => {
                let Some(command) = text.strip_prefix('/') else {
                    continue;
                };
                let name = command.split_whitespace().next().unwrap_or_default();
                prompts += 1;
                if !known.contains(name) {
                    return Err(format!(
                        "{}: the user types {text:?}, but no earlier available_commands_update advertised `{name}` (advertised: {:?})",
                        scenario.path.display(),
                        known
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(prompts)
}

#[test]
fn every_slash_command_prompt_follows_its_advertisement() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let (scenarios, errors) = load_dir(&dir);
    assert!(errors.is_empty(), "{errors:?}");
    let mut slash = 0;
    for scenario in &scenarios {
        slash += check(scenario).unwrap_or_else(|e| panic!("{e}"));
    }
    assert!(slash > 0, "no slash-command prompt in the corpus");
}

/// The check can fail: the same scenario without its advertisement does.
#[test]
fn a_slash_command_never_advertised_is_refused() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../scenarios/qwen-code/0.14/slash-command-notification.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    let advert = "send = '''{\"jsonrpc\":\"2.0\",\"method\":\"session/update\",\"params\":{\"sessionId\":\"${sessionId}\",\"update\":\"${profile.available_commands}\"}}'''";
    assert!(text.contains(advert), "the scenario advertises its command");
    let without = text.replace(advert, "delay_ms = 1");
    let profiles = acp_fake_agents::profile::Profiles::embedded().expect("embedded profiles");
    let scenario = acp_fake_agents::scenario::parse(
        "qwen-code/0.14/slash-command-notification.toml",
        &without,
        profiles,
    )
    .unwrap();
    let err = check(&scenario).unwrap_err();
    assert!(
        err.contains("no earlier available_commands_update advertised `summary`"),
        "{err}"
    );
}
