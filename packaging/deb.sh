#!/usr/bin/env bash
# Builds the Debian package of app and prints its path:
#   target/debian/app_<version>_<arch>.deb
#
# It holds /usr/bin/app; the shipped plugins and app_fetch in
# /usr/libexec/app/ (where app finds and trusts them, as install.sh's
# PREFIX/libexec/app); man pages generated from the clap definitions
# (packaging/man); the plugin SDK's source in /usr/share/app/sdk (for
# `app plugin new --lang rust`); the bash, zsh and fish completions; the systemd units
# app-event-time.service and app-event-repeater@.service with their
# example options file (a conffile); the system user app (postinst, and
# sysusers.d); /usr/share/doc/app. See docs/operations.md.
#
#   packaging/deb.sh                 # one release build (fat LTO), then the package
#   APP_DEB_PROFILE=dev packaging/deb.sh       # a debug build instead (quick, large, for trying the package out)
#   APP_DEB_NO_BUILD=1 packaging/deb.sh        # package what the profile's directory holds
#
# Needs cargo, dpkg-deb and dpkg-shlibdeps (dpkg-dev), strip (binutils), gzip.
set -euo pipefail
cd "$(dirname "$0")/.."

case "${1:-}" in
  -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
  "") ;;
  *) echo "deb.sh: unknown argument '$1'; see packaging/deb.sh --help" >&2; exit 2 ;;
esac
for tool in cargo dpkg-deb dpkg-shlibdeps strip gzip; do
  command -v "$tool" >/dev/null || { echo "deb.sh: $tool is missing (apt-get install dpkg-dev binutils)" >&2; exit 1; }
done

profile="${APP_DEB_PROFILE:-release}"
target="${CARGO_TARGET_DIR:-$PWD/target}"
case "$profile" in
  dev) out="$target/debug" ;;
  release) out="$target/release" ;;
  *) out="$target/$profile" ;;
esac
# The Kafka sink's TLS links the system's OpenSSL (libssl3, found by
# dpkg-shlibdeps) when its headers are there, rather than a copy built in.
if [ -z "${OPENSSL_NO_VENDOR:-}" ] && pkg-config --exists openssl 2>/dev/null; then
  export OPENSSL_NO_VENDOR=1
fi
if [ "${APP_DEB_NO_BUILD:-}" != 1 ]; then
  # The shipped programs and the man page generator, not the benchmarks.
  cargo build --profile "$profile" --locked --bins \
    -p app -p app-fetch -p app-event-repeater -p app-event-repeater-manage \
    -p app-event-time -p app-listener-tracer -p app-mangen >&2
fi

version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"/\1/p' Cargo.toml)"
arch="$(dpkg --print-architecture)"
[ -n "$version" ] || { echo "deb.sh: no version in Cargo.toml's [workspace.package]" >&2; exit 1; }
mkdir -p "$target/debian"
deb="$target/debian/app_${version}_${arch}.deb"
work="$(mktemp -d "$target/debian/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT
root="$work/root"

# Programs, stripped (lintian wants no symbols and no .comment/.note).
install -d "$root/usr/bin" "$root/usr/libexec/app"
shipped=("$out/app_fetch")
for f in "$out"/app-*; do
  [ -f "$f" ] && [ -x "$f" ] && shipped+=("$f")
done
install -m 0755 "$out/app" "$root/usr/bin/app"
install -m 0755 "${shipped[@]}" "$root/usr/libexec/app/"
strip --strip-unneeded --remove-section=.comment --remove-section=.note \
  "$root/usr/bin/app" "$root"/usr/libexec/app/*

# Man pages from the clap definitions.
"$out/mangen" "$work/man" >/dev/null
install -d "$root/usr/share/man/man1" "$root/usr/share/man/man8"
for page in "$work"/man/*.1 "$work"/man/*.8; do
  section="${page##*.}"
  gzip -9n < "$page" > "$root/usr/share/man/man$section/${page##*/}.gz"
