//! The reference client as a library: the binary (`src/main.rs`) is its command line, and the
//! in-process fuzz target (`fuzz/`, `mapping_inprocess`) calls the permission mapping
//! (`timeline`, `subject`, `approvals`) directly.
//!
//! One file per concern: `rpc` (wire), `control` (adapter), `client` (sessions and turns),
//! `timeline` (tool call items), `subject` (classification), `approvals`, `decide` (what it
//! approves by itself), `fs`, `terminal` (real processes), `mutation`.

/// Diagnostics for people: stderr, never stdout (stdout is the control plane).
macro_rules! log {
    ($($arg:tt)*) => {
        eprintln!("[acp-reference-client] {}", format_args!($($arg)*))
    };
}

pub mod approvals;
pub mod client;
pub mod control;
pub mod decide;
pub mod fs;
pub mod fs_scope;
pub mod history;
pub mod mutation;
pub mod rpc;
pub mod subject;
pub mod terminal;
pub mod timeline;
pub mod tool_update;
