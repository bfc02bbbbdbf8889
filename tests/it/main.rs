//! The integration tests, in one binary: each former `tests/<name>.rs` is
//! the module `<name>` here, so `cargo test --test it <name>::` runs what
//! `cargo test --test <name>` did. One binary links `app`'s test support
//! (`common`) once instead of once per file.
//!
//! The tests run the built binaries (`app`, the shipped plugins, `loadgen`):
//! build them first with `cargo build --workspace --bins`, or run
//! `cargo test --workspace`, which builds them.

mod common;

mod arguments;
mod children;
mod completion;
mod config;
mod dead_letters;
mod dispatch;
mod event_time;
mod feeds;
mod first_hour;
mod first_run;
mod fixtures_die_with_the_test;
mod fleet;
mod layout;
mod lean;
mod listener_trust;
mod listeners;
mod manage;
mod odd_input;
mod packaging;
mod packaging_cycle;
mod packaging_man;
mod packaging_sdk;
mod packaging_units;
mod plugin_build_limits;
mod plugin_index;
mod plugin_index_install;
mod plugin_install;
mod plugin_logs;
mod reliability;
mod repeater;
mod secrets;
mod shipped;
mod sinks;
mod sources;
mod supply_chain;
mod systemd;
mod systemd_booted;
mod tap;
mod terminal_escapes;
mod tour;
