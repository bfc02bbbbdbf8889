//! Which plugin a command names: longest match, dashes and underscores,
//! search order, aliases, builtins, unknown commands, help, `plugin path`,
//! the config, and the metadata query.

use crate::common;

use std::fs;
use std::time::Duration;

use common::{write_executable, Sandbox};

use super::{stdin_context_plugin, ECHO_PLUGIN};

#[test]
fn longest_match_wins_and_the_rest_are_arguments() {
    let sb = Sandbox::new();
    sb.script("app-foo", "#!/bin/sh\necho foo \"$@\"\n");
    sb.script("app-foo-bar", "#!/bin/sh\necho foo-bar \"$@\"\n");
    sb.run(["foo", "bar", "baz", "--x"])
        .assert()
        .stdout_is("foo-bar baz --x");
    // Words after a flag never name the plugin.
    sb.run(["foo", "--x", "bar"])
        .assert()
        .stdout_is("foo --x bar");
    sb.run(["foo", "qux"]).assert().stdout_is("foo qux");
}

#[test]
fn a_dash_matches_an_underscore_in_the_file_name() {
    let sb = Sandbox::new();
    sb.script(
        "app-foo_bar",
        "#!/bin/sh\necho underscored \"$APP_PLUGIN_NAME\"\n",
    );
    sb.run(["foo-bar"])
        .assert()
        .code(0)
        .stdout_is("underscored foo_bar");
}

#[test]
fn first_in_search_order_wins_and_plugin_list_warns_about_the_shadowed_one() {
    let sb = Sandbox::new();
    let early = sb.path().join("early");
    fs::create_dir_all(&early).unwrap();
    write_executable(&early.join("app-dup"), "#!/bin/sh\necho early\n");
    let late = sb.script("app-dup", "#!/bin/sh\necho late\n");
    sb.run(["dup"])
        .env("APP_PLUGIN_PATH", &early)
        .assert()
        .stdout_is("early");
    // Warnings make plugin list fail.
    sb.run(["plugin", "list"])
        .env("APP_PLUGIN_PATH", &early)
        .assert()
        .code(1)
        .stderr_has(format!("{} is shadowed by", late.display()));
}

#[test]
fn aliases_expand_with_quotes_and_cannot_loop_or_shadow_builtins() {
    let sb = Sandbox::new();
    sb.script("app-hello", ECHO_PLUGIN);
    sb.write_config(
        r#"{"aliases": {"hi": "hello 'a b' \"c d\"", "again": "hi more",
                        "loop1": "loop2", "loop2": "loop1", "version": "hello"}}"#,
    );
    let out = sb.run(["again", "tail"]).assert().code(0);
    assert_eq!(
        &out.lines()[..4],
        ["arg=a b", "arg=c d", "arg=more", "arg=tail"]
    );
    sb.run(["loop1"])
        .assert()
        .code(2)
        .stderr_has("loop1 -> loop2 -> loop1");
    let out = sb.run(["version"]).assert();
    assert!(
        out.stdout.starts_with("app "),
        "built-in wins over alias: {out:?}"
    );
}

#[test]
fn a_plugin_file_cannot_replace_a_builtin() {
    let sb = Sandbox::new();
    let fake = sb.script("app-version", "#!/bin/sh\necho fake\n");
    sb.run(["version"])
        .assert()
        .stdout_is(format!("app {}", env!("CARGO_PKG_VERSION")));
    sb.run(["plugin", "list"])
        .assert()
        .code(1)
        .stderr_has(fake.display().to_string())
        .stderr_has("built-in command 'version'");
}

#[test]
fn unknown_commands_exit_127_with_a_suggestion_only_when_close() {
    let sb = Sandbox::new();
    sb.script("app-event-repeater", "#!/bin/sh\n");
    sb.run(["evnt-repeater"])
        .assert()
        .code(127)
        .stderr_has("app: 'evnt-repeater' is not an app command or plugin")
        .stderr_has("did you mean 'event-repeater'?");
    sb.run(["zzzzzz"])
        .assert()
        .code(127)
        .stderr_lacks("did you mean");
}

#[test]
fn untrusted_plugins_on_path_are_never_asked_for_metadata() {
    let sb = Sandbox::new();
    let marker = sb.path().join("ran");
    sb.script(
        "app-plain",
        &format!("#!/bin/sh\necho \"$@\" >> {}\n", marker.display()),
    );
    sb.run(["plugin", "list"]).assert();
    sb.run(["help"]).assert();
    assert!(!marker.exists(), "plugin list/help ran an untrusted plugin");
    sb.run(["plain", "x"]).assert();
    assert_eq!(fs::read_to_string(&marker).unwrap(), "x\n");
}

