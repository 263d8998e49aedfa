//! The client under test: an argv array, or a client profile (TOML) that says how to launch it.
//!
//! `ACP_HARNESS_CLIENT` and `--client` accept either form: a JSON array of strings
//! (`["./my-client","--adapter"]`) is an adapter-bearing client; anything else is read as the
//! path of a client profile (format: clients/README.md, "Client profiles"). A profile can also
//! describe a client without an adapter: how its prompt, permission policy and cancel work, and
//! which observer reads what it exposes.

mod extends;
mod files;
pub mod install;
pub mod observer;
mod profile;
mod program;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

pub use files::write_files;
pub use observer::ObserverSpec;
pub use profile::{Cancel, ChooseBy, ChooseInput, Install, Policy, Reachable, Tui};

use acp_judge::policy::{DeclaredPolicy, PolicySource};

/// How the harness drives a client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlMode {
    /// The client ships an adapter speaking control protocol v1 on its stdin/stdout.
    Adapter,
    /// Wire only: the client gets its prompt from argv and answers by its own policy.
    None,
}

/// What a profile says about driving a client without an adapter (all empty for argv clients).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireProfile {
    /// One line about the client and mode, for reports.
    pub about: Option<String>,
    /// stdin and stderr on a pseudo-terminal.
    pub tty: bool,
    pub policy: Option<Policy>,
    pub cancel: Cancel,
    /// Inputs that answer the client's permission prompt.
    pub choose: Vec<ChooseInput>,
    /// `[observer]`: rules or a program that read what the client shows.
    pub observer: Option<ObserverSpec>,
    /// `[files]`: path template → content template, written before the client starts.
    pub files: BTreeMap<String, String>,
    /// argv that prints the client's version (`{program}` already filled).
    pub version_command: Option<Vec<String>>,
    pub install: Option<Install>,
    /// `startup_ms`: extra time to start the agent, on top of the step timeout.
    #[serde(default)]
    pub startup_ms: u64,
    /// `workdir`: the client's working directory template (`{cwd}`, `{home}`); `None`: the
    /// case's client directory.
    #[serde(default)]
    pub workdir: Option<String>,
    /// `[tui]`: a full-screen client on a terminal of its own, observed through its screen.
    #[serde(default)]
    pub tui: Option<Tui>,
}

/// A fully resolved client to launch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientSpec {
    /// Short name for reports (profile `name`, or the argv's file name).
    pub name: String,
    /// argv template; may contain `{agent}`, `{agent_argv}`, `{prompt}`, `{cwd}`, `{home}`,
    /// `{policy}` (`{program}` is filled when the profile is read).
    pub argv: Vec<String>,
    /// Environment for the client; values may contain `{cwd}` and `{home}`.
    pub env: BTreeMap<String, String>,
    pub control: ControlMode,
    /// Where the spec came from, verbatim (for the repro line).
    pub source: String,
    /// Profile settings for clients without an adapter.
    #[serde(default)]
    pub wire: WireProfile,
}

/// The values placeholders stand for in one case.
#[derive(Debug, Clone, Copy)]
pub struct Expansion<'a> {
    /// The agent command the client must spawn.
    pub agent_argv: &'a [String],
    /// The scenario's first prompt text.
    pub prompt: &'a str,
    /// The case's workspace.
    pub cwd: &'a Path,
    /// An empty directory of the case, for `HOME` and the like.
    pub home: &'a Path,
}

