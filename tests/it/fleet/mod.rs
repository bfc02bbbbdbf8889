//! `manage` on several repeaters at once: three real `app-event-repeater run`
//! processes with TCP APIs, reached with `--host`, the global `-H`, named
//! hosts and groups from the config file; a host that is down; `status`,
//! and `status --watch` in a real terminal (tmux).

use crate::common;

use std::path::Path;
use std::process::Command;

use common::repeater::{Repeater, RepeaterBuilder};
use common::run::Ran;
use common::{plugin_bin, Sandbox};
use serde_json::Value;

mod api_limits;
mod hosts;
mod netns;
mod unserved;

/// Runs `cmd` with no stdin, killing it (and failing) when it hangs.
fn run_bounded(cmd: Command) -> Ran {
    common::run::Run::new(cmd).assert()
}

fn manage(sb: &Sandbox, args: &[&str]) -> Ran {
    let mut cmd = sb.command(plugin_bin("app-event-repeater-manage"));
    cmd.args(args);
    run_bounded(cmd)
}

/// `app ARGS…`: the dispatcher passes `-H` to the plugin in its context.
fn app(sb: &Sandbox, args: &[&str]) -> Ran {
    let mut cmd = sb.app();
    cmd.args(args);
    run_bounded(cmd)
}

fn repeater<'a>(sb: &'a Sandbox, name: &str) -> RepeaterBuilder<'a> {
    Repeater::builder(sb, name)
        .sinkprotocol("stderr")
        .no_source()
        .args(["--listen", "127.0.0.1:0"])
}

/// The routes of a repeater, read on its own unix socket (not through the
/// command under test), as sorted (source, sink) pairs.
fn routes_of(r: &Repeater) -> Vec<(String, String)> {
    let (status, body) = r.get("/events");
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("routes JSON");
    let mut out: Vec<(String, String)> = v
        .as_array()
        .expect("array")
        .iter()
        .map(|r| {
            (
                r["sourcetopic"].as_str().unwrap_or_default().to_string(),
                r["sinktopic"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    // Private, as a user keeps a token file: one others can read is warned about.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    path.to_string_lossy().into_owned()
}

const ROUTES: &str =
    r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"},{"sourcetopic":"timer/min/"}]"#;

fn want() -> Vec<(String, String)> {
    vec![
        ("timer/min/".to_string(), String::new()),
        ("timer/sec/1".to_string(), "/time/1s".to_string()),
    ]
}
