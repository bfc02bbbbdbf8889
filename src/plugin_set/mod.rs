//! Plugin sets as code: `plugins.json` declares which plugins (and which
//! indexes) a machine has ([`file`]), `plugins.lock` pins down exactly
//! what that resolved to ([`lock`]), and [`plan`] says what `plugin apply`
//! must do to get there. The command itself is `crate::commands::apply`.

pub mod file;
pub mod lock;
pub mod plan;
