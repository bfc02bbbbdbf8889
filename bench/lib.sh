# shellcheck shell=bash
# bench/lib.sh: what the benchmarks share. Source it after setting WORK
# (a temp dir, removed at exit).
#
#   PIDS+=($!)       remember a background process; stop_all stops them all
#   wait_port P      wait until 127.0.0.1:P accepts connections (10 s at most)
#   need_hyperfine   install hyperfine with apt-get where it is missing
#   app_release      APP (another build to measure), or else a release build
#                    of app made now, in APP
#   app_dirs         app's data, config, runtime and cache dirs under $WORK
#   cpu_s PID        CPU seconds (user + system) PID has used so far
#   rabbitmq_start D a private RabbitMQ node (stream plugin) in dir D;
#                    sets RMQ_PORT (its stream port); rabbitmq_stop ends it
#                    (also at exit; stop_all leaves it up)

PIDS=()
CLK_TCK=$(getconf CLK_TCK)

cpu_s() {
    awk -v tck="$CLK_TCK" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / tck }' "/proc/$1/stat"
}

stop_all() {
    local p
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}
trap 'stop_all; rabbitmq_stop; rm -rf "$WORK"' EXIT

wait_port() {
    for _ in $(seq 1 500); do
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

# A RabbitMQ node of the benchmark's own, never the machine's shared one
# (5672/5552): a private name, cookie and epmd (a process of ours, so it
# goes with the run; the node is told not to start one of its own, a
# daemon that would outlive the run), free ports on 127.0.0.1, the stream plugin from an
# enabled-plugins file, data and logs in the dir given. Debian's
# /usr/lib/rabbitmq/bin/rabbitmq-server with RUNNING_UNDER_SYSTEMD execs
# the VM, so the pid kept is the node's own. Run as root, the node runs as
# the `rabbitmq` user (as Debian runs it; its files belong to that user),
# so the dir is handed to it. The same settings as tests/it/common/rabbitmq.rs
# and bench/chaos/src/rabbitmq.rs.
RMQ_SERVER=/usr/lib/rabbitmq/bin/rabbitmq-server
RMQ_PID=
RMQ_EPMD_PID=

need_rabbitmq() {
    [ -x "$RMQ_SERVER" ] || {
        echo "$(basename "$0"): $RMQ_SERVER not found; install it (apt-get install rabbitmq-server)" >&2
        exit 1
    }
    command -v epmd >/dev/null || { echo "$(basename "$0"): epmd not found (apt-get install erlang-base)" >&2; exit 1; }
}

rabbitmq_start() {
    local dir=$1 amqp dist epmd tag as=()
    need_rabbitmq
    mkdir -p "$dir/mnesia" "$dir/log"
    amqp=$($LOADGEN port)
    dist=$($LOADGEN port)
    epmd=$($LOADGEN port)
    RMQ_PORT=$($LOADGEN port)
    tag=bench-$$-$RMQ_PORT
    printf '%s\n' "listeners.tcp.1 = 127.0.0.1:$amqp" "stream.listeners.tcp.1 = 127.0.0.1:$RMQ_PORT" \
        "stream.advertised_host = 127.0.0.1" "stream.advertised_port = $RMQ_PORT" \
        "log.console = false" "log.file.level = warning" >"$dir/rabbit.conf"
    echo '[rabbitmq_stream].' >"$dir/enabled_plugins"
    : >"$dir/env.conf"
    if [ "$(id -u)" = 0 ]; then
        id rabbitmq >/dev/null 2>&1 || { echo "$(basename "$0"): running as root, but there is no rabbitmq user to run the node as" >&2; exit 1; }
        chown -R rabbitmq:rabbitmq "$dir"
        # Every dir above it must let that user through (mktemp's are 0700).
        local up=$dir
        while up=$(dirname "$up") && [ "$up" != / ]; do chmod o+x "$up"; [ "$up" = "$WORK" ] && break; done
        as=(setpriv --reuid rabbitmq --regid rabbitmq --init-groups)
    fi
    epmd -address 127.0.0.1 -port "$epmd" >"$dir/epmd.log" 2>&1 &
    RMQ_EPMD_PID=$!
    wait_port "$epmd"
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$dir" LANG=C.UTF-8 RUNNING_UNDER_SYSTEMD=true \
        RABBITMQ_NODENAME="$tag@localhost" RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 \
        RABBITMQ_NODE_PORT="$amqp" RABBITMQ_DIST_PORT="$dist" \
        ERL_EPMD_PORT="$epmd" ERL_EPMD_ADDRESS=127.0.0.1 \
        RABBITMQ_MNESIA_BASE="$dir/mnesia" RABBITMQ_LOG_BASE="$dir/log" \
        RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins" RABBITMQ_CONFIG_FILE="$dir/rabbit" \
        RABBITMQ_CONF_ENV_FILE="$dir/env.conf" RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config" \
        RABBITMQ_PID_FILE="$dir/rabbit.pid" \
        RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-setcookie $tag -start_epmd false -kernel inet_dist_use_interface {127,0,0,1}" \
        "${as[@]}" "$RMQ_SERVER" </dev/null >"$dir/stdout.txt" 2>&1 &
    # Not in PIDS: stop_all (between runs) leaves the node up.
    RMQ_PID=$!
    # About 7 s on a quiet 2-core machine, 25 s on a loaded one.
    for _ in $(seq 1 1200); do
        if ! kill -0 "$RMQ_PID" 2>/dev/null; then
            echo "$(basename "$0"): the RabbitMQ node exited while starting:" >&2
            tail -n 20 "$dir/stdout.txt" "$dir"/log/*.log >&2 2>/dev/null || true
            exit 1
        fi
        if (exec 3<>"/dev/tcp/127.0.0.1/$RMQ_PORT") 2>/dev/null; then return 0; fi
        sleep 0.1
    done
    echo "$(basename "$0"): the RabbitMQ node opened no stream port within 120 s" >&2
    tail -n 20 "$dir/stdout.txt" >&2 || true
    exit 1
}

# Stops the node (SIGTERM: it shuts down cleanly; SIGKILL after 30 s) and
# its epmd, each waited for.
rabbitmq_stop() {
    if [ -n "$RMQ_PID" ]; then
        kill "$RMQ_PID" 2>/dev/null || true
        for _ in $(seq 1 300); do kill -0 "$RMQ_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$RMQ_PID" 2>/dev/null || true
        wait "$RMQ_PID" 2>/dev/null || true
    fi
    if [ -n "$RMQ_EPMD_PID" ]; then
        kill "$RMQ_EPMD_PID" 2>/dev/null || true
        wait "$RMQ_EPMD_PID" 2>/dev/null || true
    fi
    RMQ_PID='' RMQ_EPMD_PID=''
}
