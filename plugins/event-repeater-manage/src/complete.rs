//! `__complete <words…>`: shell completion candidates in cobra's protocol,
//! one per line (`candidate<TAB>description`), then `:<directive>`.
//!
//! `--path /events/<TAB>` asks the running repeater for its routes, within
//! 300 ms in all; on any failure there are simply no candidates. Nothing is
//! ever written to stderr while completing.

use std::path::PathBuf;
use std::time::Duration;

use crate::http::Client;
use crate::routes;
use crate::target::{self, Endpoint};

/// Directive: no space after the candidate.
pub const NO_SPACE: u8 = 2;
/// Directive: no file completion.
pub const NO_FILE: u8 = 4;
/// Directive: keep the candidates in this order.
pub const KEEP_ORDER: u8 = 32;
/// Directive: let the shell complete file names.
pub const DEFAULT: u8 = 0;

/// How long the route lookup for `--path` may take, connecting included.
pub const ROUTES_TIMEOUT: Duration = Duration::from_millis(300);

const SUBCOMMANDS: &[(&str, &str)] = &[
    ("get", "show routes"),
    ("post", "add routes"),
    ("put", "add or update routes"),
    ("delete", "remove routes"),
    ("apply", "make the routes those of a file"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Switch,
    Name,
    Host,
    Token,
    Timeout,
    Output,
    Path,
    Value,
    File,
    Op,
    Resource,
}

struct Flag {
    long: &'static str,
    short: Option<&'static str>,
    kind: Kind,
    help: &'static str,
}

const fn flag(long: &'static str, kind: Kind, help: &'static str) -> Flag {
    Flag {
        long,
        short: None,
        kind,
        help,
    }
}

const COMMON: &[Flag] = &[
    flag("--name", Kind::Name, "the repeater's name"),
    flag(
        "--host",
        Kind::Host,
        "the API address (unix:///x.sock, http://127.0.0.1:PORT)",
    ),
    flag("--token", Kind::Token, "bearer token for a TCP API"),
    flag("--timeout", Kind::Timeout, "seconds before giving up"),
    Flag {
        long: "--output",
        short: Some("-o"),
        kind: Kind::Output,
        help: "json or table",
    },
    Flag {
        long: "--help",
        short: Some("-h"),
        kind: Kind::Switch,
        help: "show help",
    },
];
const PATH: Flag = flag(
    "--path",
    Kind::Path,
    "the API path, /events[/<sourcetopic>]",
);
const VALUE: Flag = flag("--value", Kind::Value, "JSON, @file.json or - for stdin");
const OLD_FORM: &[Flag] = &[
    flag("--op", Kind::Op, "old form: 1 post, 2 delete, 3 put, 4 get"),
    flag("--resource", Kind::Resource, "old form: event"),
    PATH,
    VALUE,
    flag("--version", Kind::Switch, "show the version"),
];
const APPLY: &[Flag] = &[
    Flag {
        long: "--file",
        short: Some("-f"),
        kind: Kind::File,
        help: "the routes file",
    },
    flag(
        "--dry-run",
        Kind::Switch,
        "show the difference, change nothing",
    ),
];

fn flags_for(sub: Option<&str>) -> Vec<&'static Flag> {
    let own: &[Flag] = match sub {
        None => OLD_FORM,
        Some("get") => std::slice::from_ref(&PATH),
        Some("apply") => APPLY,
        Some(_) => &[PATH, VALUE],
    };
    own.iter().chain(COMMON).collect()
}

fn find_flag(word: &str) -> Option<&'static Flag> {
    OLD_FORM
        .iter()
        .chain(APPLY)
        .chain(COMMON)
        .find(|f| f.long == word || f.short == Some(word))
}

/// What completion needs from the outside world.
pub trait Env {
    /// Source topics of the repeater `name` (or at `host`), or `None` when it
    /// cannot be asked in time.
    fn routes(&self, name: &str, host: Option<&str>, token: Option<&str>) -> Option<Vec<String>>;
    /// Names of running plugin instances (from the runtime directory).
    fn names(&self) -> Vec<String>;
    /// Files and directories whose path starts with `partial`: (path, is_dir).
    fn files(&self, partial: &str) -> Vec<(String, bool)>;
}

/// Candidates and a directive.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// `(candidate, description)`.
    pub candidates: Vec<(String, String)>,
    /// cobra's directive bitmask.
    pub directive: u8,
}

impl Completion {
    fn none(directive: u8) -> Completion {
        Completion {
            candidates: Vec::new(),
            directive,
        }
    }

