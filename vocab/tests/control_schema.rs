//! The typed control vocabulary and the published schema (harness/control-v1.schema.json) say
//! the same thing: every value the types can take serialises to a message the schema accepts,
//! every message type the schema defines has a variant, and the documented examples
//! (harness/CONTROL.md) read back as typed messages.

use std::collections::BTreeSet;

use acp_vocab::control::{
    Approval, ApprovalResolved, ClientInfo, Command, CommandType, Event, Hello, HelloPolicy,
    HistoryEntry, HistoryKind, Item, ListedSession, Message, Observed, Outcome, PresentedOption,
    Reopen, ResolvedBy, SessionLoaded, Subject, Turn, TurnState,
};
use acp_vocab::policy::{Scope, ToolKind};
use serde_json::{Value, json};

const SCHEMA: &str = include_str!("../../harness/control-v1.schema.json");
const CONTROL_MD: &str = include_str!("../../harness/CONTROL.md");

fn validator() -> jsonschema::Validator {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    jsonschema::validator_for(&schema).unwrap()
}

fn observed() -> Observed {
    Observed {
        by: "acpx".into(),
        from: "stdout".into(),
        evidence: "Allow? (y/N)".into(),
    }
}

fn commands() -> Vec<Command> {
    vec![
        Command::NewSession {
            seq: 1,
            session: "s1".into(),
            cwd: "/tmp/w".into(),
        },
        Command::Prompt {
            seq: 2,
            session: "s1".into(),
            text: "edit".into(),
        },
        Command::Choose {
            seq: 3,
            request_id: json!(0),
            option_id: "once".into(),
        },
        Command::Choose {
            seq: 3,
            request_id: json!("r-1"),
            option_id: "once".into(),
        },
        Command::Choose {
            seq: 3,
            request_id: Value::Null,
            option_id: "".into(),
        },
        Command::Cancel {
            seq: 4,
            session: "s1".into(),
        },
        // session lifecycle
        Command::LoadSession {
            seq: 6,
            session: "s2".into(),
            session_id: "ses_0".into(),
            cwd: "/tmp/w".into(),
        },
        Command::ResumeSession {
            seq: 7,
            session: "s3".into(),
            session_id: "ses_0".into(),
            cwd: "/tmp/w".into(),
        },
        Command::ListSessions { seq: 8, cwd: None },
        Command::ListSessions {
            seq: 9,
            cwd: Some("/tmp/w".into()),
        },
        Command::CloseSession {
            seq: 10,
            session: "s2".into(),
        },
        // modes and config options
        Command::SetMode {
            seq: 11,
            session: "s1".into(),
            mode_id: "plan".into(),
        },
        Command::SetConfigOption {
            seq: 12,
            session: "s1".into(),
            config_id: "model".into(),
            value: "opus".into(),
        },
        Command::Shutdown { seq: 5 },
    ]
}

fn events() -> Vec<Event> {
    let mut out = Vec::new();
    let mut hello = Hello::new(
        ClientInfo {
            name: "c".into(),
            version: "1".into(),
        },
        CommandType::ALL.to_vec(),
    );
    out.push(Event::Hello(hello.clone()));
    hello.policy = Some(HelloPolicy::default());
    out.push(Event::Hello(hello.clone()));
    hello.policy = Some(HelloPolicy {
        approves: Some(ToolKind::ALL.to_vec()),
        scope: Some(Scope::Anywhere),
        allow_always: Some(true),
    });
    out.push(Event::Hello(hello));
    out.push(Event::SessionOpened {
        session: "s1".into(),
        session_id: "ses_1".into(),
    });
    for (subject, observed) in Subject::ALL
        .into_iter()
        .zip([None, Some(observed())].into_iter().cycle())
    {
        out.push(Event::Item(Item {
            session_id: "ses_1".into(),
            tool_call_id: "t".into(),
            item_type: subject,
            status: "pending".into(),
            title: "edit".into(),
            observed: observed.clone(),
        }));
        out.push(Event::Approval(Approval {
            session_id: "ses_1".into(),
            request_id: json!(0),
            tool_call_id: Some("t".into()),
            subject,
            options: Some(vec![PresentedOption {
                option_id: "once".into(),
                label: "Allow".into(),
            }]),
            observed,
        }));
    }
    out.push(Event::Approval(Approval {
        session_id: "ses_1".into(),
        request_id: json!("x"),
        tool_call_id: Some("t".into()),
        subject: Subject::Read,
        options: None,
        observed: Some(observed()),
    }));
    for (outcome, by) in [
        (Outcome::Selected, ResolvedBy::User),
        (Outcome::Selected, ResolvedBy::Policy),
        (Outcome::Cancelled, ResolvedBy::Cancel),
    ] {
        out.push(Event::ApprovalResolved(ApprovalResolved {
            session_id: "ses_1".into(),
            request_id: json!(0),
            outcome,
            option_id: (outcome == Outcome::Selected).then(|| "once".into()),
            by: Some(by),
            observed: (by == ResolvedBy::Policy).then(observed),
        }));
    }
    for state in TurnState::ALL {
        out.push(Event::Turn(Turn {
            session_id: "ses_1".into(),
            state,
            stop_reason: state.is_end().then(|| "end_turn".into()),
            message: (state == TurnState::Failed).then(|| "boom".into()),
            observed: (state == TurnState::Cancelled).then(observed),
        }));
    }
    // session lifecycle
    for how in [Reopen::Load, Reopen::Resume] {
        out.push(Event::SessionLoaded(SessionLoaded {
            session: "s2".into(),
            session_id: "ses_0".into(),
            how,
            history: if how == Reopen::Load {
                vec![
                    HistoryEntry {
                        kind: HistoryKind::UserMessage,
                        text: Some("fix it".into()),
                        tool_call_id: None,
                    },
                    HistoryEntry {
                        kind: HistoryKind::ToolCall,
                        text: None,
                        tool_call_id: Some("t".into()),
                    },
                ]
            } else {
                Vec::new()
            },
        }));
    }
    out.push(Event::SessionsListed {
        seq: 8,
        sessions: vec![ListedSession {
            session_id: "ses_0".into(),
            cwd: Some("/tmp/w".into()),
            title: None,
        }],
    });
    out.push(Event::SessionClosed {
        session: "s2".into(),
        session_id: "ses_0".into(),
    });
    // modes and config options
    out.push(Event::Mode(acp_vocab::modes::ModeShown {
        session_id: "ses_1".into(),
        mode_id: "plan".into(),
    }));
    out.push(Event::ConfigOption(acp_vocab::modes::ConfigOptionShown {
        session_id: "ses_1".into(),
        config_id: "model".into(),
        value: "opus".into(),
    }));
    // the plan
    out.push(Event::Plan(acp_vocab::plan::PlanShown {
        session_id: "ses_1".into(),
        entries: vec![
            acp_vocab::plan::PlanEntryShown {
                content: "Add tests".into(),
                status: "pending".into(),
                priority: Some("medium".into()),
            },
            acp_vocab::plan::PlanEntryShown {
                content: "Ship".into(),
                status: "in_progress".into(),
                priority: None,
            },
        ],
    }));
    out.push(Event::Plan(acp_vocab::plan::PlanShown {
        session_id: "ses_1".into(),
        entries: vec![],
    }));
    out.push(Event::Error {
        seq: Some(3),
        message: "no such button".into(),
        observed: None,
    });
    out.push(Event::Error {
        seq: None,
        message: "".into(),
        observed: Some(Observed {
            by: "cli".into(),
            from: "exit status".into(),
            evidence: "exit code 1".into(),
        }),
    });
    out
}

