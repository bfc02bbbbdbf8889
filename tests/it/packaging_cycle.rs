//! The package's life on a host, by the real dpkg: install, upgrade,
//! remove, purge, with what each keeps (see [`CYCLE`]). Uses the package of
//! `tests/it/packaging.rs` (`APP_TEST_DEB`).

use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::tools::{skip, REQUIRE_ALL};
use crate::common::Sandbox;
use crate::packaging::{package, run, text};

/// The install / upgrade / remove / purge cycle, run by `dpkg` chrooted into
/// an overlay of `/` in a private mount namespace: everything it writes
/// (the dpkg database, the user, /etc, /var/lib) lands in the overlay's
/// upper directory and goes with the test; the host's files are untouched.
/// Prints `check NAME yes|no` lines for the test to assert on.
const CYCLE: &str = r##"
set -u
M=$1; U=$2; W=$3; DEB1=$4; DEB2=$5
mount -t overlay overlay -o "lowerdir=/,upperdir=$U,workdir=$W" "$M" || { echo "overlay: cannot mount"; exit 97; }
mount -t proc proc "$M/proc" 2>/dev/null || true
inside() { chroot "$M" "$@"; }
check() { name=$1; shift; if "$@" >/dev/null 2>&1; then echo "check $name yes"; else echo "check $name no"; fi; }
inside dpkg -i "$DEB1" >"$M/dpkg1.log" 2>&1; echo "dpkg -i: $?"
check user inside getent passwd app
check group-app inside getent group app
check conffile test -f "$M/etc/app/event-repeater/example.env"
check state-dir test -d "$M/var/lib/app"
check runs inside /usr/bin/app event-repeater run --help
# What an operator adds: an edited example, an instance, routes.
echo "# edited by the operator" >> "$M/etc/app/event-repeater/example.env"
# The instance file made as example.env's own first lines say (install -m 0600).
make=$(sed -n 's/^#   sudo \(install -m 0600 .*\)$/\1/p' "$M/etc/app/event-repeater/example.env" | sed 's/NAME/edge1/g')
echo "instance made by: $make"
inside $make
echo "REPEATER_OPTIONS=--allowall" >> "$M/etc/app/event-repeater/edge1.env"
check instance-0600 test "$(stat -c %a "$M/etc/app/event-repeater/edge1.env")" = 600
mkdir -p "$M/var/lib/app/event-repeater"
cp "$FIXTURE" "$M/var/lib/app/event-repeater/edge1.routes.json"
inside dpkg -i "$DEB2" >"$M/dpkg2.log" 2>&1; echo "upgrade: $?"
echo "version: $(inside dpkg-query -W -f '${Version}' app)"
check upgrade-kept-conffile grep -q "edited by the operator" "$M/etc/app/event-repeater/example.env"
check upgrade-kept-instance grep -q "REPEATER_OPTIONS=--allowall" "$M/etc/app/event-repeater/edge1.env"
check upgrade-kept-state cmp -s "$FIXTURE" "$M/var/lib/app/event-repeater/edge1.routes.json"
inside dpkg -r app >"$M/dpkg3.log" 2>&1; echo "remove: $?"
check remove-removed-app test ! -e "$M/usr/bin/app"
check remove-kept-conffile test -f "$M/etc/app/event-repeater/example.env"
check remove-kept-state test -f "$M/var/lib/app/event-repeater/edge1.routes.json"
inside dpkg --purge app >"$M/dpkg4.log" 2>&1; echo "purge: $?"
check purge-deleted-etc test ! -e "$M/etc/app"
check purge-deleted-state test ! -e "$M/var/lib/app"
check host-untouched test ! -e /usr/bin/app -o -n "${HOST_HAS_APP:-}"
cat "$M"/dpkg*.log
umount "$M/proc" 2>/dev/null || true
umount "$M"
"##;

#[test]
fn dpkg_installs_upgrades_removes_and_purges_keeping_state_until_purge() {
    let Some(deb) = package() else { return };
    if !crate::common::require_tools(&[("unshare", "util-linux"), ("dpkg", "dpkg")]) {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("needs root for a private mount namespace with an overlay of / (unshare -m)");
        return;
    }
    let sb = Sandbox::new();
    let (m, u, w) = (
        sb.path().join("m"),
        sb.path().join("u"),
        sb.path().join("w"),
    );
    for d in [&m, &u, &w] {
        fs::create_dir_all(d).expect("create overlay dirs");
    }
    // The newer package: the same files, a higher version.
    let tree = sb.path().join("tree");
    let out = run(Command::new("dpkg-deb").arg("-R").arg(&deb).arg(&tree));
    assert!(out.status.success(), "{}", text(&out));
    let control = tree.join("DEBIAN/control");
    let version = env!("CARGO_PKG_VERSION");
    let fields = fs::read_to_string(&control).expect("read control");
    fs::write(
        &control,
        fields.replace(
            &format!("Version: {version}\n"),
            &format!("Version: {version}+upgrade1\n"),
        ),
    )
    .expect("write control");
    let deb2 = sb.path().join(format!("app_{version}+upgrade1.deb"));
    let out = run(Command::new("dpkg-deb")
        .args(["--root-owner-group", "-Zgzip", "-z1", "-b"])
        .arg(&tree)
        .arg(&deb2));
    assert!(out.status.success(), "{}", text(&out));
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/state/v1.routes.json");

    let out = run(Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c", CYCLE, "cycle"])
        .args([&m, &u, &w, &deb.canonicalize().expect("deb path"), &deb2])
        .env("FIXTURE", &fixture)
        .env(
            "HOST_HAS_APP",
            if Path::new("/usr/bin/app").exists() {
                "1"
            } else {
                ""
            },
        ));
    let transcript = text(&out);
    if out.status.code() == Some(97) {
        if std::env::var(REQUIRE_ALL).as_deref() == Ok("1") {
            panic!("cannot mount an overlay of / here: {transcript}");
        }
        skip("cannot mount an overlay of / here (a container without overlayfs?)");
        return;
    }
    eprintln!("{transcript}");
    assert!(
        transcript.contains("instance made by: install -m 0600 /etc/app/event-repeater/example.env /etc/app/event-repeater/edge1.env"),
        "{transcript}"
    );
    for step in ["dpkg -i: 0", "upgrade: 0", "remove: 0", "purge: 0"] {
        assert!(transcript.contains(step), "{step} missing:\n{transcript}");
    }
    assert!(
        transcript.contains(&format!("version: {version}+upgrade1")),
        "{transcript}"
    );
    let checks: Vec<&str> = transcript
        .lines()
        .filter(|l| l.starts_with("check "))
        .collect();
    assert_eq!(checks.len(), 15, "{transcript}");
    let failed: Vec<&&str> = checks.iter().filter(|l| l.ends_with(" no")).collect();
    assert!(failed.is_empty(), "{failed:?}\n{transcript}");
    // The overlay went with the namespace: the host's dpkg never saw app.
    if std::env::var_os("HOST_HAS_APP").is_none() && !Path::new("/usr/bin/app").exists() {
        let host = run(Command::new("dpkg-query").args(["-W", "app"]));
        assert!(
            !host.status.success(),
            "the host's dpkg database has app: {}",
            text(&host)
        );
    }
}
