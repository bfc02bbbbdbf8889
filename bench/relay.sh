#!/usr/bin/env bash
# bench/relay.sh: issue 6's relay benchmark, in one run.
#
# Compares, on fresh mosquitto brokers (127.0.0.1, free ports,
# `max_queued_messages 0`, persistence off) with the same payload and QoS on
# every hop:
#   direct    loadgen publish -> broker B -> loadgen subscribe
#   bridge    loadgen publish -> broker A -> mosquitto bridge -> broker B -> subscribe
#   repeater  loadgen sse -> app-event-repeater run -> broker B -> subscribe
#   repeater-text  the same on a plain-SSE feed: `event: bench/seq` on every
#             event, the repeater run with --topic-from event --payload text
#             (no JSON pass; issue 29)
# For QoS 0 and 1: delivered events/s (median of RUNS saturation runs), latency
# p50/p99/p99.9 at 1,000 events/s, lost and duplicated events, peak RSS
# (VmHWM) and CPU time per event of the relay process (broker A for the
# bridge, the repeater, broker B for direct).
#
# Every run starts its own processes. Measuring starts only once the
# subscriber has received a warm-up event through every link (the generators
# send events numbered 0 until it has), then WARMUP more warm-up events go
# through before the numbered ones; only numbered events are counted.
#
# Usage: bench/relay.sh [--quick] [--no-build]
# Environment: RUNS (3), SAT_QOS0 (200000), SAT_QOS1 (100000) events per
# saturation run, LAT_COUNT (10000) events at LAT_RATE (1000)/s, WARMUP (2000),
# SIZE (payload bytes, 0 = loadgen's default), PATHS ("direct bridge repeater
# repeater-text"),
# KINDS ("saturate latency"; latency figures are medians over RUNS runs),
# QOS_LEVELS ("0 1"), OUT (the JSON-lines results file), REPEATER_ARGS
# ("--overflow block": a saturating source must be slowed down, not dropped),
# CHECKPOINT ("on"; "off" runs the repeater with `--checkpoint off`, to
# measure what the crash-safe checkpoint costs: docs/benchmarks.md),
# EXTRA (1: then also a saturation case with LARGE_SIZE (16384)-byte events,
# LARGE_COUNT (20000) per run, reported with MB/s, and a latency case at
# LAT_RATE2 (10000) events/s, LAT_COUNT2 (50000) events; each its own table;
# 0 skips them), RELAY_WRAPPER (a command the repeater runs under, e.g.
# "valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p": instructions
# per event, which the machine's load does not change), BIN (where loadgen
# and app-event-repeater are; target/release: another build's, to compare).
# Prints the Markdown table (`loadgen report OUT`) at the end.
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=1
RUNS=${RUNS:-3}
SAT_QOS0=${SAT_QOS0:-200000}
SAT_QOS1=${SAT_QOS1:-100000}
LAT_COUNT=${LAT_COUNT:-10000}
LAT_RATE=${LAT_RATE:-1000}
WARMUP=${WARMUP:-2000}
SIZE=${SIZE:-0}
PATHS=${PATHS:-direct bridge repeater repeater-text}
QOS_LEVELS=${QOS_LEVELS:-0 1}
KINDS=${KINDS:-saturate latency}
REPEATER_ARGS=${REPEATER_ARGS:---overflow block}
CHECKPOINT=${CHECKPOINT:-on}
EXTRA=${EXTRA:-1}
LARGE_SIZE=${LARGE_SIZE:-16384}
LARGE_COUNT=${LARGE_COUNT:-20000}
LAT_RATE2=${LAT_RATE2:-10000}
LAT_COUNT2=${LAT_COUNT2:-50000}
RELAY_WRAPPER=${RELAY_WRAPPER:-}
for arg in "$@"; do
    case $arg in
        --quick) RUNS=1 SAT_QOS0=20000 SAT_QOS1=10000 LAT_COUNT=2000 LARGE_COUNT=2000 LAT_COUNT2=5000 ;;
        --no-build) BUILD=0 ;;
        *) echo "relay.sh: unknown argument '$arg'; usage: bench/relay.sh [--quick] [--no-build]" >&2; exit 2 ;;
    esac
done

command -v mosquitto >/dev/null || {
    echo "relay.sh: mosquitto not found; install it (apt-get install mosquitto)" >&2
    exit 1
}
# BIN, LOADGEN, REPEATER, OUT and WORK.
. "$ROOT/bench/relay-prepare.sh"
relay_prepare relay
# PIDS, stop_all (also at exit), wait_port.
. "$ROOT/bench/lib.sh"

