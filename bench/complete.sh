#!/usr/bin/env bash
# Benchmark: how long `app <TAB>` takes, i.e. `app __complete ""`, with 50
# directories and 5,000 files on PATH (100 of them third-party app-* plugins),
# plus 5 trusted plugins (APP_PLUGIN_PATH) whose metadata is in the cache.
# Also times a prefix (`app __complete plu`) and one delegated completion
# (`app __complete demo ""`, which runs a trusted plugin's `__complete`).
#
# Target (issue 5): under 50 ms for `app <TAB>`. Results: docs/benchmarks.md.
# Usage: bench/complete.sh   (installs hyperfine with apt-get when absent)
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v hyperfine >/dev/null; then
  echo "bench: installing hyperfine"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
fi
cargo build --release -q --bin app
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
app="$target_dir/release/app"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
path=""
for d in $(seq -w 0 49); do
  dir="$work/path/d$d"
  mkdir -p "$dir"
  for f in $(seq -w 0 97); do
    : >"$dir/tool-$d-$f"
  done
  chmod +x "$dir"/tool-"$d"-0*
  # Two third-party plugins per directory: never run, only listed.
  printf '#!/bin/sh\necho ran >>"%s/ran"\n' "$work" >"$dir/app-third-$d-a"
  printf '#!/bin/sh\necho ran >>"%s/ran"\n' "$work" >"$dir/app-third-$d-b"
  chmod +x "$dir/app-third-$d-a" "$dir/app-third-$d-b"
  path="$path${path:+:}$dir"
done
mkdir -p "$work/trusted"
for p in demo alpha beta gamma delta; do
  cat >"$work/trusted/app-$p" <<SCRIPT
#!/bin/sh
case "\$1" in
__app_metadata) echo '{"apiVersion":"app.plugin/v1","description":"trusted $p","completion":true}' ;;
__complete) printf 'run\tRun it\nmanage\n:4\n' ;;
esac
SCRIPT
  chmod +x "$work/trusted/app-$p"
done
files=$(find "$work/path" -type f | wc -l)
echo "bench: $(echo "$path" | tr ':' '\n' | wc -l) directories, $files files on PATH"

export PATH="$path:/usr/bin:/bin"
export APP_PLUGIN_PATH="$work/trusted"
export APP_CONFIG_DIR="$work/config" APP_DATA_DIR="$work/data"
export APP_RUNTIME_DIR="$work/run" APP_CACHE_DIR="$work/cache"

# Warm the metadata cache, and check the answer is the real one.
"$app" __complete "" >"$work/answer"
grep -q $'^demo\ttrusted demo$' "$work/answer"
[ "$(grep -c '^third-' "$work/answer")" -eq 100 ]

hyperfine -N --warmup 10 --min-runs 100 \
  --export-json "$work/result.json" \
  "$app __complete ''" \
  "$app __complete plu" \
  "$app __complete demo ''"

if [ -e "$work/ran" ]; then
  echo "bench: FAIL: an untrusted plugin was run while completing" >&2
  exit 1
fi
python3 - "$work/result.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"median {r['median'] * 1000:6.2f} ms  mean {r['mean'] * 1000:6.2f} ms  {r['command']}")
PY
