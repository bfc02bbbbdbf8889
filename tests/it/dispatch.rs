//! The dispatcher against real third-party plugins: shell and Python scripts
//! and a compiled binary, made in a temp dir and put on the sandbox PATH.

use crate::common;

use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};
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

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("run app")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn lines(out: &Output) -> Vec<String> {
    stdout(out).lines().map(String::from).collect()
}

#[test]
fn runs_a_shell_plugin_with_args_untouched_and_context_in_env() {
    let sb = Sandbox::new();
    let plugin = sb.script("app-hello", ECHO_PLUGIN);
    let out = run(sb
        .app()
        .args(["hello", "two words", "ünïcødé ✓", "--flag", ""]));
    assert!(out.status.success(), "{}", stderr(&out));
    let l = lines(&out);
    assert_eq!(
        &l[..4],
        ["arg=two words", "arg=ünïcødé ✓", "arg=--flag", "arg="]
    );
    assert!(l.contains(&"name=hello".to_string()));
    assert!(l.contains(&"log=2".to_string()), "{l:?}");
    assert!(l.contains(&"context=env".to_string()));
    assert!(l.contains(&"version=1".to_string()));
    assert!(l.contains(&format!("exe={}", plugin.display())));
    assert!(l.contains(&format!("bin={}", common::app_bin().display())));
    assert!(l.contains(&format!("runtime={}", sb.runtime_dir().display())));
    assert!(
        l.contains(&"command=app hello 'two words' 'ünïcødé ✓' --flag ''".to_string())
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
    let out = run(sb.app().args(["py", "a b", "c"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "['a b', 'c'] py");
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
    let out = run(sb.app().args(["compiled", "x y", "-z"]));
    assert_eq!(out.status.code(), Some(7));
    assert_eq!(stdout(&out).trim(), "[x y][-z]");
}

#[test]
fn longest_match_wins_and_the_rest_are_arguments() {
    let sb = Sandbox::new();
    sb.script("app-foo", "#!/bin/sh\necho foo \"$@\"\n");
    sb.script("app-foo-bar", "#!/bin/sh\necho foo-bar \"$@\"\n");
    let out = run(sb.app().args(["foo", "bar", "baz", "--x"]));
    assert_eq!(stdout(&out).trim(), "foo-bar baz --x");
    let out = run(sb.app().args(["foo", "--x", "bar"]));
    assert_eq!(
        stdout(&out).trim(),
        "foo --x bar",
        "words after a flag never name the plugin"
    );
    let out = run(sb.app().args(["foo", "qux"]));
    assert_eq!(stdout(&out).trim(), "foo qux");
}

#[test]
fn a_dash_matches_an_underscore_in_the_file_name() {
    let sb = Sandbox::new();
    sb.script(
        "app-foo_bar",
        "#!/bin/sh\necho underscored \"$APP_PLUGIN_NAME\"\n",
    );
    let out = run(sb.app().args(["foo-bar"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), "underscored foo_bar");
}

#[test]
fn first_in_search_order_wins_and_plugin_list_warns_about_the_shadowed_one() {
    let sb = Sandbox::new();
    let early = sb.path().join("early");
    fs::create_dir_all(&early).unwrap();
    write_executable(&early.join("app-dup"), "#!/bin/sh\necho early\n");
    let late = sb.script("app-dup", "#!/bin/sh\necho late\n");
    let out = run(sb.app().env("APP_PLUGIN_PATH", &early).arg("dup"));
    assert_eq!(stdout(&out).trim(), "early");

    let list = run(sb
        .app()
        .env("APP_PLUGIN_PATH", &early)
        .args(["plugin", "list"]));
    assert_eq!(
        list.status.code(),
        Some(1),
        "warnings make plugin list fail"
    );
    let err = stderr(&list);
    assert!(
        err.contains(&format!("{} is shadowed by", late.display())),
        "{err}"
    );
}

#[test]
fn a_file_without_the_run_bit_gets_a_clear_message() {
    let sb = Sandbox::new();
    let path = sb.bin_dir().join("app-noexec");
    fs::write(&path, "#!/bin/sh\necho hi\n").unwrap();
    let out = run(sb.app().arg("noexec"));
    assert_eq!(out.status.code(), Some(126));
    let err = stderr(&out);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("chmod +x"), "{err}");
    // Data beside a plugin (cargo's .d files, man pages) is not a broken plugin.
    fs::write(sb.bin_dir().join("app-other.d"), "deps").unwrap();
    let list = run(sb.app().args(["plugin", "list"]));
    assert!(stderr(&list).contains("is not executable"));
    assert!(!stderr(&list).contains("app-other.d"), "{}", stderr(&list));
    assert_eq!(list.status.code(), Some(1));
}

#[test]
fn a_bad_interpreter_names_the_file_and_the_interpreter() {
    let sb = Sandbox::new();
    let path = sb.script("app-badinterp", "#!/nonexistent/bash\necho hi\n");
    let out = run(sb.app().arg("badinterp"));
    assert_eq!(out.status.code(), Some(126));
    let err = stderr(&out);
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("'/nonexistent/bash'"), "{err}");
}

#[test]
fn exit_codes_pass_through() {
    let sb = Sandbox::new();
    sb.script("app-fail", "#!/bin/sh\nexit 42\n");
    assert_eq!(run(sb.app().arg("fail")).status.code(), Some(42));
}

#[test]
fn a_plugin_killed_by_sigterm_ends_app_the_same_way() {
    let sb = Sandbox::new();
    sb.script("app-selfkill", "#!/bin/sh\nkill -TERM $$\nsleep 5\n");
    let out = run(sb.app().arg("selfkill"));
    // exec mode: the process *is* the plugin, so it dies of the signal;
    // a shell reports that as 143.
    assert_eq!(out.status.signal(), Some(15));
    let shell = run(sb.command("/bin/sh").args([
        "-c",
        &format!("{} selfkill; echo $?", common::app_bin().display()),
    ]));
    assert_eq!(stdout(&shell).trim(), "143");
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
    let out = run(sb.app().args([
        "--log",
        "5",
        "-H",
        "unix:///x.sock",
        "-H",
        "http://127.0.0.1:1",
        "hello",
        "--log",
        "1",
    ]));
    assert!(out.status.success(), "{}", stderr(&out));
    let l = lines(&out);
    assert_eq!(&l[..2], ["arg=--log", "arg=1"]);
    assert!(l.contains(&"log=5".to_string()), "{l:?}");
    assert!(
        l.contains(&"hosts=unix:///x.sock,http://127.0.0.1:1".to_string()),
        "{l:?}"
    );
}

#[test]
fn a_bad_global_flag_is_a_usage_error() {
    let sb = Sandbox::new();
    let out = run(sb.app().args(["--log", "9", "hello"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--log"), "{}", stderr(&out));
}

#[test]
fn aliases_expand_with_quotes_and_cannot_loop_or_shadow_builtins() {
    let sb = Sandbox::new();
    sb.script("app-hello", ECHO_PLUGIN);
    sb.write_config(
        r#"{"aliases": {"hi": "hello 'a b' \"c d\"", "again": "hi more",
                        "loop1": "loop2", "loop2": "loop1", "version": "hello"}}"#,
    );
    let out = run(sb.app().args(["again", "tail"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        &lines(&out)[..4],
        ["arg=a b", "arg=c d", "arg=more", "arg=tail"]
    );
    let out = run(sb.app().arg("loop1"));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("loop1 -> loop2 -> loop1"),
        "{}",
        stderr(&out)
    );
    let out = run(sb.app().arg("version"));
    assert!(stdout(&out).starts_with("app "), "built-in wins over alias");
}

#[test]
fn a_plugin_file_cannot_replace_a_builtin() {
    let sb = Sandbox::new();
    let fake = sb.script("app-version", "#!/bin/sh\necho fake\n");
    let out = run(sb.app().arg("version"));
    assert_eq!(
        stdout(&out).trim(),
        format!("app {}", env!("CARGO_PKG_VERSION"))
    );
    let list = run(sb.app().args(["plugin", "list"]));
    assert_eq!(list.status.code(), Some(1));
    let err = stderr(&list);
    assert!(err.contains(&fake.display().to_string()), "{err}");
    assert!(err.contains("built-in command 'version'"), "{err}");
}

#[test]
fn unknown_commands_exit_127_with_a_suggestion_only_when_close() {
    let sb = Sandbox::new();
    sb.script("app-event-repeater", "#!/bin/sh\n");
    let out = run(sb.app().arg("evnt-repeater"));
    assert_eq!(out.status.code(), Some(127));
    let err = stderr(&out);
    assert!(
        err.contains("app: 'evnt-repeater' is not an app command or plugin"),
        "{err}"
    );
    assert!(err.contains("did you mean 'event-repeater'?"), "{err}");
    let out = run(sb.app().arg("zzzzzz"));
    assert_eq!(out.status.code(), Some(127));
    assert!(!stderr(&out).contains("did you mean"));
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
    let mut child = sb
        .app()
        .env("APP_PLUGIN_PATH", &dir)
        .args(["--log", "4", "ctx", "x y"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"user line 1\nuser line 2\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let (ctx_line, rest) = text.split_once("\n---\n").expect("separator");
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
    run(sb.app().args(["plugin", "list"]));
    run(sb.app().arg("help"));
    assert!(!marker.exists(), "plugin list/help ran an untrusted plugin");
    run(sb.app().args(["plain", "x"]));
    assert_eq!(fs::read_to_string(&marker).unwrap(), "x\n");
}

#[test]
fn help_lists_plugins_with_descriptions_and_aliases() {
    let sb = Sandbox::new();
    let dir = stdin_context_plugin(&sb, "exit 0\n");
    sb.script("app-plain", "#!/bin/sh\n");
    sb.write_config(r#"{"aliases": {"routes": "ctx get"}}"#);
    let out = run(sb.app().env("APP_PLUGIN_PATH", &dir).arg("--help"));
    assert!(out.status.success());
    let text = stdout(&out);
    let plugins = text.split("Plugins:").nth(1).expect("a Plugins: section");
    assert!(
        plugins.contains("ctx") && plugins.contains("needs context"),
        "{text}"
    );
    assert!(plugins.contains("plain"), "{text}");
    assert!(text.contains("routes = ctx get"), "{text}");
}

#[test]
fn in_exec_mode_the_plugin_replaces_app() {
    let sb = Sandbox::new();
    sb.script("app-ppid", "#!/bin/sh\necho $PPID\n");
    let out = run(sb.app().arg("ppid"));
    assert_eq!(stdout(&out).trim(), std::process::id().to_string());
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
        (!process_alive(pid)).then_some(())
    });
    assert!(gone.is_some(), "plugin {pid} outlived app");
}

#[test]
fn plugin_path_reaches_plugins_unchanged() {
    let sb = Sandbox::new();
    sb.script("app-hello", ECHO_PLUGIN);
    let out = run(sb
        .app()
        .env("APP_PLUGIN_PATH", "/nowhere:relative")
        .arg("hello"));
    assert!(lines(&out).contains(&"plugin_path=/nowhere:relative".to_string()));
}

#[test]
fn plugin_path_prints_what_a_command_resolves_to() {
    let sb = Sandbox::new();
    let p = sb.script("app-foo-bar", "#!/bin/sh\n");
    let out = run(sb.app().args(["plugin", "path", "foo", "bar"]));
    assert_eq!(stdout(&out).trim(), p.display().to_string());
    let out = run(sb.app().args(["plugin", "path", "nope"]));
    assert_eq!(out.status.code(), Some(127));
}

fn process_alive(pid: i32) -> bool {
    // A zombie still answers kill(0); read its state instead.
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
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
    let out = run(sb.app().arg("hello"));
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("config.json is not valid") && err.contains("line 2"),
        "{err}"
    );
    let out = run(sb.app().args(["__complete", "hel"]));
    assert!(out.status.success());
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
    assert!(stdout(&out).contains("hello"), "{}", stdout(&out));
}

#[test]
fn builtin_subcommands_have_their_own_help_and_app_help_lists_plugins() {
    let sb = Sandbox::new();
    sb.script("app-foo", "#!/bin/sh\n");
    sb.script("app-foo-bar", "#!/bin/sh\n");
    let out = run(sb.app().args(["plugin", "list", "--help"]));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("Usage: app plugin list"),
        "{}",
        stdout(&out)
    );
    for flag in ["--help", "-h"] {
        let out = run(sb.app().args(["--log", "3", flag]));
        assert!(out.status.success());
        let text = stdout(&out);
        assert!(text.contains("Plugins:"), "{text}");
        // A nested plugin shows the way it is typed.
        assert!(text.contains("  foo bar"), "{text}");
    }
    let out = run(sb.app().args(["foo", "--help"]));
    assert!(out.status.success(), "a plugin's --help is the plugin's");
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
        stdout(&run(sb
            .app()
            .env("APP_PLUGIN_PATH", &dir)
            .args(["plugin", "list"])))
    };
    assert!(list(&sb).contains("first"));
    assert!(list(&sb).contains("first"));
    let out = run(sb.app().env("APP_PLUGIN_PATH", &dir).arg("meta"));
    assert_eq!(stdout(&out).trim(), "ran");
    let times = || {
        fs::read_to_string(&asked)
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(times(), 1, "the answer is cached");
    // A new file (other size) is asked again.
    write_executable(&plugin, &body("second, longer"));
    assert!(list(&sb).contains("second, longer"));
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
    let out = run(sb.app().env("APP_PLUGIN_PATH", &dir).arg("mute"));
    let took = t.elapsed();
    assert_eq!(stdout(&out).trim(), "plain env");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    // The absence of an answer is cached too: no second wait.
    let t = std::time::Instant::now();
    run(sb.app().env("APP_PLUGIN_PATH", &dir).arg("mute"));
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "took {:?}",
        t.elapsed()
    );
}
