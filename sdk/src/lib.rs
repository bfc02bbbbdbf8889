//! `app_plugin`: the SDK for writing plugins for `app`, a plugin dispatcher
//! in the style of kubectl, git and cargo (`app foo` runs `app-foo`).
//!
//! It holds the one definition of each piece of the plugin contract, used
//! by `app` itself and by every plugin:
//!
//! - [`context`]: what `app` tells a plugin (environment variables, the JSON
//!   context document on stdin), read with [`context::Context::load`];
//! - [`paths`]: where config, data and runtime files live;
//! - [`file`](mod@file): reading a file a user named: a regular file, up to a limit;
//! - [`instance`]: the socket, pid and listen files of a long-running plugin
//!   instance, and the one rule for instance names;
//! - [`metadata`]: the answer to `__app_metadata`;
//! - [`complete`]: the `__complete` protocol (candidates and directives);
//! - [`log`](mod@log): a logger honouring `APP_LOG` and `APP_LOG_FORMAT` (text or JSON);
//! - `log_bridge` (feature `log-bridge`): the same logger as the backend of
//!   the `log` facade (and of `tracing` without a subscriber), so that the
//!   libraries' lines are kept, at debug and trace;
//! - [`net`]: whether a host is loopback (plain HTTP allowed);
//! - [`time`]: RFC 3339 timestamps;
//! - [`protocol`]: answers `__app_metadata` and `__complete` in one call;
//! - `cli` (feature `clap`): completion derived from a `clap::Command`, and
//!   a `--log` value parser;
//! - `usage` (feature `clap`): a clap usage error as one log line that
//!   keeps its point (the missing argument, the valid values);
//! - `http` (feature `tokio`): JSON answers for requests an HTTP server
//!   could not parse, for plugins that serve an API.
//!
//! A whole plugin, `app-hello`:
//!
//! ```no_run
//! use app_plugin::{context::Context, metadata::{Metadata, METADATA_ARG}};
//!
//! fn main() {
//!     let args: Vec<String> = std::env::args().skip(1).collect();
//!     if args.first().map(String::as_str) == Some(METADATA_ARG) {
//!         println!("{}", Metadata::new("hello", env!("CARGO_PKG_VERSION"), "Says hello").to_json());
//!         return;
//!     }
//!     let ctx = Context::load().unwrap_or_else(|e| {
//!         eprintln!("app-hello: {e}");
//!         std::process::exit(2);
//!     });
//!     app_plugin::log::init_from_context(&ctx);
//!     app_plugin::info!("called as {:?}", ctx.command);
//!     println!("hello from {}", ctx.plugin_name);
//! }
//! ```

#![warn(missing_docs)]

#[cfg(feature = "clap")]
pub mod cli;
pub mod complete;
pub mod context;
pub mod file;
#[cfg(feature = "tokio")]
pub mod http;
pub mod instance;
mod level;
pub mod log;
#[cfg(feature = "log-bridge")]
pub mod log_bridge;
pub mod metadata;
pub mod net;
#[cfg(feature = "systemd")]
pub mod notify;
pub mod paths;
pub mod protocol;
pub mod text;
pub mod time;
#[cfg(feature = "clap")]
pub mod usage;

/// The version of this SDK.
///
/// A plugin can name it in its `--version` answer, beside its own version:
///
/// ```
/// let line = format!("app-demo 1.4.0 (app-plugin {})", app_plugin::VERSION);
/// println!("{line}");
/// ```
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
