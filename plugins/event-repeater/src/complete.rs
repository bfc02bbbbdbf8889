//! `__complete`: shell completion in cobra's protocol, derived from the clap
//! definition by the SDK so that it never drifts from the real flags.

use app_plugin::cli::NoValues;
use app_plugin::complete::{Candidate, Completion};
use clap::CommandFactory;

use crate::cli::Cli;

/// The lines of the answer for `words` (after the plugin name; the last
/// one is being completed): candidates, then the `:directive` line.
pub fn complete(words: &[String]) -> Vec<String> {
    completion(words)
        .render()
        .lines()
        .map(String::from)
        .collect()
}

/// The completion of `words`.
pub fn completion(words: &[String]) -> Completion {
    let mut out = app_plugin::cli::complete(&Cli::command(), words, &NoValues);
    if words.len() <= 1 {
        // `app event-repeater manage` is the plugin app-event-repeater-manage,
        // which `app` finds; offer it beside the repeater's own commands.
        let cur = words.first().map_or("", String::as_str);
        out.extend(
            cur,
            [Candidate::described(
                "manage",
                Some("Manage the routes of a running repeater"),
            )],
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(words: &[&str]) -> Vec<String> {
        complete(&words.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn names(out: &[String]) -> Vec<String> {
        out.iter()
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect()
    }

    #[test]
    fn first_word() {
        assert_eq!(names(&c(&[""])), ["run", "manage", ":36"]);
        assert_eq!(names(&c(&["m"])), ["manage", ":36"]);
        assert_eq!(names(&c(&[])), ["run", "manage", ":36"]);
    }

    #[test]
    fn values_of_enumerated_flags() {
        assert_eq!(
            names(&c(&["run", "--sinkprotocol", ""])),
            ["mqtt", "nats", "kafka", "rabbitmq-stream", "stderr", ":4"]
        );
        assert_eq!(names(&c(&["run", "--qos", ""])), ["0", "1", "2", ":4"]);
        assert_eq!(
            names(&c(&["run", "--overflow", "drop"])),
            ["drop-oldest", "drop-newest", ":4"]
        );
        assert_eq!(names(&c(&["run", "--qos=1"])), ["--qos=1", ":4"]);
        assert_eq!(names(&c(&["run", "--log", "5"])), ["5", ":4"]);
        assert_eq!(c(&["run", "--state", ""]), [":0"]);
        assert_eq!(c(&["run", "--name", ""]), [":4"]);
    }

    #[test]
    fn flags_of_run() {
        let all = names(&c(&["run", "--"]));
        for f in [
            "--name",
            "--source",
            "--sink",
            "--sinkprotocol",
            "--allowall",
            "--listen",
            "--log",
            "--qos",
            "--retain",
            "--client-id",
            "--username",
            "--password-file",
            "--state",
            "--buffer",
            "--buffer-bytes",
            "--overflow",
            "--token",
            "--max-packet-size",
            "--drain-timeout",
        ] {
            assert!(all.contains(&f.to_string()), "{f} missing from {all:?}");
        }
        let after = names(&c(&["run", "--allowall", "--al"]));
        assert_eq!(after, [":4"]);
        assert_eq!(names(&c(&["run", "--sinkp"])), ["--sinkprotocol", ":4"]);
        assert_eq!(c(&["manage", ""]), [":4"]);
    }
}
