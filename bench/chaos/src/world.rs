//! Everything the run starts: the brokers, the numbered source, the
//! repeaters (each in its network namespace when the machine allows), the
//! checker's subscriber, the tmpfs under the repeaters' data. Dropped in
//! field order: processes first, then the mount and the namespaces.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use app_event_repeater_api::{metric, path};

use crate::api;
use crate::brokers::{Brokers, Sink};
use crate::config::Config;
use crate::disk::Disk;
use crate::net::{LossBy, Net};
use crate::proc::tail;
use crate::proc::{Proc, Spec};

/// The topic of the numbered events (loadgen's default).
pub const SOURCE_TOPIC: &str = "bench/seq";

/// The one sink topic of a RabbitMQ or Kafka run: every route's sink
/// topic (see `routes.rs`), the first one's included. RabbitMQ: the stream
/// of that name; Kafka: [`KAFKA_TOPIC`].
pub const ONE_TOPIC: &str = "chaos/a";

/// [`ONE_TOPIC`] as the Kafka sink names it (`/` levels become `.`).
pub const KAFKA_TOPIC: &str = "chaos.a";

pub struct Repeater {
    pub proc: Proc,
    pub name: String,
    pub socket: PathBuf,
    pub checkpoint: PathBuf,
    /// The routes the repeater should hold: `(sourcetopic, sinktopic)`,
    /// sorted, as `GET /events` lists them.
    pub routes: Vec<(String, String)>,
}

pub struct World {
    pub repeaters: Vec<Repeater>,
    pub source: Proc,
    /// MQTT: the persistent subscriber, running from before the first event.
    pub subscriber: Option<Proc>,
    pub brokers: Brokers,
    pub disk: Disk,
    pub net: Option<Net>,
    pub work: PathBuf,
    /// What the machine does not allow, said once at the start.
    pub notes: Vec<String>,
}

impl World {
    pub fn start(cfg: &Config) -> Result<World, String> {
        let work = cfg.work.clone();
        std::fs::create_dir_all(work.join("logs"))
            .map_err(|e| format!("{}: {e}", work.display()))?;
        let mut notes = Vec::new();
        let net = match Net::setup(cfg.repeaters) {
            Ok(net) => Some(net),
            Err(e) => {
                notes.push(format!(
                    "no network namespaces here ({e}): everything on 127.0.0.1, no partition or packet-loss faults"
                ));
                None
            }
        };
        match net.as_ref().map(|n| n.loss_by) {
            Some(None) => notes.push(
                "neither tc netem (the kernel's sch_netem) nor nft (Debian package nftables) works here: no packet-loss faults"
                    .into(),
            ),
            Some(Some(LossBy::Nftables)) => notes.push(
                "tc netem does not work here (no sch_netem): packet loss through nftables in the namespaces".into(),
            ),
            _ => {}
        }
        let disk = match Disk::mount(&work.join("data")) {
            Ok(d) => d,
            Err((d, e)) => {
                notes.push(format!("cannot mount a tmpfs ({e}): no disk-full faults"));
                d
            }
        };
        let host = net
            .as_ref()
            .map_or("127.0.0.1".to_string(), |n| n.host.clone());
        let brokers = Brokers::start(cfg.sink, &host, &work)?;
        let subscriber = match cfg.sink {
            Sink::Mqtt => Some(start_subscriber(cfg, &brokers, &work)?),
            Sink::Nats | Sink::RabbitmqStream | Sink::Kafka => None,
        };
        let source = Proc::start(source_spec(cfg, &work), &work.join("logs"))?;
        let mut world = World {
            repeaters: Vec::new(),
            source,
            subscriber,
            brokers,
            disk,
            net,
            work,
            notes,
        };
        for i in 0..cfg.repeaters {
            let r = world.start_repeater(cfg, i)?;
            world.repeaters.push(r);
        }
        if cfg.sink == Sink::RabbitmqStream {
            world.release_source()?;
        }
        Ok(world)
    }

