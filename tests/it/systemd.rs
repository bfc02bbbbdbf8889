//! The daemons under systemd, without systemd: the `sd_notify` messages they
//! send to a `NOTIFY_SOCKET` the test binds (READY only once the API answers,
//! STATUS, WATCHDOG at half of `WATCHDOG_USEC` and none once the relay is
//! wedged, STOPPING on SIGTERM), and the `<N>` priority prefix on log lines
//! when `JOURNAL_STREAM` names their stderr.

use std::fs;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
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

fn healthz(socket: &Path) -> Option<u16> {
    raw_request(
        socket,
        b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        Duration::from_secs(2),
    )
    .map(|(status, _)| status)
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

fn append(path: &Path) -> fs::File {
    fs::File::options()
        .create(true)
        .append(true)
        .open(path)
        .expect("open the log")
}

/// `DEVICE:INODE` of `file`, as systemd writes `JOURNAL_STREAM`.
fn stream_id(file: &Path) -> String {
    let meta = fs::metadata(file).expect("stat the log");
    format!("{}:{}", meta.dev(), meta.ino())
}

/// Runs event-time once with `JOURNAL_STREAM` naming `journal` (which may
/// or may not be its stderr) until it has logged a warning, then stops it;
/// returns its stderr.
fn event_time_log(sb: &Sandbox, journal: &str, format: &str) -> String {
    let log = sb
        .path()
        .join(format!("journal.{}.log", crate::common::free_port()));
    let mut cmd = sb.command(plugin_bin("app-event-time"));
    cmd.args(["--name", "j", "--log", "info", "--listen", "0.0.0.0:0"])
        .env("APP_LOG_FORMAT", format)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        // Appending, as the second instance below does to the same file.
        .stderr(append(&log));
    let journal = if journal.is_empty() {
        stream_id(&log)
    } else {
        journal.to_string()
    };
    cmd.env("JOURNAL_STREAM", &journal);
    let mut proc = Proc::spawn("app-event-time", &mut cmd);
    let socket = sb.plugin_runtime_dir().join("j.sock");
    let up = crate::common::wait_for(Duration::from_secs(15), || {
        std::os::unix::net::UnixStream::connect(&socket).ok()
    });
    assert!(
        up.is_some(),
        "event-time did not start: {}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    // A second instance of the same name fails: an error line.
    let second = sb
        .command(plugin_bin("app-event-time"))
        .args(["--name", "j"])
        .env("APP_LOG_FORMAT", format)
        .env("JOURNAL_STREAM", &journal)
        .stderr(append(&log))
        .status()
        .expect("run a second event-time");
    assert!(!second.success());
    proc.signal(libc::SIGTERM);
    assert!(proc.wait_exit(Duration::from_secs(20)).is_some());
    fs::read_to_string(&log).expect("read the log")
}

#[test]
fn log_lines_carry_their_syslog_priority_when_stderr_is_the_journal() {
    let sb = Sandbox::new();
    // "" = the log file's own dev:inode: stderr is "the journal".
    let text = event_time_log(&sb, "", "text");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 4, "{text}");
    assert!(
        lines.iter().all(|l| l.starts_with('<')),
        "a line without a prefix:\n{text}"
    );
    let with = |p: &str, part: &str| lines.iter().any(|l| l.starts_with(p) && l.contains(part));
    assert!(
        with("<4>app-event-time: warning: ", "not a loopback address"),
        "{text}"
    );
    assert!(
        with("<5>app-event-time: ", "serving timer events"),
        "{text}"
    );
    assert!(with("<6>app-event-time: ", "SIGTERM"), "{text}");
    assert!(with("<3>app-event-time: ", "already running"), "{text}");

    // JSON lines keep the prefix, and after it are JSON.
    let text = event_time_log(&sb, "", "json");
    for line in text.lines() {
        let (prefix, json) = line.split_at(3);
        assert!(prefix.starts_with('<') && prefix.ends_with('>'), "{line}");
        let v: serde_json::Value = serde_json::from_str(json).expect("a JSON line after <N>");
        assert!(v["level"].is_string(), "{line}");
    }
    assert!(text.contains("<4>{") && text.contains("<3>{"), "{text}");

    // A JOURNAL_STREAM naming another file (inherited, stderr redirected):
    // no prefix.
    let other = sb.path().join("other");
    fs::write(&other, "").expect("write");
    let text = event_time_log(&sb, &stream_id(&other), "text");
    assert!(text.contains("app-event-time: warning: "), "{text}");
    assert!(text.lines().all(|l| !l.starts_with('<')), "{text}");
}

/// Makes `dir` (and its parents) with `owner:group` and `mode`, as systemd
/// makes a unit's `StateDirectory=`/`RuntimeDirectory=`.
fn systemd_dir(dir: &Path, uid: u32, gid: u32, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(dir).expect("create the directory");
    std::os::unix::fs::chown(dir, Some(uid), Some(gid)).expect("chown");
    fs::set_permissions(dir, fs::Permissions::from_mode(mode)).expect("chmod");
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).map(|m| m.mode() & 0o777).unwrap_or(0)
}

