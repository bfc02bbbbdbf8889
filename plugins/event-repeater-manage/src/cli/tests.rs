//! The command line, from words to a checked [`Config`] or a usage error.

use super::*;

fn parse(args: &[&str]) -> Result<Config, String> {
    Config::from_args(args.iter().copied(), None).map_err(|e| match e {
        ParseOutcome::Info(i) => format!("info: {i}"),
        ParseOutcome::Error(e) => {
            assert_eq!(e.exit_code(), 2);
            e.to_string()
        }
    })
}

fn call(args: &[&str]) -> Call {
    match parse(args).unwrap().action {
        Action::Send(c) => c,
        other => panic!("not a call: {other:?}"),
    }
}

fn spec(method: Method, path: &str, value: Option<&str>) -> Call {
    Call {
        method,
        path: path.into(),
        value: value.map(ValueSpec::parse),
    }
}

#[test]
fn commands_map_to_requests() {
    let table: &[(&[&str], Call)] = &[
        (&["get"], spec(Method::Get, "/events", None)),
        (
            &["get", "--path", "/events/timer/sec/1"],
            spec(Method::Get, "/events/timer/sec/1", None),
        ),
        (
            &["post", "--value", "[]"],
            spec(Method::Post, "/events", Some("[]")),
        ),
        (
            &["put", "--value", "@r.json"],
            spec(Method::Put, "/events", Some("@r.json")),
        ),
        (
            &["put", "--path", "/events?replace=true", "--value", "-"],
            spec(Method::Put, "/events?replace=true", Some("-")),
        ),
        (
            &["delete", "--value", "[]"],
            spec(Method::Delete, "/events", Some("[]")),
        ),
        (
            &["delete", "--path", "/events/a"],
            spec(Method::Delete, "/events/a", None),
        ),
        (
            &["--op", "1", "--resource", "event", "--value", "[]"],
            spec(Method::Post, "/events", Some("[]")),
        ),
        (
            &["--op", "2", "--resource", "event", "--value", "[]"],
            spec(Method::Delete, "/events", Some("[]")),
        ),
        (
            &["--op", "3", "--value", "{}"],
            spec(Method::Put, "/events", Some("{}")),
        ),
        (
            &["--op", "4", "--resource", "event"],
            spec(Method::Get, "/events", None),
        ),
        (
            &["--op", "4", "--path", "/events/x"],
            spec(Method::Get, "/events/x", None),
        ),
    ];
    for (args, want) in table {
        assert_eq!(&call(args), want, "{args:?}");
    }
}

#[test]
fn connection_flags_go_before_or_after_the_command() {
    let a = parse(&["--name", "r1", "get", "-o", "table", "--timeout", "0.5"]).unwrap();
    let b = parse(&[
        "get",
        "--name",
        "r1",
        "--output",
        "table",
        "--timeout",
        "0.5",
    ])
    .unwrap();
    assert_eq!(a, b);
    assert_eq!(a.conn.name, "r1");
    assert_eq!(a.output, Format::Table);
    assert_eq!(a.conn.timeout, Duration::from_millis(500));
    let d = parse(&["get"]).unwrap();
    assert_eq!(d.conn.name, crate::DEFAULT_NAME);
    assert_eq!(d.conn.timeout, Duration::from_secs(5));
    assert_eq!(d.output, Format::Json);
}

#[test]
fn host_and_token() {
    let c = parse(&[
        "get",
        "--host",
        "http://127.0.0.1:9/",
        "--host",
        "edge1",
        "-o",
        "table",
        "--host",
        "@edges",
        "--token",
        "t",
    ])
    .unwrap();
    assert_eq!(
        c.conn.hosts,
        [
            HostWord::Url(crate::address::Endpoint::Http("http://127.0.0.1:9".into())),
            HostWord::Name("edge1".into()),
            HostWord::Group("edges".into()),
        ]
    );
    assert_eq!(c.conn.token.as_deref(), Some("t"));
    let c = Config::from_args(["get"], Some("env".into())).unwrap();
    assert_eq!(c.conn.token.as_deref(), Some("env"));
    let c = Config::from_args(["get", "--token", "flag"], Some("env".into())).unwrap();
    assert_eq!(c.conn.token.as_deref(), Some("flag"));
    assert!(parse(&["get", "--host", "ftp://x"])
        .unwrap_err()
        .contains("--host"));
}

