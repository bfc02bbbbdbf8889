#!/usr/bin/env bash
# A throwaway Debian system booted under a real systemd, for testing the
# package's units (tests/it/systemd_booted/). Needs root, debootstrap
# (package debootstrap), systemd-nspawn (package systemd-container), unshare
# and nsenter (util-linux), and Debian's archive once per target directory.
#
#   packaging/systemd-guest.sh root       # makes the root once, prints its path
#   packaging/systemd-guest.sh boot DIR   # boots a fresh system in DIR (foreground)
#   packaging/systemd-guest.sh run DIR CMD [ARG]...   # runs CMD in it
#   packaging/systemd-guest.sh down DIR   # stops it, removes its cgroups
#
# root: `debootstrap --variant=minbase bookworm` with systemd, the broker
# (mosquitto and its clients) and curl, made once under
# $CARGO_TARGET_DIR/systemd-guest/ (target/ by default) and reused while its
# package list stays the same. Exit 3 when Debian's archive cannot be reached.
#
# boot: an overlay over that root (its upper layer in DIR, so every boot
# starts clean and the root stays as made), in a private mount namespace (the
# overlay goes with it), then `systemd-nspawn --boot --private-network`
# (its brokers cannot meet the host's) run from a cgroup of its own, made
# under both /sys/fs/cgroup/systemd and /sys/fs/cgroup/unified on a hybrid
# hierarchy (without one, nspawn puts its payload at the top of the host's).
# Writes DIR/nspawn.pid and the console to DIR/console.log; stays in the
# foreground until the guest powers off. Up when `run DIR systemctl
# is-system-running --wait` says running. With APP_GUEST_OWNER=PID it is
# taken down (as by `down`) within a second of that process's end.
#
# run: nsenter into every namespace of the guest's init (found as the
# pid 1 of a nested pid namespace whose ancestor is DIR's nspawn).
#
# down: SIGTERM to nspawn (the guest powers off), SIGKILL to whatever is left
# in its cgroups after 3 s, then removes them. Safe to repeat.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="${CARGO_TARGET_DIR:-$here/../target}"
cache="$target/systemd-guest"
mirror="${APP_GUEST_MIRROR:-http://deb.debian.org/debian}"
packages=systemd,systemd-sysv,dbus,adduser,mosquitto,mosquitto-clients,curl

die() { echo "systemd-guest: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 is missing (apt-get install $2)"; }

