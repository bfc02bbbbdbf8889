//! Real RabbitMQ nodes for the tests, with the stream plugin, on free ports
//! on 127.0.0.1 (see [`RabbitNode`]). Never the machine's own node: each
//! node has a private name, its own ports (AMQP, distribution, streams and
//! its own `epmd`), cookie, data and log directories, and is gone, with its
//! files, when the test ends.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::process::Proc;
use super::{free_port, require_tool, wait_for};

/// Debian's `rabbitmq-server` script that runs the node in the foreground
/// (`/usr/sbin/rabbitmq-server` is a wrapper that writes to /var/log).
const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

/// How long a node may take to open its ports (about 7 s on a quiet
/// 2-core machine, 25 s under a loaded one).
const START_WITHIN: Duration = Duration::from_secs(90);

/// One RabbitMQ node with `rabbitmq_stream` enabled, started from an
/// enabled-plugins file and a `.conf` the test writes. Run as the
/// `rabbitmq` user when the tests run as root (Erlang refuses nothing as
/// root, but Debian's files belong to that user). Killed on drop, and its
/// `epmd` with the last node that uses it.
pub struct RabbitNode {
    /// `NAME@localhost`.
    pub node: String,
    pub stream_port: u16,
    pub amqp_port: u16,
    dist_port: u16,
    /// How long the last start took, until both listeners answered.
    pub started_in: Duration,
    child: Option<Proc>,
    owner: Option<(u32, u32)>,
    /// Shared by a cluster's nodes; stopped when the last of them drops.
    epmd: Arc<Epmd>,
    // Dropped after the node (fields drop in order): its files outlive it.
    dir: tempfile::TempDir,
}

impl RabbitNode {
    /// One node. `None` (after the skip line naming `rabbitmq-server`)
    /// where it is not installed; a failure under `APP_TEST_REQUIRE_ALL=1`.
    pub fn start() -> Option<RabbitNode> {
        require_tool(SERVER, "rabbitmq-server")?;
        let name = format!("app-test-{}", free_port());
        let mut node = RabbitNode::prepare_named(&name, &Epmd::start(), &[]);
        node.spawn();
        node.wait_ready();
        Some(node)
    }

    /// `n` nodes clustered (classic config peer discovery), all up when this
    /// returns. They share one `epmd` on a free port.
    pub fn cluster(n: usize) -> Option<Vec<RabbitNode>> {
        require_tool(SERVER, "rabbitmq-server")?;
        let epmd = Epmd::start();
        let tag = free_port();
        let names: Vec<String> = (0..n).map(|i| format!("app-test-{tag}-{i}")).collect();
        let mut nodes: Vec<RabbitNode> = names
            .iter()
            .map(|name| RabbitNode::prepare_named(name, &epmd, &names))
            .collect();
        // Started together: a node waits for its peers while it boots.
        for node in &mut nodes {
            node.spawn();
        }
        for node in &mut nodes {
            node.wait_ready();
        }
        Some(nodes)
    }

    fn prepare_named(name: &str, epmd: &Arc<Epmd>, peers: &[String]) -> RabbitNode {
        let dir = tempfile::Builder::new()
            .prefix("app-rabbitmq-")
            .tempdir()
            .expect("temp dir");
        let (amqp_port, dist_port, stream_port) = (free_port(), free_port(), free_port());
        let mut conf = format!(
            "listeners.tcp.1 = 127.0.0.1:{amqp_port}\n\
             stream.listeners.tcp.1 = 127.0.0.1:{stream_port}\n\
             stream.advertised_host = 127.0.0.1\n\
             stream.advertised_port = {stream_port}\n\
             log.console = false\n\
             log.file.level = info\n"
        );
        if !peers.is_empty() {
            conf.push_str("cluster_formation.peer_discovery_backend = classic_config\n");
            for (i, peer) in peers.iter().enumerate() {
                conf.push_str(&format!(
                    "cluster_formation.classic_config.nodes.{} = {peer}@localhost\n",
                    i + 1
                ));
            }
        }
        let path = dir.path();
        fs::write(path.join("rabbit.conf"), conf).expect("write rabbit.conf");
        fs::write(path.join("enabled_plugins"), "[rabbitmq_stream].\n")
            .expect("write enabled_plugins");
        fs::write(path.join("env.conf"), "").expect("write env.conf");
        for d in ["mnesia", "log"] {
            fs::create_dir(path.join(d)).expect("mkdir");
        }
        let owner = rabbitmq_user();
        if let Some((uid, gid)) = owner {
            chown_tree(path, uid, gid);
        }
        RabbitNode {
            node: format!("{name}@localhost"),
            stream_port,
            amqp_port,
            dist_port,
            started_in: Duration::ZERO,
            child: None,
            owner,
            epmd: Arc::clone(epmd),
            dir,
        }
    }

