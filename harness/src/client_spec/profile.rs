//! Client profiles: the TOML file that says how to launch, drive and observe a client, above all
//! one that ships no adapter (format: clients/README.md, "Client profiles").
//!
//! Everything is checked when the file is read, so a bad profile stops the run before anything is
//! launched, with the file and the key in the message.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Result, bail};
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use super::ControlMode;
use acp_judge::policy::{DecisionPolicy, Scope};

/// The profile file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ProfileFile {
    pub name: String,
    /// One line for reports: which client, which version, which mode.
    #[serde(default)]
    pub about: Option<String>,
    /// The program, for `{program}`: a name looked up on PATH, or a path (`./…` and `../…` are
    /// relative to the profile's folder).
    #[serde(default)]
    pub program: Option<String>,
    /// If this environment variable is set (and not empty), its value is the program instead.
    #[serde(default)]
    pub program_env: Option<String>,
    pub argv: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default = "default_control")]
    pub control: ControlMode,
    /// Put the client's stdin and stderr on a pseudo-terminal (clients that prompt only there).
    #[serde(default)]
    pub tty: bool,
    #[serde(default)]
    pub policy: Option<Policy>,
    #[serde(default)]
    pub cancel: Option<CancelFile>,
    #[serde(default)]
    pub choose: Vec<ChooseInput>,
    /// What reads what the client exposes: data rules or an outside program.
    #[serde(default)]
    pub observer: Option<super::ObserverSpec>,
    /// Files written before the client starts (path template → content template).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// argv that prints the client's version (may use `{program}`).
    #[serde(default)]
    pub version_command: Option<Vec<String>>,
    #[serde(default)]
    pub install: Option<Install>,
    /// How much longer than a step's timeout the client may take to start the agent (a Python
    /// client's imports before it spawns it): added to each case's waits until the agent
    /// connection is there.
    #[serde(default)]
    pub startup_ms: u64,
    /// The client's working directory: `"{cwd}"` (the case's workspace, for clients that open
    /// their session where they are started), `"{home}"`, or a folder below either.
    #[serde(default)]
    pub workdir: Option<String>,
    /// `[tui]`: a full-screen terminal program, run on a terminal of its own and observed
    /// through its rendered screen.
    #[serde(default)]
    pub tui: Option<Tui>,
}

/// `[tui]`: a full-screen client. It runs with stdin, stdout and stderr on a terminal of
/// `rows`×`cols`; `on = "screen"` rules read the screen once it has been still for
/// `settle_ms`; what the harness types is keys as data (`crate::keys`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tui {
    #[serde(default = "default_rows")]
    pub rows: u16,
    #[serde(default = "default_cols")]
    pub cols: u16,
    /// Environment for the client on top of the profile's `[env]` (e.g. `TERM`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Keys that quit the client once the scenario is done (`"<C-c>"`, `"/quit<Enter>"`).
    pub quit: String,
    /// Keys that type the user's prompt, with `{prompt}` (e.g. `"{prompt}<Enter>"`); without
    /// it the prompt goes on the command line (`{prompt}` in argv).
    #[serde(default)]
    pub prompt: Option<String>,
    /// A regex the screen must show before the prompt is typed (the input box is up).
    #[serde(default)]
    pub ready: Option<String>,
    /// How long the screen must stay unchanged before screen rules read it.
    #[serde(default = "default_settle_ms")]
    pub settle_ms: u64,
}

fn default_rows() -> u16 {
    24
}

fn default_cols() -> u16 {
    80
}

fn default_settle_ms() -> u64 {
    150
}

