# shellcheck shell=bash
# bench/relay-broker.sh: the repeater path and the results table that
# relay-rabbitmq.sh and relay-kafka.sh share (the sink is the difference).
# Source it first (it sources bench/relay-prepare.sh); call relay_prepare
# NAME curl jq time, then source bench/lib.sh (which needs WORK);
# run_repeater needs WARMUP, INFLIGHT, REPEATER_ARGS and SINK_ARGS (an
# array: the repeater's sink flags) set, relay_table RUNS.
#
#   relay_prepare NAME TOOLS    (bench/relay-prepare.sh) checks the tools;
#                               builds loadgen and the repeater (release)
#                               unless BUILD=0; sets BIN, LOADGEN,
#                               REPEATER, OUT and WORK
#   repeater_metric SOCK NAME   a metric of the repeater's, from its socket
#   run_repeater DIR COUNT TOPIC SIZE
#                               loadgen sse -> the repeater -> SINK_ARGS;
#                               returns once every event is acknowledged;
#                               writes DIR/cpu and DIR/source_cpu (CPU s)
#   run_repeater_text ...       the same on a plain-SSE feed (`event: TOPIC`;
#                               --topic-from event --payload text)
#   run_one PATH SIZE RUN       one run of run_PATH and its JSON line in OUT
#   relay_table OUT             the Markdown table of OUT's JSON lines:
#                               medians per path and size against direct

. "$ROOT/bench/relay-prepare.sh"

repeater_metric() {
    curl -s --max-time 2 --unix-socket "$1" http://x/metrics |
        awk -v m="app_event_repeater_$2" '$1 == m { print $2 }'
}

run_repeater_text() {
    FEED_SSE=--event-name FEED_RUN="--topic-from event --payload text" run_repeater "$@"
}

run_repeater() {
    local dir=$1 count=$2 port pid me
    me=$(basename "$0")
    mkdir -p "$dir/run" "$dir/data"
    port=$($LOADGEN port)
    # Events numbered 0 every 10 ms until the ready file exists (the
    # repeater has one acknowledged: source, repeater and broker are up),
    # then the warm-up, then the numbered ones.
    # shellcheck disable=SC2086 # FEED_SSE is a word or none
    "$LOADGEN" sse --listen "127.0.0.1:$port" --count "$count" --warmup "$WARMUP" --topic "$3" \
        --size "$4" --ready-file "$dir/ready" ${FEED_SSE:-} >/dev/null 2>"$dir/sse.err" &
    local sse=$!
    PIDS+=("$sse")
    wait_port "$port"
    # shellcheck disable=SC2086 # REPEATER_ARGS and FEED_RUN are lists of words
    APP_RUNTIME_DIR=$dir/run APP_DATA_DIR=$dir/data APP_CONFIG_DIR=$dir "$REPEATER" run --name bench \
        --source "http://127.0.0.1:$port" "${SINK_ARGS[@]}" --inflight "$INFLIGHT" --overflow block \
        --allowall --checkpoint off ${FEED_RUN:-} $REPEATER_ARGS 2>"$dir/repeater.err" &
    pid=$!
    PIDS+=("$pid")
    local sock=$dir/run/plugins/bench.sock acked received last=-1 deadline
    deadline=$(($(date +%s) + 60))
    until [ "$(repeater_metric "$sock" events_acked_total 2>/dev/null || echo 0)" -ge 1 ] 2>/dev/null; do
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "$me: the repeater had nothing acknowledged within 60 s" >&2
            tail -n 20 "$dir/repeater.err" >&2
            exit 1
        fi
        sleep 0.1
    done
    touch "$dir/ready"
    # Done when every event it received (the ready ones, the warm-up and
    # all numbered ones at least) is acknowledged, and nothing more came
    # in 0.5 s (a saturating source never pauses that long before its end).
    deadline=$(($(date +%s) + 600))
    while :; do
        acked=$(repeater_metric "$sock" events_acked_total || true)
        received=$(repeater_metric "$sock" events_received_total || true)
        acked=${acked:-0} received=${received:-0}
        if [ "$acked" -ge "$((count + WARMUP + 1))" ] && [ "$acked" = "$received" ] && [ "$received" = "$last" ]; then
            break
        fi
        last=$received
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "$me: the repeater has $acked of $((count + WARMUP + 1)) events acknowledged after 600 s" >&2
            tail -n 20 "$dir/repeater.err" >&2
            exit 1
        fi
        sleep 0.5
    done
    cpu_s "$pid" >"$dir/cpu"
    cpu_s "$sse" >"$dir/source_cpu"
}

