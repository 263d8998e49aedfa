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

mod acp_cli;
mod acpc;
mod acpx;
mod chuk_acp;
mod qwenpaw_tui;
mod ralph_any;
mod tui_demo;
mod yopo;

use libtest_mimic::{Arguments, Trial};

/// Tests in flight at once. The suites' CPU is about a third of their wall time (all eight:
/// 354 s of CPU), so four at once keep two cores busy: in one CI run the eight took 280 s this
/// way, against some 1,100 s one after the other. More would not end much sooner, and the
/// verdicts might not stay the same: a client's own wall-clock limits (acp-cli's and acpx's turn
/// timeouts, for one) do not stretch with the load as the harness's budgets do, and all eight at
/// once beside other work made acp-cli give up on a turn the harness was still waiting on.
/// Tests of one client that must not overlap hold that client's lock (a module's SERIAL).
const AT_ONCE: usize = 4;

/// A test of one client module: its name and body (which panics on failure).
pub type Test = (&'static str, fn());

/// Every module's tests, in the order they start: each module's first test (its suite, the
/// longest) before any module's second, and the modules by how long their suites take (one
/// after the other on two cores: ralph-any 247 s, chuk-acp 186, acpc 164, acp-cli 139, acpx
/// 124, yopo 121, qwenpaw-tui 72, tui-demo 64), so that the long ones overlap instead of
/// ending in a tail of one.
fn trials() -> Vec<Trial> {
    let modules: [(&str, &[Test]); 8] = [
        ("ralph_any", ralph_any::TESTS),
        ("chuk_acp", chuk_acp::TESTS),
        ("acpc", acpc::TESTS),
        ("acp_cli", acp_cli::TESTS),
        ("acpx", acpx::TESTS),
        ("yopo", yopo::TESTS),
        ("qwenpaw_tui", qwenpaw_tui::TESTS),
        ("tui_demo", tui_demo::TESTS),
    ];
    let longest = modules.iter().map(|(_, t)| t.len()).max().unwrap_or(0);
    let mut trials = Vec::new();
    for rank in 0..longest {
        for (module, tests) in modules {
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

/// The modules' sources: this binary has no libtest harness (`harness = false`), so a `#[test]`
/// in them would be compiled out and never run, silently.
const SOURCES: [(&str, &str); 9] = [
    ("acp_cli.rs", include_str!("acp_cli.rs")),
    ("acpc.rs", include_str!("acpc.rs")),
    ("acpx.rs", include_str!("acpx.rs")),
    ("chuk_acp.rs", include_str!("chuk_acp.rs")),
    ("qwenpaw_tui.rs", include_str!("qwenpaw_tui.rs")),
    ("ralph_any.rs", include_str!("ralph_any.rs")),
    ("real_client.rs", include_str!("real_client.rs")),
    ("tui_demo.rs", include_str!("tui_demo.rs")),
    ("yopo.rs", include_str!("yopo.rs")),
];

fn main() -> std::process::ExitCode {
    for (file, source) in SOURCES {
        // Spelled in two pieces so that this line does not match itself.
        if source.contains(concat!("#[", "test]")) {
            eprintln!(
                "harness/tests/real_clients/{file} has a #[test], which never runs in this \
                 binary: list the function in the module's TESTS instead"
            );
            return std::process::ExitCode::FAILURE;
        }
    }
    let mut args = Arguments::from_args();
    let trials = trials();
    args.test_threads.get_or_insert(AT_ONCE);
    libtest_mimic::run(&args, trials).exit_code()
}
