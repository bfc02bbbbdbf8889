//! `app plugin pin NAME` and `unpin NAME`: a pinned plugin stays at its
//! version through `upgrade --all` (and `apply` says so), until
//! `upgrade NAME@VERSION` moves the pin or `unpin` releases it. Only the
//! receipt changes ([`crate::install::set_pin`]).

use crate::error::Result;
use crate::install;
use crate::session::Session;
use app_plugin::text::escape_for_terminal as printable;

/// `pin NAME` (`pinned`) or `unpin NAME`.
pub fn pin(session: &Session, name: &str, pinned: bool) -> Result<i32> {
    let before = install::set_pin(
        &session.dirs.user_plugin_dir(),
        name,
        pinned,
        &session.search,
    )?;
    let version = printable(before.version.as_deref().unwrap_or("(no version)")).into_owned();
    let line = match (before.pinned, pinned) {
        (true, true) => format!("plugin '{name}' was already pinned at {version}"),
        (false, true) => format!(
            "pinned plugin '{name}' at {version}: 'app plugin upgrade --all' leaves it; 'app plugin upgrade {name}@VERSION' moves the pin"
        ),
        (true, false) => format!(
            "unpinned plugin '{name}' ({version}): 'app plugin upgrade --all' upgrades it again"
        ),
        (false, false) => format!("plugin '{name}' was not pinned ({version})"),
    };
    println!("{line}");
    Ok(0)
}
