//! `app-event-repeater-manage` against a real `app-event-repeater run
//! --sinkprotocol stderr`: every command and form, over the unix socket and
//! over TCP, and every error with its exit code and message.
//!
//! Each test starts its own repeater in its own sandbox (no event source runs:
//! the repeater keeps retrying it, and its API works meanwhile).

use crate::common;

use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::broker::{Broker, Subscriber};
use common::event_time::EventTime;
use common::repeater::{Repeater, RepeaterBuilder};
use common::run::Ran;
use common::{plugin_bin, wait_for, Sandbox};
use serde_json::{json, Value};

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

#[test]
fn metadata_is_one_json_line() {
    let sb = Sandbox::new();
    let run = manage(&sb, &["__app_metadata"]).ok();
    assert_eq!(run.stdout.lines().count(), 1);
    let meta = run.json();
    assert_eq!(meta["apiVersion"], "app.plugin/v1");
    assert_eq!(meta["name"], "event-repeater-manage");
    assert_eq!(
        meta["description"],
        "Change a running event repeater's routes"
    );
    assert_eq!(meta["completion"], true);
    assert!(meta["version"].as_str().is_some_and(|v| !v.is_empty()));
}

#[test]
fn every_command_over_the_unix_socket() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "r1").start();
    assert_eq!(manage(&sb, &["get", "--name", "r1"]).ok().json(), json!([]));

    // post: one object, then an array.
    manage(
        &sb,
        &[
            "post",
            "--name",
            "r1",
            "--value",
            r#"{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"}"#,
        ],
    )
    .ok();
    manage(
        &sb,
        &[
            "--name",
            "r1",
            "post",
            "--value",
            r#"[{"sourcetopic":"timer/sec/5","sinktopic":"/time/5s"},{"sourcetopic":"timer/min/1"}]"#,
        ],
    )
    .ok();
    assert_eq!(
        routes(&sb, "r1"),
        pairs(&[
            ("timer/sec/1", "/time/1s"),
            ("timer/sec/5", "/time/5s"),
            ("timer/min/1", "")
        ])
    );

    // get one route by path.
    let one = manage(
        &sb,
        &["get", "--name", "r1", "--path", "/events/timer/sec/1"],
    )
    .ok()
    .json();
    assert_eq!(one["sourcetopic"], "timer/sec/1");
    assert_eq!(one["sinktopic"], "/time/1s");

    // put: upsert on /events, then one route by path.
    manage(
        &sb,
        &[
            "put",
            "--name",
            "r1",
            "--value",
            r#"[{"sourcetopic":"timer/sec/5","sinktopic":"/five"},{"sourcetopic":"timer/hr/1","sinktopic":"/hour"}]"#,
        ],
    )
    .ok();
    manage(
        &sb,
        &[
            "put",
            "--name",
            "r1",
            "--path",
            "/events/timer/sec/1",
            "--value",
            r#"{"sourcetopic":"timer/sec/1","sinktopic":"/one"}"#,
        ],
    )
    .ok();
    assert_eq!(
        routes(&sb, "r1"),
        pairs(&[
            ("timer/sec/1", "/one"),
            ("timer/sec/5", "/five"),
            ("timer/min/1", ""),
            ("timer/hr/1", "/hour"),
        ])
    );

    // delete: by path, then a list.
    manage(
        &sb,
        &["delete", "--name", "r1", "--path", "/events/timer/hr/1"],
    )
    .ok();
    manage(
        &sb,
        &[
            "delete",
            "--name",
            "r1",
            "--value",
            r#"[{"sourcetopic":"timer/sec/5"},{"sourcetopic":"timer/min/1"}]"#,
        ],
    )
    .ok();
    assert_eq!(routes(&sb, "r1"), pairs(&[("timer/sec/1", "/one")]));

    // PUT /events?replace=true makes the table exactly the value.
    manage(
        &sb,
        &[
            "put",
            "--name",
            "r1",
            "--path",
            "/events?replace=true",
            "--value",
            r#"[{"sourcetopic":"timer/msec/500","sinktopic":"/half"}]"#,
        ],
    )
    .ok();
    assert_eq!(routes(&sb, "r1"), pairs(&[("timer/msec/500", "/half")]));
}

