//! Observers: what a client without an adapter exposes itself (its stdout and stderr, its
//! terminal, its exit status), turned into the control events an adapter would have reported.
//!
//! A client profile describes its observer as data (`[[observer.rule]]`, [`rules`]) or names an
//! outside program that does the work (`observer.command`, [`program`]); the harness has no
//! client-specific code. The host here feeds the observer, validates every event it derives
//! against control-v1.schema.json like an adapter's, and records it in the transcript in
//! direction `o2h` ("observer → harness") with its `observed` object naming the evidence, so
//! reports and failure messages show that the event was observed and not reported by an adapter.
//! The checks then read these events like any adapter's: an observer is never a special case in
//! a check. The transcript starts with a note `{"type":"observer","name":…,"reports":[…]}` that
//! says which event types this observer can report; a check graded from observed events needs
//! all of its events there (`Check::observable_with`).
//!
//! An observer that fails (a program that crashes, hangs or prints what the schema refuses, or
//! rules that make an invalid event) is noted (`observer_error`) and ends the case as
//! `adapter_error` with the reason ([`Observer::finish`]).
//!
//! Whatever the profile, the host always drains the client's stdout and stderr, so a chatty
//! client never blocks on a full pipe.

mod program;
pub mod rules;
pub mod screen;
mod streams;
mod template;
mod wire;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_vocab::control::{Event, Observed};
use acp_vocab::note::Note;
use acp_vocab::transcript::{Direction, Recorder};
use serde_json::{Value, json};
use tokio::io::AsyncRead;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::client_spec::ClientSpec;
use crate::control_schema::validate_control;
use crate::launch::ExitInfo;
use acp_fake_agents::machine_time;
use acp_judge::wire_model::id_key;

pub use rules::compile;

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

/// The observer a profile describes.
enum Backend {
    Rules(rules::DataRules),
    Program(program::Program),
}

struct Shared {
    backend: Mutex<Option<Backend>>,
    name: String,
    rec: Recorder,
    /// Cards observed so far.
    cards: watch::Sender<Cards>,
    /// The first way the observer failed.
    error: Mutex<Option<String>>,
    /// ACP frames already passed to an observer program.
    wire_sent: Mutex<usize>,
    /// A `[tui]` client's settled screens: the text of the last one, and how many so far.
    screens: watch::Sender<(u64, String)>,
    /// The screen changed since it last settled.
    moving: std::sync::atomic::AtomicBool,
}

/// Request ids (as [`id_key`]) of permission requests with an observed approval card.
#[derive(Debug, Default)]
struct Cards {
    /// Every request whose card was seen.
    shown: Vec<String>,
    /// Those not resolved yet: the client is prompting for them.
    open: Vec<String>,
}