#[test]
fn topics_as_arguments() {
    assert_eq!(
        call(&["get", "timer/sec/1"]),
        spec(Method::Get, "/events/timer/sec/1", None)
    );
    assert_eq!(
        call(&["delete", "a b/50%?x"]),
        spec(Method::Delete, "/events/a%20b/50%25%3Fx", None)
    );
    assert_eq!(
        call(&["put", "timer/sec/1", "/time/1s"]),
        Call {
            method: Method::Put,
            path: "/events/timer/sec/1".into(),
            value: Some(ValueSpec::Inline(r#"{"sinktopic":"/time/1s"}"#.into())),
        }
    );
    let e = parse(&["put", "timer/sec/1"]).unwrap_err();
    assert!(e.contains("needs a SINKTOPIC"), "{e}");
    assert!(e.contains("manage put --help"), "{e}");
    let e = parse(&["delete", "x", "--value", "[]"]).unwrap_err();
    assert!(e.contains("cannot be used with"), "{e}");
    assert!(e.contains("manage delete --help"), "{e}");
}

#[test]
fn status_defaults_to_a_table() {
    let c = parse(&["status"]).unwrap();
    assert_eq!(c.output, Format::Table);
    assert_eq!(
        c.action,
        Action::Status {
            watch: false,
            interval: Duration::from_secs(2)
        }
    );
    let c = parse(&["status", "-w", "--interval", "0.5", "-o", "json"]).unwrap();
    assert_eq!(c.output, Format::Json);
    assert_eq!(
        c.action,
        Action::Status {
            watch: true,
            interval: Duration::from_millis(500)
        }
    );
}

#[test]
fn top_samples_every_second_and_defaults_to_a_table() {
    let c = parse(&["top"]).unwrap();
    assert_eq!(c.output, Format::Table);
    assert_eq!(
        c.action,
        Action::Top {
            interval: Duration::from_secs(1)
        }
    );
    let c = parse(&["top", "--interval", "0.25", "-o", "json"]).unwrap();
    assert_eq!(
        (c.output, c.action),
        (
            Format::Json,
            Action::Top {
                interval: Duration::from_millis(250)
            }
        )
    );
    let e = parse(&["top", "--interval", "0"]).unwrap_err();
    assert!(
        e.contains("out of range") && e.contains("manage top --help"),
        "{e}"
    );
}

#[test]
fn apply_reads_a_file_or_stdin() {
    let c = parse(&["apply", "-f", "routes.json", "--dry-run"]).unwrap();
    assert_eq!(
        c.action,
        Action::Apply {
            file: ValueSpec::File("routes.json".into()),
            dry_run: true
        }
    );
    let c = parse(&["apply", "--file", "-"]).unwrap();
    assert_eq!(
        c.action,
        Action::Apply {
            file: ValueSpec::Stdin,
            dry_run: false
        }
    );
}

#[test]
fn usage_errors() {
    let cases: &[(&[&str], &str)] = &[
        (&[], "no command given"),
        (
            &["get", "--path", "events"],
            "--path 'events' must start with /",
        ),
        (&["post"], "--value"),
        (&["get", "--value", "[]"], "unexpected argument '--value'"),
        (&["delete"], "delete needs the route to remove"),
        (&["--op", "5"], "5"),
        (&["--op", "1"], "--op 1 needs --value"),
        (&["--op", "4", "--value", "[]"], "takes no --value"),
        (
            &["--op", "2", "--resource", "event"],
            "--op 2 (delete) needs --value",
        ),
        (
            &["--op", "4", "--resource", "route"],
            "invalid value 'route' for '--resource <event>'",
        ),
        (
            &["--op", "4", "--resource", "event", "--path", "/events"],
            "not both",
        ),
        (&["--op", "4", "get"], "go after the command"),
        (&["--value", "[]"], "need a command or --op"),
        (&["get", "--name", "a/b"], "--name 'a/b'"),
        (&["get", "--timeout", "0"], "out of range"),
        (&["get", "--timeout", "x"], "not a number"),
        (&["get", "-o", "yaml"], "yaml"),
        (&["apply"], "--file"),
        (&["frobnicate"], "frobnicate"),
    ];
    for (args, want) in cases {
        let err = parse(args).unwrap_err();
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains('\n'), "{args:?}: one line, got {err:?}");
    }
}

#[test]
fn help_is_information_not_an_error() {
    let help = parse(&["--help"]).unwrap_err();
    assert!(help.starts_with("info: "), "{help}");
    assert!(help.contains("Exit codes"), "{help}");
    assert!(parse(&["--version"]).unwrap_err().contains(crate::VERSION));
}

#[test]
fn a_mistyped_subcommand_gets_a_suggestion() {
    let e = parse(&["gte"]).unwrap_err();
    assert!(
        e.contains("unrecognized subcommand 'gte' (tip: a similar subcommand exists: 'get')"),
        "{e}"
    );
    // Nothing near: no tip.
    let e = parse(&["zzzz"]).unwrap_err();
    assert!(!e.contains("tip:"), "{e}");
    // A flag too, by clap itself.
    let e = parse(&["get", "--hots", "x"]).unwrap_err();
    assert!(
        e.contains("tip: a similar argument exists: '--host'"),
        "{e}"
    );
}
