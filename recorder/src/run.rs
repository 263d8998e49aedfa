//! One recording: start the model server, launch the agent from its recipe, play the case's
//! user side over ACP (as a correct client: it answers `fs/*`, refuses other requests with
//! -32601), and return the normalised transcript. Every wait is bounded; the agent's whole
//! process group is killed when the run ends, however it ends.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_vocab::method::Method;
use acp_vocab::note::Note;
use acp_vocab::transcript::{Entry, Recorder};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::case::{Action, Case};
use crate::normalise::Normaliser;
use crate::recipe::Recipe;
use crate::script::Script;
use crate::server::{ModelRequest, ModelServer};
use crate::template::{self, Vars};

mod driver;
use driver::{Driver, truncate};

/// Where things are.
#[derive(Debug, Clone)]
pub struct Options {
    /// The install root: each package at `<agents>/<package>@<version>`.
    pub agents: PathBuf,
    /// Where run folders are made (not below the system temp dir: codex's sandbox treats it as
    /// writable).
    pub runs: PathBuf,
    /// Keep the run folder afterwards.
    pub keep: bool,
    /// Print the agent's frames as they come.
    pub verbose: bool,
}

/// A finished recording.
pub struct Recorded {
    pub entries: Vec<Entry>,
    pub model: Vec<ModelRequest>,
    /// How the agent ended after the recorder closed its stdin.
    pub exit: String,
}

const STDERR_TAIL: usize = 6000;

enum Event {
    Line(Vec<u8>),
    Eof,
    Exited(String),
}

/// Kills the agent's process group when dropped.
struct Group(i32);

impl Group {
    fn signal(&self, sig: nix::sys::signal::Signal) {
        if self.0 > 0 {
            let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(self.0), sig);
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.signal(nix::sys::signal::Signal::SIGKILL);
    }
}

