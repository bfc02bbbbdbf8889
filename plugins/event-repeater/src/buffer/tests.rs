use super::*;

fn buffer(n: usize, bytes: usize, policy: Overflow) -> (Buffer, Arc<Metrics>) {
    let m = Arc::new(Metrics::default());
    (Buffer::new(n, bytes, policy, m.clone()), m)
}

async fn push(b: &Buffer, payload: &str) -> bool {
    b.push(
        "s".into(),
        "t".into(),
        Bytes::from(payload.to_string()),
        Some(&EventKey::own(Arc::from(payload))),
        &Shutdown::new(),
    )
    .await
}

fn payloads(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| String::from_utf8(r.payload.to_vec()).unwrap())
        .collect()
}

#[tokio::test]
async fn drop_oldest_keeps_the_newest_and_counts() {
    let (b, m) = buffer(3, 1000, Overflow::DropOldest);
    for p in ["1", "2", "3", "4", "5"] {
        assert!(push(&b, p).await);
    }
    assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 2);
    assert_eq!(payloads(&b.take(10)), ["3", "4", "5"]);
}

#[tokio::test]
async fn drop_newest_keeps_the_oldest_and_counts() {
    let (b, m) = buffer(3, 1000, Overflow::DropNewest);
    for p in ["1", "2", "3", "4", "5"] {
        push(&b, p).await;
    }
    assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 2);
    assert_eq!(payloads(&b.take(10)), ["1", "2", "3"]);
}

#[tokio::test]
async fn in_flight_events_count_against_the_budget() {
    let (b, m) = buffer(2, 1000, Overflow::DropOldest);
    push(&b, "1").await;
    push(&b, "2").await;
    let taken = b.take(2);
    // Nothing queued can be dropped for room: the new event goes.
    assert!(!push(&b, "3").await);
    assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 1);
    b.release(&taken[0]);
    assert!(push(&b, "4").await);
    assert_eq!(b.stats().inflight, 1);
    assert_eq!(b.stats().queued, 1);
}

#[tokio::test]
async fn the_byte_cap_applies() {
    let (b, m) = buffer(100, 10, Overflow::DropNewest);
    assert!(push(&b, "aaaa").await); // 4 + 1 = 5 bytes
    assert!(push(&b, "bbbb").await); // 10
    assert!(!push(&b, "c").await);
    assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 1);
    assert_eq!(b.stats().queued_bytes, 10);
}

/// On paused time a sleep ends only once every other task is idle: the
/// waiter has run up to its wait for room, so "not finished" after it
/// means blocked, not "not scheduled yet".
#[tokio::test(start_paused = true)]
async fn block_waits_for_room_and_can_be_cancelled() {
    let (b, m) = buffer(1, 1000, Overflow::Block);
    let b = Arc::new(b);
    assert!(push(&b, "1").await);
    let b2 = b.clone();
    let waiter = tokio::spawn(async move { push(&b2, "2").await });
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!waiter.is_finished(), "the push did not wait for room");
    assert_eq!(b.stats().queued, 1);
    let t = b.take(1);
    b.release(&t[0]);
    assert!(waiter.await.unwrap());
    assert_eq!(m.dropped_overflow.load(Ordering::Relaxed), 0);
    let cancel = Shutdown::new();
    let b3 = b.clone();
    let c2 = cancel.clone();
    let waiter = tokio::spawn(async move {
        b3.push("s".into(), "t".into(), Bytes::from_static(b"3"), None, &c2)
            .await
    });
    tokio::time::sleep(Duration::from_secs(3600)).await;
    // Blocked (the buffer holds "2"), so what ends it below is the cancel.
    assert!(!waiter.is_finished(), "the push did not wait for room");
    cancel.trigger(app_plugin::daemon::Reason::Terminate);
    assert!(!waiter.await.unwrap());
    assert_eq!(b.stats().queued, 1);
}

fn checkpoint(b: &Buffer) -> Option<String> {
    b.checkpoint().0.map(|s| s.as_str().to_string())
}

#[tokio::test]
async fn the_checkpoint_follows_releases_and_drops_in_arrival_order() {
    let (b, _) = buffer(2, 1000, Overflow::DropOldest);
    assert_eq!(checkpoint(&b), None);
    push(&b, "1").await;
    b.skip(Some(&EventKey::own(Arc::from("2"))));
    push(&b, "3").await;
    assert_eq!(checkpoint(&b), None, "1 is not done");
    // 4 pushes 1 out (dropped and counted: done).
    push(&b, "4").await;
    assert_eq!(checkpoint(&b).as_deref(), Some("2"));
    let taken = b.take(2);
    b.release(&taken[1]);
    assert_eq!(checkpoint(&b).as_deref(), Some("2"), "3 is not done");
    b.release(&taken[0]);
    assert_eq!(checkpoint(&b).as_deref(), Some("4"));
    // drop-newest: the dropped event is done too.
    let (b, _) = buffer(1, 1000, Overflow::DropNewest);
    push(&b, "5").await;
    assert!(!push(&b, "6").await);
    assert_eq!(checkpoint(&b), None);
    let t = b.take(1);
    b.release(&t[0]);
    assert_eq!(checkpoint(&b).as_deref(), Some("6"));
}

/// What a tap reads, as (outcome, reason, data), until it has nothing.
async fn tapped(tap: &crate::tap::Tap) -> Vec<(&'static str, Option<Reason>, String)> {
    use futures_util::FutureExt;
    let mut out = Vec::new();
    while let Some(crate::tap::Next::Event(s)) = tap.next().now_or_never() {
        let data = String::from_utf8(s.data.to_vec()).unwrap();
        out.push((s.outcome().as_str(), s.reason, data));
    }
    out
}

#[tokio::test]
async fn every_outcome_reaches_an_open_tap_and_none_is_built_without_one() {
    for policy in [Overflow::DropOldest, Overflow::DropNewest] {
        let (b, _) = buffer(2, 1000, policy);
        // Before any tap: nothing kept for one.
        push(&b, "early").await;
        b.release(&b.take(1)[0]);
        let tap = b.taps().open(Box::new(|_| true)).unwrap();
        assert_eq!(tapped(&tap).await, []);
        for p in ["1", "2", "3"] {
            push(&b, p).await;
        }
        let taken = b.take(2);
        b.release(&taken[0]);
        b.refuse(&taken[1], Reason::TooLarge, "over the limit");
        let dropped = if policy == Overflow::DropOldest {
            "1"
        } else {
            "3"
        };
        let sent = if policy == Overflow::DropOldest {
            ["2", "3"]
        } else {
            ["1", "2"]
        };
        assert_eq!(
            tapped(&tap).await,
            [
                ("dropped", Some(Reason::Overflow), dropped.to_string()),
                ("delivered", None, sent[0].to_string()),
                ("refused", Some(Reason::TooLarge), sent[1].to_string()),
            ],
            "{policy:?}"
        );
    }
}
