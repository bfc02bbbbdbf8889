//! `app-event-repeater run` as a real process: built with [`Repeater::builder`]
//! (name, source, sink, sink protocol, extra args, env, directly or through
//! `app`), its stderr in a log file, started once its API answers
//! `GET /healthz` on its socket, and stopped on drop (see [`Proc`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::process::Proc;
use super::{plugin_bin, wait_for, Sandbox};

/// How to start a repeater; [`RepeaterBuilder::start`] starts it.
pub struct RepeaterBuilder<'a> {
    sb: &'a Sandbox,
    name: String,
    source: Option<String>,
    sinkprotocol: Option<String>,
    sink: Option<String>,
    args: Vec<String>,
    env: Vec<(String, String)>,
    through_app: bool,
    wrapper: Vec<String>,
}

impl<'a> RepeaterBuilder<'a> {
    /// Runs it under a command that execs its arguments (`ip netns exec NS`).
    pub fn wrapped_in<S: AsRef<str>>(mut self, command: impl IntoIterator<Item = S>) -> Self {
        self.wrapper = command
            .into_iter()
            .map(|s| s.as_ref().to_string())
            .collect();
        self
    }

    /// `--source SOURCE`.
    pub fn source(mut self, source: &str) -> Self {
        self.source = Some(source.to_string());
        self
    }

    /// `--source` a socket path in the sandbox that nothing listens on: the
    /// repeater keeps retrying it, and its API works meanwhile.
    pub fn no_source(self) -> Self {
        let none = self.sb.runtime_dir().join("no-source.sock");
        self.source(&none.to_string_lossy())
    }

    /// `--sinkprotocol PROTOCOL`.
    pub fn sinkprotocol(mut self, protocol: &str) -> Self {
        self.sinkprotocol = Some(protocol.to_string());
        self
    }

    /// `--sink SINK`.
    pub fn sink(mut self, sink: &str) -> Self {
        self.sink = Some(sink.to_string());
        self
    }

    /// More arguments, after the others.
    pub fn args<S: AsRef<str>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.args
            .extend(args.into_iter().map(|s| s.as_ref().to_string()));
        self
    }

    /// An environment variable for the process.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// Starts it as `app event-repeater run …` instead of the plugin binary.
    pub fn through_app(mut self) -> Self {
        self.through_app = true;
        self
    }

    /// Starts the repeater; returns once its API answers (see
    /// [`Repeater::wait_api`]).
    pub fn start(self) -> Repeater<'a> {
        let mut args = vec!["--name".to_string(), self.name.clone()];
        for (flag, value) in [
            ("--source", &self.source),
            ("--sinkprotocol", &self.sinkprotocol),
            ("--sink", &self.sink),
        ] {
            if let Some(v) = value {
                args.extend([flag.to_string(), v.clone()]);
            }
        }
        args.extend(self.args);
        let mut r = Repeater {
            sb: self.sb,
            name: self.name,
            args,
            env: self.env,
            through_app: self.through_app,
            wrapper: self.wrapper,
            logs: Vec::new(),
            proc: None,
        };
        r.spawn();
        r
    }
}

/// A running `app-event-repeater run`, stopped on drop.
pub struct Repeater<'a> {
    sb: &'a Sandbox,
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    through_app: bool,
    wrapper: Vec<String>,
    logs: Vec<PathBuf>,
    proc: Option<Proc>,
}

/// Makes every log file name unique within the test run.
static STARTS: AtomicUsize = AtomicUsize::new(0);

