//! The conformance suite as libtest trials: `<agent>@<version>/<scenario>::<check>`.
//! `cargo test -- --list` lists them without launching anything; `ACP_HARNESS_CLIENT` picks the
//! client (JSON argv array or client profile path; default: the bundled reference client).
fn main() -> std::process::ExitCode {
    acp_harness::suite::conformance_main()
}
