#!/usr/bin/env bash
# Runs every fuzz target for a short, bounded time (CI: keeps them building
# and catches shallow crashes; real fuzzing runs longer, see docs/fuzzing.md).
#
#   fuzz/ci.sh [SECONDS]     # per target; default $FUZZ_SECONDS or 60
#
# Builds with plain cargo and the coverage flags cargo-fuzz passes for
# `-s none` (no sanitizer), so a stable toolchain needs no cargo-fuzz
# install. Output goes to $CARGO_TARGET_DIR/fuzz (or target/fuzz): the fuzz
# workspace has other flags, so it cannot share the main build's artifacts.
# Exit status: 0 when no target crashed; otherwise the crashing input is in
# $CARGO_TARGET_DIR/fuzz/artifacts/<target>/ (named in the message).
set -euo pipefail
cd "$(dirname "$0")"

seconds="${1:-${FUZZ_SECONDS:-60}}"
target_dir="${CARGO_TARGET_DIR:-$PWD/../target}/fuzz"
triple="$(rustc -vV | sed -n 's/^host: //p')"
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
-Cdebug-assertions -Coverflow-checks"
# --target keeps those flags off build scripts and proc macros, which run
# on the host without libFuzzer's runtime.
cargo build --release --locked --target "$triple" --target-dir "$target_dir" --bins

targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^app-fuzz$')
for t in $targets; do
  corpus="corpus/$t"
  artifacts="$target_dir/artifacts/$t"
  log="$target_dir/$t.log"
  rm -rf "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  echo "fuzz: $t for ${seconds}s"
  status=0
  "$target_dir/$triple/release/$t" "$corpus" -max_total_time="$seconds" \
    -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" | sed 's/^/  /' || true
  if [ "$status" != 0 ]; then
    tail -30 "$log" >&2
    echo "fuzz: $t failed (exit $status); the input is in $artifacts/, the log in $log" >&2
    exit 1
  fi
done
