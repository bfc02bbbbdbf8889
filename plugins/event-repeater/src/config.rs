//! The validated configuration of `run`: flags, the `app` context and the
//! environment turned into plain values before any socket opens.

use std::path::PathBuf;
use std::time::Duration;

use app_plugin::context::Context;

use crate::cli::RunArgs;
use app_plugin::net::is_loopback_host as is_loopback;

use crate::sink::{Setup, SinkConfig};
use crate::source::Source;

/// What `run` does, checked: see [`Config::new`].
#[derive(Debug)]
pub struct Config {
    pub name: String,
    /// Where events come from and how they are read (see [`crate::source`]).
    pub source: Source,
    /// The sink `--sinkprotocol` chose (see [`crate::sink`]).
    pub sink: Box<dyn SinkConfig>,
    /// Its `--sinkprotocol` value, which the checkpoint records.
    pub sink_protocol: &'static str,
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
    pub log: app_plugin::log::Level,
    pub state_file: PathBuf,
    /// `APP_RUNTIME_DIR/plugins`.
    pub runtime_dir: PathBuf,
    pub buffer_events: usize,
    pub buffer_bytes: usize,
    pub overflow: crate::overflow::Overflow,
    pub drain_timeout: Duration,
    /// Keep and resume from the checkpoint (`--checkpoint on`).
    pub checkpoint: bool,
    /// `--dead-letter` and `--dead-letter-max`; `None`: `off`.
    pub dead_letter: Option<(PathBuf, u64)>,
}

impl Config {
    pub fn socket_path(&self) -> PathBuf {
        self.runtime_dir.join(format!("{}.sock", self.name))
    }

    /// The largest SSE line or event read from the source.
    pub fn max_source_event(&self) -> usize {
        self.source.max_event
    }

