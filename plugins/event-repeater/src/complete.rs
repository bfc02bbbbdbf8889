//! `__complete`: shell completion in cobra's protocol, derived from the clap
//! definition so that it never drifts from the real flags.

use clap::CommandFactory;

use crate::cli::Cli;

const NO_FILES: u32 = 4;

/// Candidates for `words` (after the plugin name; the last one is being
/// completed), then the `:directive` line.
pub fn complete(words: &[String]) -> Vec<String> {
    let empty = String::new();
    let cur = words.last().unwrap_or(&empty);
    let mut out = Vec::new();
    let directive = if words.len() <= 1 {
        for (name, help) in [
            ("run", "Run the repeater"),
            ("manage", "Manage the routes of a running repeater"),
        ] {
            if name.starts_with(cur.as_str()) {
                out.push(format!("{name}\t{help}"));
            }
        }
        NO_FILES
    } else if words[0] == "run" {
        complete_run(&words[1..], &mut out)
    } else {
        NO_FILES
    };
    out.push(format!(":{directive}"));
    out
}

fn complete_run(words: &[String], out: &mut Vec<String>) -> u32 {
    let mut cmd = Cli::command();
    cmd.build();
    let Some(run) = cmd.find_subcommand("run") else {
        return NO_FILES;
    };
    let cur = words.last().map(String::as_str).unwrap_or("");
    let prev = if words.len() >= 2 {
        words[words.len() - 2].as_str()
    } else {
        ""
    };
    let find = |long: &str| {
        run.get_arguments()
            .find(|a| a.get_long() == Some(long))
            .cloned()
    };
    let takes_value = |a: &clap::Arg| a.get_num_args().is_some_and(|n| n.takes_values());
    // A value for the previous flag, or `--flag=value`.
    let (flag, value_prefix, shown_prefix) = if let Some(arg) = prev
        .strip_prefix("--")
        .and_then(find)
        .filter(|a| takes_value(a))
    {
        (Some(arg), cur, String::new())
    } else if let Some((f, v)) = cur.strip_prefix("--").and_then(|c| c.split_once('=')) {
        (find(f).filter(|a| takes_value(a)), v, format!("--{f}="))
    } else {
        (None, cur, String::new())
    };
    if let Some(arg) = flag {
        let values = arg.get_possible_values();
        if !values.is_empty() {
            for v in values {
                if v.get_name().starts_with(value_prefix) {
                    let help = v.get_help().map(|h| format!("\t{h}")).unwrap_or_default();
                    out.push(format!("{shown_prefix}{}{help}", v.get_name()));
                }
            }
            return NO_FILES;
        }
        if arg.get_long() == Some("log") {
            for v in 0..=5 {
                if v.to_string().starts_with(value_prefix) {
                    out.push(format!("{shown_prefix}{v}"));
                }
            }
            return NO_FILES;
        }
        let is_file = arg
            .get_value_names()
            .is_some_and(|n| n.iter().any(|n| n.as_str() == "FILE"));
        return if is_file { 0 } else { NO_FILES };
    }
    if cur.starts_with('-') {
        let used: Vec<&str> = words[..words.len().saturating_sub(1)]
            .iter()
            .filter_map(|w| w.strip_prefix("--"))
            .map(|w| w.split('=').next().unwrap_or(w))
            .collect();
        for arg in run.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if used.contains(&long) || arg.is_hide_set() {
                continue;
            }
            let name = format!("--{long}");
            if name.starts_with(cur) {
                let help = arg
                    .get_help()
                    .map(|h| format!("\t{}", h.to_string().lines().next().unwrap_or("")))
                    .unwrap_or_default();
                out.push(format!("{name}{help}"));
            }
        }
    }
    NO_FILES
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
        assert_eq!(names(&c(&[""])), ["run", "manage", ":4"]);
        assert_eq!(names(&c(&["m"])), ["manage", ":4"]);
        assert_eq!(names(&c(&[])), ["run", "manage", ":4"]);
    }

    #[test]
    fn values_of_enumerated_flags() {
        assert_eq!(
            names(&c(&["run", "--sinkprotocol", ""])),
            ["mqtt", "nats", "stderr", ":4"]
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
