//! Standalone mode (`acp-fake-agent --scenario file`): the engine on this process's own
//! stdin/stdout, so a person can register the fake agent in an editor and reproduce a shape by
//! hand. The person is the user: `user` steps are printed to stderr as instructions.
//!
//! stdout is the ACP wire: nothing but frames may ever be written to it. Everything for the
//! person goes to stderr.

use std::future::Future;
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::engine::{
    self, AgentConn, Connector, EngineConfig, RunEnd, UserAction, UserDriver, UserFailure,
};
use crate::scenario;
use crate::wire::DEFAULT_MAX_FRAME;
use acp_vocab::transcript::Recorder;

/// Default step timeout when a person drives the client: ten minutes.
pub const DEFAULT_STEP_TIMEOUT: Duration = Duration::from_secs(600);

/// Exit code for a scenario that does not parse (like a usage error).
pub const EXIT_PARSE_ERROR: i32 = 2;

pub struct Options {
    pub scenario: PathBuf,
    pub transcript: Option<PathBuf>,
    pub step_timeout: Duration,
    /// `${cwd}`; the process's working directory if not given.
    pub cwd: Option<PathBuf>,
}

/// Yields this process's stdin/stdout once (connection 1); there is no second connection.
#[derive(Default)]
pub struct StdioConnector {
    used: bool,
}

impl Connector for StdioConnector {
    fn accept(&mut self) -> impl Future<Output = std::io::Result<AgentConn>> + Send {
        let first = !std::mem::replace(&mut self.used, true);
        async move {
            if first {
                Ok(AgentConn {
                    id: 1,
                    reader: Box::new(tokio::io::stdin()),
                    writer: Box::new(tokio::io::stdout()),
                    // The agent is this process: a crash step ends it.
                    pid: i32::try_from(std::process::id()).ok(),
                })
            } else {
                std::future::pending().await
            }
        }
    }
}

/// Prints each user step as an instruction for the person at the client; never waits.
pub struct PrintingUser;

impl UserDriver for PrintingUser {
    fn act(
        &mut self,
        action: UserAction,
        _timeout: Duration,
    ) -> impl Future<Output = Result<(), UserFailure>> + Send {
        say(&format!("YOU: {}", instruction(&action)));
        async { Ok(()) }
    }
}

/// What the person should do, in words.
pub fn instruction(action: &UserAction) -> String {
    match action {
        UserAction::NewSession { cwd, .. } => format!("open a new session in {cwd}"),
        UserAction::Prompt { text, .. } => format!("send the prompt {text:?}"),
        UserAction::Choose {
            request_id,
            option_id,
            offered,
        } => {
            let option = offered.as_array().and_then(|a| {
                a.iter()
                    .find(|o| o.get("optionId").and_then(Value::as_str) == Some(option_id))
            });
            let name = option
                .and_then(|o| o.get("name"))
                .and_then(Value::as_str)
                .unwrap_or(option_id);
            let kind = option
                .and_then(|o| o.get("kind"))
                .and_then(Value::as_str)
                .unwrap_or("?");
            format!(
                "when the approval for request {request_id} appears, click {name:?} (optionId {option_id}, kind {kind})"
            )
        }
        UserAction::Cancel {
            pending_request: Some(id),
            ..
        } => format!("while the approval for request {id} is shown, press Stop (cancel the turn)"),
        UserAction::Cancel { .. } => "press Stop (cancel the turn)".to_owned(),
        // session lifecycle
        UserAction::LoadSession {
            session_id, cwd, ..
        } => {
            format!("reopen the earlier session {session_id} (with its history) in {cwd}")
        }
        UserAction::ResumeSession {
            session_id, cwd, ..
        } => {
            format!("resume the earlier session {session_id} (without its history) in {cwd}")
        }
        UserAction::ListSessions { .. } => "open the list of earlier sessions".to_owned(),
        UserAction::CloseSession { .. } => "close the session".to_owned(),
        // modes and config options
        UserAction::SetMode { mode_id, .. } => format!("switch the session to mode {mode_id:?}"),
        UserAction::SetConfigOption {
            config_id, value, ..
        } => format!("set the session's option {config_id:?} to {value:?}"),
    }
}

fn say(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "acp-fake-agent: {line}");
}