#[test]
fn output_is_compact_json_or_a_table() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "out").start();
    manage(
        &sb,
        &[
            "post",
            "--name",
            "out",
            "--value",
            r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/time/1s"},{"sourcetopic":"timer/msec/100"}]"#,
        ],
    )
    .ok();
    // Not a terminal: one compact line.
    let run = manage(&sb, &["get", "--name", "out"]).ok();
    assert_eq!(run.stdout.lines().count(), 1, "{run:?}");
    assert!(!run.stdout.contains(": "), "compact: {run:?}");

    let table = manage(&sb, &["get", "--name", "out", "-o", "table"])
        .ok()
        .stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines[0], "SOURCE TOPIC    SINK TOPIC", "{table}");
    let mut rows = lines[1..].to_vec();
    rows.sort();
    assert_eq!(
        rows,
        ["timer/msec/100  .", "timer/sec/1     /time/1s"],
        "{table}"
    );
}

#[test]
fn tcp_through_the_listen_file_the_host_flag_and_the_global_host() {
    let sb = Sandbox::new();
    let r = repeater(&sb, "tcp")
        .args(["--listen", "127.0.0.1:0"])
        .start();
    let url = r.url();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    // --host URL.
    manage(
        &sb,
        &[
            "post",
            "--host",
            &url,
            "--value",
            r#"{"sourcetopic":"timer/sec/1","sinktopic":"/tcp"}"#,
        ],
    )
    .ok();

    // Discovery through a listen file: a name that has only `<name>.listen`.
    std::fs::copy(
        sb.plugin_runtime_dir().join("tcp.listen"),
        sb.plugin_runtime_dir().join("tcponly.listen"),
    )
    .expect("copy listen file");
    let got = manage(&sb, &["get", "--name", "tcponly"]).ok().json();
    assert_eq!(
        got,
        json!([{"sourcetopic":"timer/sec/1","sinktopic":"/tcp"}])
    );

    // The global -H host, as the dispatcher passes it in the context.
    let mut cmd = manage_cmd(&sb);
    cmd.args(["delete", "--path", "/events/timer/sec/1"])
        .env("APP_CONTEXT_VERSION", "1")
        .env("APP_HOSTS", &url);
    run_bounded(cmd, "").ok();
    assert_eq!(routes(&sb, "tcp"), vec![]);

    // --host unix:// works as well.
    let unix = format!("unix://{}", r.socket().display());
    assert_eq!(
        manage(&sb, &["get", "--host", &unix]).ok().json(),
        json!([])
    );
}

#[test]
fn token_is_sent_as_a_bearer_token() {
    let sb = Sandbox::new();
    let r = repeater(&sb, "tok")
        .args(["--listen", "127.0.0.1:0"])
        .env("APP_TOKEN", "s3cret")
        .start();
    let url = r.url();
    manage(&sb, &["get", "--host", &url]).fails(1, "(401 Unauthorized)");
    let wrong =
        manage(&sb, &["get", "--host", &url, "--token", "wrong"]).fails(1, "(401 Unauthorized)");
    assert!(
        wrong.stderr.contains("APP_TOKEN"),
        "says how to give the token: {wrong:?}"
    );
    manage(&sb, &["get", "--host", &url, "--token", "s3cret"]).ok();
    let mut cmd = manage_cmd(&sb);
    cmd.args(["get", "--host", &url]).env("APP_TOKEN", "s3cret");
    run_bounded(cmd, "").ok();
}

#[test]
fn old_numeric_op_forms() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "event-repeater").start();
    let v1 = r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/a"}]"#;
    manage(&sb, &["--op", "1", "--resource", "event", "--value", v1]).ok();
    let got = manage(&sb, &["--op", "4", "--resource", "event"])
        .ok()
        .json();
    assert_eq!(got, json!([{"sourcetopic":"timer/sec/1","sinktopic":"/a"}]));
    manage(
        &sb,
        &[
            "--op",
            "3",
            "--resource",
            "event",
            "--value",
            r#"[{"sourcetopic":"timer/sec/1","sinktopic":"/b"}]"#,
        ],
    )
    .ok();
    assert_eq!(
        routes(&sb, "event-repeater"),
        pairs(&[("timer/sec/1", "/b")])
    );
    manage(
        &sb,
        &[
            "--op",
            "2",
            "--resource",
            "event",
            "--value",
            r#"[{"sourcetopic":"timer/sec/1"}]"#,
        ],
    )
    .ok();
    assert_eq!(manage(&sb, &["--op", "4"]).ok().json(), json!([]));
}

