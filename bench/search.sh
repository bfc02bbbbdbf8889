#!/usr/bin/env bash
# `app plugin search` over an index of 10,000 plugins (issue 21: under 50 ms).
# The index is signed with minisign when the tool is there, added once
# (read, verified, cached), then searched: search reads the verified cache
# and checks no signature per call.
#
#   bash bench/search.sh                     # prints a markdown table
#   PLUGINS=50000 bash bench/search.sh
#   APP=/path/to/app bash bench/search.sh    # another build
#   CALLGRIND=1 bash bench/search.sh         # also instruction counts (valgrind), which load does not change
set -euo pipefail
cd "$(dirname "$0")/.."
PLUGINS=${PLUGINS:-10000}
RUNS=${RUNS:-50}

WORK=$(mktemp -d /tmp/app-bench-search.XXXXXX)
. bench/lib.sh
need_hyperfine
app_release
app_dirs

# PLUGINS plugins, two platforms each, a description of a few words.
python3 - "$WORK/index.json" "$PLUGINS" <<'PY'
import json, sys, hashlib
path, n = sys.argv[1], int(sys.argv[2])
words = ["json", "yaml", "mqtt", "nats", "relay", "format", "lint", "deploy", "cloud", "trace"]
plugins = []
for i in range(n):
    name = f"tool-{i:05d}"
    sha = hashlib.sha256(name.encode()).hexdigest()
    plugins.append({
        "name": name, "version": f"1.{i % 7}.{i % 13}",
        "description": f"Does {words[i % 10]} and {words[(i // 10) % 10]} things, number {i}",
        "homepage": f"https://example.org/{name}",
        "platforms": [
            {"os": "linux", "arch": "x86_64", "url": f"{name}/linux-x86_64.tar.gz", "sha256": sha},
            {"os": "macos", "arch": "aarch64", "url": f"{name}/macos-aarch64.tar.gz", "sha256": sha},
        ],
    })
json.dump({"apiVersion": "app.index/v1", "index": "bench/big", "serial": 1, "expires": "2999-01-01T00:00:00Z",
           "plugins": plugins}, open(path, "w"), indent=1)
PY
if command -v minisign >/dev/null; then
  minisign -G -W -p "$WORK/key.pub" -s "$WORK/key.sec" >/dev/null
  minisign -S -s "$WORK/key.sec" -m "$WORK/index.json" >/dev/null
  "$APP" plugin index add big "$WORK/index.json" --key-file "$WORK/key.pub" >&2
else
  echo "bench: minisign is not installed (apt-get install minisign): the index is added unsigned" >&2
  "$APP" plugin index add big "$WORK/index.json" --insecure-no-signature >&2
fi
size=$(stat -c %s "$WORK/index.json")

hyperfine -N --warmup 5 --runs "$RUNS" --export-json "$WORK/search.json" \
  -n "plugin search (all 10,000 rows)" "$APP plugin search" \
  -n "plugin search WORD" "$APP plugin search mqtt" \
  -n "plugin search -o json" "$APP plugin search -o json" \
  -n "plugin info NAME" "$APP plugin info tool-04242" \
  -n "plugin index update (read, verify, parse, store)" "$APP plugin index update" \
  >&2

python3 - "$WORK/search.json" "$PLUGINS" "$size" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))["results"]
print(f"index: {int(sys.argv[2]):,} plugins, {int(sys.argv[3]):,} bytes")
print()
print("| command | median (ms) | min (ms) |")
print("|---|---:|---:|")
for r in res:
    print(f"| {r['command']} | {r['median']*1000:.1f} | {r['min']*1000:.1f} |")
PY

if [ "${CALLGRIND:-0}" = 1 ]; then
  if command -v valgrind >/dev/null; then
    for args in "plugin search mqtt" "plugin info tool-04242"; do
      # shellcheck disable=SC2086
      valgrind --tool=callgrind --callgrind-out-file="$WORK/cg.out" "$APP" $args >/dev/null 2>"$WORK/cg.err"
      echo "app $args: $(awk '/^summary:/ { print $2 }' "$WORK/cg.out") instructions (callgrind)"
    done
  else
    echo "CALLGRIND=1: valgrind is not installed (apt-get install valgrind)" >&2
  fi
fi
