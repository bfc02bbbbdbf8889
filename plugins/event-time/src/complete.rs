//! The plugin protocol's `__app_metadata` and `__complete` answers.

use serde_json::json;

/// No file completion: every value here is a word, a number or an address.
const NO_FILES: u8 = 4;

/// The flags: (flag, takes a value, description).
const FLAGS: [(&str, bool, &str); 9] = [
    ("--name", true, "instance name (socket <NAME>.sock)"),
    ("--listen", true, "also serve on TCP HOST:PORT"),
    ("--log", true, "log level 0..5"),
    (
        "--rate",
        true,
        "numbered test events per second on test/seq",
    ),
    ("--count", true, "stop the test stream after M events"),
    ("--history", true, "events kept for Last-Event-ID replay"),
    ("--keep-alive", true, "seconds between keep-alive comments"),
    ("--help", false, "show help"),
    ("--version", false, "show the version"),
];

const LOG_LEVELS: [(&str, &str); 6] = [
    ("0", "silent"),
    ("1", "errors"),
    ("2", "warnings"),
    ("3", "info"),
    ("4", "debug"),
    ("5", "trace"),
];

/// The one line `__app_metadata` prints.
pub fn metadata() -> String {
    json!({
        "apiVersion": "app.plugin/v1",
        "name": "event-time",
        "version": app_plugin::context::APP_VERSION,
        "description": "Example event source: timer events over Server-Sent Events",
        "completion": true,
    })
    .to_string()
}

/// The answer to `__complete WORDS…`, the last word being the one completed.
pub fn complete(words: &[String]) -> String {
    let (current, before) = match words.split_last() {
        Some((last, rest)) => (last.as_str(), rest),
        None => ("", &[][..]),
    };
    let mut out = String::new();
    if let Some(prefix) = current.strip_prefix("--log=") {
        for (level, what) in LOG_LEVELS.iter().filter(|(l, _)| l.starts_with(prefix)) {
            out.push_str(&format!("--log={level}\t{what}\n"));
        }
    } else if let Some(flag) = before.last().filter(|w| takes_value(w)) {
        if flag == "--log" {
            for (level, what) in LOG_LEVELS.iter().filter(|(l, _)| l.starts_with(current)) {
                out.push_str(&format!("{level}\t{what}\n"));
            }
        }
    } else if current.is_empty() || current.starts_with('-') {
        for (flag, _, what) in FLAGS {
            if flag.starts_with(current) && !before.iter().any(|w| used(w, flag)) {
                out.push_str(&format!("{flag}\t{what}\n"));
            }
        }
    }
    out.push_str(&format!(":{NO_FILES}\n"));
    out
}

fn takes_value(word: &str) -> bool {
    FLAGS.iter().any(|(flag, value, _)| *value && *flag == word)
}

fn used(word: &str, flag: &str) -> bool {
    word == flag
        || word
            .strip_prefix(flag)
            .is_some_and(|rest| rest.starts_with('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn completes_flags_by_prefix() {
        assert_eq!(
            complete(&words(&["--l"])),
            "--listen\talso serve on TCP HOST:PORT\n--log\tlog level 0..5\n:4\n"
        );
    }

    #[test]
    fn flags_already_given_are_not_offered_again() {
        let out = complete(&words(&["--name", "x", "--"]));
        assert!(!out.contains("--name"));
        assert!(out.contains("--listen"));
        assert!(!complete(&words(&["--log=3", "--lo"])).contains("--log"));
    }

    #[test]
    fn completes_log_levels() {
        let out = complete(&words(&["--log", ""]));
        assert_eq!(out.lines().count(), 7);
        assert!(out.starts_with("0\tsilent\n"));
        assert_eq!(complete(&words(&["--log=4"])), "--log=4\tdebug\n:4\n");
    }

    #[test]
    fn free_values_and_words_get_nothing() {
        assert_eq!(complete(&words(&["--name", ""])), ":4\n");
        assert_eq!(complete(&words(&["x"])), ":4\n");
        assert!(complete(&[]).contains("--rate"));
    }

    #[test]
    fn metadata_is_one_json_line() {
        let m: serde_json::Value = serde_json::from_str(&metadata()).unwrap();
        assert_eq!(m["completion"], true);
        assert_eq!(m["name"], "event-time");
    }
}
