//! Sinks: where relayed events go, behind one trait and chosen once.
//!
//! Each sink is a module that registers one [`Kind`] in [`KINDS`]: the
//! `--sinkprotocol` value that selects it and the function that turns the
//! flags into its [`SinkConfig`]. The rest of the repeater asks that
//! configuration (its URL, its topic [`rules`], whether it is connected) and
//! runs the [`Sink`] it builds; nothing outside this module names a sink.
//! Adding a sink is described in `docs/repeater-design.md`.

pub mod drain;
pub mod mqtt;
pub mod nats;
pub mod rabbitmq_stream;
pub mod rules;
pub mod stall;
pub mod stderr;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::buffer::Buffer;
use crate::cli::{RunArgs, SinkProtocol};
use crate::metrics::Metrics;

pub use drain::{until, Drain};
pub use rules::{has_control, Refusal, Rules, TopicRules};

/// Every sink, in the order of `--sinkprotocol`'s values.
pub const KINDS: &[Kind] = &[mqtt::KIND, nats::KIND, rabbitmq_stream::KIND, stderr::KIND];

/// A kind of sink: the `--sinkprotocol` value that selects it.
pub struct Kind {
    pub protocol: SinkProtocol,
    /// The `--sink` URL schemes that are its own: with one of them and no
    /// `--sinkprotocol`, this sink is the one (see [`protocol`]).
    pub schemes: &'static [&'static str],
    /// Checks the flags and makes the sink's configuration; an `Err` is a
    /// usage error (exit 2).
    pub configure: fn(&Setup) -> Result<Box<dyn SinkConfig>, String>,
}

/// What a sink's configuration is made from.
pub struct Setup<'a> {
    /// The `run` flags.
    pub args: &'a RunArgs,
    /// `--name`, checked.
    pub name: &'a str,
    /// The source's address as shown (its password masked).
    pub source: String,
    /// The broker password (`--password-file` or `APP_MQTT_PASSWORD`).
    pub password: Option<String>,
}

/// A sink as configured, before anything connects.
pub trait SinkConfig: std::fmt::Debug + Send + Sync {
    /// The `--sinkprotocol` value; the checkpoint records it.
    fn protocol(&self) -> &'static str;

    /// Where it publishes, for the log, `/healthz` and the status line;
    /// never with a password.
    fn url(&self) -> String;

    /// Its topic rules, asked by the router about every event.
    fn rules(&self) -> Arc<dyn TopicRules>;

    /// Whether the sink can deliver now, for the shutdown decision: one
    /// that is down cannot drain, so the repeater stops at once.
    fn connected(&self, metrics: &Metrics) -> bool {
        metrics.sink_connected.load(Ordering::Relaxed)
    }

    /// Sets the sink up. An `Err` is a sink that can never work as
    /// configured: it refuses the start (exit 1) before the API serves.
    fn build(
        &self,
        buffer: Arc<Buffer>,
        metrics: Arc<Metrics>,
    ) -> BoxFuture<'_, Result<Box<dyn Sink>, String>>;
}

/// A sink that is set up, ready to run.
pub trait Sink: Send {
    /// Delivers buffered events until the drain ends; returns how many
    /// accepted events were not delivered.
    fn run(self: Box<Self>, drain: Drain) -> BoxFuture<'static, usize>;
}

/// The sink to use: `--sinkprotocol` when given, else the one whose scheme
/// the `--sink` URLs have (`nats://…` is NATS), else MQTT. A `--sink` of
/// another sink's scheme than `--sinkprotocol`, or URLs of two sinks, is a
/// usage error naming both; a URL without a known scheme chooses nothing
/// (its sink's own check judges it).
pub fn protocol(args: &RunArgs) -> Result<SinkProtocol, String> {
    let name = |p: SinkProtocol| {
        clap::ValueEnum::to_possible_value(&p)
            .map_or_else(String::new, |v| v.get_name().to_string())
    };
    let mut implied: Option<(String, SinkProtocol)> = None;
    for url in &args.sink {
        let scheme = url.split_once("://").map(|(s, _)| s);
        let Some(kind) = KINDS
            .iter()
            .find(|k| scheme.is_some_and(|s| k.schemes.contains(&s)))
        else {
            continue;
        };
        let shown = app_plugin::redact::url(url).into_owned();
        match &implied {
            Some((first, p)) if *p != kind.protocol => {
                return Err(format!(
                    "--sink {first} is {} but --sink {shown} is {}: one repeater publishes to one kind of sink",
                    name(*p),
                    name(kind.protocol)
                ))
            }
            Some(_) => {}
            None => implied = Some((shown, kind.protocol)),
        }
    }
    match (args.sinkprotocol, implied) {
        (Some(given), Some((url, p))) if given != p => Err(format!(
            "--sinkprotocol {} contradicts --sink {url}, a {} URL: leave out --sinkprotocol (the URL's scheme chooses) or give a --sink for {}",
            name(given),
            name(p),
            name(given)
        )),
        (Some(given), _) => Ok(given),
        (None, Some((_, p))) => Ok(p),
        (None, None) => Ok(SinkProtocol::Mqtt),
    }
}

/// The sink [`protocol`] chooses, configured from the flags; an `Err` is a
/// usage error.
pub fn configure(setup: &Setup) -> Result<Box<dyn SinkConfig>, String> {
    let wanted = protocol(setup.args)?;
    let kind = KINDS
        .iter()
        .find(|k| k.protocol == wanted)
        .ok_or_else(|| format!("internal: no sink is registered for {wanted:?} (please report)"))?;
    (kind.configure)(setup)
}

