//! The brokers: one mosquitto with persistence, a 3-node NATS JetStream
//! cluster (routes on 127.0.0.1), a 3-node RabbitMQ cluster with the
//! stream plugin ([`crate::rabbitmq`]), or one tansu, a Kafka-protocol
//! broker ([`crate::tansu`]). Clients on the host use 127.0.0.1 (MQTT,
//! RabbitMQ) or the brokers' address (NATS, Kafka); the repeaters reach
//! them on `host`, the host end of their veth pair (127.0.0.1 without
//! namespaces).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::port::{free_port, wait_port};
use crate::proc::{Proc, Spec};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sink {
    Mqtt,
    Nats,
    RabbitmqStream,
    Kafka,
}

impl Sink {
    /// The repeater's `--sinkprotocol` (and CHAOS_SINK's value).
    pub fn protocol(self) -> &'static str {
        match self {
            Sink::Mqtt => "mqtt",
            Sink::Nats => "nats",
            Sink::RabbitmqStream => "rabbitmq-stream",
            Sink::Kafka => "kafka",
        }
    }
}

pub struct Brokers {
    pub sink: Sink,
    pub nodes: Vec<Proc>,
    /// Client ports, one per node.
    pub ports: Vec<u16>,
    pub host: String,
    /// RabbitMQ's `epmd`, dropped after the nodes.
    epmd: Option<Proc>,
}

fn program(name: &str) -> Result<PathBuf, String> {
    for dir in std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .chain(["/usr/sbin", "/sbin"])
    {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return Ok(p);
        }
    }
    Err(format!("{name} is not installed (apt-get install {name})"))
}

impl Brokers {
    pub fn start(sink: Sink, host: &str, work: &Path) -> Result<Brokers, String> {
        let mut b = Brokers {
            sink,
            nodes: Vec::new(),
            ports: Vec::new(),
            host: host.to_string(),
            epmd: None,
        };
        match sink {
            Sink::Mqtt => b.start_mosquitto(work)?,
            Sink::Nats => b.start_nats(work)?,
            Sink::RabbitmqStream => {
                let c = crate::rabbitmq::start(host, work)?;
                (b.nodes, b.ports, b.epmd) = (c.nodes, c.ports, Some(c.epmd));
            }
            Sink::Kafka => {
                let (node, port) = crate::tansu::start(host, work)?;
                (b.nodes, b.ports) = (vec![node], vec![port]);
            }
        }
        for &port in &b.ports {
            wait_port(&b.client_host(), port)?;
        }
        Ok(b)
    }

