//! `permission_mapping`: one permission turn per input, played against a long-lived client over
//! pipes (control plane + one relay connection), every check asserted on the turn's transcript.
//! The client is `ACP_HARNESS_CLIENT` (the reference client by default). fuzz/README.md.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acp_harness::fuzz::fuzz_permission_mapping(data);
});