    fn spawn(&mut self) {
        let d = self.dir.path();
        let p = |name: &str| d.join(name).display().to_string();
        let mut cmd = Command::new(SERVER);
        cmd.env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", d)
            .env("LANG", "C.UTF-8")
            // Makes the script exec the VM (no shell in between to signal).
            .env("RUNNING_UNDER_SYSTEMD", "true")
            .env("RABBITMQ_NODENAME", &self.node)
            .env("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_NODE_PORT", self.amqp_port.to_string())
            .env("RABBITMQ_DIST_PORT", self.dist_port.to_string())
            .env("ERL_EPMD_PORT", self.epmd.port.to_string())
            .env("ERL_EPMD_ADDRESS", "127.0.0.1")
            .env("RABBITMQ_MNESIA_BASE", p("mnesia"))
            .env("RABBITMQ_LOG_BASE", p("log"))
            .env("RABBITMQ_ENABLED_PLUGINS_FILE", p("enabled_plugins"))
            .env("RABBITMQ_CONFIG_FILE", p("rabbit"))
            .env("RABBITMQ_CONF_ENV_FILE", p("env.conf"))
            .env("RABBITMQ_ADVANCED_CONFIG_FILE", p("advanced.config"))
            .env("RABBITMQ_PID_FILE", p("rabbit.pid"))
            .env(
                "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
                format!(
                    "-setcookie app-test-{} -start_epmd false -kernel inet_dist_use_interface {{127,0,0,1}}",
                    self.epmd.port
                ),
            )
            .stdin(Stdio::null())
            .stdout(fs::File::create(d.join("stdout.txt")).expect("stdout file"))
            .stderr(Stdio::null());
        if let Some((uid, gid)) = self.owner {
            cmd.uid(uid).gid(gid);
        }
        self.child = Some(Proc::spawn("rabbitmq-server", &mut cmd));
    }

    fn wait_ready(&mut self) {
        let t0 = Instant::now();
        let (stream, amqp) = (self.stream_port, self.amqp_port);
        let up = wait_for(START_WITHIN, || {
            if !self.child.as_mut().is_some_and(Proc::alive) {
                return Some(false);
            }
            let open = |port| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            (open(stream) && open(amqp)).then_some(true)
        });
        assert_eq!(
            up,
            Some(true),
            "RabbitMQ node {} did not open ports {stream} and {amqp} within {START_WITHIN:?}:\n{}",
            self.node,
            self.log()
        );
        self.started_in = t0.elapsed();
    }

    /// `rabbitmq-stream://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("rabbitmq-stream://127.0.0.1:{}", self.stream_port)
    }

    /// `rabbitmqctl ARGS` against this node (its name, cookie and `epmd`):
    /// what it printed, or why it failed. Bounded by `--timeout 30`.
    pub fn ctl(&self, args: &[&str]) -> Result<String, String> {
        let cookie = format!("app-test-{}", self.epmd.port);
        let out = Command::new("rabbitmqctl")
            .args([
                "-n",
                &self.node,
                "--erlang-cookie",
                &cookie,
                "--timeout",
                "30",
            ])
            .args(args)
            .env("ERL_EPMD_PORT", self.epmd.port.to_string())
            .env("HOME", self.dir.path())
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("rabbitmqctl: {e}"))?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        match out.status.success() {
            true => Ok(text),
            false => Err(format!(
                "rabbitmqctl {args:?}: {}\n{text}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            )),
        }
    }

    /// What the node wrote (its log and its stdout), for a failure message.
    pub fn log(&self) -> String {
        let d = self.dir.path();
        let log = d.join("log").join(format!("{}.log", self.node));
        let read = |p: PathBuf| fs::read_to_string(p).unwrap_or_default();
        let text = format!("{}\n{}", read(log), read(d.join("stdout.txt")));
        let start = text.len().saturating_sub(6000);
        let start = (start..text.len())
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(text.len());
        text[start..].to_string()
    }

    fn signal(&self, sig: i32) {
        if let Some(p) = &self.child {
            p.signal(sig);
        }
    }

    /// Hard stop (SIGKILL, then reaped); the data stays for
    /// [`RabbitNode::restart`].
    pub fn kill(&mut self) {
        if let Some(mut p) = self.child.take() {
            p.kill9();
        }
    }

    /// Freezes the node (SIGSTOP): its sockets stay open, it answers nothing.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    /// Lets a frozen node go on (SIGCONT).
    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    /// Starts again on the same ports with the same data (after kill or stop).
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "restart() needs kill() first");
        self.spawn();
        self.wait_ready();
    }
}

impl Drop for RabbitNode {
    // SIGKILL at once, not the SIGTERM of `Proc`'s drop: a node's clean
    // shutdown takes seconds, and its data goes with the test.
    fn drop(&mut self) {
        self.kill();
    }
}

/// An `epmd` on a free port of 127.0.0.1, in the foreground as the test's
/// own child, for nodes started with `-start_epmd false`: the one a node
/// would start itself is a daemon, which a test run killed without
/// unwinding would leave behind. Stopped on drop (by its `Proc`).
struct Epmd {
    port: u16,
    _proc: Proc,
}

impl Epmd {
    fn start() -> Arc<Epmd> {
        let port = free_port();
        let mut cmd = Command::new("epmd");
        cmd.args(["-port", &port.to_string(), "-address", "127.0.0.1"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut proc = Proc::spawn("epmd", &mut cmd);
        let up = wait_for(Duration::from_secs(10), || {
            if !proc.alive() {
                return Some(false);
            }
            std::net::TcpStream::connect(("127.0.0.1", port))
                .is_ok()
                .then_some(true)
        });
        assert_eq!(up, Some(true), "epmd did not listen on {port}");
        Arc::new(Epmd { port, _proc: proc })
    }
}

/// The `rabbitmq` user's uid and gid when the tests run as root (the node
/// then runs as that user, as Debian runs it); `None` otherwise.
fn rabbitmq_user() -> Option<(u32, u32)> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    let line = passwd.lines().find(|l| l.starts_with("rabbitmq:"))?;
    let mut f = line.split(':').skip(2);
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

fn chown_tree(path: &std::path::Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
    if path.is_dir() {
        for entry in fs::read_dir(path).expect("read dir") {
            chown_tree(&entry.expect("dir entry").path(), uid, gid);
        }
    }
}
