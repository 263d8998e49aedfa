//! The user, for clients without a control-plane adapter (a client profile with
//! `control = "none"`): the prompt was already given on the command line (`{prompt}`), options are
//! chosen by the client's own policy (or, for a policy that prompts on a terminal, by typing one
//! of the profile's `[[choose]]` inputs once the observer saw the prompt), and a cancel is the
//! profile's `[cancel]` method. Each action is noted in the transcript (`user_cancel`,
//! `user_choose`, `user_choose_skipped`) so checks know the user acted.
//!
//! [`playable`] says up front which scenarios such a client cannot play at all (two prompts, no
//! way to cancel): those cases grade `not_applicable` with the reason instead of failing on a
//! limitation of the profile. A cancel "while a request is pending" is played against a client
//! whose policy does not prompt too: the user cancels once the request has waited a moment
//! unanswered, and if the client answered it by itself first, the case is `not_applicable` then
//! (nothing was pending), with the frame of that answer.

use std::time::Duration;

use acp_fake_agents::engine::{UserAction, UserDriver, UserFailure};
use acp_fake_agents::scenario::{Case, StepKind, UserStep};
use acp_vocab::envelope::Shape;
use acp_vocab::note::Note;
use acp_vocab::transcript::{Direction, Recorder};
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;

use crate::client_spec::{Cancel, ChooseBy, ChooseInput, ClientSpec};
use crate::observe::{ObserverHandle, UserAct};
use crate::pty::Master;
use acp_fake_agents::machine_time::{self, Deadline};

/// Whether `spec` (a client without an adapter) can play `case`; `Err` says why not.
pub fn playable(case: &Case, spec: &ClientSpec) -> Result<(), String> {
    let scenario = &case.scenario;
    let asks = spec.wire.policy.as_ref().is_some_and(|p| p.prompts);
    // A client that answers by its own policy ignores which option the user would choose, so
    // every option run of an `each` scenario but the first would repeat the first.
    if let (false, Some(option), Some(first)) = (
        asks,
        &case.each_option,
        scenario.each.as_ref().and_then(|e| e.first()),
    ) {
        if option != first {
            return Err(format!(
                "{} answers by its own policy whatever the user would choose, so this run would repeat `{}[{first}]`",
                spec.name,
                scenario.key()
            ));
        }
    }
    // A client launched with one prompt cannot be asked to reopen, list or close a session, nor
    // to switch its mode or change a config option.
    if let Some(command) = scenario.commands_beyond_basic().first() {
        return Err(format!(
            "{} has no control-plane adapter, so the user cannot ask it to {} (`user = \"{}\"`): it is launched with one prompt",
            spec.name,
            command.user_words(),
            command.as_str()
        ));
    }
    let (mut prompts, mut sessions, mut cancels, mut pending_cancels) = (0, 0, 0, 0);
    for step in scenario.all_steps() {
        match &step.kind {
            StepKind::User(UserStep::Prompt { .. }) => prompts += 1,
            StepKind::User(UserStep::NewSession { .. }) => sessions += 1,
            StepKind::User(UserStep::Cancel { pending, .. }) => {
                cancels += 1;
                pending_cancels += usize::from(pending.is_some());
            }
            _ => {}
        }
    }
    let name = &spec.name;
    let typed = spec.wire.tui.as_ref().is_some_and(|t| t.prompt.is_some());
    if prompts != 1 && !(typed && prompts > 1) {
        return Err(format!(
            "{name} takes exactly one prompt per launch (`{{prompt}}` in its argv); this scenario has {prompts} `user = \"prompt\"` steps"
        ));
    }
    if sessions > 1 {
        return Err(format!(
            "{name} opens one session per launch; this scenario opens {sessions}"
        ));
    }
    if cancels == 0 {
        return Ok(());
    }
    match &spec.wire.cancel {
        Cancel::None => Err(format!(
            "the profile of {name} has no [cancel] method; this scenario cancels"
        )),
        Cancel::Stdin {
            at_prompt_only: true,
            ..
        } if pending_cancels < cancels => Err(format!(
            "the profile of {name} cancels by typing at its permission prompt only; this scenario cancels when no request is pending"
        )),
        // A policy that does not prompt is no proof that the client answers at once (some never
        // answer): such a cancel is played, and [`WireOnlyUser`] finds out at run time.
        _ => Ok(()),
    }
}

