//! `app_plugin`: the SDK for writing plugins for `app`, a plugin dispatcher
//! in the style of kubectl, git and cargo (`app foo` runs `app-foo`).
//!
//! A whole plugin, `app-hello`, with [`run`] doing the protocol's part
//! (`__app_metadata`, `__complete`, the context, `--log` and
//! `--log-format`) before the body:
//!
//! ```no_run
//! use app_plugin::log::info;
//! use app_plugin::metadata::Metadata;
//!
//! fn main() -> std::process::ExitCode {
//!     let meta = Metadata::new("hello", env!("CARGO_PKG_VERSION"), "Says hello");
//!     app_plugin::run(meta, |call| {
//!         info!("called as {:?}", call.context.command);
//!         println!("hello from {}", call.context.plugin_name);
//!     })
//! }
//! ```
//!
//! [`Plugin`] adds completion to that, and `examples/` in the package has
//! both. The SDK is for unix (Linux, macOS, the BSDs): plugins serve on unix
//! sockets and stop on signals, as `app` expects.
//!
//! It holds the one definition of each piece of the plugin contract, used
//! by `app` itself and by every plugin:
//!
//! - [`plugin`]: the entry call, [`Plugin::run`];
//! - [`context`]: what `app` tells a plugin (environment variables, the JSON
//!   context document on stdin), read with [`context::Context::load`];
//! - [`paths`]: where config, data and runtime files live;
//! - [`file`](mod@file): reading a file a user named: a regular file, up to a limit;
//! - [`instance`]: the socket, pid and listen files of a long-running plugin
//!   instance, and the one rule for instance names;
//! - [`metadata`]: the answer to `__app_metadata`;
//! - [`complete`]: the `__complete` protocol (candidates and directives);
//! - [`listener`]: the events `app` sends to lifecycle listeners;
//! - [`log`](mod@log): a logger honouring `APP_LOG` and `APP_LOG_FORMAT` (text or JSON);
//! - `log_bridge` (feature `log-bridge`): the same logger as the backend of
//!   the `log` facade (and of `tracing` without a subscriber), so that the
//!   libraries' lines are kept, at debug and trace;
//! - [`net`]: whether a host is loopback (plain HTTP allowed);
//! - [`time`]: RFC 3339 timestamps;
//! - [`protocol`]: answers `__app_metadata` and `__complete` in one call;
//! - [`redact`]: the one rule for what is a secret in a URL, an argument
//!   list or a config, and its masked form to print, log or store;
//! - `address` (feature `address`): server addresses (`tcp://h:1883`,
//!   `host:4222`, `http://u:p@[::1]:80`) parsed by the `url` crate under
//!   per-flag rules, for every plugin alike;
//! - `cli` (feature `clap`): completion derived from a `clap::Command`, and
//!   a `--log` value parser;
//! - `usage` (feature `clap`): a clap usage error as one log line that
//!   keeps its point (the missing argument, the valid values);
//! - `http` (feature `tokio`): JSON answers for requests an HTTP server
//!   could not parse, for plugins that serve an API;
//! - `daemon` (feature `daemon`, HTTPS with `tls`): the scaffold of a plugin
//!   that serves HTTP on its instance socket and TCP: listeners, one serve
//!   loop with its limits, the shutdown type and the error shape.

#![warn(missing_docs)]

// Unix sockets, signals, file modes and `/proc`-style process checks are the
// contract itself: say so at once rather than in a hundred errors.
#[cfg(not(unix))]
compile_error!("app-plugin supports unix only (Linux, macOS, the BSDs)");

#[cfg(feature = "address")]
pub mod address;
#[cfg(feature = "clap")]
pub mod cli;
pub mod complete;
pub mod context;
#[cfg(feature = "daemon")]
pub mod daemon;
pub mod file;
#[cfg(feature = "tokio")]
pub mod http;
pub mod instance;
mod level;
pub mod listener;
pub mod log;
#[cfg(feature = "log-bridge")]
pub mod log_bridge;
pub mod metadata;
pub mod net;
#[cfg(feature = "systemd")]
pub mod notify;
pub mod paths;
pub mod plugin;
pub mod protocol;
pub mod redact;
pub mod text;
pub mod time;
#[cfg(feature = "clap")]
pub mod usage;

pub use plugin::{run, Outcome, Plugin};

/// The version of this SDK (the `app-plugin` crate), not of `app`: `app`'s
/// is the context's [`app_version`](context::Context::app_version).
///
/// A plugin can name it in its `--version` answer, beside its own version:
///
/// ```
/// let line = format!("app-demo 1.4.0 (app-plugin {})", app_plugin::SDK_VERSION);
/// let sdk = line.strip_prefix("app-demo 1.4.0 (app-plugin ").unwrap();
/// assert_eq!(sdk.trim_end_matches(')').split('.').count(), 3, "MAJOR.MINOR.PATCH");
/// ```
pub const SDK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The SDK's version under its 0.1 name: [`SDK_VERSION`].
#[deprecated(since = "0.1.1", note = "use SDK_VERSION")]
pub const VERSION: &str = SDK_VERSION;

// The README's examples are compiled and run with the doc tests, so that
// they cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
