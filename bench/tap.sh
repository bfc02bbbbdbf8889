#!/usr/bin/env bash
# bench/tap.sh: a live tap whose client never reads must not change the
# repeater's throughput (issue 33). Side by side in one run, interleaved:
#
#   none     loadgen sse -> app-event-repeater run -> mosquitto -> loadgen subscribe
#   stalled  the same, with one `GET /tap` open whose client never reads a
#            byte: its queue fills at once, and every event after that is
#            offered to it and skipped (counted in tap_skipped_total)
#
# Each run starts its own mosquitto (127.0.0.1, a free port), generator,
# repeater (`--allowall --overflow block`, an API on 127.0.0.1 for the tap)
# and subscriber. The tap is opened, and seen open in /metrics, before the
# subscriber starts, so every numbered event passes it. Delivered events/s
# are measured at the subscriber (first to last numbered event); CPU per
# event is the repeater's utime + stime over the run.
#
# Usage: bench/tap.sh [--no-build]
# Environment: RUNS (3 per case), COUNT (200000 events per run), QOS (0),
# WARMUP (2000), SIZE (0: loadgen's 148-byte event), BIN (where loadgen and
# app-event-repeater are; default target/release, or $CARGO_TARGET_DIR/release).
# About 30 s on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=1
RUNS=${RUNS:-3}
COUNT=${COUNT:-200000}
QOS=${QOS:-0}
WARMUP=${WARMUP:-2000}
SIZE=${SIZE:-0}
for arg in "$@"; do
    case $arg in
        --no-build) BUILD=0 ;;
        *) echo "tap.sh: unknown argument '$arg'; usage: bench/tap.sh [--no-build]" >&2; exit 2 ;;
    esac
done
for tool in mosquitto curl jq; do
    command -v $tool >/dev/null || { echo "tap.sh: $tool not found (apt-get install $tool)" >&2; exit 1; }
done
if [ "$BUILD" = 1 ]; then
    cargo build --release -q -p app-bench-loadgen -p app-event-repeater
fi
BIN=${BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release}
LOADGEN=$BIN/loadgen
REPEATER=$BIN/app-event-repeater
WORK=$(mktemp -d /tmp/app-tap-bench.XXXXXX)
# PIDS, stop_all (also at exit), wait_port.
. "$ROOT/bench/lib.sh"

# metric PORT NAME: one value of the repeater's /metrics.
metric() {
    curl -s --max-time 2 "http://127.0.0.1:$1/metrics" | awk -v m="app_event_repeater_$2" '$1 == m { print $2 }'
}

# wait_metric PORT NAME VALUE: until the metric has the value (10 s at most).
wait_metric() {
    local i
    for i in $(seq 1 500); do
        [ "$(metric "$1" "$2")" = "$3" ] && return 0
        sleep 0.02
    done
    echo "tap.sh: $2 never became $3" >&2
    return 1
}

# run_one CASE RUN: appends "CASE RUN RATE MISSING CPU_US_PER_EVENT SKIPPED"
# to $WORK/results (not printed into a $(…): its processes would escape the
# exit trap there).
run_one() {
    local case=$1 run=$2 dir=$WORK/$1-$2
    mkdir -p "$dir/run" "$dir/data"
    local port sse_port api_port
    port=$($LOADGEN port)
    sse_port=$($LOADGEN port)
    api_port=$($LOADGEN port)
    printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\n' "$port" >"$dir/mosquitto.conf"
    mosquitto -c "$dir/mosquitto.conf" >"$dir/broker.log" 2>&1 &
    PIDS+=($!)
    wait_port "$port"
    "$LOADGEN" sse --listen "127.0.0.1:$sse_port" --count "$COUNT" --rate 0 --warmup "$WARMUP" \
        --size "$SIZE" --ready-file "$dir/ready" >/dev/null 2>"$dir/sse.err" &
    PIDS+=($!)
    wait_port "$sse_port"
    # The tap's client may stall for the whole run: --request-timeout (the
    # API's write timeout) longer than a run, the same in both cases.
    APP_RUNTIME_DIR=$dir/run APP_DATA_DIR=$dir/data APP_CONFIG_DIR=$dir \
        "$REPEATER" run --name bench --source "http://127.0.0.1:$sse_port" \
        --sink "tcp://127.0.0.1:$port" --qos "$QOS" --allowall --overflow block --log 1 \
        --listen "127.0.0.1:$api_port" --request-timeout 10m 2>"$dir/repeater.err" &
    local pid=$!
    PIDS+=($pid)
    wait_port "$api_port"
    if [ "$case" = stalled ]; then
        # A tap whose client sends its request and never reads.
        exec 3<>"/dev/tcp/127.0.0.1/$api_port"
        printf 'GET /tap HTTP/1.1\r\nHost: bench\r\n\r\n' >&3
        wait_metric "$api_port" tap_clients 1
    fi
    "$LOADGEN" subscribe --broker "127.0.0.1:$port" --qos "$QOS" --expect "$COUNT" \
        --ready-file "$dir/ready" --idle 5 --timeout 300 >"$dir/sub.json" 2>"$dir/sub.err" &
    local sub=$!
    PIDS+=($sub)
    local i
    for i in $(seq 1 3000); do [ -e "$dir/ready" ] && break; sleep 0.02; done
    local cpu0 cpu1 skipped=0
    cpu0=$(cpu_s "$pid")
    wait "$sub" || true
    cpu1=$(cpu_s "$pid")
    if [ "$case" = stalled ]; then
        skipped=$(metric "$api_port" tap_skipped_total)
        [ "$(metric "$api_port" tap_clients)" = 1 ] || { echo "tap.sh: the stalled tap was closed during the run" >&2; exit 1; }
        exec 3>&-
    fi
    stop_all
    local rate missing
    rate=$(tail -n 1 "$dir/sub.json" | jq -r '.rate')
    missing=$(tail -n 1 "$dir/sub.json" | jq -r '.missing')
    local line
    line="$case $run $rate $missing $(awk -v a="$cpu0" -v b="$cpu1" -v n="$((COUNT + WARMUP))" 'BEGIN { printf "%.2f", (b - a) * 1e6 / n }') $skipped"
    echo "tap.sh: $line" >&2
    echo "$line" >>"$WORK/results"
}

echo "tap.sh: $(date -u +%FT%TZ), $(nproc) CPUs, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $RUNS runs per case of $COUNT events at QoS $QOS" >&2
for run in $(seq 1 "$RUNS"); do
    for case in none stalled; do
        run_one "$case" "$run"
    done
done

echo "| tap | delivered events/s (median) | runs | missing | repeater CPU µs/event (median) | tap events skipped |"
echo "|---|---|---|---|---|---|"
for case in none stalled; do
    awk -v c="$case" '
        $1 == c { n++; rate[n] = $3; runs = runs (runs ? ", " : "") $3; miss += $4; cpu[n] = $5; skip = skip (skip ? ", " : "") $6 }
        function median(a, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
            return a[int((n + 1) / 2)]
        }
        END { printf "| %s | %d | %s | %d | %.2f | %s |\n", c, median(rate, n), runs, miss, median(cpu, n), (c == "none" ? "–" : skip) }' "$WORK/results"
done