    /// The lines to print.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (c, d) in &self.candidates {
            if d.is_empty() {
                out.push_str(&format!("{c}\n"));
            } else {
                out.push_str(&format!("{c}\t{d}\n"));
            }
        }
        out.push_str(&format!(":{}\n", self.directive));
        out
    }
}

/// Answers `__complete` for `words` (the last is the word being completed).
pub fn run(words: &[String]) -> String {
    // A panic must not reach the terminal in the middle of a completion.
    std::panic::set_hook(Box::new(|_| {}));
    let env = LiveEnv::new();
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        answer(words, &env).render()
    }))
    .unwrap_or_else(|_| format!(":{NO_FILE}\n"))
}

/// The candidates for `words`.
pub fn answer(words: &[String], env: &dyn Env) -> Completion {
    let (current, done) = match words.split_last() {
        Some((last, done)) => (last.as_str(), done),
        None => ("", &[][..]),
    };
    let mut sub: Option<&str> = None;
    let mut pending: Option<&Flag> = None;
    let mut used: Vec<&str> = Vec::new();
    let mut settings = Settings::default();
    let mut old_form = false;
    for word in done {
        if let Some(f) = pending.take() {
            settings.record(f.kind, word);
            continue;
        }
        if let Some((name, value)) = word.split_once('=').filter(|_| word.starts_with("--")) {
            if let Some(f) = find_flag(name) {
                settings.record(f.kind, value);
                used.push(f.long);
                old_form |= f.kind == Kind::Op;
            }
            continue;
        }
        if word.starts_with('-') && word.len() > 1 {
            if let Some(f) = find_flag(word) {
                used.push(f.long);
                old_form |= f.kind == Kind::Op;
                if f.kind != Kind::Switch {
                    pending = Some(f);
                }
            }
            continue;
        }
        if sub.is_none() && !old_form && SUBCOMMANDS.iter().any(|(s, _)| s == word) {
            sub = Some(word.as_str());
        }
    }
    if let Some(f) = pending {
        return values(f.kind, current, "", &settings, env);
    }
    if let Some((name, value)) = current
        .split_once('=')
        .filter(|_| current.starts_with("--"))
    {
        return match find_flag(name) {
            Some(f) if f.kind != Kind::Switch => {
                values(f.kind, value, &format!("{name}="), &settings, env)
            }
            _ => Completion::none(NO_FILE),
        };
    }
    if current.starts_with('-') {
        let candidates = flags_for(sub)
            .into_iter()
            .filter(|f| !used.contains(&f.long))
            .flat_map(|f| {
                let short = f.short.map(|s| (s.to_string(), f.help.to_string()));
                std::iter::once((f.long.to_string(), f.help.to_string())).chain(short)
            })
            .filter(|(c, _)| c.starts_with(current))
            .collect();
        return Completion {
            candidates,
            directive: NO_FILE,
        };
    }
    if sub.is_none() && !old_form {
        let candidates = SUBCOMMANDS
            .iter()
            .filter(|(s, _)| s.starts_with(current))
            .map(|(s, d)| (s.to_string(), d.to_string()))
            .collect();
        return Completion {
            candidates,
            directive: NO_FILE | KEEP_ORDER,
        };
    }
    Completion::none(NO_FILE)
}

/// The connection flags seen so far, for the route lookup.
#[derive(Default)]
struct Settings {
    name: Option<String>,
    host: Option<String>,
    token: Option<String>,
}

impl Settings {
    fn record(&mut self, kind: Kind, value: &str) {
        match kind {
            Kind::Name => self.name = Some(value.to_string()),
            Kind::Host => self.host = Some(value.to_string()),
            Kind::Token => self.token = Some(value.to_string()),
            _ => {}
        }
    }
}

fn fixed(prefix: &str, current: &str, items: &[(&str, &str)], directive: u8) -> Completion {
    Completion {
        candidates: items
            .iter()
            .filter(|(v, _)| v.starts_with(current))
            .map(|(v, d)| (format!("{prefix}{v}"), d.to_string()))
            .collect(),
        directive,
    }
}

