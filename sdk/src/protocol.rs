//! Answering the protocol's own arguments in one call: `__app_metadata`
//! and `__complete`.
//!
//! A plugin calls [`answer`] first thing with its arguments; when it returns
//! `true` the question was answered on stdout and the plugin exits 0.
//!
//! ```
//! use app_plugin::complete::{Candidate, Completion};
//! use app_plugin::metadata::Metadata;
//!
//! let meta = Metadata::new("hello", "1.0.0", "Says hello").completion();
//! let args = ["--verbose"];
//! let answered = app_plugin::protocol::answer(&args, &meta, |words| {
//!     Completion::matching(words.last().map_or("", String::as_str), [Candidate::new("world")])
//! });
//! assert!(!answered); // not a protocol question: the plugin does its work
//! ```

use std::io::Write;

use crate::complete::{Completion, COMPLETE_ARG};
use crate::metadata::{Metadata, METADATA_ARG};

/// Answers `__app_metadata` (with `metadata`) and `__complete WORDS…` (with
/// `complete(WORDS)`) on stdout; returns whether `args` (the plugin's
/// arguments, without the program name) were such a question.
///
/// Completion never writes to stderr and never fails: a panic in `complete`
/// (say, in a lookup) becomes an empty answer, as the shell is waiting.
///
/// ```
/// use app_plugin::complete::Completion;
/// use app_plugin::metadata::Metadata;
/// let meta = Metadata::new("demo", "1", "Demo");
/// assert!(app_plugin::protocol::answer(&["__app_metadata"], &meta, |_| Completion::nothing()));
/// assert!(!app_plugin::protocol::answer(&["run"], &meta, |_| Completion::nothing()));
/// ```
pub fn answer<S: AsRef<str>>(
    args: &[S],
    metadata: &Metadata,
    complete: impl FnOnce(&[String]) -> Completion,
) -> bool {
    match args.first().map(AsRef::as_ref) {
        Some(METADATA_ARG) => {
            print(&format!("{}\n", metadata.to_json()));
            true
        }
        Some(COMPLETE_ARG) => {
            let words: Vec<String> = args[1..].iter().map(|a| a.as_ref().to_string()).collect();
            print(&completion_text(&words, complete));
            true
        }
        _ => false,
    }
}

/// The `__complete` answer for `words`, as [`answer`] prints it.
///
/// ```
/// use app_plugin::complete::Completion;
/// let text = app_plugin::protocol::completion_text(&["x".into()], |_| panic!("lookup failed"));
/// assert_eq!(text, ":4\n");
/// ```
pub fn completion_text(words: &[String], complete: impl FnOnce(&[String]) -> Completion) -> String {
    // Nothing may reach the terminal in the middle of a completion.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| complete(words)))
        .unwrap_or_else(|_| Completion::nothing());
    std::panic::set_hook(hook);
    out.render()
}

fn print(text: &str) {
    // A closed stdout (the shell gave up) is nobody's to report to.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
