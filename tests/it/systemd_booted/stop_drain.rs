//! `systemctl stop` while events wait in the repeater's buffer for a slow
//! broker: the repeater drains them (STOPPING=1, then the drain) and exits 0
//! well within `TimeoutStopSec`, and the subscriber has every event it
//! accepted, once.

use std::time::{Duration, Instant};

use super::{gaps_and_duplicates, installed, received, relay_numbered_events, show, wait_received};

const UNIT: &str = "app-event-repeater@edge1";

/// Events the repeater holds, from its metrics: buffered plus in flight
/// (sent, not acknowledged).
fn pending(guest: &super::Guest) -> u64 {
    let metrics =
        guest.sh("curl -s --max-time 5 --unix-socket /run/app/plugins/edge1.sock http://x/metrics");
    let gauge = |name: &str| {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
    };
    gauge("app_event_repeater_events_buffered") + gauge("app_event_repeater_events_inflight")
}

#[test]
fn stop_drains_the_buffer_into_a_slow_broker_within_timeout_stop_sec() {
    let Some(guest) = installed() else { return };
    // `--log info`: the drain's lines are info.
    relay_numbered_events(&guest, 100, "--log info");
    let Some(_) = wait_received(&guest, Duration::from_secs(20), 50) else {
        panic!(
            "nothing relayed:\n{}",
            guest.sh(&format!("journalctl -u {UNIT} --no-pager"))
        );
    };
    // The broker frozen for 2 s: about 200 events back up into the buffer.
    let broker = show(&guest, "mosquitto", "MainPID");
    guest.sh(&format!("kill -STOP {broker}"));
    std::thread::sleep(Duration::from_secs(2));
    let waiting = pending(&guest);
    assert!(waiting >= 50, "only {waiting} pending");
    // Then slow: answering 50 ms in every 200 (a transient unit in the
    // guest, so it goes with it).
    guest.sh(&format!(
        "systemd-run --unit=slow sh -c 'while :; do kill -CONT {broker}; sleep 0.05; kill -STOP {broker}; sleep 0.15; done'"
    ));
    let t = Instant::now();
    let (code, said) = guest.sh_status(&format!("systemctl stop {UNIT}"));
    let took = t.elapsed();
    guest.sh(&format!("systemctl stop slow; kill -CONT {broker}"));
    assert_eq!(code, Some(0), "{said}");
    let journal = guest.sh(&format!("journalctl -u {UNIT} --no-pager -o cat"));
    eprintln!(
        "systemctl stop with {waiting} pending took {:.2} s",
        took.as_secs_f64()
    );
    // Within TimeoutStopSec (60 s) and the drain's own 5 s, cleanly.
    assert!(
        took < Duration::from_secs(10),
        "stop took {took:?}:\n{journal}"
    );
    assert_eq!(show(&guest, UNIT, "Result"), "success", "{journal}");
    assert_eq!(show(&guest, UNIT, "ExecMainStatus"), "0", "{journal}");
    assert!(
        journal.contains("no longer taking events; waiting up to 5s for the sink"),
        "{journal}"
    );
    assert!(
        journal.contains("accepted events were delivered"),
        "{journal}"
    );
    assert!(!journal.contains("were not delivered"), "{journal}");

    // Every event it accepted (all routed ones: the subscriber was there
    // before the route) reached the broker, once.
    let accepted: usize = journal
        .lines()
        .find_map(|l| {
            l.split("stopped; all ")
                .nth(1)?
                .strip_suffix(" accepted events were delivered")
        })
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of accepted events:\n{journal}"));
    let got = crate::common::wait_for(Duration::from_secs(20), || {
        let got = received(&guest);
        (got.len() >= accepted).then_some(got)
    });
    let got = got.unwrap_or_else(|| panic!("{} of {accepted} received", received(&guest).len()));
    let (missing, duplicates) = gaps_and_duplicates(&got);
    assert!(missing.is_empty(), "missing {missing:?}");
    assert!(duplicates.is_empty(), "duplicated {duplicates:?}");
    assert_eq!(got.len(), accepted);
    eprintln!("all {accepted} accepted events received once");
}
