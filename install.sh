#!/usr/bin/env bash
# Installs `app` and every shipped plugin (app-event-time, app-event-repeater,
# app-event-repeater-manage, app-listener-tracer, …) into one directory, so that
# `app <plugin>` finds the shipped plugins beside the `app` binary.
#
#   ./install.sh                 # into ~/.cargo/bin (or $CARGO_HOME/bin)
#   ./install.sh --prefix DIR    # into DIR/bin
#
# One build of the whole workspace; `cargo install --path .` alone would
# install only `app`.
set -euo pipefail
cd "$(dirname "$0")"

bindir="${CARGO_HOME:-$HOME/.cargo}/bin"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) bindir="${2:?--prefix needs a directory}/bin"; shift 2 ;;
    --prefix=*) bindir="${1#--prefix=}/bin"; shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1'; see ./install.sh --help" >&2; exit 2 ;;
  esac
done

cargo build --release --locked --workspace --bins
mkdir -p "$bindir"
# app_fetch downloads for `app plugin install`; it must sit beside app.
bins=(target/release/app target/release/app_fetch)
for f in target/release/app-*; do
  # Only executables, not the .d dependency files cargo leaves beside them.
  [ -f "$f" ] && [ -x "$f" ] && bins+=("$f")
done
install -m 0755 "${bins[@]}" "$bindir/"
echo "installed into $bindir: ${bins[*]##*/}"
case ":$PATH:" in
  *":$bindir:"*) ;;
  *) echo "note: $bindir is not on your PATH; add it, e.g. export PATH=\"$bindir:\$PATH\"" ;;
esac
