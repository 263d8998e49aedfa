//! The baseline client: `acp-chaos-client --mode echo`, a working client with a minimal adapter
//! and no model. It does the process and pipe work every client does — the harness spawns it, it
//! spawns the relay the harness hands it, every frame crosses the same pipes and socket — and
//! answers every agent request at once (an empty result; a permission request as soon as the
//! scenario's user clicks). It advertises the reference client's capabilities, so the same
//! scenarios run the same steps. Timed without the checks, it is the floor that process spawn
//! and pipes set on this machine.

use anyhow::Result;

use crate::client_spec::ClientSpec;
use crate::locate::{WorkspaceBin, locate};

/// The binary of the echo client (`ACP_HARNESS_CHAOS_CLIENT` overrides its path, as in the
/// chaos tests).
pub const ECHO_CLIENT: WorkspaceBin = WorkspaceBin {
    name: "acp-chaos-client",
    package: "acp-chaos-client",
    env_override: "ACP_HARNESS_CHAOS_CLIENT",
};

/// The echo client as a client under test; builds it first when run under cargo.
pub fn echo_client() -> Result<ClientSpec> {
    let bin = locate(ECHO_CLIENT)?;
    ClientSpec::from_argv(vec![
        bin.to_string_lossy().into_owned(),
        "--mode".into(),
        "echo".into(),
    ])
}
