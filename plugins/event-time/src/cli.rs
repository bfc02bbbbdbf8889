//! The command line, parsed by clap, then checked into a [`Config`] before
//! anything is opened.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use app_plugin::log::Level;
use clap::Parser;

use crate::hub::DEFAULT_HISTORY;

/// The flags as typed.
#[derive(Debug, Parser)]
#[command(
    name = "app-event-time",
    bin_name = "app event-time",
    version,
    about = "Example event source: timer events over Server-Sent Events",
    long_about = "Example event source: timer events over Server-Sent Events.\n\n\
        Serves GET /events?topic=T (text/event-stream) and GET /topics on the unix socket \
        APP_RUNTIME_DIR/plugins/<name>.sock, and on TCP with --listen. Topics: timer/msec/100, \
        timer/msec/500, timer/sec/1, timer/sec/5, timer/sec/30, timer/min/1, timer/min/5, \
        timer/min/30, timer/hr/1, and test/seq with --rate. A topic ending in '/' subscribes \
        to the subtree; '.' or empty to every topic.",
    after_help = "Exit codes:\n  0  stopped by SIGTERM or SIGINT (files removed)\n  \
        1  runtime failure (another instance runs under this name, cannot listen, …)\n  \
        2  usage error (bad flag or value)"
)]
pub struct Cli {
    /// Instance name: the socket is APP_RUNTIME_DIR/plugins/<NAME>.sock
    #[arg(long, value_name = "NAME", default_value = "event-time")]
    pub name: String,

    /// Also serve HTTP on this TCP address (port 0 picks a free one; the URL goes to <NAME>.listen)
    #[arg(long, value_name = "HOST:PORT", value_parser = parse_listen)]
    pub listen: Option<SocketAddr>,

    /// Log level: 0 silent, 1 errors, 2 warnings, 3 info, 4 debug, 5 trace, or a name (off, error, warn, info, debug, trace) [default: APP_LOG or 2]
    #[arg(long, value_name = "LEVEL", value_parser = app_plugin::cli::LogLevel)]
    pub log: Option<Level>,

    /// Publish numbered test events on topic test/seq at N events per second
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub rate: Option<u32>,

    /// Stop the test stream after M events (the server keeps serving)
    #[arg(long, value_name = "M", requires = "rate", value_parser = clap::value_parser!(u64).range(1..))]
    pub count: Option<u64>,

    /// How many recent events to keep for clients reconnecting with Last-Event-ID
    #[arg(long, value_name = "N", default_value_t = DEFAULT_HISTORY as u64,
          value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub history: u64,

    /// Seconds of silence after which a stream gets a ': keep-alive' comment
    #[arg(long, value_name = "SECONDS", default_value_t = 15,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub keep_alive: u64,
}

/// The whole command line as clap sees it: for the man page
/// (`packaging/man`) and clap's self-check.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// What the server runs with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub name: String,
    pub runtime_dir: PathBuf,
    pub listen: Option<SocketAddr>,
    pub log: Level,
    pub rate: Option<u32>,
    pub count: Option<u64>,
    pub history: usize,
    pub keep_alive: Duration,
}

impl Config {
    /// Checks the flags; `runtime_dir` is `APP_RUNTIME_DIR/plugins` and
    /// `default_log` the context's level, used when `--log` is absent.
    pub fn new(cli: Cli, runtime_dir: PathBuf, default_log: Level) -> Result<Config, String> {
        check_name(&cli.name)?;
        Ok(Config {
            name: cli.name,
            runtime_dir,
            listen: cli.listen,
            log: cli.log.unwrap_or(default_log),
            rate: cli.rate,
            count: cli.count,
            history: usize::try_from(cli.history)
                .map_err(|_| "--history is too large".to_string())?,
            keep_alive: Duration::from_secs(cli.keep_alive),
        })
    }
}

/// The SDK's one rule for instance names: the name becomes file names.
fn check_name(name: &str) -> Result<(), String> {
    app_plugin::instance::check_name(name).map_err(|e| e.to_string())
}

/// `HOST:PORT` with an IP address, `localhost:PORT`, or `:PORT` (loopback).
fn parse_listen(value: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = value.parse() {
        return Ok(addr);
    }
    let value = match value.strip_prefix(':') {
        Some(port) => format!("127.0.0.1:{port}"),
        None => value.to_string(),
    };
    if let Some(port) = value.strip_prefix("localhost:") {
        return port
            .parse::<u16>()
            .map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
            .map_err(|_| format!("'{port}' is not a port number"));
    }
    if let Ok(addr) = value.parse() {
        return Ok(addr);
    }
    // Only names that resolve without a network round trip are useful here,
    // and `to_socket_addrs` handles /etc/hosts names.
    value
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| "expected HOST:PORT, for example 127.0.0.1:8080 or 127.0.0.1:0".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, String> {
        let cli =
            Cli::try_parse_from(std::iter::once("app-event-time").chain(args.iter().copied()))
                .map_err(|e| e.to_string())?;
        Config::new(cli, PathBuf::from("/run/plugins"), Level::Warn)
    }

    #[test]
    fn defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(c.name, "event-time");
        assert_eq!(c.listen, None);
        assert_eq!(c.log, Level::Warn);
        assert_eq!(c.rate, None);
        assert_eq!(c.history, 10_000);
        assert_eq!(c.keep_alive, Duration::from_secs(15));
    }

    #[test]
    fn every_flag() {
        let c = parse(&[
            "--name",
            "t2",
            "--listen",
            "127.0.0.1:0",
            "--log",
            "5",
            "--rate",
            "20000",
            "--count",
            "7",
            "--history",
            "0",
            "--keep-alive",
            "2",
        ])
        .unwrap();
        assert_eq!(c.name, "t2");
        assert_eq!(c.listen, Some("127.0.0.1:0".parse().unwrap()));
        assert_eq!(
            (c.log, c.rate, c.count, c.history),
            (Level::Trace, Some(20_000), Some(7), 0)
        );
        assert_eq!(c.keep_alive, Duration::from_secs(2));
    }

    #[test]
    fn listen_forms() {
        assert_eq!(parse_listen(":8080"), Ok("127.0.0.1:8080".parse().unwrap()));
        assert_eq!(
            parse_listen("localhost:1"),
            Ok("127.0.0.1:1".parse().unwrap())
        );
        assert_eq!(parse_listen("[::1]:0"), Ok("[::1]:0".parse().unwrap()));
        assert!(parse_listen("127.0.0.1").is_err());
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(parse(&["--log", "6"]).is_err());
        assert!(parse(&["--count", "5"]).unwrap_err().contains("--rate"));
        assert!(parse(&["--rate", "0"]).is_err());
        assert!(parse(&["--name", "../x"]).unwrap_err().contains("--name"));
        assert!(parse(&["--name", ""]).is_err());
        assert!(parse(&["--bogus"]).is_err());
    }

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