/// Plays the user for a client without an adapter.
pub struct WireOnlyUser {
    /// The client's pid (signals go to it, not to its process group).
    pub pid: i32,
    pub rec: Recorder,
    /// ACP session id per harness handle, as far as the scenario knows it.
    pub session_ids: Vec<(String, String)>,
    pub spec: ClientSpec,
    /// The client's stdin, for `[cancel] stdin` without a terminal.
    pub stdin: Option<ChildStdin>,
    /// The client's terminal (`tty = true`).
    pub terminal: Option<Master>,
    pub observer: ObserverHandle,
    /// Environment and working directory for a `[cancel] command`.
    pub env: Vec<(String, String)>,
    pub cwd: std::path::PathBuf,
    /// The `[cancel] command`, placeholders filled.
    pub cancel_argv: Vec<String>,
}

impl UserDriver for WireOnlyUser {
    async fn act(&mut self, action: UserAction, timeout: Duration) -> Result<(), UserFailure> {
        match action {
            UserAction::NewSession { .. } => Ok(()),
            UserAction::Prompt {
                session,
                text,
                agent_killed,
            } => Ok(self
                .type_prompt(&session, &text, agent_killed, timeout)
                .await?),
            // Never reached: `playable` refuses a scenario with any of these before the client
            // starts (a client launched with one prompt has no way to be asked).
            UserAction::LoadSession { .. }
            | UserAction::ResumeSession { .. }
            | UserAction::ListSessions { .. }
            | UserAction::CloseSession { .. }
            | UserAction::SetMode { .. }
            | UserAction::SetConfigOption { .. } => {
                Err("a client without a control-plane adapter cannot be asked to do this".into())
            }
            UserAction::Choose {
                request_id,
                option_id,
                offered,
            } => {
                self.choose(&request_id, &option_id, &offered, timeout)
                    .await
            }
            UserAction::Cancel {
                session,
                pending_request,
            } => {
                if let Some(request) = &pending_request {
                    if self.prompts() {
                        self.observer.wait_prompting(request, timeout).await?;
                    } else if let Some(at) = self.answered_within(request, PENDING_MOMENT).await {
                        return Err(UserFailure::NotApplicable(format!(
                            "{} answered request {request} by itself (#{at}) before the user could cancel, so nothing was pending; this scenario cancels while a request is (a profile whose policy prompts can play it)",
                            self.spec.name
                        )));
                    }
                }
                let session_id = self
                    .session_ids
                    .iter()
                    .find(|(h, _)| *h == session)
                    .map(|(_, id)| id.clone())
                    .unwrap_or_default();
                self.rec.note(&Note::UserCancel {
                    session_id,
                    by: Some(self.spec.wire.cancel.describe()),
                });
                self.observer.user(UserAct::Cancelled);
                Ok(self.cancel(timeout).await?)
            }
        }
    }
}

/// How long a request must have waited unanswered before the user cancels "while it is
/// pending", for a client that answers by its own policy: a person does not press Stop within a
/// millisecond, and a client that answers by itself does so at once.
const PENDING_MOMENT: Duration = Duration::from_millis(300);

impl WireOnlyUser {
    /// A `[tui]` client with `prompt` keys: waits for its `ready` screen, then types the prompt.
    /// Other clients got the prompt on their command line. After the agent's death the user
    /// waits half a step for the ready screen, inside the step's own deadline, then gives up
    /// typing (a note, not a failed step): whether the client said the session did not open is
    /// `session-open`'s to judge, as over the adapter.
    async fn type_prompt(
        &mut self,
        session: &str,
        text: &str,
        agent_killed: bool,
        timeout: Duration,
    ) -> Result<(), String> {
        let Some(tui) = self.spec.wire.tui.clone() else {
            return Ok(());
        };
        let Some(keys) = &tui.prompt else {
            return Ok(());
        };
        let ready = match tui.ready.as_deref().map(regex::Regex::new) {
            Some(Ok(re)) => Some(re),
            Some(Err(e)) => return Err(format!("[tui] ready is not a valid regex: {e}")),
            None => None,
        };
        let wait = if agent_killed { timeout / 2 } else { timeout };
        if let Err(why) = self.observer.wait_screen(ready.as_ref(), wait).await {
            if agent_killed {
                self.rec.note(&Note::UserPromptSkipped {
                    session: session.to_owned(),
                    reason: format!(
                        "the agent died and {why}, so the harness never typed the prompt{}",
                        self.last_screen()
                    ),
                });
                return Ok(());
            }
            return Err(format!(
                "{why}, so the harness never typed the prompt{}",
                self.last_screen()
            ));
        }
        // The prompt is text, not key names.
        let keys = keys.replace("{prompt}", &text.replace('<', "<lt>"));
        self.observer.prompt_typed();
        self.type_keys(keys.as_bytes()).await
    }

