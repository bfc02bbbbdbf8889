#!/usr/bin/env bash
# What plugin management (ureq + rustls, tar, flate2, sha2 linked into `app`)
# costs a plain plugin call: builds release `app` at BASE (default: the
# dispatcher core before plugin management) and at the working tree, then
# times `app noop` for both with hyperfine, plus an interleaved paired run
# that is less sensitive to other load on the machine.
# Usage: bench/install-cost.sh [BASE_REV]   (see docs/benchmarks.md)
set -euo pipefail
cd "$(dirname "$0")/.."
base_rev="${1:-4b2d955}"
command -v hyperfine >/dev/null || { apt-get update -qq && apt-get install -y -qq hyperfine >/dev/null; }
work="$(mktemp -d)"
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

git worktree add --detach "$work/base" "$base_rev" >/dev/null
(cd "$work/base" && CARGO_TARGET_DIR="$work/target-base" cargo build --release --quiet --bin app)
cargo build --release --quiet --bin app
cp "$work/target-base/release/app" "$work/app-base"
cp "${CARGO_TARGET_DIR:-target}/release/app" "$work/app-new"

mkdir -p "$work/bin" "$work/d/config" "$work/d/data" "$work/d/run" "$work/d/cache"
printf 'int main(void){return 0;}\n' > "$work/noop.c"
cc -O2 -o "$work/bin/app-noop" "$work/noop.c"
export PATH="$work/bin:/usr/local/bin:/usr/bin:/bin"
export APP_CONFIG_DIR="$work/d/config" APP_DATA_DIR="$work/d/data"
export APP_RUNTIME_DIR="$work/d/run" APP_CACHE_DIR="$work/d/cache"

for b in app-base app-new; do
  printf '%s: %s bytes, %s relocations, ' "$b" "$(stat -c %s "$work/$b")" "$(readelf -rW "$work/$b" | grep -c R_X86 || true)"
  /usr/bin/time -f '%R minor page faults' "$work/$b" noop
done
hyperfine -N --warmup 50 --runs 2000 "$work/bin/app-noop" "$work/app-base noop" "$work/app-new noop"

python3 - "$work/app-base" "$work/app-new" 4000 <<'PY'
import os, sys
a, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def run(p):
    import time
    t = time.perf_counter_ns()
    os.waitpid(os.posix_spawn(p, [p, "noop"], os.environ), 0)
    return time.perf_counter_ns() - t
for _ in range(50): run(a); run(b)
ta, tb = [], []
for i in range(n):
    pair = (run(a), run(b)) if i % 2 else tuple(reversed((run(b), run(a))))
    ta.append(pair[0]); tb.append(pair[1])
q = lambda v, p: sorted(v)[int(len(v) * p)] / 1000
for p in (.1, .25, .5):
    print(f"interleaved p{int(p*100):<2}: base {q(ta,p):7.1f} us, new {q(tb,p):7.1f} us, {100*(q(tb,p)/q(ta,p)-1):+.1f}%")
PY
