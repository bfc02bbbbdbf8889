//! The source's flags and their checks: where events come from
//! (`--source`, `--source-kind`), its limits (`--max-event-size`,
//! `--source-idle-timeout`), a plain feed's headers, token and CA, and how
//! an event is read (`--topic-from`, `--payload`). `run --help` shows
//! them under "Source"; [`SourceConfig::new`] turns them into what the
//! reader needs before anything connects.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::addr::{parse_source, SourceAddr};
use crate::cli::{parse_limit_timeout, parse_size};
use crate::decode::Decoder;
use crate::feed::{is_feed, Feed};

/// What kind of source `--source` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceKind {
    /// An event plugin (`app event-time`'s dialect): `GET /events?topic=.`.
    Plugin,
    /// Any SSE feed: one `GET` of the URL as given.
    Sse,
}

/// `--payload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PayloadKind {
    Json,
    Text,
}

/// The source's flags.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Source")]
pub struct SourceArgs {
    /// Event source: a plugin name (its socket in APP_RUNTIME_DIR/plugins/), a socket path, http://HOST:PORT, or any SSE feed's http(s):// URL with its path and query.
    #[arg(long, default_value = "event-time")]
    pub source: String,

    /// What --source is: plugin (event-time's dialect) or sse (any feed, the URL as given); default: sse for https:// and for http:// URLs with a path or query.
    #[arg(long, value_enum, value_name = "KIND")]
    pub source_kind: Option<SourceKind>,

    /// A source that sends nothing, not even a keep-alive, for this long is
    /// reported as stalled and subscribed to again (event-time sends a
    /// keep-alive every 15s; at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "40s", value_parser = parse_limit_timeout)]
    pub source_idle_timeout: Duration,

    /// Largest SSE line or event read from the source; a bigger one is discarded and counted (default: twice the sink's largest event, MQTT's --max-packet-size, RabbitMQ Streams' 1000000 or 1MiB, plus 64KiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_event_size: Option<usize>,

    /// A header sent to an SSE feed, 'Name: value' (repeatable; never shown).
    #[arg(long, value_name = "HEADER")]
    pub source_header: Vec<String>,

    /// A file holding a token sent to the feed as 'Authorization: Bearer TOKEN'.
    #[arg(long, value_name = "FILE")]
    pub source_token_file: Option<PathBuf>,

    /// CA certificates (PEM) to trust for an https:// feed instead of the system's.
    #[arg(long, value_name = "FILE")]
    pub source_ca_file: Option<PathBuf>,

    /// Where an event's topic comes from: field:/json/pointer, event (the SSE event name) or const:NAME.
    #[arg(long, value_name = "SPEC", default_value = "field:/topic")]
    pub topic_from: String,

    /// The events' data: json (checked, relayed on one line) or text (relayed as it came).
    #[arg(long, value_enum, value_name = "KIND", default_value = "json")]
    pub payload: PayloadKind,
}

/// The source as configured, checked.
#[derive(Debug)]
pub struct SourceConfig {
    pub addr: SourceAddr,
    /// `--topic-from` and `--payload`.
    pub decoder: Decoder,
    /// `--source-idle-timeout`: silence after which the source is stalled.
    pub idle_timeout: Duration,
    /// The largest SSE line or event read (`--max-event-size`).
    pub max_event: usize,
}

/// The SSE limit when `--max-event-size` is not given: room for the
/// largest event the sink takes (`sink_max`, else 1 MiB) written out with
/// escapes, as it always was.
pub fn default_max_event(sink_max: Option<usize>) -> usize {
    sink_max.unwrap_or(1 << 20).saturating_mul(2).max(1 << 20) + 64 * 1024
}

impl SourceConfig {
    /// Checks the flags. An `Err` is a usage error (exit 2).
    pub fn new(args: &SourceArgs, plugin_dir: &Path) -> Result<SourceConfig, String> {
        Ok(SourceConfig {
            addr: source_addr(args, plugin_dir)?,
            decoder: decoder(args)?,
            idle_timeout: args.source_idle_timeout,
            max_event: args
                .max_event_size
                .unwrap_or_else(|| default_max_event(None)),
        })
    }

    /// Without `--max-event-size`, the limit follows `sink_max`, the
    /// sink's largest event ([`crate::sink::SinkConfig::max_event`]).
    pub fn follow_sink(mut self, args: &SourceArgs, sink_max: Option<usize>) -> SourceConfig {
        if args.max_event_size.is_none() {
            self.max_event = default_max_event(sink_max);
        }
        self
    }
}

impl SourceArgs {
    /// Whether the payload is text (not JSON), for the sinks that show it.
    pub fn text_payload(&self) -> bool {
        self.payload == PayloadKind::Text
    }
}

/// `--source`: a plain SSE feed (by `--source-kind` or its URL), or an
/// event plugin's address.
fn source_addr(a: &SourceArgs, plugin_dir: &Path) -> Result<SourceAddr, String> {
    if is_feed(&a.source, a.source_kind) {
        return Ok(SourceAddr::Feed(Arc::new(Feed::new(&a.source, a)?)));
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
    parse_source(&a.source, plugin_dir)
}

/// `--topic-from` and `--payload`.
fn decoder(a: &SourceArgs) -> Result<Decoder, String> {
    use crate::decode::{parse_topic_from, Payload};
    let payload = match a.payload {
        PayloadKind::Json => Payload::Json,
        PayloadKind::Text => Payload::Text,
    };
    Decoder::new(parse_topic_from(&a.topic_from)?, payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(args: &[&str], sink_max: Option<usize>) -> Result<SourceConfig, String> {
        let run = crate::sink::run_args(args);
        let c = SourceConfig::new(&run.source, Path::new("/p"))?;
        Ok(c.follow_sink(&run.source, sink_max))
    }

    #[test]
    fn the_event_limit_follows_the_sink_unless_given() {
        let mib = 1 << 20;
        assert_eq!(config(&[], None).unwrap().max_event, 2 * mib + 64 * 1024);
        assert_eq!(
            config(&[], Some(4 * mib)).unwrap().max_event,
            8 * mib + 64 * 1024
        );
        assert_eq!(config(&[], Some(1024)).unwrap().max_event, mib + 64 * 1024);
        let given = config(&["--max-event-size", "100KiB"], Some(4 * mib)).unwrap();
        assert_eq!(given.max_event, 100 * 1024);
    }

    #[test]
    fn feed_flags_need_a_feed() {
        let e = config(&["--source-header", "A: b"], None).unwrap_err();
        assert!(e.contains("for a plain SSE feed"), "{e}");
        assert!(config(
            &["--source", "https://h/x", "--source-header", "A: b"],
            None
        )
        .is_ok());
    }
}
