#!/usr/bin/env bash
# bench/relay-kafka.sh: the repeater into a Kafka topic against a direct
# producer with the same client library, settings and in-flight window, in
# one run (issue 32, item 6).
#
#   direct    loadgen kafka-publish (librdkafka through the rdkafka crate,
#             the sink's settings: idempotent, acks=all, murmur2 keys,
#             --inflight N unacknowledged) -> the broker
#   repeater  loadgen sse -> app-event-repeater run --sink kafka://…
#             --inflight N --overflow block -> the broker
#
# The broker is tansu (a Kafka-protocol broker; `cargo install tansu
# --locked --features dynostore,libsql`), one per invocation, on a free port
# with its storage in a temp dir (TANSU_STORAGE: sqlite, durable, the
# default; or memory). Every run produces into a topic of its own,
# bench.NNN, made beforehand with one partition (for both paths alike; the
# repeater then finds it there), so each run starts on an empty log. The
# runs alternate, so the broker's drift falls on both paths alike.
#
# Both paths are timed alike: once the run is over, `loadgen kafka-read`
# reads the topic back and takes each numbered event's record timestamp
# (CreateTime, set by librdkafka when the producer took the record, in ms).
# Rate = numbered events per second, from the first to the last. Each path
# sends WARMUP warm-up events (numbered 0) first; the repeater's source
# sends its warm-up only once the repeater has one event acknowledged.
#
# Cases, each RUNS times, alternating the paths: saturate SIZE, as fast as
# the path goes, COUNT events (LARGE_COUNT for payloads over 4 KiB), for
# every SIZE in SIZES: events/s and MB/s of payload; lost and duplicated
# numbers; the CPU time per event of the producing process (loadgen
# kafka-publish, or the repeater), and of all three processes (the
# producer, the repeater's source and the broker).
#
# Usage: bench/relay-kafka.sh [--no-build]
# Environment: RUNS (5), COUNT (200000), LARGE_COUNT (20000), SIZES
# ("0 16384"; 0 = loadgen's default payload, 148 bytes), WARMUP (2000),
# INFLIGHT (1000), OUT (JSON-lines results file), BIN (where loadgen and
# app-event-repeater are; target/release), REPEATER_ARGS (extra arguments
# for the repeater), PATHS ("direct repeater"; also repeater-text),
# TANSU (the broker's binary; tansu on PATH or in ~/.cargo/bin),
# TANSU_STORAGE (sqlite or memory).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=1
RUNS=${RUNS:-5}
COUNT=${COUNT:-200000}
LARGE_COUNT=${LARGE_COUNT:-20000}
TANSU_STORAGE=${TANSU_STORAGE:-sqlite}
SIZES=${SIZES:-0 16384}
WARMUP=${WARMUP:-2000}
INFLIGHT=${INFLIGHT:-1000}
REPEATER_ARGS=${REPEATER_ARGS:-}
PATHS=${PATHS:-direct repeater}
for arg in "$@"; do
    case $arg in
        --no-build) BUILD=0 ;;
        *) echo "relay-kafka.sh: unknown argument '$arg'; usage: bench/relay-kafka.sh [--no-build]" >&2; exit 2 ;;
    esac
done
TANSU=${TANSU:-$(command -v tansu || echo "${CARGO_HOME:-$HOME/.cargo}/bin/tansu")}
[ -x "$TANSU" ] || {
    echo "relay-kafka.sh: tansu not found; install it (cargo install tansu --locked --features dynostore,libsql)" >&2
    exit 1
}
# relay_prepare (BIN, LOADGEN, REPEATER, OUT, WORK), run_repeater,
# run_repeater_text and relay_table, into SINK_ARGS (set below).
. "$ROOT/bench/relay-broker.sh"
relay_prepare relay-kafka curl jq time
# PIDS, stop_all, wait_port, cpu_s (all stopped at exit).
. "$ROOT/bench/lib.sh"

# run_direct DIR COUNT STREAM SIZE: writes DIR/cpu (CPU seconds).
run_direct() {
    local dir=$1
    /usr/bin/time -f '%U %S' -o "$dir/time" \
        "$LOADGEN" kafka-publish --brokers "127.0.0.1:$KAFKA_PORT" --inflight "$INFLIGHT" --topic "$3" \
        --kafka-topic "${3//\//.}" --count "$2" --warmup "$WARMUP" --size "$4" >"$dir/pub.json" 2>"$dir/pub.err" || {
        echo "relay-kafka.sh: loadgen kafka-publish failed: $(tail -n 3 "$dir/pub.err")" >&2
        exit 1
    }
    awk '{ printf "%.3f", $1 + $2 }' "$dir/time" >"$dir/cpu"
}

# before_run DIR TOPIC: the run's Kafka topic (TOPIC, / as .), made for
# both paths alike with one partition (the repeater then finds it there).
before_run() {
    "$TANSU" topic create "${2//\//.}" --partitions 1 --broker "tcp://127.0.0.1:$KAFKA_PORT" >"$1/topic.out" 2>&1 || {
        echo "relay-kafka.sh: tansu topic create failed: $(tail -n 3 "$1/topic.out")" >&2
        exit 1
    }
}

# read_back DIR TOPIC COUNT: the topic read back into DIR/read.json.
read_back() {
    "$LOADGEN" kafka-read --brokers "127.0.0.1:$KAFKA_PORT" --topic "${2//\//.}" --expect "$3" \
        --timeout 300 >"$1/read.json" 2>"$1/read.err" || {
        echo "relay-kafka.sh: loadgen kafka-read failed: $(tail -n 3 "$1/read.err")" >&2
        exit 1
    }
}

echo "relay-kafka.sh: $(date -u +%FT%TZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), $("$TANSU" --version 2>/dev/null || echo tansu), storage $TANSU_STORAGE, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); results in $OUT" >&2
KAFKA_PORT=$($LOADGEN port)
case $TANSU_STORAGE in
    # A path relative to its working directory ($WORK, below).
    sqlite) storage="sqlite://tansu.db" ;;
    memory) storage="memory://tansu/" ;;
    *) echo "relay-kafka.sh: TANSU_STORAGE=$TANSU_STORAGE: give sqlite or memory" >&2; exit 2 ;;
esac
(cd "$WORK" && exec "$TANSU" broker --listener-url "tcp://127.0.0.1:$KAFKA_PORT" --advertised-listener-url "tcp://127.0.0.1:$KAFKA_PORT" \
    --storage-engine "$storage" >"$WORK/tansu.log" 2>&1) &
# Not in PIDS: stop_all (between runs) leaves the broker up; the trap ends it.
KAFKA_PID=$!
BROKER_PID=$KAFKA_PID
trap 'stop_all; kill "$KAFKA_PID" 2>/dev/null; rm -rf "$WORK"' EXIT
wait_port "$KAFKA_PORT"
echo "relay-kafka.sh: tansu: pid $KAFKA_PID, port $KAFKA_PORT" >&2
SINK_ARGS=(--sink "kafka://127.0.0.1:$KAFKA_PORT")
for size in $SIZES; do
    for run in $(seq 1 "$RUNS"); do
        for path in $PATHS; do
            run_one "$path" "$size" "$run"
        done
    done
done
echo "relay-kafka.sh: done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The table: medians per path and size, each repeater path against direct.
relay_table "$OUT"
echo "results: $OUT"
