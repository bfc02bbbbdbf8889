//! The source's flags (declared in [`super::flags`]) and their checks: where events come from
//! (`--source`, `--source-kind`), its limits (`--max-event-size`,
//! `--source-idle-timeout`), a plain feed's headers, token and CA, and how
//! an event is read (`--topic-from`, `--payload`). `run --help` shows
//! them under "Source"; [`SourceConfig::new`] turns them into what the
//! reader needs before anything connects.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::decode::Decoder;
use crate::source::addr::{parse_source, SourceAddr};
use crate::source::feed::{is_feed, Feed};

pub use super::flags::{PayloadKind, SourceArgs, SourceKind};

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
