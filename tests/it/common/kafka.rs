//! A real Kafka-protocol broker for the tests: `tansu` (crates.io, a
//! Kafka-compatible broker in Rust; Apache Kafka and Redpanda are not
//! installable here), on a free port on 127.0.0.1 with its SQLite storage
//! in a directory of its own, so it keeps what it acknowledged across its
//! own restart. Killed on drop.
//!
//! tansu is not a Debian package: `.ci/run` installs it with cargo; a
//! machine without it skips these tests with one line saying how to get
//! it (a failure under `APP_TEST_REQUIRE_ALL=1`).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::tools::{find_program, skip, REQUIRE_ALL};
use super::{free_port, wait_for};

/// How tansu is installed (it needs a storage engine feature).
pub const INSTALL: &str = "cargo install tansu --locked --features dynostore,libsql";

/// `tansu` on PATH or in cargo's bin directory; otherwise the skip line.
pub fn require_tansu() -> Option<PathBuf> {
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map(|d| d.join("bin/tansu"));
    if let Some(p) = find_program("tansu").or(cargo_bin.filter(|p| p.is_file())) {
        return Some(p);
    }
    if std::env::var(REQUIRE_ALL).as_deref() == Ok("1") {
        panic!("tansu is not installed but {REQUIRE_ALL}=1: {INSTALL}");
    }
    skip(&format!("tansu is not installed ({INSTALL})"));
    None
}

/// One tansu broker.
pub struct Tansu {
    pub port: u16,
    /// The port it tells clients to use (its own, or a TLS proxy's).
    advertised: u16,
    /// Clients must sign in (SASL SCRAM).
    authentication: bool,
    exe: PathBuf,
    child: Option<Child>,
    paused: bool,
    /// How long the last start took, until it answered.
    pub started_in: Duration,
    // Dropped after the broker (fields drop in order): its files outlive it.
    dir: tempfile::TempDir,
}

impl Tansu {
    /// A broker; `None` (after the skip line) without tansu.
    pub fn start() -> Option<Tansu> {
        let port = free_port();
        Tansu::start_advertising(port, port)
    }

    /// A broker on `port` that tells clients to connect to `advertised`
    /// (where a TLS proxy in front of it listens).
    pub fn start_advertising(port: u16, advertised: u16) -> Option<Tansu> {
        let exe = require_tansu()?;
        let dir = tempfile::Builder::new()
            .prefix("app-tansu-")
            .tempdir()
            .expect("temp dir");
        let mut t = Tansu {
            port,
            advertised,
            authentication: false,
            exe,
            child: None,
            paused: false,
            started_in: Duration::ZERO,
            dir,
        };
        t.spawn();
        Some(t)
    }

    fn spawn(&mut self) {
        let url = format!("tcp://127.0.0.1:{}", self.port);
        let advertised = format!("tcp://127.0.0.1:{}", self.advertised);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("tansu.log"))
            .expect("open tansu.log");
        let started = Instant::now();
        let child = Command::new(&self.exe)
            .arg("broker")
            .args([
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &advertised,
            ])
            // tansu reads the URL's path as relative to its working
            // directory (sqlite:///tmp/x opens ./tmp/x).
            .args(["--storage-engine", "sqlite://tansu.db"])
            .current_dir(self.dir.path())
            .args(self.authentication.then_some("--authentication"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup log"))
            .stderr(log)
            .spawn()
            .expect("start tansu");
        self.child = Some(child);
        let port = self.port;
        let up = wait_for(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        assert!(
            up.is_some(),
            "tansu did not listen on {port}: {}",
            self.log()
        );
        self.started_in = started.elapsed();
    }

    /// `kafka://127.0.0.1:PORT`, for `--sink`.
    pub fn url(&self) -> String {
        format!("kafka://127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:PORT`, for librdkafka's bootstrap servers.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Its own log, for assertion messages.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("tansu.log")).unwrap_or_default()
    }

    /// Makes `topic` with `partitions` partitions, as an operator would.
    pub fn create_topic(&self, topic: &str, partitions: u32) {
        let out = Command::new(&self.exe)
            .args(["topic", "create", topic])
            .args(["--partitions", &partitions.to_string()])
            .args(["--broker", &format!("tcp://127.0.0.1:{}", self.port)])
            .output()
            .expect("run tansu topic create");
        assert!(
            out.status.success(),
            "tansu topic create {topic}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Adds the SCRAM-SHA-512 user `name` and restarts the broker
    /// requiring every client to sign in. (tansu's own `user create` must
    /// sign in too once authentication is on, so the user comes first.)
    pub fn require_user(&mut self, name: &str, password: &str) {
        let out = Command::new(&self.exe)
            .args(["user", "create", name, password, "--mechanism", "scram512"])
            .args(["--broker", &format!("tcp://127.0.0.1:{}", self.port)])
            .output()
            .expect("run tansu user create");
        assert!(
            out.status.success(),
            "tansu user create: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.kill();
        self.authentication = true;
        self.spawn();
    }

    fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            // SAFETY: kill(2) on a child we spawned and have not reaped.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }

    /// SIGKILL: what it acknowledged is in its SQLite file.
    pub fn kill(&mut self) {
        self.resume();
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts again on the same port and storage (after [`Tansu::kill`]).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "restart() needs kill() first");
        self.spawn();
    }

    /// Freezes it (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&mut self) {
        self.signal(libc::SIGSTOP);
        self.paused = true;
    }

    pub fn resume(&mut self) {
        if self.paused {
            self.signal(libc::SIGCONT);
            self.paused = false;
        }
    }
}

impl Drop for Tansu {
    fn drop(&mut self) {
        self.kill();
    }
}
