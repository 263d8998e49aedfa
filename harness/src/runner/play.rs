//! The second phase of a case: the fake agent plays the scenario while the user's side is
//! played through the client's control-plane adapter, or, for a client without one, by the
//! wire-only user and the profile's observer.

use acp_fake_agents::engine::{self, EngineConfig};
use acp_fake_agents::machine_time::Deadline;
use acp_fake_agents::scenario::Case;
use acp_judge::record::RunEnd;
use acp_vocab::note::Note;
use acp_vocab::transcript::Recorder;
use tokio::io::AsyncWrite;

use super::client_exit::{DRAIN_AFTER_EXIT, unless_client_exits, while_client_lives};
use super::client_start::ClientStart;
use super::{RunConfig, case_dirs::CaseDirs, case_timeout, tui_end, unsupported_commands};
use crate::client_spec::ClientSpec;
use crate::control::{ControlPlane, HandshakeError};
use crate::launch::Launched;
use crate::observe::Observer;
use crate::relay_listener::{ClientGone, RelayListener};
use crate::wire_only::WireOnlyUser;

/// What the play hands on to the shutdown: how it ended and what is still open.
pub(super) struct Played {
    pub end: RunEnd,
    /// The commands the client's adapter said it supports (`hello`), or `choose` for a client
    /// without one whose profile has inputs that answer its prompt.
    pub control_supports: Vec<String>,
    pub control: Option<ControlPlane>,
    pub observer: Option<Observer>,
    /// A `[tui]` client's screen before it was told to quit.
    pub last_screen: Option<String>,
    /// The agent connections' writers, kept open until the client is shut down.
    pub keep_alive: Vec<Box<dyn AsyncWrite + Send + Unpin>>,
    /// The agent connections' readers; they end at EOF.
    pub readers: Vec<tokio::task::JoinHandle<()>>,
}

impl Played {
    fn ended(end: RunEnd) -> Self {
        Played {
            end,
            control_supports: Vec::new(),
            control: None,
            observer: None,
            last_screen: None,
            keep_alive: Vec::new(),
            readers: Vec::new(),
        }
    }

    /// Takes the engine's outcome (or the case's timeout) as the play's end.
    fn take(&mut self, outcome: Result<engine::Outcome, RunEnd>) -> RunEnd {
        match outcome {
            Ok(outcome) => {
                self.keep_alive = outcome.keep_alive;
                self.readers = outcome.readers;
                outcome.end
            }
            Err(timeout) => timeout,
        }
    }
}

/// Everything the play of one case uses, whichever side plays the user.
pub(super) struct Stage<'a> {
    pub case: &'a mut Case,
    pub client: &'a ClientSpec,
    pub cfg: &'a RunConfig,
    pub engine: EngineConfig,
    pub connector: &'a mut RelayListener,
    pub launched: &'a mut Launched,
    pub gone: &'a ClientGone,
    /// The whole case's budget, in machine time.
    pub deadline: &'a Deadline,
    pub rec: &'a Recorder,
}

impl Stage<'_> {
    /// Plays the scenario with `user` on the user's side until it ends, the client exits, or
    /// the case's budget runs out.
    async fn run<U: engine::UserDriver>(
        &mut self,
        user: &mut U,
    ) -> Result<engine::Outcome, RunEnd> {
        let run =
            engine::run_freeing_steps(self.case, &self.engine, self.connector, user, self.rec);
        self.deadline
            .run(while_client_lives(run, self.launched, self.gone))
            .await
            .map_err(|waited| case_timeout(self.cfg, waited))
    }
}

