//! The first phase of a case: what the client is started with, and starting it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_fake_agents::engine::EngineConfig;
use acp_fake_agents::scenario::Case;
use acp_judge::record::{CaseRecord, RunEnd};
use acp_vocab::note::Note;
use acp_vocab::transcript::Recorder;
use anyhow::Result;

use super::case_dirs::CaseDirs;
use super::{RunConfig, case_meta, repro_command};
use crate::client_spec::{ClientSpec, ControlMode, Expansion};
use crate::launch::{self, Launched};

/// The client's command line and environment for one case (or one fuzz session), with what
/// they were filled from.
pub(crate) struct ClientStart {
    /// The fake agent's command line, which the client is told to spawn.
    agent_argv: Vec<String>,
    /// The scenario's first prompt (a profile may pass it on the command line).
    prompt: String,
    workspace: PathBuf,
    home: PathBuf,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl ClientStart {
    /// Fills the profile's templates: the client is to spawn `fake_agent` connecting to
    /// `socket`, open `workspace`, and may be given `prompt` and `home`.
    pub(crate) fn new(
        client: &ClientSpec,
        fake_agent: &Path,
        socket: &Path,
        prompt: String,
        workspace: &Path,
        home: &Path,
    ) -> Self {
        let agent_argv = vec![
            fake_agent.to_string_lossy().into_owned(),
            "--connect".to_string(),
            socket.to_string_lossy().into_owned(),
        ];
        let mut start = ClientStart {
            agent_argv,
            prompt,
            workspace: workspace.to_path_buf(),
            home: home.to_path_buf(),
            argv: Vec::new(),
            env: Vec::new(),
        };
        let expansion = start.expansion();
        let argv = client.expand_argv(&expansion);
        let mut env = client.expand_env(&expansion);
        env.push((
            "ACP_HARNESS_AGENT".into(),
            serde_json::Value::from(start.agent_argv.clone()).to_string(),
        ));
        env.push((
            crate::sweep::MARKER_KEY.into(),
            workspace.to_string_lossy().into_owned(),
        ));
        start.argv = argv;
        start.env = env;
        start
    }

    /// The start of `case` in `dirs`; a prompt that cannot be filled in is the scenario's fault
    /// (an error of the harness's).
    pub(super) fn for_case(
        case: &Case,
        client: &ClientSpec,
        cfg: &RunConfig,
        dirs: &CaseDirs,
    ) -> Result<Self> {
        let prompt = match case.scenario.first_prompt() {
            Some(text) => case
                .scenario
                .fill_text(&text, &dirs.workspace, &dirs.outside)
                .map_err(anyhow::Error::msg)?,
            None => String::new(),
        };
        Ok(Self::new(
            client,
            &cfg.fake_agent,
            &dirs.socket(),
            prompt,
            &dirs.workspace,
            &dirs.home,
        ))
    }

    /// What the profile's placeholders stand for.
    pub(crate) fn expansion(&self) -> Expansion<'_> {
        Expansion {
            agent_argv: &self.agent_argv,
            prompt: &self.prompt,
            cwd: &self.workspace,
            home: &self.home,
        }
    }

    /// Writes the profile's files, makes its working directory and starts the client there (or
    /// in a directory of its own: a client that sends its process cwd as the session cwd, instead
    /// of the directory the user opened, then fails `session-cwd` rather than passing by luck).
    /// A case the client cannot play, or cannot be started for, ends here with the returned end.
    pub(super) fn launch(
        &self,
        case: &Case,
        client: &ClientSpec,
        dirs: &CaseDirs,
        rec: &Recorder,
    ) -> Result<Launched, RunEnd> {
        if client.control == ControlMode::None {
            crate::wire_only::playable(case, client)
                .map_err(|reason| RunEnd::NotApplicable { reason })?;
        }
        let expansion = self.expansion();
        crate::client_spec::write_files(&client.wire.files, &expansion)
            .map_err(|reason| RunEnd::HarnessError { reason })?;
        let workdir = client.expand_workdir(&expansion);
        if let Some(dir) = &workdir {
            std::fs::create_dir_all(dir).map_err(|e| RunEnd::HarnessError {
                reason: format!(
                    "could not create the profile's workdir {}: {e}",
                    dir.display()
                ),
            })?;
        }
        let launch_dir = workdir.as_deref().unwrap_or(&dirs.client);
        let screen = client.wire.tui.as_ref().map(|t| (t.rows, t.cols));
        let launched =
            launch::launch_with(&self.argv, &self.env, launch_dir, client.wire.tty, screen)
                .map_err(|err| RunEnd::Crash {
                    exit_code: None,
                    signal: None,
                    reason: format!("{err:#}"),
                })?;
        rec.note(&Note::ClientStarted {
            argv: self.argv.clone(),
            pid: launched.pgid,
        });
        if let Some(note) = client.declared_policy_note() {
            // The transcript says what the client promised, so it can be judged on its own.
            rec.note(&note);
        }
        Ok(launched)
    }
}

/// The case's record before anything is played: who, where, and a completed end until the play
/// says otherwise.
pub(super) fn new_record(
    case: &Case,
    client: &ClientSpec,
    cfg: &RunConfig,
    dirs: &CaseDirs,
) -> CaseRecord {
    let meta = case_meta(case, cfg);
    let repro = repro_command(&meta.case_id, client, &cfg.scenarios_dir);
    CaseRecord {
        meta,
        transcript: Vec::new(),
        control_plane: client.control == ControlMode::Adapter,
        control_supports: Vec::new(),
        workspace: dirs.workspace.clone(),
        outside: dirs.outside.clone(),
        files_after: BTreeMap::new(),
        symlinks: BTreeMap::new(),
        end: RunEnd::Completed,
        stderr_tail: String::new(),
        repro,
    }
}

/// The fake agent's knobs for this case.
pub(super) fn engine_config(cfg: &RunConfig, client: &ClientSpec, dirs: &CaseDirs) -> EngineConfig {
    EngineConfig {
        cwd: dirs.workspace.clone(),
        outside: dirs.outside.clone(),
        step_timeout: cfg.step_timeout,
        max_frame: cfg.max_frame,
        standalone: false,
        startup: Duration::from_millis(client.wire.startup_ms),
    }
}