impl ClientSpec {
    /// An adapter-bearing client given as an argv array.
    pub fn from_argv(argv: Vec<String>) -> Result<Self> {
        let Some(first) = argv.first() else {
            bail!("the client argv is empty");
        };
        let name = Path::new(first)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| first.clone());
        let source = serde_json::to_string(&argv).unwrap_or_default();
        Ok(ClientSpec {
            name,
            argv,
            env: BTreeMap::new(),
            control: ControlMode::Adapter,
            source,
            wire: WireProfile::default(),
        })
    }

    /// Parses `--client` / `ACP_HARNESS_CLIENT`: a JSON argv array or a profile path.
    pub fn parse(text: &str) -> Result<Self> {
        let trimmed = text.trim();
        if trimmed.starts_with('[') {
            let argv: Vec<String> = serde_json::from_str(trimmed).map_err(|_| {
                anyhow::anyhow!(
                    "client {trimmed:?} looks like a JSON array but is not an array of strings"
                )
            })?;
            return Self::from_argv(argv);
        }
        Self::from_profile(Path::new(trimmed))
    }

    /// Reads a client profile file. `{program}` is filled now (from `program_env` or
    /// `program`); a relative argv[0] (`./…`, `../…`) resolves against the profile's folder.
    pub fn from_profile(path: &Path) -> Result<Self> {
        Self::read_profile(path, None)
    }

    /// Reads a client profile with `{program}` set to `program`, whatever the profile's
    /// `program` and `program_env` say (for a test that installed the client itself).
    pub fn from_profile_with_program(path: &Path, program: &str) -> Result<Self> {
        Self::read_profile(path, Some(program.to_owned()))
    }

    fn read_profile(path: &Path, program: Option<String>) -> Result<Self> {
        let file = profile::read(path)?;
        let program = match program {
            Some(p) => Some(p),
            None => program::resolve_program(&file, path)?,
        };
        let fill = |argv: &[String]| -> Vec<String> {
            argv.iter()
                .enumerate()
                .map(|(i, a)| {
                    let a = if i == 0 {
                        program::relative_to(a, path)
                    } else {
                        a.clone()
                    };
                    match &program {
                        Some(p) => a.replace("{program}", p),
                        None => a,
                    }
                })
                .collect()
        };
        let cancel = match file.cancel {
            Some(c) => match c.resolve(path)? {
                Cancel::Command(argv) => Cancel::Command(fill(&argv)),
                other => other,
            },
            None => Cancel::None,
        };
        Ok(ClientSpec {
            name: file.name,
            argv: fill(&file.argv),
            env: file.env,
            control: file.control,
            source: path.display().to_string(),
            wire: WireProfile {
                about: file.about,
                tty: file.tty || file.tui.is_some(),
                policy: file.policy,
                cancel,
                choose: file.choose,
                observer: file.observer.map(|mut o| {
                    if let Some(argv) = o.command.as_mut() {
                        *argv = fill(argv);
                    }
                    o
                }),
                files: file.files,
                version_command: file.version_command.as_deref().map(fill),
                install: file.install,
                startup_ms: file.startup_ms,
                workdir: file.workdir,
                tui: file.tui,
            },
        })
    }

    /// The reference client, located (and built if needed) in the workspace.
    pub fn reference() -> Result<Self> {
        let path: PathBuf = crate::locate::locate(crate::locate::REFERENCE_CLIENT)?;
        let mut spec = Self::from_argv(vec![path.to_string_lossy().into_owned()])?;
        spec.name = "acp-reference-client".into();
        spec.source = "reference".into();
        Ok(spec)
    }

    /// A mutant of the reference client (see clients/README.md).
    pub fn mutant(name: &str) -> Result<Self> {
        let mut spec = Self::reference()?;
        // Ask the client now whether it knows the mutant: a typo must be one clear error, not
        // a crash in every case of the run.
        let check = std::process::Command::new(&spec.argv[0])
            .args(["--mutant", name, "--version"])
            .output()
            .map_err(|e| anyhow::anyhow!("cannot run {}: {e}", spec.argv[0]))?;
        if !check.status.success() {
            let stderr = String::from_utf8_lossy(&check.stderr);
            bail!("{}", stderr.lines().next().unwrap_or("unknown mutant"));
        }
        spec.argv.extend(["--mutant".to_string(), name.to_string()]);
        spec.name = format!("acp-reference-client --mutant {name}");
        spec.source = format!("mutant:{name}");
        Ok(spec)
    }

    /// Resolves the `--client` argument or `ACP_HARNESS_CLIENT`, defaulting to the reference
    /// client. `reference` and `mutant:<name>` are accepted as shorthands.
    pub fn resolve(arg: Option<&str>) -> Result<Self> {
        let from_env = std::env::var("ACP_HARNESS_CLIENT").ok();
        match arg.or(from_env.as_deref()).map(str::trim) {
            None | Some("") | Some("reference") => Self::reference(),
            Some(s) if s.starts_with("mutant:") => Self::mutant(&s["mutant:".len()..]),
            Some(s) => Self::parse(s),
        }
    }

    /// The auto-approval policy the profile declares (`[policy]`; an adapter declares its own in
    /// `hello`). `None` for a client without a `[policy]`: it approves nothing by itself.
    pub fn declared_policy(&self) -> Option<DeclaredPolicy> {
        let policy = self.wire.policy.as_ref()?;
        // Validated when the profile was read; a policy built by hand that does not validate
        // declares nothing, which the check reads as "approves nothing by itself".
        let decisions = policy.decisions().ok()?;
        Some(DeclaredPolicy {
            source: PolicySource::Profile,
            name: Some(policy.name.clone()),
            policy: decisions,
        })
    }

    /// The `declared_policy` note the harness writes at the start of a case's transcript, so a
    /// transcript alone says what its client promised (`None` without a profile `[policy]`).
    pub fn declared_policy_note(&self) -> Option<acp_vocab::note::Note> {
        self.declared_policy()
            .map(acp_vocab::note::Note::DeclaredPolicy)
    }

    /// The argv to execute, with placeholders filled (`{agent_argv}` and `{policy}` splice
    /// several arguments).
    pub fn expand_argv(&self, x: &Expansion<'_>) -> Vec<String> {
        self.expand_template(&self.argv, x)
    }

    /// Any command of the profile (argv, cancel command), with placeholders filled.
    pub fn expand_template(&self, template: &[String], x: &Expansion<'_>) -> Vec<String> {
        let mut out = Vec::new();
        for arg in template {
            match arg.as_str() {
                "{agent_argv}" => out.extend(x.agent_argv.iter().cloned()),
                "{policy}" => out.extend(
                    self.wire
                        .policy
                        .iter()
                        .flat_map(|p| p.flags.iter().cloned()),
                ),
                _ => out.push(fill(arg, x)),
            }
        }
        out
    }

    /// The working directory the profile asks for (`workdir`), filled; `None`: the default.
    pub fn expand_workdir(&self, x: &Expansion<'_>) -> Option<PathBuf> {
        self.wire
            .workdir
            .as_deref()
            .map(|w| PathBuf::from(fill(w, x)))
    }

    /// The environment the profile adds, with `{cwd}` and `{home}` filled.
    pub fn expand_env(&self, x: &Expansion<'_>) -> Vec<(String, String)> {
        self.env
            .iter()
            .chain(self.wire.tui.iter().flat_map(|t| t.env.iter()))
            .map(|(k, v)| (k.clone(), fill(v, x)))
            .collect()
    }

    /// Fails, with one sentence, if the client's program cannot be started at all (missing, not
    /// executable, not on the `PATH` it gets): checked once before any case runs.
    pub fn check_startable(&self) -> Result<()> {
        let program = self.argv.first().context("the client argv is empty")?;
        let path = self
            .env
            .get("PATH")
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os("PATH"));
        crate::launch::check_startable(program, path.as_deref())
    }

    /// Runs the profile's version command (bounded by `timeout`) and returns
    /// `{"name":…,"version":<first non-empty line of its stdout, else of its stderr>}` (some
    /// CLIs print their version to stderr); `None` without a command or when it fails.
    pub async fn probe_version(&self, timeout: Duration) -> Option<serde_json::Value> {
        let argv = self.wire.version_command.as_ref()?;
        let (program, args) = argv.split_first()?;
        let mut cmd = tokio::process::Command::new(program);
        cmd.args(args)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let output = tokio::time::timeout(timeout, cmd.output())
            .await
            .ok()?
            .ok()?;
        let first_line = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned)
        };
        let version = first_line(&output.stdout).or_else(|| first_line(&output.stderr))?;
        output
            .status
            .success()
            .then(|| serde_json::json!({"name": self.name, "version": version}))
    }
}

