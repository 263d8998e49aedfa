//! The in-process fuzz target's turn: the same [`PermissionTurn`] and the same agent frames as
//! the pipe driver, handed straight to a client's mapping functions (a [`Mapping`]), with no
//! process, pipe or async runtime in between. What the mapping shows is written into a
//! synthetic transcript as the control events an adapter would report (its `hello`, with the
//! policy it declares, first), and graded by the permission checks (`subject-kind`,
//! `offered-options`, `stable-item-type`, `auto-approval`) — the harness's own checks, not a
//! re-implementation. Before the card, the mapping's own decision code may answer by itself
//! ([`Mapping::decide`]); then no card is shown and nobody clicks, as with a real client.
//!
//! Entries are recorded without their raw text (checks read the parsed JSON of a wire frame and
//! the typed message of a control entry), control entries without their JSON too; both are filled
//! in only for a finding's summary, which keeps a turn in the tens of microseconds.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::OnceLock;

use acp_vocab::control::{
    Approval, ApprovalResolved, Command, Event, Item, Message, Outcome, PresentedOption,
    ResolvedBy, Subject,
};
use acp_vocab::method::Method;
use acp_vocab::transcript::{Direction, Entry, ParsedControl};
use serde_json::{Value, json};

use super::exit_cleanup::remove_at_exit;
use super::frames::{Names, object};
use super::input::{Action, PermissionTurn};
use super::verdict::{Verdict, is_finding, summary};
use acp_judge::checks::{
    AutoApproval, Check, OfferedOptions, StableItemType, SubjectKind, Trial, frame_line,
};
use acp_judge::record::{CaseMeta, CaseRecord, RunEnd};
use acp_judge::wire_model::WireModel;

const SESSION_ID: &str = "sess_fuzz";
const TOOL_CALL_ID: &str = "call_1";

thread_local! {
    /// A turn's [`CaseRecord`], kept for the thread's next turn between [`play`]s (its
    /// transcript emptied).
    static RECORD: RefCell<Option<CaseRecord>> = const { RefCell::new(None) };
}

/// The turn's workspace (the session's `cwd`) and a directory outside it.
struct Dirs {
    root: PathBuf,
    workspace: String,
    outside: String,
}

static DIRS: OnceLock<Dirs> = OnceLock::new();

/// `work` and `outside` in a directory of this process's own, created on first use, as the pipe
/// driver makes them (live.rs), and removed when the process exits. A client's decision resolves
/// the places a tool call names on the real filesystem (`..`, symlinks); under a fixed path such
/// as `/work` its answers depended on what the host has there, while `auto-approval` reads the
/// record, which names no symlinks. Nobody else writes here, so the two agree.
fn dirs() -> &'static Dirs {
    DIRS.get_or_init(|| {
        let made = (|| -> std::io::Result<Dirs> {
            let root = tempfile::Builder::new()
                .prefix("acp-fuzz-mapping-")
                .tempdir()?
                .keep()
                .canonicalize()?;
            let (work, outside) = (root.join("work"), root.join("outside"));
            for dir in [&work, &outside] {
                std::fs::create_dir(dir)?;
            }
            Ok(Dirs {
                workspace: work.to_string_lossy().into_owned(),
                outside: outside.to_string_lossy().into_owned(),
                root,
            })
        })();
        let dirs = made.unwrap_or_else(|e| panic!("in-process fuzz: no workspace directory: {e}"));
        remove_at_exit(&dirs.root);
        dirs
    })
}

/// A timeline item as the client shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemShown {
    pub item_type: Subject,
    pub status: String,
    pub title: String,
}

/// An approval card as the client shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub subject: Subject,
    /// `(optionId, label)` per button, in display order.
    pub buttons: Vec<(String, String)>,
}

/// A client's permission mapping, called the way its UI code calls it.
pub trait Mapping {
    /// The `hello` its adapter sends (control protocol v1, an [`Event::Hello`]), with the
    /// `policy` it declares.
    fn hello(&self) -> Event;
    /// The agent announced the tool call (`tool_call`, `tool_call_update`, or the request's
    /// `toolCall`; `update` is that object). The item as now shown, if it is new or changed.
    fn announce(&mut self, session_id: &str, update: &Value) -> Option<ItemShown>;
    /// The option the client answers a `session/request_permission` (`params`) with by itself
    /// (its policy, a remembered grant), or `None` to show the card. Called after the request's
    /// announcement; `workspace` is the session's `cwd`.
    fn decide(&mut self, params: &Value, workspace: &str) -> Option<String>;
    /// The card for a `session/request_permission` (`params`).
    fn approval(&mut self, params: &Value) -> Card;
    /// The user clicked the button of `option_id`: the optionId the client answers with, or
    /// `None` if the card has no such button.
    fn choose(&mut self, option_id: &str) -> Option<String>;
}

/// The checks that grade a mapping in-process.
fn checks() -> [&'static dyn Check; 4] {
    [
        &SubjectKind,
        &OfferedOptions,
        &StableItemType,
        &AutoApproval,
    ]
}

