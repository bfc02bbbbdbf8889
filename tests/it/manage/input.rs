//! The manager against what it does not control (issue 19, items 8 and 11):
//! a hostile host's text is shown escaped and its error bodies shortened,
//! a web page answering 200 is not taken for the repeater, and the routes
//! of `apply` may come from a pipe (`-f -`, `-f /dev/stdin`, `-f <(…)`).

use crate::common;

use common::http_server::Server;
use common::repeater::Repeater;
use common::run::Ran;
use common::{plugin_bin, Sandbox};
use serde_json::{json, Value};

const MANAGE: &str = "app-event-repeater-manage";

fn manage_in(sb: &Sandbox, args: &[&str], stdin: &str) -> Ran {
    let mut cmd = sb.command(plugin_bin(MANAGE));
    cmd.args(args);
    common::run::Run::new(cmd).stdin(stdin).assert()
}

fn manage(sb: &Sandbox, args: &[&str]) -> Ran {
    manage_in(sb, args, "")
}

/// Characters a terminal acts on; none may be printed raw.
const RAW: [char; 7] = [
    '\x1b', '\x07', '\u{9b}', '\r', '\u{202e}', '\u{2066}', '\u{7f}',
];

#[track_caller]
fn no_raw_controls(text: &str) {
    for c in RAW {
        assert!(!text.contains(c), "raw {c:?} in {text:?}");
    }
}

/// Routes whose topics hold an OSC title, a screen clear, a C1 CSI, a line
/// forged with CR/LF, DEL and bidi controls; raw U+009B in the JSON text
/// (valid JSON) as well as escaped ones.
const HOSTILE_ROUTES: &str = concat!(
    r#"[{"sourcetopic":"a\u001b]0;pwned\u0007\u001b[2J","sinktopic":"b"#,
    "\u{9b}31m",
    r#""},{"sourcetopic":"c\r\nforged line\u007f","sinktopic":"#,
    "\"\u{202e}txt.exe\u{2066}\"}]"
);

#[test]
fn a_hostile_hosts_text_is_escaped_in_tables_status_and_errors() {
    let sb = Sandbox::new();
    let server = Server::start();
    let host = server.url("");
    server.serve("/events", HOSTILE_ROUTES.as_bytes());

    // Positive control: the JSON output is the same JSON value the host sent
    // (so the hostile characters were there to be seen).
    let json = manage(&sb, &["get", "--host", &host, "-o", "json"]).ok();
    let want: Value = serde_json::from_str(HOSTILE_ROUTES).expect("hostile JSON is JSON");
    assert_eq!(json.json(), want);
    no_raw_controls(&json.stdout);

    let table = manage(&sb, &["get", "--host", &host, "-o", "table"]).ok();
    no_raw_controls(&table.stdout);
    assert_eq!(table.stdout.lines().count(), 3, "{table:?}");
    assert!(
        table.stdout.contains("a\\x1b]0;pwned\\x07\\x1b[2J") && table.stdout.contains("\\u{202e}"),
        "{table:?}"
    );

    // status: name, version and URLs from /healthz.
    server.serve(
        "/healthz",
        json!({"status":"ok","name":"r\u{1b}[2J","version":"1\u{9b}0m","routes":2,
               "source":{"url":"http://s/\r\nFAKE up","connected":true},
               "sink":{"url":"mqtt://\u{202e}b","connected":true},"uptime_secs":5})
        .to_string()
        .as_bytes(),
    );
    server.serve("/metrics", b"events_received_total 1\n# EOF\n");
    let status = manage(
        &sb,
        &[
            "status",
            "--host",
            &host,
            "--interval",
            "0.1",
            "-o",
            "table",
        ],
    )
    .ok();
    no_raw_controls(&status.stdout);
    assert_eq!(status.stdout.lines().count(), 2, "{status:?}");
    assert!(status.stdout.contains("r\\x1b[2J"), "{status:?}");

    // A warning quoting the host's topics (the manager does not escape them
    // itself: the SDK's log lines do).
    server.serve(
        "/source/topics",
        json!(["t/\u{1b}]0;pwned\u{7}", "u/\u{202e}x"])
            .to_string()
            .as_bytes(),
    );
    let warned = manage(
        &sb,
        &[
            "post",
            "--host",
            &host,
            "--value",
            r#"{"sourcetopic":"a/b","sinktopic":"/x"}"#,
        ],
    )
    .code(0);
    assert!(warned.stderr.contains("t/\\x1b]0;pwned\\x07"), "{warned:?}");
    no_raw_controls(&warned.stderr);
    no_raw_controls(&warned.stdout);

    // A 130 KB error body: one line, shortened, escaped.
    let body = format!("\x1b]0;owned\x07\x1b[2J{}", "E".repeat(130_000));
    server.serve_status("/events", 500, body.as_bytes());
    let failed = manage(&sb, &["get", "--host", &host]);
    assert_eq!(failed.exit(), 1, "{failed:?}");
    no_raw_controls(&failed.stderr);
    assert_eq!(failed.stderr.lines().count(), 1, "{failed:?}");
    assert!(failed.stderr.len() < 1_000, "{} bytes", failed.stderr.len());
    assert!(failed.stderr.contains("bytes more)"), "{failed:?}");
    assert!(failed.stderr.contains("\\x1b]0;owned"), "{failed:?}");
}

