//! The command line: clap's view of the flags ([`Cli`]), turned into a
//! checked [`Config`] before anything is read or sent.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::error::Error;
use crate::output::Format;
use crate::target::{check_name, HostWord};
use crate::value::ValueSpec;

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

Examples:
  app event-repeater manage get -o table
  app event-repeater manage put timer/sec/1 /time/1s
  app event-repeater manage delete timer/sec/1
  app event-repeater manage apply -f routes.json --dry-run
  app -H @edges event-repeater manage status";

/// The help section of the original design's `--op` form, listed after
/// the commands' flags: kept for old scripts, not what to learn first.
const LEGACY: &str = "Old form (use the commands above instead)";

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
    conn: ConnArgs,

    #[command(subcommand)]
    command: Option<Command>,

    /// Old numeric form: 1 add (post), 2 delete, 3 update (put), 4 read (get)
    #[arg(long, help_heading = LEGACY, value_enum, value_name = "1-4")]
    op: Option<Op>,

    /// Old form: the resource; `event` means /events
    #[arg(long, help_heading = LEGACY, value_enum, value_name = "event")]
    resource: Option<Resource>,

    /// With --op: the API path (default /events)
    #[arg(long, help_heading = LEGACY, value_name = "PATH")]
    path: Option<String>,

    /// With --op: JSON inline, @file.json, or - for stdin
    #[arg(long, help_heading = LEGACY, value_name = "VALUE", allow_hyphen_values = true)]
    value: Option<String>,
}

/// The whole command line as clap sees it: for the man page
/// (`packaging/man`) and clap's self-check.
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command()
}

/// Flags every command takes, before or after its name (as kubectl takes
/// its global flags anywhere: `manage get -H edge1`).
#[derive(Debug, Args)]
struct ConnArgs {
    /// The repeater's name (`app event-repeater run --name`)
    #[arg(long, global = true, value_name = "NAME", default_value = crate::DEFAULT_NAME)]
    name: String,

    /// An API address (unix:///x.sock, http://127.0.0.1:PORT, https://HOST:PORT), a named host or @GROUP; repeat for several
    #[arg(short = 'H', long, global = true, value_name = "HOST", action = clap::ArgAction::Append)]
    host: Vec<String>,

    /// Bearer token for a TCP API that needs one (default: $APP_TOKEN)
    #[arg(long, global = true, value_name = "TOKEN")]
    token: Option<String>,

    /// CA certificates (PEM) that an https:// API's certificate must chain to
    #[arg(long, global = true, value_name = "FILE")]
    ca_file: Option<PathBuf>,

    /// Give up connecting and waiting for an answer after SECS seconds
    #[arg(long, global = true, value_name = "SECS", default_value = DEFAULT_TIMEOUT, value_parser = parse_secs)]
    timeout: Duration,

    /// How to print the answer: json (pretty on a terminal) or table [default: json; table for status]
    #[arg(short = 'o', long = "output", global = true, value_enum)]
    output: Option<OutputArg>,
}

/// The original design's numbered operations (`--op`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Op {
    #[value(name = "1", help = "add (post)")]
    Post,
    #[value(name = "2", help = "delete")]
    Delete,
    #[value(name = "3", help = "update (put)")]
    Put,
    #[value(name = "4", help = "read (get)")]
    Get,
}

impl Op {
    fn method(self) -> Method {
        match self {
            Op::Post => Method::Post,
            Op::Delete => Method::Delete,
            Op::Put => Method::Put,
            Op::Get => Method::Get,
        }
    }
}

/// The original design's `--resource`: only the routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Resource {
    #[value(help = "the routes, /events", alias = "events")]
    Event,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutputArg {
    Json,
    Table,
}

#[derive(Debug, Subcommand)]
enum Command {
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
}

#[derive(Debug, Args)]
struct GetArgs {
    /// The route's source topic (default: every route)
    #[arg(value_name = "SOURCETOPIC", conflicts_with = "path")]
    sourcetopic: Option<String>,

    /// The API path; must start with /
    #[arg(long, value_name = "PATH", default_value = "/events")]
    path: String,
}

#[derive(Debug, Args)]
struct BodyArgs {
    /// The API path; must start with /
    #[arg(long, value_name = "PATH", default_value = "/events")]
    path: String,