impl<'a> Repeater<'a> {
    /// A repeater named `name` in `sb`, with no arguments yet.
    pub fn builder(sb: &'a Sandbox, name: &str) -> RepeaterBuilder<'a> {
        RepeaterBuilder {
            sb,
            name: name.to_string(),
            source: None,
            sinkprotocol: None,
            sink: None,
            args: Vec::new(),
            env: Vec::new(),
            through_app: false,
            wrapper: Vec::new(),
        }
    }

    fn spawn(&mut self) {
        let n = STARTS.fetch_add(1, Ordering::SeqCst);
        let log = self
            .sb
            .path()
            .join(format!("{}.repeater.{n}.stderr", self.name));
        let mut cmd = if self.through_app {
            let mut cmd = self.sb.app();
            cmd.arg("event-repeater");
            cmd
        } else if let Some((program, args)) = self.wrapper.split_first() {
            let mut cmd = self.sb.command(program);
            cmd.args(args).arg(plugin_bin("app-event-repeater"));
            cmd
        } else {
            self.sb.command(plugin_bin("app-event-repeater"))
        };
        cmd.arg("run")
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(File::create(&log).expect("create the repeater's log"));
        self.logs.push(log);
        self.proc = Some(Proc::spawn("app-event-repeater", &mut cmd));
        self.wait_api();
        if self.args.iter().any(|a| a == "--listen") {
            let listen = self.file("listen");
            let ready = wait_for(Duration::from_secs(10), || {
                std::fs::read_to_string(&listen)
                    .ok()
                    .filter(|t| t.trim().starts_with("http"))
            });
            assert!(ready.is_some(), "no {}: {}", listen.display(), self.log());
        }
    }

    /// Waits (up to 15 s) until `GET /healthz` on the socket answers 200;
    /// panics, with the log, if it does not or the process exits first.
    pub fn wait_api(&mut self) {
        let socket = self.socket();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.proc_mut().exited() {
                panic!(
                    "app-event-repeater exited early with {status}; log:\n{}",
                    self.log()
                );
            }
            let answer = raw_request(
                &socket,
                b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                Duration::from_secs(2),
            );
            if answer.is_some_and(|(status, _)| status == 200) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the repeater's API on {} did not answer within 15 s; log:\n{}",
                socket.display(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn proc_mut(&mut self) -> &mut Proc {
        self.proc.as_mut().expect("started")
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `<runtime>/plugins/NAME.EXT`.
    pub fn file(&self, ext: &str) -> PathBuf {
        self.sb
            .plugin_runtime_dir()
            .join(format!("{}.{ext}", self.name))
    }

    pub fn socket(&self) -> PathBuf {
        self.file("sock")
    }

    /// The TCP URL from `NAME.listen`.
    pub fn url(&self) -> String {
        std::fs::read_to_string(self.file("listen"))
            .expect("listen file")
            .trim()
            .to_string()
    }

    /// Everything it wrote to stderr, over all its starts.
    pub fn log(&self) -> String {
        self.logs
            .iter()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect::<Vec<_>>()
            .join("--- restart ---\n")
    }

    /// The sink topics of the events it relayed to stderr so far (with the
    /// stderr sink: one JSON line per event).
    pub fn sink_topics(&self) -> Vec<String> {
        self.log()
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter_map(|v| v["sink_topic"].as_str().map(String::from))
            .collect()
    }

    /// Waits up to 10 s until the stderr sink printed an event on `topic`;
    /// panics with the log.
    pub fn wait_relayed(&self, topic: &str) {
        let relayed = wait_for(Duration::from_secs(10), || {
            self.sink_topics().iter().any(|t| t == topic).then_some(())
        });
        assert!(relayed.is_some(), "{topic} not relayed:\n{}", self.log());
    }

    /// `<data>/event-repeater/NAME.checkpoint`.
    pub fn checkpoint_file(&self) -> PathBuf {
        self.sb
            .data_dir()
            .join(format!("event-repeater/{}.checkpoint", self.name))
    }

    /// Waits up to 10 s until the checkpoint file names `id` (the repeater
    /// writes it every 100 ms while it moves); panics with the start of the
    /// file and the log.
    pub fn wait_checkpoint(&self, id: &str) {
        let file = self.checkpoint_file();
        let want = format!("\"last_event_id\":\"{id}\"");
        let seen = wait_for(Duration::from_secs(10), || {
            std::fs::read_to_string(&file)
                .ok()
                .filter(|t| t.contains(&want))
        });
        if seen.is_none() {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let start: String = text.chars().take(200).collect();
            panic!(
                "the checkpoint never reached {id}: {} bytes, {start:?}…\n{}",
                text.len(),
                self.log()
            );
        }
    }

    pub fn pid(&self) -> i32 {
        self.proc.as_ref().expect("started").pid()
    }

    /// Sends `sig` and waits up to 20 s for the exit.
    pub fn signal(&mut self, sig: i32) -> ExitStatus {
        let p = self.proc_mut();
        p.signal(sig);
        let status = p.wait_exit(Duration::from_secs(20));
        status.unwrap_or_else(|| panic!("no exit within 20 s of signal {sig}: {}", self.log()))
    }

    /// SIGKILL (its socket and files stay behind).
    pub fn kill9(&mut self) {
        self.proc_mut().kill9();
    }

    /// Starts it again with the same arguments (after it stopped), its log
    /// appended to the earlier ones; returns once the API answers.
    pub fn restart(&mut self) {
        assert!(
            !self.proc_mut().alive(),
            "restart() needs the repeater stopped first"
        );
        self.spawn();
    }

    /// `GET path` on the socket: (status, body); panics with the log when
    /// nothing answers within 5 s.
    pub fn get(&self, path: &str) -> (u16, String) {
        let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        raw_request(&self.socket(), req.as_bytes(), Duration::from_secs(5))
            .unwrap_or_else(|| panic!("GET {path} got no answer; log:\n{}", self.log()))
    }

    /// `METHOD path` with a JSON body: (status, body).
    pub fn send_json(&self, method: &str, path: &str, body: &str) -> (u16, String) {
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        raw_request(&self.socket(), req.as_bytes(), Duration::from_secs(5))
            .unwrap_or_else(|| panic!("{method} {path} got no answer; log:\n{}", self.log()))
    }

    /// One value of `/metrics` by its name without the
    /// `app_event_repeater_` prefix, labels included
    /// (`events_failed_total{reason="too_large"}`); panics, with the log,
    /// when it is not there.
    pub fn metric(&self, name: &str) -> f64 {
        let all = self.metrics();
        *all.get(&format!("app_event_repeater_{name}"))
            .unwrap_or_else(|| panic!("no metric {name} in {all:?}; log:\n{}", self.log()))
    }

    /// `/healthz`, answered 200, as JSON.
    pub fn healthz(&self) -> serde_json::Value {
        let (status, body) = self.get("/healthz");
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("/healthz is not JSON ({e}): {body}"))
    }

    /// `/metrics`, as `name{labels}` → value (full names).
    pub fn metrics(&self) -> BTreeMap<String, f64> {
        let (status, body) = self.get("/metrics");
        assert_eq!(status, 200, "{body}");
        body.lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(|l| l.rsplit_once(' '))
            .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
            .collect()
    }
}

/// Sends `bytes` on the unix socket `path` and reads until the server closes
/// or `timeout` passes; the status code and the body. `None` when nothing
/// that looks like an HTTP response came back.
pub fn raw_request(path: &Path, bytes: &[u8], timeout: Duration) -> Option<(u16, String)> {
    let mut s = UnixStream::connect(path).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_write_timeout(Some(timeout)).ok()?;
    // A server may answer (413, 431) and close before taking everything: the
    // write then fails, and the answer is still there to read.
    let _ = s.write_all(bytes);
    read_response(&mut s, timeout)
}

fn read_response(s: &mut impl Read, timeout: Duration) -> Option<(u16, String)> {
    let deadline = Instant::now() + timeout;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(_) => break,
        }
        // A response with a Content-Length is complete before the close.
        if let Some(done) = complete_length(&buf) {
            if buf.len() >= done {
                break;
            }
        }
        if Instant::now() > deadline {
            break;
        }
    }
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()?;
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Some((status, body))
}

fn complete_length(buf: &[u8]) -> Option<usize> {
    let text = std::str::from_utf8(buf).ok()?;
    let (head, _) = text.split_once("\r\n\r\n")?;
    let len: usize = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse().ok())?
    })?;
    Some(head.len() + 4 + len)
}

