//! The command line, as typed: clap definitions only, no I/O. [`crate::config`]
//! turns it into a validated [`crate::config::Config`].

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub const AFTER_HELP: &str = "\
Exit codes: 0 stopped cleanly (SIGTERM/SIGINT); 1 runtime failure (another instance \
running under this name or on this state file, cannot bind the socket, unusable state or \
checkpoint file, a NATS server without JetStream or --nats-replicas over 1 on a server not \
in a cluster); 2 usage error.
Routes are managed over the REST API on the unix socket (see `app event-repeater manage`).";

/// The help of `app event-repeater` itself, which lists `manage` among the
/// commands although it is a plugin of its own (`app-event-repeater-manage`,
/// which clap here does not know).
pub const TOP_HELP: &str = "\
{about-with-newline}
{usage-heading} {usage}

Commands:
  run     Run the repeater until SIGTERM or SIGINT (app event-repeater run --help)
  manage  Change a running repeater's routes, or see its status (app event-repeater manage --help)

Options:
{options}{after-help}";

/// Each command's exit codes (manage's as its own help gives them:
/// tests/it/arguments.rs compares the two); also the man page's EXIT STATUS.
pub const TOP_AFTER_HELP: &str = "\
Exit codes:
  run     0 stopped cleanly (SIGTERM/SIGINT); 1 runtime failure (another instance running,
          cannot bind the socket, unusable state or checkpoint file); 2 usage error.
  manage  0 ok; 1 refused by the repeater or failed; 2 usage error or bad JSON (nothing
          sent); 3 no repeater running there or it cannot be reached; 4 with several
          hosts: at least one failed.";

#[derive(Debug, Parser)]
#[command(
    name = "app-event-repeater",
    bin_name = "app event-repeater",
    version,
    about = "Relay events from an event source to MQTT, NATS, Kafka, RabbitMQ Streams or stderr, managed over a REST API",
    help_template = TOP_HELP,
    after_help = TOP_AFTER_HELP,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The whole command line as clap sees it: for the man page
/// (`packaging/man`) and clap's self-check.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the repeater until SIGTERM or SIGINT.
    #[command(after_help = AFTER_HELP)]
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Instance name: names the socket, pid and state files.
    #[arg(long, default_value = "event-repeater")]
    pub name: String,

    /// Repeat every event that no route matches under its own topic.
    #[arg(long, visible_alias = "allow-all")]
    pub allowall: bool,

    /// Also serve the API on TCP HOST:PORT (port 0 picks one; see NAME.listen).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,

    /// Log level: 0 silent, 1 errors, 2 warnings (default), 3 info, 4 debug, 5 trace, or a name (off, error, warn, info, debug, trace).
    #[arg(long, value_name = "LEVEL", value_parser = app_plugin::cli::LogLevel)]
    pub log: Option<app_plugin::log::Level>,

    /// Routes file (default: APP_DATA_DIR/event-repeater/NAME.routes.json).
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,

    /// Events kept (waiting or unacknowledged) while the sink is slow or down.
    #[arg(long, value_name = "N", default_value = "10000", value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub buffer: u64,

    /// Byte cap on the kept events (e.g. 67108864, 64MiB, 512KiB).
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size)]
    pub buffer_bytes: usize,

    /// What to do when the buffer is full: block stops reading the source
    /// until there is room (nothing dropped); drop-oldest/drop-newest drop
    /// (counted) to stay current with a source that cannot replay.
    #[arg(long, value_enum, default_value = "block")]
    pub overflow: crate::overflow::Overflow,

    /// Keep the resume checkpoint (NAME.checkpoint beside the routes file)
    /// and subscribe from it at start; off subscribes to live events only.
    #[arg(long, value_enum, value_name = "on|off", default_value = "on")]
    pub checkpoint: Switch,

    /// Keep events refused or dropped for a reason of their own (a topic
    /// the sink cannot take, too large, not JSON, dropped by --overflow)
    /// as JSON lines in FILE, to list and replay with `manage dead-letters`
    /// (default: NAME.dead-letters beside the routes file; off: not kept).
    #[arg(long, value_name = "FILE|off")]
    pub dead_letter: Option<PathBuf>,

    /// Bytes the dead-letter file and its rotated .1 hold together at most
    /// (e.g. 64MiB; at least 64KiB); past it the oldest are cut, counted.
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_dead_letter_max)]
    pub dead_letter_max: u64,

    /// Bearer token required on the TCP API (needed for a non-loopback --listen).
    #[arg(long, env = "APP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// Serve the TCP API over HTTPS with this certificate chain (PEM); needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Allow a non-loopback --listen without TLS (token and routes then cross the network in clear text).
    #[arg(long)]
    pub plain_http: bool,

    /// Connections served at once per API listener (TCP and the unix socket each).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS as u32, value_parser = clap::value_parser!(u32).range(1..=65536))]
    pub max_connections: u32,

    /// How long an API client may take to send a request head, then its
    /// body, or a TLS handshake; also how long a kept-alive connection may
    /// sit idle (e.g. 30s, 5s; at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_limit_timeout)]
    pub request_timeout: std::time::Duration,

    /// Most routes the table may hold; a change beyond it is refused (422).
    #[arg(long, value_name = "N", default_value = "10000", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_routes: u32,

    /// How long SIGTERM waits for unacknowledged publishes (e.g. 5s, 500ms; at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_drain_timeout)]
    pub drain_timeout: std::time::Duration,

    /// The source's flags (where events come from, its limits; a plain
    /// SSE feed's headers, token, CA; where topics come from; what the
    /// payload is), under "Source".
    #[command(flatten)]
    pub source: crate::source::SourceArgs,

    /// The sink's flags: those every sink reads, under "Sink", then each
    /// sink's own under its heading (see [`crate::sink::KINDS`]).
    #[command(flatten)]
    pub sink: crate::sink::SinkArgs,
}

