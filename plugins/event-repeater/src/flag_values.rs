//! The values flags take: the parsers and value types that the command
//! line (`cli`), the source and the sinks share. A leaf: `cli` composes
//! the source's and the sinks' flags, so they cannot import from it.

use clap::ValueEnum;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Qos {
    #[value(name = "0")]
    AtMostOnce,
    #[value(name = "1")]
    AtLeastOnce,
    #[value(name = "2")]
    ExactlyOnce,
}

/// An on/off flag value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

/// The default of `--max-connections`, per API listener.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;

/// `--inflight` when not given (MQTT QoS 1, NATS JetStream).
pub const DEFAULT_INFLIGHT: u16 = 1000;

/// `--inflight` when not given for MQTT at QoS 2: mosquitto's default
/// `max_inflight_messages`. Over MQTT 3.1.1 a QoS 2 publish over the
/// broker's limit is answered like an accepted one and then discarded.
pub const DEFAULT_INFLIGHT_MQTT_QOS2: u16 = 20;

/// The longest `--drain-timeout`: a stop that waits longer than this is a
/// hang to whoever stops the repeater.
pub const MAX_DRAIN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// `--drain-timeout`: a duration of at most [`MAX_DRAIN_TIMEOUT`].
pub fn parse_drain_timeout(text: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(text)?;
    if d > MAX_DRAIN_TIMEOUT {
        return Err(format!(
            "{text:?} is longer than the maximum of 1h; use a shorter duration"
        ));
    }
    Ok(d)
}

/// A timeout that bounds a wait: more than zero, at most an hour.
pub fn parse_limit_timeout(text: &str) -> Result<std::time::Duration, String> {
    let d = parse_duration(text)?;
    if d.is_zero() {
        return Err(format!("{text:?} is zero; give a duration such as 30s"));
    }
    if d > MAX_DRAIN_TIMEOUT {
        return Err(format!(
            "{text:?} is longer than the maximum of 1h; use a shorter duration"
        ));
    }
    Ok(d)
}

/// Parses `1048576`, `1MiB`, `1M`, `512KiB`, `64k`, `1GiB`.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: usize = num
        .parse()
        .map_err(|_| format!("{text:?} is not a size; use a number of bytes or e.g. 64MiB"))?;
    let mult: usize = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => {
            return Err(format!(
                "{text:?}: unknown size unit; use B, KiB, MiB or GiB"
            ))
        }
    };
    n.checked_mul(mult)
        .filter(|&v| v > 0)
        .ok_or_else(|| format!("{text:?} is not a usable size"))
}

/// Parses a duration with humantime (`5s`, `500ms`, `2m`, `1h30m`, …), or a
/// plain number of seconds; a value too large to represent is an error,
/// never a wrap-around.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    // A bare number has always meant seconds here; humantime wants a unit.
    let with_unit = if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        format!("{t}s")
    } else {
        t.to_string()
    };
    humantime::parse_duration(&with_unit).map_err(|e| match e {
        humantime::DurationError::NumberOverflow => format!("{text:?} is too long a duration"),
        other => format!("{text:?} is not a duration ({other}); use e.g. 5s, 500ms, 2m or 1h30m"),
    })
}
