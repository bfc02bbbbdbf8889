//! The validated configuration of `run`: flags, the `app` context and the
//! environment turned into plain values before any socket opens.

use std::path::{Path, PathBuf};
use std::time::Duration;

use app_plugin::context::Context;

/// The source's address, a field of [`Config`].
pub use crate::addr::SourceAddr;
use crate::addr::{is_loopback, join_host_port, parse_source, split_host_port};
use crate::cli::{Qos, RunArgs, SinkProtocol};
use crate::files::read_file;

/// What `run` does, checked: see [`Config::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub name: String,
    pub source: SourceAddr,
    pub sink: SinkConfig,
    pub allowall: bool,
    /// `--listen` as typed (HOST:PORT).
    pub listen: Option<String>,
    pub token: Option<String>,
    /// `--tls-cert` and `--tls-key`: the TCP API is HTTPS.
    pub api_tls: Option<(PathBuf, PathBuf)>,
    /// `--max-connections`, per API listener.
    pub max_connections: usize,
    /// `--max-routes`.
    pub max_routes: usize,
    /// `--request-timeout`: request head, body, TLS handshake, idle keep-alive.
    pub request_timeout: Duration,
    /// `--source-idle-timeout`: silence after which the source is stalled.
    pub source_idle_timeout: Duration,
    pub log: u8,
    pub state_file: PathBuf,
    /// `APP_RUNTIME_DIR/plugins`.
    pub runtime_dir: PathBuf,
    pub buffer_events: usize,
    pub buffer_bytes: usize,
    pub overflow: crate::overflow::Overflow,
    pub drain_timeout: Duration,
    pub max_event_size: usize,
    /// Keep and resume from the checkpoint (`--checkpoint on`).
    pub checkpoint: bool,
}

impl Config {
    pub fn socket_path(&self) -> PathBuf {
        self.runtime_dir.join(format!("{}.sock", self.name))
    }

    /// The largest SSE line or event read from the source: room for the
    /// largest event a sink takes, written out with escapes.
    pub fn max_source_event(&self) -> usize {
        self.max_event_size.saturating_mul(2).max(1 << 20) + 64 * 1024
    }

    /// Builds the configuration; an `Err` is a usage error (exit 2).
    pub fn new(
        args: &RunArgs,
        ctx: &Context,
        env_password: Option<String>,
    ) -> Result<Config, String> {
        let name = check_name(&args.name)?;
        let dirs = ctx.dirs();
        let source = parse_source(&args.source, &dirs.plugin_runtime_dir())?;
        let token = args.token.clone().filter(|t| !t.is_empty());
        check_listen(args, token.is_some())?;
        if args.buffer_bytes < args.max_packet_size {
            return Err(format!(
                "--buffer-bytes ({}) is smaller than --max-packet-size ({}); the largest event would never fit",
                args.buffer_bytes, args.max_packet_size
            ));
        }
        let sink = sink_config(args, &name, &source, env_password)?;
        let state_file = args.state.clone().unwrap_or_else(|| {
            dirs.data_dir
                .join("event-repeater")
                .join(format!("{name}.routes.json"))
        });
        Ok(Config {
            source,
            sink,
            allowall: args.allowall,
            listen: args.listen.clone(),
            token,
            api_tls: args.tls_cert.clone().zip(args.tls_key.clone()),
            max_connections: args.max_connections as usize,
            max_routes: args.max_routes as usize,
            request_timeout: args.request_timeout,
            source_idle_timeout: args.source_idle_timeout,
            log: args.log.unwrap_or(ctx.log),
            state_file,
            runtime_dir: dirs.plugin_runtime_dir(),
            buffer_events: args.buffer as usize,
            buffer_bytes: args.buffer_bytes,
            overflow: args.overflow,
            drain_timeout: args.drain_timeout,
            max_event_size: args.max_packet_size,
            checkpoint: args.checkpoint == crate::cli::Switch::On,
            name,
        })
    }
}

/// The SDK's one rule for instance names: the name becomes file names.
fn check_name(name: &str) -> Result<String, String> {
    app_plugin::instance::check_name(name).map_err(|e| e.to_string())?;
    Ok(name.to_string())
}

