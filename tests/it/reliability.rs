//! Fault injection against `app-event-repeater` (issue 6): numbered events
//! flow from a test source through the repeater into a real mosquitto, a
//! counting subscriber (`loadgen subscribe`, persistent session, QoS 1)
//! reports missing, duplicated and out-of-order numbers, and the test breaks
//! something on the way: the broker (SIGSTOP, graceful restart, SIGKILL), the
//! buffer (smaller than the outage), the source (restart, cut connection),
//! the repeater itself (`kill -9`), or the API (hostile requests).
//!
//! Sources: `loadgen sse` (bench/loadgen), which can produce any event again
//! from its number and so honours `Last-Event-ID` even after a restart, and
//! `app-event-time --rate`, whose history replays a cut connection.
//! Everything runs on 127.0.0.1, every wait is bounded, and every process is
//! killed on drop.

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::broker::Broker;
use common::event_time::EventTime;
use common::process::Proc;
use common::repeater::{raw_request, Repeater};
use common::{free_port, plugin_bin, wait_for, Sandbox};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------
// Processes

fn loadgen() -> PathBuf {
    plugin_bin("loadgen")
}

fn wait_port(port: u16) {
    let up = wait_for(Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    });
    assert!(up.is_some(), "nothing listens on 127.0.0.1:{port}");
}

/// `loadgen sse` on 127.0.0.1:`port`: events 1..=`count` on `bench/seq` at
/// `rate`/s, counted from the first reader's connection.
pub(crate) fn start_loadgen_source(port: u16, rate: u64, count: u64) -> Proc {
    let p = Proc::spawn(
        "loadgen sse",
        Command::new(loadgen())
            .args(["sse", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--rate", &rate.to_string(), "--count", &count.to_string()])
            .args(["--warmup", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_port(port);
    p
}

// ---------------------------------------------------------------------------
// The counting subscriber

/// `loadgen subscribe` at QoS 1 with a persistent session.
pub(crate) struct Counter {
    proc: Proc,
    summary: Arc<Mutex<Option<Value>>>,
    progress: Arc<Mutex<Value>>,
    _dir: tempfile::TempDir,
}

impl Counter {
    /// Subscribes to `topic`; returns once the SUBACK arrived. `expect` > 0:
    /// the subscriber ends by itself once 1..=expect (or, with `from_first`,
    /// lowest..=expect) have all arrived.
    pub(crate) fn start(
        broker: &Broker,
        topic: &str,
        session: &str,
        expect: u64,
        from_first: bool,
    ) -> Counter {
        let dir = tempfile::tempdir().expect("temp dir");
        let subscribed = dir.path().join("subscribed");
        let mut cmd = Command::new(loadgen());
        cmd.args([
            "subscribe",
            "--broker",
            &format!("127.0.0.1:{}", broker.port),
        ])
        .args(["--topic", topic, "--qos", "1", "--session", session])
        .args([
            "--expect",
            &expect.to_string(),
            "--idle",
            "1000",
            "--timeout",
            "150",
        ])
        .args(["--progress-ms", "100", "--linger-ms", "300"])
        .arg("--subscribed-file")
        .arg(&subscribed)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        if from_first {
            cmd.arg("--from-first");
        }
        let mut proc = Proc::spawn("loadgen subscribe", &mut cmd);
        let child = proc.child();
        let stdout = child.stdout.take().expect("stdout");
        let stderr = child.stderr.take().expect("stderr");
        let summary = Arc::new(Mutex::new(None));
        let progress = Arc::new(Mutex::new(json!({"distinct": 0, "received": 0})));
        let s2 = Arc::clone(&summary);
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    *s2.lock().unwrap() = Some(v);
                }
            }
        });
        let p2 = Arc::clone(&progress);
        thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) if v["progress"] == true => *p2.lock().unwrap() = v,
                    _ => eprintln!("subscriber: {line}"),
                }
            }
        });
        let ok = wait_for(Duration::from_secs(10), || {
            subscribed.exists().then_some(())
        });
        assert!(ok.is_some(), "the subscriber got no SUBACK within 10 s");
        Counter {
            proc,
            summary,
            progress,
            _dir: dir,
        }
    }

    pub(crate) fn distinct(&self) -> u64 {
        self.progress.lock().unwrap()["distinct"]
            .as_u64()
            .unwrap_or(0)
    }

    /// Waits until `n` distinct numbers arrived.
    fn wait_distinct(&self, n: u64, timeout: Duration) {
        let ok = wait_for(timeout, || (self.distinct() >= n).then_some(()));
        assert!(
            ok.is_some(),
            "the subscriber saw {} distinct events, not {n}, within {timeout:?}",
            self.distinct()
        );
    }

    /// Waits up to `timeout` for the subscriber to end by itself (every
    /// expected number arrived), then stops it (SIGTERM); its summary.
    pub(crate) fn finish(mut self, timeout: Duration) -> Value {
        if self.proc.wait_exit(timeout).is_none() {
            self.proc.signal(libc::SIGTERM);
            self.proc.wait_exit(Duration::from_secs(10));
        }
        let summary = wait_for(Duration::from_secs(5), || {
            self.summary.lock().unwrap().clone()
        });
        summary.expect("the subscriber printed no summary")
    }
}