/// `app-event-repeater run ARGS` (`env` on top of the sandbox's), which
/// must exit within 10 s: its exit code and stderr (a start that does not
/// fail is stopped and reported).
pub fn run_to_exit(sb: &Sandbox, args: &[&str], env: &[(&str, &Path)]) -> (Option<i32>, String) {
    let log = sb.path().join("run-to-exit.stderr");
    let mut proc = Proc::spawn(
        "app-event-repeater",
        sb.command(plugin_bin("app-event-repeater"))
            .arg("run")
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("create the log")),
    );
    let status = proc.wait_exit(Duration::from_secs(10));
    let err = std::fs::read_to_string(&log).unwrap_or_default();
    match status {
        Some(status) => (status.code(), err),
        None => panic!("it started instead of refusing; log:\n{err}"),
    }
}

/// `app-event-repeater-manage status -o json --interval 0.2` for `hosts`
/// (one `--host` each: URLs, names or `@group`s): its rows; it must succeed.
pub fn status_rows(sb: &Sandbox, hosts: &[&str]) -> serde_json::Value {
    let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
    cmd.args(["status", "-o", "json", "--interval", "0.2"]);
    for host in hosts {
        cmd.args(["--host", host]);
    }
    super::run::Run::new(cmd).assert().ok().json()
}