#[test]
fn values_from_stdin_and_from_a_file() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "val").start();
    manage_in(
        &sb,
        &["post", "--name", "val", "--value", "-"],
        "[\n  {\"sourcetopic\": \"timer/sec/1\", \"sinktopic\": \"/stdin\"}\n]\n",
    )
    .ok();
    let file = write(
        sb.path(),
        "routes.json",
        r#"[{"sourcetopic":"timer/sec/5","sinktopic":"/file"}]"#,
    );
    let at = format!("@{}", file.display());
    manage(&sb, &["post", "--name", "val", "--value", &at]).ok();
    // A relative @file is read from the working directory.
    write(sb.path(), "del.json", r#"[{"sourcetopic":"timer/sec/1"}]"#);
    manage(&sb, &["delete", "--name", "val", "--value", "@del.json"]).ok();
    assert_eq!(routes(&sb, "val"), pairs(&[("timer/sec/5", "/file")]));
}

#[test]
fn apply_adds_changes_and_removes_and_dry_run_changes_nothing() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "ap").start();
    manage(
        &sb,
        &[
            "post",
            "--name",
            "ap",
            "--value",
            r#"[{"sourcetopic":"timer/sec/5","sinktopic":"/old"},{"sourcetopic":"timer/min/1","sinktopic":"/m"},{"sourcetopic":"timer/sec/30","sinktopic":"/same"}]"#,
        ],
    )
    .ok();
    let before = routes(&sb, "ap");
    let file = write(
        sb.path(),
        "routes.json",
        r#"[
  {"sourcetopic": "timer/sec/1", "sinktopic": "/time/1s"},
  {"sourcetopic": "timer/sec/30", "sinktopic": "/same"},
  {"sourcetopic": "timer/sec/5", "sinktopic": "/new"}
]"#,
    );
    let file = file.to_string_lossy().into_owned();
    let want_diff =
        "- timer/min/1 -> /m\n+ timer/sec/1 -> /time/1s\n~ timer/sec/5 -> /old => /new\n";

    let dry = manage(&sb, &["apply", "--name", "ap", "-f", &file, "--dry-run"]).ok();
    assert_eq!(
        dry.stdout,
        format!("{want_diff}dry run, nothing changed: would be 1 added, 1 changed, 1 removed\n")
    );
    assert_eq!(routes(&sb, "ap"), before, "--dry-run changed the routes");

    let applied = manage(&sb, &["apply", "--name", "ap", "--file", &file]).ok();
    assert_eq!(
        applied.stdout,
        format!("{want_diff}applied: 1 added, 1 changed, 1 removed\n")
    );
    assert_eq!(
        routes(&sb, "ap"),
        pairs(&[
            ("timer/sec/1", "/time/1s"),
            ("timer/sec/30", "/same"),
            ("timer/sec/5", "/new")
        ])
    );

    let again = manage(&sb, &["apply", "--name", "ap", "-f", &file]).ok();
    assert_eq!(again.stdout, "no changes\n");

    // From stdin, emptying the table.
    let emptied = manage_in(&sb, &["apply", "--name", "ap", "-f", "-"], "[]").ok();
    assert!(
        emptied
            .stdout
            .ends_with("applied: 0 added, 0 changed, 3 removed\n"),
        "{emptied:?}"
    );
    assert_eq!(routes(&sb, "ap"), vec![]);
}