// ---------------------------------------------------------------------------
// The repeater

/// `app-event-repeater run --name NAME --source SOURCE --sink SINK --qos 1
/// --log 3 EXTRA…`; returns once its API answers.
pub(crate) fn start_repeater<'a>(
    sb: &'a Sandbox,
    name: &str,
    source: &str,
    sink: &str,
    extra: &[&str],
) -> Repeater<'a> {
    Repeater::builder(sb, name)
        .source(source)
        .sink(sink)
        .args(["--qos", "1", "--log", "3"])
        .args(extra)
        .start()
}

/// A `kB` field (`VmRSS`, `VmHWM`) of /proc/PID/status.
fn proc_status_kb(pid: i32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status"))
}

pub(crate) fn m(metrics: &BTreeMap<String, f64>, key: &str) -> u64 {
    let full = format!("app_event_repeater_{key}");
    *metrics
        .get(&full)
        .unwrap_or_else(|| panic!("no metric {full} in {metrics:?}")) as u64
}

/// Waits until the repeater's counters satisfy `done`; the last metrics.
pub(crate) fn wait_metrics(
    r: &Repeater,
    timeout: Duration,
    done: impl Fn(&BTreeMap<String, f64>) -> bool,
) -> BTreeMap<String, f64> {
    let deadline = Instant::now() + timeout;
    loop {
        let metrics = r.metrics();
        if done(&metrics) || Instant::now() > deadline {
            return metrics;
        }
        thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------
// Broker faults

/// Broker frozen (SIGSTOP) for 3 s and resumed, at 2,000 events/s, QoS 1:
/// nothing lost.
#[test]
fn broker_paused_3s_at_2000_events_per_s_loses_nothing() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 16_000;
    let counter = Counter::start(&broker, "bench/seq", "rel-pause", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, 2000, count);
    let r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &["--allowall"],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    broker.pause();
    thread::sleep(Duration::from_secs(3));
    broker.resume();

    let sum = counter.finish(Duration::from_secs(60));
    let metrics = r.metrics();
    eprintln!("subscriber: {sum}\nrepeater: {metrics:?}");
    assert_eq!(
        sum["missing"],
        0,
        "events lost: {sum}\nrepeater log:\n{}",
        r.log()
    );
    assert_eq!(sum["distinct"], count);
    assert_eq!(m(&metrics, "events_dropped_total{reason=\"overflow\"}"), 0);
    let settled = wait_metrics(&r, Duration::from_secs(10), |mt| {
        m(mt, "events_acked_total") == m(mt, "events_accepted_total")
    });
    assert_eq!(
        m(&settled, "events_acked_total"),
        m(&settled, "events_accepted_total"),
        "acked != accepted"
    );
}

/// Issue 11: a source far faster than the broker, into a healthy broker,
/// with the default flags and a small buffer. The default `--overflow
/// block` reads the source more slowly instead of dropping; the same burst
/// with `--overflow drop-oldest` drops, so the first half can fail.
#[test]
fn a_full_speed_burst_is_slowed_down_not_dropped_by_default() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let count = 30_000;
    let burst = |overflow: Option<&str>, session: &str| {
        let sb = Sandbox::new();
        let counter = Counter::start(&broker, "bench/seq", session, count, false);
        let port = free_port();
        // A million a second: as fast as the generator can write.
        let _source = start_loadgen_source(port, 1_000_000, count);
        let mut extra = vec!["--allowall", "--buffer", "500"];
        if let Some(o) = overflow {
            extra.extend(["--overflow", o]);
        }
        let r = start_repeater(
            &sb,
            "burst",
            &format!("http://127.0.0.1:{port}"),
            &broker.url(),
            &extra,
        );
        let metrics = wait_metrics(&r, Duration::from_secs(60), |mt| {
            m(mt, "events_received_total") == count
                && m(mt, "events_buffered") == 0
                && m(mt, "events_inflight") == 0
        });
        let dropped = m(&metrics, "events_dropped_total{reason=\"overflow\"}");
        let _ = wait_for(Duration::from_secs(20), || {
            (counter.distinct() + dropped >= count).then_some(())
        });
        (counter.finish(Duration::from_secs(5)), dropped, r.log())
    };

    let (sum, dropped, log) = burst(None, "rel-burst-default");
    assert_eq!(dropped, 0, "the default dropped events:\n{log}");
    assert_eq!(sum["missing"], 0, "events lost: {sum}\n{log}");
    assert_eq!(sum["distinct"], count);

    let (sum, dropped, _) = burst(Some("drop-oldest"), "rel-burst-drop");
    assert!(
        dropped > 0,
        "drop-oldest kept up with a full-speed source: {sum}"
    );
    assert_eq!(
        sum["missing"], dropped,
        "what is missing is what was counted as dropped"
    );
}

