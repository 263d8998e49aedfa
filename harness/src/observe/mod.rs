//! Observers: what a client without an adapter exposes itself (its stdout, its terminal, its exit
//! status), turned into the control events an adapter would have reported.
//!
//! A client profile names its observer (`observer = "acpx"`); each observer is one module with
//! the [`Rules`] for one client. The host here feeds the rules, records every event they derive
//! in the transcript in direction `o2h` ("observer → harness") with an `observed` field that
//! names the evidence, so reports and failure messages show that the event was observed and not
//! reported by an adapter. The checks then read these events like any adapter's: an observer is
//! never a special case in a check. The transcript starts with a note
//! `{"type":"observer","name":…,"reports":[…]}` that says which event types this observer can
//! report; a check graded from observed events needs all of its events there
//! (`Check::observable_with`).
//!
//! Whatever the profile, the host always drains the client's stdout, so a chatty client never
//! blocks on a full pipe.

mod acpx;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_fake_agents::transcript::{Direction, Recorder};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::client_spec::ClientSpec;
use crate::launch::ExitInfo;
use crate::wire_model::id_key;

/// Observer names a profile may use.
pub const NAMES: &[&str] = &[acpx::NAME];

/// True if `name` is an observer this harness has.
pub fn known(name: &str) -> bool {
    NAMES.contains(&name)
}

/// Longest stdout line an observer looks at; longer lines are skipped (and drained).
const MAX_LINE: usize = 16 << 20;

/// What the user did, as far as an observer needs to know (to say who resolved an approval).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UserAct {
    /// The user answered a prompt.
    Chose,
    /// The user cancelled the turn.
    Cancelled,
}

/// One client's observation rules: each call returns the control events (CONTROL.md shapes,
/// each with an `observed` object naming its evidence) the new evidence proves.
pub trait Rules: Send {
    /// Event `type`s this observer can report (the `observer` note's `reports`).
    fn reports(&self) -> &'static [&'static str];
    /// Where the evidence comes from, in words (the `observer` note's `from`).
    fn sources(&self) -> &'static str;
    /// One line the client printed on stdout (without the newline).
    fn stdout_line(&mut self, line: &str) -> Vec<Value>;
    /// Text the client wrote to its terminal (`tty = true` profiles), in chunks as they come.
    fn terminal(&mut self, _text: &str) -> Vec<Value> {
        Vec::new()
    }
    /// The client exited.
    fn exited(&mut self, _exit: &ExitInfo) -> Vec<Value> {
        Vec::new()
    }
    /// The user acted (the wire-only user tells the observer before it acts).
    fn user(&mut self, _act: UserAct) {}
}

/// The rules for a profile's observer name.
fn rules_for(spec: &ClientSpec) -> Option<Box<dyn Rules>> {
    match spec.wire.observer.as_deref() {
        Some(acpx::NAME) => Some(Box::new(acpx::Acpx::new(spec.wire.choose.clone()))),
        _ => None,
    }
}

struct Shared {
    rules: Mutex<Option<Box<dyn Rules>>>,
    rec: Recorder,
    /// Cards observed so far.
    cards: watch::Sender<Cards>,
}

/// Request ids (as [`id_key`]) of permission requests with an observed approval card.
#[derive(Debug, Default)]
struct Cards {
    /// Every request whose card was seen.
    shown: Vec<String>,
    /// Those not resolved yet: the client is prompting for them.
    open: Vec<String>,
}

impl Shared {
    /// Runs `f` on the rules and records what it returns.
    fn feed(&self, f: impl FnOnce(&mut dyn Rules) -> Vec<Value>) {
        let events = {
            let mut rules = self.rules.lock().unwrap_or_else(|e| e.into_inner());
            match rules.as_mut() {
                Some(r) => f(r.as_mut()),
                None => return,
            }
        };
        for event in events {
            self.rec.record(
                0,
                Direction::ObserverToHarness,
                event.to_string().as_bytes(),
            );
            let key = event.get("requestId").map(id_key);
            match (event.get("type").and_then(Value::as_str), key) {
                (Some("approval"), Some(key)) => self.cards.send_modify(|c| {
                    c.shown.push(key.clone());
                    c.open.push(key);
                }),
                (Some("approval_resolved"), Some(key)) => {
                    self.cards.send_modify(|c| c.open.retain(|k| *k != key))
                }
                _ => {}
            }
        }
    }
}

/// What the wire-only user may ask the observer.
#[derive(Clone)]
pub struct ObserverHandle {
    shared: Arc<Shared>,
}

