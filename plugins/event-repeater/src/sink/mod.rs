//! Sinks: where relayed events go, behind one trait and chosen once.
//!
//! Each sink is a directory (or a file) that implements [`SinkKind`]: its
//! `--sinkprotocol` value, its own flags (a clap `Args` struct shown under
//! its own heading in `run --help`), and the function that checks them and
//! makes its [`SinkConfig`]. It is registered by one line in [`KINDS`];
//! `--sinkprotocol`'s values, its help and which flags belong to which
//! sink are derived from that list. The rest of the repeater asks the
//! configuration (its URL, its topic [`rules`], its limits, whether it is
//! connected) and runs the [`Sink`] it builds; nothing outside this module
//! names a sink. Adding a sink is described in `docs/repeater-design.md`.

pub mod args;
pub mod drain;
pub mod kafka;
pub mod mqtt;
pub mod nats;
pub mod outbox;
pub mod rabbitmq_stream;
pub mod rules;
pub mod stall;
pub mod stderr;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use app_plugin::address::Scheme;
use futures_util::future::BoxFuture;

use crate::buffer::Buffer;
use crate::metrics::Metrics;

pub use args::{NoFlags, SinkArgs};
pub use drain::{until, Drain};
pub use rules::{has_control, Refusal, Rules, TopicRules};

/// Every sink, the default (`--sinkprotocol`'s) first.
pub const KINDS: &[Kind] = &[
    Kind::of::<mqtt::Mqtt>(),
    Kind::of::<nats::Nats>(),
    Kind::of::<kafka::Kafka>(),
    Kind::of::<rabbitmq_stream::RabbitmqStream>(),
    Kind::of::<stderr::Stderr>(),
];

/// A kind of sink, registered by its line in [`KINDS`].
pub trait SinkKind {
    /// Its `--sinkprotocol` value; the checkpoint records it.
    const NAME: &'static str;
    /// The value's line in `run --help`.
    const ABOUT: &'static str;
    /// The `--sink` URL schemes that are its own: with one of them and no
    /// `--sinkprotocol`, this sink is the one (see [`protocol`]); none for
    /// a sink without URLs.
    const SCHEMES: &'static [Scheme];
    /// Whether it reads the shared `--source-id` (the identity its
    /// deduplication is keyed by); given for a sink that does not, the
    /// flag is refused like another sink's.
    const SOURCE_ID: bool = false;
    /// Its own flags (`NoFlags` for none), with a `next_help_heading`.
    type Args: clap::Args + clap::FromArgMatches;
    /// Checks its flags and makes its configuration; an `Err` is a usage
    /// error (exit 2).
    fn configure(args: Self::Args, setup: &Setup) -> Result<Box<dyn SinkConfig>, String>;
}

/// A [`SinkKind`] as the list holds it.
pub struct Kind {
    /// [`SinkKind::NAME`].
    pub name: &'static str,
    /// [`SinkKind::ABOUT`].
    pub about: &'static str,
    /// [`SinkKind::SCHEMES`].
    pub schemes: &'static [Scheme],
    /// [`SinkKind::SOURCE_ID`].
    pub source_id: bool,
    /// Adds its flags to `run`.
    pub flags: fn(clap::Command) -> clap::Command,
    configure: fn(&clap::ArgMatches, &Setup) -> Configured,
}

/// A sink's configuration, or the usage error that refused it.
type Configured = Result<Box<dyn SinkConfig>, String>;

impl Kind {
    /// The entry of `K` in [`KINDS`].
    pub const fn of<K: SinkKind>() -> Kind {
        Kind {
            name: K::NAME,
            about: K::ABOUT,
            schemes: K::SCHEMES,
            source_id: K::SOURCE_ID,
            flags: <K::Args as clap::Args>::augment_args,
            configure: configure_as::<K>,
        }
    }
}

fn configure_as<K: SinkKind>(matches: &clap::ArgMatches, setup: &Setup) -> Configured {
    let args = <K::Args as clap::FromArgMatches>::from_arg_matches(matches)
        .map_err(|e| app_plugin::usage::one_line(&e))?;
    K::configure(args, setup)
}

/// What a sink's configuration is made from, besides its own flags.
pub struct Setup<'a> {
    /// The flags every sink reads (`--sink`, `--qos`, `--username`, …).
    pub sink: &'a args::Common,
    /// `--name`, checked.
    pub name: &'a str,
    /// The source's address as shown (its password masked).
    pub source: String,
    /// The broker password (`--password-file` or `APP_MQTT_PASSWORD`).
    pub password: Option<String>,
    /// `--payload text`: the events' data need not be JSON.
    pub text_payload: bool,
}

