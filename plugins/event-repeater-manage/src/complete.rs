//! `__complete <words…>`: completion derived from the clap definition
//! ([`crate::cli::Cli`]) by the SDK ([`app_plugin::cli::complete`]); this
//! module adds only the values the plugin knows: running repeaters for
//! `--name`, the running routes for `--path` and a SOURCETOPIC, files for
//! `--value @…`.
//!
//! `--path /events/<TAB>` asks the running repeater for its routes, within
//! 300 ms in all; on any failure there are simply no candidates. Nothing is
//! ever written to stderr while completing.

use std::path::PathBuf;
use std::time::Duration;

use app_event_repeater_api::path;
use app_plugin::cli::{Query, Values};
use app_plugin::complete::{Candidate, Completion, Directive};
use clap::CommandFactory;

use crate::address::Endpoint;
use crate::remote::http::Client;
use crate::routes;
use crate::target;

/// How long the route lookup for `--path` may take, connecting included.
pub const ROUTES_TIMEOUT: Duration = Duration::from_millis(300);

/// What completion needs from the outside world.
pub trait Env {
    /// Source topics of the repeater `name` (or at `host`), or `None` when it
    /// cannot be asked in time.
    fn routes(&self, name: &str, host: Option<&str>, token: Option<&str>) -> Option<Vec<String>>;
    /// Names of running plugin instances (from the runtime directory).
    fn names(&self) -> Vec<String>;
    /// Files and directories whose path starts with `partial`: (path, is_dir).
    fn files(&self, partial: &str) -> Vec<(String, bool)>;
    /// Named hosts and `@groups` of the config file.
    fn host_names(&self) -> Vec<String>;
}

/// The completion of `words` (the last is the word being completed) in the
/// real world.
pub fn live(words: &[String]) -> Completion {
    answer(words, &LiveEnv::new())
}

/// The candidates for `words`.
pub fn answer(words: &[String], env: &dyn Env) -> Completion {
    app_plugin::cli::complete(&crate::cli::Cli::command(), words, &Own(env))
}

/// The plugin's own values, for the SDK's completion.
struct Own<'a>(&'a dyn Env);

impl Values for Own<'_> {
    fn values(&self, q: &Query) -> Option<Completion> {
        let plain = |items: Vec<String>| {
            Completion::matching(q.current, items.into_iter().map(Candidate::new))
        };
        match q.arg {
            "name" => Some(plain(self.0.names())),
            "host" => Some(plain(self.0.host_names())),
            "reason" => Some(plain(
                app_event_repeater_api::dead_letter::REASONS
                    .map(String::from)
                    .to_vec(),
            )),
            "path" | "sourcetopic" | "route" => {
                let name = q.given("name").unwrap_or(crate::DEFAULT_NAME);
                let topics = self.0.routes(name, q.given("host"), q.given("token"));
                Some(topics.map_or_else(Completion::nothing, |topics| {
                    if q.arg != "path" {
                        return plain(topics);
                    }
                    plain(
                        std::iter::once(path::EVENTS.to_string())
                            .chain(topics.iter().map(|t| path::event(t)))
                            .collect(),
                    )
                }))
            }
            "value" => Some(match q.current.strip_prefix('@') {
                Some(partial) => {
                    let files = self.0.files(partial);
                    // A lone directory: no space, so that TAB goes on into it.
                    let only_dir = files.len() == 1 && files[0].1;
                    let mut out = Completion::matching(
                        "",
                        files
                            .into_iter()
                            .map(|(p, _)| Candidate::new(format!("@{p}"))),
                    );
                    if only_dir {
                        out.directive |= Directive::NO_SPACE;
                    }
                    out
                }
                None => Completion::nothing(),
            }),
            _ => None,
        }
    }
}

/// The real world: the runtime directory, the repeater, the file system.
struct LiveEnv {
    plugin_dir: PathBuf,
    hosts: Vec<String>,
    config: PathBuf,
}

