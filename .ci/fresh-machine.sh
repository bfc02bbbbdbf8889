#!/usr/bin/env bash
# The README's test command on a machine that has only Rust and a C compiler.
#
# Clones the committed HEAD of this repository into a temp dir and runs
# exactly `cargo build --workspace && cargo test --workspace` there, with an
# empty HOME, an empty CARGO_HOME (crates are downloaded as on a new machine),
# an empty environment but for PATH = the Rust toolchain and the system dirs,
# and, in a private mount namespace, the optional tools the tests can use
# hidden (an empty non-executable file bound over each one): a test that
# needs one must skip with one line instead of failing.
#
#   .ci/fresh-machine.sh              # the check; prints a summary, exits as the tests did
#   FRESH_KEEP=1 .ci/fresh-machine.sh # keep the temp dir (clone, target, log)
#   FRESH_CARGO_HOME=~/.cargo …       # reuse a crate cache instead of downloading
#   .ci/fresh-machine.sh --in-place   # this checkout, its target dir and crate
#                                     # cache: only the skips are checked
#   .ci/fresh-machine.sh --summary LOG  # the summary of a kept run's test.log
#
# Needs git, unshare (util-linux) and mount rights (root, or user namespaces).
# Not run by .ci/run: a second build from nothing (16 min of the 2-core
# machine's time, measured) and a second test run do not fit CI's budget.
# Run it before a release, or after adding a test that drives a new tool.
set -euo pipefail

# What a fresh machine lacks: everything the tests drive that is not Rust, a C
# compiler (with binutils) or Debian's essential packages.
# tansu (the Kafka tests' broker) is a cargo install: the empty CARGO_HOME
# already lacks it; it is listed for a machine that put it in the system dirs.
hidden_tools=(zsh fish tmux mosquitto mosquitto_sub mosquitto_pub mosquitto_rr
  mosquitto_passwd mosquitto_ctrl nats-server nats python3 hyperfine socat tansu)
hidden_dirs=(/usr/share/bash-completion)

# Stage 2, in the private mount namespace: hide the tools, then test.
inside() {
  local work=$1
  : >"$work/hidden" && chmod 0644 "$work/hidden"
  mkdir -p "$work/hidden.d"
  declare -A done_paths=()
  local name dir f real d
  for name in "${hidden_tools[@]}"; do
    for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
      for f in "$dir/$name" "$dir/$name".[0-9]*; do
        [ -e "$f" ] || continue
        real=$(readlink -f "$f")
        [ -n "${done_paths[$real]:-}" ] && continue
        done_paths[$real]=1
        mount --bind "$work/hidden" "$real"
        echo "hidden: $f" >>"$work/hidden.txt"
      done
    done
  done
  for d in "${hidden_dirs[@]}"; do
    [ -d "$d" ] || continue
    mount --bind "$work/hidden.d" "$d"
    echo "hidden: $d" >>"$work/hidden.txt"
  done
  cd "$(cat "$work/src")"
  local target=()
  [ -f "$work/target" ] && target=(CARGO_TARGET_DIR="$(cat "$work/target")")
  set +e
  env -i \
    HOME="$work/home" \
    CARGO_HOME="$(cat "$work/cargo_home")" \
    PATH="$(cat "$work/toolchain_bin"):/usr/local/bin:/usr/bin:/bin" \
    LANG=C.UTF-8 \
    TERM=dumb \
    USER="$(id -un)" \
    "${target[@]}" \
    bash -c 'cargo build --workspace && cargo test --workspace' >"$work/test.log" 2>&1
  echo $? >"$work/status"
}

# Counts from libtest's `test result:` lines (one per test binary and doc-test
# run) and the `skipping <test>: <why>` lines of tests/it/common/tools.rs.
summary() {
  local log=$1 status=$2 took=$3
  awk -v status="$status" -v took="$took" '
    /^test result:/ {
      for (i = 1; i <= NF; i++) {
        if ($(i) ~ /^passed;?$/) passed += $(i - 1)
        if ($(i) ~ /^failed;?$/) failed += $(i - 1)
        if ($(i) ~ /^ignored;?$/) ignored += $(i - 1)
      }
      binaries++
    }
    match($0, /skipping [^ ]+: .*/) {
      line = substr($0, RSTART, RLENGTH); sub(/^skipping [^ ]+: /, "", line)
      skipped++; why[line]++
    }
    /Finished `dev` profile/ { build = $0; sub(/.* in /, "", build) }
    END {
      printf "fresh-machine: exit %s after %s s (build: %s); %d test runs: %d passed (%d of them skipped for a missing tool), %d failed, %d ignored\n",
        status, took, build, binaries, passed, skipped, failed, ignored
      for (w in why) printf "  %3d x %s\n", why[w], w
    }' "$log"
}

main() {
  if [ "${1:-}" = --inside ]; then
    inside "$2"
    return 0
  fi
  if [ "${1:-}" = --summary ]; then
    summary "$2" "?" "?"
    return 0
  fi
  local repo work
  repo=$(cd "$(dirname "$0")/.." && pwd)
  work=$(mktemp -d "${TMPDIR:-/tmp}/app-fresh.XXXXXX")
  # shellcheck disable=SC2064
  trap "if [ \"\${FRESH_KEEP:-0}\" = 1 ]; then echo \"fresh-machine: kept $work\"; else rm -rf '$work'; fi" EXIT

  mkdir -p "$work/home"
  if [ "${1:-}" = --in-place ]; then
    echo "$repo" >"$work/src"
    echo "${CARGO_TARGET_DIR:-$repo/target}" >"$work/target"
    FRESH_CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
  else
    git clone -q --no-local "$repo" "$work/app"
    echo "$work/app" >"$work/src"
  fi
  # The crate cache by its own path: cargo fingerprints the sources' paths,
  # so a link would rebuild every dependency.
  if [ -n "${FRESH_CARGO_HOME:-}" ]; then
    echo "$FRESH_CARGO_HOME" >"$work/cargo_home"
  else
    mkdir -p "$work/cargo-home"
    echo "$work/cargo-home" >"$work/cargo_home"
  fi
  # The toolchain's own bin dir (cargo, rustc), not ~/.cargo/bin, where
  # `cargo install` and ./install.sh put other programs.
  echo "$(rustc --print sysroot)/bin" >"$work/toolchain_bin"

  local ns
  if [ "$(id -u)" = 0 ]; then
    ns=(unshare --mount --propagation private)
  else
    ns=(unshare --user --map-root-user --mount --propagation private)
  fi
  local src start took status
  src=$(cat "$work/src")
  echo "fresh-machine: $(git -C "$src" log -1 --format='%h %s')"
  echo "fresh-machine: cargo build --workspace && cargo test --workspace in $src"
  start=$(date +%s)
  "${ns[@]}" bash "$0" --inside "$work"
  took=$(($(date +%s) - start))
  status=$(cat "$work/status")
  sed 's/^/  /' "$work/hidden.txt" 2>/dev/null || true
  summary "$work/test.log" "$status" "$took"
  if [ "$status" != 0 ]; then
    echo "fresh-machine: FAILED; the end of the log:"
    tail -40 "$work/test.log"
  fi
  return "$status"
}

# One call, so bash has read the whole file before anything runs (an edit
# while it runs cannot change what it does).
main "$@"
exit $?
