//! app-listener-tracer parses its two arguments by hand (it has no clap);
//! this is its command line as clap would state it, for its page. Its
//! `--help` text (plugins/listener-tracer/src/main.rs) says the same.

use clap::{Arg, Command};

pub fn command() -> Command {
    Command::new("app-listener-tracer")
        .about("Log every app command to a file (a lifecycle listener)")
        .version(env!("CARGO_PKG_VERSION"))
        .disable_version_flag(true)
        .arg(
            Arg::new("file")
                .long("file")
                .value_name("PATH")
                .help("The log (default: $APP_TRACER_LOG, else $APP_DATA_DIR/tracer.log)"),
        )
}
