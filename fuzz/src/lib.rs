//! The reference client's permission mapping behind `acp_harness::fuzz::inprocess::Mapping`, for
//! the in-process target `mapping_inprocess`.
//!
//! The calls are the ones `clients/reference/src/client.rs` makes for a permission request: every
//! announcement goes through `Timeline::announce` (the item the timeline shows), the card's
//! subject is `classify` of the effective tool call, its buttons are `parse_options` + `labels`,
//! and a click answers with the option found on the card. Before the card, `decide.rs`'s
//! `Decider` (with the turn's `--policy`) may answer by itself, as `Client::own_answer` does; the
//! hello is `control::hello`, which declares that policy. No process, pipe or runtime: the same
//! turn the pipe target plays, at memory speed, with libFuzzer's coverage feedback inside the
//! mapping code.

use std::path::Path;
use std::sync::OnceLock;

use acp_harness::fuzz::PolicyChoice;
use acp_harness::fuzz::inprocess::{Card, ItemShown, Mapping, play};
use acp_reference_client::approvals::{self, PermissionOption};
use acp_reference_client::decide::{Decider, Policy};
use acp_reference_client::subject::{Subject, classify};
use acp_reference_client::timeline::{ItemView, Timeline};
use acp_reference_client::{client, control};
use acp_vocab::control::Event;
use mimalloc::MiMalloc;
use serde_json::Value;

/// Both targets allocate for every input; mimalloc makes that cheap.
#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

/// The reference client's mapping state for one turn.
#[derive(Default)]
pub struct ReferenceMapping {
    /// The policy it was started with (`decider` holds it parsed).
    policy: PolicyChoice,
    timeline: Timeline,
    /// What it approves without asking (no grants: a turn has one request).
    decider: Decider,
    /// The request's options as parsed by `decide`, for its card: the client parses a request's
    /// options once and decides and shows the card from the same list (client/agent.rs).
    offered: Option<Vec<PermissionOption>>,
    /// The buttons of the card on screen.
    card: Vec<PermissionOption>,
}

impl ReferenceMapping {
    /// The reference client started with this policy (`--policy`).
    pub fn new(policy: PolicyChoice) -> Self {
        ReferenceMapping {
            policy,
            decider: Decider::new(parsed(policy), None),
            ..ReferenceMapping::default()
        }
    }
}

/// The position of a policy choice in [`PolicyChoice::ALL`], the index of the per-choice tables.
fn slot(choice: PolicyChoice) -> usize {
    PolicyChoice::ALL
        .iter()
        .position(|&c| c == choice)
        .expect("PolicyChoice::ALL lists every choice")
}

/// The hello of the reference client started with each policy choice: `control::hello` of the
/// parsed `--policy`, as the client sends it once when it starts; built once per process here
/// too (it was built for every input).
fn hello_of(choice: PolicyChoice) -> Event {
    static HELLOS: OnceLock<[Event; PolicyChoice::ALL.len()]> = OnceLock::new();
    let table = HELLOS.get_or_init(|| {
        PolicyChoice::ALL.map(|choice| {
            control::hello(
                client::NAME,
                &client::version(None),
                parsed(choice).as_ref(),
            )
        })
    });
    table[slot(choice)].clone()
}

/// The reference client's parse of a policy choice's `--policy`. A client parses its flag once,
/// when it starts; each is parsed once per process here too (the JSON of `trusted_workspace`
/// was parsed for every input).
fn parsed(choice: PolicyChoice) -> Option<Policy> {
    static PARSED: OnceLock<[Option<Policy>; PolicyChoice::ALL.len()]> = OnceLock::new();
    let table = PARSED.get_or_init(|| {
        PolicyChoice::ALL.map(|choice| {
            choice.flag().map(|flag| {
                Policy::parse(flag).unwrap_or_else(|e| panic!("fuzz policy {flag:?}: {e}"))
            })
        })
    });
    table[slot(choice)].clone()
}

