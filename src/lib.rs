//! `app`: a plugin dispatcher in the style of kubectl, git and cargo, and the
//! small library that plugins written in Rust use to read their context.
//!
//! For plugin authors, two modules matter:
//! - [`context`]: [`context::Context::load`] reads what `app` tells a plugin.
//! - [`paths`]: where config, data and sockets live.
//!
//! The rest is the dispatcher, one job per module, in the order data flows:
//! [`cli`] (parse) → [`config`] and [`alias`] (expand) → [`discovery`] (where plugins
//! are) → [`resolve`] (which one a command means) → [`metadata`] (what a trusted
//! plugin says about itself) → [`context`] (what it is told) → [`exec`] (run it).
//! The built-in commands live in [`commands`].

pub mod context;
pub mod paths;
