//! Shell completion: `app __complete` (the protocol), `app completion <shell>`
//! (the scripts, which must match `completions/`), and real shells pressing
//! TAB: bash (plain, with bash-completion, interactive in tmux), zsh (tmux)
//! and fish (`complete -C`).
//!
//! The plugins here are stand-ins written as scripts: `app-demo` and
//! `app-demo-manage` in a trusted directory (APP_PLUGIN_PATH) opt in with
//! `"completion": true`; `app-kubish` on PATH has a kubectl-style
//! `app_complete-kubish` helper; `app-plain` on PATH has neither, offers
//! metadata with `"completion": true` all the same, and must never run: every
//! plugin here leaves a marker file when run other than for completion, and
//! the untrusted ones whenever they run at all.

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::completion::{Completer, Interactive, Shell};
use common::{app_bin, write_executable, Sandbox};

/// A sandbox with the stand-in plugins, an alias and a file to complete.
struct World {
    sb: Sandbox,
}

const DEMO: &str = r#"#!/bin/bash
# Stand-in for a shipped plugin that answers its own completions.
case "$1" in
__app_metadata)
  echo '{"apiVersion":"app.plugin/v1","name":"demo","description":"Stand-in relay","completion":true}' ;;
__complete)
  shift
  args=("$@"); cur=${args[${#args[@]}-1]}; prev=${args[${#args[@]}-2]:-}
  echo "$*" >> "$APP_RUNTIME_DIR/demo-complete-args"
  if [ "$prev" = --sinkprotocol ]; then cands=(mqtt stderr)
  elif [ "$prev" = --runtime ]; then cands=("$APP_RUNTIME_DIR")
  elif [ ${#args[@]} -eq 1 ]; then cands=($'run\tRun the relay' $'manage\tTalk to a running relay')
  elif [ "${args[0]}" = run ]; then cands=(--sinkprotocol --runtime)
  fi
  for c in "${cands[@]}"; do case $c in "$cur"*) printf '%s\n' "$c";; esac; done
  echo :4 ;;
*) touch "$APP_RUNTIME_DIR/ran-demo" ;;
esac
"#;

const DEMO_MANAGE: &str = r#"#!/bin/bash
case "$1" in
__app_metadata)
  echo '{"apiVersion":"app.plugin/v1","name":"demo-manage","description":"Stand-in manager","completion":true}' ;;
__complete)
  shift
  if [ $# -eq 1 ]; then
    for c in get post put delete apply; do case $c in "$1"*) echo "$c";; esac; done
  fi
  echo :4 ;;
*) touch "$APP_RUNTIME_DIR/ran-demo-manage" ;;
esac
"#;

/// Untrusted: whatever it is asked, running it is the bug.
const PLAIN: &str = r#"#!/bin/bash
touch "$MARKERS/ran-plain"
echo '{"apiVersion":"app.plugin/v1","completion":true,"description":"must not be asked"}'
printf 'never\n:4\n'
"#;

const KUBISH: &str = r#"#!/bin/bash
touch "$MARKERS/ran-kubish"
"#;

const KUBISH_HELPER: &str = r#"#!/bin/bash
echo "$*" > "$MARKERS/kubish-helper-args"
for c in $'alpha\tFirst letter' beta; do case $c in "${@: -1}"*) printf '%s\n' "$c";; esac; done
echo :4
"#;

impl World {
    fn new() -> World {
        let sb = Sandbox::new();
        let trusted = sb.path().join("plugins");
        fs::create_dir_all(&trusted).unwrap();
        write_executable(&trusted.join("app-demo"), DEMO);
        write_executable(&trusted.join("app-demo-manage"), DEMO_MANAGE);
        sb.script("app-plain", PLAIN);
        sb.script("app-kubish", KUBISH);
        sb.script("app_complete-kubish", KUBISH_HELPER);
        fs::create_dir_all(sb.path().join("markers")).unwrap();
        fs::write(sb.path().join("notes-file.txt"), "").unwrap();
        sb.write_config(r#"{"aliases": {"dm": "demo manage"}}"#);
        World { sb }
    }

    fn completer(&self) -> Completer<'_> {
        Completer::new(&self.sb)
            .env("APP_PLUGIN_PATH", self.sb.path().join("plugins"))
            .env("MARKERS", self.sb.path().join("markers"))
    }

    fn marker(&self, name: &str) -> PathBuf {
        self.sb.path().join("markers").join(name)
    }

