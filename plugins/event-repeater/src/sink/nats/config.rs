//! The NATS sink's configuration: `--sink` seed servers, credentials, the
//! stream and the message ids, checked before anything connects.

use std::path::PathBuf;
use std::time::Duration;

use app_plugin::address::{Rules, Scheme};

use crate::flag_values::Qos;
use crate::sink::{default_client_id, Setup};

/// The NATS sink's own flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "NATS sink (--sinkprotocol nats)")]
// No group: its flags are told apart by `sink::configure`, not by clap.
#[group(skip)]
pub struct Args {
    /// JetStream stream for --sinkprotocol nats; created if missing (see docs/event-repeater.md).
    #[arg(long, value_name = "NAME", default_value = "EVENTS")]
    pub nats_stream: String,

    /// Replicas of the stream when the repeater creates it (1, 3 or 5 in a JetStream cluster).
    #[arg(long, value_name = "N", default_value = "1", value_parser = clap::value_parser!(u8).range(1..=5))]
    pub nats_replicas: u8,

    /// NATS credentials file (.creds: JWT and NKey seed).
    #[arg(long, value_name = "FILE")]
    pub creds: Option<PathBuf>,

    /// NATS authentication token.
    #[arg(long, env = "APP_NATS_TOKEN", hide_env_values = true)]
    pub nats_token: Option<String>,
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

/// The NATS settings; an `Err` is a usage error.
pub fn configure(own: &Args, setup: &Setup) -> Result<NatsConfig, String> {
    let args = setup.sink;
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
        crate::files::read_file(path, "--ca-file", 1 << 20)?;
    }
    if let Some(path) = &own.creds {
        // Checked here; the NATS client reads it again when it connects.
        crate::files::read_secret_file(path, "--creds", 64 * 1024)?;
    }
    if own.nats_token.as_deref().is_some_and(str::is_empty) {
        return Err("the NATS token (--nats-token or APP_NATS_TOKEN) must not be empty".into());
    }
    let stream = &own.nats_stream;
    if stream.is_empty()
        || stream
            .chars()
            .any(|c| c.is_whitespace() || ".*>/\\".contains(c))
    {
        return Err(format!(
            "--nats-stream {stream:?} is not a stream name; use letters, digits, '-' or '_'"
        ));
    }
    let source_id = args.source_id(&setup.source)?;
    Ok(NatsConfig {
        servers,
        tls,
        ca_file: args.ca_file.clone(),
        username: args.username.clone(),
        password: setup.password.clone(),
        token: own.nats_token.clone(),
        creds: own.creds.clone(),
        qos: args.qos,
        inflight: args
            .inflight
            .unwrap_or(crate::flag_values::DEFAULT_INFLIGHT),
        stream: stream.clone(),
        stream_max_age: Duration::from_secs(24 * 3600),
        stream_replicas: usize::from(own.nats_replicas),
        source_id,
        ack_timeout: args.ack_timeout,
        client_name: default_client_id(setup.name),
    })
}

/// What `--sink` takes for NATS: `nats://` or `tls://` (TLS), or
/// `HOST[:PORT]` (4222); no path, no credentials.
pub const URLS: Rules = Rules {
    schemes: &[Scheme::plain("nats", 4222), Scheme::tls("tls", 4222)],
    bare: Some("nats"),
    path: false,
    credentials: Some("--username, --creds or APP_NATS_TOKEN"),
};

/// `nats://h:p`, `tls://h:p`, `h:p` or `h` → (`nats://h:p` or `tls://h:p`, tls).
pub fn parse_nats_sink(text: &str) -> Result<(String, bool), String> {
    let a = URLS.parse(text).map_err(|e| format!("--sink {e}"))?;
    Ok((
        format!("{}://{}", a.scheme.name, a.host_port()),
        a.scheme.tls,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::{run_args, setup};

    #[test]
    fn servers_stream_and_source_id() {
        let run = run_args(&[
            "--sinkprotocol",
            "nats",
            "--sink",
            "nats://a:1",
            "--sink",
            "b:2",
        ]);
        let own = <Args as clap::FromArgMatches>::from_arg_matches(&run.sink.matches).unwrap();
        let n = configure(&own, &setup(&run, "http://127.0.0.1:9")).unwrap();
        assert_eq!(n.servers, ["nats://a:1", "nats://b:2"]);
        assert_eq!(n.stream, "EVENTS");
        assert_eq!(n.source_id, "http://127.0.0.1:9");
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
        assert!(parse_nats_sink("nats://a/b")
            .unwrap_err()
            .contains("a path"));
        let err = parse_nats_sink("nats://u:hunter3@h:1").unwrap_err();
        assert!(
            err.contains("nats://***:***@h:1") && !err.contains("hunter3"),
            "{err}"
        );
    }
}
