//! A listener found outside the trusted places hears the context as the
//! environment tells it: never a plugin's config, never the alias.

use crate::common;

use std::fs;
use std::path::Path;

use common::Sandbox;
use serde_json::Value;

/// A listener on the sandbox PATH that appends every event it hears to `file`.
fn recorder(sb: &Sandbox, name: &str, file: &Path) {
    sb.script(
        &format!("app-listener-{name}"),
        &format!("#!/bin/sh\ncat >> {}\n", file.display()),
    );
}

fn events(file: &Path) -> Vec<Value> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each event is one JSON line"))
        .collect()
}

#[test]
fn a_listener_found_only_on_path_never_hears_the_plugin_config() {
    let sb = Sandbox::new();
    let (path_log, trusted_log) = (
        sb.path().join("path-events"),
        sb.path().join("trusted-events"),
    );
    // `guard` exists only in a PATH directory; `audit` in APP_PLUGIN_PATH.
    recorder(&sb, "guard", &path_log);
    let trusted = sb.path().join("trusted");
    fs::create_dir_all(&trusted).unwrap();
    common::write_executable(
        &trusted.join("app-listener-audit"),
        &format!("#!/bin/sh\ncat >> {}\n", trusted_log.display()),
    );
    common::write_executable(&trusted.join("app-db"), "#!/bin/sh\nexit 0\n");
    sb.write_config(
        r#"{"listeners": [{"name": "guard"}, {"name": "audit"}],
            "aliases": {"dbx": "db"},
            "plugins": {"db": {"config": {"db_password": "s3cret-pw-42"}}}}"#,
    );
    for args in [&["dbx"][..], &["version"]] {
        let _ = fs::remove_file(&path_log);
        let _ = fs::remove_file(&trusted_log);
        sb.run(args)
            .env("APP_PLUGIN_PATH", &trusted)
            .assert()
            .code(0);
        let (heard, trusted_heard) = (events(&path_log), events(&trusted_log));
        assert_eq!(heard.len(), 2, "{args:?}: {heard:?}");
        assert_eq!(trusted_heard.len(), 2, "{args:?}: {trusted_heard:?}");
        // The PATH listener hears the command and the environment's context ...
        assert_eq!(heard[0]["event"], "command.start");
        assert_eq!(heard[0]["command"], trusted_heard[0]["command"]);
        assert_eq!(
            heard[0]["context"]["plugin_name"],
            trusted_heard[0]["context"]["plugin_name"]
        );
        assert_eq!(heard[0]["context"]["plugin_config"], Value::Null);
        assert_eq!(heard[0]["context"]["alias"], Value::Null);
        let raw = fs::read_to_string(&path_log).unwrap();
        assert!(!raw.contains("s3cret-pw-42"), "{args:?}: {raw}");
        if args == ["dbx"] {
            // ... while the trusted one gets the whole JSON context: the
            // secret would have been seen.
            assert_eq!(
                trusted_heard[0]["context"]["plugin_config"]["db_password"],
                "s3cret-pw-42"
            );
            assert_eq!(trusted_heard[0]["context"]["alias"]["name"], "dbx");
        }
    }
}

