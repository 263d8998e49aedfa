#!/usr/bin/env bash
# Nightly fuzzing of the permission mapping (fuzz/README.md): both cargo-fuzz targets within a
# time budget, the corpus kept between runs (and minimized with cmin), every finding minimized
# with tmin and turned into a regression scenario that `cargo test` then runs.
# ci/nightly-fuzz.yml runs this script on a schedule.
#
# Usage: fuzz/run-nightly.sh [SECONDS]          (default: $FUZZ_SECONDS, else 3600)
#
# Environment:
#   FUZZ_SECONDS        total time budget in seconds, split 2:1 between permission_mapping (the
#                       client over pipes) and mapping_inprocess (the reference mapping in-process);
#                       all of it to permission_mapping when ACP_HARNESS_CLIENT is another client
#   ACP_HARNESS_CLIENT  client under test for permission_mapping: a JSON argv array of an
#                       adapter-bearing client, a client profile (one without an adapter, such as
#                       clients/acpx/acpx.toml, plays each input as a one-case run: fuzz/README.md),
#                       `mutant:<name>`, or unset for the reference client (built here in release
#                       mode)
#   ACP_HARNESS_BASELINE  the client's known bugs, a baseline file (clients/README.md,
#                       "Baselines"): its check-wide entries are not findings while fuzzing, nor
#                       when a finding's scenario is replayed (`acp-harness replay --baseline`)
#   FUZZ_JOBS           fuzz processes at once for mapping_inprocess (default: the number of CPUs,
#                       `nproc`); permission_mapping runs one, whose clients run beside it
#   RUSTC_BOOTSTRAP     set to 1 by this script: cargo-fuzz passes nightly-only compiler flags,
#                       which a stable toolchain accepts with it (a nightly toolchain works too)
#
# Layout (relative to the repository root):
#   fuzz/seeds/permission_mapping/   committed seeds (read only; `cargo test` replays them)
#   fuzz/corpus/<target>/            the growing corpus, kept between runs (cache it in CI)
#   fuzz/artifacts/<target>/         crash inputs, and `minimized-<name>` after tmin
#   fuzz/artifacts/summary.md        what this run found (for $GITHUB_STEP_SUMMARY)
#   scenarios/regressions/fuzz/      the regression scenarios made from the findings
#
# Exit status: 0 nothing found, 1 findings (scenarios written), 2 setup failure.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
budget=${1:-${FUZZ_SECONDS:-3600}}
case $budget in
  '' | *[!0-9]*) echo "run-nightly: the budget must be a number of seconds, got '$budget'" >&2; exit 2 ;;
esac
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 1)}
case $jobs in
  '' | 0 | *[!0-9]*) echo "run-nightly: FUZZ_JOBS must be a positive number of processes, got '$jobs'" >&2; exit 2 ;;
esac
export RUSTC_BOOTSTRAP=1
# No sanitizer: the targets are safe Rust, and the client under test runs in its own process.
# No comparison tracing: it more than halved the in-process target's speed without finding more
# (fuzz/README.md, "Throughput"). -O: without it cargo fuzz keeps debug assertions and overflow
# checks on in every crate (1.18x the in-process target's execs per CPU-second; the pipe target's
# figure is in "Throughput" too). Every cargo-fuzz call gets the same flags, so the targets are
# built once.
flags=(-O -s none --no-trace-compares)
seeds=fuzz/seeds/permission_mapping
summary=fuzz/artifacts/summary.md
mkdir -p fuzz/artifacts

echo "== building the harness, the reference client and the fake agent (release)"
cargo build --release -p acp-harness -p acp-reference-client -p acp-fake-agents || exit 2
export ACP_HARNESS_REFERENCE_CLIENT="$root/target/release/acp-reference-client"
export ACP_HARNESS_FAKE_AGENT="$root/target/release/acp-fake-agent"
harness="$root/target/release/acp-harness"
echo "== building the fuzz targets"
# From here on (cargo-fuzz builds only): coverage instrumentation on this project's crates only,
# 1.8x the pipe target's turns/s and 2x the in-process target's execs/s (fuzz/README.md,
# "Throughput"; instrument-ours.sh says why).
export RUSTC_WRAPPER="$root/fuzz/instrument-ours.sh"
cargo fuzz build "${flags[@]}" || exit 2