done
# One page for both units: the second name is a link to it.
ln -s app-event-repeater@.service.8.gz "$root/usr/share/man/man8/app-event-time.service.8.gz"

# The plugin SDK's source, which `app plugin new --lang rust` skeletons
# build against (their [patch.crates-io] names /usr/share/app/sdk, found
# beside /usr/bin/app) until app-plugin is on crates.io: the crate as it
# would be published, a standalone Cargo.toml, as install.sh installs it.
rm -f "$target"/package/app-plugin-*.crate
cargo package -p app-plugin --no-verify --allow-dirty --quiet >&2
crate="$(ls "$target"/package/app-plugin-*.crate | tail -n 1)"
install -d "$root/usr/share/app/sdk"
tar -xzf "$crate" -C "$root/usr/share/app/sdk" --strip-components=1 --no-same-owner
rm -f "$root/usr/share/app/sdk/.cargo_vcs_info.json" "$root/usr/share/app/sdk/Cargo.toml.orig"
find "$root/usr/share/app/sdk" -type d -exec chmod 0755 {} + -o -type f -exec chmod 0644 {} +

# Completions (the same scripts `app completion SHELL` prints).
install -D -m 0644 completions/app.bash "$root/usr/share/bash-completion/completions/app"
install -D -m 0644 completions/_app "$root/usr/share/zsh/vendor-completions/_app"
install -D -m 0644 completions/app.fish "$root/usr/share/fish/vendor_completions.d/app.fish"

# systemd: units, the user, the example options file.
install -D -m 0644 -t "$root/usr/lib/systemd/system" \
  packaging/debian/app-event-repeater@.service packaging/debian/app-event-time.service
install -D -m 0644 packaging/debian/sysusers.conf "$root/usr/lib/sysusers.d/app.conf"
install -D -m 0644 packaging/debian/example.env "$root/etc/app/event-repeater/example.env"

# Documentation.
doc="$root/usr/share/doc/app"
install -D -m 0644 packaging/debian/copyright "$doc/copyright"
install -m 0644 docs/operations.md "$doc/operations.md"
date_r="$(git log -1 --format=%cD 2>/dev/null || date -R)"
{
  printf 'app (%s) unstable; urgency=medium\n\n' "$version"
  printf '  * Release %s, built by packaging/deb.sh.\n\n' "$version"
  printf ' -- app maintainers <maintainers@users.noreply.a-seed-e4d37c4d.example>  %s\n' "$date_r"
} | gzip -9n > "$doc/changelog.gz"

# Control files.
install -d "$root/DEBIAN"
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"
echo /etc/app/event-repeater/example.env > "$root/DEBIAN/conffiles"
mkdir -p "$work/shlibs/debian"
printf 'Source: app\n\nPackage: app\nArchitecture: any\n' > "$work/shlibs/debian/control"
shlibs="$(cd "$work/shlibs" && dpkg-shlibdeps -O "$root/usr/bin/app" "$root"/usr/libexec/app/* 2>/dev/null |
  sed -n 's/^shlibs:Depends=//p')"
size="$(du -sk --exclude=DEBIAN "$root" | cut -f1)"
cat > "$root/DEBIAN/control" <<EOF
Package: app
Version: $version
Architecture: $arch
Maintainer: app maintainers <maintainers@users.noreply.a-seed-e4d37c4d.example>
Installed-Size: $size
Depends: ${shlibs:+$shlibs, }adduser
Section: net
Priority: optional
Description: plugin dispatcher with an event repeater to MQTT and NATS
 app runs plugins the way git and kubectl do (app NAME runs app-NAME). It
 ships an event repeater, which relays Server-Sent Events from a source to
 an MQTT broker or NATS (JetStream) with routes managed over a REST API, and
 event-time, an example event source.
 .
 This package runs repeaters as systemd services
 (app-event-repeater@NAME.service, options in /etc/app/event-repeater/)
 under the system user app, with sd_notify, a watchdog and journal logging.
EOF
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control" "$root/DEBIAN/conffiles"

rm -f "$deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >&2
echo "$deb"
