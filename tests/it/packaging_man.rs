//! The package's man pages as an operator opens them: each renders
//! without a warning (`man --warnings`), has EXIT STATUS and SEE ALSO, and
//! refers only to pages that exist; app(1) explains dispatch and plugins
//! with FILES and every `APP_*` variable the docs name; synopses are typed
//! as the commands are (`app plugin install`), with value placeholders.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::Command;

use crate::common::{require_tools, Sandbox};
use crate::packaging::{package, run, text, unpack};

/// Every page in `man` (`man1/…`, `man8/…`): its name (`app-plugin-install(1)`)
/// and roff source.
fn pages(man: &Path) -> BTreeMap<String, String> {
    let mut pages = BTreeMap::new();
    for section in ["1", "5", "7", "8"] {
        let Ok(dir) = fs::read_dir(man.join(format!("man{section}"))) else {
            continue;
        };
        for entry in dir {
            let path = entry.expect("dir entry").path();
            let file = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string();
            let Some(name) = file.strip_suffix(&format!(".{section}.gz")) else {
                panic!("{} is not a gzipped section {section} page", path.display());
            };
            let mut roff = String::new();
            flate2::read::GzDecoder::new(fs::File::open(&path).expect("open the page"))
                .read_to_string(&mut roff)
                .expect("gunzip the page");
            pages.insert(format!("{name}({section})"), roff);
        }
    }
    pages
}

/// The roff source as text: `\-` as `-`, font changes dropped.
fn plain(roff: &str) -> String {
    roff.replace("\\-", "-")
        .replace("\\fB", "")
        .replace("\\fI", "")
        .replace("\\fR", "")
        .replace("\\fP", "")
        .replace("\\(aq", "'")
}

/// The text of section `name` (`.SH NAME` up to the next `.SH`).
fn section(roff: &str, name: &str) -> Option<String> {
    let text = plain(roff);
    let start = text
        .find(&format!(".SH {name}\n"))
        .or_else(|| text.find(&format!(".SH \"{name}\"\n")))?;
    let body = &text[start..];
    let body = &body[body.find('\n').map_or(0, |i| i + 1)..];
    Some(body[..body.find("\n.SH ").unwrap_or(body.len())].to_string())
}

/// Every `name(N)` the page refers to.
fn references(roff: &str) -> Vec<String> {
    let text = plain(roff);
    let bytes = text.as_bytes();
    let mut refs = Vec::new();
    for (i, _) in text.match_indices('(') {
        let (Some(&digit), Some(&b')')) = (bytes.get(i + 1), bytes.get(i + 2)) else {
            continue;
        };
        if !digit.is_ascii_digit() {
            continue;
        }
        let start = text[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "-_.@".contains(c)))
            .map_or(0, |s| s + 1);
        let name = text[start..i].trim_start_matches('.');
        if !name.is_empty() {
            refs.push(format!("{name}({})", digit as char));
        }
    }
    refs
}

/// Other packages' pages the units page names; checked with `man -w`
/// where this host has systemd's pages.
const SYSTEM_PAGES: &[&str] = &["systemctl(1)", "journalctl(1)", "systemd.exec(5)"];

/// The references of `pages` that resolve to no page: not in the package,
/// and not one of [`SYSTEM_PAGES`] present on the host.
fn unresolved(pages: &BTreeMap<String, String>, host_has_systemd_pages: bool) -> Vec<String> {
    let mut missing = Vec::new();
    for (page, roff) in pages {
        for r in references(roff) {
            let ok = pages.contains_key(&r)
                || (SYSTEM_PAGES.contains(&r.as_str()) && (!host_has_systemd_pages || man_w(&r)));
            if !ok {
                missing.push(format!("{page} refers to {r}"));
            }
        }
    }
    missing
}

fn man_w(reference: &str) -> bool {
    let (name, section) = reference
        .trim_end_matches(')')
        .split_once('(')
        .expect("name(N)");
    run(Command::new("man").args(["-w", section, name]))
        .status
        .success()
}

/// `man --warnings -l PAGE`: its warnings (stderr), empty when none.
fn warnings(sb: &Sandbox, page: &Path) -> String {
    let out = run(sb
        .command("man")
        .args(["--warnings", "-l"])
        .arg(page)
        .env("MANWIDTH", "80")
        .env("MAN_KEEP_FORMATTING", "0"));
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success(),
        "man -l {}: {}",
        page.display(),
        text(&out)
    );
    stderr
}

