//! event-time's command line: metadata, completion, help and bad flags.

use crate::common;

use common::{plugin_bin, Sandbox};
use serde_json::Value;

use super::run_to_end;

/// The flags of `app-event-time` (besides `--help`).
const FLAGS: [&str; 6] = [
    "--name",
    "--listen",
    "--log",
    "--rate",
    "--count",
    "--history",
];

#[test]
fn metadata_and_completion_follow_the_plugin_protocol() {
    let sb = Sandbox::new();
    let (code, out, _) = run_to_end(
        sb.command(plugin_bin("app-event-time"))
            .arg("__app_metadata"),
    );
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1);
    let meta: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(meta["apiVersion"], "app.plugin/v1");
    assert_eq!(meta["name"], "event-time");
    assert_eq!(
        meta["description"],
        "Example event source: timer events over Server-Sent Events"
    );
    assert_eq!(meta["completion"], true);
    assert!(
        meta.get("context").is_none(),
        "a daemon is exec'd, not fed stdin"
    );

    let complete = |words: &[&str]| {
        let (code, out, err) = run_to_end(
            sb.command(plugin_bin("app-event-time"))
                .arg("__complete")
                .args(words),
        );
        assert_eq!((code, err.as_str()), (0, ""));
        out
    };
    let flags = complete(&[""]);
    for flag in FLAGS.into_iter().chain(["--help"]) {
        assert!(
            flags.lines().any(|l| l.starts_with(&format!("{flag}\t"))),
            "{flag} in {flags}"
        );
    }
    assert!(flags.ends_with(":4\n"));
    let l = complete(&["--l"]);
    let names: Vec<&str> = l.lines().map(|x| x.split('\t').next().unwrap()).collect();
    assert_eq!(names, ["--listen", "--log", ":4"]);
    let levels = complete(&["--log", ""]);
    let levels: Vec<&str> = levels
        .lines()
        .map(|x| x.split('\t').next().unwrap())
        .collect();
    assert_eq!(levels, ["0", "1", "2", "3", "4", "5", ":4"]);
    assert_eq!(complete(&["--log", "4"]), "4\tdebug\n:4\n");
}

#[test]
fn help_lists_flags_and_exit_codes_and_bad_flags_exit_2() {
    let sb = Sandbox::new();
    let bin = plugin_bin("app-event-time");
    let (code, out, _) = run_to_end(sb.command(&bin).arg("--help"));
    assert_eq!(code, 0);
    for word in FLAGS.into_iter().chain(["Exit codes"]) {
        assert!(out.contains(word), "--help mentions {word}:\n{out}");
    }
    for args in [
        &["--bogus"][..],
        &["--log", "6"],
        &["--count", "5"],
        &["--rate", "0"],
        &["--listen", "nowhere"],
        &["--name", "../escape"],
    ] {
        let (code, out, err) = run_to_end(sb.command(&bin).args(args));
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(out, "");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.starts_with("app-event-time: "), "{err}");
    }
    assert!(!sb.plugin_runtime_dir().join("event-time.sock").exists());
}
