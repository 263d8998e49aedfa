//! The long-lived fuzz driver: one client launch, many permission turns over one connection.
//!
//! The client is launched once (control plane on its stdin/stdout, one relay connection on the
//! wire plane), a session is opened, and then every input is one prompt turn: prompt →
//! announcement → `session/request_permission` → the user's action → the client's answer →
//! `tool_call_update` → stop reason → the client shows the turn's end. The turn is recorded as a
//! transcript slice behind the connection's handshake and graded by every check
//! ([`Verdict`]).
//!
//! The client's auto-approval policy is fixed when it starts (the reference client's
//! `--policy`, declared in its `hello`), so the driver keeps one client per
//! [`PolicyChoice`] of the inputs, each started on first use; a client that does not take
//! `--policy` is one client, whatever the inputs say.
//!
//! A client without a control-plane adapter (a profile with `control = "none"`, such as acpx)
//! cannot be played the user over a long-lived connection: each turn is then a one-case
//! scenario run instead ([`super::as_case`]), one client process per input.
//!
//! The per-turn path is lean: no process spawn, no sleep (every wait ends on the awaited frame or
//! the step timeout), no schema compilation (validators are compiled once per process), frames
//! of a step written in one `write`. The client is restarted after a finding (its state is then
//! suspect) and every `turns_per_client` turns (a real client keeps its history; an overnight
//! run must not grow it without bound).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use super::as_case;
use super::input::{PermissionTurn, PolicyChoice};
use super::live::Live;
use super::verdict::{Verdict, summary};
use crate::baseline::Baseline;
use crate::client_spec::{ClientSpec, ControlMode};
use crate::locate::{self, WorkspaceBin};
use acp_judge::record::CaseRecord;

/// Knobs of the driver.
#[derive(Debug, Clone)]
pub struct DriverConfig {
    pub client: ClientSpec,
    /// The relay binary the client is told to spawn as its agent.
    pub fake_agent: PathBuf,
    /// How long one wait for the client may take.
    pub step_timeout: Duration,
    /// Turns before the client is restarted.
    pub turns_per_client: u64,
    /// After a finding, replay the input on a freshly started client and say whether it
    /// reproduces there.
    pub confirm_on_fresh_client: bool,
    /// The client's known bugs: the check-wide entries of the baseline in
    /// `ACP_HARNESS_BASELINE` ([`Baseline::check_wide`]). A trial they cover grades `expected`
    /// instead of stopping the fuzzer.
    pub baseline: Option<Baseline>,
}

impl DriverConfig {
    /// From the environment:
    /// * `ACP_HARNESS_CLIENT`: the client (`reference` by default, `mutant:<name>`, a JSON argv
    ///   array, or a client profile), as for `cargo test`; a client without a control-plane
    ///   adapter (a profile with `control = "none"`) plays each turn as a one-case run;
    /// * `ACP_HARNESS_REFERENCE_CLIENT`, `ACP_HARNESS_FAKE_AGENT`: explicit binaries; otherwise
    ///   they are found next to the running executable or in the workspace's `target/release`,
    ///   `target/debug` (a fuzz target runs from `fuzz/target/…`, where they are not);
    /// * `ACP_FUZZ_STEP_TIMEOUT_MS` (default 5000), `ACP_FUZZ_TURNS_PER_CLIENT` (default 5000);
    /// * `ACP_HARNESS_BASELINE`: the client's expected failures, as for `cargo test`; only its
    ///   check-wide entries (`[expected."subject-kind"]`) can cover a fuzz turn, and a turn's
    ///   trial they cover is not a finding.
    pub fn from_env() -> Result<Self> {
        let client_text = std::env::var("ACP_HARNESS_CLIENT").ok();
        let client = match client_text.as_deref().map(str::trim) {
            None | Some("") | Some("reference") => reference_spec(None)?,
            Some(s) if s.starts_with("mutant:") => reference_spec(Some(&s["mutant:".len()..]))?,
            Some(s) => ClientSpec::parse(s)?,
        };
        let number = |name: &str, default: u64| -> Result<u64> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse()
                    .with_context(|| format!("{name}={v:?} is not a number")),
                Err(_) => Ok(default),
            }
        };
        Ok(DriverConfig {
            client,
            fake_agent: workspace_bin(locate::FAKE_AGENT)?,
            step_timeout: Duration::from_millis(number("ACP_FUZZ_STEP_TIMEOUT_MS", 5000)?.max(1)),
            turns_per_client: number("ACP_FUZZ_TURNS_PER_CLIENT", 5000)?.max(1),
            confirm_on_fresh_client: true,
            baseline: fuzz_baseline()?,
        })
    }

    /// True if the client has a control-plane adapter: turns are played on long-lived clients.
    /// Otherwise each turn is a one-case scenario run ([`super::as_case`]).
    pub fn has_adapter(&self) -> bool {
        self.client.control == ControlMode::Adapter
    }

    /// True if the client is the reference client or one of its mutants, which take
    /// `--policy`: every input's policy is then applied. Any other client runs with the policy
    /// it declares itself (its `hello`).
    pub fn applies_policies(&self) -> bool {
        self.client.source == "reference" || self.client.source.starts_with("mutant:")
    }

    /// The client a turn is played on: its policy, or the one client that sets its own.
    fn client_for(&self, turn: &PermissionTurn) -> PolicyChoice {
        if self.applies_policies() {
            turn.policy
        } else {
            PolicyChoice::ClientDefault
        }
    }
}