#[test]
fn every_man_page_renders_cleanly_and_refers_only_to_pages_that_exist() {
    let Some(deb) = package() else { return };
    if !require_tools(&[("man", "man-db"), ("dpkg-deb", "dpkg")]) {
        return;
    }
    let sb = Sandbox::new();
    let root = sb.path().join("root");
    unpack(&deb, &root);
    let man = root.join("usr/share/man");
    let pages = pages(&man);
    for want in [
        "app(1)",
        "app-event-repeater(1)",
        "app-event-repeater-run(1)",
        "app-event-repeater-manage(1)",
        "app-event-time(1)",
        "app-listener-tracer(1)",
        "app-plugin-install(1)",
        "app-event-repeater@.service(8)",
        "app-event-time.service(8)",
    ] {
        assert!(pages.contains_key(want), "no {want} in {:?}", pages.keys());
    }
    for (page, roff) in &pages {
        for heading in ["NAME", "SYNOPSIS", "DESCRIPTION", "EXIT STATUS", "SEE ALSO"] {
            let body = section(roff, heading).unwrap_or_default();
            assert!(!body.trim().is_empty(), "{page} has no {heading}:\n{roff}");
        }
    }
    for entry in fs::read_dir(man.join("man1"))
        .expect("man1")
        .chain(fs::read_dir(man.join("man8")).expect("man8"))
    {
        let path = entry.expect("entry").path();
        let said = warnings(&sb, &path);
        assert!(
            said.trim().is_empty(),
            "man --warnings -l {}:\n{said}",
            path.display()
        );
    }
    let host_has_systemd_pages = man_w("systemctl(1)");
    let missing = unresolved(&pages, host_has_systemd_pages);
    assert!(missing.is_empty(), "{missing:#?}");

    // The controls, through the same functions: a page that refers to a
    // page nobody has, and one that groff warns about.
    let mut broken = pages.clone();
    broken.insert(
        "app-x(1)".into(),
        ".SH \"SEE ALSO\"\napp\\-nosuch(1)\n".into(),
    );
    assert_eq!(
        unresolved(&broken, host_has_systemd_pages),
        ["app-x(1) refers to app-nosuch(1)"]
    );
    let bad = sb.path().join("bad.1");
    fs::write(
        &bad,
        ".TH BAD 1\n.SH NAME\nbad \\- a page\n.SH DESCRIPTION\n\\*[nosuchstring] text\n",
    )
    .expect("write a bad page");
    assert!(
        !warnings(&sb, &bad).trim().is_empty(),
        "groff saw nothing wrong in {}",
        bad.display()
    );
}

#[test]
fn app_1_explains_dispatch_files_environment_and_exit_codes() {
    let Some(deb) = package() else { return };
    if !require_tools(&[("dpkg-deb", "dpkg")]) {
        return;
    }
    let sb = Sandbox::new();
    let root = sb.path().join("root");
    unpack(&deb, &root);
    let pages = pages(&root.join("usr/share/man"));
    let app = &pages["app(1)"];
    let description = section(app, "DESCRIPTION").unwrap_or_default();
    for says in [
        "app-NAME",
        "APP_PLUGIN_PATH",
        "/usr/libexec/app",
        "APP_DATA_DIR/plugins",
        "trusted",
        "longest match",
    ] {
        assert!(
            description.contains(says),
            "app(1) DESCRIPTION lacks {says}:\n{description}"
        );
    }
    let files = section(app, "FILES").unwrap_or_default();
    for says in [
        "config.json",
        "libexec/app",
        "APP_RUNTIME_DIR/plugins/",
        "/run/app/plugins/",
        "/var/lib/app",
        "/usr/share/app/sdk/",
    ] {
        assert!(files.contains(says), "app(1) FILES lacks {says}:\n{files}");
    }
    // Every APP_* variable the docs name, but the build's and the tests' own.
    let environment = section(app, "ENVIRONMENT").unwrap_or_default();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut docs = fs::read_to_string(dir.join("README.md")).expect("README");
    for entry in fs::read_dir(dir.join("docs")).expect("docs") {
        docs.push_str(&fs::read_to_string(entry.expect("entry").path()).unwrap_or_default());
    }
    let mut named: Vec<&str> = docs
        .match_indices("APP_")
        .map(|(i, _)| {
            let rest = &docs[i..];
            &rest[..rest
                .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                .unwrap_or(rest.len())]
        })
        .filter(|v| v.len() > 4 && !v.starts_with("APP_TEST_") && !v.starts_with("APP_DEB_"))
        .collect();
    named.sort_unstable();
    named.dedup();
    assert!(named.len() > 20, "{named:?}");
    let missing: Vec<&&str> = named
        .iter()
        .filter(|v| {
            !environment
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == **v)
        })
        .collect();
    assert!(missing.is_empty(), "app(1) ENVIRONMENT lacks {missing:?}");
    let exit = section(app, "EXIT STATUS").unwrap_or_default();
    for code in ["127 ", "126 ", "2 usage"] {
        assert!(
            exit.contains(code),
            "app(1) EXIT STATUS lacks {code}:\n{exit}"
        );
    }

    // Synopses as typed, with placeholders; the repeater's page lists both
    // its commands; the tracer has a page.
    let synopsis = |page: &str| section(&pages[page], "SYNOPSIS").unwrap_or_default();
    let install = synopsis("app-plugin-install(1)");
    assert!(
        install.trim_start().starts_with("app plugin install "),
        "{install}"
    );
    assert!(
        install.contains("[--sha256 SHA256]") || install.contains("--sha256 "),
        "{install}"
    );
    let put = synopsis("app-event-repeater-manage-put(1)");
    assert!(
        put.trim_start()
            .starts_with("app event-repeater manage put "),
        "{put}"
    );
    let run_page = synopsis("app-event-repeater-run(1)");
    assert!(
        run_page.contains("[--sink URL]") || run_page.contains("[--sink "),
        "{run_page}"
    );
    let commands = section(&pages["app-event-repeater(1)"], "COMMANDS").unwrap_or_default();
    assert!(
        commands.contains("app-event-repeater-run(1)")
            && commands.contains("app-event-repeater-manage(1)"),
        "{commands}"
    );
    let tracer = section(&pages["app-listener-tracer(1)"], "SYNOPSIS").unwrap_or_default();
    assert!(tracer.contains("[--file PATH]"), "{tracer}");
    let units = section(&pages["app-event-repeater@.service(8)"], "FILES").unwrap_or_default();
    assert!(
        units.contains("/etc/app/event-time.env") && units.contains("NAME.env"),
        "{units}"
    );
}