    /// JSON inline, @file.json, or - for stdin
    #[arg(
        long,
        value_name = "VALUE",
        required = true,
        allow_hyphen_values = true
    )]
    value: String,
}

#[derive(Debug, Args)]
struct PutArgs {
    /// The route's source topic (a prefix ends in /, . is every topic)
    #[arg(value_name = "SOURCETOPIC", conflicts_with_all = ["path", "value"])]
    sourcetopic: Option<String>,

    /// Where it publishes ({topic} and {suffix} allowed; . is the event's own topic)
    #[arg(value_name = "SINKTOPIC")]
    sinktopic: Option<String>,

    /// The API path; must start with /
    #[arg(long, value_name = "PATH", default_value = "/events")]
    path: String,

    /// JSON inline, @file.json, or - for stdin
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
    value: Option<String>,
}

#[derive(Debug, Args)]
struct DeleteArgs {
    /// The source topic of the route to remove
    #[arg(value_name = "SOURCETOPIC", conflicts_with_all = ["path", "value"])]
    sourcetopic: Option<String>,

    /// The API path; must start with /
    #[arg(long, value_name = "PATH", default_value = "/events")]
    path: String,

    /// JSON inline, @file.json, or - for stdin
    #[arg(long, value_name = "VALUE", allow_hyphen_values = true)]
    value: Option<String>,
}

#[derive(Debug, Args)]
struct StatusArgs {
    /// Redraw every --interval until Ctrl-C
    #[arg(short = 'w', long)]
    watch: bool,

    /// Seconds between two samples (the rates are over this interval)
    #[arg(long, value_name = "SECS", default_value = "2", value_parser = parse_secs)]
    interval: Duration,
}

#[derive(Debug, Args)]
struct ApplyArgs {
    /// The routes file: a JSON array of {"sourcetopic", "sinktopic"}; - for stdin
    #[arg(short = 'f', long = "file", value_name = "FILE", required = true)]
    file: PathBuf,

    /// Show the difference, change nothing
    #[arg(long)]
    dry_run: bool,
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

/// An HTTP method of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Read.
    Get,
    /// Add.
    Post,
    /// Upsert or replace.
    Put,
    /// Remove.
    Delete,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }
}

/// How to reach the repeater.
#[derive(Debug, Clone, PartialEq)]
pub struct Conn {
    /// `--name`.
    pub name: String,
    /// `--host` values, checked (empty: the global hosts, else the local files).
    pub hosts: Vec<HostWord>,
    /// `--token` or `APP_TOKEN`.
    pub token: Option<String>,
    /// `--ca-file`.
    pub ca_file: Option<PathBuf>,
    /// `--timeout`.
    pub timeout: Duration,
}

/// One request to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The method.
    pub method: Method,
    /// The path, percent-encoded where needed (may carry a query).
    pub path: String,
    /// The body, still to be read and checked.
    pub value: Option<ValueSpec>,
}

/// What the command does.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// get, post, put, delete (or an `--op`).
    Send(Call),
    /// apply -f FILE [--dry-run].
    Apply {
        /// Where the routes come from (`-` is stdin).
        file: ValueSpec,
        /// Change nothing.
        dry_run: bool,
    },
    /// status [--watch].
    Status {
        /// Redraw until interrupted.
        watch: bool,
        /// Between two samples.
        interval: Duration,
    },
}

/// A checked command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// How to reach the repeater.
    pub conn: Conn,
    /// `-o`.
    pub output: Format,
    /// What to do.
    pub action: Action,
}