impl LiveEnv {
    fn new() -> LiveEnv {
        // From the environment only: stdin is the terminal's while completing.
        let ctx = app_plugin::context::Context::from_env();
        LiveEnv {
            plugin_dir: ctx.dirs().plugin_runtime_dir(),
            hosts: ctx.hosts,
            config: ctx.config,
        }
    }
}

impl Env for LiveEnv {
    fn host_names(&self) -> Vec<String> {
        let Ok(inv) = crate::hosts::Inventory::load(&self.config) else {
            return Vec::new();
        };
        inv.hosts
            .keys()
            .cloned()
            .chain(inv.groups.keys().map(|g| format!("@{g}")))
            .collect()
    }

    fn routes(&self, name: &str, host: Option<&str>, token: Option<&str>) -> Option<Vec<String>> {
        let host = host.map(Endpoint::parse).transpose().ok()?;
        let target = target::find(name, host.as_ref(), &self.hosts, &self.plugin_dir).ok()?;
        let token = token
            .map(String::from)
            .or_else(|| std::env::var("APP_TOKEN").ok())
            .filter(|t| !t.is_empty());
        let reply = Client::new(&target.endpoint, token, ROUTES_TIMEOUT)
            .send("GET", path::EVENTS, None)
            .ok()?;
        if reply.status != 200 {
            return None;
        }
        let value = serde_json::from_str(&reply.body).ok()?;
        let routes = routes::from_server(&value).ok()?;
        Some(routes.into_iter().map(|r| r.sourcetopic).collect())
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = crate::target::local_dirs(&self.plugin_dir)
            .iter()
            .filter_map(|dir| std::fs::read_dir(dir).ok())
            .flat_map(|entries| entries.flatten())
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
        fn host_names(&self) -> Vec<String> {
            vec!["edge1".into(), "edge2".into(), "@edges".into()]
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
        assert_eq!(
            names,
            [
                "get",
                "post",
                "put",
                "delete",
                "apply",
                "status",
                "top",
                "dead-letters",
                "tap",
                ":36"
            ]
        );
        let out = complete(&["p"], &FakeEnv::default());
        let names: Vec<&str> = out.lines().map(|l| l.split('\t').next().unwrap()).collect();
        assert_eq!(names, ["post", "put", ":36"]);
        assert!(out.starts_with("post\tAdd routes"), "{out}");
        assert_eq!(complete(&[], &FakeEnv::default()).lines().count(), 10);
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
        assert_eq!(
            out,
            "--value\tJSON inline, @file.json, or - for stdin\n:4\n"
        );
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
        assert_eq!(
            complete(&["get", "--host", "ed"], &env),
            "edge1\nedge2\n:4\n"
        );
        assert_eq!(complete(&["status", "--host", "@"], &env), "@edges\n:4\n");
        assert_eq!(complete(&["top", "--host", "@"], &env), "@edges\n:4\n");
        let out = complete(&["top", "--"], &env);
        assert!(
            out.contains("--interval\t") && !out.contains("--watch"),
            "{out}"
        );
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
        let env = routes_env();
        assert_eq!(
            complete(&["get", ""], &env),
            "timer/sec/1\ntimer/min/1\n:4\n",
            "a SOURCETOPIC: the running routes"
        );
        assert_eq!(complete(&["delete", "timer/m"], &env), "timer/min/1\n:4\n");
        assert_eq!(
            complete(&["tap", "--route", "timer/s"], &env),
            "timer/sec/1\n:4\n",
            "tap --route: the running routes"
        );
        assert_eq!(complete(&["put", "timer/sec/1", ""], &env), ":4\n");
        let after_op = complete(&["--op", "1", ""], &env);
        assert!(
            after_op.contains("--resource\t") && !after_op.contains("--op\t"),
            "only flags after --op: {after_op}"
        );
    }
}