/// `--listen` with `--token` and `--tls-cert`: an API off the loopback
/// needs a token and, unless `--plain-http`, HTTPS.
fn check_listen(args: &RunArgs, has_token: bool) -> Result<(), String> {
    let Some(listen) = &args.listen else {
        if args.tls_cert.is_some() {
            return Err(
                "--tls-cert and --tls-key are for the TCP API: add --listen HOST:PORT".into(),
            );
        }
        return Ok(());
    };
    let (host, _) = split_host_port(listen)
        .ok_or_else(|| format!("--listen {listen:?} is not HOST:PORT (e.g. 127.0.0.1:8080)"))?;
    if is_loopback(&host) {
        return Ok(());
    }
    if !has_token {
        return Err(format!(
            "--listen {listen} is not a loopback address; set --token or APP_TOKEN so that the API is not open to the network"
        ));
    }
    if args.tls_cert.is_none() && !args.plain_http {
        return Err(format!(
            "--listen {listen} is not a loopback address; serve HTTPS with --tls-cert and --tls-key, or accept the token crossing the network in clear text with --plain-http"
        ));
    }
    Ok(())
}

/// MQTT settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MqttConfig {
    pub host: String,
    pub port: u16,
    pub tls: bool,
    pub ca_file: Option<PathBuf>,
    pub client_id: String,
    pub clean_session: bool,
    pub username: Option<String>,
    pub password: Option<String>,
    pub qos: Qos,
    pub retain: bool,
    pub inflight: u16,
    pub max_packet_size: usize,
    /// Brokers to fail over to, in order, after `host:port` (`--sink` repeated).
    pub failover: Vec<Endpoint>,
    /// How long a broker may leave a publish or a ping unanswered before the
    /// repeater moves to the next one (with `failover` only).
    pub ack_timeout: Duration,
}

/// One MQTT broker address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    pub tls: bool,
}

impl Endpoint {
    pub fn url(&self) -> String {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        format!("{scheme}://{}", join_host_port(&self.host, self.port))
    }
}

impl MqttConfig {
    /// Every broker, the preferred one first.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        let first = Endpoint {
            host: self.host.clone(),
            port: self.port,
            tls: self.tls,
        };
        std::iter::once(first)
            .chain(self.failover.iter().cloned())
            .collect()
    }

    /// The broker (or, with failover, every broker) as a URL.
    pub fn url(&self) -> String {
        let urls: Vec<String> = self.endpoints().iter().map(Endpoint::url).collect();
        urls.join(",")
    }
}

/// NATS settings (`--sinkprotocol nats`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NatsConfig {
    /// Seed servers as `nats://HOST:PORT` or `tls://HOST:PORT`.
    pub servers: Vec<String>,
    pub tls: bool,
    pub ca_file: Option<PathBuf>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
    pub creds: Option<PathBuf>,
    pub qos: Qos,
    pub inflight: u16,
    pub stream: String,
    /// How long the repeater's own stream keeps messages.
    pub stream_max_age: Duration,
    /// Replicas of the stream if the repeater creates it.
    pub stream_replicas: usize,
    /// The first part of every `Nats-Msg-Id`.
    pub source_id: String,
    pub ack_timeout: Duration,
    /// The client name the server shows (monitoring, logs).
    pub client_name: String,
}

impl NatsConfig {
    pub fn url(&self) -> String {
        self.servers.join(",")
    }
}

/// Where events go (`--sinkprotocol`) and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SinkConfig {
    Mqtt(MqttConfig),
    Nats(NatsConfig),
    Stderr,
}

/// The sink's settings; an `Err` is a usage error.
fn sink_config(
    args: &RunArgs,
    name: &str,
    source: &SourceAddr,
    env_password: Option<String>,
) -> Result<SinkConfig, String> {
    let password = match (&args.password_file, env_password) {
        (Some(file), _) => Some(read_password(file)?),
        (None, Some(p)) if !p.is_empty() => Some(p),
        _ => None,
    };
    if password.is_some() && args.username.is_none() {
        return Err(
            "a password was given (APP_MQTT_PASSWORD or --password-file) but no --username".into(),
        );
    }
    if args.sinkprotocol != SinkProtocol::Nats {
        for (flag, set) in [
            ("--creds", args.creds.is_some()),
            ("--nats-token (APP_NATS_TOKEN)", args.nats_token.is_some()),
            ("--source-id", args.source_id.is_some()),
        ] {
            if set {
                return Err(format!("{flag} only applies to --sinkprotocol nats"));
            }
        }
    }
    Ok(match args.sinkprotocol {
        SinkProtocol::Stderr => SinkConfig::Stderr,
        SinkProtocol::Nats => SinkConfig::Nats(nats_config(args, name, source, password)?),
        SinkProtocol::Mqtt => SinkConfig::Mqtt(mqtt_config(args, name, password)?),
    })
}

