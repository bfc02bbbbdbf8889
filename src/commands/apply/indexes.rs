//! The indexes a plugin set declares: each one already added must be the
//! same (URL and key), a missing one is added as `index add` adds it
//! (fetched and verified first), or under `--dry-run` only fetched and
//! verified, in memory.

use std::path::Path;
use std::time::SystemTime;

use crate::commands::index as index_cmd;
use crate::error::{Error, Result};
use crate::install::url;
use crate::plugin_index::config::{IndexConfig, Indexes};
use crate::plugin_index::format::IndexFile;
use crate::plugin_index::verify;
use crate::plugin_set::file::PluginSet;
use crate::session::Session;

/// The declared indexes not added yet, after checking those that are.
pub fn missing(session: &Session, set: &PluginSet, base: &Path) -> Result<Vec<IndexConfig>> {
    let added = Indexes::load(&session.dirs.config_dir).map_err(Error::Usage)?;
    let mut missing = Vec::new();
    for (name, decl) in &set.indexes {
        let key = match (&decl.key, &decl.key_file) {
            (Some(key), None) => verify::parse_key(key)
                .map_err(|e| Error::Usage(format!("index '{name}' in the plugin set: key: {e}")))?,
            (None, Some(file)) => index_cmd::read_key_file(&base.join(file))?,
            _ => {
                return Err(Error::Usage(format!(
                    "index '{name}' in the plugin set needs its publisher's key: \"key\": \"RW…\" or \"key_file\": \"FILE\" (one of them; an unsigned index is added by hand only)"
                )))
            }
        };
        let cfg = IndexConfig {
            name: name.clone(),
            url: index_cmd::location(&decl.url)?,
            key: Some(key),
            token_file: decl
                .token_file
                .as_ref()
                .map(|f| index_cmd::check_token_file(&base.join(f)))
                .transpose()?,
            insecure_no_signature: false,
            id: None,
            max_age_secs: None,
        };
        match added.get(name) {
            None => missing.push(cfg),
            Some(have) if have.url == cfg.url && have.key == cfg.key => {}
            Some(have) => {
                let what = if have.url != cfg.url { "URL" } else { "key" };
                return Err(Error::Usage(format!(
                    "index '{name}' is added from {} with another {what} than the plugin set declares ({}); nothing was changed: fix the file, or 'app plugin index remove {name}' and apply again",
                    url::redact(&have.url),
                    url::redact(&cfg.url)
                )));
            }
        }
    }
    Ok(missing)
}

/// Adds each of `missing` (`index add`'s report to `out`); with `dry_run`,
/// fetches and verifies them only, and returns them to resolve against.
pub fn add(
    session: &Session,
    missing: &[IndexConfig],
    dry_run: bool,
    out: &mut dyn std::io::Write,
) -> Result<Vec<(IndexConfig, Option<IndexFile>)>> {
    let mut fetched = Vec::new();
    for cfg in missing {
        if dry_run {
            let verified = crate::plugin_index::fetch_verified(cfg, None, SystemTime::now())?;
            writeln!(
                out,
                "index '{}' would be added ({})",
                cfg.name,
                url::redact(&cfg.url)
            )
            .ok();
            fetched.push((cfg.clone(), Some(verified.index)));
        } else {
            index_cmd::add_to(session, cfg.clone(), out)?;
        }
    }
    Ok(fetched)
}
