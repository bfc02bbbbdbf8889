//! The validated configuration of `run`: flags, the `app` context and the
//! environment turned into plain values before any socket opens.

use std::path::{Path, PathBuf};
use std::time::Duration;

use app_plugin::context::Context;

/// The source's address, a field of [`Config`].
pub use crate::addr::SourceAddr;
use crate::addr::{is_loopback, parse_source, split_host_port};
use crate::cli::{RunArgs, SinkProtocol};
use crate::sink::{Setup, SinkConfig};

/// What `run` does, checked: see [`Config::new`].
#[derive(Debug)]
pub struct Config {
    pub name: String,
    pub source: SourceAddr,
    /// The sink `--sinkprotocol` chose (see [`crate::sink`]).
    pub sink: Box<dyn SinkConfig>,
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
    pub log: app_plugin::log::Level,
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
    /// `--topic-from` and `--payload`.
    pub decoder: crate::decode::Decoder,
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
        let source = source_addr(args, &dirs.plugin_runtime_dir())?;
        let decoder = decoder(&args.source_args)?;
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
            decoder,
            name,
        })
    }
}

/// `--source`: a plain SSE feed (by `--source-kind` or its URL), or an
/// event plugin's address.
fn source_addr(args: &RunArgs, plugin_dir: &Path) -> Result<SourceAddr, String> {
    use crate::feed::{is_feed, Feed};
    let a = &args.source_args;
    if is_feed(&args.source, a.source_kind) {
        return Ok(SourceAddr::Feed(std::sync::Arc::new(Feed::new(
            &args.source,
            a,
        )?)));
    }
    for (flag, set) in [
        ("--source-header", !a.source_header.is_empty()),
        ("--source-token-file", a.source_token_file.is_some()),
        ("--source-ca-file", a.source_ca_file.is_some()),
    ] {
        if set {
            return Err(format!(
                "{flag} is for a plain SSE feed (an http(s):// URL with a path, or --source-kind sse), not an event plugin"
            ));
        }
    }
    parse_source(&args.source, plugin_dir)
}

/// `--topic-from` and `--payload`.
fn decoder(a: &crate::feed::SourceArgs) -> Result<crate::decode::Decoder, String> {
    use crate::decode::{parse_topic_from, Decoder, Payload};
    use crate::feed::PayloadKind;
    let payload = match a.payload {
        PayloadKind::Json => Payload::Json,
        PayloadKind::Text => Payload::Text,
    };
    Decoder::new(parse_topic_from(&a.topic_from)?, payload)
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

/// The sink's settings; an `Err` is a usage error.
fn sink_config(
    args: &RunArgs,
    name: &str,
    source: &SourceAddr,
    env_password: Option<String>,
) -> Result<Box<dyn SinkConfig>, String> {
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
    let protocol = crate::sink::protocol(args)?;
    if args.source_id.is_some()
        && !matches!(protocol, SinkProtocol::Nats | SinkProtocol::RabbitmqStream)
    {
        return Err("--source-id only applies to a NATS or RabbitMQ Streams sink".into());
    }
    if protocol != SinkProtocol::Nats {
        for (flag, set) in [
            ("--creds", args.creds.is_some()),
            ("--nats-token (APP_NATS_TOKEN)", args.nats_token.is_some()),
        ] {
            if set {
                return Err(format!("{flag} only applies to a NATS sink (a nats:// or tls:// --sink, or --sinkprotocol nats)"));
            }
        }
    }
    crate::sink::configure(&Setup {
        args,
        name,
        source: source.to_string(),
        password,
    })
}

fn read_password(path: &Path) -> Result<String, String> {
    let bytes = crate::files::read_secret_file(path, "--password-file", 64 * 1024)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--password-file {} is not UTF-8 text", path.display()))?;
    Ok(text.lines().next().unwrap_or_default().to_string())
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
        // The sink's own defaults: sink::mqtt::config's tests.
        assert_eq!(c.sink.protocol(), "mqtt");
        assert_eq!(c.sink.url(), "mqtt://localhost:1883");
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
        // The URLs themselves: sink::mqtt::config and sink::nats::config.
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
        assert_eq!(c.sink.protocol(), "nats");
        assert_eq!(c.sink.url(), "nats://a:1,nats://b:2");
        assert!(config(&["--sinkprotocol", "nats", "--nats-stream", "a.b"]).is_err());
        assert!(config(&["--source-id", "x"]).unwrap_err().contains("nats"));
        let c = config(&["--sink", "a", "--sink", "tcp://b:2"]).unwrap();
        assert_eq!(c.sink.url(), "mqtt://a:1883,mqtt://b:2");
        assert!(config(&["--sink", "a", "--sink", "mqtts://b"]).is_err());
    }
}
