//! RabbitMQ nodes for `CHAOS_SINK=rabbitmq-stream`: a cluster of
//! [`NODES`] private nodes (Debian's `rabbitmq-server`, the stream plugin
//! from an enabled-plugins file written here), never the machine's own
//! node: their own names, ports, cookie, `epmd` (a process of the run's, so
//! it goes with the run; `-start_epmd false` keeps the nodes from starting
//! a daemon one that would outlive it), data and log directories under the
//! work dir.
//! Streams listen on 127.0.0.1 (the checker) and on the brokers' address
//! (the repeaters in their namespaces); AMQP and distribution on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::port::{free_port, wait_port};
use crate::proc::{tail, Proc, Spec};

/// Nodes in the cluster: the stream keeps a majority (2) when one is down.
pub const NODES: usize = 3;

/// Debian's script that runs a node in the foreground (exec'ing the VM
/// under `RUNNING_UNDER_SYSTEMD`, so a signal reaches the node itself).
const SERVER: &str = "/usr/lib/rabbitmq/bin/rabbitmq-server";

/// How long a node may take to open its stream port (about 7 s alone on a
/// quiet 2-core machine; more when three boot together under load).
pub const START_WITHIN: Duration = Duration::from_secs(120);

pub struct Cluster {
    /// The run's `epmd`, first: the nodes register with it.
    pub epmd: Proc,
    pub nodes: Vec<Proc>,
    pub ports: Vec<u16>,
}

/// Starts the cluster and waits until every node's stream port answers.
pub fn start(host: &str, work: &Path) -> Result<Cluster, String> {
    if !Path::new(SERVER).is_file() {
        return Err(format!(
            "{SERVER} is missing (apt-get install rabbitmq-server)"
        ));
    }
    let logs = work.join("logs");
    let epmd_port = free_port()?;
    let epmd = Proc::start(
        Spec {
            name: "epmd".into(),
            program: PathBuf::from("epmd"),
            args: ["-address", "127.0.0.1", "-port", &epmd_port.to_string()]
                .map(String::from)
                .to_vec(),
            env: Vec::new(),
            stdout: None,
        },
        &logs,
    )?;
    wait_port("127.0.0.1", epmd_port)?;
    let tag = std::process::id();
    let names: Vec<String> = (0..NODES).map(|i| format!("chaos{i}-{tag}")).collect();
    let mut cluster = Cluster {
        epmd,
        nodes: Vec::new(),
        ports: Vec::new(),
    };
    for (i, name) in names.iter().enumerate() {
        let stream_port = free_port()?;
        let spec = node_spec(i, name, &names, host, stream_port, epmd_port, work)?;
        // Started together: a node waits for its peers while it boots.
        cluster.nodes.push(Proc::start(spec, &logs)?);
        cluster.ports.push(stream_port);
    }
    let t0 = Instant::now();
    for (i, &port) in cluster.ports.iter().enumerate() {
        wait_up(&mut cluster.nodes[i], port, START_WITHIN)?;
    }
    println!(
        "chaos: {NODES} RabbitMQ nodes up in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    Ok(cluster)
}

/// Waits until the node's stream port answers on 127.0.0.1; an error
/// when it exits or takes longer than `within`.
pub fn wait_up(node: &mut Proc, port: u16, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if let Some(status) = node.exited() {
            return Err(format!(
                "{} exited with {status}: {}",
                node.spec.name,
                tail(&node.log_path())
            ));
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!(
        "RabbitMQ node {} opened no stream port {port} within {within:?}",
        node.spec.name
    ))
}

fn node_spec(
    i: usize,
    name: &str,
    peers: &[String],
    host: &str,
    stream_port: u16,
    epmd_port: u16,
    work: &Path,
) -> Result<Spec, String> {
    let dir = work.join(format!("rabbitmq{i}"));
    for d in ["mnesia", "log"] {
        std::fs::create_dir_all(dir.join(d)).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let (amqp_port, dist_port) = (free_port()?, free_port()?);
    let mut conf = format!(
        "listeners.tcp.1 = 127.0.0.1:{amqp_port}\n\
         stream.listeners.tcp.1 = 127.0.0.1:{stream_port}\n\
         loopback_users.guest = false\n\
         log.console = false\n\
         log.file.level = info\n\
         cluster_formation.peer_discovery_backend = classic_config\n"
    );
    if host != "127.0.0.1" {
        conf.push_str(&format!("stream.listeners.tcp.2 = {host}:{stream_port}\n"));
    }
    for (k, peer) in peers.iter().enumerate() {
        conf.push_str(&format!(
            "cluster_formation.classic_config.nodes.{} = {peer}@localhost\n",
            k + 1
        ));
    }
    let write = |file: &str, text: &str| {
        std::fs::write(dir.join(file), text).map_err(|e| format!("{file}: {e}"))
    };
    write("rabbit.conf", &conf)?;
    write("enabled_plugins", "[rabbitmq_stream].\n")?;
    write("env.conf", "")?;
    let p = |f: &str| dir.join(f).display().to_string();
    let env = [
        ("HOME", dir.display().to_string()),
        ("LANG", "C.UTF-8".into()),
        ("RUNNING_UNDER_SYSTEMD", "true".into()),
        ("RABBITMQ_NODENAME", format!("{name}@localhost")),
        ("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1".into()),
        ("RABBITMQ_NODE_PORT", amqp_port.to_string()),
        ("RABBITMQ_DIST_PORT", dist_port.to_string()),
        ("ERL_EPMD_PORT", epmd_port.to_string()),
        ("ERL_EPMD_ADDRESS", "127.0.0.1".into()),
        ("RABBITMQ_MNESIA_BASE", p("mnesia")),
        ("RABBITMQ_LOG_BASE", p("log")),
        ("RABBITMQ_ENABLED_PLUGINS_FILE", p("enabled_plugins")),
        ("RABBITMQ_CONFIG_FILE", p("rabbit")),
        ("RABBITMQ_CONF_ENV_FILE", p("env.conf")),
        ("RABBITMQ_ADVANCED_CONFIG_FILE", p("advanced.config")),
        ("RABBITMQ_PID_FILE", p("rabbit.pid")),
        (
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS",
            format!(
                "-setcookie chaos-{tag} -start_epmd false -kernel inet_dist_use_interface {{127,0,0,1}}",
                tag = std::process::id()
            ),
        ),
    ];
    Ok(Spec {
        name: format!("rabbitmq{i}"),
        program: PathBuf::from(SERVER),
        args: Vec::new(),
        env: env.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
        stdout: None,
    })
}
