//! The real clients of clients/*/ (installed from npm, PyPI and crates.io) and the bundled
//! full-screen client, each under the suite with its baseline and each finding re-checked on one
//! case: one test binary, every client at once.
//!
//! Why one binary, all at once: a real client's suite mostly waits — on its start, on settle
//! times, on its exit after a turn — so its wall time is several times its CPU time (chuk-acp
//! 0.3.2: 51 s of CPU in 211 s). Played one client after the other, as separate test binaries
//! are, the waits add up to most of `cargo test`; played together they overlap. It is also the
//! load proof of docs/timeouts.md run on every `cargo test`: each suite shares the machine with
//! the others and must still get exactly the grades its baseline was blessed with on an idle
//! machine.
//!
//! Runs like any libtest binary (`cargo test -p acp-harness --test real_clients -- acpc` runs
//! acpc's tests, `-- --list` lists them, `--test-threads` overrides how many run at once).

mod real_client;

use libtest_mimic::{Arguments, Trial};

/// Tests in flight at once. The suites' CPU is about a third of their summed wall time, so four
/// at once keep two cores busy: on an idle 2-core machine the eight took 206 s this way (141 s
/// once acpc and chuk-acp played today's agents only), against some 1,100 s one after the
/// other. More would not end much sooner, and the verdicts might not stay the same: a client's
/// own wall-clock limits (acp-cli's and acpx's turn timeouts, for one) do not stretch with the
/// load as the harness's budgets do, and all eight at once beside other work made acp-cli give
/// up on a turn the harness was still waiting on. Tests of one client that must not overlap
/// hold that client's lock (a module's SERIAL).
const AT_ONCE: usize = 4;

/// A test of one client module: its name and body (which panics on failure).
pub type Test = (&'static str, fn());

/// Each client module, declared once: its name, its tests and its source (for the `#[test]`
/// guard in `main`), in the order they start: each module's first test (its suite, the
/// longest) before any module's second, and the modules by how long their suites take (one
/// after the other on two cores: ralph-any 247 s, chuk-acp 186, acpc 164, acp-cli 139, acpx
/// 124, yopo 121, qwenpaw-tui 72, tui-demo 64), so that the long ones overlap instead of
/// ending in a tail of one.
macro_rules! client_modules {
    ($($module:ident),* $(,)?) => {
        $(mod $module;)*
        const MODULES: &[(&str, &[Test], &str)] = &[$((
            stringify!($module),
            $module::TESTS,
            include_str!(concat!(stringify!($module), ".rs")),
        )),*];
    };
}

client_modules!(
    ralph_any,
    chuk_acp,
    acpc,
    acp_cli,
    acpx,
    yopo,
    qwenpaw_tui,
    tui_demo
);

/// Every module's tests, in the order of [`MODULES`].
fn trials() -> Vec<Trial> {
    let longest = MODULES.iter().map(|(_, t, _)| t.len()).max().unwrap_or(0);
    let mut trials = Vec::new();
    for rank in 0..longest {
        for (module, tests, _) in MODULES {
            if let Some(&(name, body)) = tests.get(rank) {
                trials.push(Trial::test(format!("{module}::{name}"), move || {
                    body();
                    Ok(())
                }));
            }
        }
    }
    trials
}

/// A `#[test]` in this binary's modules would be compiled out and never run, silently: it has
/// no libtest harness (`harness = false`).
fn stray_test() -> Option<String> {
    let sources = MODULES
        .iter()
        .map(|(module, _, source)| (format!("{module}.rs"), *source))
        .chain([("real_client.rs".to_owned(), include_str!("real_client.rs"))]);
    // Spelled in two pieces so that this line does not match itself.
    sources
        .filter(|(_, source)| source.contains(concat!("#[", "test]")))
        .map(|(file, _)| file)
        .next()
}

fn main() -> std::process::ExitCode {
    if let Some(file) = stray_test() {
        eprintln!(
            "harness/tests/real_clients/{file} has a #[test], which never runs in this binary: \
             list the function in the module's TESTS instead"
        );
        return std::process::ExitCode::FAILURE;
    }
    let mut args = Arguments::from_args();
    let trials = trials();
    args.test_threads.get_or_insert(AT_ONCE);
    libtest_mimic::run(&args, trials).exit_code()
}