/// A trusted plugin that declares `pin` a secret config key in its
/// metadata (`secrets`), and one beside it that declares nothing.
fn declaring_plugins(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    for (name, secrets) in [("db", r#","secrets":["pin"]"#), ("plain", "")] {
        common::write_executable(
            &dir.join(format!("app-{name}")),
            &format!(
                "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n  echo '{{\"apiVersion\":\"app.plugin/v1\",\"name\":\"{name}\"{secrets}}}'\nfi\nexit 0\n"
            ),
        );
    }
}

#[test]
fn a_plugins_declared_secret_config_keys_are_masked_by_the_tracer_and_kept_from_path_listeners() {
    let sb = Sandbox::new();
    let (path_log, trusted_log) = (
        sb.path().join("path-events"),
        sb.path().join("trusted-events"),
    );
    recorder(&sb, "guard", &path_log);
    let trusted = sb.path().join("trusted");
    declaring_plugins(&trusted);
    common::write_executable(
        &trusted.join("app-listener-audit"),
        &format!("#!/bin/sh\ncat >> {}\n", trusted_log.display()),
    );
    sb.write_config(
        r#"{"listeners": [{"name": "tracer"}, {"name": "guard"}, {"name": "audit"}],
            "plugins": {"db": {"config": {"pin": "SECRETcfg", "db_password": "SECRETpw"}}}}"#,
    );
    sb.run(["db", "--pin", "SECRETflag", "--name", "shown"])
        .env("APP_PLUGIN_PATH", &trusted)
        .assert()
        .code(0);
    let log = fs::read_to_string(sb.data_dir().join("tracer.log")).expect("tracer.log");
    assert!(!log.contains("SECRET"), "tracer.log: {log}");
    assert!(log.contains("db --pin '***' --name shown"), "{log}");
    // The PATH listener hears that `pin` is secret, never the config.
    let heard = events(&path_log);
    assert_eq!(heard.len(), 2, "{heard:?}");
    assert_eq!(heard[0]["secrets"], serde_json::json!(["pin"]));
    assert_eq!(heard[1]["secrets"], serde_json::json!(["pin"]));
    assert_eq!(heard[0]["context"]["plugin_config"], Value::Null);
    let raw = fs::read_to_string(&path_log).unwrap();
    assert!(
        !raw.contains("SECRETcfg") && !raw.contains("SECRETpw"),
        "{raw}"
    );
    // Positive controls: the trusted listener gets the config (it would
    // have been seen), and a plugin that declares nothing has its `--pin`
    // logged as typed.
    let trusted_heard = events(&trusted_log);
    assert_eq!(
        trusted_heard[0]["context"]["plugin_config"]["pin"],
        "SECRETcfg"
    );
    sb.run(["plain", "--pin", "typed-1234"])
        .env("APP_PLUGIN_PATH", &trusted)
        .assert()
        .code(0);
    let log = fs::read_to_string(sb.data_dir().join("tracer.log")).unwrap();
    assert!(log.contains("plain --pin typed-1234"), "{log}");
}

#[test]
fn a_path_listener_hears_the_command_line_with_its_secrets_masked() {
    let sb = Sandbox::new();
    let (path_log, trusted_log) = (
        sb.path().join("path-events"),
        sb.path().join("trusted-events"),
    );
    // The PATH listener records its environment too: APP_COMMAND is the
    // command line as well.
    sb.script(
        "app-listener-guard",
        &format!(
            "#!/bin/sh\nenv >> {f}\ncat >> {f}\n",
            f = path_log.display()
        ),
    );
    let trusted = sb.path().join("trusted");
    declaring_plugins(&trusted);
    common::write_executable(
        &trusted.join("app-listener-audit"),
        &format!(
            "#!/bin/sh\nenv >> {f}\ncat >> {f}\n",
            f = trusted_log.display()
        ),
    );
    sb.write_config(r#"{"listeners": [{"name": "guard"}, {"name": "audit"}]}"#);
    let secrets = ["tok-S3CRET", "pw-S3CRET", "q-S3CRET", "pin-S3CRET"];
    sb.run([
        "db",
        "--token",
        secrets[0],
        "--sink",
        "mqtt://user:pw-S3CRET@h:1883",
        "http://h/x?k=q-S3CRET",
        "--pin=pin-S3CRET",
        "--name",
        "shown-name",
    ])
    .env("APP_PLUGIN_PATH", &trusted)
    .assert()
    .code(0);
    let heard = fs::read_to_string(&path_log).expect("the PATH listener ran");
    for s in secrets {
        assert!(!heard.contains(s), "{s} reached the PATH listener: {heard}");
    }
    // It still hears the command, masked where it must be.
    assert!(heard.contains("shown-name"), "{heard}");
    assert!(heard.contains("APP_COMMAND="), "{heard}");
    // The positive control: the trusted listener hears it all as typed.
    let trusted_heard = fs::read_to_string(&trusted_log).expect("the trusted listener ran");
    for s in secrets {
        assert!(
            trusted_heard.contains(s),
            "{s} not heard by the trusted listener"
        );
    }
}
