//! clap's view of the command line: the flags, the commands and their
//! help. Nothing here is checked beyond what clap checks; [`super`] turns
//! it into a [`super::Config`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use super::legacy::LegacyArgs;

/// The default for `--timeout`, in seconds.
pub const DEFAULT_TIMEOUT: &str = "5";

const AFTER_HELP: &str = "\
The repeaters are the --host values (repeatable), else the global `app -H`
hosts, else the files `app event-repeater run --name NAME` writes in
$APP_RUNTIME_DIR/plugins/ (NAME.sock, or the TCP URL in NAME.listen), then
in /run/app/plugins/ (the instances of the packaged systemd units).
A host is a URL (unix:///x.sock, http://127.0.0.1:PORT, https://HOST:PORT),
a name from the \"hosts\" of app's config file, or @GROUP from its \"groups\".
With several hosts every command runs on all of them at once.

--value takes JSON inline, @file.json, or - for stdin.
Old form: --op 1|2|3|4 (post, delete, put, get) --resource event --value JSON.

Exit codes: 0 ok; 1 refused by the repeater or failed; 2 usage error or bad
JSON (nothing sent); 3 no repeater running there or it cannot be reached;
4 with several hosts: at least one failed (one line per host on stderr).
`tap` runs until Ctrl-C (exit 0); when the repeater goes away it exits 3.

Examples:
  app event-repeater manage get -o table
  app event-repeater manage put timer/sec/1 /time/1s
  app event-repeater manage delete timer/sec/1
  app event-repeater manage apply -f routes.json --dry-run
  app event-repeater manage tap --route timer/ -o json
  app -H @edges event-repeater manage status
  app -H @edges event-repeater manage top";

/// `app event-repeater manage`: change a running event repeater's routes.
#[derive(Debug, Parser)]
#[command(
    name = "app event-repeater manage",
    bin_name = "app event-repeater manage",
    version = crate::VERSION,
    about = "Change a running event repeater's routes",
    after_help = AFTER_HELP,
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(flatten)]
    pub(super) conn: ConnArgs,

    #[command(subcommand)]
    pub(super) command: Option<Command>,

    #[command(flatten)]
    pub(super) legacy: LegacyArgs,
}

/// The whole command line as clap sees it: for the man page
/// (`packaging/man`) and clap's self-check.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Flags every command takes, before or after its name (as kubectl takes
/// its global flags anywhere: `manage get -H edge1`).
#[derive(Debug, Args)]
pub(super) struct ConnArgs {
    /// The repeater's name (`app event-repeater run --name`)
    #[arg(long, global = true, value_name = "NAME", default_value = crate::DEFAULT_NAME)]
    pub(super) name: String,

    /// An API address (unix:///x.sock, http://127.0.0.1:PORT, https://HOST:PORT), a named host or @GROUP; repeat for several
    #[arg(short = 'H', long, global = true, value_name = "HOST", action = clap::ArgAction::Append)]
    pub(super) host: Vec<String>,

    /// Bearer token for a TCP API that needs one (default: $APP_TOKEN)
    #[arg(long, global = true, value_name = "TOKEN")]
    pub(super) token: Option<String>,

    /// CA certificates (PEM) that an https:// API's certificate must chain to
    #[arg(long, global = true, value_name = "FILE")]
    pub(super) ca_file: Option<PathBuf>,

    /// Give up connecting and waiting for an answer after SECS seconds
    #[arg(long, global = true, value_name = "SECS", default_value = DEFAULT_TIMEOUT, value_parser = parse_secs)]
    pub(super) timeout: Duration,

