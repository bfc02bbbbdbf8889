//! The source flags of `run`: those every kind reads ([`Common`], under
//! "Source" in `run --help`: where events come from, which kind it is, its
//! limits, how an event is read), then each registered kind's own, under
//! its own heading, kept as clap matched them until the chosen kind reads
//! its own ([`super::configure`]). [`Source::new`] checks them all and
//! holds what the daemon needs before anything connects.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::decode::Decoder;
use crate::flag_values::{parse_limit_timeout, parse_size};
use crate::source::{SourceConfig, KINDS};

/// `--payload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PayloadKind {
    Json,
    Text,
}

/// The flags every kind of source reads.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Source")]
#[group(skip)]
pub struct Common {
    /// Event source: a plugin name (its socket in APP_RUNTIME_DIR/plugins/), a socket path, http://HOST:PORT, or any SSE feed's http(s):// URL with its path and query.
    #[arg(long, default_value = "event-time")]
    pub source: String,

    // Its help and values are the registered kinds' (`source::KINDS`).
    #[arg(
        long,
        value_name = "KIND",
        value_parser = super::kind_values(),
        help = super::kind_help()
    )]
    pub source_kind: Option<String>,

    /// A source that sends nothing, not even a keep-alive, for this long is
    /// reported as stalled and subscribed to again (event-time sends a
    /// keep-alive every 15s; at most 1h).
    #[arg(long, value_name = "DURATION", default_value = "40s", value_parser = parse_limit_timeout)]
    pub source_idle_timeout: Duration,

    /// Largest SSE line or event read from the source; a bigger one is discarded and counted (default: twice the sink's largest event, MQTT's --max-packet-size, RabbitMQ Streams' 1000000 or 1MiB, plus 64KiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_event_size: Option<usize>,

    /// Where an event's topic comes from: field:/json/pointer, event (the SSE event name) or const:NAME.
    #[arg(long, value_name = "SPEC", default_value = "field:/topic")]
    pub topic_from: String,

    /// The events' data: json (checked, relayed on one line) or text (relayed as it came).
    #[arg(long, value_enum, value_name = "KIND", default_value = "json")]
    pub payload: PayloadKind,
}

impl Common {
    /// Whether the payload is text (not JSON), for the sinks that show it.
    pub fn text_payload(&self) -> bool {
        self.payload == PayloadKind::Text
    }
}

/// The source flags: [`Common`], and every kind's own as clap matched them.
pub type SourceArgs = crate::kind_flags::KindArgs<Common, Registered>;

/// [`KINDS`], for [`SourceArgs`].
#[derive(Debug, Clone)]
pub struct Registered;

impl crate::kind_flags::Registry for Registered {
    fn add_flags(cmd: clap::Command) -> clap::Command {
        KINDS.iter().fold(cmd, |cmd, kind| (kind.flags)(cmd))
    }
}

/// The source as configured, checked: the chosen kind's configuration and
/// what every kind shares.
#[derive(Debug)]
pub struct Source {
    /// Its `--source-kind` value.
    pub kind: &'static str,
    /// The kind's own: shown, asked for topics, run.
    pub config: Arc<dyn SourceConfig>,
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

impl Source {
    /// Checks the flags: the kind's first, then how events are read. An
    /// `Err` is a usage error (exit 2).
    pub fn new(args: &SourceArgs, plugin_dir: &Path) -> Result<Source, String> {
        let setup = super::Setup {
            source: &args.source,
            plugin_dir,
        };
        let (kind, config) = super::configure(args, &setup)?;
        Ok(Source {
            kind,
            config,
            decoder: decoder(args)?,
            idle_timeout: args.source_idle_timeout,
            max_event: args
                .max_event_size
                .unwrap_or_else(|| default_max_event(None)),
        })
    }

    /// Without `--max-event-size`, the limit follows `sink_max`, the
    /// sink's largest event ([`crate::sink::SinkConfig::max_event`]).
    pub fn follow_sink(mut self, args: &SourceArgs, sink_max: Option<usize>) -> Source {
        if args.max_event_size.is_none() {
            self.max_event = default_max_event(sink_max);
        }
        self
    }
}

/// `--topic-from` and `--payload`.
fn decoder(a: &Common) -> Result<Decoder, String> {
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

    fn config(args: &[&str], sink_max: Option<usize>) -> Result<Source, String> {
        let run = crate::sink::run_args(args);
        let c = Source::new(&run.source, Path::new("/p"))?;
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
