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
use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::broker::Broker;
use common::process::Proc;
use common::repeater::Repeater;
use common::{free_port, plugin_bin, wait_for, Sandbox};
use serde_json::{json, Value};

mod broker;
mod chaos_source;
mod crashes;
mod fresh_start;
mod hardening;
mod hostile_api;
mod ids_on_some_events;
mod qos2;
mod source;

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
    pub(crate) fn wait_distinct(&self, n: u64, timeout: Duration) {
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

/// What most tests here start, in this order: a subscriber counting `count`
/// events on `bench/seq` (persistent session `session`), a `loadgen sse`
/// source sending them at `rate`/s on a free port, and a repeater `name`
/// run with `extra` between the two; with the source's port.
pub(crate) fn flow<'a>(
    sb: &'a Sandbox,
    broker: &Broker,
    session: &str,
    rate: u64,
    count: u64,
    name: &str,
    extra: &[&str],
) -> (Counter, Proc, Repeater<'a>, u16) {
    let counter = Counter::start(broker, "bench/seq", session, count, false);
    let port = free_port();
    let source = start_loadgen_source(port, rate, count);
    let repeater = start_repeater(
        sb,
        name,
        &format!("http://127.0.0.1:{port}"),
        &broker.url(),
        extra,
    );
    (counter, source, repeater, port)
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
