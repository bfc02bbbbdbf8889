//! The source's flags as clap declares them: where events come from
//! (`--source`, `--source-kind`), its limits (`--max-event-size`,
//! `--source-idle-timeout`), a plain feed's headers, token and CA, and how
//! an event is read (`--topic-from`, `--payload`). A leaf of `source`:
//! the feed and the checks in [`super::args`] read them.

use std::path::PathBuf;
use std::time::Duration;

use crate::flag_values::{parse_limit_timeout, parse_size};

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
