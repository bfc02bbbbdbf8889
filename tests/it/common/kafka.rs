//! A real Kafka-protocol broker for the tests: `tansu` (crates.io, a
//! Kafka-compatible broker in Rust; Apache Kafka and Redpanda are not
//! installable here), on a free port on 127.0.0.1 with its SQLite storage
//! in a directory of its own, so it keeps what it acknowledged across its
//! own restart. Killed on drop.
//!
//! tansu is not a Debian package: `.ci/run` installs it with cargo; a
//! machine without it skips these tests with one line saying how to get
//! it (a failure under `APP_TEST_REQUIRE_ALL=1`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::free_port;
use super::server::Server;
use super::tools::{find_program, skip, REQUIRE_ALL};

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
    server: Server,
    // Dropped after the broker (fields drop in order): its files outlive it.
    _dir: tempfile::TempDir,
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
        let args = [
            "broker",
            "--listener-url",
            &format!("tcp://127.0.0.1:{port}"),
            "--advertised-listener-url",
            &format!("tcp://127.0.0.1:{advertised}"),
            // tansu reads the URL's path as relative to its working
            // directory (sqlite:///tmp/x opens ./tmp/x).
            "--storage-engine",
            "sqlite://tansu.db",
        ];
        let args = args.iter().map(OsString::from).collect();
        let mut server = Server::new("tansu", exe, args, dir.path().join("tansu.log"), port);
        server.cwd = Some(dir.path().to_path_buf());
        server.capture = true;
        server.spawn();
        Some(Tansu {
            port,
            server,
            _dir: dir,
        })
    }

    /// How long the last start took, until it listened.
    pub fn started_in(&self) -> Duration {
        self.server.started_in
    }

    /// `kafka://127.0.0.1:PORT`, for `--sink`.
    pub fn url(&self) -> String {
        format!("kafka://127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:PORT`, for librdkafka's bootstrap servers.
    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Makes `topic` with `partitions` partitions, as an operator would.
    pub fn create_topic(&self, topic: &str, partitions: u32) {
        let out = Command::new(&self.server.exe)
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
        let out = Command::new(&self.server.exe)
            .args(["user", "create", name, password, "--mechanism", "scram512"])
            .args(["--broker", &format!("tcp://127.0.0.1:{}", self.port)])
            .output()
            .expect("run tansu user create");
        assert!(
            out.status.success(),
            "tansu user create: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.server.kill();
        self.server.args.push("--authentication".into());
        self.server.spawn();
    }

    /// SIGKILL: what it acknowledged is in its SQLite file.
    pub fn kill(&mut self) {
        self.server.kill();
    }

    /// Starts again on the same port and storage (after [`Tansu::kill`]).
    pub fn restart(&mut self) {
        self.server.restart();
    }

    /// Freezes it (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&mut self) {
        self.server.pause();
    }

    pub fn resume(&mut self) {
        self.server.resume();
    }
}
