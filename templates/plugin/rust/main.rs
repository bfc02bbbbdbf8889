//! app-{{name}}: a plugin for `app`. Run it as `app {{name}} [COMMAND]`.
//!
//! It speaks app's plugin protocol:
//!   app-{{name}} __app_metadata     one line of JSON describing the plugin
//!   app-{{name}} __complete WORDS   completion candidates, then :<directive>
//! and, because its metadata says "context":"stdin", `app` writes the JSON
//! context as the first line of stdin. `Context::load()` reads it from there,
//! or from the APP_* environment, or computes the defaults when the plugin
//! is run directly.
//!
//! Exit codes: 0 ok, 1 failure, 2 usage error.

use app_plugin::complete::{Candidate, Completion};
use app_plugin::context::Context;
use app_plugin::metadata::Metadata;

const NAME: &str = "{{name}}";
const VERSION: &str = env!("CARGO_PKG_VERSION");
const DESCRIPTION: &str = env!("CARGO_PKG_DESCRIPTION");
const COMMANDS: &[(&str, &str)] = &[
    ("hello", "Say hello (the default)"),
    ("context", "Print the context app passed, as JSON"),
    ("help", "Show this help"),
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(run(&args));
}

fn run(args: &[String]) -> i32 {
    // `__app_metadata` and `__complete`: answered by the SDK.
    let meta = Metadata::new(NAME, VERSION, DESCRIPTION).stdin_context().completion();
    if app_plugin::protocol::answer(args, &meta, complete) {
        return 0;
    }
    let ctx = match Context::load() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("app-{NAME}: {e}; run the plugin through app, or without APP_CONTEXT=stdin");
            return 1;
        }
    };
    // Log lines follow `app --log` and `--log-format` (text or JSON).
    app_plugin::log::init_from_context(&ctx);
    app_plugin::debug!("context from {:?}", ctx.source);
    match args.first().map(String::as_str).unwrap_or("hello") {
        "hello" => {
            let who = args.get(1).map(String::as_str).unwrap_or("world");
            let app_version = if ctx.app_bin.is_some() {
                ctx.app_version.as_str()
            } else {
                "not used"
            };
            println!(
                "hello {who} from {} {VERSION} (app {app_version}, log level {})",
                ctx.plugin_name, ctx.log
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
