//! acp-harness: conformance and fuzz test harness for ACP clients.
//!
//! The harness plays a scripted agent (the scenario engine of `acp-fake-agents`, reached through
//! the `acp-fake-agent --connect` relay that the client spawns) and, through the client's
//! control-plane adapter, the user. Every frame lands in a transcript; checks are pure functions
//! of the recorded case. See docs/architecture.md and README.md.
//!
//! # Module map, by role
//!
//! * **One case** — [`runner`] plays a case in three phases (`client_start`, `play`,
//!   `teardown`) and grades it; beside it, the client's process ([`launch`], [`pty`], [`sweep`]),
//!   the agent side's socket ([`relay_listener`]) and what a case leaves behind
//!   ([`terminal_probe`], [`case_symlinks`]).
//! * **The user** — [`control`] (the control-plane adapter) and [`control_schema`] (its
//!   published schema), [`wire_only`] (clients without one), [`observe`] (what a client without an adapter shows: its streams, its screen) and
//!   [`keys`] (what a `[tui]` profile types).
//! * **The client** — [`client_spec`] (argv or profile), [`locate`] (the workspace's own
//!   binaries), [`install_clients`] (real clients into the cache).
//! * **The suite** — [`suite`] (scenarios × checks, filters), [`shard`] (slices of a run),
//!   [`baseline`] (known failures), [`nextest_cache`] (verdicts shared between nextest
//!   processes).
//! * **Outputs** — [`run_json`] (the versioned result), [`run_writer`] (written as cases
//!   finish), [`output`] and [`stdout`] (the terminal).
//! * **Other commands' engines** — [`offline`] (`grade`), [`coverage`], [`bench`], [`fuzz`];
//!   the subcommands themselves are the binary's `cmd/` modules.

// One case
pub mod case_symlinks;
pub mod launch;
pub mod pty;
pub mod relay_listener;
pub mod runner;
pub mod sweep;
pub mod terminal_probe;
// The user
pub mod control;
pub mod control_schema;
pub mod keys;
pub mod observe;
pub mod wire_only;
// The client
pub mod client_spec;
pub mod install_clients;
pub mod locate;
// The suite
pub mod baseline;
pub mod nextest_cache;
pub mod shard;
pub mod suite;
// Outputs
pub mod output;
pub mod run_json;
pub mod run_writer;
pub mod stdout;
// Other commands' engines
pub mod bench;
pub mod coverage;
pub mod fuzz;
pub mod offline;
