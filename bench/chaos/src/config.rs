//! The run's settings, from the environment (bench/chaos.sh documents
//! them). A bad value is a usage error naming the variable.

use std::path::PathBuf;

use crate::brokers::Sink;

#[derive(Debug)]
pub struct Config {
    pub seed: u64,
    /// Whether the seed came from CHAOS_SEED (else from the clock).
    pub seed_given: bool,
    pub seconds: u64,
    pub sink: Sink,
    pub repeaters: usize,
    /// Events per second from the source.
    pub rate: u64,
    /// The repeaters' --buffer.
    pub buffer: u64,
    /// How long the faultless end may take to deliver everything.
    pub settle: u64,
    /// RSS limit of a repeater, MiB.
    pub rss_mib: u64,
    /// CHAOS_REQUIRE_ALL=1: a kind of fault skipped or never drawn fails
    /// the run (CI, where every tool is installed).
    pub require_all: bool,
    /// Where app-event-repeater and loadgen are.
    pub bin: PathBuf,
    pub work: PathBuf,
}

impl Config {
    /// The events the source sends: `rate` × `seconds`.
    pub fn count(&self) -> u64 {
        self.rate * self.seconds
    }
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn number(name: &str, default: u64, range: std::ops::RangeInclusive<u64>) -> Result<u64, String> {
    let Some(text) = var(name) else {
        return Ok(default);
    };
    match text.trim().parse::<u64>() {
        Ok(n) if range.contains(&n) => Ok(n),
        _ => Err(format!(
            "{name}={text:?}: give a whole number from {} to {}",
            range.start(),
            range.end()
        )),
    }
}

pub fn from_env() -> Result<Config, String> {
    let (seed, seed_given) = match var("CHAOS_SEED") {
        Some(s) => (
            s.trim()
                .parse()
                .map_err(|_| format!("CHAOS_SEED={s:?}: give a whole number (0 to 2^64-1)"))?,
            true,
        ),
        None => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_err(|e| e.to_string())?;
            // Nanoseconds, folded: a fresh seed per run, short enough to copy.
            (now.as_nanos() as u64 % 1_000_000_000_000, false)
        }
    };
    let sink = match var("CHAOS_SINK").as_deref() {
        None | Some("mqtt") => Sink::Mqtt,
        Some("nats") => Sink::Nats,
        Some("rabbitmq-stream") => Sink::RabbitmqStream,
        Some("kafka") => Sink::Kafka,
        Some(other) => {
            return Err(format!(
                "CHAOS_SINK={other:?}: give mqtt, nats, rabbitmq-stream or kafka"
            ))
        }
    };
    // MQTT: one repeater (two would publish every event twice, by design).
    // NATS and RabbitMQ: two, active-active on one source (the stream
    // stores each once). Kafka: two (the topic stores each event once per
    // repeater, every copy under the event's one record key).
    let default_repeaters = if sink == Sink::Mqtt { 1 } else { 2 };
    let repeaters = number("CHAOS_REPEATERS", default_repeaters, 1..=2)? as usize;
    if sink == Sink::Mqtt && repeaters != 1 {
        return Err("CHAOS_REPEATERS=2 needs CHAOS_SINK=nats, rabbitmq-stream or kafka (two repeaters into one MQTT broker deliver every event twice)".into());
    }
    let bin = match var("CHAOS_BIN") {
        Some(dir) => PathBuf::from(dir),
        // Built into the same target directory as the binaries it drives.
        None => std::env::current_exe()
            .map_err(|e| e.to_string())?
            .parent()
            .map(PathBuf::from)
            .ok_or("cannot tell the chaos binary's directory; set CHAOS_BIN")?,
    };
    let work = var("CHAOS_WORK")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(format!("/tmp/app-chaos-{}", std::process::id())));
    Ok(Config {
        seed,
        seed_given,
        seconds: number("CHAOS_SECONDS", 60, 5..=86_400)?,
        sink,
        repeaters,
        rate: number("CHAOS_RATE", 500, 1..=100_000)?,
        buffer: number("CHAOS_BUFFER", 1000, 10..=1_000_000)?,
        settle: number("CHAOS_SETTLE", 120, 10..=3600)?,
        rss_mib: number("CHAOS_RSS_MIB", 64, 1..=65_536)?,
        require_all: number("CHAOS_REQUIRE_ALL", 0, 0..=1)? == 1,
        bin,
        work,
    })
}