impl Tui {
    fn validate(&self, at: &str) -> Result<()> {
        if !(4..=500).contains(&self.rows) || !(10..=1000).contains(&self.cols) {
            bail!(
                "{at}: [tui] rows = {}, cols = {}: expected 4..=500 rows and 10..=1000 columns",
                self.rows,
                self.cols
            );
        }
        if self.settle_ms > 10_000 {
            bail!("{at}: [tui] settle_ms = {}: at most 10000", self.settle_ms);
        }
        crate::keys::parse(&self.quit, false)
            .map_err(|e| anyhow::anyhow!("{at}: [tui] quit: {e}"))?;
        if self.quit.is_empty() {
            bail!("{at}: [tui] quit must not be empty (the keys that quit the client)");
        }
        if let Some(prompt) = &self.prompt {
            if !prompt.contains("{prompt}") {
                bail!("{at}: [tui] prompt = {prompt:?} must contain {{prompt}}");
            }
            crate::keys::parse(prompt, false)
                .map_err(|e| anyhow::anyhow!("{at}: [tui] prompt: {e}"))?;
        }
        if let Some(ready) = &self.ready {
            regex::Regex::new(ready)
                .map_err(|e| anyhow::anyhow!("{at}: [tui] ready is not a valid regex: {e}"))?;
        }
        Ok(())
    }
}

fn default_control() -> ControlMode {
    ControlMode::Adapter
}

/// The permission policy a wire-only client runs with (its flags go where `{policy}` is).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    pub name: String,
    #[serde(default)]
    pub flags: Vec<String>,
    /// True if the client asks the user (the request stays pending until an input from
    /// `[[choose]]` or a cancel); false if the policy answers every request at once.
    #[serde(default)]
    pub prompts: bool,
    /// What the policy does, in words (shown in reports and the README).
    #[serde(default)]
    pub about: String,
    /// What the client approves without its user (the `auto-approval` check judges it): the
    /// effective tool kinds (ACP `ToolKind`), …
    #[serde(default)]
    pub approves: Vec<String>,
    /// … inside the workspace only (`"workspace"`, the default) or `"anywhere"`, …
    #[serde(default)]
    pub scope: Option<String>,
    /// … and whether it may pick an `allow_always` option by itself.
    #[serde(default)]
    pub allow_always: bool,
}

impl Policy {
    /// The decision part, checked (kinds and scope are validated when the profile is read, so
    /// this fails only for a policy built by hand).
    pub fn decisions(&self) -> Result<DecisionPolicy, String> {
        let scope = match &self.scope {
            None => Scope::default(),
            Some(text) => Scope::parse(text)
                .ok_or_else(|| format!("unknown scope {text:?} (workspace or anywhere)"))?,
        };
        DecisionPolicy::new(self.approves.clone(), scope, self.allow_always)
    }
}

/// `[cancel]` as written: exactly one of the three.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CancelFile {
    signal: Option<String>,
    stdin: Option<String>,
    command: Option<Vec<String>>,
    /// Only for `stdin`: the keys cancel only while the client prompts (a Ctrl-C that a
    /// readline prompt reads as a key), so a cancel without a pending request cannot be played.
    #[serde(default)]
    at_prompt_only: bool,
}

/// How the user cancels a turn of a wire-only client.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cancel {
    /// The client cannot be cancelled: scenarios that cancel are not applicable.
    #[default]
    None,
    /// Send this signal to the client's pid (not its process group).
    Signal(String),
    /// Write these bytes to the client's stdin (its terminal with `tty = true`).
    Stdin { input: String, at_prompt_only: bool },
    /// Run this command (placeholders as in `argv`) and wait for it.
    Command(Vec<String>),
}

impl Cancel {
    /// How the transcript's `user_cancel` note names the method.
    pub fn describe(&self) -> String {
        match self {
            Cancel::None => "none".into(),
            Cancel::Signal(s) => s.clone(),
            Cancel::Stdin { input, .. } => format!("stdin {input:?}"),
            Cancel::Command(argv) => format!("command {argv:?}"),
        }
    }
}