pub use crate::flag_values::{
    parse_drain_timeout, parse_duration, parse_limit_timeout, parse_size, Qos, Switch,
    DEFAULT_INFLIGHT, DEFAULT_INFLIGHT_MQTT_QOS2, DEFAULT_MAX_CONNECTIONS, MAX_DRAIN_TIMEOUT,
};

/// `--dead-letter-max`: a size of at least 64 KiB.
fn parse_dead_letter_max(text: &str) -> Result<u64, String> {
    let n = parse_size(text)?;
    if n < 64 << 10 {
        return Err("at least 64KiB (the file and its .1 each hold half)".into());
    }
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clap_definition_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("512k"), Ok(512 << 10));
        assert_eq!(parse_size("100"), Ok(100));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(
            parse_duration("500ms"),
            Ok(std::time::Duration::from_millis(500))
        );
        assert_eq!(parse_duration("7"), Ok(std::time::Duration::from_secs(7)));
        assert!(parse_duration("soon").unwrap_err().contains("e.g. 5s"));
        assert_eq!(
            parse_duration("1m30s"),
            Ok(std::time::Duration::from_secs(90))
        );
        assert_eq!(
            parse_duration("2h"),
            Ok(std::time::Duration::from_secs(7200))
        );
        // Issue 11: this overflowed (a panic, or a wrapped tiny value).
        assert!(parse_duration("999999999999999999m")
            .unwrap_err()
            .contains("too long"));
        assert!(parse_duration("99999999999999999999999s")
            .unwrap_err()
            .contains("too long"));
    }

    #[test]
    fn drain_timeout_is_capped_with_a_clear_error() {
        let err = Cli::try_parse_from(["x", "run", "--drain-timeout", "999999999999999999m"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--drain-timeout"), "{err}");
        assert!(err.contains("too long"), "{err}");
        let err = Cli::try_parse_from(["x", "run", "--drain-timeout", "61m"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("maximum of 1h"), "{err}");
        assert!(Cli::try_parse_from(["x", "run", "--drain-timeout", "1h"]).is_ok());
    }

    #[test]
    fn kebab_case_aliases() {
        let cli =
            Cli::try_parse_from(["x", "run", "--sink-protocol", "stderr", "--allow-all"]).unwrap();
        let Command::Run(a) = cli.command;
        assert_eq!(a.sink.sinkprotocol.as_deref(), Some("stderr"));
        assert!(a.allowall);
        let cli =
            Cli::try_parse_from(["x", "run", "--sinkprotocol", "stderr", "--allowall"]).unwrap();
        let Command::Run(a) = cli.command;
        assert!(a.allowall && a.sink.sinkprotocol.as_deref() == Some("stderr"));
    }

    /// docs/event-repeater.md's table of `run`'s flags cannot drift from
    /// the definitions above: every flag has a row, every row is a flag,
    /// and each default shown by `--help` appears in its row.
    #[test]
    fn the_docs_flag_table_matches_the_command() {
        use clap::CommandFactory;
        let doc = include_str!("../../../docs/event-repeater.md");
        let table = doc
            .split("| flag | default | meaning |")
            .nth(1)
            .expect("the flag table");
        let rows: Vec<&str> = table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        // A row's flag: the first `--word` of its first cell.
        let flag_of = |row: &str| -> Option<String> {
            let cell = row.split(" | ").next()?;
            let at = cell.find("--")?;
            let name: String = cell[at + 2..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            Some(name)
        };
        let documented: Vec<String> = rows.iter().filter_map(|r| flag_of(r)).collect();
        assert_eq!(documented.len(), rows.len(), "a row without a flag");
        let cmd = Cli::command();
        let run = cmd.find_subcommand("run").expect("run");
        let mut defined = Vec::new();
        for arg in run.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if long == "help" || long == "version" {
                continue;
            }
            defined.push(long.to_string());
            let row = rows
                .iter()
                .find(|r| flag_of(r).as_deref() == Some(long))
                .unwrap_or_else(|| panic!("docs/event-repeater.md has no row for --{long}"));
            for default in arg.get_default_values() {
                let default = default.to_string_lossy();
                let cell = row.split(" | ").nth(1).unwrap_or_default();
                assert!(
                    cell.contains(&*default),
                    "--{long}: the docs' default {cell:?} does not show {default:?}"
                );
            }
        }
        for flag in &documented {
            assert!(
                defined.contains(flag),
                "docs/event-repeater.md documents --{flag}, which run does not have"
            );
        }
    }

    #[test]
    fn defaults() {
        let cli = Cli::try_parse_from(["x", "run"]).unwrap();
        let Command::Run(a) = cli.command;
        assert_eq!(a.name, "event-repeater");
        assert_eq!(a.source.source, "event-time");
        assert!(a.sink.sink.is_empty());
        // Chosen by crate::sink::protocol: --sink's scheme, else the first.
        assert_eq!(a.sink.sinkprotocol, None);
        assert_eq!(a.sink.qos, Qos::AtLeastOnce);
        assert_eq!(a.overflow, crate::overflow::Overflow::Block);
        assert_eq!(a.checkpoint, Switch::On);
        assert_eq!(a.source.max_event_size, None);
        assert_eq!(a.drain_timeout, std::time::Duration::from_secs(5));
        assert_eq!(a.request_timeout, std::time::Duration::from_secs(30));
        assert_eq!(
            a.source.source_idle_timeout,
            std::time::Duration::from_secs(40)
        );
    }

    /// `run --help` reads in groups: the source's flags, the sink's, then
    /// each sink's own, under their headings.
    #[test]
    fn run_help_groups_the_flags_by_part() {
        use clap::CommandFactory;
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("run")
            .expect("run")
            .render_help()
            .to_string();
        let at = |heading: &str| {
            help.find(&format!("\n{heading}:\n"))
                .unwrap_or_else(|| panic!("no {heading:?} in\n{help}"))
        };
        let headings = [
            "Options",
            "Source",
            "Sink",
            "MQTT sink (--sinkprotocol mqtt)",
            "NATS sink (--sinkprotocol nats)",
        ];
        let starts: Vec<usize> = headings.iter().map(|h| at(h)).collect();
        assert!(starts.windows(2).all(|w| w[0] < w[1]), "{help}");
        // The heading a flag is listed under: the last one before it.
        let under = |flag: &str| {
            let pos = help
                .find(&format!("\n      --{flag} "))
                .or_else(|| help.find(&format!("\n      --{flag}\n")))
                .unwrap_or_else(|| panic!("no --{flag} in\n{help}"));
            let i = starts.iter().rposition(|&h| h < pos).unwrap();
            headings[i]
        };
        assert_eq!(under("drain-timeout"), "Options");
        assert_eq!(under("max-event-size"), "Source");
        assert_eq!(under("source-idle-timeout"), "Source");
        assert_eq!(under("qos"), "Sink");
        assert_eq!(under("max-packet-size"), "MQTT sink (--sinkprotocol mqtt)");
        assert_eq!(under("retain"), "MQTT sink (--sinkprotocol mqtt)");
        assert_eq!(under("nats-stream"), "NATS sink (--sinkprotocol nats)");
    }

    #[test]
    fn limit_timeouts_are_positive_and_capped() {
        assert!(parse_limit_timeout("0s").unwrap_err().contains("zero"));
        assert!(parse_limit_timeout("2h").unwrap_err().contains("maximum"));
        assert_eq!(
            parse_limit_timeout("500ms"),
            Ok(std::time::Duration::from_millis(500))
        );
    }
}
