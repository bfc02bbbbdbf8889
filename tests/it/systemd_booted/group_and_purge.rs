//! Only members of the group `app` manage a system instance (someone else
//! is told which group and socket), an upgrade restarts a running instance
//! keeping its routes, and `dpkg --purge` stops the instances and removes
//! their state, configuration and units.

use std::time::Duration;

use super::{installed, relay_numbered_events, show, wait_received};

const MANAGE: &str = "runuser -u alice -- app event-repeater manage --name edge1 get";

#[test]
fn only_members_of_app_manage_an_instance_an_upgrade_restarts_it_and_purge_leaves_nothing() {
    let Some(guest) = installed() else { return };
    relay_numbered_events(&guest, 5, "");
    let Some(_) = wait_received(&guest, Duration::from_secs(20), 1) else {
        panic!("nothing relayed");
    };
    guest.sh("useradd --create-home --shell /bin/sh alice");
    let (code, said) = guest.sh_status(MANAGE);
    assert_eq!(code, Some(3), "{said}");
    assert!(
        said.contains(
            "the system instances' socket /run/app/plugins/edge1.sock is open only to the group app, which you are not in"
        ) && said.contains("sudo usermod -aG app $USER"),
        "{said}"
    );
    // As the message says (runuser starts a new session: the new group).
    guest.sh("usermod -aG app alice");
    let (code, said) = guest.sh_status(MANAGE);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("out/seq"), "{said}");

    // An upgrade (the same package, a higher version) restarts the running
    // instance with the new programs, its routes kept.
    let before = show(&guest, "app-event-repeater@edge1", "MainPID");
    guest.sh("set -e
        dpkg-deb -R /root/app.deb /root/up
        sed -i 's/^Version: .*/&+upgrade1/' /root/up/DEBIAN/control
        dpkg-deb -Zgzip -z1 -b /root/up /root/app-up.deb >/dev/null
        dpkg -i /root/app-up.deb");
    let pid = show(&guest, "app-event-repeater@edge1", "MainPID");
    assert_ne!(pid, before, "not restarted by the upgrade");
    assert_eq!(
        show(&guest, "app-event-repeater@edge1", "ActiveState"),
        "active"
    );
    assert!(guest
        .sh("dpkg-query -W -f '${Version}' app")
        .ends_with("+upgrade1"));
    let (code, said) = guest.sh_status(MANAGE);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("out/seq"), "{said}");

    // Purge: the instances stopped, every file of theirs gone, the units
    // unknown to systemd; the user stays (documented).
    guest.sh("systemctl enable app-event-repeater@edge1");
    let left = || {
        guest.sh(
            "for p in /usr/bin/app /usr/libexec/app /etc/app /var/lib/app /var/cache/app /run/app \
               /usr/lib/systemd/system/app-event-repeater@.service \
               /etc/systemd/system/multi-user.target.wants/app-event-repeater@edge1.service; do
               [ -e \"$p\" ] && echo \"left: $p\"; done; true",
        )
    };
    // The control: all of them are there before.
    assert_eq!(left().lines().count(), 8, "{}", left());
    guest.sh("dpkg --purge app");
    let gone = left();
    assert_eq!(gone.trim(), "", "{gone}");
    assert!(
        guest.sh_status(&format!("test -d /proc/{pid}")).0 != Some(0),
        "the repeater (pid {pid}) still runs"
    );
    assert_eq!(
        show(&guest, "app-event-repeater@edge1", "LoadState"),
        "not-found"
    );
    assert_eq!(show(&guest, "app-event-time", "LoadState"), "not-found");
    guest.sh("getent passwd app");
}
