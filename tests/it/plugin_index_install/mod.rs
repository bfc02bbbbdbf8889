//! Plugins from indexes: `app plugin install NAME|NAME@VERSION|INDEX/NAME`,
//! `upgrade --all`, and builds from source (`install --git`, an index's
//! source entry) with the real `cargo` and `git`, against a local HTTP
//! server and indexes signed at test time (see `common::index`); and the
//! size limits of the files the index commands read (`--key-file`,
//! `indexes.json`, a cached index, a `.minisig`).

mod apply;
mod by_name;
mod connect_timeout;
mod expired;
mod git;
mod git_refusals;
mod limits;
mod local_or_index;
mod pins;