/// Plays the case with the client's adapter as the user's hands and eyes.
pub(super) async fn with_adapter(mut stage: Stage<'_>) -> anyhow::Result<Played> {
    drop(stage.launched.stderr.take()); // an adapter's stderr is only kept in the tail
    let (Some(stdin), Some(stdout)) = (stage.launched.stdin.take(), stage.launched.stdout.take())
    else {
        anyhow::bail!("client stdio was not captured");
    };
    let mut plane = ControlPlane::new(stdin, stdout, stage.rec.clone());
    // A client that dies before its hello is judged at its exit, not after a step timeout (its
    // stdout may be held open by a process it left behind).
    let handshake = unless_client_exits(
        plane.handshake(stage.cfg.step_timeout),
        stage.launched,
        DRAIN_AFTER_EXIT,
    )
    .await
    .unwrap_or_else(|exited| {
        Err(HandshakeError::NoHello(format!(
            "the client exited ({}) before it said hello",
            exited.info.describe()
        )))
    });
    let mut played = match handshake {
        Err(HandshakeError::Unsupported(reason)) => Played::ended(RunEnd::AdapterError { reason }),
        Err(HandshakeError::NoHello(reason)) => {
            Played::ended(RunEnd::Incomplete { step: 0, reason })
        }
        Ok(supports) => {
            let mut played = Played::ended(RunEnd::Completed);
            // An adapter that cannot do a user step of the scenario (reopen, list or close a
            // session, switch a mode …) cannot play it; nothing of it is judged.
            played.end = match unsupported_commands(stage.case, &supports) {
                Some(reason) => {
                    stage.rec.note(&Note::NotApplicable {
                        reason: reason.clone(),
                    });
                    RunEnd::NotApplicable { reason }
                }
                None => {
                    let outcome = stage.run(&mut plane).await;
                    adapter_end(&plane, played.take(outcome))
                }
            };
            played.control_supports = supports;
            played
        }
    };
    played.control = Some(plane);
    Ok(played)
}

/// The end of a play through the adapter, with what the adapter itself did wrong or why
/// nothing more could happen.
fn adapter_end(plane: &ControlPlane, end: RunEnd) -> RunEnd {
    match (plane.protocol_error(), end) {
        (Some(reason), _) => RunEnd::AdapterError { reason },
        (None, RunEnd::Incomplete { step, reason })
            if plane.stdout_closed() && !reason.contains("closed its stdout") =>
        {
            RunEnd::Incomplete {
                step,
                reason: format!("{reason} (the adapter had closed its stdout)"),
            }
        }
        (None, end) => end,
    }
}

/// Plays the case for a client without an adapter: the wire-only user types, signals and runs
/// the profile's commands, and the profile's observer reads what the client shows.
pub(super) async fn wire_only(
    mut stage: Stage<'_>,
    start: &ClientStart,
    dirs: &CaseDirs,
) -> Played {
    let client = stage.client;
    let launched = &mut *stage.launched;
    let stdout = launched
        .stdout
        .take()
        .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>);
    let (master, output) = match launched.terminal.take() {
        Some(t) => (Some(t.master), Some(t.output)),
        None => (None, None),
    };
    let streams = crate::observe::Streams {
        stdout,
        stderr: launched.stderr.take(),
        terminal: output,
    };
    let observer = Observer::start(client, streams, stage.rec.clone(), &dirs.root);
    let mut user = WireOnlyUser {
        pid: launched.pgid,
        rec: stage.rec.clone(),
        session_ids: stage.case.scenario.session_ids(),
        spec: client.clone(),
        stdin: launched.stdin.take(),
        terminal: master,
        observer: observer.handle(),
        env: start.env.clone(),
        cwd: dirs.workspace.clone(),
        cancel_argv: match &client.wire.cancel {
            crate::client_spec::Cancel::Command(argv) => {
                client.expand_template(argv, &start.expansion())
            }
            _ => Vec::new(),
        },
    };
    let mut played = Played::ended(RunEnd::Completed);
    // The user actions the harness has for this client: it can answer a permission prompt only
    // through the profile's inputs (the judge's R52 asks whether a card waited for a user).
    if !client.wire.choose.is_empty() {
        played.control_supports = vec!["choose".to_owned()];
    }
    let outcome = stage.run(&mut user).await;
    played.end = played.take(outcome);
    if let (Some(tui), Some(terminal)) = (&client.wire.tui, &user.terminal) {
        played.last_screen =
            tui_end::last_screen_then_quit(tui, terminal, &user.observer, stage.rec).await;
    }
    played.observer = Some(observer);
    played
}
