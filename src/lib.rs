//! `app`: a plugin dispatcher in the style of kubectl, git and cargo, and the
//! small library that plugins written in Rust use to read their context.
//!
//! For plugin authors, three modules matter:
//! - [`context`]: [`context::Context::load`] reads what `app` tells a plugin.
//! - [`paths`]: where config, data and sockets live.
//! - [`instance`]: the socket, pid and listen files of a long-running plugin
//!   instance ([`instance::InstanceFiles`]).
//!
//! The rest is the dispatcher, one job per module, in the order data flows:
//! [`cli`] (parse) → [`session`] and [`config`] (flags, dirs, config file) →
//! [`alias`] (expand) → [`discovery`] (where plugins are) → [`resolve`] (which
//! one a command means) → [`metadata`] (what a trusted plugin says about
//! itself) → [`context`] (what it is told) → [`exec`] (run it). [`run`] ties
//! them together; the built-in commands live in [`commands`], and
//! [`inventory`] lists what is installed for them. [`lifecycle`] and
//! [`listeners`] tell listener plugins about every command, when configured.
//! Plugin management (`plugin install`, `remove`, `upgrade`) is in
//! [`install`], and `plugin new` in [`scaffold`].

pub mod alias;
pub mod cli;
pub mod commands;
pub mod complete;
pub mod config;
pub mod context;
pub mod discovery;
pub mod error;
pub mod escape;
pub mod exec;
pub mod install;
pub mod instance;
pub mod inventory;
pub mod lifecycle;
pub mod listeners;
pub mod metadata;
pub mod paths;
pub mod resolve;
pub mod run;
pub mod scaffold;
pub mod session;
pub mod signals;
pub mod suggest;
pub mod time;
