//! Which group a directory closed to this user is open to, for the message
//! that tells a user outside it what to do (`/run/app` is `app:app` 0750).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The group owning the nearest ancestor of `path` this user can stat:
/// its name from /etc/group, else its number (which `usermod -aG` takes too).
pub fn group_of_closed(path: &Path) -> String {
    let Some(gid) = path.ancestors().skip(1).find_map(|d| {
        let meta = d.metadata().ok()?;
        Some(meta.gid())
    }) else {
        return "that owns it".to_string();
    };
    // /etc/group is small; a huge or unreadable one just means no name.
    let groups = crate::files::read_small(Path::new("/etc/group"), 1 << 20, "the group file")
        .unwrap_or_default();
    group_name(&groups, gid).unwrap_or_else(|| gid.to_string())
}

/// The name of `gid` in the text of an /etc/group file.
fn group_name(groups: &str, gid: u32) -> Option<String> {
    groups.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id: u32 = fields.nth(1)?.parse().ok()?;
        (id == gid && !name.is_empty()).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_group_file() {
        let groups = "root:x:0:\nbad line\napp:x:998:alice,bob\n";
        assert_eq!(group_name(groups, 998).as_deref(), Some("app"));
        assert_eq!(group_name(groups, 0).as_deref(), Some("root"));
        assert_eq!(group_name(groups, 5), None);
    }

    #[test]
    fn the_nearest_ancestor_decides() {
        let dir = tempfile::tempdir().unwrap();
        let gid = dir.path().metadata().unwrap().gid();
        let groups = std::fs::read_to_string("/etc/group").unwrap_or_default();
        let want = group_name(&groups, gid).unwrap_or_else(|| gid.to_string());
        // closed/ does not exist: the temp dir is the nearest one there.
        assert_eq!(group_of_closed(&dir.path().join("closed/x.sock")), want);
    }
}
