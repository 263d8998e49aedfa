//! Fuzzing the permission mapping (docs/architecture.md §8, fuzz/README.md).
//!
//! * [`input`]: the fuzz input, one permission turn ([`PermissionTurn`]), derived with
//!   `arbitrary` from libFuzzer's bytes or read from a JSON seed;
//! * [`frames`]: the agent frames of a turn (one builder for the driver, the in-process target
//!   and regression scenarios);
//! * [`driver`]: the long-lived driver that plays turns against a client over pipes (the client
//!   itself in `live`, on the scenario runner's plumbing: relay socket, the engine's agent link,
//!   the control plane as the user) and grades each turn with the harness's checks ([`verdict`],
//!   over "handshake + this turn");
//! * `as_case`: a turn as a one-case scenario run, for a client without an adapter (a client
//!   profile with `control = "none"`), which the driver cannot play the user through;
//! * [`inprocess`]: the same turn played against a client's mapping functions in-process, graded
//!   by the permission checks;
//! * [`scenario`]: a turn as a regression scenario (`acp-harness fuzz-to-scenario`).
//!
//! The cargo-fuzz targets in `fuzz/` are thin: [`fuzz_permission_mapping`] is the whole body of
//! `permission_mapping`, and `cargo test` replays the committed seeds through the same function
//! (harness/tests/fuzz_seeds.rs).

mod as_case;
pub mod driver;
mod exit_cleanup;
pub mod frames;
pub mod inprocess;
pub mod input;
mod live;
pub mod scenario;
pub mod verdict;

use std::sync::Mutex;

pub use driver::{Driver, DriverConfig};
pub use input::{PermissionTurn, PolicyChoice, decode, pseudo_random_turns};

/// The coverage choice of fuzz/instrument-ours.sh (`ACP_FUZZ_INSTRUMENT`: is this crate
/// instrumented?), read here only so that cargo rebuilds the crate when it changes: cargo does not
/// fingerprint what a `RUSTC_WRAPPER` decides, but it tracks the variables a crate reads.
const _INSTRUMENT_CHOICE: Option<&str> = option_env!("ACP_FUZZ_INSTRUMENT");

/// The driver of this process, started on first use (cargo-fuzz calls the target many times in
/// one process; the client lives across calls).
static DRIVER: Mutex<Option<Driver>> = Mutex::new(None);

/// The body of the `permission_mapping` fuzz target: decode, play one turn against the
/// long-lived client (`ACP_HARNESS_CLIENT`, the reference client by default), and panic with a
/// readable summary if any invariant broke.
pub fn fuzz_permission_mapping(data: &[u8]) {
    let Some(turn) = decode(data) else { return };
    let mut guard = DRIVER.lock().unwrap_or_else(|e| e.into_inner());
    if guard.is_none() {
        let cfg = DriverConfig::from_env()
            .unwrap_or_else(|e| panic!("acp-harness fuzz: cannot set up the client: {e:#}"));
        let driver = Driver::new(cfg)
            .unwrap_or_else(|e| panic!("acp-harness fuzz: cannot start the driver: {e:#}"));
        *guard = Some(driver);
    }
    let Some(driver) = guard.as_mut() else { return };
    if let Err(finding) = driver.check(&turn) {
        // Reap the client before libFuzzer aborts the process on the panic.
        driver.stop_client();
        panic!("{}", finding.summary);
    }
}

/// Stops the driver of [`fuzz_permission_mapping`] and reaps its client (a test calls this when
/// done; a fuzzing process simply exits, and the client ends on its stdin's EOF).
pub fn stop_fuzz_driver() {
    let mut guard = DRIVER.lock().unwrap_or_else(|e| e.into_inner());
    drop(guard.take());
}
