//! Sources: where events come from, behind one trait and chosen once.
//!
//! Each kind of source is a directory that implements [`SourceKind`]: its
//! `--source-kind` value, whether it claims a `--source` text when
//! `--source-kind` is not given, its own flags (a clap `Args` struct shown
//! under its own heading in `run --help`), and the function that checks
//! them and makes its [`SourceConfig`]. It is registered by one line in
//! [`KINDS`]; `--source-kind`'s values, its help, the guess, and which
//! flags belong to which kind are derived from that list. The flags every
//! kind shares (`--source`, its limits, how an event is read) are in
//! [`args`]. The rest of the repeater holds the configuration as an
//! `Arc<dyn SourceConfig>`: it shows it, asks it for its topics and runs
//! it once; nothing outside this module names a kind. Both kinds today
//! speak SSE over HTTP and share [`reader`]; a kind that does not (an
//! MQTT subscription) runs a loop of its own. Adding a source is
//! described in `docs/repeater-design.md`.

pub mod args;
pub mod feed;
pub mod plugin;
pub mod reader;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use app_plugin::daemon::Shutdown;
use futures_util::future::BoxFuture;

use crate::checkpoint::Held;
use crate::event_key::EventKey;
use crate::metrics::Metrics;
use crate::relay::Relay;

pub use crate::kind_flags::NoFlags;
pub use args::{default_max_event, Common, PayloadKind, Source, SourceArgs};

/// Every kind of source; the first is the one a `--source` no kind claims
/// is (a plugin name, a socket, a bare `http://HOST:PORT`).
pub const KINDS: &[Kind] = &[Kind::of::<plugin::Plugin>(), Kind::of::<feed::Feed>()];

/// A kind of source, registered by its line in [`KINDS`].
pub trait SourceKind {
    /// Its `--source-kind` value.
    const NAME: &'static str;
    /// The value's line in `run --help`.
    const ABOUT: &'static str;
    /// What it is, in a few words, in `--source-kind`'s own help.
    const BRIEF: &'static str;
    /// What it is in messages: `an event plugin`.
    const WHAT: &'static str;
    /// Which `--source` texts choose it, in messages: `an http(s):// URL
    /// with a path`.
    const CHOSEN_BY: &'static str;
    /// The texts [`SourceKind::claims`] takes, in `--source-kind`'s help
    /// (`for https:// and …`); empty for a kind that claims none.
    const CLAIMED: &'static str = "";
    /// Its own flags (`NoFlags` for none), with a `next_help_heading`.
    type Args: clap::Args + clap::FromArgMatches;

    /// Whether a `--source` text is this kind's when `--source-kind` is
    /// not given; the first kind in [`KINDS`] that claims it is chosen,
    /// else the first kind.
    fn claims(_source: &str) -> bool {
        false
    }

    /// Checks its flags and makes its configuration; an `Err` is a usage
    /// error (exit 2).
    fn configure(args: Self::Args, setup: &Setup) -> Result<Arc<dyn SourceConfig>, String>;
}

/// A [`SourceKind`] as the list holds it.
pub struct Kind {
    /// [`SourceKind::NAME`].
    pub name: &'static str,
    /// [`SourceKind::ABOUT`].
    pub about: &'static str,
    brief: &'static str,
    what: &'static str,
    chosen_by: &'static str,
    claimed: &'static str,
    claims: fn(&str) -> bool,
    /// Adds its flags to `run`.
    pub flags: fn(clap::Command) -> clap::Command,
    configure: fn(&clap::ArgMatches, &Setup) -> Configured,
}

/// A source's configuration, or the usage error that refused it.
type Configured = Result<Arc<dyn SourceConfig>, String>;

impl Kind {
    /// The entry of `K` in [`KINDS`].
    pub const fn of<K: SourceKind>() -> Kind {
        Kind {
            name: K::NAME,
            about: K::ABOUT,
            brief: K::BRIEF,
            what: K::WHAT,
            chosen_by: K::CHOSEN_BY,
            claimed: K::CLAIMED,
            claims: K::claims,
            flags: <K::Args as clap::Args>::augment_args,
            configure: configure_as::<K>,
        }
    }
}

fn configure_as<K: SourceKind>(matches: &clap::ArgMatches, setup: &Setup) -> Configured {
    let args = <K::Args as clap::FromArgMatches>::from_arg_matches(matches)
        .map_err(|e| app_plugin::usage::one_line(&e))?;
    K::configure(args, setup)
}

/// What a source's configuration is made from, besides its own flags.
pub struct Setup<'a> {
    /// `--source` as given.
    pub source: &'a str,
    /// Where plugins' sockets are (`APP_RUNTIME_DIR/plugins`).
    pub plugin_dir: &'a Path,
}

