//! sd_notify: READY, STATUS, WATCHDOG and STOPPING from the repeater and
//! event-time; a wedged relay stops pinging the watchdog.

use std::fs;
use std::io::Read;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use crate::common::event_time::EventTime;
use crate::common::process::Proc;
use crate::common::repeater::raw_request;
use crate::common::{plugin_bin, Sandbox};

use super::healthz;

/// The test's end of `NOTIFY_SOCKET`: every datagram, with when it came.
struct NotifySocket {
    path: PathBuf,
    rx: Receiver<(Instant, String)>,
    seen: Vec<(Instant, String)>,
}

impl NotifySocket {
    fn bind(sb: &Sandbox) -> NotifySocket {
        let path = sb.path().join("notify.sock");
        let sock = UnixDatagram::bind(&path).expect("bind the notify socket");
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .expect("set a read timeout");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut buf = vec![0u8; 4096];
            loop {
                match sock.recv(&mut buf) {
                    Ok(n) => {
                        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
                        if tx.send((Instant::now(), text)).is_err() {
                            return;
                        }
                    }
                    // The test is over once nobody receives.
                    Err(_) => {
                        if tx.send((Instant::now(), String::new())).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        NotifySocket {
            path,
            rx,
            seen: Vec::new(),
        }
    }

    /// Waits up to `timeout` for a message holding the line `line`.
    fn wait_line(&mut self, line: &str, timeout: Duration) -> Option<Instant> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok((at, text)) = self.rx.recv_timeout(Duration::from_millis(250)) {
                if text.is_empty() {
                    continue;
                }
                let hit = text.lines().any(|l| l == line);
                self.seen.push((at, text));
                if hit {
                    return Some(at);
                }
            }
        }
        None
    }

    /// Collects messages for `span`; returns when each `WATCHDOG=1` came.
    fn pings_during(&mut self, span: Duration) -> Vec<Instant> {
        let start = self.seen.len();
        let deadline = Instant::now() + span;
        while Instant::now() < deadline {
            if let Ok((at, text)) = self.rx.recv_timeout(Duration::from_millis(100)) {
                if !text.is_empty() {
                    self.seen.push((at, text));
                }
            }
        }
        self.seen[start..]
            .iter()
            .filter(|(_, t)| t.lines().any(|l| l == "WATCHDOG=1"))
            .map(|(at, _)| *at)
            .collect()
    }

    /// Every message so far, one per line, `+SECONDS MESSAGE`.
    fn transcript(&self) -> String {
        let Some((t0, _)) = self.seen.first() else {
            return String::new();
        };
        self.seen
            .iter()
            .map(|(at, text)| {
                format!(
                    "+{:.2}s {}",
                    at.duration_since(*t0).as_secs_f64(),
                    text.trim_end().replace('\n', " | ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The longest gap between two pings, and the mean one.
fn gaps(pings: &[Instant]) -> (Duration, Duration) {
    let gaps: Vec<Duration> = pings.windows(2).map(|w| w[1] - w[0]).collect();
    let max = gaps.iter().max().copied().unwrap_or_default();
    let mean = gaps.iter().sum::<Duration>() / u32::try_from(gaps.len().max(1)).unwrap_or(1);
    (max, mean)
}

/// A pipe reader for the repeater's stderr that can stop reading (the pipe
/// then fills and the stderr sink's write blocks) and start again.
struct StallablePipe {
    stalled: Arc<AtomicBool>,
    read: Arc<std::sync::atomic::AtomicU64>,
}

impl StallablePipe {
    fn start(mut pipe: std::process::ChildStderr) -> StallablePipe {
        let stalled = Arc::new(AtomicBool::new(false));
        let read = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (s, r) = (stalled.clone(), read.clone());
        thread::spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                if s.load(Ordering::Relaxed) {
                    thread::sleep(Duration::from_millis(20));
                    continue;
                }
                match pipe.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        r.fetch_add(n as u64, Ordering::Relaxed);
                    }
                }
            }
        });
        StallablePipe { stalled, read }
    }
}

/// `sh -c 'WATCHDOG_PID=$$ exec …'`: systemd names the main pid, which a
/// test cannot know before the spawn.
fn with_watchdog_pid(sb: &Sandbox, program: &Path) -> Command {
    let mut cmd = sb.command("sh");
    cmd.args([
        "-c",
        "WATCHDOG_PID=$$; export WATCHDOG_PID; exec \"$@\"",
        "sh",
    ])
    .arg(program);
    cmd
}

#[test]
fn the_repeater_notifies_ready_status_watchdog_and_stopping_and_a_wedged_relay_stops_pinging() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--name", "src", "--rate", "2000"]);
    let mut notify = NotifySocket::bind(&sb);
    let socket = sb.plugin_runtime_dir().join("edge.sock");
    // WATCHDOG_USEC 2 s: a ping is due every second. Started through `app`,
    // as the unit starts it: pings come only if `app` exec'd the repeater in
    // the process systemd would know (sd-notify checks WATCHDOG_PID).
    let mut cmd = with_watchdog_pid(&sb, &crate::common::app_bin());
    cmd.args([
        "event-repeater",
        "run",
        "--name",
        "edge",
        "--sinkprotocol",
        "stderr",
        "--allowall",
    ])
    .args(["--source", &source.socket().to_string_lossy()])
    .env("NOTIFY_SOCKET", &notify.path)
    .env("WATCHDOG_USEC", "2000000")
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut proc = Proc::spawn("app-event-repeater", &mut cmd);
    let pipe = StallablePipe::start(proc.child().stderr.take().expect("a stderr pipe"));

    // READY=1, and the API answers the moment it came.
    let ready = notify.wait_line("READY=1", Duration::from_secs(20));
    assert!(ready.is_some(), "no READY=1: {}", notify.transcript());
    assert_eq!(
        healthz(&socket),
        Some(200),
        "READY=1 before the API answers"
    );
    assert!(
        notify
            .seen
            .iter()
            .any(|(_, t)| t.contains("STATUS=relaying")),
        "READY=1 came without a status: {}",
        notify.transcript()
    );

    // Healthy: a ping every second (half of 2 s), never a gap of 2 s.
    let pings = notify.pings_during(Duration::from_secs(6));
    let (max, mean) = gaps(&pings);
    assert!(
        pings.len() >= 4,
        "{} pings in 6 s: {}",
        pings.len(),
        notify.transcript()
    );
    assert!(max < Duration::from_secs(2), "a {max:?} gap between pings");
    assert!(
        mean >= Duration::from_millis(900),
        "pings every {mean:?}: more often than half the period"
    );
    // The periodic status, with the rate of events relayed.
    assert!(
        notify.wait_line_containing("events/s", Duration::from_secs(8)),
        "no periodic STATUS=: {}",
        notify.transcript()
    );
    assert!(
        pipe.read.load(Ordering::Relaxed) > 0,
        "the stderr sink wrote nothing"
    );

    // Wedge the relay: stderr is no longer read, so once the pipe is full
    // the stderr sink's write blocks (a stuck task in a live process).
    pipe.stalled.store(true, Ordering::Relaxed);
    let quiet = notify.pings_during(Duration::from_secs(2)); // the pipe fills
    let wedged = notify.pings_during(Duration::from_secs(6));
    assert!(
        wedged.is_empty(),
        "{} pings while the sink was stuck (the last 6 s of 8; {} in the first 2): {}",
        wedged.len(),
        quiet.len(),
        notify.transcript()
    );
    assert!(proc.alive(), "the repeater died instead of wedging");
    let state = fs::read_to_string(format!("/proc/{}/stat", proc.pid())).unwrap_or_default();
    assert!(
        !state.contains(") T "),
        "the process is stopped, not wedged: {state}"
    );

    // Unwedged, the pings come back: they were missing because of the stuck
    // loop, not because the watchdog gave up.
    pipe.stalled.store(false, Ordering::Relaxed);
    let back = notify.pings_during(Duration::from_secs(4));
    assert!(
        !back.is_empty(),
        "no pings after the sink ran again: {}",
        notify.transcript()
    );

    // SIGTERM: STOPPING=1 as the drain begins, then a clean exit.
    proc.signal(libc::SIGTERM);
    let stopping = notify.wait_line("STOPPING=1", Duration::from_secs(20));
    assert!(stopping.is_some(), "no STOPPING=1: {}", notify.transcript());
    let status = proc.wait_exit(Duration::from_secs(30));
    assert_eq!(status.and_then(|s| s.code()), Some(0));
    notify.pings_during(Duration::from_millis(300));
    eprintln!(
        "notify messages from start to stop:\n{}",
        notify.transcript()
    );
    let last = notify.seen.last().map(|(_, t)| t.as_str()).unwrap_or("");
    assert!(
        last.starts_with("STATUS=stopped"),
        "{}",
        notify.transcript()
    );
}

impl NotifySocket {
    /// Waits up to `timeout` for a message containing `part`.
    fn wait_line_containing(&mut self, part: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        if self.seen.iter().any(|(_, t)| t.contains(part)) {
            return true;
        }
        while Instant::now() < deadline {
            if let Ok((at, text)) = self.rx.recv_timeout(Duration::from_millis(250)) {
                let hit = text.contains(part);
                if !text.is_empty() {
                    self.seen.push((at, text));
                }
                if hit {
                    return true;
                }
            }
        }
        false
    }
}

#[test]
fn event_time_notifies_ready_watchdog_and_stopping() {
    let sb = Sandbox::new();
    let mut notify = NotifySocket::bind(&sb);
    let socket = sb.plugin_runtime_dir().join("clock.sock");
    let mut cmd = with_watchdog_pid(&sb, &plugin_bin("app-event-time"));
    cmd.args(["--name", "clock"])
        .env("NOTIFY_SOCKET", &notify.path)
        .env("WATCHDOG_USEC", "2000000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut proc = Proc::spawn("app-event-time", &mut cmd);
    assert!(
        notify
            .wait_line("READY=1", Duration::from_secs(20))
            .is_some(),
        "no READY=1: {}",
        notify.transcript()
    );
    let topics = raw_request(
        &socket,
        b"GET /topics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(5),
    );
    assert_eq!(
        topics.map(|(s, _)| s),
        Some(200),
        "READY=1 before the API answers"
    );
    let pings = notify.pings_during(Duration::from_secs(4));
    let (max, _) = gaps(&pings);
    assert!(pings.len() >= 2, "{}", notify.transcript());
    assert!(max < Duration::from_secs(2), "a {max:?} gap between pings");
    proc.signal(libc::SIGTERM);
    assert!(
        notify
            .wait_line("STOPPING=1", Duration::from_secs(20))
            .is_some(),
        "no STOPPING=1: {}",
        notify.transcript()
    );
    assert_eq!(
        proc.wait_exit(Duration::from_secs(20))
            .and_then(|s| s.code()),
        Some(0)
    );
}

/// Issue 30: a sink that takes nothing for 10 s while events wait makes
/// `STATUS=` say `degraded:` with the reason (before, the line said only
/// "waiting for the sink", which is also what a short outage says; that
/// line comes first here, so the test would see a status without the word).
#[test]
fn a_stalled_sink_makes_the_status_line_say_degraded() {
    let sb = Sandbox::new();
    let source = EventTime::start(&sb, &["--name", "src", "--rate", "100"]);
    let mut notify = NotifySocket::bind(&sb);
    // Nothing listens there: the events wait, none is acknowledged.
    let port = crate::common::free_port();
    let mut cmd = sb.command(crate::common::plugin_bin("app-event-repeater"));
    cmd.args(["run", "--name", "stalled", "--allowall"])
        .args(["--sink", &format!("tcp://127.0.0.1:{port}")])
        .args(["--source", &source.socket().to_string_lossy()])
        .env("NOTIFY_SOCKET", &notify.path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _proc = Proc::spawn("app-event-repeater", &mut cmd);
    assert!(
        notify.wait_line_containing("STATUS=waiting for the sink", Duration::from_secs(20)),
        "{}",
        notify.transcript()
    );
    assert!(
        notify.wait_line_containing("STATUS=degraded: ", Duration::from_secs(30)),
        "{}",
        notify.transcript()
    );
    assert!(
        notify.wait_line_containing("the sink has acknowledged none", Duration::ZERO),
        "{}",
        notify.transcript()
    );
}