/// The check-wide entries of `ACP_HARNESS_BASELINE`, if it is set. A fuzz turn is a case made
/// up on the spot, so an entry naming one trial of the suite covers none: the run says how many
/// it leaves aside, once, rather than letting the user believe they apply.
fn fuzz_baseline() -> Result<Option<Baseline>> {
    let Some(full) = Baseline::from_env()? else {
        return Ok(None);
    };
    let wide = full.check_wide()?;
    if let Some(note) = set_aside_note(&full, &wide) {
        eprintln!("acp-harness fuzz: {note}");
    }
    Ok(Some(wide))
}

/// What a fuzz run says of the entries of `full` that `wide` (its check-wide ones) leaves aside,
/// if any. A file with none left is most likely the suite's baseline given by mistake: then the
/// note says how to write the entries that do apply.
fn set_aside_note(full: &Baseline, wide: &Baseline) -> Option<String> {
    let aside = full.entries.len() - wide.entries.len();
    let path = full.path.display();
    match (aside, wide.entries.len()) {
        (0, _) => None,
        (_, 0) => Some(format!(
            "baseline {path}: none of its {aside} entries covers a fuzz turn (each names one trial \
             of the suite), so every known bug is still a finding; a fuzz turn is covered by \
             check-wide entries such as [expected.\"subject-kind\"] (fuzz/README.md, \
             \"A client without an adapter\")"
        )),
        (_, n) => Some(format!(
            "baseline {path}: its {n} check-wide entr{}; {aside} naming one trial of the suite \
             cover no fuzz turn",
            if n == 1 { "y applies" } else { "ies apply" },
        )),
    }
}

/// The reference client (or one of its mutants) as a client spec.
fn reference_spec(mutant: Option<&str>) -> Result<ClientSpec> {
    let path = workspace_bin(locate::REFERENCE_CLIENT)?;
    let mut spec = ClientSpec::from_argv(vec![path.to_string_lossy().into_owned()])?;
    spec.name = "acp-reference-client".into();
    spec.source = "reference".into();
    if let Some(name) = mutant {
        spec.argv.extend(["--mutant".to_owned(), name.to_owned()]);
        spec.name = format!("acp-reference-client --mutant {name}");
        spec.source = format!("mutant:{name}");
    }
    Ok(spec)
}

