#!/usr/bin/env bash
# bench/relay-nats.sh: the repeater into NATS JetStream at QoS 1 against a
# direct JetStream publisher with the same in-flight window, in one run
# (issue 14).
#
#   direct    loadgen nats-publish (async-nats, --inflight N unacknowledged
#             publishes, each with a Nats-Msg-Id) -> nats-server -js
#   repeater  loadgen sse (saturating) -> app-event-repeater run
#             --sinkprotocol nats --qos 1 --inflight N -> nats-server -js
#
# Every run starts a fresh `nats-server -js` (127.0.0.1, free port, file
# store in a temp dir) and publishes COUNT numbered events into the stream
# EVENTS (subjects bench, bench.>; 2 min duplicate window). The figure is
# acknowledged events/s: for direct, from the first numbered publish to the
# last acknowledgement (loadgen's own span); for the repeater, from the
# moment WARMUP events are acknowledged to the moment all are, read from its
# /metrics every 20 ms. Medians of RUNS runs, alternating the two paths.
#
# Usage: bench/relay-nats.sh [--no-build]
# Environment: RUNS (5), COUNT (50000), WARMUP (2000), INFLIGHT (1000),
# SIZE (0 = loadgen's default payload), OUT (JSON-lines results file), BIN
# (where loadgen and app-event-repeater are; target/release).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=1
RUNS=${RUNS:-5}
COUNT=${COUNT:-50000}
WARMUP=${WARMUP:-2000}
INFLIGHT=${INFLIGHT:-1000}
SIZE=${SIZE:-0}
for arg in "$@"; do
    case $arg in
        --no-build) BUILD=0 ;;
        *) echo "relay-nats.sh: unknown argument '$arg'; usage: bench/relay-nats.sh [--no-build]" >&2; exit 2 ;;
    esac
done
command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ] || {
    echo "relay-nats.sh: nats-server not found; install it (apt-get install nats-server)" >&2
    exit 1
}
NATS_SERVER=$(command -v nats-server || echo /usr/sbin/nats-server)
command -v curl >/dev/null || { echo "relay-nats.sh: curl not found (apt-get install curl)" >&2; exit 1; }
if [ "$BUILD" = 1 ]; then
    cargo build --release -q -p app-bench-loadgen -p app-event-repeater
fi
BIN=${BIN:-$ROOT/target/release}
LOADGEN=$BIN/loadgen
REPEATER=$BIN/app-event-repeater
mkdir -p "$ROOT/target/bench"
OUT=${OUT:-$ROOT/target/bench/relay-nats-$(date -u +%Y%m%dT%H%M%SZ).jsonl}
: >"$OUT"
WORK=$(mktemp -d /tmp/app-relay-nats.XXXXXX)
# PIDS, stop_all (also at exit), wait_port.
. "$ROOT/bench/lib.sh"

# start_server DIR: a fresh nats-server -js; sets NATS_PORT.
start_server() {
    NATS_PORT=$($LOADGEN port)
    "$NATS_SERVER" -js -a 127.0.0.1 -p "$NATS_PORT" -sd "$1/js" >"$1/nats.log" 2>&1 &
    PIDS+=($!)
    wait_port "$NATS_PORT"
}

# The repeater's events_acked_total, from its API socket.
acked() {
    curl -s --max-time 2 --unix-socket "$1" http://x/metrics |
        awk '/^app_event_repeater_events_acked_total / { print $2 }'
}

now_s() { date +%s.%N; }

run_direct() {
    local dir=$WORK/direct-$1
    mkdir -p "$dir"
    start_server "$dir"
    "$LOADGEN" nats-publish --server "nats://127.0.0.1:$NATS_PORT" --inflight "$INFLIGHT" \
        --count "$COUNT" --warmup 0 --size "$SIZE" >"$dir/pub.json"
    jq -c --argjson run "$1" '{path: "direct", run: $run, rate: .rate, acked: .acked, count: .count}' "$dir/pub.json" >>"$OUT"
    stop_all
}

run_repeater() {
    local dir=$WORK/repeater-$1
    mkdir -p "$dir/run" "$dir/data"
    start_server "$dir"
    local port total
    port=$($LOADGEN port)
    total=$((COUNT + WARMUP))
    # Warm-up events are numbered 0 (one SSE id: stored once); the
    # numbered ones follow at once, as fast as the repeater reads.
    "$LOADGEN" sse --listen "127.0.0.1:$port" --count "$COUNT" --rate 0 --warmup "$WARMUP" \
        --size "$SIZE" >/dev/null 2>"$dir/sse.err" &
    PIDS+=($!)
    wait_port "$port"
    APP_RUNTIME_DIR=$dir/run APP_DATA_DIR=$dir/data "$REPEATER" run --name bench \
        --source "http://127.0.0.1:$port" --sinkprotocol nats --sink "nats://127.0.0.1:$NATS_PORT" \
        --qos 1 --inflight "$INFLIGHT" --overflow block --allowall --checkpoint off \
        2>"$dir/repeater.err" &
    PIDS+=($!)
    local sock=$dir/run/plugins/bench.sock n=0 t0="" t1="" a0=0 deadline
    deadline=$(($(date +%s) + 300))
    while :; do
        n=$(acked "$sock" || true)
        n=${n:-0}
        if [ -z "$t0" ] && [ "${n%.*}" -ge "$WARMUP" ]; then t0=$(now_s) a0=${n%.*}; fi
        if [ "${n%.*}" -ge "$total" ]; then t1=$(now_s); break; fi
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "relay-nats.sh: the repeater acknowledged $n of $total within 300 s" >&2
            cat "$dir/repeater.err" >&2
            exit 1
        fi
        sleep 0.02
    done
    local rate
    rate=$(awk -v a="$a0" -v b="$total" -v t0="$t0" -v t1="$t1" 'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }')
    echo "{\"path\":\"repeater\",\"run\":$1,\"rate\":$rate,\"acked\":${n%.*},\"count\":$COUNT}" >>"$OUT"
    stop_all
}

command -v jq >/dev/null || { echo "relay-nats.sh: jq not found (apt-get install jq)" >&2; exit 1; }
for run in $(seq 1 "$RUNS"); do
    run_direct "$run"
    run_repeater "$run"
done

median() { jq -s --arg p "$1" '[.[] | select(.path == $p) | .rate] | sort | .[(length - 1) / 2 | floor]' "$OUT"; }
DIRECT=$(median direct)
REPEATED=$(median repeater)
echo "| path | events/s (median of $RUNS, $COUNT events, --inflight $INFLIGHT) |"
echo "|---|---|"
echo "| direct async-nats JetStream publisher | $DIRECT |"
echo "| repeater (SSE -> JetStream, QoS 1) | $REPEATED |"
awk -v d="$DIRECT" -v r="$REPEATED" 'BEGIN { printf "repeater / direct = %.0f%%\n", 100 * r / d }'
echo "results: $OUT"