# start_broker DIR NAME PORT [BRIDGE_PORT QOS]: a mosquitto for this run.
start_broker() {
    local dir=$1 name=$2 port=$3
    {
        echo "listener $port 127.0.0.1"
        echo "allow_anonymous true"
        echo "persistence false"
        echo "max_queued_messages 0"
        # Without it mosquitto holds a small write back (Nagle) until the
        # subscriber's delayed ACK, up to 40 ms: at 10,000 events/s that was
        # the p99 of both paths (27 and 38 ms) and hid the relay's own.
        echo "set_tcp_nodelay true"
        echo "log_dest file $dir/$name.log"
        echo "log_type error"
        echo "log_type warning"
        if [ $# -ge 5 ]; then
            echo "connection bench-bridge"
            echo "address 127.0.0.1:$4"
            echo "topic bench/# out $5"
            echo "cleansession true"
            echo "bridge_protocol_version mqttv311"
            echo "notifications false"
            echo "restart_timeout 1"
        fi
    } >"$dir/$name.conf"
    mosquitto -c "$dir/$name.conf" >"$dir/$name.out" 2>&1 &
    PIDS+=($!)
    LAST_PID=$!
    wait_port "$port"
}

# The "cpu_s" a loadgen wrote in the last line of JSON file $1 (empty if none).
json_cpu() {
    tail -n 1 "$1" 2>/dev/null | sed -n 's/.*"cpu_s":\([0-9.]*\).*/\1/p'
}

# Peak resident set size of process $1, in kB.
rss_kb() {
    awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"
}

# Waits for file $1 (60 s at most).
wait_file() {
    local i
    for i in $(seq 1 3000); do
        [ -e "$1" ] && return 0
        sleep 0.02
    done
    echo "relay.sh: $1 did not appear within 60 s (a link is not up?)" >&2
    return 1
}

# run_one PATH QOS KIND RUN: one measured run; appends a JSON line to $OUT.
run_one() {
    local path=$1 qos=$2 kind=$3 run=$4
    local dir=$WORK/$path-$qos-$kind-$run
    mkdir -p "$dir/data" "$dir/run"
    local count rate
    if [ "$kind" = latency ]; then
        count=$LAT_COUNT rate=$LAT_RATE
    else
        rate=0
        if [ "$qos" = 0 ]; then count=$SAT_QOS0; else count=$SAT_QOS1; fi
    fi
    local gen=(--count "$count" --rate "$rate" --warmup "$WARMUP" --size "$SIZE" --ready-file "$dir/ready")
    local port_b relay_pid broker_b gen_pid others=()
    port_b=$($LOADGEN port)
    start_broker "$dir" broker-b "$port_b"
    relay_pid=$LAST_PID
    broker_b=$LAST_PID

    "$LOADGEN" subscribe --broker "127.0.0.1:$port_b" --qos "$qos" --expect "$count" \
        --ready-file "$dir/ready" --idle 5 --timeout 300 >"$dir/sub.json" 2>"$dir/sub.err" &
    local sub_pid=$!
    PIDS+=($sub_pid)
    sleep 0.2 # the subscription is in place before anything is published

    case $path in
        direct)
            "$LOADGEN" publish --broker "127.0.0.1:$port_b" --qos "$qos" "${gen[@]}" \
                >"$dir/pub.json" 2>"$dir/pub.err" &
            gen_pid=$!
            PIDS+=($!)
            ;;
        bridge)
            local port_a
            port_a=$($LOADGEN port)
            start_broker "$dir" broker-a "$port_a" "$port_b" "$qos"
            relay_pid=$LAST_PID
            others+=($LAST_PID)
            "$LOADGEN" publish --broker "127.0.0.1:$port_a" --qos "$qos" "${gen[@]}" \
                >"$dir/pub.json" 2>"$dir/pub.err" &
            gen_pid=$!
            PIDS+=($!)
            ;;
        repeater | repeater-text)
            local sse_port feed_sse=() feed_run=()
            if [ "$path" = repeater-text ]; then
                feed_sse=(--event-name)
                feed_run=(--topic-from event --payload text)
            fi
            sse_port=$($LOADGEN port)
            "$LOADGEN" sse --listen "127.0.0.1:$sse_port" "${gen[@]}" "${feed_sse[@]}" \
                >"$dir/sse.json" 2>"$dir/sse.err" &
            gen_pid=$!
            PIDS+=($!)
            wait_port "$sse_port"
            APP_RUNTIME_DIR=$dir/run APP_DATA_DIR=$dir/data APP_CONFIG_DIR=$dir \
                $RELAY_WRAPPER "$REPEATER" run --name bench --source "http://127.0.0.1:$sse_port" \
                --sink "tcp://127.0.0.1:$port_b" --qos "$qos" --allowall --log 1 --checkpoint "$CHECKPOINT" \
                "${feed_run[@]}" $REPEATER_ARGS \
                2>"$dir/repeater.err" &
            relay_pid=$!
            others+=($relay_pid)
            PIDS+=($relay_pid)
            ;;
    esac

    wait_file "$dir/ready"
    local cpu0 cpu1 rss
    cpu0=$(cpu_s "$relay_pid")
    wait "$sub_pid" || true
    cpu1=$(cpu_s "$relay_pid")
    rss=$(rss_kb "$relay_pid")
    # Every process of the path, over its whole life (start-up and
    # warm-up included): the subscriber and an exited publisher say
    # theirs ("cpu_s" in their JSON); null if one cannot be read.
    local parts=() p
    for p in "$broker_b" "${others[@]}"; do parts+=("$(cpu_s "$p")"); done
    if kill -0 "$gen_pid" 2>/dev/null; then
        parts+=("$(cpu_s "$gen_pid")")
    else
        parts+=("$(json_cpu "$dir/pub.json")")
    fi
    parts+=("$(json_cpu "$dir/sub.json")")
    local path_cpu
    path_cpu=$(printf '%s\n' "${parts[@]}" | awk '/^[0-9.]+$/ { t += $1; next } { bad = 1 } END { if (bad) print "null"; else printf "%.3f", t }')
    stop_all

    local sub
    sub=$(tail -n 1 "$dir/sub.json")
    [ -n "$sub" ] || sub=null
    printf '{"path":"%s","qos":%s,"kind":"%s","run":%s,"count":%s,"lat_rate":%s,"sub":%s,"relay":{"rss_kb":%s,"cpu_s":%s,"events":%s},"path_cpu_s":%s,"cores":%s}\n' \
        "$path" "$qos" "$kind" "$run" "$count" "$LAT_RATE" "$sub" "$rss" \
        "$(awk -v a="$cpu0" -v b="$cpu1" 'BEGIN { printf "%.3f", b - a }')" \
        "$((count + WARMUP))" "$path_cpu" "$(nproc)" >>"$OUT"
    echo "relay.sh: $path qos $qos $kind run $run: rss ${rss} kB, cpu $cpu0..$cpu1 s: $sub" >&2
}

