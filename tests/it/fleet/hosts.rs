//! Several hosts at once: `--host`, the global `-H`, named hosts and groups
//! from the config file, a host that is down, a token that must not leave
//! for another machine over plain HTTP, and `status --watch` in tmux.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::repeater::{status_rows, Repeater};
use common::tools::require_tool;
use common::{free_port, plugin_bin, wait_for, Sandbox};
use serde_json::json;

use super::{app, manage, repeater, routes_of, want, write, ROUTES};

const PROGRAM: &str = "app-event-repeater-manage: ";

#[test]
fn apply_get_and_status_across_three_repeaters() {
    let sb = Sandbox::new();
    let rs: Vec<Repeater> = ["r1", "r2", "r3"]
        .iter()
        .map(|n| repeater(&sb, n).start())
        .collect();
    let urls: Vec<String> = rs.iter().map(Repeater::url).collect();
    let mut hosts: Vec<&str> = Vec::new();
    for u in &urls {
        hosts.extend(["--host", u.as_str()]);
    }
    // r2 already has one of the routes, with another sink topic.
    let (status, _) = rs[1].send_json(
        "POST",
        "/events",
        r#"{"sourcetopic":"timer/sec/1","sinktopic":"/old"}"#,
    );
    assert_eq!(status, 201);
    let file = write(sb.path(), "routes.json", ROUTES);

    // --dry-run: every host's difference, nothing changed.
    let args: Vec<&str> = [&["apply", "-f", &file, "--dry-run"][..], &hosts].concat();
    let dry = manage(&sb, &args).ok();
    assert!(
        dry.stdout
            .contains(&format!("{}: + timer/min/ -> .\n", urls[0])),
        "{dry:?}"
    );
    assert!(
        dry.stdout
            .contains(&format!("{}: ~ timer/sec/1 -> /old => /time/1s\n", urls[1])),
        "{dry:?}"
    );
    assert_eq!(dry.stdout.matches("dry run, nothing changed").count(), 3);
    assert!(routes_of(&rs[0]).is_empty());

    let args: Vec<&str> = [&["apply", "-f", &file][..], &hosts].concat();
    let applied = manage(&sb, &args).ok();
    for u in &urls {
        assert!(
            applied.stdout.contains(&format!("{u}: applied: ")),
            "{applied:?}"
        );
    }
    for r in &rs {
        assert_eq!(routes_of(r), want(), "{}", r.name());
    }
    // Applying again changes nothing anywhere.
    let again = manage(&sb, &args).ok();
    assert_eq!(
        again.stdout.matches(": no changes\n").count(),
        3,
        "{again:?}"
    );

    // get -o json: one object keyed by host.
    let args: Vec<&str> = [&["get"][..], &hosts].concat();
    let got = manage(&sb, &args).ok().json();
    let obj = got.as_object().expect("an object keyed by host");
    assert_eq!(obj.len(), 3);
    for u in &urls {
        assert_eq!(obj[u.as_str()].as_array().map(Vec::len), Some(2), "{got}");
    }
    // get -o table: a HOST column.
    let args: Vec<&str> = [&["get", "-o", "table"][..], &hosts].concat();
    let table = manage(&sb, &args).ok().stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("HOST "), "{table}");
    assert!(lines[0].contains("SOURCE TOPIC") && lines[0].contains("SINK TOPIC"));
    assert_eq!(lines.len(), 1 + 3 * 2, "{table}");
    for u in &urls {
        assert_eq!(
            lines.iter().filter(|l| l.starts_with(u.as_str())).count(),
            2
        );
    }
    // put and delete by topic, on all three.
    let args: Vec<&str> = [&["put", "timer/sec/5", "/time/5s"][..], &hosts].concat();
    manage(&sb, &args).ok();
    let args: Vec<&str> = [&["delete", "timer/min/"][..], &hosts].concat();
    manage(&sb, &args).ok();
    for r in &rs {
        assert_eq!(
            routes_of(r),
            vec![
                ("timer/sec/1".to_string(), "/time/1s".to_string()),
                ("timer/sec/5".to_string(), "/time/5s".to_string()),
            ]
        );
    }

    // status: one row per host, from /healthz and /metrics.
    let urls_str: Vec<&str> = urls.iter().map(String::as_str).collect();
    let rows = status_rows(&sb, &urls_str);
    let rows = rows.as_array().expect("array of rows");
    assert_eq!(rows.len(), 3);
    for (row, (u, r)) in rows.iter().zip(urls.iter().zip(&rs)) {
        assert_eq!(row["host"], u.as_str());
        assert_eq!(row["name"], r.name());
        // No source runs: the repeater is up but degraded.
        assert_eq!(row["state"], "degraded", "{row}");
        assert_eq!(row["routes"], 2);
        assert_eq!(row["source_connected"], false);
        assert_eq!(row["sink"], "stderr");
        assert_eq!(row["sink_connected"], true);
        assert_eq!(row["received_per_sec"], 0.0);
        assert_eq!(row["buffered"], 0);
        assert_eq!(row["dropped"], 0);
        assert!(row["version"].as_str().is_some_and(|v| !v.is_empty()));
        assert!(row["uptime_secs"].as_u64().is_some());
    }
    let args: Vec<&str> = [&["status", "--interval", "0.2"][..], &hosts].concat();
    let table = manage(&sb, &args).ok().stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("HOST "), "{table}");
    for h in [
        "STATE", "VERSION", "ROUTES", "SOURCE", "SINK", "IN/S", "ACKED/S", "BUFFERED", "DROPPED",
        "UPTIME",
    ] {
        assert!(lines[0].contains(h), "{h}: {table}");
    }
    assert_eq!(lines.len(), 4, "{table}");
    assert!(
        lines[1].contains("degraded") && lines[1].contains("ok stderr"),
        "{table}"
    );
}