/// The agent command as one shell-quoted string (`{agent}`).
fn agent_line(agent_argv: &[String]) -> String {
    agent_argv
        .iter()
        .map(|a| shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
}

fn fill(arg: &str, x: &Expansion<'_>) -> String {
    arg.replace("{agent}", &agent_line(x.agent_argv))
        .replace("{prompt}", x.prompt)
        .replace("{cwd}", &x.cwd.to_string_lossy())
        .replace("{home}", &x.home.to_string_lossy())
}

/// POSIX shell quoting, for `{agent}` (clients that take the agent as one command string).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:@%+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_argv_is_an_adapter_client() {
        let spec = ClientSpec::parse(r#"["./c","--x"]"#).unwrap();
        assert_eq!(spec.argv, ["./c", "--x"]);
        assert_eq!(spec.control, ControlMode::Adapter);
    }

    #[test]
    fn malformed_json_argv_is_a_clear_error() {
        let err = ClientSpec::parse(r#"["./c", 3]"#).unwrap_err();
        assert!(format!("{err:#}").contains("array of strings"), "{err:#}");
    }

    #[test]
    fn missing_profile_names_the_path() {
        let err = ClientSpec::parse("/nonexistent/profile.toml").unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/profile.toml"));
    }

    fn expansion<'a>(agent: &'a [String]) -> Expansion<'a> {
        Expansion {
            agent_argv: agent,
            prompt: "hi there",
            cwd: Path::new("/w"),
            home: Path::new("/t/home"),
        }
    }

    #[test]
    fn placeholders_expand() {
        let spec = ClientSpec::from_argv(vec![
            "c".into(),
            "--agent".into(),
            "{agent}".into(),
            "exec".into(),
            "{prompt}".into(),
            "--home={home}".into(),
            "{agent_argv}".into(),
        ])
        .unwrap();
        let agent = [
            "/bin/fake agent".to_string(),
            "--connect".into(),
            "/s".into(),
        ];
        let argv = spec.expand_argv(&expansion(&agent));
        assert_eq!(
            argv,
            [
                "c",
                "--agent",
                "'/bin/fake agent' --connect /s",
                "exec",
                "hi there",
                "--home=/t/home",
                "/bin/fake agent",
                "--connect",
                "/s"
            ]
        );
    }

    fn write_profile(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.toml");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    const WIRE_ONLY: &str = r#"
name = "cli"
program = "./bin/cli"
argv = ["{program}", "--agent", "{agent}", "{policy}", "exec", "{prompt}"]
control = "none"
version_command = ["{program}", "--version"]
[env]
HOME = "{home}"
[policy]
name = "escalate"
flags = ["--policy", '{"escalate":["*"]}']
[cancel]
signal = "SIGINT"
[observer]
[[observer.rule]]
on = "exit"
event = "turn"
state = "failed"
message = "exited with {code}"
"#;

    #[tokio::test]
    async fn the_version_command_is_read_from_stdout_else_stderr() {
        let with = |command: &str| {
            WIRE_ONLY.replace(
                r#"version_command = ["{program}", "--version"]"#,
                &format!(r#"version_command = ["sh", "-c", "{command}"]"#),
            )
        };
        let probe = |text: String| async move {
            let (_dir, path) = write_profile(&text);
            let spec = ClientSpec::from_profile(&path).unwrap();
            spec.probe_version(Duration::from_secs(10)).await
        };
        let version = |v: Option<serde_json::Value>| v.map(|v| v["version"].clone());
        assert_eq!(
            version(probe(with("echo; echo cli 1.2.3")).await),
            Some("cli 1.2.3".into())
        );
        // Python's argparse before 3.4 and many CLIs print their version to stderr.
        assert_eq!(
            version(probe(with("echo 0.9 >&2")).await),
            Some("0.9".into())
        );
        assert_eq!(probe(with("echo 1.0; exit 3")).await, None);
        assert_eq!(probe(with("true")).await, None);
    }

    #[test]
    fn wire_only_profile_reads_and_expands() {
        let (dir, path) = write_profile(WIRE_ONLY);
        let spec = ClientSpec::from_profile(&path).unwrap();
        let program = dir.path().join("./bin/cli").to_string_lossy().into_owned();
        assert_eq!(spec.control, ControlMode::None);
        assert_eq!(spec.wire.cancel, Cancel::Signal("SIGINT".into()));
        assert_eq!(spec.wire.observer.as_ref().map(|o| o.rules.len()), Some(1));
        assert_eq!(
            spec.wire.version_command,
            Some(vec![program.clone(), "--version".into()])
        );
        let agent = ["fa".to_string(), "--connect".into(), "/s".into()];
        let x = expansion(&agent);
        assert_eq!(
            spec.expand_argv(&x),
            [
                program.as_str(),
                "--agent",
                "fa --connect /s",
                "--policy",
                r#"{"escalate":["*"]}"#,
                "exec",
                "hi there"
            ]
        );
        assert_eq!(
            spec.expand_env(&x),
            [("HOME".to_string(), "/t/home".to_string())]
        );
        assert_eq!(spec.expand_workdir(&x), None);
        let (_dir, path) = write_profile(
            &WIRE_ONLY.replace("name = \"cli\"", "name = \"cli\"\nworkdir = \"{cwd}\""),
        );
        let spec = ClientSpec::from_profile(&path).unwrap();
        assert_eq!(spec.expand_workdir(&x), Some(x.cwd.to_path_buf()));
    }

    const TUI: &str = r#"
name = "tui"
program = "./tui"
argv = ["{program}"]
control = "none"
[tui]
rows = 20
cols = 60
quit = "<C-c>"
prompt = "{prompt}<Enter>"
ready = "> $"
env = { TERM = "xterm" }
[observer]
[[observer.rule]]
on = "screen"
region = { row = 19, col = 0, rows = 1, cols = 60 }
match = 'Done'
event = "turn"
state = "completed"
"#;

    /// A full-screen client: typed prompt instead of `{prompt}` in argv, its own terminal, keys
    /// checked, screen rules on its screen; mistakes name the file and the key.
    #[test]
    fn a_tui_profile_reads_and_its_mistakes_name_the_key() {
        let (_dir, path) = write_profile(TUI);
        let spec = ClientSpec::from_profile(&path).unwrap();
        let tui = spec.wire.tui.as_ref().unwrap();
        assert_eq!((tui.rows, tui.cols, tui.settle_ms), (20, 60, 150));
        assert!(spec.wire.tty);
        let agent = ["fa".to_string()];
        let env = spec.expand_env(&expansion(&agent));
        assert!(
            env.contains(&("TERM".to_string(), "xterm".to_string())),
            "{env:?}"
        );
        for (bad, says) in [
            (
                TUI.replace("row = 19", "row = 20"),
                "`region`: rows 20..21 × columns 0..60 lie outside the 20×60 screen",
            ),
            (
                TUI.replace("quit = \"<C-c>\"", "quit = \"<Ctrl-c>\""),
                "[tui] quit: \"<Ctrl-c>\": unknown key <Ctrl-c>",
            ),
            (
                TUI.replace("prompt = \"{prompt}<Enter>\"\n", ""),
                "{prompt}",
            ),
            (
                TUI.replace("control = \"none\"\n", ""),
                "control = \"none\"",
            ),
            (TUI.replace("[tui]\n", "[tui]\nbogus = 1\n"), "bogus"),
            // By position: by its number or by pressing `next`, one of the two.
            (
                format!("{TUI}[[choose]]\nby = \"position\"\ninput = \"<Enter>\"\n"),
                "either by its number (`{n}` in `input`) or by pressing `next`",
            ),
            (
                format!(
                    "{TUI}[[choose]]\nby = \"position\"\ninput = \"{{n}}\"\nnext = \"<Tab>\"\n"
                ),
                "either by its number (`{n}` in `input`) or by pressing `next`",
            ),
            (
                format!(
                    "{TUI}[[choose]]\nselects = [\"allow_once\"]\ninput = \"y\"\nnext = \"<Tab>\"\n"
                ),
                "`next` is for `by = \"label\"` and `by = \"position\"`",
            ),
        ] {
            let (_dir, path) = write_profile(&bad);
            let err = format!("{:#}", ClientSpec::from_profile(&path).unwrap_err());
            assert!(err.contains(says), "{says}: {err}");
            assert!(err.contains("client.toml"), "{err}");
        }
    }

    #[test]
    fn a_policy_declares_what_the_client_approves_by_itself() {
        let (_dir, path) = write_profile(&WIRE_ONLY.replace(
            "name = \"escalate\"",
            "name = \"escalate\"\napproves = [\"read\", \"search\"]\nscope = \"anywhere\"",
        ));
        let declared = ClientSpec::from_profile(&path)
            .unwrap()
            .declared_policy()
            .unwrap();
        assert_eq!(declared.source, PolicySource::Profile);
        assert_eq!(declared.policy.approves, ["read", "search"]);
        assert_eq!(declared.policy.scope, acp_judge::policy::Scope::Anywhere);
        assert!(!declared.policy.allow_always);
        // A policy without flags needs no "{policy}" in argv.
        let no_flags = WIRE_ONLY
            .replace("\"{policy}\", ", "")
            .replace("flags = [\"--policy\", '{\"escalate\":[\"*\"]}']\n", "");
        let (_dir, path) = write_profile(&no_flags);
        assert!(ClientSpec::from_profile(&path).is_ok(), "{no_flags}");
    }

    #[test]
    fn profile_errors_name_the_file_and_the_problem() {
        let cases = [
            (
                WIRE_ONLY.replace("\"{policy}\", ", ""),
                "no \"{policy}\" element",
            ),
            (
                WIRE_ONLY.replace("signal = \"SIGINT\"", "signal = \"SIGNOPE\""),
                "unknown signal",
            ),
            (
                WIRE_ONLY.replace("signal = \"SIGINT\"", "signal = \"SIGINT\"\nstdin = \"x\""),
                "exactly one of",
            ),
            (
                WIRE_ONLY.replace("event = \"turn\"", "event = \"nope\""),
                "[[observer.rule]] #1: unknown event \"nope\"",
            ),
            (
                WIRE_ONLY.replace("message = ", "colour = "),
                "unknown key `colour`",
            ),
            (WIRE_ONLY.replace("{code}", "{kode}"), "uses {kode}"),
            (
                WIRE_ONLY.replace("on = \"exit\"", "on = \"stdout\"\nmatch = \"(?P<x\""),
                "`match` is not a valid regex",
            ),
            (
                WIRE_ONLY.replace("state = \"failed\"", "state = \"exploded\""),
                "`state` = \"exploded\" is not one of",
            ),
            (
                WIRE_ONLY.replace("message = \"exited with {code}\"", "state = \"x\""),
                "state",
            ),
            (
                format!("{WIRE_ONLY}[files]\n\"{{home}}/../x\" = \"\"\n"),
                "[files] \"{home}/../x\"",
            ),
            (
                WIRE_ONLY.replace("[observer]", "[observer]\ncommand = [\"./o.py\"]"),
                "both `command` and",
            ),
            (
                WIRE_ONLY.replace(", \"exec\", \"{prompt}\"", ""),
                "{prompt}",
            ),
            (
                format!("{WIRE_ONLY}[[choose]]\ninput = \"y\"\nselects = [\"allow_once\"]\n"),
                "prompts = true",
            ),
            (
                WIRE_ONLY.replace("name = \"cli\"", "name = \"cli\"\nbogus = 1"),
                "bogus",
            ),
            (
                WIRE_ONLY.replace("name = \"cli\"", "name = \"cli\"\nworkdir = \"/tmp\""),
                "workdir = \"/tmp\": expected \"{cwd}\"",
            ),
            (
                WIRE_ONLY.replace("name = \"cli\"", "name = \"cli\"\nworkdir = \"{cwd}/../x\""),
                "workdir = \"{cwd}/../x\"",
            ),
            (
                WIRE_ONLY.replace("control = \"none\"", ""),
                "set control = \"none\"",
            ),
            (
                WIRE_ONLY.replace("name = \"escalate\"", "name = \"e\"\napproves = [\"raed\"]"),
                "[policy] approves: unknown tool kind \"raed\"",
            ),
            (
                WIRE_ONLY.replace("name = \"escalate\"", "name = \"e\"\nscope = \"home\""),
                "[policy] scope: unknown scope \"home\"",
            ),
            (
                format!("{WIRE_ONLY}[install]\nnpm = \"a@1\"\ncargo = \"a@1\"\nbin = \"a\"\n"),
                "[install] needs exactly one of `npm`, `pypi` and `cargo`",
            ),
            (
                format!("{WIRE_ONLY}[install]\ncargo = \"acp-cli\"\nbin = \"bin/acp-cli\"\n"),
                "expected <crate>@<version>",
            ),
            (
                format!(
                    "{WIRE_ONLY}[install]\nnpm = \"a@1\"\npip_args = [\"b==1\"]\nbin = \"a\"\n"
                ),
                "[install] pip_args needs `pypi`",
            ),
        ];
        for (text, needle) in cases {
            let (_dir, path) = write_profile(&text);
            let err = format!("{:#}", ClientSpec::from_profile(&path).unwrap_err());
            assert!(err.contains(needle), "{needle:?} not in {err}");
            assert!(err.contains("client.toml"), "{err}");
        }
    }

    #[test]
    fn program_env_overrides_program() {
        // A variable name no other test or environment uses.
        let var = "ACP_HARNESS_TEST_PROGRAM_9f2c";
        let text = WIRE_ONLY.replace(
            "program = \"./bin/cli\"",
            &format!("program_env = \"{var}\""),
        );
        let (_dir, path) = write_profile(&text);
        let err = format!("{:#}", ClientSpec::from_profile(&path).unwrap_err());
        assert!(err.contains(var), "{err}");
        // SAFETY: only this test reads or writes this variable.
        unsafe { std::env::set_var(var, "/opt/cli") };
        let spec = ClientSpec::from_profile(&path).unwrap();
        unsafe { std::env::remove_var(var) };
        assert_eq!(spec.argv[0], "/opt/cli");
    }

    #[test]
    fn a_profile_that_extends_another_is_the_base_with_its_own_keys() {
        let (dir, base) = write_profile(WIRE_ONLY);
        let derived = dir.path().join("deny.toml");
        let text = "extends = \"client.toml\"\nname = \"cli-deny\"\n\
                    [policy]\nname = \"deny\"\nflags = [\"--deny-all\"]\n";
        std::fs::write(&derived, text).unwrap();
        let base = ClientSpec::from_profile(&base).unwrap();
        let spec = ClientSpec::from_profile(&derived).unwrap();
        assert_eq!(spec.name, "cli-deny");
        assert_eq!(spec.wire.policy.as_ref().unwrap().flags, ["--deny-all"]);
        // The program, relative to the folder both share, and everything else is the base's.
        assert_eq!(spec.argv, base.argv);
        assert_eq!(spec.env, base.env);
        assert_eq!(spec.wire.cancel, base.wire.cancel);
        assert_eq!(spec.wire.version_command, base.wire.version_command);
        assert!(spec.wire.observer.is_some());

        // A merged profile is validated as a whole, and its errors name both files.
        let broken = "extends = \"client.toml\"\n[policy]\nname = \"p\"\napproves = [\"raed\"]\n";
        std::fs::write(&derived, broken).unwrap();
        let err = format!("{:#}", ClientSpec::from_profile(&derived).unwrap_err());
        assert!(err.contains("deny.toml"), "{err}");
        assert!(err.contains("unknown tool kind \"raed\""), "{err}");
        assert!(err.contains("what it extends: client.toml"), "{err}");
        std::fs::write(&derived, "extends = \"client.toml\"\ncolour = 1\n").unwrap();
        let err = format!("{:#}", ClientSpec::from_profile(&derived).unwrap_err());
        assert!(
            err.contains("colour") && err.contains("client.toml"),
            "{err}"
        );
    }

    /// `--client clients/x/x.toml`: the profile's `./` paths are absolute, since the client, its
    /// cancel command and its observer program run in the case's directories.
    #[test]
    fn relative_paths_of_a_relative_profile_are_absolute() {
        for (profile, ends) in [
            ("clients/x/x.toml", "clients/x/./observer.py"),
            ("x.toml", "./observer.py"),
        ] {
            let resolved = program::relative_to("./observer.py", Path::new(profile));
            assert!(Path::new(&resolved).is_absolute(), "{resolved}");
            assert!(resolved.ends_with(ends), "{resolved}");
        }
        assert_eq!(program::relative_to("acpx", Path::new("x.toml")), "acpx");
    }

    #[test]
    fn choose_input_selects_by_kind_order() {
        let input = ChooseInput {
            by: ChooseBy::Kind,
            next: None,
            input: "y\r".into(),
            selects: vec!["allow_once".into(), "allow_always".into()],
        };
        let offered = serde_json::json!([
            {"optionId":"always","kind":"allow_always"},
            {"optionId":"once","kind":"allow_once"},
        ]);
        assert_eq!(input.selected(&offered), Some("once"));
        let only_always = serde_json::json!([{"optionId":"a","kind":"allow_always"}]);
        assert_eq!(input.selected(&only_always), Some("a"));
        assert_eq!(input.selected(&serde_json::json!([])), None);
    }

    /// By position or by label every offered option (of the kinds listed) is reachable: the
    /// second option of one kind too.
    #[test]
    fn choose_input_reaches_every_option_by_position_or_label() {
        let offered = serde_json::json!([
            {"optionId":"once","kind":"allow_once","name":"Allow"},
            {"optionId":"session","kind":"allow_once","name":"Allow for this session"},
            {"optionId":"no","kind":"reject_once","name":"Reject"},
        ]);
        let number = ChooseInput {
            by: ChooseBy::Position,
            next: None,
            input: "{n}<Enter>".into(),
            selects: Vec::new(),
        };
        let all = number.reachable(&offered);
        assert_eq!(all.len(), 3);
        assert_eq!((all[1].id, all[1].keys.as_str()), ("session", "2<Enter>"));
        assert_eq!(all[1].label, "2 Allow for this session");
        let label = ChooseInput {
            by: ChooseBy::Label,
            input: "<Enter>".into(),
            next: Some("<Down>".into()),
            selects: vec!["allow_once".into()],
        };
        let allows = label.reachable(&offered);
        let ids: Vec<&str> = allows.iter().map(|r| r.id).collect();
        assert_eq!(ids, ["once", "session"]);
        assert_eq!(allows[1].label, "Allow for this session");
        assert_eq!(label.selected(&offered), Some("once"));
        // Buttons without numbers, the first focused: Tab to the option, then Enter.
        let moved = ChooseInput {
            by: ChooseBy::Position,
            input: "<Enter>".into(),
            next: Some("<Tab>".into()),
            selects: Vec::new(),
        };
        let reached = moved.reachable(&offered);
        let keys: Vec<&str> = reached.iter().map(|r| r.keys.as_str()).collect();
        assert_eq!(keys, ["<Enter>", "<Tab><Enter>", "<Tab><Tab><Enter>"]);
        assert_eq!(reached[2].label, "Reject");
    }

    #[test]
    fn shell_quote_escapes_single_quotes() {
        assert_eq!(shell_quote("it's"), r#"'it'\''s'"#);
        assert_eq!(shell_quote("plain"), "plain");
    }
}