    /// How to print the answer: json (pretty on a terminal) or table [default: json; table for status]
    #[arg(short = 'o', long = "output", global = true, value_enum)]
    pub(super) output: Option<OutputArg>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(super) enum OutputArg {
    Json,
    Table,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Show routes: all, or the one for SOURCETOPIC
    Get(GetArgs),
    /// Add routes (all or none; an existing sourcetopic is refused)
    Post(BodyArgs),
    /// Add or update a route: SOURCETOPIC SINKTOPIC, or routes as --value
    Put(PutArgs),
    /// Remove a route: SOURCETOPIC, or routes as --value '[{"sourcetopic":…}]'
    Delete(DeleteArgs),
    /// Make the routes exactly those of a file, showing the difference
    Apply(ApplyArgs),
    /// One line per repeater: up, version, routes, source, sink, rates, buffer
    Status(StatusArgs),
    /// Live full-screen view: events/s per host and route, buffer, refusals, state (q quits)
    #[command(after_help = TOP_AFTER_HELP)]
    Top(TopArgs),
    /// Events refused or dropped, kept by the repeater: list, replay, purge
    #[command(name = "dead-letters", subcommand)]
    DeadLetters(DeadLetterCommand),
    /// Print the events flowing through the repeater as they come, until Ctrl-C
    Tap(TapArgs),
}

#[derive(Debug, Subcommand)]
pub(super) enum DeadLetterCommand {
    /// Show the dead letters that match (a table; -o json for all fields)
    List {
        #[command(flatten)]
        filter: LetterFilter,
        /// Show at most N (the answer says how many matched)
        #[arg(long, value_name = "N", default_value = "100", value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
    },
    /// Send them through the current routes again; each delivered is removed
    Replay {
        #[command(flatten)]
        filter: LetterFilter,
        /// Seconds to wait for the broker to take them (the rest stay)
        #[arg(long, value_name = "SECS", default_value = "30", value_parser = clap::value_parser!(u32).range(1..=600))]
        wait: u32,
    },
    /// Remove them (needs a filter, or --all)
    Purge {
        #[command(flatten)]
        filter: LetterFilter,
        /// Remove every dead letter
        #[arg(long)]
        all: bool,
    },
}

/// Which dead letters (all must match).
#[derive(Debug, Args)]
pub(super) struct LetterFilter {
    /// Only this reason: invalid, invalid_topic, too_large, sink_error, overflow
    #[arg(long, value_name = "REASON")]
    pub(super) reason: Option<String>,
    /// Only this source topic, a prefix ending in /, or . for every topic
    #[arg(long, value_name = "TOPIC")]
    pub(super) topic: Option<String>,
    /// Only those kept at or after TIME (2026-12-03T08:00:00Z, or seconds since the epoch)
    #[arg(long, value_name = "TIME")]
    pub(super) since: Option<String>,
    /// Only those kept before TIME
    #[arg(long, value_name = "TIME")]
    pub(super) until: Option<String>,
}

const TOP_AFTER_HELP: &str = "\
Every host is sampled on its own every --interval (/healthz and /metrics); a
host that does not answer within --timeout is shown as timed out while the
others keep refreshing. Hosts are sorted by events/s in, busiest first.
Keys: q, Esc or Ctrl-C quit; SIGTERM too. The terminal is put back as it was.

When stdout is not a terminal (a pipe, a file) or with -o json, top prints
its tables (or a JSON array of hosts) once, from two samples --interval
apart, without escape codes; exit codes as for status (3/4 when a host is
down).

Examples:
  app event-repeater manage top
  app -H @edges event-repeater manage top --timeout 2
  app event-repeater manage top -H http://127.0.0.1:8080 | less";

#[derive(Debug, Args)]
pub(super) struct GetArgs {
    /// The route's source topic (default: every route)
    #[arg(value_name = "SOURCETOPIC", conflicts_with = "path")]
    pub(super) sourcetopic: Option<String>,

    /// The API path; must start with /
    #[arg(long, value_name = "PATH", default_value = "/events")]
    pub(super) path: String,
}

#[derive(Debug, Args)]
pub(super) struct BodyArgs {
    /// The API path; must start with /
    #[arg(long, value_name = "PATH", default_value = "/events")]
    pub(super) path: String,

    /// JSON inline, @file.json, or - for stdin
    #[arg(
        long,
        value_name = "VALUE",
        required = true,
        allow_hyphen_values = true
    )]
    pub(super) value: String,
}

#[derive(Debug, Args)]
pub(super) struct PutArgs {
    /// The route's source topic (a prefix ends in /, . is every topic)
    #[arg(value_name = "SOURCETOPIC", conflicts_with_all = ["path", "value"])]
    pub(super) sourcetopic: Option<String>,

    /// Where it publishes ({topic} and {suffix} allowed; . is the event's own topic)
    #[arg(value_name = "SINKTOPIC")]
    pub(super) sinktopic: Option<String>,

    /// The API path; must start with /
    #[arg(long, value_name = "PATH", default_value = "/events")]
    pub(super) path: String,

    /// JSON inline, @file.json, or - for stdin
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
    pub(super) value: Option<String>,
}

#[derive(Debug, Args)]
pub(super) struct DeleteArgs {
    /// The source topic of the route to remove
    #[arg(value_name = "SOURCETOPIC", conflicts_with_all = ["path", "value"])]
    pub(super) sourcetopic: Option<String>,

    /// The API path; must start with /
    #[arg(long, value_name = "PATH", default_value = "/events")]
    pub(super) path: String,

    /// JSON inline, @file.json, or - for stdin
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
    pub(super) value: Option<String>,
}

#[derive(Debug, Args)]
pub(super) struct StatusArgs {
    /// Redraw every --interval until Ctrl-C
    #[arg(short = 'w', long)]
    pub(super) watch: bool,

    /// Seconds between two samples (the rates are over this interval)
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = parse_secs)]
    pub(super) interval: Duration,
}

#[derive(Debug, Args)]
pub(super) struct TopArgs {
    /// Seconds between two samples of a host, and between two redraws
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = parse_secs)]
    pub(super) interval: Duration,
}

#[derive(Debug, Args)]
pub(super) struct TapArgs {
    /// Only the events this route takes (the route's source topic)
    #[arg(long, value_name = "SOURCETOPIC", conflicts_with = "topic")]
    pub(super) route: Option<String>,

    /// Only the events of these source topics (a topic, a prefix ending in /, or . for all)
    #[arg(long, value_name = "PATTERN")]
    pub(super) topic: Option<String>,
}

#[derive(Debug, Args)]
pub(super) struct ApplyArgs {
    /// The routes file: a JSON array of {"sourcetopic", "sinktopic"}; - for stdin
    #[arg(short = 'f', long = "file", value_name = "FILE", required = true)]
    pub(super) file: PathBuf,

    /// Show the difference, change nothing
    #[arg(long)]
    pub(super) dry_run: bool,
}

fn parse_secs(text: &str) -> Result<Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !(secs > 0.0 && secs <= 3600.0) {
        return Err(format!("'{text}' is out of range; give 0 < SECS <= 3600"));
    }
    Ok(Duration::from_secs_f64(secs))
}
