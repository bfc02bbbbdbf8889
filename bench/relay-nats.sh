#!/usr/bin/env bash
# bench/relay-nats.sh: the repeater into NATS JetStream at QoS 1 against a
# direct JetStream publisher with the same in-flight window, in one run
# (issues 14 and 24).
#
#   direct    loadgen nats-publish (async-nats, --inflight N unacknowledged
#             publishes, each with a Nats-Msg-Id) -> nats-server -js
#   repeater  loadgen sse -> app-event-repeater run --sinkprotocol nats
#             --qos 1 --inflight N -> nats-server -js
#
# Every run starts a fresh `nats-server -js` (127.0.0.1, free port, file
# store in a temp dir) and publishes WARMUP warm-up events (numbered 0, one
# message id: stored once) then the numbered ones into the stream EVENTS.
# Both paths are timed alike, by the server: once the run is over,
# `loadgen nats-read` reads the stream back and takes each numbered event's
# store time. Rate = numbered events stored per second, from the first to
# the last; latency = store time minus the send time the generator wrote
# into the event. Nothing polls either path while it runs, except a check
# of the server's /jsz every 0.5 s to see that the repeater is done (the
# figures do not depend on when that check runs). The repeater's source
# sends its warm-up only once the repeater has one event acknowledged
# (loadgen sse --ready-file), so that neither path's figures include its
# start.
#
# Cases, each RUNS times, alternating direct and repeater:
#   saturate SIZE   as fast as the path goes, COUNT events (LARGE_COUNT for
#                   payloads over 4 KiB), for every SIZE in SIZES: events/s
#                   and MB/s of payload
#   latency RATE    LAT_COUNT events at RATE/s, for every RATE in LAT_RATES:
#                   p50/p99 latency to the store, and p99 added over direct
# Also: lost and duplicated numbers, and the CPU time per event of the
# publishing process (loadgen nats-publish, or the repeater).
#
# Usage: bench/relay-nats.sh [--no-build]
# Environment: RUNS (5), COUNT (200000), LARGE_COUNT (20000), SIZES
# ("0 16384"; 0 = loadgen's default payload, 148 bytes), LAT_RATES
# ("1000 10000"), LAT_COUNT (20000), KINDS ("saturate latency"), WARMUP
# (2000), INFLIGHT (1000), OUT (JSON-lines results file), BIN (where
# loadgen and app-event-repeater are; target/release), REPEATER_ARGS (extra
# arguments for the repeater), PATHS ("direct repeater repeater-text";
# repeater-text: the same source as plain SSE, `event: TOPIC` and the data
# relayed as text, `--topic-from event --payload text`).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=1
RUNS=${RUNS:-5}
COUNT=${COUNT:-200000}
LARGE_COUNT=${LARGE_COUNT:-20000}
SIZES=${SIZES:-0 16384}
LAT_RATES=${LAT_RATES:-1000 10000}
LAT_COUNT=${LAT_COUNT:-20000}
KINDS=${KINDS:-saturate latency}
WARMUP=${WARMUP:-2000}
INFLIGHT=${INFLIGHT:-1000}
REPEATER_ARGS=${REPEATER_ARGS:-}
PATHS=${PATHS:-direct repeater repeater-text}
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
# BIN, LOADGEN, REPEATER, OUT and WORK.
. "$ROOT/bench/relay-prepare.sh"
relay_prepare relay-nats curl jq time
# PIDS, stop_all (also at exit), wait_port.
. "$ROOT/bench/lib.sh"

# start_server DIR: a fresh nats-server -js; sets NATS_PORT.
start_server() {
    NATS_PORT=$($LOADGEN port)
    MON_PORT=$($LOADGEN port)
    "$NATS_SERVER" -js -a 127.0.0.1 -p "$NATS_PORT" -m "$MON_PORT" -sd "$1/js" >"$1/nats.log" 2>&1 &
    PIDS+=($!)
    wait_port "$NATS_PORT"
}

