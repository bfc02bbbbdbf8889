//! `app plugin new`: a working plugin skeleton that already speaks the
//! protocol (metadata, completion, the JSON context on stdin), in sh,
//! Python or Rust, with a README.
//!
//! The templates live in `templates/plugin/` and are compiled in. The Rust
//! skeleton depends on the plugin SDK `app-plugin` by version, as on
//! crates.io; until the SDK is published there, a `[patch.crates-io]`
//! section points that dependency at the SDK source that came with this
//! `app` ([`local_sdk`]: `<prefix>/share/app/sdk` from `./install.sh`, or a
//! checkout's `sdk/` for an `app` built there), so `cargo build --release`
//! works as printed.

use std::fs;
use std::path::{Path, PathBuf};

use crate::cli::Lang;
use crate::install::name;

const README: &str = include_str!("../templates/plugin/README.md");
const SH: &str = include_str!("../templates/plugin/sh/plugin.sh");
const PYTHON: &str = include_str!("../templates/plugin/python/plugin.py");
const RUST_CARGO: &str = include_str!("../templates/plugin/rust/Cargo.toml");
const RUST_MAIN: &str = include_str!("../templates/plugin/rust/main.rs");
const RUST_GITIGNORE: &str = include_str!("../templates/plugin/rust/gitignore");

/// The description every skeleton starts with.
pub const DESCRIPTION: &str = "A plugin for app, created by app plugin new";
/// The SDK version the Rust skeleton depends on: the one `app` was built with.
pub const SDK_VERSION: &str = app_plugin::SDK_VERSION;

/// One file of a skeleton.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Relative to the skeleton's directory.
    pub path: PathBuf,
    pub contents: String,
    pub executable: bool,
}

/// A skeleton, before it is written.
#[derive(Debug, Clone)]
pub struct Skeleton {
    pub name: String,
    pub lang: Lang,
    pub files: Vec<File>,
}

/// Why a skeleton cannot be written.
#[derive(Debug)]
pub enum ScaffoldError {
    BadName(name::NameError),
    /// The target directory exists and is not empty.
    NotEmpty(PathBuf),
    Io(PathBuf, std::io::Error),
}

impl std::fmt::Display for ScaffoldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScaffoldError::BadName(e) => e.fmt(f),
            ScaffoldError::NotEmpty(dir) => write!(
                f,
                "{} exists and is not empty; choose another --dir",
                dir.display()
            ),
            ScaffoldError::Io(path, e) => write!(f, "cannot write {}: {e}", path.display()),
        }
    }
}

/// The SDK source this `app` can point a Rust skeleton at: the one
/// `./install.sh` put in `<prefix>/share/app/sdk` beside `<prefix>/bin/app`,
/// or, for an `app` run from a cargo build directory, the checkout's `sdk/`.
pub fn local_sdk(app_exe: Option<&Path>) -> Option<PathBuf> {
    let bin = app_exe?.parent()?;
    let installed = bin.parent().map(|p| p.join("share/app/sdk"));
    if let Some(dir) = installed.filter(|d| d.join("Cargo.toml").is_file()) {
        return Some(dir);
    }
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("sdk");
    (bin.join(".cargo-lock").is_file() && checkout.join("Cargo.toml").is_file()).then_some(checkout)
}

/// The `[patch.crates-io]` section that makes `app-plugin` come from `sdk`.
fn sdk_patch(sdk: Option<&Path>) -> String {
    match sdk {
        Some(dir) => format!(
            "\n# app-plugin is not on crates.io yet: build against the SDK source that came\n\
             # with app. Delete this section once app-plugin is on crates.io.\n\
             [patch.crates-io]\napp-plugin = {{ path = {:?} }}\n",
            dir.display().to_string()
        ),
        None => String::new(),
    }
}

