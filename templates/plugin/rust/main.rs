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

use app_plugin::context::Context;

const NAME: &str = "{{name}}";
const VERSION: &str = env!("CARGO_PKG_VERSION");
const DESCRIPTION: &str = env!("CARGO_PKG_DESCRIPTION");
const COMMANDS: &[(&str, &str)] = &[
    ("hello", "Say hello (the default)"),
    ("context", "Print the context app passed, as JSON"),
    ("help", "Show this help"),
];
/// cobra's completion directive: no file completion.
const NO_FILE_COMP: u32 = 4;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    std::process::exit(run(&args));
}

fn run(args: &[String]) -> i32 {
    match args.first().map(String::as_str) {
        Some("__app_metadata") => {
            println!(
                r#"{{"apiVersion":"app.plugin/v1","name":"{NAME}","version":"{VERSION}","description":"{DESCRIPTION}","context":"stdin","completion":true}}"#
            );
            return 0;
        }
        Some("__complete") => {
            complete(&args[1..]);
            return 0;
        }
        _ => {}
    }
    let ctx = match Context::load() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("app-{NAME}: {e}; run the plugin through app, or without APP_CONTEXT=stdin");
            return 1;
        }
    };
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
            eprintln!("app-{NAME}: unknown command '{other}'; run 'app {NAME} help'");
            return 2;
        }
    }
    0
}

/// `words` are those after the plugin name; the last one is being typed.
fn complete(words: &[String]) {
    if words.len() <= 1 {
        let current = words.first().map(String::as_str).unwrap_or("");
        for (command, help) in COMMANDS {
            if command.starts_with(current) {
                println!("{command}\t{help}");
            }
        }
    }
    println!(":{NO_FILE_COMP}");
}

fn usage() {
    println!("app {NAME}: {DESCRIPTION}\n\nUsage: app {NAME} [COMMAND]\n\nCommands:");
    for (command, help) in COMMANDS {
        println!("  {command:<10} {help}");
    }
    println!("\nExit codes: 0 ok, 1 failure, 2 usage error.");
}
