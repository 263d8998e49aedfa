//! Hand-built cases for the checks' unit tests.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::PathBuf;

use acp_vocab::note::{FaultKind, Note};
use acp_vocab::transcript::{Direction, Recorder};
use serde_json::{Value, json};

use super::{Check, Finding, Grade};
use crate::record::{CaseMeta, CaseRecord, RunEnd};

pub const WS: &str = "/tmp/case/work";
pub const SID: &str = "ses_1";

/// A transcript under construction plus the non-frame facts of the run.
pub struct Case {
    pub rec: Recorder,
    pub control_plane: bool,
    pub end: RunEnd,
    pub files_after: BTreeMap<PathBuf, Option<Vec<u8>>>,
    /// Symlinks in the case directory at the end (`CaseRecord::symlinks`).
    pub symlinks: BTreeMap<PathBuf, PathBuf>,
    /// The client's stderr tail (`CaseRecord::stderr_tail`).
    pub stderr_tail: String,
    /// Set by [`Case::fault_next`]: the fault and how many more agent frames carry it.
    faulted: Cell<Option<(FaultKind, usize)>>,
}

impl Default for Case {
    fn default() -> Self {
        Self::new()
    }
}

impl Case {
    pub fn new() -> Self {
        Case {
            rec: Recorder::new(),
            control_plane: true,
            end: RunEnd::Completed,
            files_after: BTreeMap::new(),
            symlinks: BTreeMap::new(),
            stderr_tail: "last words".into(),
            faulted: Cell::new(None),
        }
    }

    pub fn wire_only() -> Self {
        let mut c = Self::new();
        c.control_plane = false;
        c
    }

    pub fn c2a(&self, v: Value) -> usize {
        self.rec
            .record(1, Direction::ClientToAgent, v.to_string().as_bytes())
    }

    pub fn a2c(&self, v: Value) -> usize {
        self.a2c_raw(v.to_string().as_bytes())
    }

    /// An agent frame as bytes; marked with a fault while [`Case::fault_next`] says so.
    pub fn a2c_raw(&self, raw: &[u8]) -> usize {
        match self.faulted.get() {
            Some((kind, n)) => {
                self.faulted.set((n > 1).then_some((kind, n - 1)));
                self.rec
                    .record_fault(1, Direction::AgentToClient, raw, kind)
            }
            None => self.rec.record(1, Direction::AgentToClient, raw),
        }
    }

    /// The next `frames` agent frames are ones the harness broke on purpose: recorded as the
    /// engine records a `fault` step (its note, then each frame marked with the fault).
    pub fn fault_next(&self, kind: FaultKind, frames: usize) {
        self.rec.note(&Note::Fault {
            kind,
            step: Some("1".into()),
            conn: None,
        });
        self.faulted.set((frames > 0).then_some((kind, frames)));
    }

    pub fn c2a_raw(&self, raw: &[u8]) -> usize {
        self.rec.record(1, Direction::ClientToAgent, raw)
    }

    /// Adapter event (client → harness).
    pub fn ev(&self, v: Value) -> usize {
        self.rec
            .record(0, Direction::AdapterToHarness, v.to_string().as_bytes())
    }

    /// Harness command (harness → adapter).
    pub fn cmd(&self, v: Value) -> usize {
        self.rec
            .record(0, Direction::HarnessToAdapter, v.to_string().as_bytes())
    }

    pub fn note(&self, note: Note) -> usize {
        self.rec.note(note)
    }

