//! Command lines and search-path entries that are unusual but legal: `--`
//! before the command, plugins that are broken symbolic links.

use crate::common;

use std::os::unix::fs::symlink;
use std::process::{Output, Stdio};

use common::Sandbox;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_separator_before_the_command_ends_the_global_flags() {
    let sb = Sandbox::new();
    let out = sb.run(["--", "version"]).assert().code(0);
    assert!(out.stdout.starts_with("app "), "{out:?}");
    sb.script("app-echo", "#!/bin/sh\necho \"$@\"\n");
    let out = sb
        .run(["--log", "3", "--", "echo", "--", "a"])
        .assert()
        .code(0);
    // Only the separator before the command is app's; the plugin's stay.
    assert_eq!(out.stdout, "-- a\n");
}

#[test]
fn a_plugin_that_is_a_broken_link_cannot_run_and_is_listed_as_a_problem() {
    let sb = Sandbox::new();
    let bin = sb.bin_dir();
    symlink(bin.join("nowhere"), bin.join("app-dangling")).unwrap();
    symlink(bin.join("app-loop"), bin.join("app-loop")).unwrap();
    sb.run(["dangling"]).assert().code(126).stderr_has(format!(
        "cannot run plugin {}: it is a symbolic link to {}, which does not exist; fix or remove the link",
        bin.join("app-dangling").display(),
        bin.join("nowhere").display()
    ));
    sb.run(["loop", "x"])
        .assert()
        .code(126)
        .stderr_has("it is a symbolic link loop");
    sb.run(["plugin", "list"])
        .assert()
        .code(1)
        .stderr_has(format!(
            "warning: {} cannot run: it is a symbolic link to",
            bin.join("app-dangling").display()
        ))
        .stderr_has(format!(
            "warning: {} cannot run: it is a symbolic link loop",
            bin.join("app-loop").display()
        ));
}

/// `app` installed as `<prefix>/bin/app`, with `app_fetch` and one shipped
/// plugin in `<prefix>/libexec/app/`, and a stranger's `app-*` in the same
/// bin directory (as `cargo install` of anything would put there).
#[test]
fn shipped_plugins_are_found_and_trusted_in_libexec_and_the_bin_dir_is_not_trusted() {
    let sb = Sandbox::new();
    let prefix = sb.path().join("prefix");
    let bin = prefix.join("bin");
    let libexec = prefix.join("libexec/app");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&libexec).unwrap();
    let app = bin.join("app");
    std::fs::copy(common::app_bin(), &app).unwrap();
    std::fs::copy(common::plugin_bin("app_fetch"), libexec.join("app_fetch")).unwrap();
    let asked = sb.path().join("asked");
    let plugin = |desc: &str| {
        format!(
            "#!/bin/sh\nif [ \"$1\" = __app_metadata ]; then\n  echo {desc} >> {}\n  echo '{{\"apiVersion\":\"app.plugin/v1\",\"description\":\"{desc}\"}}'\n  exit 0\nfi\necho {desc} ran\n",
            asked.display()
        )
    };
    common::write_executable(&libexec.join("app-shipped"), &plugin("shipped-one"));
    common::write_executable(&bin.join("app-stranger"), &plugin("stranger"));
    let list = |path: &str| {
        sb.command(&app)
            .args(["plugin", "list"])
            .env("PATH", path)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    // The bin directory off PATH: only the shipped plugin is there.
    // Columns are padded: compare words.
    let words = |out: &Output| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let out = list("/usr/bin:/bin");
    let text = words(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        text.contains(&format!(
            "shipped {} shipped shipped-one",
            libexec.join("app-shipped").display()
        )),
        "{text}"
    );
    assert!(!text.contains("stranger"), "{text}");
    // On PATH, the stranger is found through PATH and never asked anything.
    let out = list(&format!("{}:/usr/bin:/bin", bin.display()));
    let text = words(&out);
    assert!(
        text.contains(&format!(
            "stranger {} PATH",
            bin.join("app-stranger").display()
        )),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(&asked).unwrap_or_default(),
        "shipped-one\n",
        "only the shipped plugin may be asked for metadata"
    );
    // The helper is found in libexec too.
    let src = common::write_executable(&sb.path().join("app-local"), "#!/bin/sh\necho local\n");
    let out = sb
        .command(&app)
        .args(["plugin", "install", src.to_str().unwrap()])
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}
