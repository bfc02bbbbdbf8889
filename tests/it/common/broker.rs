//! A real `mosquitto` for the tests: started on a free port on 127.0.0.1
//! with its own config (and, optionally, persistence) in a temp dir, and
//! controllable from the test: stop (SIGTERM), kill (SIGKILL), pause
//! (SIGSTOP), resume (SIGCONT) and restart on the same port. Killed on drop.
//!
//! When mosquitto is not installed, [`Broker::start`] prints one line
//! (`skipping <test>: mosquitto is not installed (apt-get install mosquitto)`)
//! and returns `None`, so the test can return; with `APP_TEST_REQUIRE_ALL=1`
//! (as in CI) it panics instead.
//! [`Subscriber`] wraps `mosquitto_sub`, under the same rule.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::server::Server;
use super::{free_port, wait_for};

pub use super::tools::find_program;

/// `Some(path)` of `program`, or `None` after printing the skip line; panics
/// instead when `APP_TEST_REQUIRE_ALL=1` (see `tests/it/common/tools.rs`).
pub fn require(program: &str, package: &str) -> Option<PathBuf> {
    super::require_tool(program, package)
}

pub struct Broker {
    server: Server,
    pub port: u16,
    // Dropped after the server (fields drop in order): its files outlive it.
    _dir: tempfile::TempDir,
}

impl Broker {
    /// A broker without persistence; `None` when mosquitto is missing.
    pub fn start() -> Option<Broker> {
        Broker::start_with(false)
    }

    /// A broker, with persistence (in its temp dir) when asked.
    pub fn start_with(persistence: bool) -> Option<Broker> {
        Broker::start_conf(persistence, "max_queued_messages 0\n")
    }

    /// A broker with mosquitto's defaults for every limit: its queue to a
    /// subscriber holds 1,000 messages, its quota of unfinished QoS 2
    /// publishes from a client is 20 (`max_inflight_messages`).
    pub fn start_defaults() -> Option<Broker> {
        Broker::start_conf(false, "")
    }

    /// A broker with `limits` (lines of mosquitto.conf) and, when asked,
    /// persistence.
    fn start_conf(persistence: bool, limits: &str) -> Option<Broker> {
        let exe = require("mosquitto", "mosquitto")?;
        let dir = tempfile::Builder::new()
            .prefix("app-broker-")
            .tempdir()
            .expect("temp dir");
        let port = free_port();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let mut conf = format!(
            "listener {port} 127.0.0.1\nallow_anonymous true\n{limits}log_dest file {}\n",
            dir.path().join("mosquitto.log").display()
        );
        if root {
            // Otherwise mosquitto drops to a user that cannot write our dir.
            conf.push_str("user root\n");
        }
        if persistence {
            conf.push_str(&format!(
                "persistence true\npersistence_location {}/\nautosave_interval 1\n",
                dir.path().display()
            ));
        } else {
            conf.push_str("persistence false\n");
        }
        fs::write(dir.path().join("mosquitto.conf"), conf).expect("write mosquitto.conf");
        let mut server = Server::with_conf(
            "mosquitto",
            exe,
            dir.path().join("mosquitto.conf"),
            dir.path().join("mosquitto.log"),
            port,
        );
        server.spawn();
        Some(Broker {
            server,
            port,
            _dir: dir,
        })
    }

    /// `tcp://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("tcp://127.0.0.1:{}", self.port)
    }

    /// mosquitto's own log, for assertion messages.
    pub fn log(&self) -> String {
        self.server.log()
    }

    /// Graceful stop (SIGTERM); mosquitto saves its persistence file.
    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// Hard stop (SIGKILL).
    pub fn kill(&mut self) {
        self.server.kill();
    }

    /// Freezes the broker (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&mut self) {
        self.server.pause();
    }

    pub fn resume(&mut self) {
        self.server.resume();
    }

    /// Starts again on the same port (after stop or kill).
    pub fn restart(&mut self) {
        self.server.restart();
    }
}

/// `mosquitto_sub` collecting `topic payload` lines in the background.
pub struct Subscriber {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Subscriber {
    /// Subscribes to `topic` at QoS 1; waits for the SUBACK. `session` names
    /// a persistent session (`-c -i ID`) that survives broker restarts.
    pub fn start(broker: &Broker, topic: &str, session: Option<&str>) -> Option<Subscriber> {
        let exe = require("mosquitto_sub", "mosquitto-clients")?;
        // mosquitto_sub block-buffers a pipe; stdbuf makes it line-buffered.
        let mut cmd = match find_program("stdbuf") {
            Some(stdbuf) => {
                let mut c = Command::new(stdbuf);
                c.arg("-oL").arg(exe);
                c
            }
            None => Command::new(exe),
        };
        cmd.args(["-h", "127.0.0.1", "-p", &broker.port.to_string()])
            .args(["-t", topic, "-q", "1", "-v", "-d"]);
        if let Some(id) = session {
            cmd.args(["-c", "-i", id]);
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = super::process::dies_with_test(&mut cmd)
            .spawn()
            .expect("start mosquitto_sub");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l2 = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                l2.lock().unwrap().push(line);
            }
        });
        let sub = Subscriber { child, lines };
        let ok = wait_for(Duration::from_secs(10), || {
            sub.lines
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("SUBACK"))
                .then_some(())
        });
        assert!(
            ok.is_some(),
            "mosquitto_sub got no SUBACK: {:?}",
            sub.lines.lock().unwrap()
        );
        Some(sub)
    }

    /// The messages received so far, as (topic, payload).
    pub fn messages(&self) -> Vec<(String, String)> {
        self.lines
            .lock()
            .unwrap()
            .iter()
            .filter(|l| {
                !l.starts_with("Client ") && !l.starts_with("Subscribed (mid") && !l.is_empty()
            })
            .filter_map(|l| l.split_once(' '))
            .map(|(t, p)| (t.to_string(), p.to_string()))
            .collect()
    }

    /// Waits until `pred` holds for the messages, or the timeout passes.
    pub fn wait(
        &self,
        timeout: Duration,
        pred: impl Fn(&[(String, String)]) -> bool,
    ) -> Vec<(String, String)> {
        wait_for(timeout, || {
            let m = self.messages();
            pred(&m).then_some(m)
        })
        .unwrap_or_else(|| self.messages())
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
