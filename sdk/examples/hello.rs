//! The smallest plugin: `app-hello`, run as `app hello [NAME]`.
//!
//! `app_plugin::run` answers `__app_metadata`, sets up the logger from
//! `app --log` and `--log-format`, reads the context, then runs the body.
//!
//! ```sh
//! cargo run --example hello -- __app_metadata
//! cargo run --example hello -- world
//! ```

use app_plugin::log::info;
use app_plugin::metadata::Metadata;

fn main() -> std::process::ExitCode {
    let meta = Metadata::new("hello", env!("CARGO_PKG_VERSION"), "Says hello");
    app_plugin::run(meta, |call| {
        let who = call
            .words()
            .first()
            .cloned()
            .unwrap_or_else(|| "world".into());
        info!("called as {:?}", call.context.command);
        println!("hello {who} from {}", call.context.plugin_name);
    })
}
