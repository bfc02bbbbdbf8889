//! The package's units under a running systemd: a minimal Debian booted by
//! `systemd-nspawn` (packaging/systemd-guest.sh, with a private network, so
//! its mosquitto is its own), the package (`APP_TEST_DEB`) installed there by
//! dpkg, each instance configured as docs/operations.md says and driven with
//! the guest's own `systemctl`, `journalctl` and `mosquitto_sub`.
//!
//! Needs root, systemd-nspawn (systemd-container), debootstrap and Debian's
//! archive for the first run in a target directory (about 100-150 s; later
//! runs reuse the root); skips with one line otherwise, fails instead under
//! `APP_TEST_REQUIRE_ALL=1`. Each test boots its own guest (under a second).

use std::collections::BTreeMap;
use std::time::Duration;

mod group_and_purge;
mod guest;
mod missing_options;
mod stop_drain;
mod units;
mod watchdog;

use guest::Guest;

/// A booted guest with the package installed by `dpkg -i`, or `None` (after
/// one line) where that cannot be done.
fn installed() -> Option<Guest> {
    let deb = crate::packaging::package()?;
    let guest = Guest::boot()?;
    guest.copy_in(&deb, "/root/app.deb");
    guest.sh("dpkg -i /root/app.deb");
    Some(guest)
}

/// What an operator does for one instance, `edge1`, publishing numbered
/// events (`app event-time --rate RATE`, topic test/seq) to the guest's
/// mosquitto as out/seq: the options file made as example.env says, both
/// units started, a persistent QoS 1 subscriber (session `guest-sub`,
/// writing to /root/sub.log) and the route put with `manage`.
fn relay_numbered_events(guest: &Guest, rate: u32, options: &str) {
    guest.sh(&format!(
        "set -e
        echo 'EVENT_TIME_OPTIONS=--rate {rate}' > /etc/app/event-time.env
        install -m 0600 /etc/app/event-repeater/example.env /etc/app/event-repeater/edge1.env
        echo 'REPEATER_OPTIONS=--sink mqtt://127.0.0.1:1883 --checkpoint on {options}' >> /etc/app/event-repeater/edge1.env
        systemd-run --unit=sub -p StandardOutput=file:/root/sub.log \
          mosquitto_sub -h 127.0.0.1 -q 1 -c -i guest-sub -t out/seq -v
        systemctl start app-event-time app-event-repeater@edge1
        app event-repeater manage --name edge1 put test/seq out/seq"
    ));
}

/// The numbers of the events the subscriber got (the `data` of each
/// test/seq event), in order of arrival.
fn received(guest: &Guest) -> Vec<u64> {
    let log = guest.sh("cat /root/sub.log");
    log.lines()
        .filter_map(|l| l.strip_prefix("out/seq "))
        .map(|json| {
            let v: serde_json::Value =
                serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
            v["data"]
                .as_u64()
                .unwrap_or_else(|| panic!("no data: {json}"))
        })
        .collect()
}

/// Waits until the subscriber has an event numbered `n` or more; the
/// numbers received by then.
#[must_use]
fn wait_received(guest: &Guest, timeout: Duration, n: u64) -> Option<Vec<u64>> {
    crate::common::wait_for(timeout, || {
        let got = received(guest);
        if got.iter().any(|&x| x >= n) {
            return Some(got);
        }
        std::thread::sleep(Duration::from_millis(200));
        None
    })
}

/// Between the first and the last number received: how many are missing
/// and how many came more than once.
fn gaps_and_duplicates(got: &[u64]) -> (Vec<u64>, BTreeMap<u64, usize>) {
    let mut counts = BTreeMap::new();
    for &n in got {
        *counts.entry(n).or_insert(0) += 1;
    }
    let (Some(&lo), Some(&hi)) = (counts.keys().next(), counts.keys().next_back()) else {
        return (Vec::new(), BTreeMap::new());
    };
    let missing = (lo..=hi).filter(|n| !counts.contains_key(n)).collect();
    counts.retain(|_, c| *c > 1);
    (missing, counts)
}

/// `systemctl show -p PROPERTY --value UNIT`.
fn show(guest: &Guest, unit: &str, property: &str) -> String {
    guest
        .sh(&format!("systemctl show -p {property} --value {unit}"))
        .trim()
        .to_string()
}

#[test]
fn gaps_and_duplicates_counts_between_the_first_and_the_last() {
    let (missing, dups) = gaps_and_duplicates(&[3, 4, 6, 6, 7, 9]);
    assert_eq!(missing, vec![5, 8]);
    assert_eq!(dups.into_iter().collect::<Vec<_>>(), vec![(6, 2)]);
    let (missing, dups) = gaps_and_duplicates(&[1, 2, 3]);
    assert!(missing.is_empty() && dups.is_empty());
}