/// The MQTT settings; an `Err` is a usage error.
fn mqtt_config(args: &RunArgs, name: &str, password: Option<String>) -> Result<MqttConfig, String> {
    let (first, more) = match args.sink.split_first() {
        None => ("tcp://localhost:1883", &[][..]),
        Some((first, more)) => (first.as_str(), more),
    };
    let (host, port, tls) = parse_sink(first)?;
    let mut failover = Vec::new();
    for text in more {
        let (host, port, t) = parse_sink(text)?;
        if t != tls {
            return Err(format!(
                "--sink {text:?}: every MQTT broker must use TLS (mqtts://) or none"
            ));
        }
        failover.push(Endpoint { host, port, tls });
    }
    if args.ca_file.is_some() && !tls {
        return Err("--ca-file only applies to an mqtts:// sink".into());
    }
    let client_id = match &args.client_id {
        Some(id) if id.is_empty() => return Err("--client-id must not be empty".into()),
        Some(id) => id.clone(),
        None => default_client_id(name),
    };
    let mqtt = MqttConfig {
        host,
        port,
        tls,
        ca_file: args.ca_file.clone(),
        client_id,
        clean_session: args.clean_session,
        username: args.username.clone(),
        password,
        qos: args.qos,
        retain: args.retain,
        inflight: args.inflight,
        max_packet_size: args.max_packet_size,
        failover,
        ack_timeout: args.ack_timeout,
    };
    if tls {
        // At start, like the NATS sink's: a --ca-file that cannot
        // be used would leave the sink retrying forever.
        crate::sink::mqtt::check_tls(&mqtt)?;
    }
    Ok(mqtt)
}

/// The NATS settings; an `Err` is a usage error.
fn nats_config(
    args: &RunArgs,
    name: &str,
    source: &SourceAddr,
    password: Option<String>,
) -> Result<NatsConfig, String> {
    let given: Vec<&str> = if args.sink.is_empty() {
        vec!["nats://localhost:4222"]
    } else {
        args.sink.iter().map(String::as_str).collect()
    };
    let mut servers = Vec::new();
    let mut tls = false;
    for text in given {
        let (url, t) = parse_nats_sink(text)?;
        tls |= t;
        servers.push(url);
    }
    if args.ca_file.is_some() && !tls {
        return Err("--ca-file only applies to a tls:// sink".into());
    }
    if let Some(path) = &args.ca_file {
        // Checked here; the NATS client reads it again when it connects.
        read_file(path, "--ca-file", 1 << 20)?;
    }
    if let Some(path) = &args.creds {
        // Checked here; the NATS client reads it again when it connects.
        read_file(path, "--creds", 64 * 1024)?;
    }
    if args.nats_token.as_deref().is_some_and(str::is_empty) {
        return Err("the NATS token (--nats-token or APP_NATS_TOKEN) must not be empty".into());
    }
    let stream = &args.nats_stream;
    if stream.is_empty()
        || stream
            .chars()
            .any(|c| c.is_whitespace() || ".*>/\\".contains(c))
    {
        return Err(format!(
            "--nats-stream {stream:?} is not a stream name; use letters, digits, '-' or '_'"
        ));
    }
    let source_id = match &args.source_id {
        Some(id) if id.is_empty() || id.chars().any(char::is_control) => {
            return Err("--source-id must be non-empty printable text".into())
        }
        Some(id) => id.clone(),
        None => source.to_string(),
    };
    Ok(NatsConfig {
        servers,
        tls,
        ca_file: args.ca_file.clone(),
        username: args.username.clone(),
        password,
        token: args.nats_token.clone(),
        creds: args.creds.clone(),
        qos: args.qos,
        inflight: args.inflight,
        stream: stream.clone(),
        stream_max_age: Duration::from_secs(24 * 3600),
        stream_replicas: usize::from(args.nats_replicas),
        source_id,
        ack_timeout: args.ack_timeout,
        client_name: default_client_id(name),
    })
}

