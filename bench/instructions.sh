#!/usr/bin/env bash
# bench/instructions.sh: the repeater's instructions per relayed event, per
# sink, against the baseline recorded in bench/baseline-instructions.txt: a
# regression guard that the machine's load does not change (issue 24).
#
# For each sink in SINKS it starts a fresh broker on 127.0.0.1 and relays
# WARMUP + COUNT events from `loadgen sse --rate 0` (saturating: the
# repeater always has a full buffer) through the repeater running under
# callgrind (TOOL=callgrind, the default: exact and load-independent, about
# a minute per sink) or `perf stat -e instructions:u` (TOOL=perf: seconds,
# but the count moves a few % with how events batch under the load of the
# moment). The end of a run is seen from outside the repeater (the MQTT
# subscriber has every event; the JetStream server's /jsz holds every
# event; the RabbitMQ stream's reader has every event), then the repeater
# gets SIGTERM and drains. The figure is the whole
# process's instructions (start-up and drain included, under 1% at 100,000
# events) divided by the events relayed.
#
#   mqtt0   --sink tcp://… --qos 0 (mosquitto; a loadgen subscriber counts)
#   mqtt1   --sink tcp://… --qos 1
#   nats1   --sinkprotocol nats --qos 1 (nats-server -js, JetStream acks)
#   rmq1    --sinkprotocol rabbitmq-stream (a private RabbitMQ node,
#           bench/lib.sh's rabbitmq_start; publisher confirms; a loadgen
#           rmq-read subscriber counts)
#   kafka1  --sink kafka://… (a tansu broker with SQLite storage; the
#           idempotent producer, acks=all; a loadgen kafka-read reader
#           counts). librdkafka's own threads are in the count.
#   SINK-text  the same, the source naming each event (`event: bench/seq`)
#              and the repeater taking it as is: --topic-from event
#              --payload text (no JSON pass; issue 29)
#
# Usage: bench/instructions.sh [--record] [--no-build]
#   --record    write the figures as the new baseline instead of comparing
# Environment: SINKS ("mqtt0 nats1"), COUNT (100000), WARMUP (2000), SIZE
# (0 = loadgen's 148-byte event; another size is compared with its own
# baseline line, SINK@SIZE), TOOL (callgrind | perf), TOLERANCE (3, in
# % over the baseline; perf needs about 10), BASELINE
# (bench/baseline-instructions.txt), KEEP (a directory to keep the callgrind
# profiles in, for callgrind_annotate).
# Exit status: 0 within the tolerance, 1 over it (or a run failed), 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=1
RECORD=0
SINKS=${SINKS:-mqtt0 nats1}
COUNT=${COUNT:-100000}
WARMUP=${WARMUP:-2000}
SIZE=${SIZE:-0}
TOOL=${TOOL:-callgrind}
TOLERANCE=${TOLERANCE:-3}
BASELINE=${BASELINE:-$ROOT/bench/baseline-instructions.txt}
KEEP=${KEEP:-}
for arg in "$@"; do
    case $arg in
        --record) RECORD=1 ;;
        --no-build) BUILD=0 ;;
        *) echo "instructions.sh: unknown argument '$arg'; usage: bench/instructions.sh [--record] [--no-build]" >&2; exit 2 ;;
    esac
done
case $TOOL in
    callgrind) command -v valgrind >/dev/null || { echo "instructions.sh: valgrind not found (apt-get install valgrind)" >&2; exit 1; } ;;
    perf) command -v perf >/dev/null || { echo "instructions.sh: perf not found (apt-get install linux-perf)" >&2; exit 1; } ;;
    *) echo "instructions.sh: TOOL must be callgrind or perf, not '$TOOL'" >&2; exit 2 ;;
esac
for tool in mosquitto curl jq; do
    command -v $tool >/dev/null || { echo "instructions.sh: $tool not found (apt-get install $tool)" >&2; exit 1; }
done
NATS_SERVER=$(command -v nats-server || echo /usr/sbin/nats-server)
[ -x "$NATS_SERVER" ] || { echo "instructions.sh: nats-server not found (apt-get install nats-server)" >&2; exit 1; }
if [ "$BUILD" = 1 ]; then
    cargo build --release -q -p app-bench-loadgen -p app-event-repeater
fi
BIN=${BIN:-$ROOT/target/release}
LOADGEN=$BIN/loadgen
REPEATER=$BIN/app-event-repeater
WORK=$(mktemp -d /tmp/app-instructions.XXXXXX)
# PIDS, stop_all (also at exit), wait_port.
. "$ROOT/bench/lib.sh"