# The repeater's events_acked_total, from its API socket.
acked() {
    curl -s --max-time 2 --unix-socket "$1" http://x/metrics |
        awk '/^app_event_repeater_events_acked_total / { print $2 }'
}

# Messages the server's JetStream holds (its monitoring port).
stored() {
    curl -s --max-time 2 "http://127.0.0.1:$MON_PORT/jsz" | jq -r '.messages // 0'
}

# run_direct DIR COUNT RATE SIZE: writes DIR/cpu (CPU seconds).
run_direct() {
    local dir=$1
    /usr/bin/time -f '%U %S' -o "$dir/time" \
        "$LOADGEN" nats-publish --server "nats://127.0.0.1:$NATS_PORT" --inflight "$INFLIGHT" \
        --count "$2" --rate "$3" --warmup "$WARMUP" --size "$4" >"$dir/pub.json" 2>"$dir/pub.err"
    awk '{ printf "%.3f", $1 + $2 }' "$dir/time" >"$dir/cpu"
}

# run_repeater_text DIR COUNT RATE SIZE: run_repeater on a plain-SSE feed
# (`event: bench/seq` on every event; --topic-from event --payload text:
# no JSON pass; issue 29).
run_repeater_text() {
    FEED_SSE=--event-name FEED_RUN="--topic-from event --payload text" run_repeater "$@"
}

# run_repeater DIR COUNT RATE SIZE: writes DIR/cpu (CPU seconds).
run_repeater() {
    local dir=$1 count=$2 port pid
    mkdir -p "$dir/run" "$dir/data"
    port=$($LOADGEN port)
    # Events numbered 0 every 10 ms until the ready file exists (the
    # repeater has one acknowledged: source, repeater and stream are up),
    # then the warm-up, then the numbered ones.
    "$LOADGEN" sse --listen "127.0.0.1:$port" --count "$count" --rate "$3" --warmup "$WARMUP" \
        --size "$4" --ready-file "$dir/ready" ${FEED_SSE:-} >/dev/null 2>"$dir/sse.err" &
    PIDS+=($!)
    wait_port "$port"
    # shellcheck disable=SC2086 # REPEATER_ARGS and FEED_RUN are lists of words
    APP_RUNTIME_DIR=$dir/run APP_DATA_DIR=$dir/data "$REPEATER" run --name bench \
        --source "http://127.0.0.1:$port" --sinkprotocol nats --sink "nats://127.0.0.1:$NATS_PORT" \
        --qos 1 --inflight "$INFLIGHT" --overflow block --allowall --checkpoint off ${FEED_RUN:-} $REPEATER_ARGS \
        2>"$dir/repeater.err" &
    pid=$!
    PIDS+=($pid)
    local sock=$dir/run/plugins/bench.sock n=0 deadline
    deadline=$(($(date +%s) + 60))
    until [ "$(acked "$sock" 2>/dev/null || echo 0)" -ge 1 ] 2>/dev/null; do
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "relay-nats.sh: the repeater acknowledged nothing within 60 s" >&2
            cat "$dir/repeater.err" >&2
            exit 1
        fi
        sleep 0.1
    done
    touch "$dir/ready"
    # Done when the stream holds every numbered event and the warm-up one
    # (all events numbered 0 share one message id).
    deadline=$(($(date +%s) + 600))
    while :; do
        n=$(stored || true)
        n=${n:-0}
        if [ "$n" -ge "$((count + 1))" ]; then break; fi
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "relay-nats.sh: the stream holds $n of $((count + 1)) events after 600 s" >&2
            cat "$dir/repeater.err" >&2
            exit 1
        fi
        sleep 0.5
    done
    cpu_s "$pid" >"$dir/cpu"
}