impl Config {
    /// Parses `args` (without the program name) and checks them. `env_token`
    /// is `APP_TOKEN`, used when `--token` is not given.
    pub fn from_args<I, T>(args: I, env_token: Option<String>) -> Result<Config, ParseOutcome>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once(std::ffi::OsString::from("app-event-repeater-manage"))
            .chain(args.into_iter().map(Into::into));
        let argv: Vec<std::ffi::OsString> = argv.collect();
        // Usage errors point at the help of the command typed, if any.
        let help = help_command(&argv);
        let cli = Cli::try_parse_from(&argv).map_err(|e| ParseOutcome::from_clap(e, &help))?;
        Config::from_cli(cli, env_token).map_err(|e| {
            ParseOutcome::Error(match e {
                Error::Usage(msg) if !msg.contains("--help") => {
                    Error::Usage(format!("{msg}; see: {help}"))
                }
                other => other,
            })
        })
    }

    fn from_cli(cli: Cli, env_token: Option<String>) -> Result<Config, Error> {
        let conn = &cli.conn;
        check_name(&conn.name)?;
        let hosts = conn
            .host
            .iter()
            .map(|h| HostWord::parse(h).map_err(|e| Error::Usage(format!("--host {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let token = conn.token.clone().or(env_token).filter(|t| !t.is_empty());
        let action = match cli.command {
            Some(command) => {
                if cli.op.is_some()
                    || cli.resource.is_some()
                    || cli.path.is_some()
                    || cli.value.is_some()
                {
                    return Err(Error::Usage(
                        "--op, --resource, --path and --value go after the command (or use the old --op form without a command)".into(),
                    ));
                }
                from_command(command)?
            }
            None => old_form(cli.op, cli.resource, cli.path, cli.value)?,
        };
        Ok(Config {
            conn: Conn {
                name: conn.name.clone(),
                hosts,
                token,
                ca_file: conn.ca_file.clone(),
                timeout: conn.timeout,
            },
            output: match conn.output {
                Some(OutputArg::Table) => Format::Table,
                Some(OutputArg::Json) => Format::Json,
                // A status is read by eyes unless JSON is asked for.
                None if matches!(action, Action::Status { .. }) => Format::Table,
                None => Format::Json,
            },
            action,
        })
    }
}

fn from_command(command: Command) -> Result<Action, Error> {
    let call = |method, path: &str, value: Option<String>| {
        Ok(Action::Send(Call {
            method,
            path: check_path(path)?,
            value: value.as_deref().map(ValueSpec::parse),
        }))
    };
    let one = |method, topic: &str, value: Option<ValueSpec>| {
        if topic.is_empty() {
            return Err(Error::Usage(
                "SOURCETOPIC must not be empty (use . for every topic)".into(),
            ));
        }
        Ok(Action::Send(Call {
            method,
            path: topic_path(topic),
            value,
        }))
    };
    match command {
        Command::Get(a) => match a.sourcetopic {
            Some(topic) => one(Method::Get, &topic, None),
            None => call(Method::Get, &a.path, None),
        },
        Command::Post(a) => call(Method::Post, &a.path, Some(a.value)),
        Command::Put(a) => match (a.sourcetopic, a.sinktopic, a.value) {
            (Some(source), Some(sink), _) => {
                let body = serde_json::json!({ "sinktopic": sink }).to_string();
                one(Method::Put, &source, Some(ValueSpec::Inline(body)))
            }
            (Some(source), None, _) => Err(Error::Usage(format!(
                "put {source} needs a SINKTOPIC too: put SOURCETOPIC SINKTOPIC (. for the event's own topic)"
            ))),
            (None, _, Some(value)) => call(Method::Put, &a.path, Some(value)),
            (None, _, None) => Err(Error::Usage(
                "put needs SOURCETOPIC SINKTOPIC, or the routes as --value JSON".into(),
            )),
        },
        Command::Delete(a) => {
            if let Some(topic) = a.sourcetopic {
                return one(Method::Delete, &topic, None);
            }
            if a.value.is_none() && is_collection(&a.path) {
                return Err(Error::Usage(
                    "delete needs the route to remove: delete SOURCETOPIC, or --value '[{\"sourcetopic\":\"…\"}]'".into(),
                ));
            }
            call(Method::Delete, &a.path, a.value)
        }
        Command::Status(a) => Ok(Action::Status {
            watch: a.watch,
            interval: a.interval,
        }),
        Command::Apply(a) => Ok(Action::Apply {
            file: if a.file.as_os_str() == "-" {
                ValueSpec::Stdin
            } else {
                ValueSpec::File(a.file)
            },
            dry_run: a.dry_run,
        }),
    }
}

/// The original design's `--op N --resource event --value JSON`.
fn old_form(
    op: Option<Op>,
    resource: Option<Resource>,
    path: Option<String>,
    value: Option<String>,
) -> Result<Action, Error> {
    let Some(op) = op else {
        let hint = if resource.is_some() || path.is_some() || value.is_some() {
            " (--resource, --path and --value need a command or --op)"
        } else {
            ""
        };
        return Err(Error::Usage(format!(
            "no command given{hint}; use get, post, put, delete, apply or status, see: app event-repeater manage --help"
        )));
    };
    let path = match (resource, path) {
        (Some(_), Some(_)) => {
            return Err(Error::Usage("give --resource or --path, not both".into()))
        }
        (Some(Resource::Event), None) => "/events".to_string(),
        (None, path) => path.unwrap_or_else(|| "/events".to_string()),
    };
    let method = op.method();
    let op = op
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string());
    match (method, &value) {
        (Method::Get, Some(_)) => {
            return Err(Error::Usage("--op 4 (get) takes no --value".into()))
        }
        (Method::Post | Method::Put, None) => {
            return Err(Error::Usage(format!(
                "--op {op} needs --value with the routes as JSON"
            )))
        }
        (Method::Delete, None) if is_collection(&path) => {
            return Err(Error::Usage(
                "--op 2 (delete) needs --value '[{\"sourcetopic\":\"…\"}]', or --path /events/<sourcetopic>".into(),
            ))
        }
        _ => {}
    }
    Ok(Action::Send(Call {
        method,
        path: check_path(&path)?,
        value: value.as_deref().map(ValueSpec::parse),
    }))
}

/// `/events/<topic>` with every byte of the topic that is not plainly safe
/// in a path percent-encoded (`%` and `?` included: a topic is literal).
pub fn topic_path(topic: &str) -> String {
    /// RFC 3986's unreserved characters and `/` stay; everything else is encoded.
    const TOPIC: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'/');
    format!("/events/{}", utf8_percent_encode(topic, TOPIC))
}

/// `app event-repeater manage [COMMAND] --help` for the command in `argv`.
fn help_command(argv: &[std::ffi::OsString]) -> String {
    const COMMANDS: &[&str] = &["get", "post", "put", "delete", "apply", "status"];
    let command = argv
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| COMMANDS.contains(a));
    match command {
        Some(c) => format!("app event-repeater manage {c} --help"),
        None => "app event-repeater manage --help".to_string(),
    }
}