# wait_until SECONDS CMD…: runs CMD every 0.5 s until it succeeds.
wait_until() {
    local deadline=$(($(date +%s) + $1))
    shift
    until "$@"; do
        if [ "$(date +%s)" -gt "$deadline" ]; then return 1; fi
        sleep 0.5
    done
}

# The JetStream server holds every event (the warm-up ones are stored once).
# shellcheck disable=SC2317 # called through wait_until
stream_full() {
    local n
    n=$(curl -s --max-time 2 "http://127.0.0.1:$1/jsz" | jq -r '.messages // 0')
    [ "${n:-0}" -ge "$2" ]
}

# measure SINK: writes the instructions of the repeater's whole run to
# $WORK/SINK/total.
measure() {
    local sink=${1%-text} dir=$WORK/$1 port sse_port mport
    mkdir -p "$dir/run" "$dir/data"
    port=$($LOADGEN port)
    local args=(--allowall --overflow block --checkpoint on --log 1) sse_args=()
    if [ "$1" != "$sink" ]; then
        args+=(--topic-from event --payload text)
        sse_args+=(--event-name)
    fi
    case $sink in
        mqtt0 | mqtt1)
            printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\n' "$port" >"$dir/mosquitto.conf"
            mosquitto -c "$dir/mosquitto.conf" >"$dir/broker.log" 2>&1 &
            PIDS+=($!)
            wait_port "$port"
            "$LOADGEN" subscribe --broker "127.0.0.1:$port" --qos "${sink#mqtt}" --expect "$COUNT" \
                --idle 600 --timeout 3600 >"$dir/sub.json" 2>"$dir/sub.err" &
            local sub=$!
            PIDS+=("$sub")
            sleep 0.3 # the subscription is in place before anything is published
            args+=(--sink "tcp://127.0.0.1:$port" --qos "${sink#mqtt}")
            ;;
        nats1)
            mport=$($LOADGEN port)
            "$NATS_SERVER" -js -a 127.0.0.1 -p "$port" -m "$mport" -sd "$dir/js" >"$dir/broker.log" 2>&1 &
            PIDS+=($!)
            wait_port "$port"
            args+=(--sinkprotocol nats --sink "nats://127.0.0.1:$port" --qos 1)
            ;;
        rmq1)
            rabbitmq_start "$dir/rabbitmq"
            # The reader waits for the repeater to create the stream (made
            # here with other arguments, it would refuse every event:
            # RabbitMQ answers its create with a precondition failure).
            "$LOADGEN" rmq-read --port "$RMQ_PORT" --stream bench/seq --expect "$COUNT" --idle 3600 \
                --timeout 3600 >"$dir/read.json" 2>"$dir/read.err" &
            PIDS+=($!)
            args+=(--sinkprotocol rabbitmq-stream --sink "rabbitmq-stream://127.0.0.1:$RMQ_PORT")
            ;;
        kafka1)
            local tansu
            tansu=$(command -v tansu || echo "${CARGO_HOME:-$HOME/.cargo}/bin/tansu")
            [ -x "$tansu" ] || { echo "instructions.sh: tansu not found (cargo install tansu --locked --features dynostore,libsql)" >&2; exit 1; }
            # Its SQLite path is relative to its working directory.
            (cd "$dir" && exec "$tansu" broker --listener-url "tcp://127.0.0.1:$port" \
                --advertised-listener-url "tcp://127.0.0.1:$port" --storage-engine sqlite://tansu.db) \
                >"$dir/broker.log" 2>&1 &
            PIDS+=($!)
            wait_port "$port"
            # The reader waits for the topic the repeater creates.
            "$LOADGEN" kafka-read --brokers "127.0.0.1:$port" --topic bench.seq --expect "$COUNT" --idle 3600 \
                --timeout 3600 >"$dir/read.json" 2>"$dir/read.err" &
            PIDS+=($!)
            args+=(--sink "kafka://127.0.0.1:$port")
            ;;
        *) echo "instructions.sh: unknown sink '$1' (mqtt0, mqtt1, nats1, rmq1 or kafka1, each also with -text)" >&2; exit 2 ;;
    esac
    sse_port=$($LOADGEN port)
    "$LOADGEN" sse --listen "127.0.0.1:$sse_port" --count "$COUNT" --rate 0 --warmup "$WARMUP" \
        --size "$SIZE" "${sse_args[@]}" >/dev/null 2>"$dir/sse.err" &
    PIDS+=($!)
    wait_port "$sse_port"
    args+=(--source "http://127.0.0.1:$sse_port")
    local pid
    case $TOOL in
        callgrind)
            APP_RUNTIME_DIR=$dir/run APP_DATA_DIR=$dir/data APP_CONFIG_DIR=$dir \
                valgrind --tool=callgrind --dump-instr=no --callgrind-out-file="$dir/callgrind.out" \
                "$REPEATER" run --name bench "${args[@]}" 2>"$dir/repeater.err" &
            pid=$!
            ;;
        perf)
            APP_RUNTIME_DIR=$dir/run APP_DATA_DIR=$dir/data APP_CONFIG_DIR=$dir \
                perf stat -x, -e instructions:u -o "$dir/perf.csv" \
                "$REPEATER" run --name bench "${args[@]}" 2>"$dir/repeater.err" &
            pid=$!
            ;;
    esac
    PIDS+=("$pid")
    local ok=1
    case $sink in
        # The subscriber prints its summary once every event arrived.
        mqtt*) wait_until 3600 test -s "$dir/sub.json" || ok=0 ;;
        nats1) wait_until 3600 stream_full "$mport" "$((COUNT + 1))" || ok=0 ;;
        # The reader prints its summary once every event arrived.
        rmq1 | kafka1) wait_until 3600 test -s "$dir/read.json" || ok=0 ;;
    esac
    # SIGTERM to the repeater itself (perf's child), so that it drains and
    # the tool writes its count.
    local target=$pid
    [ "$TOOL" = perf ] && target=$(pgrep -P "$pid" | head -n 1)
    kill -TERM "$target" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    stop_all
    rabbitmq_stop
    if [ "$ok" = 0 ]; then
        echo "instructions.sh: $sink: the events did not all arrive within an hour" >&2
        tail -n 5 "$dir/repeater.err" >&2
        return 1
    fi
    if [ "${sink%?}" = mqtt ] || [ "$sink" = rmq1 ] || [ "$sink" = kafka1 ]; then
        local missing counted=$dir/sub.json
        [ "$sink" = rmq1 ] || [ "$sink" = kafka1 ] && counted=$dir/read.json
        missing=$(jq -r '.missing' "$counted")
        [ "$missing" = 0 ] || { echo "instructions.sh: $sink: $missing events missing" >&2; return 1; }
    fi
    case $TOOL in
        callgrind) awk '/^summary:/ { print $2 }' "$dir/callgrind.out" >"$dir/total" ;;
        perf) awk -F, '/instructions/ { print $1 }' "$dir/perf.csv" >"$dir/total" ;;
    esac
    if [ -n "$KEEP" ] && [ "$TOOL" = callgrind ]; then
        mkdir -p "$KEEP"
        cp "$dir/callgrind.out" "$KEEP/callgrind.$1.out"
    fi
}

