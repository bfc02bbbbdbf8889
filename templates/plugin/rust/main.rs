//! app-{{name}}: a plugin for `app`. Run it as `app {{name}} [COMMAND]`.
//!
//! It speaks app's plugin protocol:
//!   app-{{name}} __app_metadata     one line of JSON describing the plugin
//!   app-{{name}} __complete WORDS   completion candidates, then :<directive>
//! and, because its metadata says "context":"stdin", `app` writes the JSON
//! context as the first line of stdin. The SDK's `Plugin::run` answers the
//! protocol, then reads the context from there, or from the APP_*
//! environment, or computes the defaults when the plugin is run directly.
//!
//! Exit codes: 0 ok, 1 failure, 2 usage error.

use std::process::ExitCode;

use app_plugin::complete::{Candidate, Completion};
use app_plugin::metadata::Metadata;
use app_plugin::plugin::Call;
use app_plugin::Plugin;

const NAME: &str = "{{name}}";
const VERSION: &str = env!("CARGO_PKG_VERSION");
const DESCRIPTION: &str = env!("CARGO_PKG_DESCRIPTION");
const COMMANDS: &[(&str, &str)] = &[
    ("hello", "Say hello (the default)"),
    ("context", "Print the context app passed, as JSON"),
    ("help", "Show this help"),
];

fn main() -> ExitCode {
    // `__app_metadata` and `__complete` are answered by the SDK; then the log
    // follows `app --log` and `--log-format` (text or JSON), the context is
    // read (exit 1 if it cannot be), and `run` does the work.
    let meta = Metadata::new(NAME, VERSION, DESCRIPTION).stdin_context().completion();
    Plugin::new(meta)
        .complete(complete)
        .context_error_code(1)
        .run(run)
}

fn run(call: Call) -> u8 {
    let args = call.words();
    let ctx = call.context;
    app_plugin::debug!("context from {:?}", ctx.source);
    match args.first().map(String::as_str).unwrap_or("hello") {
        "hello" => {
            let who = args.get(1).map(String::as_str).unwrap_or("world");
            let app_version = ctx.app_version.as_deref().unwrap_or("not used");
            println!(
                "hello {who} from {} {VERSION} (app {app_version}, log level {})",
                ctx.plugin_name,
                u8::from(ctx.log)
            );
        }
        "context" => println!("{}", ctx.to_json_line()),
        "help" | "-h" | "--help" => usage(),
        other => {
            app_plugin::log::fatal(format_args!(
                "unknown command '{other}'; run 'app {NAME} help'"
            ));
            return 2;
        }
    }
    0
}
/// `words` are those after the plugin name; the last one is being typed.
fn complete(words: &[String]) -> Completion {
    if words.len() > 1 {
        return Completion::nothing();
    }
    let current = words.first().map_or("", String::as_str);
    let commands = COMMANDS
        .iter()
        .map(|(command, help)| Candidate::described(*command, Some(help)));
    Completion::matching(current, commands)
}

fn usage() {
    println!("app {NAME}: {DESCRIPTION}\n\nUsage: app {NAME} [COMMAND]\n\nCommands:");
    for (command, help) in COMMANDS {
        println!("  {command:<10} {help}");
    }
    println!("\nExit codes: 0 ok, 1 failure, 2 usage error.");
}