#[test]
fn apply_rejects_a_bad_file_before_touching_the_repeater() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "apbad").start();
    manage(
        &sb,
        &[
            "post",
            "--name",
            "apbad",
            "--value",
            r#"{"sourcetopic":"timer/sec/1","sinktopic":"/keep"}"#,
        ],
    )
    .ok();
    let syntax = write(
        sb.path(),
        "syntax.json",
        "[\n  {\"sourcetopic\": \"a\",}\n]\n",
    );
    manage(
        &sb,
        &["apply", "--name", "apbad", "-f", &syntax.to_string_lossy()],
    )
    .fails(2, "is not valid JSON: trailing comma at line 2, column 23");
    let shape = write(
        sb.path(),
        "shape.json",
        r#"[{"sourcetopic":"a","sink":"b"}]"#,
    );
    manage(
        &sb,
        &["apply", "--name", "apbad", "-f", &shape.to_string_lossy()],
    )
    .fails(2, "route 1: unknown field `sink`");
    manage(&sb, &["apply", "--name", "apbad", "-f", "missing.json"]).fails(2, "missing.json");
    assert_eq!(routes(&sb, "apbad"), pairs(&[("timer/sec/1", "/keep")]));
}

#[test]
fn not_running_says_how_to_start_it() {
    let sb = Sandbox::new();
    let socket = sb.plugin_runtime_dir().join("r1.sock");
    manage(&sb, &["get", "--name", "r1"]).fails(
        3,
        &format!(
            "no event repeater named 'r1' is running (no socket at {}); start one with: app event-repeater run --name r1",
            socket.display()
        ),
    );
    manage_in(&sb, &["apply", "--name", "r1", "-f", "-"], "[]")
        .fails(3, "no event repeater named 'r1'");
}

#[test]
fn stale_socket_says_how_to_clean_up() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.plugin_runtime_dir()).unwrap();
    let socket = sb.plugin_runtime_dir().join("gone.sock");
    // A socket file whose listener is gone: connections are refused.
    drop(UnixListener::bind(&socket).unwrap());
    let run = manage(&sb, &["get", "--name", "gone"]).fails(3, "stale socket");
    assert!(
        run.stderr.contains(&format!("rm {}", socket.display())),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("app event-repeater run --name gone"),
        "{run:?}"
    );
}

#[test]
fn stale_listen_file_and_unreachable_host() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.plugin_runtime_dir()).unwrap();
    let port = common::free_port();
    let url = format!("http://127.0.0.1:{port}");
    std::fs::write(
        sb.plugin_runtime_dir().join("old.listen"),
        format!("{url}\n"),
    )
    .unwrap();
    manage(&sb, &["get", "--name", "old"]).fails(3, "stale file");
    manage(&sb, &["get", "--host", &url]).fails(3, "connection refused");
}

#[test]
fn server_refusals_print_the_servers_message() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "ref").start();
    let route = r#"{"sourcetopic":"timer/sec/1","sinktopic":"/a"}"#;
    manage(&sb, &["post", "--name", "ref", "--value", route]).ok();
    let run = manage(&sb, &["post", "--name", "ref", "--value", route])
        .fails(1, "POST /events refused (409 Conflict): ");
    assert!(
        run.stderr.contains("timer/sec/1"),
        "the server's message names the route: {run:?}"
    );
    manage(
        &sb,
        &[
            "delete",
            "--name",
            "ref",
            "--value",
            r#"[{"sourcetopic":"nope/x"}]"#,
        ],
    )
    .fails(1, "DELETE /events refused (404 Not Found): ");
    manage(
        &sb,
        &["delete", "--name", "ref", "--path", "/events/nope/y"],
    )
    .fails(1, "(404 Not Found)");
    manage(&sb, &["get", "--name", "ref", "--path", "/nowhere"]).fails(1, "(404 Not Found)");
    // Valid JSON the server refuses (400), with its own explanation.
    manage(
        &sb,
        &["post", "--name", "ref", "--value", r#"{"sourcetopic":""}"#],
    )
    .fails(1, "(400 Bad Request)");
    assert_eq!(routes(&sb, "ref"), pairs(&[("timer/sec/1", "/a")]));
}