/// One input that answers the client's permission prompt (`tty` profiles).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChooseInput {
    /// Bytes typed at the prompt, e.g. `"y\r"`; `by = "position"`: with `{n}`, the option's
    /// 1-based position in the request (`"{n}<Enter>"`), or with `next`, the key that confirms
    /// the option reached; `by = "label"`: the key that confirms the highlighted option
    /// (`"<Enter>"`).
    pub input: String,
    /// The option it selects: the first offered option whose kind is the first of these kinds
    /// that is offered at all (e.g. `["allow_once", "allow_always"]`). With `by = "position"`
    /// or `"label"`: only options of these kinds (empty: every option).
    #[serde(default)]
    pub selects: Vec<String>,
    /// How the input reaches its option: `"kind"` (default: the first option of a kind),
    /// `"position"` (type its number), `"label"` (move the highlight with `next` until the
    /// highlighted line shows the option's name, then type `input`).
    #[serde(default)]
    pub by: ChooseBy,
    /// `by = "label"`: the key that moves the highlight to the next option (default `<Down>`).
    /// `by = "position"`: the key that moves the focus from one option to the next, pressed
    /// n−1 times from the first option (which has the focus when the card opens) before
    /// `input`, for buttons without numbers.
    #[serde(default)]
    pub next: Option<String>,
}

/// How a `[[choose]]` input reaches its option.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChooseBy {
    #[default]
    Kind,
    Position,
    Label,
}

impl ChooseInput {
    /// The option of `offered` (a request's `options`) this input selects, if any (`by =
    /// "kind"`; for the other ways, the first option it can reach).
    pub fn selected<'a>(&self, offered: &'a serde_json::Value) -> Option<&'a str> {
        if self.by != ChooseBy::Kind {
            return self.reachable(offered).into_iter().next().map(|r| r.id);
        }
        let options = offered.as_array()?;
        self.selects.iter().find_map(|kind| {
            options
                .iter()
                .find(|o| o.get("kind").and_then(|k| k.as_str()) == Some(kind.as_str()))
                .and_then(|o| o.get("optionId")?.as_str())
        })
    }

    /// Every option of `offered` this input can choose, with what the user reads or types
    /// for it.
    pub fn reachable<'a>(&self, offered: &'a serde_json::Value) -> Vec<Reachable<'a>> {
        let options = offered.as_array().map(Vec::as_slice).unwrap_or_default();
        let kind_ok = |o: &serde_json::Value| {
            self.selects.is_empty()
                || o.get("kind")
                    .and_then(|k| k.as_str())
                    .is_some_and(|k| self.selects.iter().any(|s| s == k))
        };
        match self.by {
            ChooseBy::Kind => self
                .selected(offered)
                .map(|id| Reachable {
                    id,
                    position: 0,
                    label: self.input.trim().to_owned(),
                    keys: self.input.clone(),
                })
                .into_iter()
                .collect(),
            ChooseBy::Position | ChooseBy::Label => options
                .iter()
                .enumerate()
                .filter(|(_, o)| kind_ok(o))
                .filter_map(|(i, o)| {
                    let id = o.get("optionId")?.as_str()?;
                    let name = o.get("name").and_then(|n| n.as_str()).unwrap_or(id);
                    let n = (i + 1).to_string();
                    Some(if self.by == ChooseBy::Position {
                        let (label, keys) = match &self.next {
                            // Buttons without numbers: moved to, then confirmed.
                            Some(next) => {
                                (name.to_owned(), format!("{}{}", next.repeat(i), self.input))
                            }
                            None => (format!("{n} {name}"), self.input.replace("{n}", &n)),
                        };
                        Reachable {
                            id,
                            position: i + 1,
                            label,
                            keys,
                        }
                    } else {
                        Reachable {
                            id,
                            position: i + 1,
                            label: name.to_owned(),
                            keys: self.input.clone(),
                        }
                    })
                })
                .collect(),
        }
    }
}

/// An option a `[[choose]]` input can reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reachable<'a> {
    pub id: &'a str,
    /// 1-based position in the request's options (0 for `by = "kind"`).
    pub position: usize,
    /// What the user reads on its button: the key, the number and name, or the name.
    pub label: String,
    /// What is typed to choose it (`by = "label"`: once the highlight is on it).
    pub keys: String,
}