fn is_collection(path: &str) -> bool {
    let path = path.split('?').next().unwrap_or_default();
    path.trim_end_matches('/') == "/events"
}

/// Checks that `--path` starts with `/` and percent-encodes what may not
/// appear in a URL path as is (spaces, `#`, non-ASCII, …). A `?` starts the
/// query (`/events?replace=true`); `%XX` is kept as already encoded.
pub fn check_path(path: &str) -> Result<String, Error> {
    if !path.starts_with('/') {
        return Err(Error::Usage(format!(
            "--path '{path}' must start with /; for example --path /events or --path /events/timer/sec/1"
        )));
    }
    /// What a path or query may hold as is (RFC 3986 pchar, `/` and `?`);
    /// `%` is encoded unless it starts an escape (kept below).
    const PATH: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'!')
        .remove(b'$')
        .remove(b'&')
        .remove(b'\'')
        .remove(b'(')
        .remove(b')')
        .remove(b'*')
        .remove(b'+')
        .remove(b',')
        .remove(b';')
        .remove(b'=')
        .remove(b':')
        .remove(b'@')
        .remove(b'/')
        .remove(b'?');
    // `%XX` is already encoded: the text between escapes is encoded, the
    // escapes copied.
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes[i] == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if escape {
            out.extend(utf8_percent_encode(&path[start..i], PATH));
            out.push_str(&path[i..i + 3]);
            i += 3;
            start = i;
        } else {
            i += 1;
        }
    }
    out.extend(utf8_percent_encode(&path[start..], PATH));
    Ok(out)
}

/// What parsing the command line produced instead of a [`Config`].
#[derive(Debug)]
pub enum ParseOutcome {
    /// `--help` or `--version`: print this on stdout and exit 0.
    Info(String),
    /// A usage error.
    Error(Error),
}

