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
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{free_port, wait_for};

pub use super::tools::find_program;

/// `Some(path)` of `program`, or `None` after printing the skip line; panics
/// instead when `APP_TEST_REQUIRE_ALL=1` (see `tests/it/common/tools.rs`).
pub fn require(program: &str, package: &str) -> Option<PathBuf> {
    super::require_tool(program, package)
}

/// A server process a test controls: started as `EXE -c CONF`, waited for
/// until it listens on its port, signalled, restarted on the same port and
/// config, killed on drop. Shared by [`Broker`] and [`NatsServer`].
struct Server {
    name: &'static str,
    exe: PathBuf,
    conf: PathBuf,
    log: PathBuf,
    port: u16,
    child: Option<Child>,
    paused: bool,
}

impl Server {
    fn spawn(&mut self) {
        let child = Command::new(&self.exe)
            .arg("-c")
            .arg(&self.conf)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.name));
        self.child = Some(child);
        let port = self.port;
        let up = wait_for(Duration::from_secs(15), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        assert!(
            up.is_some(),
            "{} did not listen on {port}: {}",
            self.name,
            self.log()
        );
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn signal(&self, sig: i32) {
        if let Some(c) = &self.child {
            // SAFETY: kill with a pid we spawned and a valid signal number.
            unsafe { libc::kill(c.id() as i32, sig) };
        }
    }

    fn reap(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
    }

    fn stop(&mut self) {
        self.resume();
        self.signal(libc::SIGTERM);
        self.reap();
    }

    fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        self.reap();
        self.paused = false;
    }

    fn pause(&mut self) {
        self.signal(libc::SIGSTOP);
        self.paused = true;
    }

    fn resume(&mut self) {
        if self.paused {
            self.signal(libc::SIGCONT);
            self.paused = false;
        }
    }

    fn restart(&mut self) {
        assert!(
            self.child.is_none(),
            "restart() needs stop() or kill() first"
        );
        self.spawn();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.resume();
        self.signal(libc::SIGKILL);
        self.reap();
    }
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
        let exe = require("mosquitto", "mosquitto")?;
        let dir = tempfile::Builder::new()
            .prefix("app-broker-")
            .tempdir()
            .expect("temp dir");
        let port = free_port();
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        let mut conf = format!(
            "listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nlog_dest file {}\n",
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
        let mut server = Server {
            name: "mosquitto",
            exe,
            conf: dir.path().join("mosquitto.conf"),
            log: dir.path().join("mosquitto.log"),
            port,
            child: None,
            paused: false,
        };
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
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
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

/// A real `nats-server` with JetStream (`-js`), its store in a temp dir,
/// on a free port on 127.0.0.1; optionally one node of a cluster whose
/// routes are on loopback. Controllable like [`Broker`]; killed on drop.
/// `None` (after the skip line naming the `nats-server` package) when it is
/// not installed, a failure under `APP_TEST_REQUIRE_ALL=1`.
pub struct NatsServer {
    server: Server,
    pub port: u16,
    // Dropped after the server (fields drop in order): its files outlive it.
    dir: tempfile::TempDir,
}

impl NatsServer {
    /// One server with JetStream.
    pub fn start() -> Option<NatsServer> {
        let exe = require("nats-server", "nats-server")?;
        Some(NatsServer::with_config(exe, free_port(), |_| String::new()))
    }

    /// One server without JetStream (core NATS only) on `port`.
    pub fn start_without_jetstream(port: u16) -> Option<NatsServer> {
        let exe = require("nats-server", "nats-server")?;
        Some(NatsServer::with_config_js(exe, port, false, |_| {
            String::new()
        }))
    }

    /// One server with JetStream in operator mode: it takes only clients
    /// with a user JWT signed by its account, as `nsc` would set it up. The
    /// operator, account and user keys and JWTs are made here; returns the
    /// server and a `.creds` file for the user.
    pub fn start_with_creds() -> Option<(NatsServer, PathBuf)> {
        let exe = require("nats-server", "nats-server")?;
        let operator = nkeys::KeyPair::new_operator();
        let account = nkeys::KeyPair::new_account();
        let system = nkeys::KeyPair::new_account();
        let user = nkeys::KeyPair::new_user();
        let unlimited = serde_json::json!({
            "subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
            "wildcards": true, "conn": -1, "leaf": -1,
            "mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1
        });
        let operator_jwt = nats_jwt(
            &operator,
            &operator.public_key(),
            "operator",
            serde_json::json!({}),
        );
        let account_jwt = nats_jwt(
            &operator,
            &account.public_key(),
            "account",
            serde_json::json!({ "limits": unlimited }),
        );
        let system_jwt = nats_jwt(
            &operator,
            &system.public_key(),
            "account",
            serde_json::json!({}),
        );
        let user_jwt = nats_jwt(
            &account,
            &user.public_key(),
            "user",
            serde_json::json!({ "pub": {}, "sub": {}, "subs": -1, "data": -1, "payload": -1 }),
        );
        let seed = user.seed().expect("a user seed");
        let server = NatsServer::with_config(exe, free_port(), |_| {
            format!(
                "operator: \"{operator_jwt}\"\nresolver: MEMORY\nsystem_account: {sys}\nresolver_preload: {{\n  {acc}: \"{account_jwt}\"\n  {sys}: \"{system_jwt}\"\n}}\n",
                acc = account.public_key(),
                sys = system.public_key(),
            )
        });
        let creds = server.dir.path().join("user.creds");
        fs::write(
            &creds,
            format!(
                "-----BEGIN NATS USER JWT-----\n{user_jwt}\n------END NATS USER JWT------\n\n\
                 -----BEGIN USER NKEY SEED-----\n{seed}\n------END USER NKEY SEED------\n"
            ),
        )
        .expect("write user.creds");
        Some((server, creds))
    }

    /// `n` servers with JetStream, clustered over routes on loopback; every
    /// one is up when this returns (the cluster may still elect its leader).
    pub fn cluster(n: usize) -> Option<Vec<NatsServer>> {
        let exe = require("nats-server", "nats-server")?;
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, r)| format!("nats-route://127.0.0.1:{r}"))
            .collect();
        let servers = ports
            .iter()
            .map(|&(port, route)| {
                NatsServer::with_config(exe.clone(), port, |_| {
                    format!(
                        "cluster {{\n  name: app-test\n  listen: 127.0.0.1:{route}\n  routes: [{}]\n}}\n",
                        routes.join(", ")
                    )
                })
            })
            .collect();
        Some(servers)
    }

    fn with_config(exe: PathBuf, port: u16, extra: impl Fn(&Path) -> String) -> NatsServer {
        NatsServer::with_config_js(exe, port, true, extra)
    }

    fn with_config_js(
        exe: PathBuf,
        port: u16,
        jetstream: bool,
        extra: impl Fn(&Path) -> String,
    ) -> NatsServer {
        let dir = tempfile::Builder::new()
            .prefix("app-nats-")
            .tempdir()
            .expect("temp dir");
        let js = if jetstream {
            format!(
                "jetstream {{\n  store_dir: \"{}\"\n}}\n",
                dir.path().join("js").display()
            )
        } else {
            String::new()
        };
        let conf = format!(
            "server_name: n{port}\nlisten: 127.0.0.1:{port}\nlog_file: \"{}\"\n{js}{}",
            dir.path().join("nats.log").display(),
            extra(dir.path())
        );
        fs::write(dir.path().join("nats.conf"), conf).expect("write nats.conf");
        let mut server = Server {
            name: "nats-server",
            exe,
            conf: dir.path().join("nats.conf"),
            log: dir.path().join("nats.log"),
            port,
            child: None,
            paused: false,
        };
        server.spawn();
        NatsServer { server, port, dir }
    }

    /// `nats://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// Hard stop (SIGKILL); the store stays for [`NatsServer::restart`].
    pub fn kill(&mut self) {
        self.server.kill();
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&mut self) {
        self.server.pause();
    }

    pub fn resume(&mut self) {
        self.server.resume();
    }

    /// Starts again on the same port with the same store (after kill).
    pub fn restart(&mut self) {
        self.server.restart();
    }
}

/// A NATS JWT (v2) of `kind` for `subject`, signed by `issuer`.
fn nats_jwt(
    issuer: &nkeys::KeyPair,
    subject: &str,
    kind: &str,
    mut nats: serde_json::Value,
) -> String {
    use base64::Engine;
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    nats["type"] = kind.into();
    nats["version"] = 2.into();
    let claims = serde_json::json!({
        "jti": format!("{kind}-{subject}"),
        "iat": 1_700_000_000u64,
        "iss": issuer.public_key(),
        "name": kind,
        "sub": subject,
        "nats": nats,
    });
    let signed = format!(
        "{}.{}",
        b64(br#"{"typ":"JWT","alg":"ed25519-nkey"}"#),
        b64(claims.to_string().as_bytes())
    );
    let signature = issuer.sign(signed.as_bytes()).expect("sign a JWT");
    format!("{signed}.{}", b64(&signature))
}