/// The options of a `session/request_permission` (`params`) the card can show, as the client
/// parses them (an option without a string id is skipped).
fn parse_options(params: &Value) -> Vec<PermissionOption> {
    let offered = params["options"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    approvals::parse_options(offered).0
}

/// The control vocabulary word of a subject (`file_change`, …).
fn shown(view: ItemView) -> ItemShown {
    ItemShown {
        item_type: view.item_type,
        status: view.status,
        title: view.title,
    }
}

impl Mapping for ReferenceMapping {
    fn hello(&self) -> Event {
        hello_of(self.policy)
    }

    fn decide(&mut self, params: &Value, workspace: &str) -> Option<String> {
        let options = self.offered.insert(parse_options(params));
        self.decider.answer_for(
            &self.timeline,
            params["sessionId"].as_str()?,
            Path::new(workspace),
            params["toolCall"].as_object()?,
            options,
        )
    }

    fn announce(&mut self, session_id: &str, update: &Value) -> Option<ItemShown> {
        let update = update.as_object()?;
        let id = update.get("toolCallId")?.as_str()?;
        self.timeline.announce(session_id, id, update, 1).map(shown)
    }

    fn approval(&mut self, params: &Value) -> Card {
        let session_id = params["sessionId"].as_str().unwrap_or_default();
        let tool_call_id = params["toolCall"]["toolCallId"]
            .as_str()
            .unwrap_or_default();
        let subject = self
            .timeline
            .call(session_id, tool_call_id)
            .map_or(Subject::Generic, classify);
        let options = self.offered.take().unwrap_or_else(|| parse_options(params));
        let labels = approvals::labels(&options);
        let buttons = options
            .iter()
            .zip(labels)
            .map(|(o, label)| (o.option_id.clone(), label))
            .collect();
        self.card = options;
        Card { subject, buttons }
    }

    fn choose(&mut self, option_id: &str) -> Option<String> {
        self.card
            .iter()
            .find(|o| o.option_id == option_id)
            .map(|o| o.option_id.clone())
    }
}

/// The body of `mapping_inprocess`: decode, play against a fresh mapping, panic with the
/// summary on a finding.
pub fn fuzz_mapping_inprocess(data: &[u8]) {
    let Some(turn) = acp_harness::fuzz::decode(data) else {
        return;
    };
    if let Err(summary) = play(&turn, &mut ReferenceMapping::new(turn.policy)) {
        panic!("{summary}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed seeds replay clean in-process too (`cargo test --manifest-path
    /// fuzz/Cargo.toml`, stable Rust).
    #[test]
    fn seeds_replay_in_process() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("seeds/permission_mapping");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).expect("seeds") {
            let bytes = std::fs::read(entry.expect("entry").path()).expect("seed");
            fuzz_mapping_inprocess(&bytes);
            n += 1;
        }
        assert!(n >= 20, "{n} seeds");
    }

    /// The hello built once per policy choice is the one the client builds from its parsed
    /// `--policy` (each choice declares its own policy).
    #[test]
    fn the_hello_of_each_choice_declares_its_policy() {
        for choice in PolicyChoice::ALL {
            let mapping = ReferenceMapping::new(choice);
            let built = control::hello(
                client::NAME,
                &client::version(None),
                mapping.decider.policy(),
            );
            assert_eq!(mapping.hello(), built, "{choice:?}");
            let Event::Hello(hello) = built else {
                panic!("not a hello")
            };
            assert_eq!(
                hello.policy.is_some(),
                choice.flag().is_some(),
                "{choice:?}"
            );
        }
        assert_eq!(
            ReferenceMapping::default().hello(),
            hello_of(PolicyChoice::ClientDefault)
        );
    }

    /// In-process turns per second without libFuzzer (its coverage bookkeeping is measured by
    /// `cargo fuzz run`): `cargo test --release --manifest-path fuzz/Cargo.toml --lib --
    /// --ignored --nocapture`. fuzz/README.md reports both figures.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn throughput_in_process() {
        let turns: Vec<_> =
            acp_harness::fuzz::pseudo_random_turns(0x9e37_79b9_7f4a_7c15, 20_000, 256).collect();
        let started = std::time::Instant::now();
        let mut findings = 0;
        let mut first = None;
        for turn in &turns {
            if let Err(summary) = play(turn, &mut ReferenceMapping::new(turn.policy)) {
                findings += 1;
                first.get_or_insert(summary);
            }
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{} in-process turns in {secs:.2} s = {:.0} turns/s ({findings} finding(s))",
            turns.len(),
            turns.len() as f64 / secs
        );
        assert_eq!(findings, 0, "first finding:\n{}", first.unwrap_or_default());
    }

    fn seed(name: &str) -> acp_harness::fuzz::PermissionTurn {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("seeds/permission_mapping")
            .join(name);
        acp_harness::fuzz::decode(&std::fs::read(path).expect("seed")).expect("decodes")
    }

    /// A field bug in one call of the mapping; the other calls are the reference client's.
    #[derive(Clone, Copy)]
    enum Bug {
        /// Answers every request by itself with its first option, whatever the policy.
        ApproveEverything,
        /// Shows every card as a command (always-command, bb #1719).
        AlwaysCommand,
        /// Answers a click from a fixed list, "allow" or "reject", not with the option clicked
        /// (unoffered-option, ZERO #915).
        FixedAnswerList,
    }

    struct Broken(ReferenceMapping, Bug);

    impl Mapping for Broken {
        fn hello(&self) -> Event {
            self.0.hello()
        }
        fn announce(&mut self, s: &str, u: &Value) -> Option<ItemShown> {
            self.0.announce(s, u)
        }
        fn decide(&mut self, p: &Value, w: &str) -> Option<String> {
            match self.1 {
                Bug::ApproveEverything => p["options"][0]["optionId"].as_str().map(str::to_owned),
                _ => self.0.decide(p, w),
            }
        }
        fn approval(&mut self, p: &Value) -> Card {
            let card = self.0.approval(p);
            match self.1 {
                Bug::AlwaysCommand => Card {
                    subject: Subject::Command,
                    ..card
                },
                _ => card,
            }
        }
        fn choose(&mut self, o: &str) -> Option<String> {
            let clicked = self.0.card.iter().find(|option| option.option_id == o)?;
            match self.1 {
                Bug::FixedAnswerList => Some(
                    if clicked.is_allow() {
                        "allow"
                    } else {
                        "reject"
                    }
                    .to_owned(),
                ),
                _ => self.0.choose(o),
            }
        }
    }

    /// The in-process turn is decided by the reference client's own decision code: a read inside
    /// the workspace under read-only is answered by itself, and a decision code that approves
    /// what the policy does not cover is caught by `auto-approval`.
    #[test]
    fn the_decision_is_the_reference_clients_and_a_wrong_one_is_caught() {
        let read = seed("policy-read-only-read-inside.json");
        let mut mapping = ReferenceMapping::new(read.policy);
        let params = serde_json::json!({"sessionId":"s","toolCall":{"toolCallId":"c","kind":"read"},
            "options":[{"optionId":"once","name":"Allow","kind":"allow_once"}]});
        // As the client does: the request's toolCall is announced, then decided on.
        mapping.announce("s", &params["toolCall"]);
        assert_eq!(mapping.decide(&params, "/work").as_deref(), Some("once"));
        play(&read, &mut ReferenceMapping::new(read.policy)).expect("clean");
        for name in [
            "policy-read-only-execute-requested-as-read.json",
            "policy-read-only-title-cat-no-kind.json",
            "policy-workspace-write-edit-through-parent.json",
            "policy-workspace-write-edit-sibling-prefix.json",
        ] {
            let turn = seed(name);
            play(&turn, &mut ReferenceMapping::new(turn.policy)).expect("the reference asks");
            let summary = play(
                &turn,
                &mut Broken(ReferenceMapping::new(turn.policy), Bug::ApproveEverything),
            )
            .expect_err("approving everything breaks the policy");
            assert!(
                summary.contains("auto-approval [fail]"),
                "{name}: {summary}"
            );
        }
    }

    /// The in-process target can fail on the mapping's field bugs: every card shown as a command
    /// is caught on an edit (`subject-kind`), an answer that is not the option clicked
    /// (`offered-options`). The summary shows the control messages, which are recorded parsed
    /// only and given their JSON for it.
    #[test]
    fn a_wrong_mapping_is_caught() {
        let turn = acp_harness::fuzz::decode(
            br#"{"request":{"full":{"kind":"edit","title":"a"}},"options":[{"id":"o","name":"O","kind":"allow_once"}],"action":{"choose":0}}"#,
        )
        .expect("decodes");
        play(&turn, &mut ReferenceMapping::default()).expect("the reference maps it");
        for (bug, expected, shown) in [
            (
                Bug::AlwaysCommand,
                "subject-kind [fail]",
                r#""subject":"command""#,
            ),
            (
                Bug::FixedAnswerList,
                "offered-options [fail]",
                r#""optionId":"allow""#,
            ),
        ] {
            let summary = play(&turn, &mut Broken(ReferenceMapping::default(), bug))
                .expect_err("a field bug");
            assert!(summary.contains(expected), "{summary}");
            assert!(summary.contains(shown), "{summary}");
        }
    }
}