#[test]
fn help_lists_plugins_with_descriptions_and_aliases() {
    let sb = Sandbox::new();
    let dir = stdin_context_plugin(&sb, "exit 0\n");
    sb.script("app-plain", "#!/bin/sh\n");
    sb.write_config(r#"{"aliases": {"routes": "ctx get"}}"#);
    let out = sb
        .run(["--help"])
        .env("APP_PLUGIN_PATH", &dir)
        .assert()
        .code(0)
        .stdout_has("routes = ctx get");
    let text = &out.stdout;
    let plugins = text.split("Plugins:").nth(1).expect("a Plugins: section");
    assert!(
        plugins.contains("ctx") && plugins.contains("needs context"),
        "{text}"
    );
    assert!(plugins.contains("plain"), "{text}");
}

#[test]
fn plugin_path_reaches_plugins_unchanged() {
    let sb = Sandbox::new();
    sb.script("app-hello", ECHO_PLUGIN);
    sb.run(["hello"])
        .env("APP_PLUGIN_PATH", "/nowhere:relative")
        .assert()
        .stdout_has("\nplugin_path=/nowhere:relative\n");
}

#[test]
fn plugin_path_prints_what_a_command_resolves_to() {
    let sb = Sandbox::new();
    let p = sb.script("app-foo-bar", "#!/bin/sh\n");
    sb.run(["plugin", "path", "foo", "bar"])
        .assert()
        .stdout_is(p.display().to_string());
    sb.run(["plugin", "path", "nope"]).assert().code(127);
}

#[test]
fn an_invalid_config_is_an_error_naming_the_place_but_not_while_completing() {
    let sb = Sandbox::new();
    sb.script("app-hello", ECHO_PLUGIN);
    sb.write_config("{\n  \"aliases\": {\"x\": 1}\n}");
    sb.run(["hello"])
        .assert()
        .code(1)
        .stderr_has("config.json is not valid")
        .stderr_has("line 2");
    sb.run(["__complete", "hel"])
        .assert()
        .code(0)
        .no_stderr()
        .stdout_has("hello");
}

#[test]
fn builtin_subcommands_have_their_own_help_and_app_help_lists_plugins() {
    let sb = Sandbox::new();
    sb.script("app-foo", "#!/bin/sh\n");
    sb.script("app-foo-bar", "#!/bin/sh\n");
    sb.run(["plugin", "list", "--help"])
        .assert()
        .code(0)
        .stdout_has("Usage: app plugin list");
    for flag in ["--help", "-h"] {
        // A nested plugin shows the way it is typed.
        sb.run(["--log", "3", flag])
            .assert()
            .code(0)
            .stdout_has("Plugins:")
            .stdout_has("  foo bar");
    }
    // A plugin's --help is the plugin's.
    sb.run(["foo", "--help"]).assert().code(0);
}

#[test]
fn metadata_is_asked_once_and_asked_again_when_the_plugin_changes() {
    let sb = Sandbox::new();
    let dir = sb.path().join("trusted");
    fs::create_dir_all(&dir).unwrap();
    let asked = sb.path().join("asked");
    let body = |desc: &str| {
        format!(
            "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n  echo x >> {}\n  echo '{{\"apiVersion\":\"app.plugin/v1\",\"description\":\"{desc}\"}}'\n  exit 0\nfi\necho ran\n",
            asked.display()
        )
    };
    let plugin = write_executable(&dir.join("app-meta"), &body("first"));
    let list = |sb: &Sandbox| {
        sb.run(["plugin", "list"])
            .env("APP_PLUGIN_PATH", &dir)
            .assert()
    };
    list(&sb).stdout_has("first");
    list(&sb).stdout_has("first");
    sb.run(["meta"])
        .env("APP_PLUGIN_PATH", &dir)
        .assert()
        .stdout_is("ran");
    let times = || {
        fs::read_to_string(&asked)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(times(), 1, "the answer is cached");
    // A new file (other size) is asked again.
    write_executable(&plugin, &body("second, longer"));
    list(&sb).stdout_has("second, longer");
    assert_eq!(times(), 2);
}

#[test]
fn a_plugin_that_does_not_answer_metadata_is_a_plain_plugin_after_about_a_second() {
    let sb = Sandbox::new();
    let dir = sb.path().join("trusted");
    fs::create_dir_all(&dir).unwrap();
    write_executable(
        &dir.join("app-mute"),
        "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then exec sleep 30; fi\necho \"plain $APP_CONTEXT\"\n",
    );
    let t = std::time::Instant::now();
    let mute = || sb.run(["mute"]).env("APP_PLUGIN_PATH", &dir).assert();
    mute().stdout_is("plain env");
    let took = t.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    // The absence of an answer is cached too: no second wait.
    let t = std::time::Instant::now();
    mute();
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "took {:?}",
        t.elapsed()
    );
}