/// Where the client comes from, for the test that installs it (`[install]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Install {
    /// npm package spec, e.g. `acpx@0.19.1` (installed with `npm install --prefix`).
    #[serde(default)]
    pub npm: Option<String>,
    /// PyPI requirement, e.g. `chuk-acp==0.3.2` (installed into a venv made by
    /// `python3 -m venv`).
    #[serde(default)]
    pub pypi: Option<String>,
    /// More arguments for that `pip install`, after the requirement: flags
    /// (`--ignore-requires-python`) and pins of its dependencies (`agent-client-protocol==0.8.1`)
    /// for a package whose own requirements let pip pick releases it does not run with.
    #[serde(default)]
    pub pip_args: Vec<String>,
    /// crates.io package and version, e.g. `acp-cli@0.3.1` (installed with
    /// `cargo install --locked --root`).
    #[serde(default)]
    pub cargo: Option<String>,
    /// The program inside the install prefix, e.g. `node_modules/.bin/acpx` or `bin/chuk-acp`.
    pub bin: String,
}

impl Install {
    /// The package spec, which also names its install prefix in the cache.
    pub fn package(&self) -> &str {
        self.npm
            .as_deref()
            .or(self.pypi.as_deref())
            .or(self.cargo.as_deref())
            .unwrap_or_default()
    }

    /// A `cargo` spec's crate and version (`acp-cli@0.3.1` → `("acp-cli", "0.3.1")`).
    pub fn cargo_crate(&self) -> Option<(&str, &str)> {
        self.cargo.as_deref()?.split_once('@')
    }

    fn validate(&self) -> Result<()> {
        let given = [&self.npm, &self.pypi, &self.cargo]
            .iter()
            .filter(|spec| spec.is_some())
            .count();
        if given != 1 {
            bail!("[install] needs exactly one of `npm`, `pypi` and `cargo`");
        }
        if !self.pip_args.is_empty() && self.pypi.is_none() {
            bail!("[install] pip_args needs `pypi` (they are arguments of its pip install)");
        }
        if self.cargo.is_some()
            && !self
                .cargo_crate()
                .is_some_and(|(name, version)| !name.is_empty() && !version.is_empty())
        {
            bail!(
                "[install] cargo = {:?}: expected <crate>@<version>, e.g. \"acp-cli@0.3.1\"",
                self.cargo.as_deref().unwrap_or_default()
            );
        }
        Ok(())
    }
}

const OPTION_KINDS: [&str; 4] = ["allow_once", "allow_always", "reject_once", "reject_always"];

impl CancelFile {
    pub(super) fn resolve(self, file: &Path) -> Result<Cancel> {
        let at = || format!("{}: [cancel]", file.display());
        match (self.signal, self.stdin, self.command) {
            (Some(sig), None, None) => {
                Signal::from_str(&sig).map_err(|_| {
                    anyhow::anyhow!("{}: unknown signal {sig:?} (e.g. \"SIGINT\")", at())
                })?;
                Ok(Cancel::Signal(sig))
            }
            (None, Some(input), None) if !input.is_empty() => Ok(Cancel::Stdin {
                input,
                at_prompt_only: self.at_prompt_only,
            }),
            (None, None, Some(argv)) if !argv.is_empty() => Ok(Cancel::Command(argv)),
            _ => bail!(
                "{}: give exactly one of `signal`, `stdin` (non-empty) or `command` (non-empty)",
                at()
            ),
        }
    }
}

