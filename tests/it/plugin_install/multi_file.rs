//! Plugins with more than one file (issue 35): an archive's `completions/`,
//! `man/` and `share/` beside `app-NAME` go to the plugin's own folder
//! (`APP_DATA_DIR/plugins/.files/NAME/`); `share/` is found through
//! `APP_PLUGIN_SHARE`; the completion script is what bash (through tmux and
//! not), zsh (tmux) and fish load for `app NAME`; `remove` takes it all.

use crate::common;

use std::fs;

use common::completion::{Completer, Interactive, Shell};

use super::{ok, stdout, targz, T};

const PLUGIN: &str = "#!/bin/sh\n\
if [ \"${1-}\" = __app_metadata ]; then echo '{\"apiVersion\":\"app.plugin/v1\",\"version\":\"1.0.0\"}'; exit 0; fi\n\
case \"${1-}\" in greet) cat \"$APP_PLUGIN_SHARE/greeting.txt\" ;; *) echo \"share=${APP_PLUGIN_SHARE-}\" ;; esac\n";
const BASH: &str = "_app_hello() { COMPREPLY=($(compgen -W 'greet wave' -- \"$2\")); }\ncomplete -F _app_hello app-hello\n";
const FISH: &str = "complete -c app-hello -f -a 'greet wave'\n";
const ZSH: &str = "#compdef app-hello\ncompadd greet wave\n";

/// The multi-file plugin's archive, with `greeting` in its share/ file.
fn archive(greeting: &str) -> Vec<u8> {
    targz(&[
        ("hello-1.0/app-hello", 0o755, PLUGIN.as_bytes()),
        (
            "hello-1.0/completions/app-hello.bash",
            0o644,
            BASH.as_bytes(),
        ),
        (
            "hello-1.0/completions/app-hello.fish",
            0o644,
            FISH.as_bytes(),
        ),
        ("hello-1.0/completions/_app-hello", 0o644, ZSH.as_bytes()),
        ("hello-1.0/man/app-hello.1", 0o644, b".TH APP-HELLO 1\n"),
        ("hello-1.0/share/greeting.txt", 0o644, greeting.as_bytes()),
        ("hello-1.0/README", 0o644, b"not installed\n"),
    ])
}

#[test]
fn a_multi_file_plugin_installs_its_folder_finds_its_share_and_completes_in_every_shell() {
    let t = T::new();
    let file = t.src("hello-1.0.tar.gz");
    fs::write(&file, archive("hello from share\n")).unwrap();
    ok(t.app(&["plugin", "install", file.to_str().unwrap()]));
    let folder = t.plugin_dir().join(".files/hello");
    for path in [
        "completions/app-hello.bash",
        "man/app-hello.1",
        "share/greeting.txt",
    ] {
        assert!(folder.join(path).is_file(), "{path}");
    }
    assert!(!folder.join("README").exists());
    let files = t.index()["plugins"]["hello"]["files"].clone();
    assert_eq!(files.as_array().map(Vec::len), Some(5), "{files}");
    // The executable is where dispatch finds it; share/ is handed over.
    assert!(t.plugin_dir().join("app-hello").is_file());
    assert_eq!(ok(t.app(&["hello", "greet"])), "hello from share\n");
    // A plugin without a folder gets APP_PLUGIN_SHARE empty (never another's).
    t.sb.script(
        "app-plain",
        "#!/bin/sh\necho \"share=${APP_PLUGIN_SHARE-unset}\"\n",
    );
    assert_eq!(ok(t.app(&["plain"])), "share=\n");

    let c = Completer::new(&t.sb);
    if Shell::Bash.available() {
        assert_eq!(c.offers(Shell::Bash, "app hello "), ["greet", "wave"]);
        assert_eq!(c.offers(Shell::Bash, "app hello w"), ["wave"]);
    }
    if Shell::Fish.available() {
        assert_eq!(c.offers(Shell::Fish, "app hello w"), ["wave"]);
    }
    if Interactive::Bash.available() {
        let tmux = c.tmux(Interactive::Bash);
        tmux.tab_completes("app hello w", "app hello wave ");
        // The control: app's own completion still works beside it.
        tmux.tab_completes("app vers", "app version ");
    }
    if Interactive::Zsh.available() {
        c.tmux(Interactive::Zsh)
            .tab_completes("app hello w", "app hello wave ");
    }

    // Installed again with other files: the old ones go.
    fs::write(&file, archive("hello again\n")).unwrap();
    ok(t.app(&["plugin", "install", file.to_str().unwrap(), "--force"]));
    assert_eq!(ok(t.app(&["hello", "greet"])), "hello again\n");
    let leftovers: Vec<_> = fs::read_dir(t.plugin_dir().join(".files"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["hello"]);

    // remove takes the folder whole.
    let out = ok(t.app(&["plugin", "remove", "hello"]));
    assert!(out.contains("removed plugin 'hello'"), "{out}");
    assert!(!folder.exists());
    assert!(!t.plugin_dir().join("app-hello").exists());
}

#[test]
fn a_link_beside_the_plugin_is_refused_and_changes_nothing() {
    let t = T::new();
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    let mut header = tar::Header::new_gnu();
    header.set_size(PLUGIN.len() as u64);
    header.set_mode(0o755);
    header.set_cksum();
    builder
        .append_data(&mut header, "app-hello", PLUGIN.as_bytes())
        .unwrap();
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    builder
        .append_link(&mut link, "share/passwd", "/etc/passwd")
        .unwrap();
    let file = t.src("linked.tar.gz");
    fs::write(&file, builder.into_inner().unwrap().finish().unwrap()).unwrap();
    t.refused(
        &["plugin", "install", file.to_str().unwrap()],
        5,
        "share/passwd is a link or a device",
    );
    // The control: the same plugin without the link installs.
    let good = t.src("good.tar.gz");
    fs::write(&good, targz(&[("app-hello", 0o755, PLUGIN.as_bytes())])).unwrap();
    let out = stdout(&t.app(&["plugin", "install", good.to_str().unwrap()]));
    assert!(out.contains("installed plugin 'hello'"), "{out}");
    assert!(!t.plugin_dir().join(".files").join("hello").exists());
}
