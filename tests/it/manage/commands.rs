//! Every command and form over the unix socket: output formats, the old
//! numeric `--op` forms, values from stdin and files, `apply`, completion.

use crate::common;

use std::time::{Duration, Instant};

use common::Sandbox;
use serde_json::json;

use super::{manage, manage_in, pairs, repeater, routes, write, Fails};

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
fn post_and_put_check_the_routes_as_apply_does_before_sending() {
    let sb = Sandbox::new();
    let _r = repeater(&sb, "pbad").start();
    // The message apply gives for the same routes, counted the same way.
    let bad = r#"[{"sourcetopic":"a"},{"sourcetopic":"b","sink":"x"}]"#;
    let file = write(sb.path(), "bad.json", bad);
    manage(
        &sb,
        &["apply", "--name", "pbad", "-f", &file.to_string_lossy()],
    )
    .fails(2, "route 2: unknown field `sink`");
    for verb in ["post", "put"] {
        manage(&sb, &[verb, "--name", "pbad", "--value", bad])
            .fails(2, "--value: route 2: unknown field `sink`");
        // One object, as the API takes it, is checked too.
        manage(
            &sb,
            &[
                verb,
                "--name",
                "pbad",
                "--value",
                r#"{"sourcetopic":"a","sink":"x"}"#,
            ],
        )
        .fails(2, "route 1: unknown field `sink`");
    }
    assert_eq!(routes(&sb, "pbad"), vec![]);
    // The control: the same routes spelt right are sent and kept.
    let good = r#"[{"sourcetopic":"a"},{"sourcetopic":"b","sinktopic":"x"}]"#;
    manage(&sb, &["post", "--name", "pbad", "--value", good]).ok();
    assert_eq!(routes(&sb, "pbad"), pairs(&[("a", ""), ("b", "x")]));
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