#[test]
fn a_host_that_is_down_does_not_stop_the_others() {
    let sb = Sandbox::new();
    let r1 = repeater(&sb, "r1").start();
    let r3 = repeater(&sb, "r3").start();
    let down = format!("http://127.0.0.1:{}", free_port());
    let (u1, u3) = (r1.url(), r3.url());
    let file = write(sb.path(), "routes.json", ROUTES);
    let run = manage(
        &sb,
        &[
            "apply", "-f", &file, "--host", &u1, "--host", &down, "--host", &u3,
        ],
    );
    assert_eq!(run.exit(), 4, "{run:?}");
    assert_eq!(routes_of(&r1), want());
    assert_eq!(routes_of(&r3), want());
    assert!(run.stdout.contains(&format!("{u1}: applied")), "{run:?}");
    assert!(run.stdout.contains(&format!("{u3}: applied")), "{run:?}");
    // One line per host, in order, then the count.
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 4, "{run:?}");
    assert!(lines.iter().all(|l| l.starts_with(PROGRAM)), "{run:?}");
    assert_eq!(lines[0], format!("{PROGRAM}{u1}: ok"));
    assert!(
        lines[1].starts_with(&format!("{PROGRAM}{down}: ")),
        "{run:?}"
    );
    assert!(lines[1].contains("connection refused"), "{run:?}");
    assert_eq!(lines[2], format!("{PROGRAM}{u3}: ok"));
    assert_eq!(lines[3], format!("{PROGRAM}1 of 3 hosts failed"));

    // get: the answers of the hosts that answered, and the report.
    let run = manage(&sb, &["get", "--host", &u1, "--host", &down]);
    assert_eq!(run.exit(), 4, "{run:?}");
    assert_eq!(run.json().as_object().map(|o| o.len()), Some(1));
    // status: the host is a "down" row with its reason.
    let run = manage(
        &sb,
        &[
            "status",
            "--interval",
            "0.2",
            "--host",
            &u1,
            "--host",
            &down,
        ],
    );
    assert_eq!(run.exit(), 4, "{run:?}");
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with(&down))
        .unwrap_or_else(|| panic!("no row for {down}: {run:?}"));
    assert!(
        row.contains("down") && row.contains("connection refused"),
        "{row}"
    );
}

#[test]
fn named_hosts_and_groups_from_the_config_file() {
    let sb = Sandbox::new();
    let r1 = repeater(&sb, "r1").env("APP_TOKEN", "token-one").start();
    let r2 = repeater(&sb, "r2").env("APP_TOKEN", "token-two").start();
    write(&sb.config_dir(), "edge1.token", "token-one\n");
    write(&sb.config_dir(), "edge2.token", "token-two\n");
    sb.write_config(
        &json!({
            "hosts": {
                "edge1": {"url": r1.url(), "token_file": "edge1.token"},
                "edge2": {"url": r2.url(), "token_file": "~/config/edge2.token"}
            },
            "groups": {"edges": ["edge1", "edge2"]}
        })
        .to_string(),
    );
    // Through app: the global -H reaches the plugin in its context.
    app(
        &sb,
        &[
            "-H",
            "@edges",
            "event-repeater",
            "manage",
            "put",
            "timer/sec/1",
            "/t",
        ],
    )
    .ok();
    for r in [&r1, &r2] {
        assert_eq!(
            routes_of(r),
            vec![("timer/sec/1".to_string(), "/t".to_string())]
        );
    }
    let table = app(
        &sb,
        &[
            "-H",
            "edge1",
            "-H",
            "edge2",
            "event-repeater",
            "manage",
            "get",
            "-o",
            "table",
        ],
    )
    .ok()
    .stdout;
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("edge1  ")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .nth(2)
            .is_some_and(|l| l.starts_with("edge2  ")),
        "{table}"
    );
    // One named host prints what one host always printed.
    let got = manage(&sb, &["get", "--host", "edge2"]).ok().json();
    assert_eq!(got, json!([{"sourcetopic":"timer/sec/1","sinktopic":"/t"}]));
    // An unknown name is a usage error naming the known ones; nothing is sent.
    let run = manage(&sb, &["get", "--host", "edge9"]);
    assert_eq!(run.exit(), 2, "{run:?}");
    assert!(
        run.stderr.contains("no host 'edge9'") && run.stderr.contains("known: edge1, edge2"),
        "{run:?}"
    );
}