#[test]
fn bad_values_and_paths_are_usage_errors_and_send_nothing() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "bad").start();
    manage(
        &sb,
        &[
            "post",
            "--name",
            "bad",
            "--value",
            "[{\"sourcetopic\":\"a\",}]",
        ],
    )
    .fails(
        2,
        "--value is not valid JSON: trailing comma at line 1, column 21; nothing was sent",
    );
    manage_in(
        &sb,
        &["post", "--name", "bad", "--value", "-"],
        "{\n\"sourcetopic\" \"x\"}",
    )
    .fails(
        2,
        "--value from stdin is not valid JSON: expected `:` at line 2, column 15",
    );
    let file = write(sb.path(), "bad.json", "[1,]");
    manage(
        &sb,
        &[
            "put",
            "--name",
            "bad",
            "--value",
            &format!("@{}", file.display()),
        ],
    )
    .fails(2, "at line 1, column 4");
    manage(&sb, &["post", "--name", "bad", "--value", "@nope.json"]).fails(2, "nope.json");
    manage(&sb, &["get", "--name", "bad", "--path", "events"])
        .fails(2, "--path 'events' must start with /");
    manage(
        &sb,
        &["post", "--name", "bad", "--path", "events", "--value", "[]"],
    )
    .fails(2, "must start with /");
    manage(&sb, &["get", "--name", "bad", "--bogus"]).fails(2, "unexpected argument '--bogus'");
    manage(&sb, &["post", "--name", "bad"]).fails(2, "--value");
    manage(&sb, &["--op", "9"]).fails(2, "9");
    manage(&sb, &["--name", "bad"]).fails(2, "no command given");
    assert_eq!(routes(&sb, "bad"), vec![]);
}

#[test]
fn bad_json_is_reported_even_when_no_repeater_runs() {
    let sb = Sandbox::new();
    manage(&sb, &["post", "--name", "none", "--value", "{"]).fails(2, "--value is not valid JSON");
}

#[test]
fn a_silent_server_times_out() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.plugin_runtime_dir()).unwrap();
    let socket = sb.plugin_runtime_dir().join("mute.sock");
    let listener = UnixListener::bind(&socket).unwrap();
    // Accept and hold a connection without ever answering, until told to stop.
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        if let Ok((conn, _)) = listener.accept() {
            let _ = stopped.recv_timeout(Duration::from_secs(10));
            drop(conn);
        }
    });
    let started = Instant::now();
    manage(&sb, &["get", "--name", "mute", "--timeout", "0.5"])
        .fails(1, "did not answer within 0.5s");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    stop.send(()).unwrap();
    holder.join().unwrap();
}

#[test]
fn completion_offers_commands_flags_and_the_running_routes() {
    let sb = Sandbox::new();
    let complete = |args: &[&str]| {
        let mut all = vec!["__complete"];
        all.extend_from_slice(args);
        let run = manage(&sb, &all);
        assert_eq!((run.exit(), run.stderr.as_str()), (0, ""), "{run:?}");
        run.stdout
    };
    let first: Vec<String> = complete(&[""])
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_string())
        .collect();
    assert_eq!(
        first,
        ["get", "post", "put", "delete", "apply", "status", ":36"]
    );
    assert!(complete(&["apply", "--"]).contains("--dry-run\t"));
    assert_eq!(complete(&["get", "-o", ""]), "json\ntable\n:4\n");
    assert!(complete(&["--op", ""])
        .starts_with("1\tadd (post)\n2\tdelete\n3\tupdate (put)\n4\tread (get)\n"));

    // No repeater: nothing but the directive, and quickly.
    let started = Instant::now();
    assert_eq!(complete(&["delete", "--path", "/events/"]), ":4\n");
    assert!(started.elapsed() < Duration::from_secs(2));

    let _r = repeater(&sb, "event-repeater").start();
    manage(
        &sb,
        &[
            "post",
            "--value",
            r#"[{"sourcetopic":"timer/sec/1"},{"sourcetopic":"timer/min/5","sinktopic":"/m"}]"#,
        ],
    )
    .ok();
    let mut offered: Vec<String> = complete(&["delete", "--path", "/events/"])
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(offered.pop().as_deref(), Some(":4"));
    offered.sort();
    assert_eq!(offered, ["/events/timer/min/5", "/events/timer/sec/1"]);
    assert_eq!(
        complete(&["delete", "--path", "/events/timer/s"]),
        "/events/timer/sec/1\n:4\n"
    );
    assert!(complete(&["get", "--name", ""]).contains("event-repeater\n"));
}

