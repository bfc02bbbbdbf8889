//! What `plugin apply` does to reach the declared set: one [`Step`] per
//! plugin, from the targets (each declared plugin's exact version, index
//! and archive) and the receipts of what is installed. Nothing here
//! touches a file: the plan is printed by `--dry-run` and carried out
//! otherwise.

use std::collections::BTreeMap;

use super::lock::Locked;
use crate::install::receipts::{Entry, Receipts};

/// What happens to one plugin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Install,
    Upgrade,
    Downgrade,
    /// The same version again: other bytes under it, or installed from
    /// elsewhere (a path, a URL, another index).
    Replace,
    /// As declared (its pin set as declared too, when that is all).
    Keep,
    /// `--prune`: installed by `app plugin install`, not declared.
    Remove,
}

impl Action {
    pub fn word(self) -> &'static str {
        match self {
            Action::Install => "install",
            Action::Upgrade => "upgrade",
            Action::Downgrade => "downgrade",
            Action::Replace => "replace",
            Action::Keep => "keep",
            Action::Remove => "remove",
        }
    }

    /// Whether it installs an archive.
    pub fn installs(self) -> bool {
        matches!(
            self,
            Action::Install | Action::Upgrade | Action::Downgrade | Action::Replace
        )
    }
}

/// One plugin's step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub name: String,
    pub action: Action,
    /// The version installed now, if any.
    pub from: Option<String>,
    /// What it will be (none for a removal).
    pub to: Option<Locked>,
    /// Pinned as declared.
    pub pin: bool,
    /// The receipt's pin differs from the declared one (a keep that sets it).
    pub pin_changes: bool,
}

/// The steps from `receipts` to `targets` (name → (locked, pin)); with
/// `prune`, a removal for every receipt not declared, else none.
pub fn plan(
    targets: &BTreeMap<String, (Locked, bool)>,
    receipts: &Receipts,
    prune: bool,
) -> Vec<Step> {
    let mut steps: Vec<Step> = targets
        .iter()
        .map(|(name, (target, pin))| {
            let receipt = receipts.plugins.get(name);
            Step {
                name: name.clone(),
                action: action(receipt, target),
                from: receipt.map(|r| r.version.clone().unwrap_or_default()),
                to: Some(target.clone()),
                pin: *pin,
                pin_changes: receipt.is_some_and(|r| r.pinned != *pin),
            }
        })
        .collect();
    if prune {
        steps.extend(
            receipts
                .plugins
                .iter()
                .filter(|(name, _)| !targets.contains_key(*name))
                .map(|(name, r)| Step {
                    name: name.clone(),
                    action: Action::Remove,
                    from: Some(r.version.clone().unwrap_or_default()),
                    to: None,
                    pin: false,
                    pin_changes: false,
                }),
        );
    }
    steps
}

fn action(receipt: Option<&Entry>, target: &Locked) -> Action {
    let Some(r) = receipt else {
        return Action::Install;
    };
    let same_source = r.index.as_deref() == Some(target.index.as_str());
    let same_bytes = r.archive_sha256.as_deref().unwrap_or(&r.sha256) == target.sha256;
    let installed = r
        .version
        .as_deref()
        .and_then(|v| semver::Version::parse(v).ok());
    let wanted = semver::Version::parse(&target.version).ok();
    match (same_source, installed, wanted) {
        (true, Some(have), Some(want)) if have == want && same_bytes => Action::Keep,
        (true, Some(have), Some(want)) if have < want => Action::Upgrade,
        (true, Some(have), Some(want)) if have > want => Action::Downgrade,
        _ => Action::Replace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn locked(version: &str, sha: &str) -> Locked {
        Locked {
            version: version.into(),
            index: "main".into(),
            url: format!("https://h/x-{version}.tar.gz"),
            sha256: sha.into(),
        }
    }

    fn receipt(version: &str, index: Option<&str>, sha: &str, pinned: bool) -> Entry {
        Entry {
            source: "https://h/x.tar.gz".into(),
            version: Some(version.into()),
            sha256: "exe".into(),
            archive_sha256: Some(sha.into()),
            installed_at: "2026-01-01T00:00:00Z".into(),
            index: index.map(String::from),
            git: None,
            pinned,
            files: Vec::new(),
        }
    }

    #[test]
    fn each_action_from_what_is_installed() {
        let mut receipts = Receipts::default();
        for (name, entry) in [
            ("keep", receipt("1.0.0", Some("main"), "k", false)),
            ("up", receipt("1.0.0", Some("main"), "u", false)),
            ("down", receipt("2.0.0", Some("main"), "d", false)),
            ("bytes", receipt("1.0.0", Some("main"), "old", false)),
            ("path", receipt("1.0.0", None, "p", false)),
            ("pin", receipt("1.0.0", Some("main"), "q", false)),
            ("extra", receipt("0.1.0", Some("main"), "e", false)),
        ] {
            receipts.plugins.insert(name.into(), entry);
        }
        let mut targets = BTreeMap::new();
        for (name, version, sha, pin) in [
            ("keep", "1.0.0", "k", false),
            ("up", "1.1.0", "u2", false),
            ("down", "1.0.0", "d1", false),
            ("bytes", "1.0.0", "new", false),
            ("path", "1.0.0", "p", false),
            ("pin", "1.0.0", "q", true),
            ("new", "1.0.0", "n", false),
        ] {
            targets.insert(name.to_string(), (locked(version, sha), pin));
        }
        let steps = plan(&targets, &receipts, false);
        let got: Vec<(&str, Action)> = steps.iter().map(|s| (s.name.as_str(), s.action)).collect();
        assert_eq!(
            got,
            [
                ("bytes", Action::Replace),
                ("down", Action::Downgrade),
                ("keep", Action::Keep),
                ("new", Action::Install),
                ("path", Action::Replace),
                ("pin", Action::Keep),
                ("up", Action::Upgrade),
            ]
        );
        assert!(steps.iter().find(|s| s.name == "pin").unwrap().pin_changes);
        // Not declared: left alone, unless pruned.
        let pruned = plan(&targets, &receipts, true);
        assert_eq!(
            pruned.last().map(|s| (s.name.as_str(), s.action)),
            Some(("extra", Action::Remove))
        );
    }
}
