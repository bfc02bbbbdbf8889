//! Plugin indexes (`app plugin index`, `search`, `info`, completion, and
//! every refusal) against a local HTTP server started by each test, with
//! indexes signed at test time by the real `minisign` tool (see
//! `common::index`). Installing by name, upgrading and building from
//! source are in `plugin_index_install`.

mod binding;
mod commands;
mod publish;
mod trust;