/// Refuses credentials in a sink URL (the sinks take them from flags, where
/// they are not shown in `ps` either), naming the flags; the message shows
/// the URL masked.
pub fn no_credentials(text: &str, rest: &str, flags: &str) -> Result<(), String> {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(format!(
            "--sink {:?}: give credentials with {flags}, not in the URL",
            app_plugin::redact::url(text)
        ));
    }
    Ok(())
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

/// The `run` flags of `args` (after `run`), for the sinks' tests.
#[cfg(test)]
pub fn run_args(args: &[&str]) -> RunArgs {
    use clap::Parser;
    let argv = ["x", "run"].iter().chain(args);
    let crate::cli::Command::Run(run) = crate::cli::Cli::try_parse_from(argv).unwrap().command;
    run
}

/// The [`Setup`] of `args` for an instance named `event-repeater`.
#[cfg(test)]
pub fn setup<'a>(args: &'a RunArgs, source: &str) -> Setup<'a> {
    Setup {
        args,
        name: "event-repeater",
        source: source.to_string(),
        password: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn the_sink_follows_the_url_scheme_and_a_contradiction_names_both() {
        let chosen = |args: &[&str]| protocol(&run_args(args));
        assert_eq!(chosen(&[]), Ok(SinkProtocol::Mqtt));
        assert_eq!(chosen(&["--sink", "h:1"]), Ok(SinkProtocol::Mqtt));
        assert_eq!(chosen(&["--sink", "mqtts://h"]), Ok(SinkProtocol::Mqtt));
        assert_eq!(chosen(&["--sink", "nats://h:4222"]), Ok(SinkProtocol::Nats));
        assert_eq!(
            chosen(&["--sink", "tls://h", "--sink", "h2"]),
            Ok(SinkProtocol::Nats)
        );
        assert_eq!(
            chosen(&["--sinkprotocol", "nats", "--sink", "nats://h"]),
            Ok(SinkProtocol::Nats)
        );
        // Given, with a URL of no scheme: as given.
        assert_eq!(
            chosen(&["--sinkprotocol", "nats", "--sink", "h"]),
            Ok(SinkProtocol::Nats)
        );
        let err = chosen(&["--sinkprotocol", "mqtt", "--sink", "nats://h:4222"]).unwrap_err();
        assert!(
            err.contains("--sinkprotocol mqtt contradicts --sink nats://h:4222, a nats URL"),
            "{err}"
        );
        let err = chosen(&["--sink", "mqtt://a", "--sink", "nats://b"]).unwrap_err();
        assert!(
            err.contains("--sink mqtt://a is mqtt but --sink nats://b is nats"),
            "{err}"
        );
        // A password in the URL is not repeated.
        let err = chosen(&["--sinkprotocol", "mqtt", "--sink", "nats://u:hunter6@h"]).unwrap_err();
        assert!(!err.contains("hunter6"), "{err}");
    }

    #[test]
    fn every_sinkprotocol_value_has_one_sink_of_that_name() {
        let values = SinkProtocol::value_variants();
        assert_eq!(values.len(), KINDS.len());
        for value in values {
            let name = value.to_possible_value().unwrap().get_name().to_string();
            let args = run_args(&["--sinkprotocol", &name]);
            let sink = configure(&setup(&args, "http://h:1")).unwrap();
            assert_eq!(sink.protocol(), name);
            assert_eq!(KINDS.iter().filter(|k| k.protocol == *value).count(), 1);
        }
    }

    /// The code blocks of a section of a Markdown file, each dedented by
    /// the indentation of its opening fence.
    fn rust_blocks(doc: &str, section: &str) -> Vec<String> {
        let start = doc.find(section).expect("the section is in the doc");
        let mut blocks = Vec::new();
        let mut open: Option<(usize, String)> = None;
        for line in doc[start..].lines().skip(1) {
            if open.is_none() && line.starts_with('#') {
                break;
            }
            let trimmed = line.trim_start();
            match &mut open {
                None if trimmed == "```rust" => {
                    open = Some((line.len() - trimmed.len(), String::new()))
                }
                None => {}
                Some((_, block)) if trimmed == "```" => {
                    blocks.push(std::mem::take(block));
                    open = None;
                }
                Some((indent, block)) => {
                    block.push_str(line.get(*indent..).unwrap_or(""));
                    block.push('\n');
                }
            }
        }
        blocks
    }

    #[test]
    fn the_design_doc_quotes_the_stderr_sink() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = std::fs::read_to_string(root.join("../../docs/repeater-design.md")).unwrap();
        let code = [
            std::fs::read_to_string(root.join("src/sink/stderr.rs")).unwrap(),
            std::fs::read_to_string(root.join("src/sink/mod.rs")).unwrap(),
        ];
        let blocks = rust_blocks(&doc, "### Adding a sink");
        assert_eq!(blocks.len(), 5, "{blocks:#?}");
        for block in &blocks {
            assert!(
                code.iter().any(|c| c.contains(block.as_str())),
                "docs/repeater-design.md quotes code that is not in src/sink/stderr.rs or src/sink/mod.rs:\n{block}"
            );
        }
        // And it would see a quote that no longer matches.
        let edited = blocks[0].replace("Stderr", "Stdout");
        assert!(!code.iter().any(|c| c.contains(edited.as_str())));
    }
}