/// Broker stopped gracefully and started again on the same port, with
/// persistence and a persistent subscriber session: nothing lost.
#[test]
fn broker_restarted_gracefully_with_persistence_loses_nothing() {
    let Some(mut broker) = Broker::start_with(true) else {
        return;
    };
    let sb = Sandbox::new();
    let count = 12_000;
    let counter = Counter::start(&broker, "bench/seq", "rel-restart", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, 2000, count);
    let r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &["--allowall"],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    broker.stop();
    thread::sleep(Duration::from_secs(1));
    broker.restart();

    let sum = counter.finish(Duration::from_secs(60));
    let metrics = r.metrics();
    eprintln!("subscriber: {sum}\nrepeater: {metrics:?}");
    assert_eq!(
        sum["missing"],
        0,
        "events lost: {sum}\nrepeater log:\n{}\nbroker log:\n{}",
        r.log(),
        broker.log()
    );
    assert_eq!(sum["distinct"], count);
    assert!(
        m(&metrics, "sink_disconnects_total") >= 1,
        "the broker restart went unnoticed"
    );
    // Said once each, however many retries there were in between.
    let log = r.log();
    assert_eq!(
        log.matches("lost the connection to the broker").count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.matches("connected to the broker").count() - 1,
        1,
        "one 'again' line: {log}"
    );
}

/// Broker killed (SIGKILL) and restarted: every event the repeater accepted
/// is acknowledged by the broker in the end, by the repeater's own counters.
#[test]
fn broker_killed_every_accepted_event_is_acknowledged() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 12_000;
    let counter = Counter::start(&broker, "bench/seq", "rel-kill", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, 2000, count);
    let r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &["--allowall"],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    broker.kill();
    thread::sleep(Duration::from_secs(1));
    broker.restart();

    let metrics = wait_metrics(&r, Duration::from_secs(60), |mt| {
        m(mt, "events_received_total") == count
            && m(mt, "events_acked_total") == m(mt, "events_accepted_total")
    });
    let sum = counter.finish(Duration::from_secs(5));
    eprintln!("repeater: {metrics:?}\nsubscriber (its session died with the broker): {sum}");
    let accepted = m(&metrics, "events_accepted_total");
    assert_eq!(
        m(&metrics, "events_received_total"),
        count,
        "log:\n{}",
        r.log()
    );
    assert_eq!(accepted, count, "every event was routed (--allowall)");
    assert_eq!(
        m(&metrics, "events_acked_total"),
        accepted,
        "accepted events never acknowledged; log:\n{}",
        r.log()
    );
    assert_eq!(m(&metrics, "events_buffered"), 0);
    assert_eq!(m(&metrics, "events_inflight"), 0);
    assert_eq!(m(&metrics, "events_dropped_total{reason=\"overflow\"}"), 0);
    assert_eq!(m(&metrics, "events_failed_total{reason=\"sink_error\"}"), 0);
    assert!(m(&metrics, "sink_disconnects_total") >= 1);
}