    /// RabbitMQ: the numbered events start once every repeater is
    /// subscribed, so both see event 1 on. A stream drops a publishing id
    /// not above the highest it stored for the producer name: events only
    /// the first repeater got (the second starting later, from the live
    /// events) would be dropped once the second stored a higher one, which
    /// is a deployment limit (docs/event-repeater.md), not a fault here.
    fn release_source(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        for r in &self.repeaters {
            while !api::metrics(&r.socket)
                .is_ok_and(|m| api::sum(&m, metric::SOURCE_CONNECTED) == 1.0)
            {
                if Instant::now() > deadline {
                    return Err(format!(
                        "{} did not subscribe to the source within 20 s: {}",
                        r.name,
                        tail(&r.proc.log_path())
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        let ready = ready_file(&self.work);
        std::fs::write(&ready, "go").map_err(|e| format!("{}: {e}", ready.display()))
    }

    fn start_repeater(&self, cfg: &Config, i: usize) -> Result<Repeater, String> {
        let name = format!("chaos{i}");
        let data = self.disk.dir.join("event-repeater");
        let routes = vec![(SOURCE_TOPIC.to_string(), "chaos/a".to_string())];
        write_routes(&data, &name, &routes)?;
        let mut args = vec![
            "run".to_string(),
            "--name".into(),
            name.clone(),
            "--source".into(),
            self.work.join("source.sock").display().to_string(),
            "--sinkprotocol".into(),
            cfg.sink.protocol().into(),
            "--qos".into(),
            "1".into(),
            "--buffer".into(),
            cfg.buffer.to_string(),
            "--ack-timeout".into(),
            ack_timeout(cfg.sink).into(),
            "--log".into(),
            "info".into(),
        ];
        args.extend(self.brokers.sink_args());
        if cfg.sink == Sink::Nats {
            // Both repeaters publish every event with the same Msg-Id
            // (SOURCE_ID:SSE_ID): the stream stores it once.
            args.extend(["--nats-replicas", "3", "--source-id", "chaos"].map(String::from));
        }
        if cfg.sink == Sink::RabbitmqStream {
            // Both repeaters publish every event under one producer name
            // (from --source-id) with its number as the publishing id: the
            // stream stores it once.
            let replicas = self.brokers.nodes.len().to_string();
            args.extend(
                ["--rabbitmq-replicas", &replicas, "--source-id", "chaos"].map(String::from),
            );
        }
        if cfg.sink == Sink::Kafka {
            // Both repeaters give every event the record key
            // `chaos:SSE_ID`: the topic stores a copy per repeater (and
            // per resend after a crash), each under the event's one key.
            args.extend(["--source-id", "chaos"].map(String::from));
        }
        let repeater = cfg.bin.join("app-event-repeater").display().to_string();
        let (program, args) = match &self.net {
            Some(net) => {
                let mut wrapped = vec![
                    "netns".into(),
                    "exec".into(),
                    net.names[i].clone(),
                    repeater,
                ];
                wrapped.extend(args);
                (PathBuf::from("ip"), wrapped)
            }
            None => (PathBuf::from(repeater), args),
        };
        let spec = Spec {
            name: name.clone(),
            program,
            args,
            env: vec![
                (
                    "APP_RUNTIME_DIR".into(),
                    self.work.join("run").display().to_string(),
                ),
                ("APP_DATA_DIR".into(), self.disk.dir.display().to_string()),
            ],
            stdout: None,
        };
        let mut r = Repeater {
            proc: Proc::start(spec, &self.work.join("logs"))?,
            socket: self.work.join("run/plugins").join(format!("{name}.sock")),
            checkpoint: data.join(format!("{name}.checkpoint")),
            name,
            routes,
        };
        r.wait_api()?;
        Ok(r)
    }
}

impl Repeater {
    /// Waits (20 s at most) until `GET /healthz` answers 200.
    pub fn wait_api(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(status) = self.proc.exited() {
                return Err(format!(
                    "{} exited with {status} at start: {}",
                    self.name,
                    tail(&self.proc.log_path())
                ));
            }
            if matches!(
                api::request(&self.socket, "GET", path::HEALTHZ, None),
                Ok((200, _))
            ) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "{}'s API did not answer within 20 s of its start: {}",
            self.name,
            tail(&self.proc.log_path())
        ))
    }

    /// The checkpoint's event id (0 when there is none yet).
    pub fn checkpoint_id(&self) -> u64 {
        std::fs::read_to_string(&self.checkpoint)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v["last_event_id"].as_str()?.parse().ok())
            .unwrap_or(0)
    }

    /// Up and not stopped: its API can answer.
    pub fn answering(&self) -> bool {
        self.proc.running() && !self.proc.paused()
    }
}

/// The repeaters' `--ack-timeout`: 2 s, so the faults make deliveries time
/// out and be sent again. Kafka: 60 s, longer than any outage the plan
/// makes, because a delivery that times out makes librdkafka's idempotent
/// producer bump its epoch itself, and tansu 0.6.0 with SQLite panics on
/// the bumped epoch ("more or less than one row", in
/// `idempotent_message_check`) and then answers nothing: a loss of the
/// broker's, for ever, not the repeater's ([`crate::tansu::panicked`]).
fn ack_timeout(sink: Sink) -> &'static str {
    match sink {
        Sink::Kafka => "60s",
        _ => "2s",
    }
}

/// The routes file the repeater reads at its first start (see
/// docs/rest-api.md): the route is there before the first event.
fn write_routes(data: &Path, name: &str, routes: &[(String, String)]) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(data)
        .map_err(|e| format!("{}: {e}", data.display()))?;
    let list: Vec<_> = routes
        .iter()
        .map(|(s, t)| serde_json::json!({"sourcetopic": s, "sinktopic": t}))
        .collect();
    let path = data.join(format!("{name}.routes.json"));
    std::fs::write(
        &path,
        serde_json::json!({"version": 1, "routes": list}).to_string(),
    )
    .and_then(|()| std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)))
    .map_err(|e| format!("{}: {e}", path.display()))
}

