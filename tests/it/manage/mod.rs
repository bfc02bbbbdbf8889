//! `app-event-repeater-manage` against a real `app-event-repeater run
//! --sinkprotocol stderr`: every command and form, over the unix socket and
//! over TCP, and every error with its exit code and message.
//!
//! Each test starts its own repeater in its own sandbox (no event source runs:
//! the repeater keeps retrying it, and its API works meanwhile).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::repeater::{Repeater, RepeaterBuilder};
use common::run::Ran;
use common::{plugin_bin, Sandbox};
use serde_json::Value;

mod commands;
mod errors;
mod events;
mod input;
mod reach;
mod top;

const MANAGE: &str = "app-event-repeater-manage";

const PROGRAM: &str = "app-event-repeater-manage: ";

/// The manager's failures: one line on stderr, starting with its name.
trait Fails {
    fn fails(self, code: i32, text: &str) -> Ran;
}

impl Fails for Ran {
    /// Checks the exit code and that stderr is exactly one line starting with
    /// the program name and containing `text`.
    #[track_caller]
    fn fails(self, code: i32, text: &str) -> Ran {
        assert_eq!(self.exit(), code, "{self:?}");
        assert_eq!(self.stdout, "", "{self:?}");
        assert!(self.stderr.starts_with(PROGRAM), "{self:?}");
        assert_eq!(self.stderr.lines().count(), 1, "one line: {self:?}");
        assert!(self.stderr.contains(text), "want {text:?} in {self:?}");
        self
    }
}

/// Runs `cmd` with `stdin`, killing it (and failing) when it hangs.
fn run_bounded(cmd: Command, stdin: &str) -> Ran {
    common::run::Run::new(cmd).stdin(stdin).assert()
}

fn manage_cmd(sb: &Sandbox) -> Command {
    sb.command(plugin_bin(MANAGE))
}

fn manage(sb: &Sandbox, args: &[&str]) -> Ran {
    manage_in(sb, args, "")
}

fn manage_in(sb: &Sandbox, args: &[&str], stdin: &str) -> Ran {
    let mut cmd = manage_cmd(sb);
    cmd.args(args);
    run_bounded(cmd, stdin)
}

/// `app-event-repeater run --name NAME --sinkprotocol stderr` with a source
/// that does not exist (the builder's other settings override these).
fn repeater<'a>(sb: &'a Sandbox, name: &str) -> RepeaterBuilder<'a> {
    Repeater::builder(sb, name)
        .sinkprotocol("stderr")
        .no_source()
}

/// The repeater's routes as a sorted list of (source, sink) pairs.
fn routes(sb: &Sandbox, name: &str) -> Vec<(String, String)> {
    let run = manage(sb, &["get", "--name", name]).ok();
    let mut routes: Vec<(String, String)> = run
        .json()
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            (
                r["sourcetopic"].as_str().expect("sourcetopic").to_string(),
                r.get("sinktopic")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect();
    routes.sort();
    routes
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = list
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    v.sort();
    v
}

fn write(dir: &Path, file: &str, text: &str) -> PathBuf {
    let path = dir.join(file);
    std::fs::write(&path, text).expect("write file");
    path
}
