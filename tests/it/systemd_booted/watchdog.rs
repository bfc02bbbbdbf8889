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
    let Some(_) = wait_received(&guest, Duration::from_secs(20), 1) else {
        panic!(
            "nothing relayed:\n{}",
            guest.sh(&format!("journalctl -u {UNIT} --no-pager"))
        );
    };
    // Freeze it once the checkpoint holds every event it relayed. The
    // checkpoint is written within 100 ms of the broker's ack, but a loaded
    // machine can take longer: CI once froze it 0.2 s after an event, before
    // the write, and that event came twice after the restart (a crash
    // between delivery and checkpoint, where MQTT QoS 1 resends by design).
    // So the source is paused for a moment first, until the checkpoint has
    // not changed for a second, and goes on once the repeater is frozen.
    let pid = show(&guest, UNIT, "MainPID");
    assert_eq!(show(&guest, UNIT, "NRestarts"), "0");
    // Every process of the unit (app, and event-time if app runs it as a child).
    guest.sh("systemctl kill -s STOP app-event-time");
    let checkpoint = || guest.sh("cat /var/lib/app/event-repeater/edge1.checkpoint");
    let settled = crate::common::wait_for(Duration::from_secs(10), || {
        let before = checkpoint();
        std::thread::sleep(Duration::from_secs(1));
        (checkpoint() == before).then_some(())
    });
    assert!(
        settled.is_some(),
        "the checkpoint kept changing with the source paused"
    );
    guest.sh(&format!("kill -STOP {pid}"));
    let frozen = Instant::now();
    let frozen_at = received(&guest).into_iter().max().unwrap_or(0);
    guest.sh("systemctl kill -s CONT app-event-time");

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