    /// No untrusted plugin ran, and no plugin ran other than to complete.
    fn assert_nothing_ran(&self) {
        for m in ["ran-plain", "ran-kubish"] {
            assert!(!self.marker(m).exists(), "{m}: an untrusted plugin was run");
        }
        for m in ["ran-demo", "ran-demo-manage"] {
            let path = self.sb.runtime_dir().join(m);
            assert!(
                !path.exists(),
                "{m}: a plugin was run for real while completing"
            );
        }
    }
}

fn lines(answer: &str) -> Vec<&str> {
    answer.lines().collect()
}

#[test]
fn protocol_top_level_lists_builtins_plugins_and_aliases_with_descriptions() {
    let w = World::new();
    let answer = w.completer().protocol(&[""]);
    let l = lines(&answer);
    for want in [
        "demo\tStand-in relay",
        "plain",
        "kubish",
        "dm\talias for: demo manage",
        "plugin\tList, inspect, install, remove, upgrade and create plugins",
        "completion\tPrint a shell completion script (bash, zsh or fish)",
    ] {
        assert!(l.contains(&want), "{want:?} missing from:\n{answer}");
    }
    assert_eq!(l.last(), Some(&":4"));
    assert!(
        !answer.contains("__complete"),
        "hidden command offered:\n{answer}"
    );
    // demo-manage is reached as `demo manage`, so not offered at the top.
    assert!(!l.iter().any(|c| c.starts_with("demo-manage")), "{answer}");
    w.assert_nothing_ran();
}

#[test]
fn protocol_filters_by_prefix_and_skips_global_flags() {
    let w = World::new();
    let c = w.completer();
    assert_eq!(
        c.protocol(&["plu"]),
        "plugin\tList, inspect, install, remove, upgrade and create plugins\n:4\n"
    );
    assert_eq!(
        lines(&c.protocol(&["--log", "5", "-H", "unix:///x", "--log-format=json", "pl"])),
        [
            "plugin\tList, inspect, install, remove, upgrade and create plugins",
            "plain",
            ":4"
        ]
    );
    assert_eq!(c.protocol(&["--log", ""]), "0\n1\n2\n3\n4\n5\n:36\n");
    assert_eq!(c.protocol(&["--log-format", ""]), "text\njson\n:36\n");
    assert_eq!(c.protocol(&["--config", ""]), ":0\n");
    assert!(c.protocol(&["--lo"]).starts_with("--log\t"));
    let plugin = c.protocol(&["plugin", ""]);
    assert!(
        plugin.starts_with("list\t") && plugin.contains("\npath\t"),
        "{plugin}"
    );
    assert_eq!(c.protocol(&["completion", "z"]), "zsh\n:36\n");
    w.assert_nothing_ran();
}

#[test]
fn protocol_plugin_names_for_plugin_path_and_help() {
    let w = World::new();
    let c = w.completer();
    assert!(lines(&c.protocol(&["plugin", "path", ""])).contains(&"demo\tStand-in relay"));
    assert_eq!(
        lines(&c.protocol(&["plugin", "path", "demo", ""])),
        ["manage\tStand-in manager", ":4"]
    );
    let help = c.protocol(&["help", ""]);
    assert!(
        help.contains("version\t") && help.contains("kubish"),
        "{help}"
    );
    w.assert_nothing_ran();
}

#[test]
fn protocol_delegates_to_an_opted_in_plugin_with_its_context() {
    let w = World::new();
    let c = w.completer();
    assert_eq!(
        lines(&c.protocol(&["demo", ""])),
        [
            "run\tRun the relay",
            "manage\tTalk to a running relay",
            ":4"
        ]
    );
    assert_eq!(
        c.protocol(&["demo", "run", "--sinkprotocol", ""]),
        "mqtt\nstderr\n:4\n"
    );
    // Global flags before the plugin are ours; the plugin gets its words only.
    assert_eq!(
        c.protocol(&["--log", "1", "demo", "ru"]),
        "run\tRun the relay\n:4\n"
    );
    // Longest match: `demo manage` is app-demo-manage.
    assert_eq!(c.protocol(&["demo", "manage", "p"]), "post\nput\n:4\n");
    // The delegate runs with the plugin context in its environment.
    let runtime = w.sb.runtime_dir();
    assert_eq!(
        c.protocol(&["demo", "run", "--runtime", ""]),
        format!("{}\n:4\n", runtime.display())
    );
    let args = fs::read_to_string(runtime.join("demo-complete-args")).unwrap();
    assert!(args.lines().any(|l| l == "run --sinkprotocol "), "{args}");
    // An alias completes as what it stands for.
    assert_eq!(c.protocol(&["dm", "de"]), "delete\n:4\n");
    w.assert_nothing_ran();
}