make_root() {
  need debootstrap debootstrap
  [ "$(id -u)" = 0 ] || die "needs root (debootstrap)"
  mkdir -p "$cache"
  exec 9>"$cache/lock"
  flock -w 600 9 || die "another run has held $cache/lock for 10 minutes"
  local root="$cache/bookworm" stamp="$cache/bookworm.packages"
  if [ -d "$root" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$packages" ]; then
    echo "$root"
    return
  fi
  if ! curl -fsS --max-time 15 -o /dev/null "$mirror/dists/bookworm/Release"; then
    echo "systemd-guest: cannot reach Debian's archive at $mirror (set APP_GUEST_MIRROR to another)" >&2
    exit 3
  fi
  rm -rf "$root" "$root.new" "$stamp"
  local t0=$SECONDS
  if ! debootstrap --variant=minbase --include="$packages" bookworm "$root.new" "$mirror" \
      >"$cache/debootstrap.log" 2>&1; then
    tail -n 20 "$cache/debootstrap.log" >&2
    die "debootstrap failed (the whole log: $cache/debootstrap.log)"
  fi
  # Nothing the tests do needs a login prompt on the console, and the
  # broker's default listener (localhost:1883) is what they use.
  ln -sf /dev/null "$root.new/etc/systemd/system/console-getty.service"
  echo app-guest > "$root.new/etc/hostname"
  rm -f "$root.new/var/cache/apt/archives/"*.deb
  mv "$root.new" "$root"
  echo "$packages" > "$stamp"
  echo "systemd-guest: made $root in $((SECONDS - t0)) s" >&2
  echo "$root"
}

cgroup_dirs() {
  local name="app-guest-$(basename "$1")"
  for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
    [ -f "$h/cgroup.procs" ] && echo "$h/$name"
  done
}

boot() {
  local dir="$1" root
  need systemd-nspawn systemd-container
  need unshare util-linux
  root="$(make_root)"
  mkdir -p "$dir/upper" "$dir/work" "$dir/merged"
  # With APP_GUEST_OWNER=PID, the guest goes when that process does (a test
  # killed before its clean-up): a watcher outside the guest's cgroups.
  if [ -n "${APP_GUEST_OWNER:-}" ]; then
    (
      while kill -0 "$APP_GUEST_OWNER" 2>/dev/null && kill -0 $$ 2>/dev/null; do sleep 1; done
      down "$dir"
      kill -0 "$APP_GUEST_OWNER" 2>/dev/null || rm -rf "$dir"
    ) </dev/null >/dev/null 2>&1 &
  fi
  # Our own cgroup, in each hierarchy nspawn looks at.
  for cg in $(cgroup_dirs "$dir"); do
    mkdir -p "$cg"
    echo $$ > "$cg/cgroup.procs"
  done
  echo $$ > "$dir/nspawn.pid"
  exec unshare -m --propagation private sh -c '
    set -e
    mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/upper,workdir=$2/work" "$2/merged"
    exec systemd-nspawn -q -D "$2/merged" --boot --register=no --keep-unit \
      --private-network --console=pipe -M "$3"
  ' boot "$root" "$dir" "guest$(basename "$dir" | tr -dc 'a-z0-9' | tail -c 8)" \
    </dev/null >"$dir/console.log" 2>&1
}

# The guest's init: pid 1 of a pid namespace nested in ours, started by
# the nspawn this DIR booted.
leader() {
  local dir="$1" nspawn status pid
  nspawn="$(cat "$dir/nspawn.pid" 2>/dev/null)" || return 1
  for status in /proc/[0-9]*/status; do
    pid="${status#/proc/}"; pid="${pid%/status}"
    # NSpid: <pid here> 1 (two levels: ours and the guest's).
    awk '/^NSpid:/ { exit !(NF == 3 && $3 == 1) }' "$status" 2>/dev/null || continue
    case " $(ancestors "$pid") " in *" $nspawn "*) echo "$pid"; return 0 ;; esac
  done
  return 1
}

ancestors() {
  local pid="$1" out=""
  while [ "$pid" -gt 1 ] 2>/dev/null; do
    pid="$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)" || break
    out="$out $pid"
  done
  echo "$out"
}

run() {
  local dir="$1"; shift
  local pid
  pid="$(leader "$dir")" || die "no guest is running in $dir"
  exec nsenter -t "$pid" -a -- "$@"
}

down() {
  local dir="$1" nspawn
  nspawn="$(cat "$dir/nspawn.pid" 2>/dev/null || true)"
  if [ -n "$nspawn" ] && kill -0 "$nspawn" 2>/dev/null; then
    kill -TERM "$nspawn" 2>/dev/null || true
    for _ in $(seq 30); do kill -0 "$nspawn" 2>/dev/null || break; sleep 0.1; done
  fi
  for cg in $(cgroup_dirs "$dir"); do
    [ -d "$cg" ] || continue
    for _ in $(seq 50); do
      procs="$(find "$cg" -name cgroup.procs -exec cat {} + 2>/dev/null)"
      [ -z "$procs" ] && break
      kill -KILL $procs 2>/dev/null || true
      sleep 0.1
    done
    find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
    [ ! -d "$cg" ] || die "cannot remove the cgroup $cg"
  done
}

case "${1:-}" in
  root) make_root ;;
  boot) [ $# = 2 ] || die "usage: boot DIR"; boot "$(realpath -m "$2")" ;;
  run) [ $# -ge 3 ] || die "usage: run DIR CMD [ARG]..."; dir="$2"; shift 2; run "$dir" "$@" ;;
  down) [ $# = 2 ] || die "usage: down DIR"; down "$(realpath -m "$2")" ;;
  -h|--help) sed -n '2,33p' "$0" ;;
  *) die "unknown command '${1:-}'; see $0 --help" ;;
esac
