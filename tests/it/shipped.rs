//! The shipped plugins reached through `app` itself, the way a user runs them:
//! longest match picks `app-event-repeater-manage` for `app event-repeater
//! manage …`, and TAB completes their arguments in real shells.

use crate::common;

use std::process::{Command, Output, Stdio};

use common::completion::{assert_offers, Completer, Interactive, Shell};
use common::repeater::Repeater;
use common::Sandbox;

/// `app event-repeater run --sinkprotocol stderr`, started through `app`.
fn start_repeater<'a>(sb: &'a Sandbox, name: &str) -> Repeater<'a> {
    Repeater::builder(sb, name)
        .through_app()
        .sinkprotocol("stderr")
        .no_source()
        .start()
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd.stdin(Stdio::null()).output().expect("run app");
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_manager_is_reached_by_longest_match_and_the_repeater_by_its_own_name() {
    let sb = Sandbox::new();
    let path = run(sb
        .app()
        .args(["plugin", "path", "event-repeater", "manage"]));
    assert!(text(&path.stdout)
        .trim()
        .ends_with("/app-event-repeater-manage"));
    let path = run(sb.app().args(["plugin", "path", "event-repeater", "run"]));
    assert!(text(&path.stdout).trim().ends_with("/app-event-repeater"));

    let _r = start_repeater(&sb, "r1");
    let post = run(sb.app().args([
        "event-repeater",
        "manage",
        "post",
        "--name",
        "r1",
        "--value",
        r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}]"#,
    ]));
    assert!(post.status.success(), "{}", text(&post.stderr));
    let table = run(sb.app().args([
        "event-repeater",
        "manage",
        "get",
        "--name",
        "r1",
        "-o",
        "table",
    ]));
    assert!(table.status.success(), "{}", text(&table.stderr));
    let t = text(&table.stdout);
    assert!(t.contains("timer/sec/1") && t.contains("/time/1s"), "{t}");

    // The global -H reaches the manager through its context.
    let socket = sb.plugin_runtime_dir().join("r1.sock");
    let via_host = run(sb
        .app()
        .arg("-H")
        .arg(format!("unix://{}", socket.display()))
        .args(["event-repeater", "manage", "get", "--name", "not-this-one"]));
    assert!(via_host.status.success(), "{}", text(&via_host.stderr));
    assert!(text(&via_host.stdout).contains("/time/1s"));
}

#[test]
fn a_manager_without_a_repeater_says_how_to_start_one() {
    let sb = Sandbox::new();
    let out = run(sb
        .app()
        .args(["event-repeater", "manage", "get", "--name", "r9"]));
    assert_eq!(out.status.code(), Some(3));
    let err = text(&out.stderr);
    assert!(
        err.contains("no event repeater named 'r9' is running")
            && err.contains("app event-repeater run --name r9"),
        "{err}"
    );
}

#[test]
fn an_alias_reaches_the_manager() {
    let sb = Sandbox::new();
    let _r = start_repeater(&sb, "event-repeater");
    sb.write_config(r#"{"aliases": {"routes": "event-repeater manage get -o table"}}"#);
    let out = run(sb.app().arg("routes"));
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("SOURCE TOPIC"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn tab_completes_the_shipped_plugins_in_bash_and_fish() {
    let sb = Sandbox::new();
    for shell in [Shell::Bash, Shell::Fish]
        .into_iter()
        .filter(|s| s.available())
    {
        assert_offers(
            &sb,
            shell,
            "app ",
            &["event-repeater", "event-time", "plugin"],
        );
        assert_offers(&sb, shell, "app event-repeater ", &["run", "manage"]);
        assert_offers(
            &sb,
            shell,
            "app event-repeater manage ",
            &["get", "post", "put", "delete", "apply"],
        );
        assert_offers(
            &sb,
            shell,
            "app event-repeater run --sinkprotocol ",
            &["mqtt", "stderr"],
        );
    }
}

#[test]
fn tab_offers_the_routes_of_the_running_repeater() {
    let sb = Sandbox::new();
    let _r = start_repeater(&sb, "event-repeater");
    let post = run(sb.app().args([
        "event-repeater",
        "manage",
        "post",
        "--value",
        r#"[{"sourcetopic":"timer/sec/1"},{"sourcetopic":"timer/min/"}]"#,
    ]));
    assert!(post.status.success(), "{}", text(&post.stderr));
    assert_offers(
        &sb,
        Shell::Bash,
        "app event-repeater manage delete --path /events/",
        &["/events/timer/sec/1", "/events/timer/min/"],
    );
}

#[test]
fn interactive_bash_tab_completes_a_shipped_plugins_subcommand() {
    if !Interactive::Bash.available() {
        return;
    }
    let sb = Sandbox::new();
    let completer = Completer::new(&sb);
    let tmux = completer.tmux(Interactive::Bash);
    tmux.tab("app event-repeater ", &["run", "manage"]);
}