/// A buffer (1,000 events) much smaller than the outage (4 s at 2,000/s):
/// the subscriber's missing count equals the repeater's dropped counter, and
/// the repeater's memory does not grow with the outage.
#[test]
fn buffer_smaller_than_outage_missing_equals_dropped_and_memory_is_bounded() {
    let Some(mut broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 16_000;
    let counter = Counter::start(&broker, "bench/seq", "rel-overflow", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, 2000, count);
    let r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &[
            "--allowall",
            "--buffer",
            "1000",
            "--overflow",
            "drop-oldest",
        ],
    );
    counter.wait_distinct(2000, Duration::from_secs(20));

    broker.pause();
    thread::sleep(Duration::from_secs(1));
    let rss_early = proc_status_kb(r.pid(), "VmRSS");
    thread::sleep(Duration::from_secs(3));
    let rss_late = proc_status_kb(r.pid(), "VmRSS");
    let during = r.metrics();
    broker.resume();

    // Every event was either delivered or dropped: wait for the repeater to
    // settle, then for the subscriber to have everything not dropped.
    let metrics = wait_metrics(&r, Duration::from_secs(60), |mt| {
        m(mt, "events_received_total") == count
            && m(mt, "events_buffered") == 0
            && m(mt, "events_inflight") == 0
    });
    let dropped = m(&metrics, "events_dropped_total{reason=\"overflow\"}");
    let _ = wait_for(Duration::from_secs(20), || {
        (counter.distinct() + dropped >= count).then_some(())
    });
    thread::sleep(Duration::from_millis(500));
    let sum = counter.finish(Duration::ZERO);
    let hwm = proc_status_kb(r.pid(), "VmHWM");
    eprintln!(
        "subscriber: {sum}\nrepeater: {metrics:?}\nduring the outage: {during:?}\nRSS {rss_early} kB after 1 s, {rss_late} kB after 4 s, peak {hwm} kB"
    );
    assert!(
        dropped > 0,
        "a 4 s outage at 2,000/s should overflow a 1,000-event buffer"
    );
    assert_eq!(
        sum["missing"].as_u64(),
        Some(dropped),
        "missing events ≠ dropped counter: {sum}\nlog:\n{}",
        r.log()
    );
    assert_eq!(m(&metrics, "events_acked_total") + dropped, count);
    // The buffer was full after half a second: 3 more seconds of outage must
    // not cost memory (1,000 events of ~150 bytes are ~150 kB).
    assert!(
        rss_late <= rss_early + 2048,
        "RSS grew from {rss_early} kB to {rss_late} kB while the buffer was full"
    );
    assert!(hwm < 64 * 1024, "peak RSS {hwm} kB is over the 64 MB bound");
}

// ---------------------------------------------------------------------------
// Source faults

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
    let counter = Counter::start(&broker, "bench/seq", "rel-source", count, false);
    let port = free_port();
    let mut source = start_loadgen_source(port, 2000, count);
    let r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
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

// ---------------------------------------------------------------------------
// Repeater faults

/// The repeater killed with SIGKILL while events flow, then started again:
/// its routes are intact and events flow again under the mapped topic (and
/// nowhere else).
#[test]
fn repeater_kill9_and_restart_keeps_routes_and_relays_under_them() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let port = free_port();
    let _source = start_loadgen_source(port, 1000, 60_000);
    let mapped = Counter::start(&broker, "site1/#", "rel-mapped", 0, true);
    let unmapped = Counter::start(&broker, "bench/#", "rel-unmapped", 0, true);
    let mut r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &[],
    );
    let routes = r#"[{"sourcetopic":"bench/","sinktopic":"site1/{suffix}"},{"sourcetopic":"other/x","sinktopic":"elsewhere"}]"#;
    let (status, body) = r.send_json("POST", "/events", routes);
    assert!(
        status == 200 || status == 201,
        "POST /events: {status} {body}"
    );
    let (_, listed_before) = r.get("/events");
    mapped.wait_distinct(500, Duration::from_secs(20));

    r.kill9();
    let seen_at_kill = mapped.distinct();
    r.restart();

    let (status, listed_after) = r.get("/events");
    assert_eq!(status, 200);
    let before: Value = serde_json::from_str(&listed_before).expect("JSON routes");
    let after: Value = serde_json::from_str(&listed_after).expect("JSON routes");
    assert_eq!(after, before, "routes changed across kill -9");
    assert_eq!(after.as_array().map(Vec::len), Some(2), "{after}");
    mapped.wait_distinct(seen_at_kill + 1000, Duration::from_secs(20));

    let mapped_sum = mapped.finish(Duration::ZERO);
    let unmapped_sum = unmapped.finish(Duration::ZERO);
    eprintln!("site1/#: {mapped_sum}\nbench/#: {unmapped_sum}");
    assert_eq!(
        unmapped_sum["received"], 0,
        "events published under their own topic"
    );
    assert_eq!(unmapped_sum["warmup"], 0);
}

// ---------------------------------------------------------------------------
// Repeater crashes (issue 11): the checkpoint

/// Duplicates one SIGKILL may cause, as docs/reliability.md states it: the
/// events in the buffer (`--buffer` counts queued and in flight) plus those
/// completed since the last checkpoint write (100 ms at `rate`), with the
/// write allowed to run late by up to 400 ms on a loaded machine.
fn duplicate_bound(buffer: u64, rate: u64) -> u64 {
    buffer + rate / 2
}