    /// "; the screen: …" for a `[tui]` client's messages (empty otherwise).
    pub fn last_screen(&self) -> String {
        match self.observer.screen_text() {
            Some(text) if text.trim().is_empty() => {
                "; the screen was blank (the client never drew)".into()
            }
            Some(text) => format!("; the screen:\n{text}"),
            None => String::new(),
        }
    }

    fn prompts(&self) -> bool {
        self.spec.wire.policy.as_ref().is_some_and(|p| p.prompts)
    }

    /// The transcript index of the client's answer to the agent's request `request`, if it comes
    /// within `wait`; `None` while the request stays unanswered.
    async fn answered_within(&self, request: &Value, wait: Duration) -> Option<usize> {
        let deadline = Deadline::after(wait);
        let mut from = 0;
        loop {
            let mut answer = None;
            from = self.rec.visit_from(from, |entry| {
                let answers = entry.direction == Direction::ClientToAgent
                    && entry
                        .json()
                        .is_some_and(|j| Shape::of(j).response_id() == Some(request));
                if answers && answer.is_none() {
                    answer = Some(entry.index);
                }
            });
            if answer.is_some() || deadline.is_reached() {
                return answer;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    async fn choose(
        &mut self,
        request_id: &Value,
        option_id: &str,
        offered: &Value,
        timeout: Duration,
    ) -> Result<(), UserFailure> {
        if !self.prompts() {
            crate::control::note_choose_skipped(
                &self.rec,
                request_id,
                option_id,
                "client has no control plane; it answers by its own policy",
            );
            return Ok(());
        }
        let found = self.spec.wire.choose.iter().find_map(|c| {
            let r = c
                .reachable(offered)
                .into_iter()
                .find(|r| r.id == option_id)?;
            Some((c.clone(), r.keys, r.position))
        });
        let Some((input, keys, position)) = found else {
            let reachable: Vec<String> = self
                .spec
                .wire
                .choose
                .iter()
                .flat_map(|c| c.reachable(offered))
                .map(|r| format!("{:?} → \"{}\"", r.keys.trim(), r.id))
                .collect();
            // A limit of the profile, not of the client: nothing to judge in this run.
            return Err(UserFailure::NotApplicable(format!(
                "no input of {}'s profile reaches option \"{option_id}\" of request {request_id} (its [[choose]] inputs reach: {})",
                self.spec.name,
                if reachable.is_empty() {
                    "nothing offered".to_owned()
                } else {
                    reachable.join(", ")
                }
            )));
        };
        // The observer must see the card before the agent's own wait for the answer ends, so
        // that a card it missed is reported as such (the harness never typed), not as a client
        // that did not answer.
        let see_by = timeout.saturating_sub(timeout / 10);
        if let Err(why) = self.observer.wait_shown(request_id, see_by).await {
            return Err(format!(
                "{why}, so the harness never typed {:?} to choose \"{option_id}\" (does the profile's approval rule match what {} shows?){}",
                keys.trim(),
                self.spec.name,
                self.last_screen()
            )
            .into());
        }
        if input.by == ChooseBy::Label {
            self.highlight(option_id, offered, &input, position, see_by)
                .await?;
        }
        self.rec.note(&Note::UserChoose {
            request_id: request_id.clone(),
            option_id: option_id.to_owned(),
            input: keys.clone(),
        });
        self.observer.user(UserAct::Chose);
        Ok(self.type_keys(keys.as_bytes()).await?)
    }

    /// `by = "label"`: moves the highlight with the input's `next` key until the highlighted
    /// line shows the option's name (the longest offered name it shows, so "Allow" is not
    /// taken for "Allow always"); `NotApplicable` with the screen if it never does.
    async fn highlight(
        &mut self,
        option_id: &str,
        offered: &Value,
        input: &ChooseInput,
        position: usize,
        timeout: Duration,
    ) -> Result<(), UserFailure> {
        let names: Vec<(&str, &str)> = offered
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| Some((o.get("optionId")?.as_str()?, o.get("name")?.as_str()?)))
            .collect();
        let shown = |line: &str| {
            names
                .iter()
                .filter(|(_, name)| !name.is_empty() && line.contains(name))
                .max_by_key(|(_, name)| name.len())
                .map(|(id, _)| *id)
        };
        let next = input.next.clone().unwrap_or_else(|| "<Down>".into());
        let deadline = Deadline::after(timeout);
        let mut lines = Vec::new();
        // Every option once, and back to the start.
        for _ in 0..=names.len() {
            // The highlighted line that shows an option (a status bar shows none).
            let rows = self.observer.highlighted();
            let at = rows.iter().find_map(|l| Some((l, shown(l)?)));
            if at.is_some_and(|(_, id)| id == option_id) {
                return Ok(());
            }
            lines.push(match at {
                Some((line, _)) => line.clone(),
                None => "(no option highlighted)".into(),
            });
            if deadline.is_reached() {
                break;
            }
            let seen = self.observer.screens_seen();
            self.type_keys(next.as_bytes()).await?;
            if !self
                .observer
                .wait_screen_after(seen, deadline.remaining())
                .await
            {
                lines.push("(the screen did not change)".into());
                break;
            }
        }
        Err(UserFailure::NotApplicable(format!(
            "the highlighted line never showed option \"{option_id}\" (#{position} of the request) while {} pressed {next:?}: it showed {:?}{}",
            self.spec.name,
            lines,
            self.last_screen()
        )))
    }

    async fn cancel(&mut self, timeout: Duration) -> Result<(), String> {
        match self.spec.wire.cancel.clone() {
            Cancel::None => Err("the client profile has no [cancel] method".into()),
            Cancel::Signal(name) => {
                let signal: Signal = name
                    .parse()
                    .map_err(|_| format!("unknown signal {name:?} in the client profile"))?;
                nix::sys::signal::kill(Pid::from_raw(self.pid), signal)
                    .map_err(|e| format!("could not send {name} to the client: {e}"))
            }
            Cancel::Stdin { input, .. } => self.type_keys(input.as_bytes()).await,
            Cancel::Command(_) => self.run_cancel_command(timeout).await,
        }
    }

    /// Writes to the client's terminal, else its stdin. For a `[tui]` client the text is keys
    /// as data (`<Enter>`, `<Down>`, `<C-c>`: `crate::keys`).
    async fn type_keys(&mut self, bytes: &[u8]) -> Result<(), String> {
        let parsed;
        let bytes = if self.spec.wire.tui.is_some() {
            let text = String::from_utf8_lossy(bytes);
            parsed = crate::keys::parse(&text, self.observer.app_cursor())?;
            parsed.as_slice()
        } else {
            bytes
        };
        if let Some(terminal) = &self.terminal {
            return terminal
                .write_all(bytes)
                .await
                .map_err(|e| format!("could not type on the client's terminal: {e}"));
        }
        match self.stdin.as_mut() {
            Some(stdin) => {
                let write = async {
                    stdin.write_all(bytes).await?;
                    stdin.flush().await
                };
                write
                    .await
                    .map_err(|e| format!("could not write to the client's stdin: {e}"))
            }
            None => Err("the client has no stdin to type on".into()),
        }
    }

    async fn run_cancel_command(&mut self, timeout: Duration) -> Result<(), String> {
        let Some((program, args)) = self.cancel_argv.split_first() else {
            return Err("the [cancel] command is empty".into());
        };
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .envs(self.env.iter().cloned())
            .current_dir(&self.cwd)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        let status = match machine_time::timeout(timeout, cmd.status()).await {
            Ok(Ok(status)) => status,
            Ok(Err(e)) => return Err(format!("could not run the [cancel] command: {e}")),
            Err(waited) => {
                return Err(format!(
                    "the [cancel] command did not finish within {}",
                    waited.describe(timeout)
                ));
            }
        };
        self.rec.note(&Note::CancelCommandExited {
            argv: self.cancel_argv.clone(),
            status: status.to_string(),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client_spec::Policy;

    fn cases(steps: &str) -> Vec<Case> {
        let text = format!(
            "[scenario]\nid = \"t\"\ntitle = \"t\"\nagent = \"a\"\nversion = \"1\"\nprovenance = [\"test\"]\n{steps}"
        );
        let profiles = acp_fake_agents::profile::Profiles::new();
        acp_fake_agents::scenario::parse("a/1/t.toml", &text, &profiles)
            .expect("test scenario parses")
            .cases()
    }

    fn scenario(steps: &str) -> Case {
        cases(steps).remove(0)
    }

    fn spec(cancel: Cancel, prompts: bool) -> ClientSpec {
        let mut spec = ClientSpec::from_argv(vec!["cli".into(), "{prompt}".into()]).unwrap();
        spec.wire.cancel = cancel;
        spec.wire.policy = Some(Policy {
            name: "p".into(),
            flags: Vec::new(),
            prompts,
            about: String::new(),
            approves: Vec::new(),
            scope: None,
            allow_always: false,
        });
        spec
    }

    const PROMPT: &str = "[[step]]\nuser = \"prompt\"\ntext = \"go\"\n";
    const PERM: &str = "[[step]]\nsend = '{\"jsonrpc\":\"2.0\",\"id\":\"${id}\",\"method\":\"session/request_permission\",\"params\":{\"sessionId\":\"s\",\"toolCall\":{\"toolCallId\":\"c\"},\"options\":[]}}'\nas = \"perm\"\n";

    #[test]
    fn one_prompt_is_required() {
        let sigint = || spec(Cancel::Signal("SIGINT".into()), false);
        assert!(playable(&scenario(PROMPT), &sigint()).is_ok());
        let two = scenario(&format!("{PROMPT}{PROMPT}"));
        assert!(
            playable(&two, &sigint())
                .unwrap_err()
                .contains("2 `user = \"prompt\"`")
        );
        let none = scenario("[[step]]\nexpect = \"initialize\"\n");
        assert!(playable(&none, &sigint()).unwrap_err().contains("has 0"));
    }

    #[test]
    fn a_policy_client_plays_only_the_first_option_run() {
        let each = cases(&format!(
            "{PROMPT}[[step]]\nsend = '{{\"jsonrpc\":\"2.0\",\"id\":\"${{id}}\",\"method\":\"session/request_permission\",\"params\":{{\"sessionId\":\"s\",\"toolCall\":{{\"toolCallId\":\"c\"}},\"options\":[{{\"optionId\":\"a\",\"kind\":\"allow_once\",\"name\":\"A\"}},{{\"optionId\":\"b\",\"kind\":\"reject_once\",\"name\":\"B\"}}]}}}}'\nas = \"perm\"\n[[step]]\nuser = \"choose\"\nrequest = \"perm\"\neach = true\n"
        ));
        assert_eq!(each.len(), 2);
        let policy = spec(Cancel::None, false);
        assert!(playable(&each[0], &policy).is_ok());
        let err = playable(&each[1], &policy).unwrap_err();
        assert!(err.contains("would repeat `a@1/t[a]`"), "{err}");
        // A client that prompts can choose, so every run is played.
        assert!(playable(&each[1], &spec(Cancel::None, true)).is_ok());
    }

    #[test]
    fn cancels_need_a_method_and_typed_cancels_need_the_prompt() {
        let cancel = scenario(&format!("{PROMPT}[[step]]\nuser = \"cancel\"\n"));
        let pending = scenario(&format!(
            "{PROMPT}{PERM}[[step]]\nuser = \"cancel\"\npending = \"perm\"\n"
        ));
        let err = playable(&cancel, &spec(Cancel::None, false)).unwrap_err();
        assert!(err.contains("no [cancel]"), "{err}");
        assert!(playable(&cancel, &spec(Cancel::Signal("SIGINT".into()), false)).is_ok());
        // A policy that does not prompt may still leave the request pending: played, and found
        // out at run time (tests/wire_only.rs).
        assert!(playable(&pending, &spec(Cancel::Signal("SIGINT".into()), false)).is_ok());
        assert!(playable(&pending, &spec(Cancel::Signal("SIGINT".into()), true)).is_ok());
        let keys = Cancel::Stdin {
            input: "\u{3}".into(),
            at_prompt_only: true,
        };
        assert!(playable(&pending, &spec(keys.clone(), true)).is_ok());
        let err = playable(&cancel, &spec(keys, true)).unwrap_err();
        assert!(err.contains("at its permission prompt only"), "{err}");
    }
}