impl ObserverHandle {
    /// True if the profile has an observer.
    pub fn active(&self) -> bool {
        self.shared
            .rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
    }

    /// Waits until an approval card for this request was observed; `Err` after `timeout`.
    pub async fn wait_shown(&self, request_id: &Value, timeout: Duration) -> Result<(), String> {
        let key = id_key(request_id);
        self.wait(request_id, timeout, move |c| c.shown.contains(&key))
            .await
    }

    /// Waits until the client prompts: for this request, or for another one it shows first (a
    /// client that asks one question at a time shows a later request only after the earlier one
    /// is answered, so a user who stops while both are pending stops at the first prompt).
    pub async fn wait_prompting(
        &self,
        request_id: &Value,
        timeout: Duration,
    ) -> Result<(), String> {
        let key = id_key(request_id);
        self.wait(request_id, timeout, move |c| {
            c.shown.contains(&key) || !c.open.is_empty()
        })
        .await
    }

    async fn wait(
        &self,
        request_id: &Value,
        timeout: Duration,
        ready: impl FnMut(&Cards) -> bool,
    ) -> Result<(), String> {
        let mut rx = self.shared.cards.subscribe();
        match tokio::time::timeout(timeout, rx.wait_for(ready)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err("the observer stopped".into()),
            Err(_) => Err(format!(
                "the client showed no prompt for request {request_id} within {} ms",
                timeout.as_millis()
            )),
        }
    }

    /// Tells the rules what the user is about to do.
    pub fn user(&self, act: UserAct) {
        let mut rules = self.shared.rules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = rules.as_mut() {
            r.user(act);
        }
    }
}

/// A running observer for one case.
pub struct Observer {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Observer {
    /// Starts reading the client's stdout and (for `tty` profiles) its terminal. Records the
    /// `observer` note when the profile has an observer.
    pub fn start(
        spec: &ClientSpec,
        stdout: Option<Box<dyn AsyncRead + Send + Unpin>>,
        terminal: Option<mpsc::UnboundedReceiver<Vec<u8>>>,
        rec: Recorder,
    ) -> Self {
        let rules = rules_for(spec);
        if let Some(r) = &rules {
            rec.note(json!({
                "type": "observer",
                "name": spec.wire.observer,
                "reports": r.reports(),
                "from": r.sources(),
            }));
        }
        let (cards, _) = watch::channel(Cards::default());
        let shared = Arc::new(Shared {
            rules: Mutex::new(rules),
            rec,
            cards,
        });
        let mut tasks = Vec::new();
        if let Some(stdout) = stdout {
            let shared = Arc::clone(&shared);
            tasks.push(tokio::spawn(read_lines(stdout, shared)));
        }
        if let Some(terminal) = terminal {
            let shared = Arc::clone(&shared);
            tasks.push(tokio::spawn(read_terminal(terminal, shared)));
        }
        Observer { shared, tasks }
    }

    pub fn handle(&self) -> ObserverHandle {
        ObserverHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Lets the readers reach the end of the client's output (bounded by `grace`), then tells
    /// the rules how the client exited.
    pub async fn finish(mut self, exit: &ExitInfo, grace: Duration) {
        for task in &mut self.tasks {
            if tokio::time::timeout(grace, &mut *task).await.is_err() {
                task.abort();
            }
        }
        self.shared.feed(|r| r.exited(exit));
    }
}

/// Feeds stdout to the rules line by line until EOF.
async fn read_lines(stdout: Box<dyn AsyncRead + Send + Unpin>, shared: Arc<Shared>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE {
            if !skip_line(&mut reader).await {
                break;
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        shared.feed(|r| r.stdout_line(text));
    }
}

/// Discards the rest of an overlong line without holding it; false at EOF or on an error.
async fn skip_line(reader: &mut BufReader<Box<dyn AsyncRead + Send + Unpin>>) -> bool {
    loop {
        let (consumed, done) = match reader.fill_buf().await {
            Ok([]) | Err(_) => return false,
            Ok(buf) => match buf.iter().position(|&b| b == b'\n') {
                Some(pos) => (pos + 1, true),
                None => (buf.len(), false),
            },
        };
        reader.consume(consumed);
        if done {
            return true;
        }
    }
}

/// Feeds terminal output to the rules in chunks until the terminal ends.
async fn read_terminal(mut terminal: mpsc::UnboundedReceiver<Vec<u8>>, shared: Arc<Shared>) {
    while let Some(chunk) = terminal.recv().await {
        let text = String::from_utf8_lossy(&chunk).into_owned();
        shared.feed(|r| r.terminal(&text));
    }
}

/// The `observed` object every derived event carries.
fn observed(by: &str, from: &str, evidence: impl Into<String>) -> Value {
    json!({"by": by, "from": from, "evidence": evidence.into()})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::testkit::{Case, SID, opts3};
    use crate::checks::{Grade, Trial, grade_case};

    fn observe(c: &Case, v: Value) -> usize {
        c.rec
            .record(0, Direction::ObserverToHarness, v.to_string().as_bytes())
    }

    fn observer_note(c: &Case, reports: &[&str]) {
        c.note(json!({"type":"observer","name":"acpx","reports":reports,"from":"test"}));
    }

    fn trial<'a>(trials: &'a [Trial], check: &str) -> &'a Trial {
        trials.iter().find(|t| t.check == check).unwrap()
    }

