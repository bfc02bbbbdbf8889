# bench/lib.sh: what the benchmarks share. Source it after setting WORK
# (a temp dir, removed at exit).
#
#   PIDS+=($!)       remember a background process; stop_all stops them all
#   wait_port P      wait until 127.0.0.1:P accepts connections (10 s at most)
#   need_hyperfine   install hyperfine with apt-get where it is missing
#   app_release      APP (another build to measure), or else a release build
#                    of app made now, in APP
#   app_dirs         app's data, config, runtime and cache dirs under $WORK

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

need_hyperfine() {
    if ! command -v hyperfine >/dev/null; then
        echo "bench: installing hyperfine" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq hyperfine >/dev/null
    fi
}

app_release() {
    if [ -z "${APP:-}" ]; then
        cargo build --release --bin app --quiet
        APP="$PWD/target/release/app"
    fi
}

app_dirs() {
    mkdir -p "$WORK/data" "$WORK/config" "$WORK/run" "$WORK/cache"
    export APP_DATA_DIR="$WORK/data" APP_CONFIG_DIR="$WORK/config" APP_RUNTIME_DIR="$WORK/run" APP_CACHE_DIR="$WORK/cache"
}
