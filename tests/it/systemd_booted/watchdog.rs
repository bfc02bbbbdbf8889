//! A repeater frozen with SIGSTOP stops pinging; systemd's watchdog
//! (`WatchdogSec=30s`) aborts it and `Restart=on-failure` starts it again,
//! which resumes from its checkpoint: the persistent subscriber in the
//! guest gets every event once.

use std::time::{Duration, Instant};

use super::{gaps_and_duplicates, installed, received, relay_numbered_events, show, wait_received};

const UNIT: &str = "app-event-repeater@edge1";

#[test]
fn a_frozen_repeater_is_restarted_by_the_watchdog_and_resumes_from_its_checkpoint() {
    let Some(guest) = installed() else { return };
    // `--log info`: the resume is an info line.
    relay_numbered_events(&guest, 2, "--log info");
    let Some(seen) = wait_received(&guest, Duration::from_secs(20), 1) else {
        panic!(
            "nothing relayed:\n{}",
            guest.sh(&format!("journalctl -u {UNIT} --no-pager"))
        );
    };
    // Freeze it between two events (at 2/s, 0.2 s after one arrived), when
    // the checkpoint has had its 100 ms to record it.
    let last = seen.into_iter().max().unwrap_or(0);
    let Some(_) = wait_received(&guest, Duration::from_secs(10), last + 1) else {
        panic!("the relay stopped before the freeze");
    };
    std::thread::sleep(Duration::from_millis(200));
    let pid = show(&guest, UNIT, "MainPID");
    assert_eq!(show(&guest, UNIT, "NRestarts"), "0");
    guest.sh(&format!("kill -STOP {pid}"));
    let frozen = Instant::now();
    let frozen_at = received(&guest).into_iter().max().unwrap_or(0);

    // Aborted by the watchdog after 30 s, started again 2 s later.
    let restarted = guest.wait(
        Duration::from_secs(50),
        &format!("[ \"$(systemctl show -p NRestarts --value {UNIT})\" = 1 ] && systemctl is-active {UNIT}"),
    );
    let journal = guest.sh(&format!("journalctl -u {UNIT} --no-pager -o cat"));
    assert!(restarted.is_some(), "not restarted:\n{journal}");
    let took = frozen.elapsed();
    assert!(
        journal.contains("Watchdog timeout (limit 30s)!"),
        "{journal}"
    );
    // 30 s after the last ping, which came at most 15 s before the freeze.
    assert!(
        took >= Duration::from_secs(15),
        "restarted after {took:?}:\n{journal}"
    );
    assert_ne!(show(&guest, UNIT, "MainPID"), pid);
    assert!(journal.contains("resuming after event id"), "{journal}");

    // The events published while it was frozen (about 64) come from the
    // source's history after the restart: no gap, no duplicate.
    let Some(got) = wait_received(&guest, Duration::from_secs(30), frozen_at + 70) else {
        panic!("the restarted repeater relays nothing new:\n{journal}");
    };
    let (missing, duplicates) = gaps_and_duplicates(&got);
    eprintln!(
        "watchdog restart after {:.1} s; {} events received, {} missing, {} duplicated",
        took.as_secs_f64(),
        got.len(),
        missing.len(),
        duplicates.len()
    );
    assert!(missing.is_empty(), "missing {missing:?}");
    assert!(duplicates.is_empty(), "duplicated {duplicates:?}");
}