# run_one PATH SIZE RUN: one run into a topic of its own, bench/NNN
# (before_run DIR TOPIC prepares the broker for it, read_back DIR TOPIC
# COUNT writes DIR/read.json, both the script's), and its line in $OUT;
# BROKER_PID is the broker's process, whose CPU over the run is counted.
N=0
run_one() {
    local path=$1 size=$2 run=$3 count=$COUNT topic node0 node1
    local dir=$WORK/$path-$size-$run
    mkdir -p "$dir"
    [ "$size" -gt 4096 ] && count=$LARGE_COUNT
    N=$((N + 1))
    topic=$(printf 'bench/%03d' "$N")
    before_run "$dir" "$topic"
    echo 0 >"$dir/source_cpu"
    node0=$(cpu_s "$BROKER_PID")
    "run_${path//-/_}" "$dir" "$count" "$topic" "$size"
    # The broker's CPU over the run (before the read back, which costs it too).
    node1=$(cpu_s "$BROKER_PID")
    stop_all
    read_back "$dir" "$topic" "$count"
    jq -c --arg path "$path" --argjson size "$size" --argjson run "$run" --arg stream "$topic" \
        --argjson cpu "$(cat "$dir/cpu")" --argjson events "$((count + WARMUP))" \
        --argjson source "$(cat "$dir/source_cpu")" --argjson node "$(awk -v a="$node0" -v b="$node1" 'BEGIN { printf "%.3f", b - a }')" \
        '{path: $path, kind: "saturate", size: $size, run: $run, stream: $stream, count: .expected,
          rate: .rate, bytes: .payload_bytes[1], mbps: (.rate * .payload_bytes[1] / 1e6),
          p50_ms: ((.latency_us.p50 // 0) / 1000), p99_ms: ((.latency_us.p99 // 0) / 1000),
          missing: .missing, duplicates: .duplicates, cpu_us_per_event: ($cpu * 1e6 / $events),
          source_cpu_us_per_event: ($source * 1e6 / $events), node_cpu_us_per_event: ($node * 1e6 / $events),
          all_cpu_us_per_event: (($cpu + $source + $node) * 1e6 / $events)}' \
        "$dir/read.json" | tee -a "$OUT" >&2
    rm -rf "$dir"
}

relay_table() {
    jq -rs '
      def median: sort | .[(length - 1) / 2 | floor];
      def fmt: . * 100 | round / 100;
      group_by(.size) | .[] |
      (map(select(.path == "direct"))) as $d | ($d | map(.rate) | median) as $dr |
      . as $case | ["repeater", "repeater-text"][] as $p |
      ($case | map(select(.path == $p))) as $r | select($r | length > 0) |
      ($r | map(.rate) | median) as $rr |
      def cpu($runs): ($runs | map(.cpu_us_per_event) | median | fmt);
      def all($runs): "\($runs | map(.all_cpu_us_per_event) | median | fmt) (\($runs | map(.source_cpu_us_per_event) | median | fmt) + \(cpu($runs)) + \($runs | map(.node_cpu_us_per_event) | median | fmt))";
      "| saturate, \($case[0].bytes) B | \($p) | \($dr | round) ev/s, \($d | map(.mbps) | median | fmt) MB/s | \($rr | round) ev/s, \($r | map(.mbps) | median | fmt) MB/s | \(100 * $rr / $dr | round)% | \(cpu($d)) / \(cpu($r)) | \(all($d)) / \(all($r)) | \($d | map(.missing) | add) / \($r | map(.missing) | add) | \($d | map(.duplicates) | add) / \($r | map(.duplicates) | add) |"
      ' "$1" | {
        echo "| case (medians of $RUNS) | path | direct | that path | vs direct | CPU µs/event of the publisher, direct / path | CPU µs/event in all (source + publisher + broker), direct / path | lost, direct / path | duplicated, direct / path |"
        echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
        cat
    }
}