#[test]
fn protocol_uses_an_app_complete_helper_and_never_runs_an_unknown_plugin() {
    let w = World::new();
    let c = w.completer();
    assert_eq!(
        c.protocol(&["kubish", "get", "a"]),
        "alpha\tFirst letter\n:4\n"
    );
    assert_eq!(
        fs::read_to_string(w.marker("kubish-helper-args")).unwrap(),
        "get a\n"
    );
    // No opt-in: the shell completes file names (directive 0), nothing is run.
    assert_eq!(c.protocol(&["plain", ""]), ":0\n");
    assert_eq!(c.protocol(&["plain", "sub", "--flag", "x"]), ":0\n");
    w.assert_nothing_ran();
}

#[test]
fn protocol_asks_a_plugin_on_path_that_the_config_trusts() {
    let w = World::new();
    w.sb.script("app-trusty", DEMO);
    w.sb.write_config(r#"{"plugins": {"trusty": {"trusted": true}}}"#);
    assert_eq!(
        w.completer()
            .protocol(&["trusty", "run", "--sinkprotocol", "m"]),
        "mqtt\n:4\n"
    );
}

/// Trusted, and hostile: its description and its answers hold an OSC
/// title, a screen clear, a C1 CSI and a right-to-left override.
const EVIL: &str = r#"#!/bin/bash
case "$1" in
__app_metadata)
  echo '{"apiVersion":"app.plugin/v1","name":"evil","description":"Evil \u001b]0;pwned\u0007\u001b[2J \u009b31m \u202egnp.exe","completion":true}' ;;
__complete)
  printf 'safe\tfine \033]0;pwned\007 \342\200\256gnp.exe\n'
  printf 'bad\033[2J\tvalue with ESC\n'
  echo :4 ;;
esac
"#;

#[test]
fn a_hostile_plugins_descriptions_reach_the_shell_escaped() {
    let w = World::new();
    write_executable(&w.sb.path().join("plugins").join("app-evil"), EVIL);
    let c = w.completer();
    let raw = ['\x1b', '\x07', '\u{9b}', '\u{202e}'];
    let top = c.protocol(&["ev"]);
    // Positive control: the plugin's description was read (and shown escaped).
    assert!(
        top.contains("evil\tEvil \\x1b]0;pwned\\x07\\x1b[2J \\u{9b}31m \\u{202e}gnp.exe"),
        "{top:?}"
    );
    let own = c.protocol(&["evil", ""]);
    assert_eq!(
        own, "safe\tfine \\x1b]0;pwned\\x07 \\u{202e}gnp.exe\n:4\n",
        "the value with ESC is left out"
    );
    for text in [&top, &own] {
        assert!(!text.contains(raw), "raw control in {text:?}");
    }
}

#[test]
fn a_delegate_that_hangs_is_killed_with_what_it_started() {
    let w = World::new();
    let pids = w.sb.path().join("slow.pids");
    write_executable(
        &w.sb.path().join("plugins").join("app-slow"),
        &format!(
            "#!/bin/bash\n\
             [ \"$1\" = __app_metadata ] && {{ echo '{{\"apiVersion\":\"app.plugin/v1\",\"completion\":true}}'; exit; }}\n\
             sleep 30 & echo $! > {p}\n\
             echo early\n\
             sleep 30\n",
            p = pids.display()
        ),
    );
    let c = w.completer();
    c.protocol(&["slow", "x"]); // warms the metadata cache
    let start = Instant::now();
    assert_eq!(c.protocol(&["slow", ""]), ":4\n");
    let took = start.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let pid = fs::read_to_string(&pids).unwrap().trim().to_string();
    let gone = common::wait_for(Duration::from_secs(2), || {
        (!PathBuf::from(format!("/proc/{pid}")).exists()).then_some(())
    });
    assert!(
        gone.is_some(),
        "the delegate's child {pid} outlived the timeout"
    );
}