{
    echo "relay.sh: $(date -u +%FT%TZ), $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(uname -sr)"
    echo "relay.sh: $(mosquitto -h 2>/dev/null | head -n 1), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    echo "relay.sh: RUNS=$RUNS SAT_QOS0=$SAT_QOS0 SAT_QOS1=$SAT_QOS1 LAT_COUNT=$LAT_COUNT@$LAT_RATE/s WARMUP=$WARMUP; results in $OUT"
} >&2

# Runs of the three paths are interleaved, so that a disturbance from the rest
# of the machine spreads over all of them rather than hitting one.
run_all() {
    for qos in $QOS_LEVELS; do
        for kind in $KINDS; do
            for run in $(seq 1 "$RUNS"); do
                for path in $PATHS; do
                    run_one "$path" "$qos" "$kind" "$run"
                done
            done
        done
    done
}

run_all
"$LOADGEN" report "$OUT"

# The extra cases (issue 24), each with its own results file and table:
# saturation with LARGE_SIZE-byte events (events/s and MB/s), and latency
# at LAT_RATE2 events/s.
if [ "$EXTRA" = 1 ]; then
    MAIN_OUT=$OUT
    if [[ " $KINDS " == *" saturate "* ]]; then
        echo "relay.sh: saturation with $LARGE_SIZE-byte events, $LARGE_COUNT per run" >&2
        OUT=${MAIN_OUT%.jsonl}-large.jsonl
        : >"$OUT"
        (KINDS=saturate SIZE=$LARGE_SIZE SAT_QOS0=$LARGE_COUNT SAT_QOS1=$LARGE_COUNT run_all)
        "$LOADGEN" report "$OUT"
    fi
    if [[ " $KINDS " == *" latency "* ]]; then
        echo "relay.sh: latency at $LAT_RATE2 events/s, $LAT_COUNT2 events per run" >&2
        OUT=${MAIN_OUT%.jsonl}-rate$LAT_RATE2.jsonl
        : >"$OUT"
        (KINDS=latency LAT_RATE=$LAT_RATE2 LAT_COUNT=$LAT_COUNT2 run_all)
        "$LOADGEN" report "$OUT"
    fi
fi