/// `app event-repeater manage ARGS` as uid `uid` with the supplementary
/// group `group` (none when `None`), looking for system instances in
/// `system_run`.
fn manage_as(
    sb: &Sandbox,
    uid: u32,
    group: Option<u32>,
    system_run: &Path,
    args: &[&str],
) -> std::process::Output {
    let mut cmd = sb.command("setpriv");
    cmd.arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"));
    match group {
        Some(g) => cmd.arg(format!("--groups={g}")),
        None => cmd.arg("--clear-groups"),
    };
    cmd.arg(crate::common::app_bin())
        .args(["event-repeater", "manage"])
        .args(args)
        // The user's own runtime dir holds no repeater.
        .env("APP_RUNTIME_DIR", sb.path().join("user-run"))
        .env("APP_SYSTEM_RUNTIME_DIR", system_run)
        .stdin(Stdio::null())
        .output()
        .expect("run manage")
}

#[test]
fn a_system_instance_keeps_its_files_in_systemds_directories_and_the_app_group_manages_it() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::common::tools::skip(
            "needs root to run the repeater and manage as other users (setpriv)",
        );
        return;
    }
    let Some(_) = crate::common::require_tool("setpriv", "util-linux") else {
        return;
    };
    // The service user, its group, a member of it and someone else.
    let (service, group, member, stranger) = (64990, 64991, 64992, 64993);
    let sb = Sandbox::new();
    fs::set_permissions(
        sb.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod the sandbox");
    let state = sb.path().join("var/lib/app");
    let run = sb.path().join("sysrun/app");
    systemd_dir(&state, service, group, 0o750);
    systemd_dir(&run, service, group, 0o750);
    let mut cmd = sb.command("setpriv");
    cmd.args([
        format!("--reuid={service}"),
        format!("--regid={group}"),
        "--clear-groups".into(),
    ])
    .arg(plugin_bin("app-event-repeater"))
    .args(["run", "--name", "edge", "--sinkprotocol", "stderr"])
    .args([
        "--source",
        &sb.path().join("nothing.sock").to_string_lossy(),
    ])
    .env_remove("APP_DATA_DIR")
    .env_remove("APP_RUNTIME_DIR")
    .env("STATE_DIRECTORY", &state)
    .env("RUNTIME_DIRECTORY", &run)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(append(&sb.path().join("edge.log")));
    let mut proc = Proc::spawn("app-event-repeater", &mut cmd);
    let socket = run.join("plugins/edge.sock");
    let up = crate::common::wait_for(Duration::from_secs(15), || healthz(&socket));
    let log = || fs::read_to_string(sb.path().join("edge.log")).unwrap_or_default();
    assert_eq!(up, Some(200), "no API on {}: {}", socket.display(), log());
    assert_eq!(mode(&run.join("plugins")), 0o750);
    assert_eq!(mode(&socket), 0o660);

    // A member of the group finds it by name and changes its routes...
    let out = manage_as(
        &sb,
        member,
        Some(group),
        &run,
        &["--name", "edge", "put", "timer/sec/1", "/t/1"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = manage_as(&sb, member, Some(group), &run, &["--name", "edge", "get"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("/t/1"),
        "{out:?}"
    );
    // ...which the repeater keeps in STATE_DIRECTORY (its checkpoint goes
    // beside them).
    let routes = state.join("event-repeater/edge.routes.json");
    let kept = fs::read_to_string(&routes).unwrap_or_default();
    assert!(kept.contains("/t/1"), "{}: {kept:?}", routes.display());
    // Someone outside the group cannot reach it.
    let out = manage_as(&sb, stranger, None, &run, &["--name", "edge", "get"]);
    assert!(
        !out.status.success(),
        "a stranger reached the repeater: {out:?}"
    );
    proc.signal(libc::SIGTERM);
    assert_eq!(
        proc.wait_exit(Duration::from_secs(20))
            .and_then(|s| s.code()),
        Some(0),
        "{}",
        log()
    );
}