# run_one PATH KIND SIZE RATE RUN: one run and its line in $OUT.
run_one() {
    local path=$1 kind=$2 size=$3 rate=$4 run=$5 count
    local dir=$WORK/$path-$kind-$size-$rate-$run
    mkdir -p "$dir"
    count=$COUNT
    if [ "$kind" = latency ]; then count=$LAT_COUNT; elif [ "$size" -gt 4096 ]; then count=$LARGE_COUNT; fi
    start_server "$dir"
    "run_${path//-/_}" "$dir" "$count" "$rate" "$size"
    "$LOADGEN" nats-read --server "nats://127.0.0.1:$NATS_PORT" --stream EVENTS --expect "$count" \
        --timeout 300 >"$dir/read.json"
    stop_all
    rm -rf "$dir/js"
    jq -c --arg path "$path" --arg kind "$kind" --argjson size "$size" --argjson rate "$rate" \
        --argjson run "$run" --argjson cpu "$(cat "$dir/cpu")" --argjson events "$((count + WARMUP))" \
        '{path: $path, kind: $kind, size: $size, target_rate: $rate, run: $run, count: .expected,
          rate: .rate, bytes: .payload_bytes[1], mbps: (.rate * .payload_bytes[1] / 1e6),
          p50_ms: (.latency_us.p50 / 1000), p99_ms: (.latency_us.p99 / 1000),
          missing: .missing, duplicates: .duplicates, cpu_us_per_event: ($cpu * 1e6 / $events)}' \
        "$dir/read.json" | tee -a "$OUT" >&2
}

echo "relay-nats.sh: $(date -u +%FT%TZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $("$NATS_SERVER" --version 2>&1 | head -n 1), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); results in $OUT" >&2
for kind in $KINDS; do
    if [ "$kind" = saturate ]; then cases=$SIZES; else cases=$LAT_RATES; fi
    for c in $cases; do
        for run in $(seq 1 "$RUNS"); do
            for path in $PATHS; do
                if [ "$kind" = saturate ]; then
                    run_one "$path" saturate "$c" 0 "$run"
                else
                    run_one "$path" latency 0 "$c" "$run"
                fi
            done
        done
    done
done
echo "relay-nats.sh: done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The table: medians per path and case, each repeater path against direct.
jq -rs '
  def median: sort | .[(length - 1) / 2 | floor];
  def fmt: . * 100 | round / 100;
  group_by([.kind, .size, .target_rate]) | .[] |
  (map(select(.path == "direct"))) as $d |
  ($d | map(.rate) | median) as $dr | ($d | map(.p99_ms) | median) as $dp |
  . as $case | ["repeater", "repeater-text"][] as $p |
  ($case | map(select(.path == $p))) as $r | select($r | length > 0) |
  ($r | map(.rate) | median) as $rr | ($r | map(.p99_ms) | median) as $rp |
  if $case[0].kind == "saturate" then
    "| saturate, \($case[0].bytes) B | \($p) | \($dr | round) ev/s, \($d | map(.mbps) | median | fmt) MB/s | \($rr | round) ev/s, \($r | map(.mbps) | median | fmt) MB/s | \(100 * $rr / $dr | round)% | \($d | map(.cpu_us_per_event) | median | fmt) / \($r | map(.cpu_us_per_event) | median | fmt) | \($d | map(.missing) | add) / \($r | map(.missing) | add) | \($d | map(.duplicates) | add) / \($r | map(.duplicates) | add) |"
  else
    "| \($case[0].target_rate)/s, \($case[0].bytes) B | \($p) | p50 \($d | map(.p50_ms) | median | fmt), p99 \($dp | fmt) ms | p50 \($r | map(.p50_ms) | median | fmt), p99 \($rp | fmt) ms | p99 added \($rp - $dp | fmt) ms | \($d | map(.cpu_us_per_event) | median | fmt) / \($r | map(.cpu_us_per_event) | median | fmt) | \($d | map(.missing) | add) / \($r | map(.missing) | add) | \($d | map(.duplicates) | add) / \($r | map(.duplicates) | add) |"
  end' "$OUT" | {
    echo "| case (medians of $RUNS) | path | direct | that path | vs direct | CPU µs/event, direct / path | lost, direct / path | duplicated, direct / path |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    cat
}
echo "results: $OUT"