/// Issue 11: the repeater SIGKILLed five times while a numbered source
/// streams at 1,000 events/s at QoS 1: every event reaches a persistent
/// subscriber (the restarted repeater resumes from its checkpoint and the
/// source replays), and duplicates stay within the documented bound.
#[test]
fn repeater_sigkilled_five_times_at_1000_per_s_loses_nothing() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let (rate, count, buffer, kills) = (1000, 14_000, 1000, 5);
    let counter = Counter::start(&broker, "bench/seq", "crash-kill", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, rate, count);
    let mut r = start_repeater(
        &sb,
        "crash",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &["--allowall", "--buffer", &buffer.to_string()],
    );
    for kill in 1..=kills {
        counter.wait_distinct(kill * 2000, Duration::from_secs(60));
        r.kill9();
        r.restart();
    }

    let sum = counter.finish(Duration::from_secs(90));
    eprintln!("subscriber: {sum}");
    let log = r.log();
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{log}");
    assert_eq!(sum["distinct"], count);
    let bound = kills * duplicate_bound(buffer, rate);
    assert!(
        sum["duplicates"].as_u64().unwrap() <= bound,
        "{} duplicates, over the bound of {bound}: {sum}",
        sum["duplicates"]
    );
    assert_eq!(
        log.matches("resuming after event id").count() as u64,
        kills,
        "every restart resumes from the checkpoint: {log}"
    );
}

/// Issue 11: the same with the broker down during one of the kills: the
/// events buffered when the repeater dies were never acknowledged, so the
/// checkpoint is before them and the source replays them after the restart.
#[test]
fn repeater_sigkilled_while_the_broker_is_down_loses_nothing() {
    let Some(mut broker) = Broker::start_with(true) else {
        return;
    };
    let sb = Sandbox::new();
    let (rate, count, buffer, kills) = (1000, 13_000, 1000, 5);
    let counter = Counter::start(&broker, "bench/seq", "crash-broker", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, rate, count);
    let mut r = start_repeater(
        &sb,
        "crash",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &["--allowall", "--buffer", &buffer.to_string()],
    );
    let mut held_at_kill = 0;
    for kill in 1..=kills {
        counter.wait_distinct(kill * 2000, Duration::from_secs(60));
        if kill == 3 {
            broker.stop();
            // The repeater fills its buffer with events it cannot deliver.
            let metrics = wait_metrics(&r, Duration::from_secs(10), |m| {
                m.get("app_event_repeater_events_buffered")
                    .copied()
                    .unwrap_or(0.0)
                    >= 500.0
            });
            held_at_kill = m(&metrics, "events_buffered") + m(&metrics, "events_inflight");
        }
        r.kill9();
        r.restart();
        if kill == 3 {
            thread::sleep(Duration::from_secs(1));
            broker.restart();
        }
    }

    let sum = counter.finish(Duration::from_secs(90));
    eprintln!("subscriber: {sum}; held at the kill with the broker down: {held_at_kill}");
    let log = r.log();
    assert!(
        held_at_kill >= 500,
        "the buffer did not fill: {held_at_kill}"
    );
    assert_eq!(
        sum["missing"],
        0,
        "events lost: {sum}\nlog:\n{log}\nbroker log:\n{}",
        broker.log()
    );
    assert_eq!(sum["distinct"], count);
    let bound = kills * duplicate_bound(buffer, rate);
    assert!(
        sum["duplicates"].as_u64().unwrap() <= bound,
        "{} duplicates, over the bound of {bound}: {sum}",
        sum["duplicates"]
    );
}

