# shellcheck shell=bash
# bench/relay-prepare.sh: the set-up every relay benchmark shares
# (relay.sh, relay-nats.sh, and relay-rabbitmq.sh and relay-kafka.sh
# through relay-broker.sh). Source it, then source bench/lib.sh (which
# needs WORK).
#
#   relay_prepare NAME [TOOL...]
#       checks each TOOL (curl, jq, time: /usr/bin/time) is there, saying
#       which package to install; builds loadgen and the repeater (release)
#       unless BUILD=0; sets BIN (target/release unless set), LOADGEN,
#       REPEATER, OUT (target/bench/NAME-TIME.jsonl unless set, emptied)
#       and WORK (a temp dir)

relay_prepare() {
    local name=$1 me tool
    shift
    me=$(basename "$0")
    for tool in "$@"; do
        case $tool in
            time) [ -x /usr/bin/time ] || { echo "$me: /usr/bin/time not found (apt-get install time)" >&2; exit 1; } ;;
            *) command -v "$tool" >/dev/null || { echo "$me: $tool not found (apt-get install $tool)" >&2; exit 1; } ;;
        esac
    done
    if [ "$BUILD" = 1 ]; then
        cargo build --release -q -p app-bench-loadgen -p app-event-repeater
    fi
    BIN=${BIN:-$ROOT/target/release}
    LOADGEN=$BIN/loadgen
    REPEATER=$BIN/app-event-repeater
    mkdir -p "$ROOT/target/bench"
    OUT=${OUT:-$ROOT/target/bench/$name-$(date -u +%Y%m%dT%H%M%SZ).jsonl}
    : >"$OUT"
    WORK=$(mktemp -d "/tmp/app-$name.XXXXXX")
}