fn tail(buf: &Mutex<Vec<u8>>) -> String {
    let b = buf.lock().unwrap_or_else(|e| e.into_inner());
    let text = String::from_utf8_lossy(&b);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(30);
    let t = lines[start..].join("\n");
    if t.trim().is_empty() {
        "  (empty)".into()
    } else {
        t.lines()
            .map(|l| format!("  {}", truncate(l, 400)))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Records `case` with the agent of `recipe`, the model answering from `script`.
pub async fn record(
    recipe: &Recipe,
    case: &Case,
    script: &Script,
    opts: &Options,
) -> Result<Recorded> {
    let install = recipe.install_dir(&opts.agents);
    if !install.is_dir() {
        bail!(
            "{} is not installed at {} (npm install --prefix {} {})",
            recipe.spec(),
            install.display(),
            install.display(),
            recipe.spec()
        );
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0);
    let run = opts.runs.join(format!(
        "{}-{}-{}-{}-{stamp}",
        recipe.name,
        recipe.version,
        case.name,
        std::process::id()
    ));
    std::fs::create_dir_all(&run).with_context(|| format!("cannot create {}", run.display()))?;
    let run = run.canonicalize()?;
    let result = record_in(recipe, case, script, opts, &install, &run).await;
    if !opts.keep {
        let _ = std::fs::remove_dir_all(&run);
    }
    result
}

async fn record_in(
    recipe: &Recipe,
    case: &Case,
    script: &Script,
    opts: &Options,
    install: &Path,
    run: &Path,
) -> Result<Recorded> {
    let proj = run.join("proj");
    let outside = run.join("outside");
    let home = run.join("home");
    for d in [&proj, &outside, &home] {
        std::fs::create_dir_all(d)?;
    }
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let agents = opts.agents.canonicalize().unwrap_or(opts.agents.clone());
    let mut vars: Vars = BTreeMap::new();
    vars.insert("proj".into(), s(&proj));
    vars.insert("outside".into(), s(&outside));
    vars.insert("home".into(), s(&home));
    vars.insert("run".into(), s(run));
    let server = ModelServer::start(script.filled(&vars)?).await?;
    vars.insert("agents".into(), s(&agents));
    vars.insert("install".into(), s(install));
    vars.insert("base_url".into(), server.base_url());
    vars.insert("port".into(), server.addr.port().to_string());
    vars.insert("ask_mode".into(), recipe.ask_mode.clone());
    let filled = recipe
        .filled(&vars)
        .with_context(|| format!("recipe {}", recipe.path.display()))?;
    for (path, text) in &filled.files {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    for (path, text) in &case.files {
        let path = run.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, text)?;
    }
    for (link, target) in &case.symlinks {
        let link = run.join(link);
        if let Some(parent) = link.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::os::unix::fs::symlink(run.join(target), &link)
            .with_context(|| format!("cannot make the link {}", link.display()))?;
    }

    let stderr_buf = Arc::new(Mutex::new(Vec::<u8>::new()));
    let result = drive(recipe, case, opts, &server, &filled, &vars, &stderr_buf).await;
    let model = server.requests();
    let seen = server.seen();
    server.stop().await;
    match result {
        Ok((entries, exit, sessions)) => {
            let mut literals = vec![
                (s(&proj), "<proj>".to_string()),
                (s(&outside), "<outside>".to_string()),
                (s(&home), "<home>".to_string()),
                (s(run), "<run>".to_string()),
                (s(install), "<install>".to_string()),
                (s(&agents), "<agents>".to_string()),
                (vars["base_url"].clone(), "<model-url>".to_string()),
                (
                    s(&proj).replace(['/', '.'], "-"),
                    "<proj-dashed>".to_string(),
                ),
                // opencode titles a file by its path relative to the filesystem root.
                (
                    s(&proj).trim_start_matches('/').to_string(),
                    "<proj:noslash>".to_string(),
                ),
                (
                    s(&outside).trim_start_matches('/').to_string(),
                    "<outside:noslash>".to_string(),
                ),
                (
                    s(run).trim_start_matches('/').to_string(),
                    "<run:noslash>".to_string(),
                ),
            ];
            // qwen-code abbreviates long paths to `…/<last folders>`, keeping the run folder's
            // name (which holds a pid and a time).
            if let Some(name) = run.file_name() {
                literals.push((
                    name.to_string_lossy().into_owned(),
                    "<run-name>".to_string(),
                ));
            }
            if let Ok(user_home) = std::env::var("HOME")
                && user_home.len() > 1
            {
                literals.push((user_home, "<user-home>".to_string()));
            }
            let mut norm = Normaliser::new(literals);
            for id in &sessions {
                norm.add_session(id);
            }
            let entries = entries
                .into_iter()
                .map(|e| {
                    let (raw, json) = norm.frame(&e.raw);
                    let mut n =
                        Entry::text(e.index, e.at_us, e.conn, e.direction, raw, e.invalid_utf8);
                    n.set_json(json);
                    n
                })
                .collect();
            let model = model
                .into_iter()
                .map(|mut r| {
                    r.path = norm.string(&r.path);
                    r
                })
                .collect();
            Ok(Recorded {
                entries,
                model,
                exit,
            })
        }
        Err(e) => Err(anyhow!(
            "{e:#}\nagent stderr (tail):\n{}\nmodel requests seen:\n{seen}",
            tail(&stderr_buf)
        )),
    }
}

async fn drive(
    recipe: &Recipe,
    case: &Case,
    opts: &Options,
    server: &ModelServer,
    filled: &crate::recipe::Filled,
    vars: &Vars,
    stderr_buf: &Arc<Mutex<Vec<u8>>>,
) -> Result<(Vec<Entry>, String, Vec<String>)> {
    let proj = &vars["proj"];
    let home = &vars["home"];
    let mut cmd = Command::new(&filled.argv[0]);
    cmd.args(&filled.argv[1..])
        .current_dir(proj)
        .env_clear()
        .env(
            "PATH",
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()),
        )
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", format!("{home}/.config"))
        .env("XDG_DATA_HOME", format!("{home}/.local/share"))
        .env("XDG_CACHE_HOME", format!("{home}/.cache"))
        .env("XDG_STATE_HOME", format!("{home}/.local/state"))
        .env("LANG", "C.UTF-8")
        .envs(&filled.env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let recorder = Recorder::new();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {:?}", filled.argv))?;
    let group = Group(child.id().map(|p| p as i32).unwrap_or(0));
    let (tx, rx) = mpsc::unbounded_channel();
    let stdout = child.stdout.take().ok_or_else(|| anyhow!("no stdout"))?;
    let mut stderr = child.stderr.take().ok_or_else(|| anyhow!("no stderr"))?;
    let stdin = child.stdin.take();
    {
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => {
                        let _ = tx.send(Event::Eof);
                        break;
                    }
                    Ok(_) => {
                        if tx.send(Event::Line(line)).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    }
    {
        let buf = stderr_buf.clone();
        tokio::spawn(async move {
            let mut chunk = [0u8; 8192];
            while let Ok(n) = stderr.read(&mut chunk).await {
                if n == 0 {
                    break;
                }
                let mut b = buf.lock().unwrap_or_else(|e| e.into_inner());
                b.extend_from_slice(&chunk[..n]);
                if b.len() > 4 * STDERR_TAIL {
                    let cut = b.len() - STDERR_TAIL;
                    b.drain(..cut);
                }
            }
        });
    }
    let (exit_tx, exit_rx) = tokio::sync::oneshot::channel::<String>();
    {
        let tx = tx.clone();
        tokio::spawn(async move {
            let status = match child.wait().await {
                Ok(s) => s.to_string(),
                Err(e) => format!("wait failed: {e}"),
            };
            let _ = tx.send(Event::Exited(status.clone()));
            let _ = exit_tx.send(status);
        });
    }
    drop(tx);
    let mut d = Driver {
        recorder,
        stdin,
        rx,
        server,
        next_id: 0,
        responses: HashMap::new(),
        permissions: Vec::new(),
        auto_kind: None,
        session: None,
        prompt: None,
        exited: None,
        stdout_closed: false,
        verbose: opts.verbose,
        sessions: Vec::new(),
    };
    let startup = Duration::from_millis(recipe.startup_timeout_ms);
    let turn = Duration::from_millis(recipe.turn_timeout_ms);
    let id = d
        .request(
            Method::Initialize,
            json!({"protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": false},
                "clientInfo": {"name": "acp-record", "title": "acp-harness recorder", "version": env!("CARGO_PKG_VERSION")}}),
        )
        .await?;
    d.wait_response(id, startup, Method::Initialize.as_str())
        .await
        .context("the agent never connected")?;

    for (n, step) in case.steps.iter().enumerate() {
        let at = format!("case {} step[{n}] ({:?})", case.name, step.action);
        if step.delay_ms > 0 {
            d.idle(Duration::from_millis(step.delay_ms)).await?;
        }
        let timeout = step.timeout_ms.map(Duration::from_millis);
        match &step.action {
            Action::NewSession => {
                let id = d
                    .request(Method::SessionNew, json!({"cwd": proj, "mcpServers": []}))
                    .await?;
                let result = d
                    .wait_response(id, timeout.unwrap_or(startup), Method::SessionNew.as_str())
                    .await
                    .context(at.clone())?;
                let sid = result
                    .get("sessionId")
                    .and_then(Value::as_str)
                    .ok_or_else(|| anyhow!("{at}: session/new answered no sessionId: {result}"))?;
                d.session = Some(sid.to_string());
                d.sessions.push(sid.to_string());
            }
            Action::SetMode(mode) => {
                let mode = template::fill(mode, vars).map_err(|e| anyhow!("{at}: {e}"))?;
                if mode.is_empty() {
                    continue;
                }
                let sid = d
                    .session
                    .clone()
                    .ok_or_else(|| anyhow!("{at}: no session yet"))?;
                let id = d
                    .request(
                        Method::SessionSetMode,
                        json!({"sessionId": sid, "modeId": mode}),
                    )
                    .await?;
                let answer = d
                    .wait_answer(
                        id,
                        timeout.unwrap_or(Duration::from_secs(30)),
                        Method::SessionSetMode.as_str(),
                    )
                    .await
                    .context(at.clone())?;
                // `optional`: a refused mode (an error answer, kept in the transcript) is what
                // the case records, and the case goes on; no answer at all is still an error.
                if let Err(e) = answer
                    && !step.optional
                {
                    bail!("{at}: session/set_mode was answered with an error: {e}");
                }
            }
            Action::Prompt(text) => {
                let text = template::fill(text, vars).map_err(|e| anyhow!("{at}: {e}"))?;
                let sid = d
                    .session
                    .clone()
                    .ok_or_else(|| anyhow!("{at}: no session yet"))?;
                let id = d
                    .request(
                        Method::SessionPrompt,
                        json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]}),
                    )
                    .await?;
                d.prompt = Some(id);
            }
            Action::Choose { kind, all } => {
                let prompt = d.prompt;
                let ok = d
                    .wait(timeout.unwrap_or(turn), |d| {
                        d.open_permission().is_some()
                            || prompt.is_some_and(|p| d.responses.contains_key(&p))
                    })
                    .await?;
                match d.open_permission() {
                    Some(p) => d.answer(p, kind).await.context(at.clone())?,
                    None if step.optional => {}
                    None if ok => bail!(
                        "{at}: the turn ended without the permission request this step answers"
                    ),
                    None => bail!("{at}: no permission request came"),
                }
                if *all {
                    d.auto_kind = Some(kind.clone());
                }
            }
            Action::Cancel => {
                let sid = d
                    .session
                    .clone()
                    .ok_or_else(|| anyhow!("{at}: no session yet"))?;
                d.recorder.note(Note::UserCancel {
                    session_id: sid.clone(),
                    by: None,
                });
                d.send(json!({"jsonrpc": "2.0", "method": Method::SessionCancel.as_str(), "params": {"sessionId": sid}}))
                    .await?;
            }
            Action::AwaitPromptEnd => {
                let p = d
                    .prompt
                    .ok_or_else(|| anyhow!("{at}: no prompt was sent"))?;
                let ok = d
                    .wait(timeout.unwrap_or(turn), |d| d.responses.contains_key(&p))
                    .await?;
                if !ok && !step.optional {
                    bail!("{at}: the prompt was not answered in time");
                }
            }
            Action::AwaitPermission => {
                let ok = d
                    .wait(timeout.unwrap_or(turn), |d| d.open_permission().is_some())
                    .await?;
                if !ok && !step.optional {
                    bail!("{at}: no permission request came");
                }
            }
            Action::AwaitWithdrawn => {
                let ok = d
                    .wait(timeout.unwrap_or(turn), |d| {
                        d.open_permission()
                            .is_some_and(|n| d.permissions[n].withdrawn)
                    })
                    .await?;
                if !ok && !step.optional {
                    bail!("{at}: the agent did not withdraw the pending permission request");
                }
            }
        }
    }
    if let Some(p) = d.prompt {
        if !d.wait(turn, |d| d.responses.contains_key(&p)).await? {
            bail!("the prompt was not answered within {} ms", turn.as_millis());
        }
        if let Some(Err(e)) = d.responses.get(&p) {
            bail!("the agent answered session/prompt with an error: {e}");
        }
    }
    d.idle(Duration::from_millis(recipe.settle_ms)).await?;
    d.check_alive()?;
    if let Some(n) = d.open_permission() {
        let p = &d.permissions[n];
        if !p.withdrawn {
            bail!(
                "the agent asked for permission (request {}) and the case has no step that answers it (unscripted)",
                p.id
            );
        }
    }
    // Close: stdin first, then SIGTERM, then SIGKILL (the guard), each bounded.
    d.stdin = None;
    let exit_rx = exit_rx;
    let exit = match tokio::time::timeout(Duration::from_secs(5), exit_rx).await {
        Ok(Ok(s)) => s,
        _ => {
            group.signal(nix::sys::signal::Signal::SIGTERM);
            tokio::time::sleep(Duration::from_secs(2)).await;
            "did not exit within 5 s of its stdin closing; SIGTERM sent".to_string()
        }
    };
    // Frames written while closing are part of the recording.
    let until = Instant::now() + Duration::from_millis(300);
    while d.pump(until).await.unwrap_or(false) {}
    drop(group);
    Ok((d.recorder.snapshot(), exit, d.sessions))
}