#[test]
fn committed_scripts_match_app_completion_output() {
    for (shell, file) in [("bash", "app.bash"), ("zsh", "_app"), ("fish", "app.fish")] {
        let out = std::process::Command::new(app_bin())
            .args(["completion", shell])
            .output()
            .unwrap();
        assert!(out.status.success());
        let committed = fs::read_to_string(common::completion::script_path(file)).unwrap();
        assert!(
            String::from_utf8(out.stdout).unwrap() == committed,
            "completions/{file} differs from `app completion {shell}`; \
             run `cargo run -q -- completion {shell} > completions/{file}`"
        );
    }
    let bad = std::process::Command::new(app_bin())
        .args(["completion", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// The cases the issue names, asked through a non-interactive entry point.
fn check_shell(shell: Shell) {
    if !shell.available() {
        return;
    }
    let w = World::new();
    let c = w.completer();
    let offers = |line: &str| c.offers(shell, line);
    let top = offers("app ");
    for want in [
        "help",
        "version",
        "plugin",
        "completion",
        "demo",
        "plain",
        "kubish",
        "dm",
    ] {
        assert!(
            top.iter().any(|o| o == want),
            "{shell:?} `app `: {want} missing from {top:?}"
        );
    }
    assert!(!top.iter().any(|o| o == "__complete"), "{top:?}");
    assert_eq!(offers("app plu"), ["plugin"]);
    let plugin = offers("app plugin ");
    assert!(
        plugin.contains(&"list".into()) && plugin.contains(&"path".into()),
        "{plugin:?}"
    );
    assert_eq!(offers("app pla"), ["plain"]);
    assert_eq!(offers("app kubish a"), ["alpha"]);
    let demo = offers("app demo ");
    assert!(
        demo.contains(&"run".into()) && demo.contains(&"manage".into()),
        "{demo:?}"
    );
    let mut manage = offers("app demo manage ");
    manage.sort();
    assert_eq!(manage, ["apply", "delete", "get", "post", "put"]);
    let mut protocols = offers("app demo run --sinkprotocol ");
    protocols.sort();
    assert_eq!(protocols, ["mqtt", "stderr"]);
    assert_eq!(offers("app --log-format "), ["text", "json"]);
    w.assert_nothing_ran();
}

#[test]
fn bash_plain_offers_what_the_issue_lists() {
    check_shell(Shell::Bash);
}

#[test]
fn bash_with_bash_completion_offers_what_the_issue_lists() {
    check_shell(Shell::BashWithBashCompletion);
}

#[test]
fn fish_offers_what_the_issue_lists() {
    check_shell(Shell::Fish);
}

#[test]
fn fish_offers_descriptions_and_files_for_a_plain_plugin() {
    if !Shell::Fish.available() {
        return;
    }
    let w = World::new();
    let c = w.completer();
    let out = c
        .command("fish", Duration::from_secs(20))
        .args(["--no-config", "-c"])
        .arg(format!(
            "source {}; complete -C 'app de'; complete -C 'app plain notes'",
            common::completion::script_path("app.fish").display()
        ))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().any(|l| l == "demo\tStand-in relay"), "{text}");
    assert!(text.lines().any(|l| l == "notes-file.txt"), "{text}");
    w.assert_nothing_ran();
}

/// Interactive checks: type, press TAB, read the screen.
fn check_interactive(shell: Interactive) {
    if !shell.available() {
        return;
    }
    let w = World::new();
    let c = w.completer();
    let t = c.tmux(shell);
    let top = t.tab(
        "app ",
        &[
            "help",
            "version",
            "plugin",
            "completion",
            "demo",
            "plain",
            "kubish",
            "dm",
        ],
    );
    assert!(!top.contains("__complete"), "{top}");
    t.tab_completes("app plu", "app plugin ");
    t.tab("app plugin ", &["list", "path"]);
    t.tab_completes("app pla", "app plain ");
    // A plugin without opt-in: file names, and the plugin never runs.
    t.tab_completes("app plain not", "app plain notes-file.txt ");
    t.tab_completes("app kubish a", "app kubish alpha ");
    t.tab("app demo ", &["run", "manage"]);
    t.tab(
        "app demo manage ",
        &["get", "post", "put", "delete", "apply"],
    );
    t.tab("app demo run --sinkprotocol ", &["mqtt", "stderr"]);
    t.tab_completes("app --log-format j", "app --log-format json ");
    t.tab_completes("app --log-format=j", "app --log-format=json ");
    // Global flags with `:` in their value (bash splits words there) come first.
    t.tab_completes(
        "app -H unix:///x/y.sock de",
        "app -H unix:///x/y.sock demo ",
    );
    w.assert_nothing_ran();
}

#[test]
fn bash_interactive_tab_in_tmux() {
    check_interactive(Interactive::Bash);
}

#[test]
fn bash_interactive_tab_with_bash_completion_in_tmux() {
    check_interactive(Interactive::BashWithBashCompletion);
}

#[test]
fn zsh_interactive_tab_in_tmux() {
    if !Interactive::Zsh.available() {
        return;
    }
    check_interactive(Interactive::Zsh);
    // zsh shows descriptions next to candidates.
    let w = World::new();
    let t = w.completer().tmux(Interactive::Zsh);
    let screen = t.tab("app d", &["demo", "dm"]);
    assert!(screen.contains("Stand-in relay"), "{screen}");
    assert!(screen.contains("alias for: demo manage"), "{screen}");
}
