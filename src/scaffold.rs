//! `app plugin new`: a working plugin skeleton that already speaks the
//! protocol (metadata, completion, the JSON context on stdin), in sh,
//! Python or Rust, with a README.
//!
//! The templates live in `templates/plugin/` and are compiled in. The Rust
//! skeleton depends on this project's library by path: the source directory
//! `app` was built from when it is still there (or `APP_SOURCE_DIR`), else a
//! commented dependency the author fills in.

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
/// Overrides where the Rust skeleton finds the `app` library.
pub const SOURCE_DIR_VAR: &str = "APP_SOURCE_DIR";

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
    /// Whether the Rust skeleton's `app` dependency points at a real checkout.
    pub library_found: bool,
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

impl Skeleton {
    /// The files of plugin `name` in `lang`.
    pub fn new(name: &str, lang: Lang) -> Result<Skeleton, ScaffoldError> {
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
        let mut library_found = true;
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
            Lang::Rust => {
                let (dependency, found) = app_dependency();
                library_found = found;
                (
                    "Rust",
                    format!("cargo build --release\napp plugin install target/release/{exe}"),
                    "src/main.rs".to_string(),
                    vec![
                        File {
                            path: PathBuf::from("Cargo.toml"),
                            contents: fill(RUST_CARGO, &[("app_dependency", &dependency)]),
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
                )
            }
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
            library_found,
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

/// The `app = …` dependency line of the Rust skeleton, and whether it points
/// at a real checkout of this project.
fn app_dependency() -> (String, bool) {
    let candidates = [
        std::env::var_os(SOURCE_DIR_VAR).map(PathBuf::from),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    for dir in candidates.into_iter().flatten() {
        if is_app_checkout(&dir) {
            let path = dir
                .display()
                .to_string()
                .replace('\\', "\\\\")
                .replace('"', "\\\"");
            return (format!("app-plugin = {{ path = \"{path}/sdk\" }}"), true);
        }
    }
    (
        "# The app plugin SDK: point this at the sdk/ directory of a checkout of app.\n\
         app-plugin = { path = \"../app/sdk\" }"
            .to_string(),
        false,
    )
}

/// Whether `dir` holds the source of the `app` package (not just any crate).
fn is_app_checkout(dir: &Path) -> bool {
    dir.is_absolute()
        && dir.join("sdk/src/context.rs").is_file()
        && fs::read_to_string(dir.join("Cargo.toml"))
            .is_ok_and(|t| t.lines().any(|l| l.trim() == "name = \"app\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placeholder_is_filled() {
        for lang in [Lang::Sh, Lang::Python, Lang::Rust] {
            let sk = Skeleton::new("demo", lang).unwrap();
            for f in &sk.files {
                assert!(
                    !f.contents.contains("{{name}}")
                        && !f.contents.contains("{{description}}")
                        && !f.contents.contains("{{lang}}")
                        && !f.contents.contains("{{install}}")
                        && !f.contents.contains("{{app_dependency}}"),
                    "{lang:?} {}: {}",
                    f.path.display(),
                    f.contents
                );
            }
        }
    }

    #[test]
    fn the_rust_skeleton_depends_on_this_checkout() {
        let sk = Skeleton::new("demo", Lang::Rust).unwrap();
        let cargo = &sk.files[0].contents;
        assert!(sk.library_found);
        assert!(
            cargo.contains(&format!("path = \"{}/sdk\"", env!("CARGO_MANIFEST_DIR"))),
            "{cargo}"
        );
    }

    #[test]
    fn bad_names_and_busy_dirs_are_refused() {
        assert!(Skeleton::new("plugin-x", Lang::Sh).is_err());
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("x"), "").unwrap();
        let sk = Skeleton::new("demo", Lang::Sh).unwrap();
        assert!(matches!(
            sk.write(dir.path()),
            Err(ScaffoldError::NotEmpty(_))
        ));
    }
}
