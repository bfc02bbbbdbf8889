//! The source fails: restarted, or its connection cut by a proxy; the
//! repeater resumes from the last event id without loss.

use crate::common;

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::broker::Broker;
use common::event_time::EventTime;
use common::{free_port, Sandbox};

use super::{flow, m, start_loadgen_source, start_repeater, wait_port, Counter};

/// The source process killed and started again: the repeater reconnects with
/// `Last-Event-ID`, and the source (which can produce every event again)
/// resumes after it: nothing lost.
#[test]
fn source_restarted_repeater_resumes_from_last_event_id_without_loss() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 12_000;
    let (counter, mut source, r, port) = flow(
        &sb,
        &broker,
        "rel-source",
        2000,
        count,
        "rel",
        &["--allowall"],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    source.kill9();
    thread::sleep(Duration::from_secs(1));
    let _source = start_loadgen_source(port, 2000, count);

    let sum = counter.finish(Duration::from_secs(60));
    let metrics = r.metrics();
    eprintln!("subscriber: {sum}\nrepeater: {metrics:?}");
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{}", r.log());
    assert!(m(&metrics, "source_disconnects_total") >= 1);
    assert_eq!(m(&metrics, "source_connected"), 1);
}

/// A TCP proxy whose connections can be cut, to break the stream while the
/// source keeps running.
struct Proxy {
    port: u16,
    down: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(target: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind proxy");
        let port = listener.local_addr().expect("addr").port();
        let down = Arc::new(AtomicBool::new(false));
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::new(Mutex::new(Vec::new()));
        let (d2, c2) = (Arc::clone(&down), Arc::clone(&conns));
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if d2.load(Ordering::SeqCst) {
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let pairs = [
                    (
                        client.try_clone().expect("clone"),
                        server.try_clone().expect("clone"),
                    ),
                    (
                        server.try_clone().expect("clone"),
                        client.try_clone().expect("clone"),
                    ),
                ];
                c2.lock().unwrap().extend([client, server]);
                for (mut from, mut to) in pairs {
                    thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(Shutdown::Both);
                    });
                }
            }
        });
        Proxy { port, down, conns }
    }

    /// Cuts every connection and refuses new ones for `outage`.
    fn cut_for(&self, outage: Duration) {
        self.down.store(true, Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
        thread::sleep(outage);
        self.down.store(false, Ordering::SeqCst);
    }
}

/// The stream from `app-event-time` cut for a second while the source keeps
/// publishing: the repeater reconnects with `Last-Event-ID` and the source
/// replays what it still holds (its history): nothing lost.
#[test]
fn source_connection_cut_event_time_replays_from_last_event_id() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 12_000;
    let source_port = free_port();
    let mut source = EventTime::start(
        &sb,
        &[
            "--name",
            "rel-time",
            "--listen",
            &format!("127.0.0.1:{source_port}"),
            "--rate",
            "2000",
            "--count",
            &count.to_string(),
        ],
    );
    wait_port(source_port);
    let proxy = Proxy::start(source_port);
    // The numbered stream starts with the source, before the repeater
    // subscribes: count from the first number that arrives.
    let counter = Counter::start(&broker, "test/seq", "rel-cut", count, true);
    let r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{}", proxy.port),
        &broker.url(),
        &["--allowall"],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    proxy.cut_for(Duration::from_secs(1));

    let sum = counter.finish(Duration::from_secs(60));
    let metrics = r.metrics();
    eprintln!("subscriber: {sum}\nrepeater: {metrics:?}");
    assert!(source.alive(), "app-event-time died");
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{}", r.log());
    assert_eq!(sum["max_seq"], count);
    assert!(
        m(&metrics, "source_disconnects_total") >= 1,
        "the cut went unnoticed"
    );
}