#[test]
fn a_web_page_answering_200_is_not_taken_for_the_repeater() {
    let sb = Sandbox::new();
    let server = Server::start();
    let host = server.url("");
    // Positive control: the same host answering JSON is read.
    server.serve("/events", b"[]");
    manage(&sb, &["get", "--host", &host]).ok();
    server.serve(
        "/events",
        b"<!DOCTYPE html>\n<html><title>Welcome to nginx!</title></html>\n",
    );
    let ran = manage(&sb, &["get", "--host", &host]);
    assert_eq!(ran.exit(), 1, "{ran:?}");
    assert_eq!(ran.stdout, "", "{ran:?}");
    assert!(
        ran.stderr
            .contains("answered GET /events with status 200 but not JSON, so it is not an event repeater's API")
            && ran.stderr.contains("<!DOCTYPE html>"),
        "{ran:?}"
    );
}

fn routes(sb: &Sandbox, name: &str) -> Value {
    manage(sb, &["get", "--name", name]).ok().json()
}

#[test]
fn apply_reads_routes_from_a_pipe_dev_stdin_and_dash() {
    let sb = Sandbox::new();
    let _r = Repeater::builder(&sb, "pipe")
        .sinkprotocol("stderr")
        .no_source()
        .start();
    let manage_bin = plugin_bin(MANAGE);

    // `-f <(…)`: bash's process substitution, a pipe at /dev/fd/N.
    let mut cmd = sb.command("bash");
    cmd.args([
        "-c",
        r#"exec "$0" apply --name pipe -f <(printf '[{"sourcetopic":"a/1","sinktopic":"/p"}]')"#,
    ])
    .arg(&manage_bin);
    let ran = common::run::Run::new(cmd).assert().code(0);
    assert!(ran.stdout.contains("applied: 1 added"), "{ran:?}");
    assert_eq!(
        routes(&sb, "pipe"),
        json!([{"sourcetopic":"a/1","sinktopic":"/p"}])
    );

    // `-f /dev/stdin` with stdin a pipe.
    manage_in(
        &sb,
        &["apply", "--name", "pipe", "-f", "/dev/stdin"],
        r#"[{"sourcetopic":"b/2","sinktopic":"/q"}]"#,
    )
    .ok();
    assert_eq!(
        routes(&sb, "pipe"),
        json!([{"sourcetopic":"b/2","sinktopic":"/q"}])
    );

    // `-f -`.
    manage_in(&sb, &["apply", "--name", "pipe", "-f", "-"], "[]").ok();
    assert_eq!(routes(&sb, "pipe"), json!([]));

    // Over the size limit on stdin: refused, nothing changed.
    let big = format!("[{}]", " ".repeat(1 << 20));
    let over = manage_in(&sb, &["apply", "--name", "pipe", "-f", "-"], &big);
    assert_eq!(over.exit(), 2, "{over:?}");
    assert!(
        over.stderr.contains("-f -: stdin holds over 1048576 bytes"),
        "{over:?}"
    );

    // A device is still refused, and the message names -f, not --value.
    let dev = manage(&sb, &["apply", "--name", "pipe", "-f", "/dev/zero"]);
    assert_eq!(dev.exit(), 2, "{dev:?}");
    assert!(
        dev.stderr.contains("-f /dev/zero is a character device")
            && !dev.stderr.contains("--value"),
        "{dev:?}"
    );
    assert_eq!(routes(&sb, "pipe"), json!([]));
}

#[test]
fn routes_from_a_pipe_that_never_ends_are_given_up_after_30_s() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("routes.fifo");
    common::mkfifo(&fifo);
    // A writer that sends the start of an array and then holds the pipe open.
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut w = std::fs::OpenOptions::new()
                .write(true)
                .open(&fifo)
                .expect("open fifo");
            let _ = w.write_all(b"[");
            std::thread::sleep(std::time::Duration::from_secs(40));
        })
    };
    let started = std::time::Instant::now();
    // Longer than the harness's 30 s run limit: a child with its own bound.
    let mut child = sb
        .command(plugin_bin(MANAGE))
        .args(["apply", "--host", "http://127.0.0.1:1", "-f"])
        .arg(&fifo)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the manager");
    let pid = child.id() as i32;
    let exited = common::wait_for(std::time::Duration::from_secs(60), || {
        child.try_wait().ok().flatten()
    });
    let took = started.elapsed();
    let Some(status) = exited else {
        // SAFETY: kill has no memory-safety preconditions; our unreaped child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("the manager still read the pipe after 60 s");
    };
    let out = child.wait_with_output().expect("its output");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("its end did not come within 30 s"),
        "{stderr}"
    );
    assert!(
        took >= std::time::Duration::from_secs(29) && took < std::time::Duration::from_secs(45),
        "took {took:?}"
    );
    drop(writer);
}
