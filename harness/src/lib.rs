//! acp-harness: conformance and fuzz test harness for ACP clients.
//!
//! The harness plays a scripted agent (the scenario engine of `acp-fake-agents`, reached through
//! the `acp-fake-agent --connect` relay that the client spawns) and, through the client's
//! control-plane adapter, the user. Every frame lands in a transcript; checks are pure functions
//! of the recorded case. See docs/architecture.md and README.md.
pub mod baseline;
pub mod bench;
pub mod case_symlinks;
pub mod client_spec;
pub mod control;
pub mod coverage;
pub mod fuzz;
pub mod install_clients;
pub mod keys;
pub mod launch;
pub mod locate;
pub mod nextest_cache;
pub mod observe;
pub mod offline;
pub mod output;
pub mod pty;
pub mod relay_listener;
pub mod run_json;
pub mod run_writer;
pub mod runner;
pub mod stdout;
pub mod suite;
pub mod sweep;
pub mod terminal_probe;
pub mod wire_only;