/// A sink as configured, before anything connects.
pub trait SinkConfig: std::fmt::Debug + Send + Sync {
    /// Where it publishes, for the log, `/healthz` and the status line;
    /// never with a password.
    fn url(&self) -> String;

    /// Its topic rules, asked by the router about every event.
    fn rules(&self) -> Arc<dyn TopicRules>;

    /// The largest event it takes, when it has a limit of its own (MQTT's
    /// `--max-packet-size`): the buffer must hold one, and the source's
    /// `--max-event-size` follows it by default.
    fn max_event(&self) -> Option<usize> {
        None
    }

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
/// the `--sink` URLs have (`nats://…` is NATS), else the first of
/// [`KINDS`] (MQTT). A `--sink` of another sink's scheme than
/// `--sinkprotocol`, or URLs of two sinks, is a usage error naming both; a
/// URL without a known scheme chooses nothing (its sink's own check judges
/// it).
pub fn protocol(args: &args::Common) -> Result<&'static Kind, String> {
    let named = |name: &str| KINDS.iter().find(|k| k.name == name);
    let mut implied: Option<(String, &'static Kind)> = None;
    for url in &args.sink {
        let scheme = url.split_once("://").map(|(s, _)| s);
        let Some(kind) = KINDS
            .iter()
            .find(|k| k.schemes.iter().any(|s| Some(s.name) == scheme))
        else {
            continue;
        };
        let shown = app_plugin::redact::url(url).into_owned();
        match &implied {
            Some((first, k)) if k.name != kind.name => {
                return Err(format!(
                    "--sink {first} is {} but --sink {shown} is {}: one repeater publishes to one kind of sink",
                    k.name, kind.name
                ))
            }
            Some(_) => {}
            None => implied = Some((shown, kind)),
        }
    }
    let given = match args.sinkprotocol.as_deref() {
        None => None,
        Some(name) => Some(named(name).ok_or_else(|| {
            format!("internal: no sink is registered for {name:?} (please report)")
        })?),
    };
    match (given, implied) {
        (Some(given), Some((url, k))) if given.name != k.name => Err(format!(
            "--sinkprotocol {} contradicts --sink {url}, a {} URL: leave out --sinkprotocol (the URL's scheme chooses) or give a --sink for {}",
            given.name, k.name, given.name
        )),
        (Some(given), _) => Ok(given),
        (None, Some((_, k))) => Ok(k),
        (None, None) => Ok(&KINDS[0]),
    }
}

/// The sink [`protocol`] chooses, configured from its flags, with its
/// name; a flag of another sink given on the command line (or in its
/// environment variable) is a usage error, as is any the sink refuses.
pub fn configure(
    args: &SinkArgs,
    setup: &Setup,
) -> Result<(&'static str, Box<dyn SinkConfig>), String> {
    let kind = protocol(&args.common)?;
    let wanted = kind.name;
    for other in KINDS.iter().filter(|k| k.name != wanted) {
        if let Some(given) = crate::kind_flags::first_given(&args.matches, other.flags) {
            return Err(format!(
                "{given} only applies to a {} sink ({}), not {wanted}",
                other.name,
                choose(other)
            ));
        }
    }
    refuse_source_id(args, kind)?;
    Ok((kind.name, (kind.configure)(&args.matches, setup)?))
}

/// `--source-id` is shared by the sinks that deduplicate by it; given for
/// another, it is refused naming them.
fn refuse_source_id(args: &SinkArgs, kind: &Kind) -> Result<(), String> {
    if kind.source_id || args.common.source_id.is_none() {
        return Ok(());
    }
    let readers: Vec<&str> = KINDS
        .iter()
        .filter(|k| k.source_id)
        .map(|k| k.name)
        .collect();
    let readers = match readers.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, init)) => format!("{} or {last}", init.join(", ")),
        None => String::new(),
    };
    Err(format!(
        "--source-id only applies to a {readers} sink (the identity its deduplication is keyed by), not {}",
        kind.name
    ))
}

/// How a sink is chosen: `a nats:// or tls:// --sink, or --sinkprotocol nats`.
fn choose(kind: &Kind) -> String {
    let schemes: Vec<String> = kind
        .schemes
        .iter()
        .map(|s| format!("{}://", s.name))
        .collect();
    match schemes.as_slice() {
        [] => format!("--sinkprotocol {}", kind.name),
        [one] => format!("a {one} --sink, or --sinkprotocol {}", kind.name),
        [init @ .., last] => format!(
            "a {} or {last} --sink, or --sinkprotocol {}",
            init.join(", "),
            kind.name
        ),
    }
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
pub fn run_args(args: &[&str]) -> crate::cli::RunArgs {
    use clap::Parser;
    let argv = ["x", "run"].iter().chain(args);
    let crate::cli::Command::Run(run) = crate::cli::Cli::try_parse_from(argv).unwrap().command;
    run
}

/// The [`Setup`] of `args` for an instance named `event-repeater`.
#[cfg(test)]
pub fn setup<'a>(args: &'a crate::cli::RunArgs, source: &str) -> Setup<'a> {
    Setup {
        sink: &args.sink.common,
        name: "event-repeater",
        source: source.to_string(),
        password: None,
        text_payload: false,
    }
}