#[test]
fn every_variant_serialises_to_a_message_the_schema_accepts_and_reads_back() {
    let v = validator();
    let all: Vec<Message> = commands()
        .into_iter()
        .map(Message::Command)
        .chain(events().into_iter().map(Message::Event))
        .collect();
    for msg in &all {
        let json = serde_json::to_value(msg).unwrap();
        if let Some(err) = v.iter_errors(&json).next() {
            panic!("{json} is not valid: {err} (at {})", err.instance_path());
        }
        let back: Message = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(&back, msg, "{json} reads back as it was written");
        assert_eq!(
            json.as_object().unwrap().keys().next().map(String::as_str),
            Some("type"),
            "{json}: the type word comes first, as CONTROL.md writes it"
        );
    }
}

#[test]
fn every_message_type_the_schema_defines_has_a_variant() {
    let schema: Value = serde_json::from_str(SCHEMA).unwrap();
    let defined = |group: &str| -> BTreeSet<String> {
        schema["$defs"][group]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let name = r["$ref"].as_str().unwrap().rsplit('/').next().unwrap();
                schema["$defs"][name]["properties"]["type"]["const"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    let commands: BTreeSet<String> = commands()
        .iter()
        .map(|c| c.type_name().to_owned())
        .collect();
    let events: BTreeSet<String> = events().iter().map(|e| e.type_name().to_owned()).collect();
    assert_eq!(commands, defined("Command"));
    assert_eq!(events, defined("Event"));
    // The closed vocabularies are the schema's too.
    let words = |def: &str| -> BTreeSet<String> {
        let node = &schema["$defs"];
        let list = match def {
            "Subject" => &node["Subject"]["enum"],
            "State" => &node["Turn"]["properties"]["state"]["enum"],
            "Supports" => &node["Hello"]["properties"]["supports"]["items"]["enum"],
            "Kinds" => &node["Policy"]["properties"]["approves"]["items"]["enum"],
            _ => unreachable!(),
        };
        list.as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_owned())
            .collect()
    };
    let of = |it: Vec<&str>| it.into_iter().map(str::to_owned).collect::<BTreeSet<_>>();
    assert_eq!(
        of(Subject::ALL.iter().map(|s| s.as_str()).collect()),
        words("Subject")
    );
    assert_eq!(
        of(TurnState::ALL.iter().map(|s| s.as_str()).collect()),
        words("State")
    );
    assert_eq!(
        of(CommandType::ALL.iter().map(|s| s.as_str()).collect()),
        words("Supports")
    );
    assert_eq!(
        of(ToolKind::ALL.iter().map(|s| s.as_str()).collect()),
        words("Kinds")
    );
}

#[test]
fn the_documented_examples_read_as_typed_messages_and_write_back_the_same() {
    let mut seen = 0;
    for line in CONTROL_MD.lines() {
        let Some(pos) = line.find("{\"type\"") else {
            continue;
        };
        let Ok(json) = serde_json::from_str::<Value>(&line[pos..]) else {
            continue;
        };
        let msg: Message = serde_json::from_value(json.clone())
            .unwrap_or_else(|e| panic!("{line}: not a typed message: {e}"));
        assert_eq!(serde_json::to_value(&msg).unwrap(), json, "{line}");
        seen += 1;
    }
    assert!(seen >= 12, "only {seen} examples found in CONTROL.md");
}

#[test]
fn the_closed_vocabularies_refuse_other_words() {
    let item = json!({"type":"item","sessionId":"s","toolCallId":"t","itemType":"shell","status":"x","title":"t"});
    assert!(serde_json::from_value::<Event>(item).is_err());
    let turn = json!({"type":"turn","sessionId":"s","state":"exploded"});
    assert!(serde_json::from_value::<Event>(turn).is_err());
    assert!(serde_json::from_value::<Command>(json!({"type":"choose","seq":1})).is_err());
}