/// Issue 11: app-event-time SIGKILLed and started again: its ids keep
/// increasing, the repeater (resuming with an id from the earlier run) gets
/// the new run's events from its first one, and keeps relaying.
#[test]
fn event_time_sigkilled_and_restarted_the_repeater_keeps_relaying() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = common::broker::Subscriber::start(&broker, "test/seq", None) else {
        return;
    };
    let sb = Sandbox::new();
    let args = ["--name", "crash-time", "--rate", "1000"];
    let mut source = EventTime::start(&sb, &args);
    let r = start_repeater(
        &sb,
        "crash",
        &source.socket().to_string_lossy(),
        &broker.url(),
        &["--allowall"],
    );
    let numbers = |msgs: &[(String, String)]| -> Vec<u64> {
        msgs.iter()
            .filter_map(|(_, p)| serde_json::from_str::<Value>(p).ok())
            .filter_map(|v| v["data"].as_u64())
            .collect()
    };
    // The numbers after the last step down: the new run, which numbers its
    // test stream from 1 again (events of the old run may still arrive
    // after the kill, so the count at the kill does not mark it).
    let new_run = |m: &[(String, String)]| -> Vec<u64> {
        let n = numbers(m);
        let start = (1..n.len())
            .rev()
            .find(|&i| n[i] < n[i - 1])
            .unwrap_or(n.len());
        n[start..].iter().copied().filter(|&x| x <= 2000).collect()
    };
    sub.wait(Duration::from_secs(20), |m| numbers(m).len() >= 1000);
    source.signal(libc::SIGKILL);
    let _source = EventTime::start(&sb, &args);
    let got = sub.wait(Duration::from_secs(30), |m| new_run(m).len() >= 2000);
    let new_run = new_run(&got);
    let log = r.log();
    assert_eq!(
        new_run,
        (1..=2000).collect::<Vec<u64>>(),
        "the new run's events, in order, from its first: log:\n{log}"
    );
    let metrics = r.metrics();
    assert!(m(&metrics, "source_disconnects_total") >= 1);
    assert_eq!(m(&metrics, "source_connected"), 1);
    assert!(
        log.contains("from an earlier run"),
        "the source's notice is logged: {log}"
    );
}

/// Issue 11: a repeater stopped longer than the source's history resumes
/// from its checkpoint; the source says which events it no longer holds,
/// and the repeater counts them in `events_missed_total` (exactly that
/// range) and warns once: a loss upstream is never silent.
#[test]
fn events_the_source_no_longer_holds_are_counted_as_missed() {
    let sb = Sandbox::new();
    let source = EventTime::start(
        &sb,
        &["--name", "miss-time", "--rate", "1000", "--history", "100"],
    );
    let socket = source.socket().to_string_lossy().into_owned();
    let mut r = Repeater::builder(&sb, "miss")
        .source(&socket)
        .args(["--sinkprotocol", "stderr", "--allowall", "--log", "3"])
        .start();
    let checkpoint = sb.data_dir().join("event-repeater/miss.checkpoint");
    let ok = wait_metrics(&r, Duration::from_secs(20), |m| {
        m.get("app_event_repeater_events_acked_total")
            .copied()
            .unwrap_or(0.0)
            >= 500.0
    });
    assert!(m(&ok, "events_acked_total") >= 500, "{}", r.log());
    assert_eq!(r.signal(libc::SIGTERM).code(), Some(0));
    let text = std::fs::read_to_string(&checkpoint).expect("a checkpoint after a clean stop");
    let saved: u64 = serde_json::from_str::<Value>(&text).unwrap()["last_event_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // 1.5 s at 1,000/s: far more than the 100 events the source holds.
    thread::sleep(Duration::from_millis(1500));
    r.restart();
    let metrics = wait_metrics(&r, Duration::from_secs(20), |m| {
        m.get("app_event_repeater_events_missed_total")
            .copied()
            .unwrap_or(0.0)
            > 0.0
    });
    let log = r.log();
    let missed = m(&metrics, "events_missed_total");
    assert!(missed >= 1000, "missed {missed}; log:\n{log}");
    let notice = log
        .lines()
        .find(|l| l.contains("skipped events for this repeater"))
        .unwrap_or_else(|| panic!("no warning: {log}"));
    // The warning names the range, which starts right after the checkpoint
    // and is exactly as long as the count.
    assert!(
        notice.contains(&format!("events {}..", saved + 1)),
        "{notice}"
    );
    let to: u64 = notice
        .split(&format!("events {}..", saved + 1))
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("{notice}"));
    assert_eq!(missed, to - saved, "{notice}");
    assert_eq!(log.matches("skipped events for this repeater").count(), 1);
    assert!(
        log.contains(&format!("resuming after event id {saved}")),
        "{log}"
    );
}

// ---------------------------------------------------------------------------
// Hardening (issue 11): the state file and the command line

/// Runs `app-event-repeater run ARGS` to its end (10 s at most); its exit
/// code, stderr and how long it took.
fn run_to_end(sb: &Sandbox, args: &[&str]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let mut child = sb
        .command(plugin_bin("app-event-repeater"))
        .arg("run")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start app-event-repeater");
    let status = wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten());
    if status.is_none() {
        let _ = child.kill();
    }
    let out = child.wait_with_output().expect("wait");
    let code = status.and_then(|s| s.code());
    (
        code,
        String::from_utf8_lossy(&out.stderr).into_owned(),
        started.elapsed(),
    )
}

