//! The dispatcher against real third-party plugins: shell and Python scripts
//! and a compiled binary, made in a temp dir and put on the sandbox PATH.

use crate::common;

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{write_executable, Sandbox};

/// A plugin that prints its arguments one per line, then selected context variables.
const ECHO_PLUGIN: &str = r#"#!/bin/sh
for a in "$@"; do printf 'arg=%s\n' "$a"; done
printf 'name=%s\n' "$APP_PLUGIN_NAME"
printf 'log=%s\n' "$APP_LOG"
printf 'hosts=%s\n' "$APP_HOSTS"
printf 'command=%s\n' "$APP_COMMAND"
printf 'context=%s\n' "$APP_CONTEXT"
printf 'version=%s\n' "$APP_CONTEXT_VERSION"
printf 'exe=%s\n' "$APP_PLUGIN_EXE"
printf 'bin=%s\n' "$APP_BIN"
printf 'runtime=%s\n' "$APP_RUNTIME_DIR"
printf 'plugin_path=%s\n' "$APP_PLUGIN_PATH"
"#;

#[test]
fn runs_a_shell_plugin_with_args_untouched_and_context_in_env() {
    let sb = Sandbox::new();
    let plugin = sb.script("app-hello", ECHO_PLUGIN);
    let out = sb
        .run(["hello", "two words", "ünïcødé ✓", "--flag", ""])
        .assert()
        .code(0);
    let l = out.lines();
    assert_eq!(
        &l[..4],
        ["arg=two words", "arg=ünïcødé ✓", "arg=--flag", "arg="]
    );
    let has = |line: String| assert!(l.contains(&line.as_str()), "no {line:?} in {l:?}");
    has("name=hello".into());
    has("log=2".into());
    has("context=env".into());
    has("version=1".into());
    has(format!("exe={}", plugin.display()));
    has(format!("bin={}", common::app_bin().display()));
    has(format!("runtime={}", sb.runtime_dir().display()));
    assert!(
        l.contains(&"command=app hello 'two words' 'ünïcødé ✓' --flag ''")
            || l.iter()
                .any(|x| x.starts_with("command=") && x.contains("'two words'")),
        "{l:?}"
    );
}

#[test]
fn runs_a_python_plugin() {
    if common::require_tool("python3", "python3").is_none() {
        return;
    }
    let sb = Sandbox::new();
    sb.script(
        "app-py",
        "#!/usr/bin/env python3\nimport os, sys\nprint(sys.argv[1:], os.environ['APP_PLUGIN_NAME'])\n",
    );
    sb.run(["py", "a b", "c"])
        .assert()
        .code(0)
        .stdout_is("['a b', 'c'] py");
}

#[test]
fn runs_a_compiled_plugin() {
    let sb = Sandbox::new();
    let src = sb.path().join("bin.c");
    fs::write(
        &src,
        "#include <stdio.h>\nint main(int c, char **v){ for(int i=1;i<c;i++) printf(\"[%s]\", v[i]); puts(\"\"); return 7; }\n",
    )
    .unwrap();
    let status = Command::new("cc")
        .arg("-o")
        .arg(sb.bin_dir().join("app-compiled"))
        .arg(&src)
        .status()
        .expect("cc is needed to build a compiled test plugin");
    assert!(status.success());
    sb.run(["compiled", "x y", "-z"])
        .assert()
        .code(7)
        .stdout_is("[x y][-z]");
}

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
fn a_file_without_the_run_bit_gets_a_clear_message() {
    let sb = Sandbox::new();
    let path = sb.bin_dir().join("app-noexec");
    fs::write(&path, "#!/bin/sh\necho hi\n").unwrap();
    sb.run(["noexec"])
        .assert()
        .code(126)
        .stderr_has(path.display().to_string())
        .stderr_has("chmod +x");
    // Data beside a plugin (cargo's .d files, man pages) is not a broken plugin.
    fs::write(sb.bin_dir().join("app-other.d"), "deps").unwrap();
    sb.run(["plugin", "list"])
        .assert()
        .stderr_has("is not executable")
        .stderr_lacks("app-other.d")
        .code(1);
}

#[test]
fn a_bad_interpreter_names_the_file_and_the_interpreter() {
    let sb = Sandbox::new();
    let path = sb.script("app-badinterp", "#!/nonexistent/bash\necho hi\n");
    sb.run(["badinterp"])
        .assert()
        .code(126)
        .stderr_has(path.display().to_string())
        .stderr_has("'/nonexistent/bash'");
}

#[test]
fn exit_codes_pass_through() {
    let sb = Sandbox::new();
    sb.script("app-fail", "#!/bin/sh\nexit 42\n");
    sb.run(["fail"]).assert().code(42);
}