    /// Builds the configuration; an `Err` is a usage error (exit 2).
    pub fn new(
        args: &RunArgs,
        ctx: &Context,
        env_password: Option<String>,
    ) -> Result<Config, String> {
        let name = check_name(&args.name)?;
        let dirs = ctx.dirs();
        let token = args.token.clone().filter(|t| !t.is_empty());
        check_listen(args, token.is_some())?;
        // The source's address names the NATS sink's messages by default,
        // so it is checked first; its limit follows the sink's.
        let source = Source::new(&args.source, &dirs.plugin_runtime_dir())?;
        let setup = Setup {
            sink: &args.sink.common,
            name: &name,
            source: source.config.to_string(),
            password: args.sink.password(env_password)?,
            text_payload: args.source.text_payload(),
        };
        let (sink_protocol, sink) = crate::sink::configure(&args.sink, &setup)?;
        let source = source.follow_sink(&args.source, sink.max_event());
        // The largest event that can reach the buffer must fit in it.
        let (largest, flag) = match sink.max_event() {
            Some(n) if n <= source.max_event => {
                (n, format!("the {sink_protocol} sink's largest event"))
            }
            _ => (
                source.max_event,
                "the largest event read (--max-event-size)".to_string(),
            ),
        };
        if args.buffer_bytes < largest {
            return Err(format!(
                "--buffer-bytes ({}) is smaller than {flag} ({largest}); the largest event would never fit",
                args.buffer_bytes
            ));
        }
        let state_file = args.state.clone().unwrap_or_else(|| {
            dirs.data_dir
                .join("event-repeater")
                .join(format!("{name}.routes.json"))
        });
        let dead_letter = match &args.dead_letter {
            Some(p) if p.as_os_str() == "off" => None,
            Some(p) => {
                // Letters appended to the routes or the checkpoint would
                // make the next start refuse them.
                let checkpoint = crate::checkpoint::path_beside(&state_file);
                if *p == state_file || *p == checkpoint {
                    return Err(format!(
                        "--dead-letter {} is the repeater's own {} file: name another file",
                        p.display(),
                        if *p == state_file {
                            "routes"
                        } else {
                            "checkpoint"
                        }
                    ));
                }
                Some((p.clone(), args.dead_letter_max))
            }
            None => Some((
                state_file.with_file_name(format!("{name}.dead-letters")),
                args.dead_letter_max,
            )),
        };
        Ok(Config {
            dead_letter,
            source,
            sink,
            sink_protocol,
            allowall: args.allowall,
            listen: args.listen.clone(),
            token,
            api_tls: args.tls_cert.clone().zip(args.tls_key.clone()),
            max_connections: args.max_connections as usize,
            max_routes: args.max_routes as usize,
            request_timeout: args.request_timeout,
            log: args.log.unwrap_or(ctx.log),
            state_file,
            runtime_dir: dirs.plugin_runtime_dir(),
            buffer_events: args.buffer as usize,
            buffer_bytes: args.buffer_bytes,
            overflow: args.overflow,
            drain_timeout: args.drain_timeout,
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

/// `host:port` or `[v6]:port`.
fn split_host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let port: u16 = port.parse().ok()?;
    let host = if let Some(h) = host.strip_prefix('[') {
        h.strip_suffix(']')?.to_string()
    } else if host.contains(':') {
        return None;
    } else {
        host.to_string()
    };
    (!host.is_empty()).then_some((host, port))
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
            c.source.config.to_string(),
            "unix:/run/app/plugins/event-time.sock"
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
        assert_eq!(c.sink_protocol, "mqtt");
        assert_eq!(c.max_source_event(), (2 << 20) + (64 << 10));
        assert_eq!(c.sink.url(), "mqtt://localhost:1883");
        let letters = PathBuf::from("/data/event-repeater/event-repeater.dead-letters");
        assert_eq!(c.dead_letter, Some((letters, 64 << 20)));
    }

    #[test]
    fn loopback() {
        assert!(is_loopback("127.0.0.1") && is_loopback("::1") && is_loopback("localhost"));
        assert!(!is_loopback("0.0.0.0") && !is_loopback("example.org"));
        assert!(is_loopback("127.1") && is_loopback("127.0.0.9"));
        assert!(!is_loopback("128.1") && !is_loopback("127.") && !is_loopback("1.127"));
    }

    #[test]
    fn dead_letters_are_off_or_in_a_file_of_their_own() {
        assert_eq!(config(&["--dead-letter", "off"]).unwrap().dead_letter, None);
        let c = config(&["--dead-letter", "/x/dl", "--dead-letter-max", "1MiB"]).unwrap();
        assert_eq!(c.dead_letter, Some((PathBuf::from("/x/dl"), 1 << 20)));
        for own in [
            "/data/event-repeater/event-repeater.routes.json",
            "/data/event-repeater/event-repeater.checkpoint",
        ] {
            let e = config(&["--dead-letter", own]).unwrap_err();
            assert!(e.contains("the repeater's own"), "{e}");
        }
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
        let e = config(&["--buffer-bytes", "1KiB"]).unwrap_err();
        assert!(e.contains("the mqtt sink's largest event (1048576)"), "{e}");
        // Each sink's own limit is named as its own.
        let rabbit = [
            "--sinkprotocol",
            "rabbitmq-stream",
            "--buffer-bytes",
            "512KiB",
        ];
        let e = config(&rabbit).unwrap_err();
        assert!(
            e.contains("the rabbitmq-stream sink's largest event (1000000)"),
            "{e}"
        );
        // A sink without a limit of its own: the source's is the largest.
        let e = config(&["--sinkprotocol", "nats", "--buffer-bytes", "1MiB"]).unwrap_err();
        assert!(e.contains("--max-event-size"), "{e}");
        assert!(config(&[
            "--sinkprotocol",
            "nats",
            "--buffer-bytes",
            "1MiB",
            "--max-event-size",
            "1MiB"
        ])
        .is_ok());
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
        assert_eq!(c.sink_protocol, "nats");
        assert_eq!(c.sink.url(), "nats://a:1,nats://b:2");
        assert!(config(&["--sinkprotocol", "nats", "--nats-stream", "a.b"]).is_err());
        assert!(config(&["--source-id", "x"]).unwrap_err().contains("nats"));
        let c = config(&["--sink", "a", "--sink", "tcp://b:2"]).unwrap();
        assert_eq!(c.sink.url(), "mqtt://a:1883,mqtt://b:2");
        assert!(config(&["--sink", "a", "--sink", "mqtts://b"]).is_err());
    }
}
