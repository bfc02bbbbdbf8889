#!/usr/bin/env bash
# Two builds of app side by side on bench/dispatch.sh's setup (50 directories,
# 5,000 files on PATH, the trivial plugin last), in one hyperfine run, twice:
# a plugin on PATH, and one in the user plugin directory with a share/
# folder (the multi-file plugins' APP_PLUGIN_SHARE, one stat); then
# callgrind's instruction count of `app plugin path` for each (load-free).
#
#   BASE=/path/to/old/app APP=/path/to/new/app bash bench/dispatch-compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BASE:?BASE=the app binary to compare against}" "${APP:?APP=the app binary to measure}"
WORK=$(mktemp -d /tmp/app-bench-compare.XXXXXX)
. bench/lib.sh
need_hyperfine
BR=$APP
path=""
for d in $(seq -w 1 50); do dir="$WORK/path/d$d"; mkdir -p "$dir"; for f in $(seq -w 1 98); do : > "$dir/tool-$d-$f"; done
  printf '#!/bin/sh\n' > "$dir/app-other-$d"; chmod +x "$dir/app-other-$d"; path="$path${path:+:}$dir"; done
last="$WORK/path/d50"
printf 'int main(void){return 0;}\n' > "$WORK/plugin.c"; cc -O2 -o "$last/app-bench" "$WORK/plugin.c"
app_dirs
mkdir -p "$WORK/data/plugins"
unset APP_PLUGIN_PATH
# rustc from wherever it is now, before PATH is the bench's.
RUSTC=$(command -v rustc)
export PATH="$path:/usr/local/bin:/usr/bin:/bin"
# A plugin in the user plugin directory with a share/ folder (the new stat).
cp "$last/app-bench" "$WORK/data/plugins/app-mf"; mkdir -p "$WORK/data/plugins/.files/mf/share"
cat > "$WORK/wrapper.rs" <<'RS'
use std::os::unix::process::CommandExt;
fn main() { let mut a = std::env::args_os().skip(1); let p = a.next().unwrap(); let e = std::process::Command::new(p).args(a).exec(); eprintln!("{e}"); std::process::exit(126); }
RS
"$RUSTC" -O -C codegen-units=1 -o "$WORK/wrapper" "$WORK/wrapper.rs"
for i in 1 2; do
hyperfine -N --warmup 100 --runs ${RUNS:-1500} --export-json "$WORK/r$i.json" \
  -n direct "$last/app-bench" -n wrapper "$WORK/wrapper $last/app-bench" \
  -n base "$BASE bench" -n branch "$BR bench" \
  -n base-userdir "$BASE mf" -n branch-userdir "$BR mf" >/dev/null 2>&1
python3 - "$WORK/r$i.json" <<'PY'
import json,sys
r={x["command"]:x for x in json.load(open(sys.argv[1]))["results"]}
m={k:v["median"]*1000 for k,v in r.items()}
d=m["direct"]; w=m["wrapper"]-d
print(" ".join(f"{k}={v:.3f}" for k,v in m.items()))
for k in ["base","branch","base-userdir","branch-userdir"]:
    print(f"  {k}: adds {m[k]-d:.3f} ms = {(m[k]-d)/w:.2f}x the wrapper's {w:.3f} ms; total {m[k]/m['wrapper']:.2f}x the wrapper's total")
PY
done
for b in base:$BASE branch:$BR; do n=${b%%:*}; exe=${b#*:}
  for cmd in "plugin path bench" "plugin path mf"; do
    command -v valgrind >/dev/null || { echo "valgrind is not installed (apt-get install valgrind)" >&2; break 2; }
    valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" $exe $cmd >/dev/null 2>/dev/null
    echo "$n app $cmd: $(awk '/^summary:/ { print $2 }' "$WORK/cg.out") instructions"
  done
done
