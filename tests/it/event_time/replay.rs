//! History and slow subscribers: Last-Event-ID replays, a position older
//! than the history, ids across a SIGKILL, stalled subscribers bounded and
//! not stopping others.

use crate::common;

use std::fs;
use std::time::{Duration, Instant};

use common::event_time::EventTime;
use common::http::{Conn, SseItem, SseStream};
use common::{wait_for, Sandbox};
use serde_json::Value;

use super::read_numbers_until;

#[test]
fn last_event_id_replays_missed_events_without_gap_or_duplicate() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "2000", "--count", "6000"]);
    let addr = source.unix();
    let mut last_id = 0;
    let mut numbers = Vec::new();

    // Position 0: everything held, from event 1.
    let mut stream = SseStream::open(&addr, "/events?topic=test/seq", &[("Last-Event-ID", "0")]);
    numbers.extend(read_numbers_until(&mut stream, 1500, &mut last_id));
    drop(stream);
    std::thread::sleep(Duration::from_millis(300));

    // Reconnect with the header, as an SSE client does.
    let id = last_id.to_string();
    let mut stream = SseStream::open(&addr, "/events?topic=test/seq", &[("Last-Event-ID", &id)]);
    numbers.extend(read_numbers_until(&mut stream, 3500, &mut last_id));
    drop(stream);
    std::thread::sleep(Duration::from_millis(300));

    // And with the query parameter, for clients that cannot set headers.
    let path = format!("/events?topic=test/seq&last_event_id={last_id}");
    let mut stream = SseStream::open(&addr, &path, &[]);
    numbers.extend(read_numbers_until(&mut stream, 6000, &mut last_id));

    let expected: Vec<u64> = (1..=6000).collect();
    assert!(
        numbers == expected,
        "gap or duplicate: {} numbers",
        numbers.len()
    );
}

#[test]
fn a_position_older_than_the_history_is_reported_then_replayed_from_the_oldest() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "1000", "--history", "50"]);
    let addr = source.unix();
    // The id of this run's first event (ids start at the clock, not at 1).
    let mut all = SseStream::open(&addr, "/events?topic=test/seq", &[("Last-Event-ID", "0")]);
    let (first_id, first) = all.next_event(Duration::from_secs(5)).expect("an event");
    drop(all);
    wait_for(Duration::from_secs(5), || {
        let mut s = SseStream::open(&addr, "/events?topic=test/seq", &[]);
        s.next_event(Duration::from_secs(2))
            .filter(|(_, e)| e["data"].as_u64().unwrap_or(0) > 200)
    })
    .expect("the stream runs");
    let after = first_id.to_string();
    let mut stream = SseStream::open(
        &addr,
        "/events?topic=test/seq",
        &[("Last-Event-ID", &after)],
    );
    assert_eq!(
        stream.next_item(Duration::from_secs(2)),
        Some(SseItem::Comment("subscribed".into()))
    );
    match stream.next_item(Duration::from_secs(2)) {
        Some(SseItem::Comment(c)) => assert!(
            c.starts_with(&format!("events {}..", first_id + 1)) && c.contains("no longer held"),
            "{c}"
        ),
        other => panic!("expected a comment about the lost events, got {other:?}"),
    }
    let (_, replayed) = stream.next_event(Duration::from_secs(2)).unwrap();
    assert!(
        replayed["data"].as_u64().unwrap() > 150,
        "replay starts at the oldest held event, got {replayed} after {first}"
    );
}

/// Issue 11: ids increase across a restart (they start at the clock), and a
/// client resuming with an id from the earlier run gets everything the new
/// run holds, told that the rest is gone.
#[test]
fn ids_keep_increasing_across_a_sigkill_and_restart() {
    let sb = Sandbox::new();
    let mut source = EventTime::start(&sb, &["--rate", "1000"]);
    let mut stream = SseStream::open(&source.unix(), "/events?topic=test/seq", &[]);
    let mut last_id = 0;
    let numbers = read_numbers_until(&mut stream, 300, &mut last_id);
    assert!(!numbers.is_empty());
    drop(stream);
    source.signal(libc::SIGKILL);
    let source = EventTime::start(&sb, &["--rate", "1000"]);
    std::thread::sleep(Duration::from_millis(300));
    let old = last_id.to_string();
    let mut stream = SseStream::open(
        &source.unix(),
        "/events?topic=test/seq",
        &[("Last-Event-ID", &old)],
    );
    assert_eq!(
        stream.next_item(Duration::from_secs(2)),
        Some(SseItem::Comment("subscribed".into()))
    );
    match stream.next_item(Duration::from_secs(2)) {
        Some(SseItem::Comment(c)) => assert!(
            c.contains(&format!("after id {old} from an earlier run")),
            "{c}"
        ),
        other => panic!("expected a comment about the earlier run, got {other:?}"),
    }
    // The new run's events from its first one, with ids above the old run's.
    let mut id_before = last_id;
    let numbers = read_numbers_until(&mut stream, 500, &mut id_before);
    assert_eq!(numbers, (1..=500).collect::<Vec<u64>>());
}