/// A workspace binary: the usual lookup, else the workspace's own `target/release` or
/// `target/debug` (for fuzz targets, which are built into `fuzz/target`).
fn workspace_bin(bin: WorkspaceBin) -> Result<PathBuf> {
    let first = match locate::locate(bin) {
        Ok(path) => return Ok(path),
        Err(e) => e,
    };
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    for profile in ["release", "debug"] {
        let path = workspace.join("target").join(profile).join(bin.name);
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(first.context(format!(
        "build it with `cargo build --release -p {}` or set {}",
        bin.package, bin.env_override
    )))
}

/// One permission turn's result.
#[derive(Debug, Clone)]
pub struct TurnResult {
    /// The turn's case record (handshake + turn).
    pub record: CaseRecord,
    pub verdict: Verdict,
}

/// A finding: the turn's result and the readable summary.
#[derive(Debug, Clone)]
pub struct Finding {
    pub result: TurnResult,
    pub summary: String,
}

/// The long-lived driver. Dropping it shuts the client down.
pub struct Driver {
    cfg: DriverConfig,
    runtime: tokio::runtime::Runtime,
    /// The running clients, one per policy (few: [`PolicyChoice`] has five values).
    clients: Vec<(PolicyChoice, Live)>,
    /// Turns played in this process (numbers the request ids and tool call ids).
    turns: u64,
}

impl Driver {
    pub fn new(cfg: DriverConfig) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the driver's runtime")?;
        Ok(Driver {
            cfg,
            runtime,
            clients: Vec::new(),
            turns: 0,
        })
    }

    pub fn config(&self) -> &DriverConfig {
        &self.cfg
    }

    /// Plays one turn and grades it. `Err` holds a finding (the client is then restarted for the
    /// next turn; with `confirm_on_fresh_client` the input is replayed on a fresh client first).
    /// An environment failure (client cannot be started at all) is reported as a finding too.
    pub fn play(&mut self, turn: &PermissionTurn) -> Result<TurnResult, Box<Finding>> {
        let result = self.play_once(turn);
        if result.verdict.passed() {
            return Ok(result);
        }
        Err(self.finding(turn, result))
    }

    /// [`Driver::play`] for a caller that keeps only the verdict of a clean turn (the fuzz
    /// target): the turn's transcript goes back to its client as the next turn's prefix, so the
    /// handshake is not copied into every turn. The same record is graded the same way.
    pub fn check(&mut self, turn: &PermissionTurn) -> Result<Verdict, Box<Finding>> {
        let result = self.play_once(turn);
        if !result.verdict.passed() {
            return Err(self.finding(turn, result));
        }
        let key = self.cfg.client_for(turn);
        if let Some((_, live)) = self.clients.iter_mut().find(|(k, _)| *k == key) {
            live.give_back(self.turns, result.record.transcript);
        }
        Ok(result.verdict)
    }

    /// The finding of a turn that did not pass: the client is stopped and, with
    /// `confirm_on_fresh_client`, the input replayed on a fresh one.
    fn finding(&mut self, turn: &PermissionTurn, result: TurnResult) -> Box<Finding> {
        let key = self.cfg.client_for(turn);
        self.stop(key);
        let fresh = if self.cfg.confirm_on_fresh_client {
            let again = self.play_once(turn);
            self.stop(key);
            Some(!again.verdict.passed())
        } else {
            None
        };
        let summary = summary(
            turn,
            &result.record,
            &result.verdict,
            &self.cfg.client.name,
            fresh,
        );
        Box::new(Finding { result, summary })
    }

    fn play_once(&mut self, turn: &PermissionTurn) -> TurnResult {
        self.turns += 1;
        let n = self.turns;
        let mut result = if self.cfg.has_adapter() {
            self.play_on_live_client(turn, n)
        } else {
            let (record, trials) = self.runtime.block_on(as_case::play(turn, n, &self.cfg));
            TurnResult {
                record,
                verdict: Verdict { trials },
            }
        };
        if let Some(baseline) = &self.cfg.baseline {
            baseline.apply_case(&result.record.meta.case_id, &mut result.verdict.trials);
        }
        result
    }

    /// Turn `n` on the long-lived client of its policy (started or restarted as needed).
    fn play_on_live_client(&mut self, turn: &PermissionTurn, n: u64) -> TurnResult {
        let cfg = self.cfg.clone();
        let key = cfg.client_for(turn);
        let retire = self
            .clients
            .iter()
            .position(|(k, l)| *k == key && l.needs_restart(&cfg));
        if let Some(i) = retire {
            let (_, old) = self.clients.remove(i);
            self.runtime.block_on(old.shutdown());
        }
        let clients = &mut self.clients;
        let (record, restart) = self.runtime.block_on(async {
            let i = match clients.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => match Live::start(&cfg, key.flag()).await {
                    Ok(l) => {
                        clients.push((key, l));
                        clients.len() - 1
                    }
                    Err(failed) => return (*failed, true),
                },
            };
            clients[i].1.play(turn, n, &cfg).await
        });
        if restart {
            self.stop(key);
        }
        let verdict = Verdict::of(&record);
        TurnResult { record, verdict }
    }

    /// Stops the client of this policy (if running) and reaps it and everything it spawned.
    fn stop(&mut self, key: PolicyChoice) {
        if let Some(i) = self.clients.iter().position(|(k, _)| *k == key) {
            let (_, live) = self.clients.remove(i);
            self.runtime.block_on(live.shutdown());
        }
    }

    /// Stops every client and reaps them and everything they spawned.
    pub fn stop_client(&mut self) {
        for (_, live) in std::mem::take(&mut self.clients) {
            self.runtime.block_on(live.shutdown());
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        self.stop_client();
    }
}

#[cfg(test)]
mod tests {
    use super::set_aside_note;
    use crate::baseline::{Baseline, Entry};

    fn baseline(ids: &[&str]) -> Baseline {
        Baseline {
            path: "b.toml".into(),
            entries: ids
                .iter()
                .map(|id| {
                    let entry = Entry {
                        reason: "r".into(),
                        issue: None,
                        message: None,
                        intermittent: false,
                    };
                    (id.to_string(), entry)
                })
                .collect(),
        }
    }

    /// A suite baseline given to the fuzzer by mistake (no check-wide entry) is told apart from
    /// one that mixes both kinds, and a check-wide file says nothing.
    #[test]
    fn entries_that_cover_no_fuzz_turn_are_named() {
        let suite = baseline(&["a@1/x::subject-kind", "a@1/y::subject-kind"]);
        let note = set_aside_note(&suite, &suite.check_wide().expect("valid")).expect("a note");
        assert!(
            note.contains("none of its 2 entries covers a fuzz turn"),
            "{note}"
        );
        assert!(note.contains("[expected.\"subject-kind\"]"), "{note}");

        let mixed = baseline(&["subject-kind", "a@1/x::auto-approval"]);
        let note = set_aside_note(&mixed, &mixed.check_wide().expect("valid")).expect("a note");
        assert!(
            note.contains("its 1 check-wide entry applies; 1 naming"),
            "{note}"
        );

        let wide = baseline(&["subject-kind"]);
        assert_eq!(
            set_aside_note(&wide, &wide.check_wide().expect("valid")),
            None
        );
    }
}
