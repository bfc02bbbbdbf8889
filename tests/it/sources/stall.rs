//! A source that keeps its connection open and sends nothing (issue 19,
//! item 7): a real `app-event-time` frozen with SIGSTOP is reported as
//! stalled by the repeater (`/healthz`, `manage status`, the log, the
//! metrics) once `--source-idle-timeout` passes, and after SIGCONT the
//! repeater's new subscription (with `Last-Event-ID`) relays on with no
//! event missing.

use crate::common;

use std::time::{Duration, Instant};

use common::event_time::EventTime;
use common::repeater::{status_rows, Repeater};
use common::{wait_for, Sandbox};
use serde_json::Value;

/// The `test/seq` numbers the stderr sink printed so far, in order.
fn relayed(r: &Repeater) -> Vec<u64> {
    r.log()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["sink_topic"] == "test/seq")
        .filter_map(|v| v["event"]["data"].as_u64())
        .collect()
}

/// `manage status -o json` for the repeater's TCP API: its one row.
fn status_row(sb: &Sandbox, r: &Repeater) -> Value {
    status_rows(sb, &[&r.url()])[0].clone()
}

#[test]
fn a_frozen_source_is_reported_stalled_and_resubscribed_without_loss() {
    let sb = Sandbox::new();
    let mut source = EventTime::start(
        &sb,
        &["--name", "frozen", "--rate", "50", "--keep-alive", "1"],
    );
    let r = Repeater::builder(&sb, "stall")
        .source("frozen")
        .sinkprotocol("stderr")
        .args([
            "--allowall",
            "--log",
            "3",
            "--listen",
            "127.0.0.1:0",
            "--source-idle-timeout",
            "2s",
        ])
        .start();
    let flowing = wait_for(Duration::from_secs(10), || {
        (relayed(&r).len() >= 50).then_some(())
    });
    assert!(flowing.is_some(), "no events relayed: {}", r.log());
    // A source that sends is never stalled, however long it runs.
    std::thread::sleep(Duration::from_secs(3));
    let h = r.healthz();
    assert_eq!(h["status"], "ok", "{h}");
    assert_eq!(h["source"]["stalled"], false, "{h}");
    assert_eq!(r.metric("source_stalls_total"), 0.0);

    // Frozen: the connection stays open, nothing comes.
    // SAFETY: kill with the pid of a child we started and a valid signal.
    assert_eq!(unsafe { libc::kill(source.pid(), libc::SIGSTOP) }, 0);
    let stopped = Instant::now();
    let stalled = wait_for(Duration::from_secs(10), || {
        let h = r.healthz();
        (h["source"]["stalled"] == true).then_some(h)
    })
    .unwrap_or_else(|| panic!("never reported stalled: {}", r.log()));
    let noticed = stopped.elapsed();
    // Read once the stall is seen, not at the stop: events the source had
    // already written may still have been on their way through.
    let before = relayed(&r).last().copied().expect("events before the stop");
    assert!(
        noticed >= Duration::from_millis(1500) && noticed < Duration::from_secs(8),
        "stall noticed after {noticed:?} with --source-idle-timeout 2s"
    );
    assert_eq!(stalled["status"], "degraded", "{stalled}");
    let problem = stalled["source"]["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("--source-idle-timeout"), "{stalled}");
    assert_eq!(r.metric("source_stalled"), 1.0);
    assert_eq!(r.metric("source_stalls_total"), 1.0);
    let log = r.log();
    assert!(
        log.contains("sent nothing, not even a keep-alive, for 2s")
            && log.contains("resume after event id"),
        "{log}"
    );
    let row = status_row(&sb, &r);
    assert_eq!(row["source_stalled"], true, "{row}");
    assert_eq!(row["state"], "degraded", "{row}");
    // Frozen a while longer: still stalled, no events, no second stall
    // counted while the new subscriptions go unanswered.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(r.healthz()["source"]["stalled"], true);
    assert_eq!(r.metric("source_stalls_total"), 1.0);
    assert_eq!(relayed(&r).last().copied(), Some(before));

    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(source.pid(), libc::SIGCONT) }, 0);
    let resumed = wait_for(Duration::from_secs(30), || {
        let h = r.healthz();
        let last = relayed(&r).last().copied()?;
        (h["status"] == "ok" && last > before + 100).then_some(h)
    })
    .unwrap_or_else(|| panic!("did not resume: {}", r.log()));
    assert_eq!(resumed["source"]["stalled"], false, "{resumed}");
    assert!(resumed["source"]["problem"].is_null(), "{resumed}");
    assert_eq!(r.metric("source_stalled"), 0.0);
    assert!(r.log().contains("is back after"), "{}", r.log());

    // Every number from the first relayed to the last, none missing: the
    // new subscription resumed after the last event received before the
    // stop (the range covers the stop: `before` and 100 more).
    let got = relayed(&r);
    let (first, last) = (got[0], *got.last().expect("events"));
    let mut seen = got.clone();
    seen.sort_unstable();
    seen.dedup();
    let missing: Vec<u64> = (first..=last)
        .filter(|n| seen.binary_search(n).is_err())
        .collect();
    assert!(
        missing.is_empty(),
        "missing {missing:?} of {first}..={last}"
    );
    assert!(last > before + 100);
    assert!(source.alive());
}

/// A source that answers every subscription's head and then says nothing
/// (issue 30 item 5): each new subscription's headers ended the stall, so
/// 49 of 50 `/healthz` samples said `ok`. The stall now ends only when the
/// source sends something: here once it starts sending keep-alives (the
/// positive control: the same samples would have seen the change).
#[test]
fn a_source_that_answers_then_says_nothing_stays_stalled() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let talk = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let (t, st) = (talk.clone(), stop.clone());
    let server = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let mut conns = Vec::new();
        while !st.load(Ordering::SeqCst) {
            if let Ok((mut c, _)) = listener.accept() {
                c.set_nonblocking(false).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                let mut head = [0u8; 4096];
                let _ = c.read(&mut head);
                let _ = c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
                );
                conns.push(c);
            }
            if t.load(Ordering::SeqCst) {
                conns.retain_mut(|c| c.write_all(b": keep-alive\n\n").is_ok());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let sb = Sandbox::new();
    let r = Repeater::builder(&sb, "silent")
        .source(&format!("http://{addr}"))
        .sinkprotocol("stderr")
        .args(["--allowall", "--source-idle-timeout", "1s"])
        .start();
    let stalled = wait_for(Duration::from_secs(10), || {
        (r.healthz()["source"]["stalled"] == true).then_some(())
    });
    assert!(stalled.is_some(), "never stalled: {}", r.log());
    // Sampled every 100 ms across several re-subscriptions (one a second).
    let mut ok = 0;
    for _ in 0..40 {
        let h = r.healthz();
        if h["source"]["stalled"] != true || h["status"] != "degraded" {
            ok += 1;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(r.metric("source_stalls_total") >= 3.0, "{}", r.log());
    assert_eq!(ok, 0, "samples not stalled while the source said nothing");
    talk.store(true, Ordering::SeqCst);
    let recovered = wait_for(Duration::from_secs(10), || {
        (r.healthz()["source"]["stalled"] == false).then_some(())
    });
    assert!(recovered.is_some(), "keep-alives did not end the stall");
    stop.store(true, Ordering::SeqCst);
    server.join().unwrap();
}