/// `nats://h:p`, `tls://h:p`, `h:p` or `h` → (`nats://h:p` or `tls://h:p`, tls).
pub fn parse_nats_sink(text: &str) -> Result<(String, bool), String> {
    let (rest, tls) = if let Some(r) = text.strip_prefix("tls://") {
        (r, true)
    } else if let Some(r) = text.strip_prefix("nats://") {
        (r, false)
    } else if text.contains("://") {
        return Err(format!(
            "--sink {:?}: unsupported scheme for NATS; use nats:// or tls://",
            app_plugin::text::mask_url(text)
        ));
    } else {
        (text, false)
    };
    no_credentials(text, rest, "--username, --creds or APP_NATS_TOKEN")?;
    let rest = rest.trim_end_matches('/');
    let (host, port) = match split_host_port(rest) {
        Some(hp) => hp,
        None if !rest.is_empty() && !rest.contains([':', '@', '/']) => (rest.to_string(), 4222),
        None => return Err(format!("--sink {text:?} is not HOST:PORT")),
    };
    if host.contains('/') {
        return Err(format!("--sink {text:?} is not HOST:PORT"));
    }
    let scheme = if tls { "tls" } else { "nats" };
    Ok((format!("{scheme}://{}", join_host_port(&host, port)), tls))
}

/// Refuses credentials in a sink URL (the sinks take them from flags, where
/// they are not shown in `ps` either), naming the flags; the message shows
/// the URL masked.
fn no_credentials(text: &str, rest: &str, flags: &str) -> Result<(), String> {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(format!(
            "--sink {:?}: give credentials with {flags}, not in the URL",
            app_plugin::text::mask_url(text)
        ));
    }
    Ok(())
}

/// `tcp://h:p`, `mqtt://h:p`, `mqtts://h:p`, `h:p` or `h` → (host, port, tls).
pub fn parse_sink(text: &str) -> Result<(String, u16, bool), String> {
    let (rest, tls) = if let Some(r) = text
        .strip_prefix("mqtts://")
        .or_else(|| text.strip_prefix("ssl://"))
    {
        (r, true)
    } else if let Some(r) = text
        .strip_prefix("tcp://")
        .or_else(|| text.strip_prefix("mqtt://"))
    {
        (r, false)
    } else if text.contains("://") {
        return Err(format!(
            "--sink {:?}: unsupported scheme; use tcp://, mqtt:// or mqtts://",
            app_plugin::text::mask_url(text)
        ));
    } else {
        (text, false)
    };
    no_credentials(
        text,
        rest,
        "--username and --password-file (or APP_MQTT_PASSWORD)",
    )?;
    let rest = rest.trim_end_matches('/');
    let default_port = if tls { 8883 } else { 1883 };
    let (host, port) = match split_host_port(rest) {
        Some(hp) => hp,
        None if !rest.is_empty() && !rest.contains(':') => (rest.to_string(), default_port),
        None if rest.starts_with('[') && rest.ends_with(']') => {
            (rest[1..rest.len() - 1].to_string(), default_port)
        }
        None => return Err(format!("--sink {text:?} is not HOST:PORT")),
    };
    Ok((host, port, tls))
}