/// Checks what serde cannot: placeholders, option kinds, names.
pub(super) fn validate(file: &ProfileFile, path: &Path) -> Result<()> {
    let at = path.display();
    if file.argv.is_empty() {
        bail!("{at}: argv must not be empty");
    }
    let uses = |p: &str| file.argv.iter().any(|a| a.contains(p));
    if uses("{program}") && file.program.is_none() && file.program_env.is_none() {
        bail!(
            "{at}: argv uses {{program}} but the profile sets neither `program` nor `program_env`"
        );
    }
    match (&file.policy, file.argv.iter().any(|a| a == "{policy}")) {
        // A policy without flags is the client's default behaviour: nothing to splice.
        (Some(policy), false) if !policy.flags.is_empty() => {
            bail!("{at}: [policy] has flags but argv has no \"{{policy}}\" element to put them")
        }
        (None, true) => bail!("{at}: argv has \"{{policy}}\" but there is no [policy]"),
        _ => {}
    }
    if let Some(policy) = &file.policy {
        if let Some(scope) = &policy.scope {
            if Scope::parse(scope).is_none() {
                bail!("{at}: [policy] scope: unknown scope {scope:?} (workspace or anywhere)");
            }
        }
        if let Err(e) = policy.decisions() {
            bail!("{at}: [policy] approves: {e}");
        }
    }
    if let Some(workdir) = &file.workdir {
        if !(workdir.starts_with("{cwd}") || workdir.starts_with("{home}"))
            || workdir.split('/').any(|part| part == "..")
        {
            bail!(
                "{at}: workdir = {workdir:?}: expected \"{{cwd}}\" (the workspace), \"{{home}}\" or a folder below one of them"
            );
        }
    }
    if let Some(tui) = &file.tui {
        tui.validate(&at.to_string())?;
        if file.control != ControlMode::None {
            bail!("{at}: [tui] is for clients without an adapter; set control = \"none\"");
        }
        for (i, choose) in file.choose.iter().enumerate() {
            crate::keys::parse(&choose.input, false)
                .map_err(|e| anyhow::anyhow!("{at}: [[choose]] #{} input: {e}", i + 1))?;
        }
        if let Some(input) = file.cancel.as_ref().and_then(|c| c.stdin.as_deref()) {
            crate::keys::parse(input, false)
                .map_err(|e| anyhow::anyhow!("{at}: [cancel] stdin: {e}"))?;
        }
    }
    let typed_prompt = file.tui.as_ref().is_some_and(|t| t.prompt.is_some());
    if file.control == ControlMode::None && !uses("{prompt}") && !typed_prompt {
        bail!(
            "{at}: a client without an adapter gets its prompt from argv; add a \"{{prompt}}\" element"
        );
    }
    for (i, choose) in file.choose.iter().enumerate() {
        if choose.input.is_empty() || (choose.selects.is_empty() && choose.by == ChooseBy::Kind) {
            bail!(
                "{at}: [[choose]] #{}: `input` and `selects` must not be empty",
                i + 1
            );
        }
        let numbered = choose.input.contains("{n}");
        if numbered && choose.by != ChooseBy::Position {
            bail!(
                "{at}: [[choose]] #{}: `{{n}}` (the option's number) goes in the input of `by = \"position\"`, and only there",
                i + 1
            );
        }
        if choose.by == ChooseBy::Position && numbered == choose.next.is_some() {
            bail!(
                "{at}: [[choose]] #{}: `by = \"position\"` reaches an option either by its number (`{{n}}` in `input`) or by pressing `next` from the first option, one of the two",
                i + 1
            );
        }
        if choose.next.is_some() && choose.by == ChooseBy::Kind {
            bail!(
                "{at}: [[choose]] #{}: `next` is for `by = \"label\"` and `by = \"position\"`",
                i + 1
            );
        }
        if choose.by == ChooseBy::Label && file.tui.is_none() {
            bail!(
                "{at}: [[choose]] #{}: `by = \"label\"` reads the highlighted line of a screen: it needs [tui]",
                i + 1
            );
        }
        if let Some(kind) = choose
            .selects
            .iter()
            .find(|k| !OPTION_KINDS.contains(&k.as_str()))
        {
            bail!(
                "{at}: [[choose]] #{}: unknown option kind {kind:?} (one of {})",
                i + 1,
                OPTION_KINDS.join(", ")
            );
        }
    }
    if !file.choose.is_empty() && !file.policy.as_ref().is_some_and(|p| p.prompts) {
        bail!("{at}: [[choose]] needs a [policy] with `prompts = true` (a prompt to answer)");
    }
    if file.policy.as_ref().is_some_and(|p| p.prompts) && !file.tty && file.tui.is_none() {
        bail!("{at}: a policy that prompts needs `tty = true` (the prompt is on a terminal)");
    }
    if file.policy.as_ref().is_some_and(|p| p.prompts) && file.observer.is_none() {
        bail!(
            "{at}: a policy that prompts needs an `observer`: the user answers a prompt only once it is seen"
        );
    }
    if file.control == ControlMode::Adapter {
        let wire_only = [
            ("tty", file.tty),
            ("observer", file.observer.is_some()),
            ("[policy]", file.policy.is_some()),
            ("[cancel]", file.cancel.is_some()),
            ("[[choose]]", !file.choose.is_empty()),
        ];
        if let Some((key, _)) = wire_only.iter().find(|(_, set)| *set) {
            bail!(
                "{at}: {key} is for clients without an adapter; set control = \"none\" (an adapter plays the user itself)"
            );
        }
    }
    if let Some(observer) = &file.observer {
        validate_observer(observer, file, path)?;
    }
    super::files::validate(&file.files).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
    if let Some(install) = &file.install {
        install
            .validate()
            .map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
    }
    if let Some(cmd) = &file.version_command {
        if cmd.is_empty() {
            bail!("{at}: version_command must not be empty");
        }
    }
    Ok(())
}

