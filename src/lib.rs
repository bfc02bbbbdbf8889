//! `app`: a plugin dispatcher in the style of kubectl, git and cargo.
//!
//! This library is the dispatcher's own code, public only for its tests, its
//! fuzz targets and the `app_fetch` helper (`fetch/`); it is not an API.
//! Plugins use the SDK crate `app-plugin` (`sdk/`, library `app_plugin`),
//! which also owns the plugin contract the dispatcher speaks: [`context`],
//! [`paths`] and [`time`] here are that crate's modules.
//!
//! One job per module, in the order data flows:
//! [`cli`] (parse) → [`session`] and [`config`] (flags, dirs, config file) →
//! [`alias`] (expand) → [`discovery`] (where plugins are) → [`resolve`] (which
//! one a command means) → [`metadata`] (what a trusted plugin says about
//! itself) → [`context`] (what it is told) → [`exec`] (run it); [`external`]
//! does those steps for one plugin. [`run`] ties them together; the built-in commands live in [`commands`], and
//! [`inventory`] lists what is installed for them. [`lifecycle`] and
//! [`listeners`] tell listener plugins about every command, when configured.
//! Plugin management (`plugin install`, `remove`, `upgrade`) is in
//! [`install`], and `plugin new` in [`scaffold`]; plugin indexes (`plugin
//! index`, `search`, `info`, `install NAME`) in [`plugin_index`]; declared
//! sets of plugins (`plugin apply`, `plugins.json`, `plugins.lock`) in
//! [`plugin_set`].

pub use app_plugin::{context, paths, time};

/// This `app`'s version: `app --version`, and `APP_VERSION` for plugins.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub mod alias;
pub mod cli;
pub mod commands;
pub mod complete;
pub mod config;
pub mod discovery;
pub mod error;
pub mod exec;
pub mod external;
pub mod install;
pub mod inventory;
pub mod keeper;
pub mod lifecycle;
pub mod listeners;
pub mod metadata;
pub mod plugin_index;
pub mod plugin_set;
pub mod resolve;
pub mod run;
pub mod scaffold;
pub mod session;
pub mod shipped;
pub mod signals;
pub mod suggest;
pub mod warn;