#[test]
fn a_token_never_goes_over_plain_http_to_another_machine() {
    let sb = Sandbox::new();
    // 192.0.2.0/24 is TEST-NET-1: nothing is sent, so nothing needs to listen.
    let run = manage(
        &sb,
        &["get", "--host", "http://192.0.2.7:7070", "--token", "t"],
    );
    assert_eq!(run.exit(), 2, "{run:?}");
    assert!(
        run.stderr
            .contains("refusing to send the API token in clear text to http://192.0.2.7:7070"),
        "{run:?}"
    );
    // 127.1 is loopback: allowed (and refused by nobody listening).
    let port = free_port();
    let run = manage(
        &sb,
        &[
            "get",
            "--host",
            &format!("http://127.1:{port}"),
            "--token",
            "t",
        ],
    );
    assert_eq!(run.exit(), 3, "{run:?}");
    assert!(run.stderr.contains("connection refused"), "{run:?}");
}

#[test]
fn status_watch_redraws_in_place_and_stops_on_ctrl_c() {
    let Some(tmux) = require_tool("tmux", "tmux") else {
        return;
    };
    let sb = Sandbox::new();
    let r = repeater(&sb, "w1").start();
    let socket = sb.path().join("tmux.sock");
    let tmux_cmd = |args: &[&str]| {
        let mut cmd = sb.command(&tmux);
        cmd.arg("-S")
            .arg(&socket)
            .arg("-f")
            .arg("/dev/null")
            .args(args);
        let out = cmd.output().expect("run tmux");
        assert!(out.status.success(), "tmux {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // The tmux server goes when the test ends, passed or not.
    struct KillServer(Command);
    impl Drop for KillServer {
        fn drop(&mut self) {
            let _ = self.0.stdout(Stdio::null()).stderr(Stdio::null()).status();
        }
    }
    let mut kill = sb.command(&tmux);
    kill.arg("-S").arg(&socket).arg("kill-server");
    let _server = KillServer(kill);
    let done = sb.path().join("done");
    let line = format!(
        "{} status --watch --interval 0.3 --host {}; echo exit=$? > {}",
        plugin_bin("app-event-repeater-manage").display(),
        r.url(),
        done.display()
    );
    tmux_cmd(&[
        "new-session",
        "-d",
        "-x",
        "200",
        "-y",
        "30",
        "bash",
        "-c",
        &line,
    ]);
    let screen = || tmux_cmd(&["capture-pane", "-p"]);
    let first = wait_for(Duration::from_secs(10), || {
        let s = screen();
        s.contains("Ctrl-C to stop").then_some(s)
    })
    .unwrap_or_else(|| panic!("no status screen: {}", screen()));
    assert!(
        first.lines().next().is_some_and(|l| l.starts_with("HOST ")),
        "{first}"
    );
    // Change the routes: the same screen shows the new count after a redraw,
    // with one header and one row (redrawn in place, not scrolled).
    let (status, _) = r.send_json("POST", "/events", r#"{"sourcetopic":"a"}"#);
    assert_eq!(status, 201);
    let redrawn = wait_for(Duration::from_secs(10), || {
        let s = screen();
        let row = s.lines().nth(1)?.to_string();
        let cells: Vec<&str> = row.split_whitespace().collect();
        (cells.get(4) == Some(&"1")).then_some(s)
    })
    .unwrap_or_else(|| panic!("the row did not show 1 route: {}", screen()));
    assert_eq!(redrawn.matches("HOST ").count(), 1, "{redrawn}");
    assert_eq!(redrawn.matches("Ctrl-C to stop").count(), 1, "{redrawn}");
    tmux_cmd(&["send-keys", "C-c"]);
    let code = wait_for(Duration::from_secs(10), || {
        std::fs::read_to_string(&done).ok()
    })
    .unwrap_or_else(|| panic!("no exit after Ctrl-C: {}", screen()));
    assert_eq!(code.trim(), "exit=0");
}