fn values(kind: Kind, current: &str, prefix: &str, s: &Settings, env: &dyn Env) -> Completion {
    let list = |items: Vec<String>| Completion {
        candidates: items
            .into_iter()
            .filter(|v| v.starts_with(current))
            .map(|v| (format!("{prefix}{v}"), String::new()))
            .collect(),
        directive: NO_FILE,
    };
    match kind {
        Kind::Output => fixed(prefix, current, &[("json", ""), ("table", "")], NO_FILE),
        Kind::Op => fixed(
            prefix,
            current,
            &[
                ("1", "add (post)"),
                ("2", "delete"),
                ("3", "update (put)"),
                ("4", "read (get)"),
            ],
            NO_FILE | KEEP_ORDER,
        ),
        Kind::Resource => fixed(
            prefix,
            current,
            &[("event", "the routes, /events")],
            NO_FILE,
        ),
        Kind::Name => list(env.names()),
        Kind::Path => {
            let name = s.name.as_deref().unwrap_or(crate::DEFAULT_NAME);
            match env.routes(name, s.host.as_deref(), s.token.as_deref()) {
                Some(topics) => list(
                    std::iter::once("/events".to_string())
                        .chain(topics.iter().map(|t| format!("/events/{t}")))
                        .collect(),
                ),
                None => Completion::none(NO_FILE),
            }
        }
        Kind::Value => match current.strip_prefix('@') {
            Some(partial) => {
                let files = env.files(partial);
                let only_dir = files.len() == 1 && files[0].1;
                Completion {
                    candidates: files
                        .into_iter()
                        .map(|(p, _)| (format!("{prefix}@{p}"), String::new()))
                        .collect(),
                    directive: if only_dir {
                        NO_FILE | NO_SPACE
                    } else {
                        NO_FILE
                    },
                }
            }
            None => Completion::none(NO_FILE),
        },
        Kind::File => Completion::none(DEFAULT),
        Kind::Host | Kind::Token | Kind::Timeout | Kind::Switch => Completion::none(NO_FILE),
    }
}

/// The real world: the runtime directory, the repeater, the file system.
struct LiveEnv {
    plugin_dir: PathBuf,
    hosts: Vec<String>,
}

impl LiveEnv {
    fn new() -> LiveEnv {
        // From the environment only: stdin is the terminal's while completing.
        let ctx = app_plugin::context::Context::from_env();
        LiveEnv {
            plugin_dir: ctx.dirs().plugin_runtime_dir(),
            hosts: ctx.hosts,
        }
    }
}

impl Env for LiveEnv {
    fn routes(&self, name: &str, host: Option<&str>, token: Option<&str>) -> Option<Vec<String>> {
        let host = host.map(Endpoint::parse).transpose().ok()?;
        let target = target::find(name, host.as_ref(), &self.hosts, &self.plugin_dir).ok()?;
        let token = token
            .map(String::from)
            .or_else(|| std::env::var("APP_TOKEN").ok())
            .filter(|t| !t.is_empty());
        let reply = Client::new(&target.endpoint, token, ROUTES_TIMEOUT)
            .send("GET", "/events", None)
            .ok()?;
        if reply.status != 200 {
            return None;
        }
        let value = serde_json::from_str(&reply.body).ok()?;
        let routes = routes::from_server(&value).ok()?;
        Some(routes.into_iter().map(|r| r.sourcetopic).collect())
    }

    fn names(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(&self.plugin_dir) else {
            return Vec::new();
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| {
                let file = e.file_name().to_string_lossy().into_owned();
                file.strip_suffix(".sock")
                    .or_else(|| file.strip_suffix(".listen"))
                    .map(String::from)
            })
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn files(&self, partial: &str) -> Vec<(String, bool)> {
        let (dir, base) = match partial.rfind('/') {
            Some(i) => (&partial[..=i], &partial[i + 1..]),
            None => ("", partial),
        };
        let Ok(entries) = std::fs::read_dir(if dir.is_empty() { "." } else { dir }) else {
            return Vec::new();
        };
        let mut files: Vec<(String, bool)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                if !name.starts_with(base) || (name.starts_with('.') && !base.starts_with('.')) {
                    return None;
                }
                let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                let slash = if is_dir { "/" } else { "" };
                Some((format!("{dir}{name}{slash}"), is_dir))
            })
            .collect();
        files.sort();
        files
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// (name, host, token) of a route lookup.
    type Asked = (String, Option<String>, Option<String>);

    #[derive(Default)]
    struct FakeEnv {
        topics: Option<Vec<String>>,
        asked: RefCell<Vec<Asked>>,
    }

    impl Env for FakeEnv {
        fn routes(
            &self,
            name: &str,
            host: Option<&str>,
            token: Option<&str>,
        ) -> Option<Vec<String>> {
            self.asked.borrow_mut().push((
                name.to_string(),
                host.map(String::from),
                token.map(String::from),
            ));
            self.topics.clone()
        }
        fn names(&self) -> Vec<String> {
            vec!["event-repeater".into(), "r1".into()]
        }
        fn files(&self, partial: &str) -> Vec<(String, bool)> {
            [("routes.json", false), ("routes/", true)]
                .into_iter()
                .filter(|(f, _)| f.starts_with(partial))
                .map(|(f, d)| (f.to_string(), d))
                .collect()
        }
    }

