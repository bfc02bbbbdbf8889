#!/usr/bin/env bash
# bench/chaos.sh: a chaos run in the manner of Jepsen around the event
# repeater (issue 19; docs/reliability.md, "Chaos runs").
#
# The driver (bench/chaos, binary `chaos`) starts a numbered source
# (loadgen sse), one repeater into mosquitto or two into a 3-node NATS
# JetStream cluster, a 3-node RabbitMQ cluster (streams of 3 replicas) or
# one tansu (a Kafka-protocol broker, SQLite storage), each repeater in a
# network namespace of its own; then,
# for CHAOS_SECONDS, applies faults drawn from a seeded random plan (SIGKILL
# and SIGSTOP of the repeaters, the source and a broker node; a partition
# or 30% packet loss between a repeater and the brokers; a full disk under
# the checkpoints) while routes change through the API; then counts what
# the broker holds against what the source really sent (its --sent-file;
# it keeps its numbering across its own restarts). Each kind of fault comes
# once first, so a run of 30 s or more applies all nine. The seed is printed first; the last line is
#   chaos: seed S, F faults, sent N, missing M, duplicates D (bound B)
# Exit 0: nothing missing, duplicates within the bound (Kafka: every copy
# under its event's one record key), the metrics identities exact, RSS
# bounded. 1: any of these failed. 2: a bad setting.
# 3: the run could not be set up. 130: interrupted (everything is stopped
# and removed first).
#
# Usage: bench/chaos.sh [--no-build]
# Environment (all optional):
#   CHAOS_SECONDS   how long faults are applied (60)
#   CHAOS_SEED      the plan's seed (default: fresh from the clock)
#   CHAOS_SINK      mqtt, nats, rabbitmq-stream or kafka (mqtt);
#                   rabbitmq-stream needs Debian's rabbitmq-server (its nodes
#                   are the run's own, never the machine's); kafka needs
#                   tansu on PATH or in ~/.cargo/bin (cargo install tansu
#                   --locked --features dynostore,libsql)
#   CHAOS_REPEATERS 1, or 2 with nats, rabbitmq-stream or kafka (there: 2,
#                   active-active)
#   CHAOS_RATE      events per second from the source (500)
#   CHAOS_BUFFER    the repeaters' --buffer (1000)
#   CHAOS_SETTLE    the end fails when the checkpoints stand still this long (120)
#   CHAOS_RSS_MIB   a repeater's RSS limit (64)
#   CHAOS_PROFILE   debug or release: which build to run (debug)
#   CHAOS_WORK      work directory, must not exist (/tmp/app-chaos-PID);
#                   removed after a passing run, kept after a failing one
#   CHAOS_REQUIRE_ALL  1: a kind of fault skipped or not applied fails the
#                   run (CI)
# Partitions and packet loss need root (network namespaces), and loss tc
# netem or, without it, nft (Debian package nftables); the disk-full fault
# needs mount. Where the machine refuses, the run says so at the start and
# skips that kind of fault.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=1
for arg in "$@"; do
    case $arg in
        --no-build) BUILD=0 ;;
        *) echo "chaos.sh: unknown argument '$arg'; usage: bench/chaos.sh [--no-build]" >&2; exit 2 ;;
    esac
done
PROFILE=${CHAOS_PROFILE:-debug}
case $PROFILE in
    debug) flag=() ;;
    release) flag=(--release) ;;
    *) echo "chaos.sh: CHAOS_PROFILE='$PROFILE': give debug or release" >&2; exit 2 ;;
esac
if [ "$BUILD" = 1 ]; then
    cargo build -q "${flag[@]}" -p app-bench-chaos -p app-bench-loadgen -p app-event-repeater
fi
# The driver runs app-event-repeater and loadgen from its own directory.
exec "${CARGO_TARGET_DIR:-$PWD/target}/$PROFILE/chaos"