/// Entries of a synthetic transcript.
struct Log {
    entries: Vec<Entry>,
}

impl Log {
    fn push(&mut self, direction: Direction, conn: u32, json: Value) -> usize {
        self.push_parsed(direction, conn, json, ParsedControl::default())
    }

    fn push_parsed(
        &mut self,
        direction: Direction,
        conn: u32,
        json: Value,
        parsed_control: ParsedControl,
    ) -> usize {
        let index = self.entries.len();
        let mut entry = Entry::parsed(index, index as u64, conn, direction, String::new(), json);
        entry.parsed_control = parsed_control;
        self.entries.push(entry);
        index
    }

    /// A control message, recorded parsed only: the checks read the typed message
    /// (`Entry::control`), never a control entry's JSON, which is a `null` placeholder until a
    /// finding's summary needs it ([`with_text`]). Serializing every event of every turn to JSON
    /// was 6 % of an execution under libFuzzer.
    fn control(&mut self, direction: Direction, message: Message) {
        self.push_parsed(direction, 0, Value::Null, ParsedControl::parsed(message));
    }

    fn agent(&mut self, frame: Value) {
        self.push(Direction::AgentToClient, 1, frame);
    }

    fn client(&mut self, frame: Value) {
        self.push(Direction::ClientToAgent, 1, frame);
    }

    fn event(&mut self, event: Event) {
        self.control(Direction::AdapterToHarness, Message::Event(event));
    }

    fn command(&mut self, command: Command) {
        self.control(Direction::HarnessToAdapter, Message::Command(command));
    }

    fn item(&mut self, shown: Option<ItemShown>) {
        if let Some(item) = shown {
            self.event(Event::Item(Item {
                session_id: SESSION_ID.into(),
                tool_call_id: TOOL_CALL_ID.into(),
                item_type: item.item_type,
                status: item.status,
                title: item.title,
                observed: None,
            }));
        }
    }
}

/// Plays one turn against `mapping` and grades it. `Err` holds a readable summary of a finding.
pub fn play(turn: &PermissionTurn, mapping: &mut impl Mapping) -> Result<(), String> {
    let dirs = dirs();
    let names = Names {
        session_id: SESSION_ID,
        tool_call_id: TOOL_CALL_ID,
        cwd: &dirs.workspace,
        outside: &dirs.outside,
        template: false,
    };
    // The record of the thread's previous turn: its metadata and its transcript's buffer are
    // reused (a dozen strings and a vector per fuzz input otherwise).
    let mut record = RECORD
        .with(|slot| slot.borrow_mut().take())
        .unwrap_or_else(|| record(Vec::with_capacity(16)));
    let mut log = Log {
        entries: std::mem::take(&mut record.transcript),
    };
    log.entries.clear();
    log.event(mapping.hello());
    let request_id = json!(0);
    for frame in [
        turn.announce.as_ref().map(|s| names.announce(s)),
        turn.progress.as_ref().map(|s| names.progress(s)),
    ]
    .into_iter()
    .flatten()
    {
        let shown = mapping.announce(SESSION_ID, &frame["params"]["update"]);
        log.agent(frame);
        log.item(shown);
    }
    let request = names.request(turn, &request_id);
    // The request's toolCall is one more announcement, then the card is shown.
    let shown = mapping.announce(SESSION_ID, &request["params"]["toolCall"]);
    let own = mapping.decide(&request["params"], names.cwd);
    let card = own.is_none().then(|| mapping.approval(&request["params"]));
    log.agent(request);
    if turn.action == Action::Leave {
        // Sent with the request, as the pipe driver does.
        log.agent(names.withdraw(&request_id));
    }
    log.item(shown);
    let (selected, by) = match card {
        Some(card) => (
            user_acts(turn, mapping, card, &request_id, &mut log),
            ResolvedBy::User,
        ),
        None => (own, ResolvedBy::Policy),
    };
    let (outcome, resolved) = match &selected {
        Some(id) => (
            object([
                ("outcome", "selected".into()),
                ("optionId", id.as_str().into()),
            ]),
            (Outcome::Selected, Some(id.clone()), by),
        ),
        None => (
            object([("outcome", "cancelled".into())]),
            (Outcome::Cancelled, None, ResolvedBy::Cancel),
        ),
    };
    // Built pair by pair: `json!` with values in it serializes each one again.
    log.client(object([
        ("jsonrpc", "2.0".into()),
        ("id", request_id.clone()),
        ("result", object([("outcome", outcome)])),
    ]));
    let (outcome, option_id, by) = resolved;
    log.event(Event::ApprovalResolved(ApprovalResolved {
        session_id: SESSION_ID.into(),
        request_id: request_id.clone(),
        outcome,
        option_id,
        by: Some(by),
        observed: None,
    }));
    let allowed = selected
        .as_deref()
        .and_then(|id| turn.kind_of(id))
        .is_some_and(|k| k.is_allow());
    if let Some(frame) = names.finish(turn, allowed && turn.action != Action::Cancel) {
        let shown = mapping.announce(SESSION_ID, &frame["params"]["update"]);
        log.agent(frame);
        log.item(shown);
    }
    record.transcript = log.entries;
    let graded = grade(turn, &mut record);
    record.transcript.clear();
    RECORD.with(|slot| *slot.borrow_mut() = Some(record));
    graded
}