/// The sink `args` (after `run`) configure, or the usage error.
#[cfg(test)]
pub fn configured(args: &[&str]) -> Result<(&'static str, Box<dyn SinkConfig>), String> {
    let run = run_args(args);
    configure(&run.sink, &setup(&run, "http://h:1"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_sink_follows_the_url_scheme_and_a_contradiction_names_both() {
        let chosen = |args: &[&str]| protocol(&run_args(args).sink.common).map(|k| k.name);
        assert_eq!(chosen(&[]), Ok("mqtt"));
        assert_eq!(chosen(&["--sink", "h:1"]), Ok("mqtt"));
        assert_eq!(chosen(&["--sink", "mqtts://h"]), Ok("mqtt"));
        assert_eq!(chosen(&["--sink", "nats://h:4222"]), Ok("nats"));
        assert_eq!(chosen(&["--sink", "tls://h", "--sink", "h2"]), Ok("nats"));
        assert_eq!(
            chosen(&["--sinkprotocol", "nats", "--sink", "nats://h"]),
            Ok("nats")
        );
        // Given, with a URL of no scheme: as given.
        assert_eq!(
            chosen(&["--sinkprotocol", "nats", "--sink", "h"]),
            Ok("nats")
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
    fn every_registered_sink_is_a_sinkprotocol_value_of_its_name() {
        use clap::CommandFactory;
        let cmd = crate::cli::Cli::command();
        let run = cmd.find_subcommand("run").unwrap();
        let arg = run
            .get_arguments()
            .find(|a| a.get_long() == Some("sinkprotocol"))
            .unwrap();
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect();
        let names: Vec<&str> = KINDS.iter().map(|k| k.name).collect();
        assert_eq!(values, names);
        for kind in KINDS {
            let (name, _) = configured(&["--sinkprotocol", kind.name]).unwrap();
            assert_eq!(name, kind.name);
        }
        let pigeon = crate::cli::Cli::try_parse_from(["x", "run", "--sinkprotocol", "pigeon"]);
        let e = pigeon.unwrap_err().to_string();
        assert!(
            e.contains("[possible values: mqtt, nats, kafka, rabbitmq-stream, stderr]"),
            "{e}"
        );
    }

    #[test]
    fn a_flag_of_another_sink_is_refused_naming_its_sink() {
        let e = configured(&["--creds", "x"]).unwrap_err();
        assert_eq!(
            e,
            "--creds only applies to a nats sink (a nats:// or tls:// --sink, or --sinkprotocol nats), not mqtt"
        );
        let e = configured(&["--sink", "nats://h", "--retain"]).unwrap_err();
        assert_eq!(e, "--retain only applies to a mqtt sink (a tcp://, mqtt://, mqtts:// or ssl:// --sink, or --sinkprotocol mqtt), not nats");
        let e = configured(&["--sinkprotocol", "stderr", "--source-id", "a"]).unwrap_err();
        assert!(
            e.starts_with("--source-id only applies to a nats, kafka or rabbitmq-stream sink")
                && e.ends_with("not stderr"),
            "{e}"
        );
        let e = configured(&["--source-id", "a"]).unwrap_err();
        assert!(e.ends_with("not mqtt"), "{e}");
        // The sinks that read it take it.
        for kind in ["nats", "kafka", "rabbitmq-stream"] {
            let (name, _) = configured(&["--sinkprotocol", kind, "--source-id", "a"]).unwrap();
            assert_eq!(name, kind);
        }
        // A default is not a flag given.
        assert!(configured(&["--sinkprotocol", "stderr"]).is_ok());
    }

    #[test]
    fn the_design_doc_quotes_the_stderr_sink() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let doc = std::fs::read_to_string(root.join("../../docs/repeater-design.md")).unwrap();
        let code = [
            std::fs::read_to_string(root.join("src/sink/stderr.rs")).unwrap(),
            std::fs::read_to_string(root.join("src/sink/mod.rs")).unwrap(),
        ];
        let blocks = crate::doc_quotes::rust_blocks(&doc, "### Adding a sink");
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
