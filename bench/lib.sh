# bench/lib.sh: what the relay benchmarks share. Source it after setting
# WORK (a temp dir, removed at exit).
#
#   PIDS+=($!)     remember a background process; stop_all stops them all
#   wait_port P    wait until 127.0.0.1:P accepts connections (10 s at most)

PIDS=()

stop_all() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}
trap 'stop_all; rm -rf "$WORK"' EXIT

wait_port() {
    local i
    for i in $(seq 1 500); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.02
    done
    echo "$(basename "$0"): nothing listens on 127.0.0.1:$1 after 10 s" >&2
    return 1
}