    fn complete(words: &[&str], env: &FakeEnv) -> String {
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        answer(&words, env).render()
    }

    fn routes_env() -> FakeEnv {
        FakeEnv {
            topics: Some(vec!["timer/sec/1".into(), "timer/min/1".into()]),
            ..FakeEnv::default()
        }
    }

    #[test]
    fn first_word_offers_subcommands_in_order() {
        let out = complete(&[""], &FakeEnv::default());
        let names: Vec<&str> = out.lines().map(|l| l.split('\t').next().unwrap()).collect();
        assert_eq!(names, ["get", "post", "put", "delete", "apply", ":36"]);
        assert_eq!(
            complete(&["p"], &FakeEnv::default()),
            "post\tadd routes\nput\tadd or update routes\n:36\n"
        );
        assert_eq!(complete(&[], &FakeEnv::default()).lines().count(), 6);
    }

    #[test]
    fn flags_per_subcommand() {
        let env = FakeEnv::default();
        let out = complete(&["apply", "--"], &env);
        assert!(
            out.contains("--file\t") && out.contains("--dry-run\t"),
            "{out}"
        );
        assert!(!out.contains("--value"), "{out}");
        let out = complete(&["get", "--"], &env);
        assert!(
            out.contains("--path\t") && out.contains("--name\t"),
            "{out}"
        );
        assert!(!out.contains("--value") && !out.contains("--op"), "{out}");
        let out = complete(&["post", "--v"], &env);
        assert_eq!(out, "--value\tJSON, @file.json or - for stdin\n:4\n");
        let out = complete(&["--o"], &env);
        assert!(
            out.contains("--op\t") && out.contains("--output\t"),
            "{out}"
        );
    }

    #[test]
    fn used_flags_are_not_offered_again() {
        let out = complete(
            &["delete", "--path", "/events/x", "--pa"],
            &FakeEnv::default(),
        );
        assert_eq!(out, ":4\n");
    }

    #[test]
    fn path_offers_the_running_routes() {
        let env = routes_env();
        let out = complete(&["delete", "--path", "/events/"], &env);
        assert_eq!(out, "/events/timer/sec/1\n/events/timer/min/1\n:4\n");
        let out = complete(&["get", "--path", ""], &env);
        assert!(out.starts_with("/events\n"), "{out}");
        let out = complete(&["delete", "--path=/events/timer/s"], &env);
        assert_eq!(out, "--path=/events/timer/sec/1\n:4\n");
    }

    #[test]
    fn path_lookup_uses_name_host_and_token_from_the_line() {
        let env = routes_env();
        complete(
            &[
                "--name",
                "r1",
                "delete",
                "--host=unix:///x.sock",
                "--token",
                "t",
                "--path",
                "",
            ],
            &env,
        );
        assert_eq!(
            env.asked.borrow()[0],
            ("r1".into(), Some("unix:///x.sock".into()), Some("t".into()))
        );
    }

    #[test]
    fn unreachable_repeater_gives_only_the_directive() {
        assert_eq!(
            complete(&["delete", "--path", "/events/"], &FakeEnv::default()),
            ":4\n"
        );
    }

    #[test]
    fn flag_values() {
        let env = FakeEnv::default();
        assert_eq!(complete(&["get", "-o", ""], &env), "json\ntable\n:4\n");
        assert_eq!(complete(&["get", "--output", "t"], &env), "table\n:4\n");
        let out = complete(&["--op", ""], &env);
        assert!(
            out.starts_with("1\tadd (post)\n2\tdelete\n3\tupdate (put)\n4\tread (get)\n"),
            "{out}"
        );
        assert_eq!(
            complete(&["--resource", "e"], &env),
            "event\tthe routes, /events\n:4\n"
        );
        assert_eq!(complete(&["get", "--name", "r"], &env), "r1\n:4\n");
        assert_eq!(complete(&["apply", "-f", ""], &env), ":0\n");
        assert_eq!(complete(&["get", "--timeout", ""], &env), ":4\n");
    }

    #[test]
    fn at_file_values_complete_files() {
        let env = FakeEnv::default();
        assert_eq!(
            complete(&["post", "--value", "@routes."], &env),
            "@routes.json\n:4\n"
        );
        assert_eq!(
            complete(&["post", "--value", "@routes/"], &env),
            "@routes/\n:6\n"
        );
        assert_eq!(complete(&["post", "--value", "{"], &env), ":4\n");
    }

    #[test]
    fn no_subcommands_after_one_or_after_op() {
        let env = FakeEnv::default();
        assert_eq!(complete(&["get", ""], &env), ":4\n");
        assert_eq!(complete(&["--op", "1", ""], &env), ":4\n");
    }
}