impl Skeleton {
    /// The files of plugin `name` in `lang`; a Rust skeleton builds against
    /// the SDK source at `sdk` when given (see [`local_sdk`]).
    pub fn new(name: &str, lang: Lang, sdk: Option<&Path>) -> Result<Skeleton, ScaffoldError> {
        name::validate(name).map_err(ScaffoldError::BadName)?;
        let exe = format!("app-{name}");
        let fill = |template: &str, extra: &[(&str, &str)]| {
            let mut text = template
                .replace("{{name}}", name)
                .replace("{{description}}", DESCRIPTION);
            for (key, value) in extra {
                text = text.replace(&format!("{{{{{key}}}}}"), value);
            }
            text
        };
        let (lang_name, install, main_file, mut files) = match lang {
            Lang::Sh | Lang::Python => {
                let template = if lang == Lang::Sh { SH } else { PYTHON };
                (
                    if lang == Lang::Sh {
                        "POSIX sh"
                    } else {
                        "Python 3"
                    },
                    format!("app plugin install ./{exe}"),
                    exe.clone(),
                    vec![File {
                        path: PathBuf::from(&exe),
                        contents: fill(template, &[]),
                        executable: true,
                    }],
                )
            }
            Lang::Rust => (
                "Rust",
                format!("cargo build --release\napp plugin install target/release/{exe}"),
                "src/main.rs".to_string(),
                vec![
                    File {
                        path: PathBuf::from("Cargo.toml"),
                        contents: fill(
                            RUST_CARGO,
                            &[("sdk_version", SDK_VERSION), ("sdk_patch", &sdk_patch(sdk))],
                        ),
                        executable: false,
                    },
                    File {
                        path: PathBuf::from("src/main.rs"),
                        contents: fill(RUST_MAIN, &[]),
                        executable: false,
                    },
                    File {
                        path: PathBuf::from(".gitignore"),
                        contents: RUST_GITIGNORE.to_string(),
                        executable: false,
                    },
                ],
            ),
        };
        let run_directly = match lang {
            Lang::Rust => format!("target/release/{exe}"),
            _ => format!("./{exe}"),
        };
        files.push(File {
            path: PathBuf::from("README.md"),
            contents: fill(
                README,
                &[
                    ("lang", lang_name),
                    ("install", &install),
                    ("main_file", &main_file),
                    ("run_directly", &run_directly),
                ],
            ),
            executable: false,
        });
        Ok(Skeleton {
            name: name.to_string(),
            lang,
            files,
        })
    }

    /// Writes the files into `dir`, which must not exist or be empty.
    pub fn write(&self, dir: &Path) -> Result<(), ScaffoldError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |e| ScaffoldError::Io(path, e)
        };
        if let Ok(mut entries) = fs::read_dir(dir) {
            if entries.next().is_some() {
                return Err(ScaffoldError::NotEmpty(dir.to_path_buf()));
            }
        }
        for file in &self.files {
            let path = dir.join(&file.path);
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(io(parent))?;
            }
            let mode = if file.executable { 0o755 } else { 0o644 };
            crate::install::atomic::write(&path, file.contents.as_bytes(), mode)
                .map_err(io(&path))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        for lang in [Lang::Sh, Lang::Python, Lang::Rust] {
            let sk =
                Skeleton::new("demo", lang, Some(Path::new("/opt/app/share/app/sdk"))).unwrap();
            for f in &sk.files {
                assert!(
                    !f.contents.contains("{{name}}")
                        && !f.contents.contains("{{description}}")
                        && !f.contents.contains("{{lang}}")
                        && !f.contents.contains("{{install}}")
                        && !f.contents.contains("{{sdk_version}}"),
                    "{lang:?} {}: {}",
                    f.path.display(),
                    f.contents
                );
            }
        }
    }

    #[test]
    fn the_rust_skeleton_depends_on_the_sdk_by_version_only() {
        let sk = Skeleton::new("demo", Lang::Rust, None).unwrap();
        let cargo = &sk.files[0].contents;
        assert!(
            cargo.contains(&format!("app-plugin = \"{SDK_VERSION}\"")),
            "{cargo}"
        );
        assert!(!cargo.lines().any(|l| l.starts_with("[patch")), "{cargo}");
        let patched = Skeleton::new("demo", Lang::Rust, Some(Path::new("/p/sdk"))).unwrap();
        let patched = &patched.files[0].contents;
        assert!(
            patched.contains("[patch.crates-io]\napp-plugin = { path = \"/p/sdk\" }\n")
                && patched.contains("Delete this section once app-plugin is on crates.io"),
            "{patched}"
        );
        let deps = cargo.split("[dependencies]").nth(1).unwrap_or_default();
        assert!(
            !deps
                .lines()
                .any(|l| !l.starts_with('#') && l.contains("path")),
            "{cargo}"
        );
    }

    #[test]
    fn bad_names_and_busy_dirs_are_refused() {
        assert!(Skeleton::new("plugin-x", Lang::Sh, None).is_err());
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("x"), "").unwrap();
        let sk = Skeleton::new("demo", Lang::Sh, None).unwrap();
        assert!(matches!(
            sk.write(dir.path()),
            Err(ScaffoldError::NotEmpty(_))
        ));
    }
}