/// A source as configured, before anything connects. Its `Display` is how
/// it is shown (the log, `/healthz`, the default `--source-id`): never
/// with a secret.
pub trait SourceConfig: std::fmt::Display + std::fmt::Debug + Send + Sync {
    /// Reads events into `rt.relay` until `cancel` fires, reconnecting as
    /// the kind does; it calls [`Runtime::begin`] first. The one dynamic
    /// call: the loop inside is the kind's own, so no event pays for it.
    fn run(self: Arc<Self>, rt: Runtime, cancel: Shutdown) -> BoxFuture<'static, ()>;

    /// The topics the source serves now, for the API's
    /// `GET /source/topics`; an `Err` says why there are none to give.
    fn topics(&self) -> BoxFuture<'_, Result<Vec<String>, String>>;
}

/// What a running source is given.
pub struct Runtime {
    /// Where events go.
    pub relay: Arc<Relay>,
    pub metrics: Arc<Metrics>,
    /// The largest line or event read (`--max-event-size`, checked).
    pub max_event: usize,
    /// `--source-idle-timeout`: silence after which the source is stalled.
    pub idle_timeout: Duration,
    /// The checkpoint to resume after, from the file.
    pub resume_after: Option<EventKey>,
    /// The earlier run's first event (id `resume_after`), kept in the
    /// checkpoint because it was not done: relayed again by
    /// [`Runtime::begin`].
    pub replay: Option<Held>,
}

impl Runtime {
    /// What every kind does before it reads: a fresh start's first
    /// checkpoint marked, then the event an earlier run left undone relayed
    /// again. `false`: stopped meanwhile.
    pub async fn begin(&self, cancel: &Shutdown) -> bool {
        if let Some(first) = self.relay.first_checkpoint() {
            let problem = |p: Option<&str>| {
                crate::metrics::set_problem(&self.metrics.source_problem, p.unwrap_or(""));
            };
            if !first.mark(problem, cancel).await {
                return false;
            }
        }
        if let Some(event) = &self.replay {
            let name = event.name.as_deref();
            self.relay
                .handle(
                    event.data.as_str().into(),
                    name,
                    self.resume_after.as_ref(),
                    cancel,
                )
                .await;
        }
        true
    }
}

/// The kind to use: `--source-kind` when given, else the first of
/// [`KINDS`] that claims the `--source` text, else the first.
pub fn kind(args: &Common) -> Result<&'static Kind, String> {
    match args.source_kind.as_deref() {
        Some(name) => KINDS.iter().find(|k| k.name == name).ok_or_else(|| {
            format!("internal: no source kind is registered for {name:?} (please report)")
        }),
        None => Ok(KINDS
            .iter()
            .find(|k| (k.claims)(&args.source))
            .unwrap_or(&KINDS[0])),
    }
}

/// The kind [`kind`] chooses, configured from its flags, with its name; a
/// flag of another kind given on the command line (or in its environment
/// variable) is a usage error naming that kind, as is any the kind refuses.
pub fn configure(
    args: &SourceArgs,
    setup: &Setup,
) -> Result<(&'static str, Arc<dyn SourceConfig>), String> {
    let kind = kind(&args.common)?;
    for other in KINDS.iter().filter(|k| k.name != kind.name) {
        if let Some(given) = crate::kind_flags::first_given(&args.matches, other.flags) {
            return Err(format!(
                "{given} is for {} ({}, or --source-kind {}), not {}",
                other.what, other.chosen_by, other.name, kind.what
            ));
        }
    }
    Ok((kind.name, (kind.configure)(&args.matches, setup)?))
}

/// `--source-kind`'s help: `What --source is: plugin (…) or sse (…);
/// default: sse for https:// and …`, from [`KINDS`].
fn kind_help() -> String {
    let kinds: Vec<String> = KINDS
        .iter()
        .map(|k| format!("{} ({})", k.name, k.brief))
        .collect();
    let claims: Vec<String> = KINDS
        .iter()
        .filter(|k| !k.claimed.is_empty())
        .map(|k| format!("{} {}", k.name, k.claimed))
        .collect();
    format!(
        "What --source is: {}; default: {}",
        kinds.join(" or "),
        claims.join(", ")
    )
}

/// `--source-kind`'s values: the registered kinds, each with its line.
fn kind_values() -> clap::builder::PossibleValuesParser {
    KINDS
        .iter()
        .map(|k| clap::builder::PossibleValue::new(k.name).help(k.about))
        .collect::<Vec<_>>()
        .into()
}

#[cfg(test)]
mod tests;