/// `[observer]`: exactly one of rules and a command; the rules compile.
fn validate_observer(
    observer: &super::ObserverSpec,
    file: &ProfileFile,
    path: &Path,
) -> Result<()> {
    let at = path.display();
    match (&observer.command, observer.rules.is_empty()) {
        (Some(_), false) => {
            bail!("{at}: [observer] has both `command` and [[observer.rule]]: give one")
        }
        (None, true) => bail!("{at}: [observer] needs [[observer.rule]] entries or a `command`"),
        (Some(argv), true) => {
            if argv.is_empty() {
                bail!("{at}: [observer] `command` must not be empty");
            }
            if observer.reports.is_empty() {
                bail!(
                    "{at}: [observer] `command` needs `reports`: the event types the program can report"
                );
            }
            if let Some(bad) = observer
                .reports
                .iter()
                .find(|r| !crate::observe::rules::OBSERVED_TYPES.contains(&r.as_str()))
            {
                bail!(
                    "{at}: [observer] `reports`: unknown event {bad:?} (one of {})",
                    crate::observe::rules::OBSERVED_TYPES.join(", ")
                );
            }
        }
        (None, false) => {
            if !observer.reports.is_empty() {
                bail!(
                    "{at}: [observer] `reports` is for `command`; rules report the events they make"
                );
            }
            let screen = file.tui.as_ref().map(|t| (t.rows, t.cols));
            crate::observe::rules::compile_for(
                observer,
                !file.choose.is_empty(),
                file.tty || file.tui.is_some(),
                screen,
            )
            .map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
        }
    }
    Ok(())
}

/// Reads and validates a profile file, with the profiles it `extends` (super::extends).
pub(super) fn read(path: &Path) -> Result<ProfileFile> {
    let mut merged = super::extends::read(path)?;
    let file: ProfileFile = match merged.table.take() {
        // Parsed from the text, so a wrong key or type keeps its line and column.
        None => toml::from_str(&merged.text)
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), e.to_string().trim_end()))?,
        Some(table) => ProfileFile::deserialize(table).map_err(|e| {
            anyhow::anyhow!(
                "{} (with {}): {}",
                path.display(),
                merged.described(),
                e.to_string().trim_end()
            )
        })?,
    };
    validate(&file, path).map_err(|e| {
        if merged.bases.is_empty() {
            e
        } else {
            anyhow::anyhow!("{e:#} (read with {})", merged.described())
        }
    })?;
    Ok(file)
}