/// What the source waits for before its numbered events (RabbitMQ runs).
fn ready_file(work: &Path) -> PathBuf {
    work.join("source.ready")
}

/// Where the source records what it sent (`loadgen sse --sent-file`).
pub fn sent_file(work: &Path) -> PathBuf {
    work.join("source.sent")
}

fn source_spec(cfg: &Config, work: &Path) -> Spec {
    let mut spec = Spec {
        name: "source".into(),
        program: cfg.bin.join("loadgen"),
        args: [
            "sse",
            "--unix",
            &work.join("source.sock").display().to_string(),
            "--rate",
            &cfg.rate.to_string(),
            "--count",
            &cfg.count().to_string(),
            "--warmup",
            "0",
            "--topic",
            SOURCE_TOPIC,
            "--sent-file",
            &sent_file(work).display().to_string(),
        ]
        .map(String::from)
        .to_vec(),
        env: Vec::new(),
        stdout: None,
    };
    if cfg.sink == Sink::RabbitmqStream {
        // Event 0 every 10 ms until it exists (a restarted source finds it).
        let ready = ready_file(work).display().to_string();
        spec.args.extend(["--ready-file".to_string(), ready]);
    }
    spec
}

/// `loadgen subscribe` with a persistent session at QoS 1 on `chaos/#`,
/// counting 1..=N; returns once the broker acknowledged the subscription.
fn start_subscriber(cfg: &Config, brokers: &Brokers, work: &Path) -> Result<Proc, String> {
    let subscribed = work.join("subscribed");
    let forever = (cfg.seconds + cfg.settle + 3600).to_string();
    let spec = Spec {
        name: "checker".into(),
        program: cfg.bin.join("loadgen"),
        args: [
            "subscribe",
            "--broker",
            &format!("127.0.0.1:{}", brokers.ports[0]),
            "--topic",
            "chaos/#",
            "--qos",
            "1",
            "--expect",
            &cfg.count().to_string(),
            "--session",
            &format!("chaos-checker-{}", std::process::id()),
            "--idle",
            &forever,
            "--timeout",
            &forever,
            "--linger-ms",
            "3000",
            "--progress-ms",
            "500",
            "--subscribed-file",
            &subscribed.display().to_string(),
        ]
        .map(String::from)
        .to_vec(),
        env: Vec::new(),
        stdout: Some(work.join("checker.json")),
    };
    let proc = Proc::start(spec, &work.join("logs"))?;
    let deadline = Instant::now() + Duration::from_secs(15);
    while !subscribed.exists() {
        if Instant::now() > deadline {
            return Err(format!(
                "the checker did not subscribe within 15 s: {}",
                tail(&proc.log_path())
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(proc)
}