fn read_password(path: &Path) -> Result<String, String> {
    let bytes = read_file(path, "--password-file", 64 * 1024)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--password-file {} is not UTF-8 text", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_string())
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length, and gethostname
    // writes at most that many bytes.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// A client id that is the same at every start of the same instance on the
/// same host (so the broker can keep its session) and differs between hosts.
pub fn default_client_id(name: &str) -> String {
    format!("app-event-repeater-{name}@{}", hostname())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config(args: &[&str]) -> Result<Config, String> {
        let mut argv = vec!["x", "run"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        let crate::cli::Command::Run(run) = cli.command;
        let mut ctx = Context::defaults("event-repeater");
        ctx.runtime_dir = "/run/app".into();
        ctx.data_dir = "/data".into();
        Config::new(&run, &ctx, None)
    }

    #[test]
    fn defaults_resolve_under_the_app_dirs() {
        let c = config(&[]).unwrap();
        assert_eq!(
            c.source,
            SourceAddr::Unix("/run/app/plugins/event-time.sock".into())
        );
        assert_eq!(
            c.socket_path(),
            PathBuf::from("/run/app/plugins/event-repeater.sock")
        );
        assert_eq!(
            c.state_file,
            PathBuf::from("/data/event-repeater/event-repeater.routes.json")
        );
        let SinkConfig::Mqtt(m) = c.sink else {
            panic!()
        };
        assert_eq!((m.host.as_str(), m.port, m.tls), ("localhost", 1883, false));
        assert!(!m.clean_session);
        assert_eq!(m.client_id, default_client_id("event-repeater"));
    }

    #[test]
    fn sinks() {
        assert_eq!(
            parse_sink("tcp://localhost:1883"),
            Ok(("localhost".into(), 1883, false))
        );
        assert_eq!(
            parse_sink("localhost:1884"),
            Ok(("localhost".into(), 1884, false))
        );
        assert_eq!(parse_sink("mqtt://h"), Ok(("h".into(), 1883, false)));
        assert_eq!(parse_sink("mqtts://h"), Ok(("h".into(), 8883, true)));
        assert_eq!(parse_sink("[::1]:1"), Ok(("::1".into(), 1, false)));
        assert!(parse_sink("ws://h").is_err());
        assert!(parse_sink("h:notaport").is_err());
    }

    #[test]
    fn usage_errors() {
        assert!(config(&["--listen", "0.0.0.0:1"])
            .unwrap_err()
            .contains("--token"));
        assert!(config(&["--listen", "0.0.0.0:1", "--token", "t"])
            .unwrap_err()
            .contains("--plain-http"));
        assert!(config(&["--listen", "0.0.0.0:1", "--token", "t", "--plain-http"]).is_ok());
        assert!(config(&[
            "--listen",
            "0.0.0.0:1",
            "--token",
            "t",
            "--tls-cert",
            "c",
            "--tls-key",
            "k"
        ])
        .is_ok());
        assert!(config(&["--tls-cert", "c", "--tls-key", "k"])
            .unwrap_err()
            .contains("--listen"));
        assert!(config(&["--listen", "127.0.0.1:0"]).is_ok());
        assert!(config(&["--listen", "nope"]).is_err());
        assert!(config(&["--name", "a/b"]).is_err());
        assert!(config(&["--buffer-bytes", "1KiB"])
            .unwrap_err()
            .contains("--max-packet-size"));
        assert!(config(&["--ca-file", "x"]).is_err());
    }

    #[test]
    fn nats_sinks() {
        assert_eq!(
            parse_nats_sink("nats://127.0.0.1:4222"),
            Ok(("nats://127.0.0.1:4222".into(), false))
        );
        assert_eq!(parse_nats_sink("h"), Ok(("nats://h:4222".into(), false)));
        assert_eq!(parse_nats_sink("tls://h:1"), Ok(("tls://h:1".into(), true)));
        assert!(parse_nats_sink("mqtt://h").is_err());
        let err = parse_nats_sink("nats://u:hunter3@h:1").unwrap_err();
        assert!(
            err.contains("nats://u:***@h:1") && !err.contains("hunter3"),
            "{err}"
        );
        let err = parse_sink("mqtt://u:hunter4@h:1").unwrap_err();
        assert!(
            err.contains("--password-file") && !err.contains("hunter4"),
            "{err}"
        );
        let err = parse_sink("nats://u:hunter6@h:1").unwrap_err();
        assert!(
            err.contains("unsupported scheme") && !err.contains("hunter6"),
            "{err}"
        );
        let c = config(&[
            "--sinkprotocol",
            "nats",
            "--sink",
            "nats://a:1",
            "--sink",
            "b:2",
            "--source",
            "http://127.0.0.1:9",
        ])
        .unwrap();
        let SinkConfig::Nats(n) = c.sink else {
            panic!()
        };
        assert_eq!(n.servers, ["nats://a:1", "nats://b:2"]);
        assert_eq!(n.stream, "EVENTS");
        assert_eq!(n.source_id, "http://127.0.0.1:9");
        assert!(config(&["--sinkprotocol", "nats", "--nats-stream", "a.b"]).is_err());
        assert!(config(&["--source-id", "x"]).unwrap_err().contains("nats"));
        let c = config(&["--sink", "a", "--sink", "tcp://b:2"]).unwrap();
        let SinkConfig::Mqtt(m) = c.sink else {
            panic!()
        };
        assert_eq!(m.url(), "mqtt://a:1883,mqtt://b:2");
        assert!(config(&["--sink", "a", "--sink", "mqtts://b"]).is_err());
    }
}