/// What the client showed, for the observer.
enum Shown<'a> {
    Stdout(&'a str),
    Stderr(&'a str),
    /// Bytes the client wrote to its terminal.
    Terminal(&'a [u8]),
    /// A `[tui]` client's screen has been still for the settle time.
    Settled,
}

impl Shared {
    /// Passes what the client showed to the observer and records the events it derives.
    fn feed(&self, shown: Shown<'_>) {
        let events = {
            let mut backend = self.backend.lock().unwrap_or_else(|e| e.into_inner());
            match backend.as_mut() {
                None => return,
                Some(Backend::Rules(r)) => {
                    r.wire.refresh(&self.rec, |_| {});
                    match shown {
                        Shown::Stdout(line) => r.stdout_line(line),
                        Shown::Stderr(line) => r.stderr_line(line),
                        Shown::Terminal(bytes) => {
                            r.screen_bytes(bytes);
                            r.terminal(&String::from_utf8_lossy(bytes))
                        }
                        Shown::Settled => r.settled(),
                    }
                }
                Some(Backend::Program(p)) => {
                    self.send_wire(p);
                    match shown {
                        Shown::Stdout(line) => p.send("stdout", line, json!({})),
                        Shown::Stderr(line) => p.send("stderr", line, json!({})),
                        Shown::Terminal(bytes) => p.send(
                            "terminal",
                            &rules::strip_escapes(&String::from_utf8_lossy(bytes)),
                            json!({}),
                        ),
                        Shown::Settled => {}
                    }
                    return; // its events arrive on its stdout
                }
            }
        };
        for event in events {
            self.event(event);
        }
    }

    /// Passes the ACP frames relayed since the last call to an observer program.
    fn send_wire(&self, program: &program::Program) {
        let mut sent = self.wire_sent.lock().unwrap_or_else(|e| e.into_inner());
        let mut frames = Vec::new();
        *sent = self.rec.visit_from(*sent, |e| {
            if e.direction.is_wire() {
                let dir = if e.direction == Direction::ClientToAgent {
                    "c2a"
                } else {
                    "a2c"
                };
                frames.push((dir, e.raw.clone()));
            }
        });
        for (dir, raw) in frames {
            program.send("acp", &raw, json!({"dir": dir}));
        }
    }

    /// One line an observer program printed.
    fn program_line(&self, line: Result<&[u8], String>) {
        let event = line.and_then(|bytes| {
            serde_json::from_slice::<Value>(bytes).map_err(|e| {
                format!(
                    "the observer printed a line that is not JSON ({e}): {}",
                    String::from_utf8_lossy(bytes)
                )
            })
        });
        match event {
            Ok(mut event) => {
                if let Some(obj) = event.as_object_mut() {
                    obj.entry("observed").or_insert_with(|| {
                        serde_json::to_value(Observed {
                            by: self.name.clone(),
                            from: "observer.command".into(),
                            evidence: "printed by the observer".into(),
                        })
                        .unwrap_or_default()
                    });
                }
                self.event(event);
            }
            Err(reason) => self.fail(reason),
        }
    }

    /// Validates an observed event, records it and updates the cards.
    fn event(&self, event: Value) {
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !rules::OBSERVED_TYPES.contains(&kind) {
            return self.fail(format!(
                "the observer reported {event}, which is not an observed event (one of {})",
                rules::OBSERVED_TYPES.join(", ")
            ));
        }
        if let Err(e) = validate_control(&event) {
            return self.fail(format!(
                "the observer reported an invalid event {event}: {e}"
            ));
        }
        let typed = match serde_json::from_value::<Event>(event.clone()) {
            Ok(typed) => typed,
            Err(e) => {
                return self.fail(format!(
                    "the observer reported an event the harness cannot read {event}: {e}"
                ));
            }
        };
        self.rec
            .record(0, Direction::ObserverToHarness, typed.to_line().as_bytes());
        match typed {
            Event::Approval(a) => {
                let key = id_key(&a.request_id);
                self.cards.send_modify(|c| {
                    c.shown.push(key.clone());
                    c.open.push(key);
                })
            }
            Event::ApprovalResolved(r) => {
                let key = id_key(&r.request_id);
                self.cards.send_modify(|c| c.open.retain(|k| *k != key))
            }
            _ => {}
        }
    }

    /// Publishes the settled screen to those waiting for one (the user typing a prompt).
    fn screen_settled(&self) {
        self.moving
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let text = {
            let backend = self.backend.lock().unwrap_or_else(|e| e.into_inner());
            match backend.as_ref() {
                Some(Backend::Rules(r)) => r.screen_text(),
                _ => None,
            }
        };
        if let Some(text) = text {
            self.screens.send_modify(|(n, t)| {
                *n += 1;
                *t = text;
            });
        }
    }

    fn fail(&self, reason: String) {
        self.rec.note(&Note::ObserverError {
            reason: reason.clone(),
        });
        let mut error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        error.get_or_insert(reason);
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
            .backend
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
        let screens_before = self.screens_seen();
        match machine_time::timeout(timeout, rx.wait_for(ready)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err("the observer stopped".into()),
            Err(waited) => Err(format!(
                "the observer saw no prompt for request {request_id} within {}{}",
                waited.describe(timeout),
                self.screens_during(screens_before)
            )),
        }
    }

    /// The screen of a `[tui]` client as it is now (`None` without one).
    pub fn screen_text(&self) -> Option<String> {
        self.with_rules(|r| r.screen_text()).flatten()
    }

    /// `read` applied to the profile's observer rules (`None` without rules).
    fn with_rules<T>(&self, read: impl FnOnce(&rules::DataRules) -> T) -> Option<T> {
        let backend = self
            .shared
            .backend
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match backend.as_ref() {
            Some(Backend::Rules(r)) => Some(read(r)),
            _ => None,
        }
    }

    /// The highlighted lines of a `[tui]` client's screen (a selection bar, a status bar).
    pub fn highlighted(&self) -> Vec<String> {
        self.with_rules(|r| r.screen().map(|s| s.highlighted_rows()))
            .flatten()
            .unwrap_or_default()
    }

    /// Waits until a `[tui]` client's screen is still (its rules have read it), at most
    /// `timeout`.
    pub async fn wait_still(&self, timeout: Duration) {
        let deadline = machine_time::Deadline::after(timeout);
        while self.shared.moving.load(std::sync::atomic::Ordering::SeqCst) && !deadline.is_reached()
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// For a timeout message of a `[tui]` client: how often its screen settled during the
    /// wait, which tells a rule that did not match a still screen from a screen that never
    /// stopped moving.
    fn screens_during(&self, before: u64) -> String {
        let has_screen = self.with_rules(|r| r.screen().is_some()).unwrap_or(false);
        if !has_screen {
            return String::new();
        }
        match self.screens_seen() - before {
            0 => " (the screen never stood still for the settle time meanwhile)".to_owned(),
            n => format!(
                " (the screen stood still {n} times meanwhile; on none did an approval rule find a card for this request)"
            ),
        }
    }

    /// How many settled screens there were so far (for [`Self::wait_screen_after`]).
    pub fn screens_seen(&self) -> u64 {
        self.shared.screens.borrow().0
    }

    /// Waits for a settled screen after the `seen`-th one; `false` after `timeout` (the
    /// screen did not change).
    pub async fn wait_screen_after(&self, seen: u64, timeout: Duration) -> bool {
        let mut rx = self.shared.screens.subscribe();
        matches!(
            machine_time::timeout(timeout, rx.wait_for(|(n, _)| *n > seen)).await,
            Ok(Ok(_))
        )
    }

    /// Whether the client switched its terminal to application cursor keys.
    pub fn app_cursor(&self) -> bool {
        self.with_rules(|r| r.screen().is_some_and(|s| s.app_cursor()))
            .unwrap_or(false)
    }

    /// Waits for a settled screen on which `ready` matches (any settled screen for `None`);
    /// `Err` with the last screen after `timeout`.
    pub async fn wait_screen(
        &self,
        ready: Option<&regex::Regex>,
        timeout: Duration,
    ) -> Result<(), String> {
        let mut rx = self.shared.screens.subscribe();
        let found = machine_time::timeout(
            timeout,
            rx.wait_for(|(n, text)| *n > 0 && ready.is_none_or(|re| re.is_match(text))),
        )
        .await;
        match found {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err("the observer stopped".into()),
            Err(waited) => Err(format!(
                "the screen did not show {} within {}",
                ready.map_or("anything".to_owned(), |re| format!("/{re}/")),
                waited.describe(timeout)
            )),
        }
    }

    /// Tells the rules that the user is about to type a prompt (`[tui]` clients).
    pub fn prompt_typed(&self) {
        let mut backend = self
            .shared
            .backend
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(Backend::Rules(r)) = backend.as_mut() {
            r.prompt_typed();
        }
    }

    /// Tells the rules what the user is about to do.
    pub fn user(&self, act: UserAct) {
        let mut backend = self
            .shared
            .backend
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        match backend.as_mut() {
            Some(Backend::Rules(r)) => r.user(act),
            Some(Backend::Program(p)) => {
                let text = match act {
                    UserAct::Chose => "chose",
                    UserAct::Cancelled => "cancelled",
                };
                p.send("user", text, json!({}));
            }
            None => {}
        }
    }
}

/// A running observer for one case.
pub struct Observer {
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

/// What the client exposes, for [`Observer::start`].
pub struct Streams {
    pub stdout: Option<Box<dyn AsyncRead + Send + Unpin>>,
    /// stderr in chunks (`tty = false`).
    pub stderr: Option<mpsc::UnboundedReceiver<Vec<u8>>>,
    /// The terminal's output in chunks (`tty = true`).
    pub terminal: Option<mpsc::UnboundedReceiver<Vec<u8>>>,
}

impl Observer {
    /// Starts reading the client's streams and, for `observer.command`, the program (in
    /// `cwd`). Records the `observer` note when the profile has an observer. A program that
    /// cannot start is the observer's failure, reported by [`Self::finish`].
    pub fn start(
        spec: &ClientSpec,
        streams: Streams,
        rec: Recorder,
        cwd: &std::path::Path,
    ) -> Self {
        let (cards, _) = watch::channel(Cards::default());
        let observer = spec.wire.observer.as_ref();
        let name = observer
            .and_then(|o| o.name.clone())
            .unwrap_or_else(|| spec.name.clone());
        let shared = Arc::new(Shared {
            backend: Mutex::new(None),
            name: name.clone(),
            rec: rec.clone(),
            cards,
            error: Mutex::new(None),
            wire_sent: Mutex::new(0),
            screens: watch::channel((0, String::new())).0,
            moving: std::sync::atomic::AtomicBool::new(false),
        });
        let backend = match observer {
            None => None,
            Some(o) => match &o.command {
                Some(argv) => {
                    rec.note(&Note::Observer {
                        name: name.clone(),
                        reports: o.reports.clone(),
                        from: format!("observer.command {argv:?}"),
                    });
                    let weak = Arc::downgrade(&shared);
                    let started = program::Program::start(argv, cwd, move |line| {
                        if let Some(shared) = weak.upgrade() {
                            shared.program_line(line);
                        }
                    });
                    match started {
                        Ok(p) => Some(Backend::Program(p)),
                        Err(reason) => {
                            shared.fail(reason);
                            None
                        }
                    }
                }
                None => match rules::compile_for(
                    o,
                    !spec.wire.choose.is_empty(),
                    spec.wire.tty,
                    spec.wire.tui.as_ref().map(|t| (t.rows, t.cols)),
                ) {
                    Ok(compiled) => {
                        let mut rules =
                            rules::DataRules::new(name.clone(), compiled, spec.wire.choose.clone());
                        if let Some(tui) = &spec.wire.tui {
                            rules = rules.with_screen(tui.rows, tui.cols);
                        }
                        rec.note(&Note::Observer {
                            name: name.clone(),
                            reports: rules.reports().into_iter().map(str::to_owned).collect(),
                            from: rules.sources(),
                        });
                        Some(Backend::Rules(rules))
                    }
                    // Checked when the profile was read; a profile built in code may still be wrong.
                    Err(reason) => {
                        shared.fail(format!("the profile's observer rules: {reason}"));
                        None
                    }
                },
            },
        };
        *shared.backend.lock().unwrap_or_else(|e| e.into_inner()) = backend;
        let mut tasks = Vec::new();
        if let Some(stdout) = streams.stdout {
            tasks.push(tokio::spawn(streams::read_lines(
                stdout,
                Arc::clone(&shared),
            )));
        }
        if let Some(stderr) = streams.stderr {
            tasks.push(tokio::spawn(streams::read_stderr(
                stderr,
                Arc::clone(&shared),
            )));
        }
        if let Some(terminal) = streams.terminal {
            let settle = spec
                .wire
                .tui
                .as_ref()
                .map(|t| Duration::from_millis(t.settle_ms));
            tasks.push(tokio::spawn(streams::read_terminal(
                terminal,
                Arc::clone(&shared),
                settle,
            )));
        }
        Observer { shared, tasks }
    }

    pub fn handle(&self) -> ObserverHandle {
        ObserverHandle {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Lets the readers reach the end of the client's output (bounded by `grace`), tells the
    /// observer how the client exited and waits for its last events. Returns why the observer
    /// failed, if it did: the case is then an `adapter_error`.
    pub async fn finish(mut self, exit: &ExitInfo, grace: Duration) -> Option<String> {
        for task in &mut self.tasks {
            // In machine time: on a loaded machine the reader of the client's last lines may
            // not get a core for a while, and what the client printed must still be read.
            if machine_time::timeout(grace, &mut *task).await.is_err() {
                task.abort();
            }
        }
        let backend = self
            .shared
            .backend
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        match backend {
            Some(Backend::Rules(mut r)) => {
                r.wire.refresh(&self.shared.rec, |_| {});
                for event in r.exited(exit) {
                    self.shared.event(event);
                }
                for note in r.unmatched() {
                    self.shared.rec.note(&note);
                }
            }
            Some(Backend::Program(p)) => {
                self.shared.send_wire(&p);
                if let Err(reason) = p.finish(exit, grace.max(Duration::from_secs(2))).await {
                    self.shared.fail(reason);
                }
            }
            None => {}
        }
        self.shared
            .error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

#[cfg(test)]
mod tests;