/// Issue 11 (hardening 6): 300 subscribers that never read, at 20,000
/// events/s, cost a bounded amount of memory each (they grew the server to
/// 374 MB): the resident size stays under 120 MB.
#[test]
fn three_hundred_stalled_subscribers_at_20000_per_s_stay_bounded() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "20000"]);
    let addr = source.unix();
    let mut stalled = Vec::new();
    for i in 0..300 {
        let mut c = Conn::connect(&addr).unwrap();
        use std::io::Write;
        // Half from the start of the history (a long replay), half live.
        let header = if i % 2 == 0 {
            "Last-Event-ID: 0\r\n"
        } else {
            ""
        };
        c.write_all(
            format!("GET /events?topic=. HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n{header}\r\n")
                .as_bytes(),
        )
        .unwrap();
        stalled.push(c);
    }
    let rss = |pid: i32| -> u64 {
        let status = fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    };
    std::thread::sleep(Duration::from_secs(6));
    let peak_mb = rss(source.pid()) / 1024;
    eprintln!("peak RSS with 300 stalled subscribers: {peak_mb} MB");
    assert!(peak_mb < 120, "peak RSS {peak_mb} MB");
    // A reader still gets live events (generous: CI shares 2 cores).
    let mut reader = SseStream::open(&addr, "/events?topic=test/seq", &[]);
    assert!(
        reader.next_event(Duration::from_secs(20)).is_some(),
        "no event for a new reader; log:\n{}",
        source.log()
    );
    drop(stalled);
}

#[test]
fn a_stalled_subscriber_does_not_stop_another() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "5000"]);
    let addr = source.unix();
    // Subscribes, then never reads: its socket buffers fill up within a second.
    let mut stalled = Conn::connect(&addr).unwrap();
    {
        use std::io::Write;
        stalled
            .write_all(
                b"GET /events?topic=. HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n",
            )
            .unwrap();
    }
    // Subscribed once the answer's head and first comment arrive; no more is read.
    stalled
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut head = Vec::new();
    wait_for(Duration::from_secs(5), || {
        use std::io::Read;
        let mut buf = [0u8; 256];
        if let Ok(n) = stalled.read(&mut buf) {
            head.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&head)
            .contains(": subscribed")
            .then_some(())
    })
    .unwrap_or_else(|| panic!("the stalled subscriber was not subscribed: {head:?}"));

    let mut reader = SseStream::open(&addr, "/events?topic=test/seq", &[]);
    let (_, first) = reader.next_event(Duration::from_secs(5)).unwrap();
    let start = first["data"].as_u64().unwrap();
    let mut last_id = 0;
    // 3 s at 5,000/s: far more than the stalled socket's buffers and the
    // live channel hold.
    let numbers = read_numbers_until(&mut reader, start + 15_000, &mut last_id);
    let expected: Vec<u64> = (start + 1..=start + 15_000).collect();
    assert!(numbers == expected, "the reading subscriber missed events");
    drop(stalled);
}

#[test]
fn a_subscriber_that_falls_behind_catches_up_from_history_or_is_told_what_it_lost() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--rate", "5000", "--history", "8000"]);
    let addr = source.unix();
    let mut slow = SseStream::open(&addr, "/events?topic=test/seq", &[]);
    let (_, first) = slow.next_event(Duration::from_secs(5)).unwrap();
    // Stop reading for 3 s (15,000 events: beyond the live channel and the history).
    std::thread::sleep(Duration::from_secs(3));
    let mut prev = first["data"].as_u64().unwrap();
    let mut told = false;
    let mut gaps = 0;
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        match slow
            .next_item(Duration::from_secs(5))
            .expect("the slow stream goes on")
        {
            SseItem::Comment(c) => told |= c.starts_with("lagged: events "),
            SseItem::Event { data, .. } => {
                let n = serde_json::from_str::<Value>(&data).unwrap()["data"]
                    .as_u64()
                    .unwrap();
                assert!(n > prev, "in order: {n} after {prev}");
                if n != prev + 1 {
                    assert!(told, "a gap {prev}..{n} without a 'lagged' comment");
                    gaps += 1;
                    told = false;
                }
                prev = n;
            }
        }
    }
    assert!(gaps >= 1, "3 s of 5,000/s cannot fit in a history of 8,000");
}