echo "instructions.sh: $TOOL, $COUNT events + $WARMUP warm-up per sink, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)" >&2
status=0
results=()
for sink in $SINKS; do
    measure "$sink" || { stop_all; status=1; continue; }
    total=$(cat "$WORK/$sink/total")
    per=$((total / (COUNT + WARMUP)))
    # Another payload size is another figure: its own baseline line.
    key=$sink
    [ "$SIZE" = 0 ] || key="$sink@$SIZE"
    results+=("$key $TOOL $per")
    base=$(awk -v s="$key" -v t="$TOOL" '$1 == s && $2 == t { print $3 }' "$BASELINE" 2>/dev/null || true)
    if [ "$RECORD" = 1 ] || [ -z "$base" ]; then
        note="; no baseline for $key with $TOOL"
        [ -z "$base" ] || note="; baseline $base"
        echo "$key: $per instructions/event ($total in all)$note"
    else
        limit=$((base * (100 + TOLERANCE) / 100))
        verdict=ok
        if [ "$per" -gt "$limit" ]; then verdict="OVER the baseline by more than $TOLERANCE%"; status=1; fi
        echo "$key: $per instructions/event ($total in all); baseline $base, limit $limit: $verdict"
    fi
done
if [ "$RECORD" = 1 ] && [ "$status" = 0 ]; then
    {
        echo "# sink[@size] tool instructions-per-event: bench/instructions.sh --record, COUNT=$COUNT WARMUP=$WARMUP SIZE=$SIZE,"
        echo "# $(date -u +%F), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        [ -f "$BASELINE" ] && grep -v '^#' "$BASELINE" | while read -r s t n; do
            keep=1
            for r in "${results[@]}"; do
                [ "${r% *}" = "$s $t" ] && keep=0
            done
            # An `if`, not `&&`: a false test as the loop's last command
            # failed the pipeline, and `set -e` ended --record unwritten.
            if [ "$keep" = 1 ] && [ -n "$s" ]; then echo "$s $t $n"; fi
        done
        printf '%s\n' "${results[@]}"
    } >"$BASELINE.new"
    mv "$BASELINE.new" "$BASELINE"
    echo "instructions.sh: baseline written to $BASELINE"
fi
exit $status
