//! A bare name means the indexes, never a file that happens to be in the
//! current directory: a file `soonp` beside an index listing `soonp` is
//! refused as ambiguous (both named, with the spelling for each), and each
//! spelling installs what it names; a folder holding a plugin installs.

use crate::common;

use std::fs;
use std::path::Path;

use common::index::{archive, World};

/// `app ARGS` run in `dir`.
fn app_in(w: &World, dir: &Path, args: &[&str]) -> common::run::Ran {
    let mut cmd = w.sb.app_without_proxy();
    cmd.current_dir(dir).args(args);
    common::run::Run::new(cmd).assert()
}

#[test]
fn a_file_here_never_replaces_the_index_entry_of_that_name() {
    let Some(w) = World::new() else { return };
    w.main_index(1, &[("soonp", "1.0.0")]);
    // The attacker's file: an archive of an app-soonp that says "evil".
    let here = w.sb.path().join("work");
    fs::create_dir_all(&here).unwrap();
    fs::write(here.join("soonp"), archive("soonp", "6.6.6")).unwrap();
    let plugin = w.plugin_dir().join("app-soonp");

    let ran = app_in(&w, &here, &["plugin", "install", "soonp", "--force"]).code(2);
    for part in [
        "'soonp' is both ./soonp in the current directory and plugin 'soonp' of index 'main', so nothing was installed",
        "write 'app plugin install ./soonp' (or --file soonp) for the file",
        "'app plugin install main/soonp' for the index's plugin",
    ] {
        assert!(ran.stderr.contains(part), "{part:?}: {ran:?}");
    }
    assert!(!plugin.exists());

    // Each spelling installs what it names.
    app_in(&w, &here, &["plugin", "install", "main/soonp"])
        .code(0)
        .stdout_has("installed plugin 'soonp' 1.0.0");
    w.app(&["soonp"]).ok().stdout_is("soonp 1.0.0");
    app_in(&w, &here, &["plugin", "install", "./soonp", "--force"])
        .code(0)
        .stdout_has("installed plugin 'soonp' 6.6.6");
    w.app(&["soonp"]).ok().stdout_is("soonp 6.6.6");
    app_in(
        &w,
        &here,
        &["plugin", "install", "--file", "soonp", "--force"],
    )
    .code(0)
    .stdout_has("installed plugin 'soonp' 6.6.6");
    // Elsewhere, the bare name is the index's.
    app_in(&w, w.sb.path(), &["plugin", "install", "soonp", "--force"])
        .code(0)
        .stdout_has("installed plugin 'soonp' 1.0.0");
    w.app(&["soonp"]).ok().stdout_is("soonp 1.0.0");

    // A name the indexes lack, with a file of that name here: their
    // answer, and how to install the file.
    fs::write(here.join("other"), archive("other", "1.0.0")).unwrap();
    let ran = app_in(&w, &here, &["plugin", "install", "other"]).code(7);
    assert!(
        ran.stderr.contains("no plugin 'other' in the indexes (main)")
            && ran.stderr.contains(
                "./other in the current directory is installed only when written as a path: app plugin install ./other"
            ),
        "{ran:?}"
    );
    assert!(!w.plugin_dir().join("app-other").exists());
}

#[test]
fn a_folder_made_by_plugin_new_installs_and_a_folder_of_archives_is_not_in_the_way() {
    let Some(w) = World::new() else { return };
    w.main_index(1, &[("jsonfmt", "1.0.0")]);
    let here = w.sb.path().join("work");
    fs::create_dir_all(&here).unwrap();
    app_in(&w, &here, &["plugin", "new", "mine"]).code(0);
    app_in(&w, &here, &["plugin", "install", "./app-mine"])
        .code(0)
        .stdout_has("installed plugin 'mine'");
    assert!(w.plugin_dir().join("app-mine").is_file());
    // A Rust skeleton is refused with what to run.
    app_in(&w, &here, &["plugin", "new", "rusty", "--lang", "rust"]).code(0);
    app_in(&w, &here, &["plugin", "install", "./app-rusty"])
        .code(2)
        .stderr_has("is a Rust crate, which is installed once built: (cd ")
        .stderr_has("cargo build --release) && app plugin install ");
    // An index's own directory, with a jsonfmt/ folder of archives: the
    // bare name is the index's plugin, as docs/plugin-index.md lays it out.
    fs::create_dir_all(here.join("jsonfmt")).unwrap();
    fs::write(here.join("jsonfmt/app-jsonfmt-1.0.0.tar.gz"), b"x").unwrap();
    app_in(&w, &here, &["plugin", "install", "jsonfmt"])
        .code(0)
        .stdout_has("installed plugin 'jsonfmt' 1.0.0");
}
