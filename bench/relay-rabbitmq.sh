#!/usr/bin/env bash
# bench/relay-rabbitmq.sh: the repeater into a RabbitMQ stream against a
# direct publisher with the same client code and in-flight window, in one
# run (issue 32, item 6).
#
#   direct    loadgen rmq-publish (the sink's own client,
#             app_event_repeater::sink::rabbitmq_stream::client, one named
#             producer, --inflight N unconfirmed, publish frames of up to
#             256 KiB as the sink batches) -> RabbitMQ
#   repeater  loadgen sse -> app-event-repeater run --sinkprotocol
#             rabbitmq-stream --inflight N --overflow block -> RabbitMQ
#
# One private RabbitMQ node (Debian's rabbitmq-server, bench/lib.sh's
# rabbitmq_start: its own name, epmd, free ports, data under a temp dir) is
# started once per invocation, and every run publishes into a stream of its
# own, deleted once read back: a stream is RabbitMQ's unit of storage (its
# own writer process and segment files), so a fresh stream is a fresh
# store, while a node's start costs 7-25 s of this 2-core machine, more
# than a run. Drift of the node across runs falls on both paths alike: the
# runs alternate. The stream is named bench/NNN (as long as the default
# topic bench/seq, so the default event stays 148 bytes); the repeater
# names its stream after the topic, so the source sends that topic.
#
# Both paths are timed alike, by the node: once the run is over,
# `loadgen rmq-read` reads the stream back and takes each numbered event's
# store time (its chunk's timestamp, the writer's clock, in ms). Rate =
# numbered events stored per second, from the first to the last. Nothing
# polls either path while it runs, except the repeater's /metrics every
# 0.5 s to see that it is done (the figures do not depend on when that
# check runs). Each path sends WARMUP warm-up events (numbered 0) first;
# the repeater's source sends its warm-up only once the repeater has one
# event confirmed (loadgen sse --ready-file), so that neither path's
# figures include its start.
#
# Cases, each RUNS times, alternating the paths: saturate SIZE, as fast as
# the path goes, COUNT events (LARGE_COUNT for payloads over 4 KiB: 50,000,
# more than relay-nats.sh's 20,000, as RabbitMQ stores 16 KiB events at
# about 1 GB/s here, and the chunk timestamps are ms), for
# every SIZE in SIZES: events/s and MB/s of payload; lost and duplicated
# numbers; the CPU time per event of the publishing process (loadgen
# rmq-publish, or the repeater), and of all three processes (the
# publisher, the repeater's source and the node, each over its run): on a
# 2-core machine they share the cores, so what the repeater path costs in
# all bounds its rate.
#
# Usage: bench/relay-rabbitmq.sh [--no-build]
# Environment: RUNS (5), COUNT (200000), LARGE_COUNT (50000), SIZES
# ("0 16384"; 0 = loadgen's default payload, 148 bytes), WARMUP (2000),
# INFLIGHT (1000), OUT (JSON-lines results file), BIN (where loadgen and
# app-event-repeater are; target/release), REPEATER_ARGS (extra arguments
# for the repeater), PATHS ("direct repeater"; also repeater-text: the same
# source as plain SSE, `event: TOPIC`, relayed as text, `--topic-from event
# --payload text`).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=1
RUNS=${RUNS:-5}
COUNT=${COUNT:-200000}
LARGE_COUNT=${LARGE_COUNT:-50000}
SIZES=${SIZES:-0 16384}
WARMUP=${WARMUP:-2000}
INFLIGHT=${INFLIGHT:-1000}
REPEATER_ARGS=${REPEATER_ARGS:-}
PATHS=${PATHS:-direct repeater}
for arg in "$@"; do
    case $arg in
        --no-build) BUILD=0 ;;
        *) echo "relay-rabbitmq.sh: unknown argument '$arg'; usage: bench/relay-rabbitmq.sh [--no-build]" >&2; exit 2 ;;
    esac
done
[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ] || {
    echo "relay-rabbitmq.sh: /usr/lib/rabbitmq/bin/rabbitmq-server not found; install it (apt-get install rabbitmq-server)" >&2
    exit 1
}
# relay_prepare (BIN, LOADGEN, REPEATER, OUT, WORK), run_repeater,
# run_repeater_text and relay_table, into SINK_ARGS (set below).
. "$ROOT/bench/relay-broker.sh"
relay_prepare relay-rabbitmq curl jq time
# (all stopped at exit).
. "$ROOT/bench/lib.sh"

# run_direct DIR COUNT STREAM SIZE: writes DIR/cpu (CPU seconds).
run_direct() {
    local dir=$1
    /usr/bin/time -f '%U %S' -o "$dir/time" \
        "$LOADGEN" rmq-publish --port "$RMQ_PORT" --inflight "$INFLIGHT" --topic "$3" \
        --count "$2" --warmup "$WARMUP" --size "$4" >"$dir/pub.json" 2>"$dir/pub.err" || {
        echo "relay-rabbitmq.sh: loadgen rmq-publish failed: $(tail -n 3 "$dir/pub.err")" >&2
        exit 1
    }
    awk '{ printf "%.3f", $1 + $2 }' "$dir/time" >"$dir/cpu"
}

# before_run DIR TOPIC: nothing; the stream is created by its publisher.
before_run() { :; }

# read_back DIR STREAM COUNT: the stream read back into DIR/read.json,
# then deleted (a run leaves nothing behind on the node).
read_back() {
    "$LOADGEN" rmq-read --port "$RMQ_PORT" --stream "$2" --expect "$3" \
        --timeout 300 --delete >"$1/read.json" 2>"$1/read.err" || {
        echo "relay-rabbitmq.sh: loadgen rmq-read failed: $(tail -n 3 "$1/read.err")" >&2
        exit 1
    }
}

echo "relay-rabbitmq.sh: $(date -u +%FT%TZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg), RabbitMQ $(dpkg-query -W -f '${Version}' rabbitmq-server 2>/dev/null || echo unknown), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); results in $OUT" >&2
rabbitmq_start "$WORK/rabbitmq"
# The VM itself, exec'd by the scripts (its CPU is the node's).
BROKER_PID=$RMQ_PID
echo "relay-rabbitmq.sh: RabbitMQ node: pid $RMQ_PID ($(cat "/proc/$RMQ_PID/comm")), stream port $RMQ_PORT" >&2
SINK_ARGS=(--sinkprotocol rabbitmq-stream --sink "rabbitmq-stream://127.0.0.1:$RMQ_PORT")
for size in $SIZES; do
    for run in $(seq 1 "$RUNS"); do
        for path in $PATHS; do
            run_one "$path" "$size" "$run"
        done
    done
done
rabbitmq_stop
echo "relay-rabbitmq.sh: done, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# The table: medians per path and size, each repeater path against direct.
relay_table "$OUT"
echo "results: $OUT"
