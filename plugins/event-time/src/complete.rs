//! The plugin protocol's answers: `__app_metadata`, and `__complete`
//! derived from the clap definition by the SDK, so it never drifts from the
//! real flags.

use app_plugin::cli::NoValues;
use app_plugin::complete::Completion;
use app_plugin::metadata::Metadata;
use clap::CommandFactory;

use crate::cli::Cli;

/// What `__app_metadata` says.
pub fn metadata() -> Metadata {
    Metadata::new(
        "event-time",
        env!("CARGO_PKG_VERSION"),
        "Example event source: timer events over Server-Sent Events",
    )
    .completion()
}

/// The completion of `__complete WORDS…`, the last word being the one
/// completed.
pub fn completion(words: &[String]) -> Completion {
    app_plugin::cli::complete(&Cli::command(), words, &NoValues)
}

/// The answer to `__complete WORDS…`, as the shell reads it.
pub fn complete(words: &[String]) -> String {
    completion(words).render()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    fn names(out: &str) -> Vec<&str> {
        out.lines().map(|l| l.split('\t').next().unwrap()).collect()
    }

    #[test]
    fn completes_flags_by_prefix() {
        assert_eq!(
            names(&complete(&words(&["--l"]))),
            ["--listen", "--log", ":4"]
        );
        assert!(complete(&words(&["--l"])).contains("--log\tLog level"));
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
        assert!(complete(&[]).contains("--rate\t"), "only flags can come");
        assert!(complete(&words(&["-"])).contains("--rate\t"));
    }

    #[test]
    fn metadata_is_one_json_line() {
        let m: serde_json::Value = serde_json::from_str(&metadata().to_json()).unwrap();
        assert_eq!(m["completion"], true);
        assert_eq!(m["name"], "event-time");
    }
}
