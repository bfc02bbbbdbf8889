#!/usr/bin/env bash
# Installs `app` into PREFIX/bin and the plugins shipped with it
# (app-event-time, app-event-repeater, app-event-repeater-manage,
# app-listener-tracer, …) and its helper app_fetch into PREFIX/libexec/app,
# where `app` finds them (relative to its own location, like git's
# libexec/git-core). Only that directory is trusted for shipped plugins, not
# the shared bin directory. The plugin SDK's source goes to PREFIX/share/app/sdk.
#
#   ./install.sh                 # PREFIX = $CARGO_HOME (~/.cargo): ~/.cargo/bin/app, ~/.cargo/libexec/app/
#   ./install.sh --prefix DIR    # DIR/bin/app, DIR/libexec/app/
#
# One build of what it installs (not the benchmarks or the man page
# generator), with the `source` profile: the release optimisation without
# the package's whole-program LTO (docs/benchmarks.md, "Build profiles"). `cargo install --path .` alone
# would install only `app`.
set -euo pipefail
cd "$(dirname "$0")"

prefix="${CARGO_HOME:-$HOME/.cargo}"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "install.sh: unknown argument '$1'; see ./install.sh --help" >&2; exit 2 ;;
  esac
done
bindir="$prefix/bin"
libexec="$prefix/libexec/app"

target="${CARGO_TARGET_DIR:-$PWD/target}"
out="$target/source"
# The Kafka sink's TLS: link the system's OpenSSL when its headers are
# there, rather than build a copy (about 3 minutes on 2 cores).
if [ -z "${OPENSSL_NO_VENDOR:-}" ] && pkg-config --exists openssl 2>/dev/null; then
  export OPENSSL_NO_VENDOR=1
fi
# librdkafka as the Kafka sink links it: the C library alone, not its C++
# wrapper (LIBSUBDIRS in its Makefile, set through GNU make's own
# GNUMAKEFLAGS as rdkafka-sys runs make with cargo's MAKEFLAGS): about 9 s
# of CPU less (docs/benchmarks.md, "Compiling less").
export GNUMAKEFLAGS="LIBSUBDIRS=src${GNUMAKEFLAGS:+ $GNUMAKEFLAGS}"
# librdkafka's configure adds -g whatever cargo's profile says, and cargo
# strips that debug information from the binaries again: -g0 (after -g on
# its command line; a CFLAGS of your own comes after it) skips making it.
# About 12 s of CPU less, the code unchanged (docs/benchmarks.md,
# "librdkafka without debug information").
export CFLAGS="-g0${CFLAGS:+ $CFLAGS}"
cargo build --profile source --locked --bins \
  -p app -p app-fetch -p app-event-repeater -p app-event-repeater-manage \
  -p app-event-time -p app-listener-tracer
mkdir -p "$bindir" "$libexec"
# app_fetch downloads for `app plugin install`; app looks for it in libexec.
shipped=("$out/app_fetch")
for f in "$out"/app-*; do
  # Only executables, not the .d dependency files cargo leaves beside them.
  [ -f "$f" ] && [ -x "$f" ] && shipped+=("$f")
done
install -m 0755 "$out/app" "$bindir/"
install -m 0755 "${shipped[@]}" "$libexec/"
# The plugin SDK's source, for `app plugin new --lang rust` skeletons to build
# against until app-plugin is on crates.io: the crate as it would be published
# (a standalone Cargo.toml, no workspace), unpacked in PREFIX/share/app/sdk.
sdkdir="$prefix/share/app/sdk"
rm -f "$target"/package/app-plugin-*.crate
cargo package -p app-plugin --no-verify --allow-dirty --quiet
crate=$(ls "$target"/package/app-plugin-*.crate | tail -n 1)
rm -rf "$sdkdir" && mkdir -p "$sdkdir"
tar -xzf "$crate" -C "$sdkdir" --strip-components=1
echo "installed app into $bindir"
echo "installed the plugin SDK's source into $sdkdir"
echo "installed into $libexec: ${shipped[*]##*/}"
# Earlier versions of this script put the shipped files beside app; there
# they would be found through PATH after the new ones: remove them.
for f in "${shipped[@]}"; do
  old="$bindir/${f##*/}"
  if [ -f "$old" ]; then
    rm -f "$old"
    echo "removed the copy an earlier install left at $old"
  fi
done
case ":$PATH:" in
  *":$bindir:"*) ;;
  *) echo "note: $bindir is not on your PATH; add it, e.g. export PATH=\"$bindir:\$PATH\"" ;;
esac
