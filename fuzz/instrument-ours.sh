#!/usr/bin/env bash
# RUSTC_WRAPPER for `cargo fuzz` (fuzz/README.md, "Throughput"): keeps libFuzzer's coverage
# instrumentation on this project's crates and strips it from every third-party crate.
#
# Why: cargo-fuzz instruments every crate through RUSTFLAGS. The pipe target links the harness's
# checks with jsonschema, regex, tokio and serde, and libFuzzer scanned ~235,000 counters per
# input, almost all of them in code whose coverage says nothing about the client under test.
# rustc has no sanitizer-coverage allowlist, and a profile's rustflags come before RUSTFLAGS
# (LLVM keeps the last `-sanitizer-coverage-level`), so a wrapper is the one place to choose.
#
# The list is fixed on purpose: cargo does not fingerprint what a wrapper decides, so a list that
# changed between builds would leave crates instrumented the old way.
set -euo pipefail
rustc=$1
shift
#
# ACP_FUZZ_INSTRUMENT=mapping narrows it to the in-process target's signal, the reference client's
# mapping and decision code: the harness (input decoding, frame building, the fake agents' link)
# is then uninstrumented too, which only the pipe target needs as its coverage signal. Build it into
# its own target dir (`--target-dir fuzz/target-mapping`): acp_harness also reads this variable
# (harness/src/fuzz/mod.rs), so cargo rebuilds it when it changes, but one dir would flip back and
# forth between the two builds.
case "${ACP_FUZZ_INSTRUMENT:-ours}" in
  ours) instrument="acp_harness acp_harness_fuzz acp_reference_client acp_fake_agents mapping_inprocess permission_mapping" ;;
  mapping) instrument="acp_harness_fuzz acp_reference_client mapping_inprocess" ;;
  *) echo "instrument-ours.sh: ACP_FUZZ_INSTRUMENT is ours or mapping, not ${ACP_FUZZ_INSTRUMENT}" >&2; exit 2 ;;
esac
crate=
prev=
for arg in "$@"; do
  if [ "$prev" = --crate-name ]; then crate=$arg; break; fi
  prev=$arg
done
for ours in $instrument; do
  if [ "$crate" = "$ours" ]; then exec "$rustc" "$@"; fi
done
# A third-party crate: drop the coverage pass; its `-sanitizer-coverage-*` options are then inert.
args=()
for arg in "$@"; do
  [ "$arg" = -Cpasses=sancov-module ] || args+=("$arg")
done
exec "$rustc" "${args[@]}"