/// The card is shown and the user acts on it: the option the client answers with, `None` for
/// `cancelled`.
fn user_acts(
    turn: &PermissionTurn,
    mapping: &mut impl Mapping,
    card: Card,
    request_id: &Value,
    log: &mut Log,
) -> Option<String> {
    let options = card
        .buttons
        .into_iter()
        .map(|(option_id, label)| PresentedOption { option_id, label })
        .collect();
    log.event(Event::Approval(Approval {
        session_id: SESSION_ID.into(),
        request_id: request_id.clone(),
        tool_call_id: Some(TOOL_CALL_ID.into()),
        subject: card.subject,
        options: Some(options),
        observed: None,
    }));
    match (turn.action, turn.chosen()) {
        (Action::Choose(_), Some(option)) => {
            log.command(Command::Choose {
                seq: 1,
                request_id: request_id.clone(),
                option_id: option.id.as_str().into(),
            });
            let answer = mapping.choose(option.id.as_str());
            if answer.is_none() {
                log.event(Event::Error {
                    seq: Some(1),
                    message: "no such button".into(),
                    observed: None,
                });
            }
            answer
        }
        (Action::Cancel, _) => {
            log.command(Command::Cancel {
                seq: 1,
                session: "s1".into(),
            });
            log.client(json!({"jsonrpc":"2.0","method": Method::SessionCancel.as_str(),"params":{"sessionId":SESSION_ID}}));
            None
        }
        _ => None,
    }
}

/// Grades the turn's synthetic transcript. `Err` holds a readable summary of a finding.
fn grade(turn: &PermissionTurn, record: &mut CaseRecord) -> Result<(), String> {
    let model = WireModel::new(&record.transcript);
    let mut trials: Vec<Trial> = checks()
        .iter()
        .map(|check| {
            let finding = check.evaluate_with(record, &model);
            Trial {
                check: check.id(),
                rules: check.rules(),
                requirement: check.requirement(),
                grade: finding.grade,
                rule: finding.rule,
                message: finding.message,
                frames: finding.frames,
            }
        })
        .collect();
    drop(model);
    if !trials.iter().any(is_finding) {
        return Ok(());
    }
    // A finding: give the entries their raw text and cite the frames under each message, as
    // `grade_case` does (which is not called here: it would link every check, the JSON Schema
    // validators included, into a binary whose every instrumented edge libFuzzer scans per input).
    record.transcript.iter_mut().for_each(with_text);
    let model = WireModel::new(&record.transcript);
    for trial in &mut trials {
        for &frame in &trial.frames {
            trial.message.push('\n');
            trial.message.push_str(&frame_line(&model, frame));
        }
    }
    drop(model);
    let verdict = Verdict { trials };
    Err(summary(turn, record, &verdict, "in-process mapping", None))
}

/// Gives an entry of a turn with a finding what a recorded entry has: a control message its
/// JSON (recorded as a placeholder, see [`Log::control`]), every entry its raw text.
fn with_text(entry: &mut Entry) {
    if entry.json() == Some(&Value::Null) {
        if let Some(json) = entry.control().and_then(|m| serde_json::to_value(m).ok()) {
            entry.set_json(Some(json));
        }
    }
    entry.raw = entry.json().map(Value::to_string).unwrap_or_default();
}

fn record(transcript: Vec<Entry>) -> CaseRecord {
    CaseRecord {
        meta: CaseMeta {
            case_id: "fuzz/mapping_inprocess".into(),
            title: "permission turn played in-process".into(),
            agent: "fuzz".into(),
            version: "mapping_inprocess".into(),
            provenance: vec!["fuzz/README.md (mapping_inprocess target)".into()],
            file: String::new(),
        },
        transcript,
        control_plane: true,
        control_supports: vec![
            "new_session".into(),
            "prompt".into(),
            "choose".into(),
            "cancel".into(),
        ],
        workspace: dirs().workspace.clone().into(),
        outside: dirs().outside.clone().into(),
        files_after: Default::default(),
        symlinks: Default::default(),
        end: RunEnd::Completed,
        stderr_tail: String::new(),
        repro: "cargo fuzz run mapping_inprocess <artifact>".into(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The turn's directories are the process's own, resolved already (the client's decision
    /// and `auto-approval` then see the same paths), with `outside` not inside the workspace.
    #[test]
    fn the_workspace_is_a_directory_of_the_processs_own() {
        let dirs = super::dirs();
        let (work, outside) = (Path::new(&dirs.workspace), Path::new(&dirs.outside));
        assert!(work.is_dir() && outside.is_dir(), "{work:?} {outside:?}");
        assert_eq!(work.canonicalize().expect("resolves"), work);
        assert!(work.starts_with(&dirs.root) && outside.starts_with(&dirs.root));
        assert!(!outside.starts_with(work));
        assert_ne!(work, Path::new("/work"));
    }
}