/// `--state FIFO` blocked in open() with no message; it is refused at once.
#[test]
fn a_fifo_as_state_file_is_refused_at_once() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("routes.fifo");
    common::mkfifo(&fifo);
    let (code, err, took) = run_to_end(
        &sb,
        &[
            "--name",
            "h",
            "--sinkprotocol",
            "stderr",
            "--state",
            fifo.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is a FIFO, not a regular file"), "{err}");
    assert!(err.lines().count() == 1, "one line: {err}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

/// `--password-file` (like `--ca-file`, `--tls-cert`, `--tls-key`, `--creds`)
/// is read only if it is a regular file of bounded size: a FIFO blocked the
/// read, `/dev/zero` filled the memory.
#[test]
fn a_fifo_or_a_device_as_password_file_is_refused_at_once() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("password.fifo");
    common::mkfifo(&fifo);
    for (file, says) in [
        (fifo.to_str().unwrap(), "is a FIFO, not a regular file"),
        ("/dev/zero", "is a character device, not a regular file"),
    ] {
        let (code, err, took) = run_to_end(
            &sb,
            &[
                "--name",
                "pw",
                "--sink",
                "tcp://127.0.0.1:1",
                "--username",
                "u",
                "--password-file",
                file,
            ],
        );
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(took < Duration::from_secs(5), "took {took:?}");
    }
}

/// `--drain-timeout 999999999999999999m` overflowed; it is a usage error.
#[test]
fn an_overflowing_drain_timeout_is_a_usage_error() {
    let sb = Sandbox::new();
    let (code, err, _) = run_to_end(&sb, &["--drain-timeout", "999999999999999999m"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--drain-timeout") && err.contains("too long"),
        "{err}"
    );
    let (code, err, _) = run_to_end(&sb, &["--drain-timeout", "2h"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("maximum of 1h"), "{err}");
}

/// The routes file and the checkpoint are 0600 in a 0700 directory; the
/// kebab-case `--sink-protocol` and `--allow-all` work as the old spellings.
#[test]
fn state_and_checkpoint_are_private_and_kebab_case_flags_work() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--name", "h-time", "--rate", "100"]);
    let r = Repeater::builder(&sb, "h")
        .source(&source.socket().to_string_lossy())
        .args(["--sink-protocol", "stderr", "--allow-all", "--log", "3"])
        .start();
    let (status, body) = r.send_json("POST", "/events", r#"{"sourcetopic":"a","sinktopic":"b"}"#);
    assert!(status == 200 || status == 201, "{status} {body}");
    let dir = sb.data_dir().join("event-repeater");
    let checkpoint = dir.join("h.checkpoint");
    let written = wait_for(Duration::from_secs(10), || {
        checkpoint.exists().then_some(())
    });
    assert!(written.is_some(), "no checkpoint: {}", r.log());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join("h.routes.json")), 0o600);
    assert_eq!(mode(&checkpoint), 0o600);
    let log = r.log();
    assert!(log.contains("--allowall"), "{log}");
    assert!(
        log.contains("\"sink_topic\":\"test/seq\""),
        "relayed to stderr: {log}"
    );
}

/// The signal mask survives exec: started by `app`, which execs it with
/// SIGTERM blocked, the repeater still stops on SIGTERM.
#[test]
fn the_repeater_stops_on_sigterm_even_when_started_with_it_blocked() {
    let sb = Sandbox::new();
    let socket = sb.plugin_runtime_dir().join("blocked.sock");
    let none = sb.runtime_dir().join("no-source.sock");
    let status = common::process::stopped_by_sigterm_through_app(
        &sb,
        &[
            "event-repeater",
            "run",
            "--name",
            "blocked",
            "--sinkprotocol",
            "stderr",
            "--source",
            none.to_str().unwrap(),
        ],
        socket,
    );
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

// ---------------------------------------------------------------------------
// Hostile API input

/// Malformed, oversized and slow-loris requests on the API socket while
/// events flow: every event is still delivered, the API keeps answering
/// (within 2 s), and nothing changed the routes.
#[test]
fn hostile_api_requests_while_events_flow() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let sb = Sandbox::new();
    let count = 8_000;
    let counter = Counter::start(&broker, "bench/seq", "rel-hostile", count, false);
    let port = free_port();
    let _source = start_loadgen_source(port, 1000, count);
    let r = start_repeater(
        &sb,
        "rel",
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        &["--allowall"],
    );
    let socket = r.socket();
    counter.wait_distinct(500, Duration::from_secs(20));

    let stop = Arc::new(AtomicBool::new(false));
    // Slow loris: 64 connections sending a header byte every 200 ms.
    let mut lorises = Vec::new();
    for _ in 0..64 {
        let (socket, stop) = (socket.clone(), Arc::clone(&stop));
        lorises.push(thread::spawn(move || {
            let Ok(mut s) = UnixStream::connect(&socket) else {
                return;
            };
            let _ = s.write_all(b"POST /events HTTP/1.1\r\nHost: x\r\nX-Slow: ");
            while !stop.load(Ordering::SeqCst) {
                if s.write_all(b"a").is_err() {
                    return;
                }
                thread::sleep(Duration::from_millis(200));
            }
        }));
    }

    let mut bad: Vec<(String, Vec<u8>)> = vec![
        ("garbage".into(), b"\x00\xff\xfe garbage \r\n\r\n".to_vec()),
        ("no HTTP version".into(), b"GET /events\r\n\r\n".to_vec()),
        (
            "header without colon".into(),
            b"GET /events HTTP/1.1\r\nnonsense\r\n\r\n".to_vec(),
        ),
        (
            "huge header".into(),
            [
                b"GET /events HTTP/1.1\r\nX-Big: ".to_vec(),
                vec![b'a'; 1 << 20],
                b"\r\n\r\n".to_vec(),
            ]
            .concat(),
        ),
        (
            "huge request line".into(),
            [
                b"GET /".to_vec(),
                vec![b'a'; 1 << 20],
                b" HTTP/1.1\r\n\r\n".to_vec(),
            ]
            .concat(),
        ),
        (
            "bad content-length".into(),
            b"POST /events HTTP/1.1\r\nContent-Length: x\r\n\r\n{}".to_vec(),
        ),
        (
            "truncated body".into(),
            b"POST /events HTTP/1.1\r\nContent-Length: 100\r\n\r\n[{\"sourcet".to_vec(),
        ),
        (
            "bad chunk size".into(),
            b"POST /events HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
                .to_vec(),
        ),
        ("oversized body".into(), {
            let body = format!("[{{\"sourcetopic\":\"{}\"}}]", "a".repeat(2 << 20));
            format!("POST /events HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).into_bytes()
        }),
    ];
    for body in [
        "{",
        "[{\"sourcetopic\": 1}]",
        "[{\"sourcetopic\":\"\"}]",
        "[{\"sourcetopic\":\"a\",\"bogus\":true}]",
        "\"\\ud800\"",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "\u{0}",
    ] {
        bad.push((
            format!("bad JSON {body:?}"),
            format!(
                "POST /events HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes(),
        ));
    }
    // A deterministic stream of random bytes after a valid request line.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..100 {
        let mut req = b"PUT /events HTTP/1.1\r\n".to_vec();
        for _ in 0..(64 + i * 7) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            req.push((x >> 32) as u8);
        }
        req.extend_from_slice(b"\r\n\r\n");
        bad.push((format!("random header bytes #{i}"), req));
    }

    let mut worst = Duration::ZERO;
    for (i, (what, bytes)) in bad.iter().enumerate() {
        let answer = raw_request(&socket, bytes, Duration::from_secs(3));
        if let Some((status, body)) = &answer {
            assert!(
                (400..500).contains(status),
                "{what}: status {status} {body}"
            );
        }
        if what == "oversized body" {
            assert_eq!(
                answer.as_ref().map(|a| a.0),
                Some(413),
                "{what}: {answer:?}"
            );
        }
        if what.starts_with("bad JSON") {
            let (_, body) = answer.as_ref().expect("bad JSON gets an answer");
            let v: Value = serde_json::from_str(body)
                .unwrap_or_else(|e| panic!("{what}: error body is not JSON ({e}): {body}"));
            assert!(v["error"].is_string(), "{what}: {body}");
        }
        if i % 10 == 0 {
            let t = Instant::now();
            let (status, _) = r.get("/healthz");
            assert_eq!(status, 200);
            worst = worst.max(t.elapsed());
        }
    }
    // The slow connections are still open: the API must still answer.
    for _ in 0..10 {
        let t = Instant::now();
        let (status, body) = r.get("/events");
        assert_eq!(status, 200, "{body}");
        assert_eq!(body.trim(), "[]", "hostile input changed the routes");
        worst = worst.max(t.elapsed());
        thread::sleep(Duration::from_millis(100));
    }
    stop.store(true, Ordering::SeqCst);
    for l in lorises {
        let _ = l.join();
    }

    let sum = counter.finish(Duration::from_secs(40));
    eprintln!("subscriber: {sum}\nslowest API answer under attack: {worst:?}");
    assert!(
        worst < Duration::from_secs(2),
        "the API took {worst:?} to answer"
    );
    assert_eq!(sum["missing"], 0, "events lost: {sum}\nlog:\n{}", r.log());
    assert_eq!(sum["distinct"], count);
}