    fn start_mosquitto(&mut self, work: &Path) -> Result<(), String> {
        let exe = program("mosquitto")?;
        let dir = work.join("mosquitto");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let port = free_port()?;
        let mut conf = format!(
            "listener {port} 127.0.0.1\nallow_anonymous true\nmax_queued_messages 0\nmax_inflight_messages {SUB_WINDOW}\n\
             persistence true\npersistence_location {d}/\nautosave_interval 1\nlog_dest file {d}/mosquitto.log\n",
            d = dir.display()
        );
        if self.host != "127.0.0.1" {
            conf.push_str(&format!("listener {port} {}\n", self.host));
        }
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            // Otherwise mosquitto drops to a user that cannot write here.
            conf.push_str("user root\n");
        }
        let conf_path = dir.join("mosquitto.conf");
        std::fs::write(&conf_path, conf).map_err(|e| e.to_string())?;
        self.nodes.push(Proc::start(
            Spec {
                name: "mosquitto".into(),
                program: exe,
                args: vec!["-c".into(), conf_path.display().to_string()],
                env: Vec::new(),
                stdout: None,
            },
            &work.join("logs"),
        )?);
        self.ports.push(port);
        Ok(())
    }

    fn start_nats(&mut self, work: &Path) -> Result<(), String> {
        let exe = program("nats-server")?;
        let ports: Vec<(u16, u16)> = (0..3)
            .map(|_| Ok((free_port()?, free_port()?)))
            .collect::<Result<_, String>>()?;
        let routes: Vec<String> = ports
            .iter()
            .map(|(_, r)| format!("nats-route://127.0.0.1:{r}"))
            .collect();
        for (i, (port, route)) in ports.iter().enumerate() {
            let dir = work.join(format!("nats{i}"));
            std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
            let conf = format!(
                "server_name: chaos{i}\nlisten: {host}:{port}\njetstream {{\n  store_dir: \"{d}/js\"\n}}\n\
                 cluster {{\n  name: chaos\n  listen: 127.0.0.1:{route}\n  routes: [{routes}]\n}}\n",
                host = self.host,
                d = dir.display(),
                routes = routes.join(", ")
            );
            let conf_path = dir.join("nats.conf");
            std::fs::write(&conf_path, conf).map_err(|e| e.to_string())?;
            self.nodes.push(Proc::start(
                Spec {
                    name: format!("nats{i}"),
                    program: exe.clone(),
                    args: vec!["-c".into(), conf_path.display().to_string()],
                    env: Vec::new(),
                    stdout: None,
                },
                &work.join("logs"),
            )?);
            self.ports.push(*port);
        }
        Ok(())
    }

    /// Where clients on the host connect: 127.0.0.1 for mosquitto and
    /// RabbitMQ (they listen there too), the brokers' address for NATS and
    /// Kafka (tansu advertises it: a Kafka client goes where it says).
    pub fn client_host(&self) -> String {
        match self.sink {
            Sink::Mqtt | Sink::RabbitmqStream => "127.0.0.1".into(),
            Sink::Nats | Sink::Kafka => self.host.clone(),
        }
    }

    /// The repeater's `--sink` arguments: every node.
    pub fn sink_args(&self) -> Vec<String> {
        let scheme = match self.sink {
            Sink::Mqtt => "tcp",
            Sink::Nats => "nats",
            Sink::RabbitmqStream => "rabbitmq-stream",
            Sink::Kafka => "kafka",
        };
        self.ports
            .iter()
            .flat_map(|p| {
                [
                    "--sink".to_string(),
                    format!("{scheme}://{}:{p}", self.host),
                ]
            })
            .collect()
    }

    /// Takes node `n` down. NATS and RabbitMQ: SIGKILL (an acknowledged
    /// message is on a majority of the nodes). tansu: SIGKILL (what it
    /// acknowledged is in its SQLite file). mosquitto: SIGTERM, because it
    /// acknowledges QoS 1 publishes before it writes them (every
    /// `autosave_interval`), so a SIGKILLed mosquitto loses what it
    /// acknowledged: a loss of the broker's, not the repeater's.
    pub fn take_down(&mut self, n: usize) {
        match self.sink {
            Sink::Nats | Sink::RabbitmqStream | Sink::Kafka => self.nodes[n].kill(),
            Sink::Mqtt => self.nodes[n].stop(Duration::from_secs(10)),
        }
    }

    /// Starts node `n` again on its port with its store. A RabbitMQ node
    /// takes seconds to boot: not waited for here (the plan goes on; the
    /// other two nodes carry the stream), but before the count
    /// ([`Brokers::wait_all_up`]).
    pub fn bring_up(&mut self, n: usize) -> Result<(), String> {
        self.nodes[n].spawn()?;
        match self.sink {
            Sink::RabbitmqStream => Ok(()),
            Sink::Kafka => crate::tansu::wait_up(&mut self.nodes[n], &self.host, self.ports[n]),
            _ => wait_port(&self.client_host(), self.ports[n]),
        }
    }

    /// Every node answers (RabbitMQ: a node restarted by the plan finished
    /// booting, or failed: an error).
    pub fn wait_all_up(&mut self) -> Result<(), String> {
        let (sink, host) = (self.sink, self.client_host());
        for (node, &port) in self.nodes.iter_mut().zip(&self.ports) {
            match sink {
                Sink::RabbitmqStream => {
                    crate::rabbitmq::wait_up(node, port, crate::rabbitmq::START_WITHIN)?
                }
                Sink::Kafka => crate::tansu::wait_up(node, &host, port)?,
                _ => wait_port(&host, port)?,
            }
        }
        Ok(())
    }

    /// What the fault is called in the output.
    pub fn down_word(&self) -> &'static str {
        match self.sink {
            Sink::Nats | Sink::RabbitmqStream | Sink::Kafka => "SIGKILL",
            Sink::Mqtt => "SIGTERM",
        }
    }
}

/// mosquitto's window of unacknowledged QoS 1 messages to one subscriber:
/// after a broker restart, at most these come to the checker twice.
pub const SUB_WINDOW: u64 = 20;