/// Runs the scenario on stdin/stdout and returns the process exit code: 0 when every step ran,
/// 1 when it did not, [`EXIT_PARSE_ERROR`] when the scenario does not parse.
pub async fn run(opts: Options) -> i32 {
    let scenario = match scenario::load(&opts.scenario) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return EXIT_PARSE_ERROR;
        }
    };
    let cases = scenario.cases();
    let case = &cases[0];
    if cases.len() > 1 {
        say(&format!(
            "this scenario runs once per offered option; playing {} (any option works: the agent follows your answer)",
            case.id
        ));
    }
    let cwd = match opts.cwd.clone().map_or_else(std::env::current_dir, Ok) {
        Ok(dir) => std::path::absolute(&dir).unwrap_or(dir),
        Err(e) => {
            say(&format!("cannot determine the working directory: {e}"));
            return 1;
        }
    };
    let outside = match tempfile::Builder::new().prefix("acp-outside-").tempdir() {
        Ok(d) => d,
        Err(e) => {
            say(&format!("cannot create the ${{outside}} directory: {e}"));
            return 1;
        }
    };
    let cfg = EngineConfig {
        cwd: cwd.clone(),
        outside: outside.path().to_path_buf(),
        step_timeout: opts.step_timeout,
        max_frame: DEFAULT_MAX_FRAME,
        standalone: true,
        // A person starts the client; standalone waits are a step timeout at least anyway.
        startup: std::time::Duration::ZERO,
    };
    say(&format!(
        "playing {} — {} (cwd {}, outside {}); user steps are printed here as instructions",
        case.id,
        scenario.meta.title,
        cwd.display(),
        outside.path().display()
    ));
    // `${cwd}` is the person's own project here: the fake agent never creates or changes
    // anything in it, so the [[setup]] a scenario expects is only described.
    let setup = scenario::setup::describe(&scenario, &cwd, outside.path());
    if !setup.is_empty() {
        say(
            "this scenario expects these to exist before the client starts ([[setup]]); standalone mode does not create them in your project, create them yourself for the full shape:",
        );
        for line in setup {
            say(&format!("  {line}"));
        }
    }

    let rec = Recorder::new();
    let mut connector = StdioConnector::default();
    let mut user = PrintingUser;
    let outcome = tokio::select! {
        out = engine::run(case, &cfg, &mut connector, &mut user, &rec) => out,
        name = shutdown_signal() => {
            say(&format!("stopped by {name}"));
            write_transcript(&opts, &rec);
            return 1;
        }
    };
    let code = match &outcome.end {
        RunEnd::Completed => {
            say("scenario complete; staying connected until the client closes stdin");
            0
        }
        RunEnd::Incomplete { reason, .. } => {
            say(&format!("incomplete: {reason}"));
            1
        }
        RunEnd::NotApplicable { reason } => {
            say(&format!("not applicable: {reason}"));
            1
        }
        RunEnd::HarnessError { reason } => {
            say(&format!("scenario error: {reason}"));
            1
        }
        // Only the runner ends a run so; the engine never does.
        RunEnd::Timeout { reason, .. }
        | RunEnd::Crash { reason, .. }
        | RunEnd::AdapterError { reason } => {
            say(&format!("ended: {reason}"));
            1
        }
    };
    write_transcript(&opts, &rec);
    // A real agent lives until its client closes stdin; leaving earlier would look like a crash.
    let readers = async {
        for r in outcome.readers {
            let _ = r.await;
        }
    };
    tokio::select! {
        () = readers => {}
        name = shutdown_signal() => say(&format!("stopped by {name}")),
    }
    drop(outcome.keep_alive);
    write_transcript(&opts, &rec);
    code
}

fn write_transcript(opts: &Options, rec: &Recorder) {
    let Some(path) = &opts.transcript else {
        return;
    };
    let result = std::fs::File::create(path).and_then(|f| {
        let mut w = std::io::BufWriter::new(f);
        rec.write_jsonl(&mut w)?;
        w.flush()
    });
    if let Err(e) = result {
        say(&format!(
            "cannot write the transcript {}: {e}",
            path.display()
        ));
    }
}

/// Resolves on SIGINT or SIGTERM (an editor closing the agent), with the signal's name.
async fn shutdown_signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => return std::future::pending().await,
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}