impl ParseOutcome {
    fn from_clap(e: clap::Error, help: &str) -> ParseOutcome {
        use clap::error::ErrorKind;
        match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                ParseOutcome::Info(e.render().to_string())
            }
            _ => {
                let first = app_plugin::usage::one_line(&e);
                ParseOutcome::Error(Error::Usage(format!("{first}; see: {help}")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Config, String> {
        Config::from_args(args.iter().copied(), None).map_err(|e| match e {
            ParseOutcome::Info(i) => format!("info: {i}"),
            ParseOutcome::Error(e) => {
                assert_eq!(e.exit_code(), 2);
                e.to_string()
            }
        })
    }

    fn call(args: &[&str]) -> Call {
        match parse(args).unwrap().action {
            Action::Send(c) => c,
            other => panic!("not a call: {other:?}"),
        }
    }

    fn spec(method: Method, path: &str, value: Option<&str>) -> Call {
        Call {
            method,
            path: path.into(),
            value: value.map(ValueSpec::parse),
        }
    }

    #[test]
    fn commands_map_to_requests() {
        let table: &[(&[&str], Call)] = &[
            (&["get"], spec(Method::Get, "/events", None)),
            (
                &["get", "--path", "/events/timer/sec/1"],
                spec(Method::Get, "/events/timer/sec/1", None),
            ),
            (
                &["post", "--value", "[]"],
                spec(Method::Post, "/events", Some("[]")),
            ),
            (
                &["put", "--value", "@r.json"],
                spec(Method::Put, "/events", Some("@r.json")),
            ),
            (
                &["put", "--path", "/events?replace=true", "--value", "-"],
                spec(Method::Put, "/events?replace=true", Some("-")),
            ),
            (
                &["delete", "--value", "[]"],
                spec(Method::Delete, "/events", Some("[]")),
            ),
            (
                &["delete", "--path", "/events/a"],
                spec(Method::Delete, "/events/a", None),
            ),
            (
                &["--op", "1", "--resource", "event", "--value", "[]"],
                spec(Method::Post, "/events", Some("[]")),
            ),
            (
                &["--op", "2", "--resource", "event", "--value", "[]"],
                spec(Method::Delete, "/events", Some("[]")),
            ),
            (
                &["--op", "3", "--value", "{}"],
                spec(Method::Put, "/events", Some("{}")),
            ),
            (
                &["--op", "4", "--resource", "event"],
                spec(Method::Get, "/events", None),
            ),
            (
                &["--op", "4", "--path", "/events/x"],
                spec(Method::Get, "/events/x", None),
            ),
        ];
        for (args, want) in table {
            assert_eq!(&call(args), want, "{args:?}");
        }
    }

    #[test]
    fn connection_flags_go_before_or_after_the_command() {
        let a = parse(&["--name", "r1", "get", "-o", "table", "--timeout", "0.5"]).unwrap();
        let b = parse(&[
            "get",
            "--name",
            "r1",
            "--output",
            "table",
            "--timeout",
            "0.5",
        ])
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.conn.name, "r1");
        assert_eq!(a.output, Format::Table);
        assert_eq!(a.conn.timeout, Duration::from_millis(500));
        let d = parse(&["get"]).unwrap();
        assert_eq!(d.conn.name, crate::DEFAULT_NAME);
        assert_eq!(d.conn.timeout, Duration::from_secs(5));
        assert_eq!(d.output, Format::Json);
    }

    #[test]
    fn host_and_token() {
        let c = parse(&[
            "get",
            "--host",
            "http://127.0.0.1:9/",
            "--host",
            "edge1",
            "-o",
            "table",
            "--host",
            "@edges",
            "--token",
            "t",
        ])
        .unwrap();
        assert_eq!(
            c.conn.hosts,
            [
                HostWord::Url(crate::target::Endpoint::Http("http://127.0.0.1:9".into())),
                HostWord::Name("edge1".into()),
                HostWord::Group("edges".into()),
            ]
        );
        assert_eq!(c.conn.token.as_deref(), Some("t"));
        let c = Config::from_args(["get"], Some("env".into())).unwrap();
        assert_eq!(c.conn.token.as_deref(), Some("env"));
        let c = Config::from_args(["get", "--token", "flag"], Some("env".into())).unwrap();
        assert_eq!(c.conn.token.as_deref(), Some("flag"));
        assert!(parse(&["get", "--host", "ftp://x"])
            .unwrap_err()
            .contains("--host"));
    }

    #[test]
    fn topics_as_arguments() {
        assert_eq!(
            call(&["get", "timer/sec/1"]),
            spec(Method::Get, "/events/timer/sec/1", None)
        );
        assert_eq!(
            call(&["delete", "a b/50%?x"]),
            spec(Method::Delete, "/events/a%20b/50%25%3Fx", None)
        );
        assert_eq!(
            call(&["put", "timer/sec/1", "/time/1s"]),
            Call {
                method: Method::Put,
                path: "/events/timer/sec/1".into(),
                value: Some(ValueSpec::Inline(r#"{"sinktopic":"/time/1s"}"#.into())),
            }
        );
        let e = parse(&["put", "timer/sec/1"]).unwrap_err();
        assert!(e.contains("needs a SINKTOPIC"), "{e}");
        assert!(e.contains("manage put --help"), "{e}");
        let e = parse(&["delete", "x", "--value", "[]"]).unwrap_err();
        assert!(e.contains("cannot be used with"), "{e}");
        assert!(e.contains("manage delete --help"), "{e}");
    }

    #[test]
    fn status_defaults_to_a_table() {
        let c = parse(&["status"]).unwrap();
        assert_eq!(c.output, Format::Table);
        assert_eq!(
            c.action,
            Action::Status {
                watch: false,
                interval: Duration::from_secs(2)
            }
        );
        let c = parse(&["status", "-w", "--interval", "0.5", "-o", "json"]).unwrap();
        assert_eq!(c.output, Format::Json);
        assert_eq!(
            c.action,
            Action::Status {
                watch: true,
                interval: Duration::from_millis(500)
            }
        );
    }

    #[test]
    fn apply_reads_a_file_or_stdin() {
        let c = parse(&["apply", "-f", "routes.json", "--dry-run"]).unwrap();
        assert_eq!(
            c.action,
            Action::Apply {
                file: ValueSpec::File("routes.json".into()),
                dry_run: true
            }
        );
        let c = parse(&["apply", "--file", "-"]).unwrap();
        assert_eq!(
            c.action,
            Action::Apply {
                file: ValueSpec::Stdin,
                dry_run: false
            }
        );
    }

    #[test]
    fn usage_errors() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "no command given"),
            (
                &["get", "--path", "events"],
                "--path 'events' must start with /",
            ),
            (&["post"], "--value"),
            (&["get", "--value", "[]"], "unexpected argument '--value'"),
            (&["delete"], "delete needs the route to remove"),
            (&["--op", "5"], "5"),
            (&["--op", "1"], "--op 1 needs --value"),
            (&["--op", "4", "--value", "[]"], "takes no --value"),
            (
                &["--op", "2", "--resource", "event"],
                "--op 2 (delete) needs --value",
            ),
            (
                &["--op", "4", "--resource", "route"],
                "invalid value 'route' for '--resource <event>'",
            ),
            (
                &["--op", "4", "--resource", "event", "--path", "/events"],
                "not both",
            ),
            (&["--op", "4", "get"], "go after the command"),
            (&["--value", "[]"], "need a command or --op"),
            (&["get", "--name", "a/b"], "--name 'a/b'"),
            (&["get", "--timeout", "0"], "out of range"),
            (&["get", "--timeout", "x"], "not a number"),
            (&["get", "-o", "yaml"], "yaml"),
            (&["apply"], "--file"),
            (&["frobnicate"], "frobnicate"),
        ];
        for (args, want) in cases {
            let err = parse(args).unwrap_err();
            assert!(err.contains(want), "{args:?}: {err}");
            assert!(!err.contains('\n'), "{args:?}: one line, got {err:?}");
        }
    }

    #[test]
    fn help_is_information_not_an_error() {
        let help = parse(&["--help"]).unwrap_err();
        assert!(help.starts_with("info: "), "{help}");
        assert!(help.contains("Exit codes"), "{help}");
        assert!(parse(&["--version"]).unwrap_err().contains(crate::VERSION));
    }

    #[test]
    fn paths_are_encoded() {
        assert_eq!(
            check_path("/events/timer/sec/1").unwrap(),
            "/events/timer/sec/1"
        );
        assert_eq!(check_path("/events/a b#c").unwrap(), "/events/a%20b%23c");
        assert_eq!(check_path("/events/é").unwrap(), "/events/%C3%A9");
        assert_eq!(check_path("/events/50%").unwrap(), "/events/50%25");
        assert_eq!(check_path("/events/a%2Fb").unwrap(), "/events/a%2Fb");
        assert_eq!(
            check_path("/events?replace=true").unwrap(),
            "/events?replace=true"
        );
        assert!(check_path("").is_err());
    }

    #[test]
    fn topics_are_literal_in_their_path() {
        assert_eq!(topic_path("timer/sec/1"), "/events/timer/sec/1");
        assert_eq!(
            topic_path("a b?c%d#é+"),
            "/events/a%20b%3Fc%25d%23%C3%A9%2B"
        );
    }
}
