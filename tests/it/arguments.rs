//! Long argument lists (issue 19, item 3): `app` passes on whatever the
//! kernel accepts for a direct exec of the plugin, in linear time and memory,
//! and bounds its own copy of the command line (`APP_COMMAND`), saying how
//! much of it was left out.

use std::time::{Duration, Instant};

use crate::common::Sandbox;

/// Prints its argument count, the length of `APP_COMMAND`, the number of
/// words it leaves out, then every argument on a line.
const COUNT_PLUGIN: &str = r#"#!/bin/sh
printf 'count=%s\n' "$#"
printf 'command_bytes=%s\n' "${#APP_COMMAND}"
printf 'omitted=%s\n' "${APP_COMMAND_OMITTED:-0}"
printf '%s\n' "$@"
"#;

fn value<'a>(lines: &'a [&'a str], key: &str) -> &'a str {
    lines
        .iter()
        .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key}= in the plugin's output"))
}

#[test]
fn a_hundred_thousand_arguments_reach_the_plugin_whole_and_quickly() {
    let sb = Sandbox::new();
    sb.script("app-count", COUNT_PLUGIN);
    let args: Vec<String> = (0..100_000).map(|i| format!("a{i}")).collect();
    let started = Instant::now();
    let ran = sb
        .run(std::iter::once("count".to_string()).chain(args.iter().cloned()))
        .assert()
        .ok();
    let took = started.elapsed();
    let lines = ran.lines();
    assert_eq!(value(&lines, "count"), "100000");
    assert_eq!(
        &lines[3..],
        args.iter().map(String::as_str).collect::<Vec<_>>()
    );
    // The copy of the command line stays far below the kernel's 128 KiB for
    // one variable, and says how many of its 100,002 words it left out.
    let bytes: usize = value(&lines, "command_bytes").parse().expect("a number");
    assert!(
        bytes > 0 && bytes <= app_plugin::context::COMMAND_MAX,
        "{bytes}"
    );
    let omitted: usize = value(&lines, "omitted").parse().expect("a number");
    assert!(omitted > 90_000 && omitted < 100_002, "{omitted}");
    // Quadratic, this took minutes (20,000 arguments: 7 s in a debug build).
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn the_debug_log_says_what_app_command_leaves_out() {
    let sb = Sandbox::new();
    sb.script("app-count", COUNT_PLUGIN);
    let words = |n: usize| (0..n).map(|i| format!("w{i}")).collect::<Vec<_>>();
    let run = |n: usize| {
        sb.run(
            ["--log", "4", "count"]
                .map(String::from)
                .into_iter()
                .chain(words(n)),
        )
        .assert()
        .code(0)
    };
    // A short command line is whole, and nothing is said.
    let short = run(10);
    assert_eq!(value(&short.lines(), "omitted"), "0");
    short.stderr_lacks("APP_COMMAND");
    let long = run(20_000);
    let omitted = value(&long.lines(), "omitted").to_string();
    long.stderr_has(format!(
        "{omitted} omitted, the plugin's arguments are complete"
    ));
}

/// The most arguments of `size` bytes each that the kernel lets the
/// sandbox's environment exec directly (a binary search over real execs).
fn most_arguments(sb: &Sandbox, size: usize) -> usize {
    let arg = "x".repeat(size);
    let fits = |n: usize| {
        sb.command("/bin/true")
            .args(std::iter::repeat(&arg).take(n))
            .status()
            .is_ok_and(|s| s.success())
    };
    let (mut lo, mut hi) = (1, 1);
    while fits(hi) {
        lo = hi;
        hi *= 2;
        assert!(hi < 10_000_000, "no argument limit found");
    }
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

#[test]
fn an_argument_list_near_the_kernel_limit_still_reaches_the_plugin() {
    let sb = Sandbox::new();
    let plugin = sb.script("app-count", COUNT_PLUGIN);
    let size = 100;
    let max = most_arguments(&sb, size);
    // Room for `app`'s other APP_* variables (about 1 KiB with the sandbox's
    // paths), not for the 16 KiB APP_COMMAND: without it the exec must be
    // retried without that copy.
    let n = max - 3_000 / (size + 9);
    let arg = "y".repeat(size);
    // Positive control: the plugin run directly takes them.
    let direct = sb
        .command(&plugin)
        .args(std::iter::repeat(&arg).take(n))
        .output()
        .expect("run the plugin directly");
    assert!(direct.status.success(), "{direct:?}");
    let ran = sb
        .run(std::iter::once("count".to_string()).chain(std::iter::repeat(arg.clone()).take(n - 1)))
        .assert()
        .ok();
    let lines = ran.lines();
    assert_eq!(value(&lines, "count"), (n - 1).to_string());
    assert_eq!(value(&lines, "command_bytes"), "0");
    assert_eq!(value(&lines, "omitted"), (n + 1).to_string());
}
