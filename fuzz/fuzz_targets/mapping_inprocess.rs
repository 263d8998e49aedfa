//! `mapping_inprocess`: the same permission turn as `permission_mapping`, handed straight to the
//! reference client's mapping code (timeline, subject, approvals) in this process and graded by
//! the permission checks. Coverage-guided inside the mapping. fuzz/README.md.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    acp_harness_fuzz::fuzz_mapping_inprocess(data);
});
