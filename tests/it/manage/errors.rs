//! Errors with their exit codes and messages: the server's refusals, bad
//! values and paths, bad JSON.

use crate::common;

use common::Sandbox;

use super::{manage, manage_in, pairs, repeater, routes, write, Fails};

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
    // A route manage takes (its fields are checked here: an empty
    // sourcetopic is exit 2) that the server refuses (400), with its own
    // explanation: a placeholder it does not know.
    manage(
        &sb,
        &[
            "post",
            "--name",
            "ref",
            "--value",
            r#"{"sourcetopic":"a","sinktopic":"x/{nope}"}"#,
        ],
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