    /// initialize + session/new (id 1, 2) answered with session `SID`, with the control plane's
    /// `new_session` / `session_opened` around it when there is one.
    pub fn handshake(&self) {
        if self.control_plane {
            self.cmd(json!({"type":"new_session","seq":1,"session":"s1","cwd":WS}));
        }
        self.c2a(
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,
            "clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":false},
            "clientInfo":{"name":"t","version":"1"}}}),
        );
        self.a2c(
            json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}),
        );
        self.c2a(json!({"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":WS,"mcpServers":[]}}));
        self.a2c(json!({"jsonrpc":"2.0","id":1,"result":{"sessionId":SID}}));
        if self.control_plane {
            self.ev(json!({"type":"session_opened","session":"s1","sessionId":SID}));
        }
    }

    /// `session/prompt` with id 2 (and the control `prompt` command before it).
    pub fn prompt(&self) -> usize {
        if self.control_plane {
            self.cmd(json!({"type":"prompt","seq":2,"session":"s1","text":"go"}));
        }
        self.c2a(
            json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":SID,
            "prompt":[{"type":"text","text":"go"}]}}),
        )
    }

    pub fn prompt_result(&self, stop_reason: &str) -> usize {
        self.a2c(json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":stop_reason}}))
    }

    pub fn update(&self, update: Value) -> usize {
        self.a2c(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":SID,"update":update}}))
    }

    pub fn permission(&self, id: Value, tool_call: Value, options: Value) -> usize {
        self.a2c(
            json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission",
            "params":{"sessionId":SID,"toolCall":tool_call,"options":options}}),
        )
    }

    pub fn select(&self, id: Value, option_id: &str) -> usize {
        self.c2a(json!({"jsonrpc":"2.0","id":id,"result":{"outcome":{"outcome":"selected","optionId":option_id}}}))
    }

    pub fn cancelled(&self, id: Value) -> usize {
        self.c2a(json!({"jsonrpc":"2.0","id":id,"result":{"outcome":{"outcome":"cancelled"}}}))
    }

    pub fn approval(&self, id: Value, tool_call_id: &str, subject: &str, options: Value) -> usize {
        self.ev(
            json!({"type":"approval","sessionId":SID,"requestId":id,"toolCallId":tool_call_id,
            "subject":subject,"options":options}),
        )
    }

    pub fn item(&self, tool_call_id: &str, item_type: &str) -> usize {
        self.ev(
            json!({"type":"item","sessionId":SID,"toolCallId":tool_call_id,"itemType":item_type,
            "status":"pending","title":"t"}),
        )
    }

    pub fn record(&self) -> CaseRecord {
        CaseRecord {
            meta: CaseMeta {
                case_id: "test@1/case".into(),
                title: "t".into(),
                agent: "test".into(),
                version: "1".into(),
                provenance: Vec::new(),
                file: "test/1/case.toml".into(),
            },
            transcript: self.rec.snapshot(),
            control_plane: self.control_plane,
            control_supports: if self.control_plane {
                vec![
                    "new_session".into(),
                    "prompt".into(),
                    "choose".into(),
                    "cancel".into(),
                ]
            } else {
                Vec::new()
            },
            workspace: PathBuf::from(WS),
            outside: PathBuf::from("/tmp/case/outside"),
            files_after: self.files_after.clone(),
            symlinks: self.symlinks.clone(),
            end: self.end.clone(),
            stderr_tail: self.stderr_tail.clone(),
            repro: "acp-harness replay test@1/case".into(),
        }
    }

    /// Grades the case with one check, and proves the finding names its rule
    /// ([`assert_names_its_rule`]): every check test is also a test of its rule ids.
    #[track_caller]
    pub fn grade(&self, check: &dyn Check) -> Finding {
        let finding = check.evaluate(&self.record());
        assert_names_its_rule(check, &finding);
        finding
    }
}

/// opencode's three options.
pub fn opts3() -> Value {
    json!([{"optionId":"once","kind":"allow_once","name":"Allow once"},
           {"optionId":"always","kind":"allow_always","name":"Always allow"},
           {"optionId":"reject","kind":"reject_once","name":"Reject"}])
}

/// The buttons an adapter shows for [`opts3`].
pub fn buttons3() -> Value {
    json!([{"optionId":"once","label":"Allow once"},
           {"optionId":"always","label":"Always allow"},
           {"optionId":"reject","label":"Reject"}])
}

#[track_caller]
pub fn assert_grade(finding: &Finding, grade: Grade, needle: &str) {
    assert_eq!(
        finding.grade, grade,
        "expected {grade:?} containing {needle:?}, got {finding:?}"
    );
    assert!(
        finding.message.contains(needle),
        "message {:?} does not contain {needle:?}",
        finding.message
    );
}

/// A `fail` or `warn` names exactly one rule, one of the check's own [`Check::rules`], and
/// that rule is in the catalogue; any other grade names none.
#[track_caller]
pub fn assert_names_its_rule(check: &dyn Check, finding: &Finding) {
    match (finding.grade, finding.rule) {
        (Grade::Fail | Grade::Warn, Some(rule)) => {
            assert!(
                check.rules().contains(&rule),
                "{}: a {:?} names R{rule}, which is not one of the check's rules {:?}",
                check.id(),
                finding.grade,
                check.rules()
            );
            assert!(
                crate::rules::get(rule).is_some(),
                "{}: R{rule} is not in judge/rules.toml",
                check.id()
            );
        }
        (Grade::Fail | Grade::Warn, None) => panic!(
            "{}: a {:?} names no rule: {}",
            check.id(),
            finding.grade,
            finding.message
        ),
        (_, Some(rule)) => panic!(
            "{}: a {:?} names R{rule}, but only fail and warn break rules",
            check.id(),
            finding.grade
        ),
        (_, None) => {}
    }
}