#[test]
fn a_plugin_killed_by_sigterm_ends_app_the_same_way() {
    let sb = Sandbox::new();
    sb.script("app-selfkill", "#!/bin/sh\nkill -TERM $$\nsleep 5\n");
    // exec mode: the process *is* the plugin, so it dies of the signal;
    // a shell reports that as 143.
    sb.run(["selfkill"]).assert().signal(15);
    let shell = sb
        .command("/bin/sh")
        .args([
            "-c",
            &format!("{} selfkill; echo $?", common::app_bin().display()),
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run sh");
    assert_eq!(String::from_utf8_lossy(&shell.stdout).trim(), "143");
}

#[test]
fn stdin_reaches_a_plain_plugin_untouched() {
    let sb = Sandbox::new();
    sb.script("app-cat", "#!/bin/sh\nexec cat\n");
    let data: Vec<u8> = (0..=255u8).cycle().take(200_000).collect();
    let mut child = sb
        .app()
        .arg("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = data.clone();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success());
    assert!(out.stdout == data, "stdin must arrive byte for byte");
}

#[test]
fn global_flags_before_the_plugin_reach_it_and_flags_after_are_its_own() {
    let sb = Sandbox::new();
    sb.script("app-hello", ECHO_PLUGIN);
    let out = sb
        .run([
            "--log",
            "5",
            "-H",
            "unix:///x.sock",
            "-H",
            "http://127.0.0.1:1",
            "hello",
            "--log",
            "1",
        ])
        .assert()
        .code(0);
    let l = out.lines();
    assert_eq!(&l[..2], ["arg=--log", "arg=1"]);
    assert!(l.contains(&"log=5"), "{l:?}");
    assert!(
        l.contains(&"hosts=unix:///x.sock,http://127.0.0.1:1"),
        "{l:?}"
    );
}

#[test]
fn a_bad_global_flag_is_a_usage_error() {
    let sb = Sandbox::new();
    sb.run(["--log", "9", "hello"])
        .assert()
        .code(2)
        .stderr_has("--log");
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

/// A trusted plugin (on APP_PLUGIN_PATH) that asks for the JSON context on stdin.
fn stdin_context_plugin(sb: &Sandbox, body: &str) -> std::path::PathBuf {
    let dir = sb.path().join("trusted");
    fs::create_dir_all(&dir).unwrap();
    write_executable(
        &dir.join("app-ctx"),
        &format!(
            "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n  echo '{{\"apiVersion\":\"app.plugin/v1\",\"description\":\"needs context\",\"context\":\"stdin\"}}'\n  exit 0\nfi\n{body}"
        ),
    );
    dir
}

#[test]
fn the_json_context_comes_first_on_stdin_then_the_users_stdin() {
    let sb = Sandbox::new();
    let dir = stdin_context_plugin(
        &sb,
        "IFS= read -r ctx\nprintf '%s\\n' \"$ctx\"\necho ---\ncat\n",
    );
    sb.write_config(r#"{"plugins": {"ctx": {"config": {"colour": "blue"}}}}"#);
    let out = sb
        .run(["--log", "4", "ctx", "x y"])
        .env("APP_PLUGIN_PATH", &dir)
        .stdin("user line 1\nuser line 2\n")
        .assert()
        .code(0);
    let (ctx_line, rest) = out.stdout.split_once("\n---\n").expect("separator");
    let ctx: serde_json::Value = serde_json::from_str(ctx_line).expect("context is JSON");
    assert_eq!(ctx["context_version"], 1);
    assert_eq!(ctx["plugin_name"], "ctx");
    assert_eq!(ctx["log"], 4);
    assert_eq!(ctx["args"], serde_json::json!(["x y"]));
    assert_eq!(ctx["global_args"], serde_json::json!(["--log", "4"]));
    assert_eq!(ctx["plugin_config"], serde_json::json!({"colour": "blue"}));
    assert_eq!(rest, "user line 1\nuser line 2\n");
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
fn in_exec_mode_the_plugin_replaces_app() {
    let sb = Sandbox::new();
    sb.script("app-ppid", "#!/bin/sh\necho $PPID\n");
    sb.run(["ppid"])
        .assert()
        .stdout_is(std::process::id().to_string());
}

#[test]
fn supervised_mode_forwards_sigterm_and_reports_the_childs_status() {
    let sb = Sandbox::new();
    let marker = sb.path().join("got-term");
    let dir = stdin_context_plugin(
        &sb,
        &format!(
            "trap 'echo term > {}; exit 3' TERM\necho ready\nwhile :; do sleep 0.05; done\n",
            marker.display()
        ),
    );
    let mut child = sb
        .app()
        .env("APP_PLUGIN_PATH", &dir)
        .arg("ctx")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = [0u8; 6];
    std::io::Read::read_exact(&mut out, &mut buf).unwrap();
    assert_eq!(&buf, b"ready\n");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait_timeout(&mut child, Duration::from_secs(5)).expect("app exits");
    assert_eq!(status.code(), Some(3), "app exits with the child's code");
    assert_eq!(fs::read_to_string(&marker).unwrap().trim(), "term");
}

#[test]
fn supervised_mode_leaves_no_orphan_when_app_is_killed() {
    let sb = Sandbox::new();
    let pidfile = sb.path().join("child.pid");
    let dir = stdin_context_plugin(
        &sb,
        &format!("echo $$ > {}\nexec sleep 30\n", pidfile.display()),
    );
    let mut child = sb
        .app()
        .env("APP_PLUGIN_PATH", &dir)
        .arg("ctx")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let pid: i32 = common::wait_for(Duration::from_secs(5), || {
        fs::read_to_string(&pidfile).ok()?.trim().parse().ok()
    })
    .expect("plugin started");
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = common::wait_for(Duration::from_secs(5), || {
        (!common::process::alive(pid)).then_some(())
    });
    assert!(gone.is_some(), "plugin {pid} outlived app");
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

fn wait_timeout(
    child: &mut std::process::Child,
    timeout: Duration,
) -> Option<std::process::ExitStatus> {
    common::wait_for(timeout, || child.try_wait().ok().flatten())
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
