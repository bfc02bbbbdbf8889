#!/usr/bin/env bash
# Dispatch cost: what `app <plugin>` adds to running the plugin directly,
# next to the physical limit (a minimal Rust program that only execs) and git.
#
#   bash bench/dispatch.sh            # prints a markdown table
#   RUNS=2000 bash bench/dispatch.sh  # more runs
#   CALLGRIND=1 bash bench/dispatch.sh  # also the instruction count (valgrind)
#
# Setup, as in the dispatcher issue: 50 directories and 5,000 files on PATH,
# the trivial compiled plugin in the last directory (worst case for lookup).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-1000}
WARMUP=${WARMUP:-100}

WORK=$(mktemp -d /tmp/app-bench-dispatch.XXXXXX)
. bench/lib.sh
need_hyperfine
# APP=/path/to/app compares another build (a static one, say) instead.
app_release

# 50 directories × 100 files; 2 of every 100 are app-* plugins (not executed).
path=""
for d in $(seq -w 1 50); do
  dir="$WORK/path/d$d"
  mkdir -p "$dir"
  for f in $(seq -w 1 98); do : > "$dir/tool-$d-$f"; done
  printf '#!/bin/sh\n' > "$dir/app-other-$d"
  printf '#!/bin/sh\n' > "$dir/git-other-$d"
  chmod +x "$dir/app-other-$d" "$dir/git-other-$d"
  path="$path${path:+:}$dir"
done
last="$WORK/path/d50"

# The trivial plugin: a C program that returns 0 (the same file under each name).
printf 'int main(void){return 0;}\n' > "$WORK/plugin.c"
cc -O2 -o "$last/app-bench" "$WORK/plugin.c"
cp "$last/app-bench" "$last/git-bench"

# The physical limit for a Rust dispatcher: parse nothing, exec a fixed path.
cat > "$WORK/wrapper.rs" <<'RS'
use std::os::unix::process::CommandExt;
fn main() {
    let mut args = std::env::args_os().skip(1);
    let plugin = args.next().expect("plugin path");
    let err = std::process::Command::new(plugin).args(args).exec();
    eprintln!("exec: {err}");
    std::process::exit(126);
}
RS
rustc -O -C codegen-units=1 -o "$WORK/wrapper" "$WORK/wrapper.rs"

# One configured listener, for the cost of listening (lifecycle listeners).
mkdir -p "$WORK/listener-config"
printf '{"listeners":[{"name":"bench"}]}\n' > "$WORK/listener-config/config.json"
printf 'int main(void){char b[4096]; while(read(0,b,sizeof b)>0); return 0;}\n' > "$WORK/listener.c"
cc -O2 -include unistd.h -o "$last/app-listener-bench" "$WORK/listener.c"

export PATH="$path:/usr/local/bin:/usr/bin:/bin"
app_dirs
unset APP_PLUGIN_PATH

hyperfine -N --warmup "$WARMUP" --runs "$RUNS" --export-json "$WORK/dispatch.json" \
  -n direct "$last/app-bench" \
  -n wrapper "$WORK/wrapper $last/app-bench" \
  -n app "$APP bench" \
  -n git "git bench" \
  -n "app+listener" "$APP --config $WORK/listener-config/config.json bench" \
  >&2
hyperfine -N -i --warmup 10 --runs 100 --export-json "$WORK/list.json" \
  -n "app plugin list" "$APP plugin list" >&2

python3 - "$WORK/dispatch.json" "$WORK/list.json" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
lst = json.load(open(sys.argv[2]))["results"][0]
med = {k: r["median"] * 1000 for k, r in res.items()}
base = med["direct"]
print("| command | median (ms) | added over direct (ms) |")
print("|---|---:|---:|")
for k in ["direct", "wrapper", "app", "git", "app+listener"]:
    print(f"| {k} | {med[k]:.3f} | {med[k]-base:+.3f} |")
w = med["wrapper"] - base
a = med["app"] - base
g = med["git"] - base
print()
print(f"app adds {a:.3f} ms = {a/w:.2f}x the minimal wrapper's {w:.3f} ms (target <= 1.5x); git adds {g:.3f} ms")
print(f"app plugin list (5,000 files, warm cache): median {lst['median']*1000:.2f} ms (target < 30 ms)")
PY

# CALLGRIND=1: the instructions `app` runs to resolve the plugin in the same
# setup (`app plugin path bench`: everything a dispatch does but the exec),
# a count the machine's load does not change (docs/benchmarks.md).
if [ "${CALLGRIND:-0}" = 1 ]; then
  if command -v valgrind >/dev/null; then
    valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" "$APP" plugin path bench >/dev/null 2>"$WORK/callgrind.err"
    echo "app plugin path bench: $(awk '/^summary:/ { print $2 }' "$WORK/callgrind.out") instructions (callgrind)"
  else
    echo "CALLGRIND=1: valgrind is not installed (apt-get install valgrind)" >&2
  fi
fi
