//! A plugin with subcommands, completion and exit codes: `app-greet`.
//!
//! `app` asks it `__app_metadata` (the metadata says it completes) and, on
//! TAB, `__complete WORDS…`; both are answered by [`Plugin::run`] before
//! the body. The body's `Result` is the exit code: an error is written as
//! `app-greet: <message>` (or a JSON line under `--log-format json`), exit 1.
//!
//! ```sh
//! cargo run --example greet -- __complete h      # hello, help; then :4
//! cargo run --example greet -- hello Ada
//! cargo run --example greet -- shout             # exit 1
//! ```

use app_plugin::complete::{Candidate, Completion};
use app_plugin::log::{debug, warn};
use app_plugin::metadata::Metadata;
use app_plugin::plugin::Call;
use app_plugin::Plugin;

const COMMANDS: &[(&str, &str)] = &[("hello", "Greet someone"), ("help", "Show the commands")];

fn main() -> std::process::ExitCode {
    let meta = Metadata::new("greet", env!("CARGO_PKG_VERSION"), "Greets people").completion();
    Plugin::new(meta).complete(complete).run(greet)
}

fn greet(call: Call) -> Result<(), String> {
    debug!(
        "log level {}, context from {:?}",
        call.context.log, call.context.source
    );
    let words = call.words();
    match words.first().map(String::as_str).unwrap_or("help") {
        "hello" => {
            let who = words.get(1).map_or("world", String::as_str);
            if who.is_empty() {
                warn!("an empty name; greeting the world instead");
            }
            println!("hello {who}");
            Ok(())
        }
        "help" => {
            for (command, help) in COMMANDS {
                println!("{command:<8} {help}");
            }
            Ok(())
        }
        other => Err(format!("unknown command '{other}'; try 'app greet help'")),
    }
}

/// `words` are those after the plugin's name; the last one is being typed.
fn complete(words: &[String]) -> Completion {
    match words {
        [typed] => Completion::matching(
            typed,
            COMMANDS
                .iter()
                .map(|(c, h)| Candidate::described(*c, Some(h))),
        ),
        _ => Completion::nothing(),
    }
}