    /// A wire-only run: execute tool call, request without kind, answered reject by policy.
    fn run(c: &Case) {
        c.handshake();
        c.prompt();
        c.update(
            json!({"sessionUpdate":"tool_call","toolCallId":"c","title":"cat x","kind":"execute"}),
        );
        c.permission(json!(0), json!({"toolCallId":"c","title":"cat x"}), opts3());
    }

    #[test]
    fn observed_approvals_are_graded_like_an_adapters() {
        let c = Case::wire_only();
        observer_note(&c, &["approval", "approval_resolved", "turn"]);
        run(&c);
        let seen = observe(
            &c,
            json!({"type":"approval","sessionId":SID,"requestId":0,"toolCallId":"c","subject":"read",
                   "observed":observed("acpx","stdout","toolKind read")}),
        );
        c.select(json!(0), "reject");
        c.prompt_result("end_turn");
        let trials = grade_case(&c.record());
        let t = trial(&trials, "subject-kind");
        assert_eq!(t.grade, Grade::Fail, "{}", t.message);
        assert!(
            t.message.contains("shows subject \"read\""),
            "{}",
            t.message
        );
        assert!(
            t.message.contains(&format!("#{seen} observer → harness")),
            "{}",
            t.message
        );
        // An observed card without buttons is not held to the offered set.
        assert_eq!(trial(&trials, "offered-options").grade, Grade::Pass);
        let t = trial(&trials, "stable-item-type");
        assert_eq!(t.grade, Grade::NotApplicable);
        assert!(
            t.message.contains("observer does not report \"item\""),
            "{}",
            t.message
        );
    }

    #[test]
    fn without_an_observer_control_checks_stay_not_applicable() {
        let c = Case::wire_only();
        run(&c);
        c.select(json!(0), "reject");
        c.prompt_result("end_turn");
        let trials = grade_case(&c.record());
        let t = trial(&trials, "subject-kind");
        assert_eq!(t.grade, Grade::NotApplicable);
        assert_eq!(t.message, "client has no control-plane adapter");
    }

    #[test]
    fn observed_buttons_and_turn_end_are_checked() {
        let c = Case::wire_only();
        observer_note(&c, &["approval", "approval_resolved", "turn"]);
        run(&c);
        observe(
            &c,
            json!({"type":"approval","sessionId":SID,"requestId":0,"toolCallId":"c","subject":"command",
                   "options":[{"optionId":"once","label":"y"},{"optionId":"reject","label":"n"}],
                   "observed":observed("acpx","terminal","[permission] Allow cat x [execute]? (y/N)")}),
        );
        c.note(json!({"type":"user_cancel","sessionId":SID,"by":"SIGINT"}));
        c.c2a(json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":SID}}));
        c.cancelled(json!(0));
        c.prompt_result("cancelled");
        observe(
            &c,
            json!({"type":"turn","sessionId":SID,"state":"failed","message":"acpx exited with code 5",
                   "observed":observed("acpx","exit status","exit code 5")}),
        );
        let trials = grade_case(&c.record());
        let t = trial(&trials, "offered-options");
        assert_eq!(t.grade, Grade::Fail);
        assert!(
            t.message
                .contains("does not present offered option(s) \"always\""),
            "{}",
            t.message
        );
        let t = trial(&trials, "cancel-stop");
        assert_eq!(t.grade, Grade::Fail);
        assert!(
            t.message.contains("shows the turn as \"failed\""),
            "{}",
            t.message
        );
        assert_eq!(trial(&trials, "subject-kind").grade, Grade::Pass);
    }
}