# fuzz TARGET SECONDS PROCESSES: fuzz, keep going after findings, then minimize the corpus.
fuzz() {
  local target=$1 secs=$2 processes=$3
  local corpus=fuzz/corpus/$target artifacts=fuzz/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  echo "== $target: ${secs}s, $processes process(es), corpus of $(find "$corpus" -type f | wc -l) inputs"
  # -fork=N -ignore_crashes=1: N fuzz processes at a time, each a job of growing length whose new
  # inputs are merged into the corpus when it ends; a finding is saved and its job replaced. The
  # in-process target is CPU-bound, so its executions per second grow with the processes
  # (fuzz/README.md, "Throughput").
  # -timeout: a turn waits at most ACP_FUZZ_STEP_TIMEOUT_MS per step, far below this.
  cargo fuzz run "${flags[@]}" "$target" "$corpus" "$seeds" -- \
    -max_total_time="$secs" -fork="$processes" -ignore_crashes=1 -timeout=120 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 -print_funcs=0
  echo "== $target: cmin"
  cargo fuzz cmin "${flags[@]}" "$target" "$corpus"
}

# mapping_inprocess fuzzes the reference client's mapping code, whatever ACP_HARNESS_CLIENT says:
# worth a third of the night when that is the client under test, nothing when another client is.
case "${ACP_HARNESS_CLIENT:-reference}" in
  reference | mutant:*)
    fuzz permission_mapping $((budget * 2 / 3)) 1
    fuzz mapping_inprocess $((budget - budget * 2 / 3)) "$jobs"
    ;;
  *)
    echo "== mapping_inprocess: skipped (it fuzzes the reference client's code, not ${ACP_HARNESS_CLIENT})"
    fuzz permission_mapping "$budget" 1
    ;;
esac

# Every new finding: tmin, then a regression scenario, then a replay of that scenario.
found=0
replay_baseline=()
if [ -n "${ACP_HARNESS_BASELINE:-}" ]; then
  replay_baseline=(--baseline "$ACP_HARNESS_BASELINE")
fi
{
  echo "# Nightly fuzz: permission mapping"
  echo
  echo "Budget ${budget}s; client: ${ACP_HARNESS_CLIENT:-reference}."
  echo
} >"$summary"
for target in permission_mapping mapping_inprocess; do
  for artifact in fuzz/artifacts/"$target"/{crash,timeout,oom,leak}-*; do
    [ -f "$artifact" ] || continue
    found=$((found + 1))
    name=$(basename "$artifact")
    minimized=fuzz/artifacts/$target/minimized-$name
    if [ ! -f "$minimized" ]; then
      echo "== $target: tmin $name"
      cargo fuzz tmin "${flags[@]}" -r 128 "$target" "$artifact" -- \
        -exact_artifact_path="$minimized" >/dev/null 2>&1
      [ -f "$minimized" ] || cp "$artifact" "$minimized"
    fi
    written=$("$harness" fuzz-to-scenario "$minimized" | sed -n 's/^wrote: *//p')
    id=$(basename "${written:-unknown}" .toml)
    # The fuzzer is strict (a `warn` is a finding too): read the grades, not the exit status.
    # A known bug of the baseline grades `expected` there, as while fuzzing.
    findings=$("$harness" replay "${replay_baseline[@]}" "regressions@fuzz/$id" 2>/dev/null |
      grep -E '^ *(fail|warn|error|timeout|crash)  ')
    if [ -n "$findings" ]; then
      verdict="reproduces"
    else
      verdict="does not reproduce as a scenario (it may depend on earlier turns, or on the client policy its header names: replayed here without it)"
    fi
    echo "- \`$target\` $name → \`${written#"$root"/}\`: $verdict" >>"$summary"
  done
done
if [ "$found" -eq 0 ]; then
  echo "No findings." >>"$summary"
fi
cat "$summary"
[ "$found" -eq 0 ] || exit 1