#[test]
fn routes_set_by_the_manager_steer_the_events() {
    let sb = Sandbox::new();
    let _source = EventTime::start(&sb, &[]);
    let rep = repeater(&sb, "flow").source("event-time").start();
    let seen = |topic: &str| {
        let topic = topic.to_string();
        wait_for(Duration::from_secs(15), || {
            rep.sink_topics().contains(&topic).then_some(())
        })
        .is_some()
    };

    manage(
        &sb,
        &[
            "post",
            "--name",
            "flow",
            "--value",
            r#"{"sourcetopic":"timer/msec/100","sinktopic":"/fast"}"#,
        ],
    )
    .ok();
    assert!(seen("/fast"), "no event under /fast: {}", rep.log());

    let file = write(
        sb.path(),
        "routes.json",
        r#"[{"sourcetopic":"timer/msec/100","sinktopic":"/faster"}]"#,
    );
    let applied = manage(
        &sb,
        &["apply", "--name", "flow", "-f", &file.to_string_lossy()],
    )
    .ok();
    assert_eq!(
        applied.stdout,
        "~ timer/msec/100 -> /fast => /faster\napplied: 0 added, 1 changed, 0 removed\n"
    );
    assert!(seen("/faster"), "no event under /faster: {}", rep.log());

    manage(
        &sb,
        &[
            "delete",
            "--name",
            "flow",
            "--path",
            "/events/timer/msec/100",
        ],
    )
    .ok();
    // Let events already on their way through drain, then expect silence.
    std::thread::sleep(Duration::from_millis(500));
    let before = rep.sink_topics().len();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(
        rep.sink_topics().len(),
        before,
        "events still flow after delete: {}",
        rep.log()
    );
    // The same events, routed again, are seen: the silence was the delete's.
    manage(
        &sb,
        &[
            "post",
            "--name",
            "flow",
            "--value",
            r#"{"sourcetopic":"timer/msec/100","sinktopic":"/again"}"#,
        ],
    )
    .ok();
    assert!(seen("/again"), "no event under /again: {}", rep.log());
}

#[test]
fn routes_set_by_the_manager_reach_mosquitto() {
    let Some(broker) = Broker::start() else {
        return;
    };
    let Some(sub) = Subscriber::start(&broker, "site/#", None) else {
        return;
    };
    let sb = Sandbox::new();
    let _source = EventTime::start(&sb, &[]);
    let url = broker.url();
    let _rep = repeater(&sb, "mq")
        .source("event-time")
        .sinkprotocol("mqtt")
        .sink(&url)
        .start();
    manage(
        &sb,
        &[
            "post",
            "--name",
            "mq",
            "--value",
            r#"[{"sourcetopic":"timer/msec/100","sinktopic":"site/fast"}]"#,
        ],
    )
    .ok();
    let got = sub.wait(Duration::from_secs(15), |m| {
        m.iter().any(|(t, _)| t == "site/fast")
    });
    let (_, payload) = got
        .iter()
        .find(|(t, _)| t == "site/fast")
        .unwrap_or_else(|| panic!("nothing on site/fast: {got:?}"));
    let event: Value = serde_json::from_str(payload).expect("payload is the event's JSON");
    assert_eq!(event["topic"], "timer/msec/100");

    // A prefix route with {suffix}, declared in a file.
    let file = write(
        sb.path(),
        "routes.json",
        r#"[{"sourcetopic":"timer/msec/","sinktopic":"site/ms/{suffix}"}]"#,
    );
    let applied = manage(
        &sb,
        &["apply", "--name", "mq", "-f", &file.to_string_lossy()],
    )
    .ok();
    assert_eq!(
        applied.stdout,
        "+ timer/msec/ -> site/ms/{suffix}\n- timer/msec/100 -> site/fast\napplied: 1 added, 0 changed, 1 removed\n"
    );
    let got = sub.wait(Duration::from_secs(15), |m| {
        m.iter().any(|(t, _)| t == "site/ms/100") && m.iter().any(|(t, _)| t == "site/ms/500")
    });
    assert!(
        got.iter().any(|(t, _)| t == "site/ms/500"),
        "prefix route did not deliver: {got:?}"
    );
}
