//! Plugin management: installing, removing and upgrading plugins in the
//! user plugin directory (`APP_DATA_DIR/plugins`).
//!
//! The order of an install is what makes it safe:
//! 1. check everything the user typed (name, `--sha256`, URL needs a checksum);
//! 2. get the bytes into memory (read the file, or download it), verify the
//!    checksum, unpack a `.tar.gz`, check it is an executable: done by the
//!    separate `app_fetch` binary (the `app-fetch` crate, fetch/), so that
//!    `app` links no HTTP, TLS or archive code;
//! 3. only then touch the plugin directory: a temp file beside the target,
//!    fsync, ask it for its metadata (version), rename; then the receipts (the install record).
//!
//! Any refusal happens in 1 or 2, so it leaves the directory as it was; an
//! interruption in 3 leaves at most a dot-named temp file, never a
//! half-written `app-<name>`.
//!
//! Modules, one job each: [`name`] (what a plugin may be called),
//! [`atomic`] (temp file + rename), [`receipts`] (`.receipts.json`), [`build`]
//! (from a git repository), and [`helper`] (runs step 2 in `app_fetch` and
//! reads its answer). What `app` and `app_fetch` say to each other, and what
//! both must read alike ([`Source`], [`url`], [`checksum`]), is the crate
//! both depend on, `app-fetch-protocol` (fetch/protocol/).

/// Step 2 of an install: [`helper::acquire`], which runs `app_fetch`.
pub type Acquire = dyn Fn(&Source, Option<&str>) -> Result<Artifact>;

pub mod atomic;
pub mod build;
pub mod files;
pub mod helper;
pub mod local;
pub mod name;
pub mod receipts;

/// What `app` and `app_fetch` must read alike, from the crate both use.
pub use app_fetch_protocol::{checksum, url, Artifact, Source};

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::discovery::{SearchPath, PLUGIN_PREFIX};
use crate::error::{Error, Result};
use crate::metadata;
use receipts::{Entry, Lock, Receipts, ReceiptsError};

/// What the user asked `plugin install` to do.
#[derive(Debug, Clone)]
pub struct Request {
    pub source: Source,
    /// `--name`: overrides the name taken from the file.
    pub name: Option<String>,
    /// `--force`: replace an existing plugin of that name.
    pub force: bool,
    /// `--sha256`: the checksum of what is fetched (required for URLs).
    pub sha256: Option<String>,
    /// Where it was chosen from, for the record, when not from `source` itself.
    pub origin: Option<Origin>,
}

/// Where an install was chosen from, recorded beside its source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origin {
    /// `install NAME`: (index, version) as the index lists it.
    pub index: Option<(String, String)>,
    /// `install --git` (or an index's source entry): built from this
    /// repository (`source` is then the build's output).
    pub git: Option<receipts::GitRecord>,
    /// `install NAME@VERSION`: pinned at that version.
    pub pinned: bool,
}

/// What an install did.
#[derive(Debug, Clone)]
pub struct Installed {
    pub name: String,
    pub path: PathBuf,
    pub entry: Entry,
    /// A file of that name was there before and was replaced.
    pub replaced: bool,
}

/// What a removal did.
#[derive(Debug, Clone)]
pub struct Removed {
    pub name: String,
    pub path: PathBuf,
    /// The file was already gone; only the record was dropped.
    pub was_missing: bool,
}

/// Installs a plugin into `plugin_dir`, as described in the module docs.
pub fn install(plugin_dir: &Path, request: &Request, acquire: &Acquire) -> Result<Installed> {
    // 1. Everything the user typed.
    let sha256 = check_request(plugin_dir, request)?;
    // 2. The bytes, verified, in memory.
    let artifact = acquire(&request.source, sha256.as_deref())?;
    let name = plugin_name(request, &artifact)?;
    check_name(&name)?;
    if let Some(path) = files::refused(&artifact.files) {
        return Err(Error::Fetch {
            message: format!(
                "the archive's file {path} leaves its folder, so nothing was installed"
            ),
            code: crate::error::code::VERIFY,
        });
    }
    let dest = plugin_dir.join(format!("{PLUGIN_PREFIX}{name}"));
    refuse_existing(&name, &dest, request.force)?;

    // 3. Nothing has been written so far. From here on, the plugin directory changes.
    fs::create_dir_all(plugin_dir)
        .map_err(|e| Error::io(format!("cannot create {}", plugin_dir.display()), e))?;
    let _lock = lock(plugin_dir)?;
    // Another install may have won the race while we were downloading.
    let replaced = refuse_existing(&name, &dest, request.force)?;
    let mut receipts = load_receipts(plugin_dir)?;
    files::replace(plugin_dir, &name, &artifact.files).map_err(|e| {
        Error::io(
            format!("cannot write {}", files::dir(plugin_dir, &name).display()),
            e,
        )
    })?;
    let version = write_plugin(plugin_dir, &dest, &artifact.bytes)?;
    let entry = record(request, artifact, version);
    receipts.plugins.insert(name.clone(), entry.clone());
    save_receipts(&receipts, plugin_dir)?;
    Ok(Installed {
        name,
        path: dest,
        entry,
        replaced,
    })
}

/// Step 1: the checksum given (normalised), required for a URL; the name
/// given, and no plugin of that name already (unless `--force`). Known
/// before fetching anything: refused before a pointless download.
fn check_request(plugin_dir: &Path, request: &Request) -> Result<Option<String>> {
    let sha256 = match &request.sha256 {
        Some(text) => Some(checksum::parse_hex(text).ok_or_else(|| {
            Error::Usage(format!(
                "--sha256 '{text}' is not a SHA-256 checksum (64 hex digits)"
            ))
        })?),
        None => None,
    };
    if let (Source::Url(url), None) = (&request.source, &sha256) {
        return Err(Error::Usage(format!(
            "installing from a URL needs its checksum: app plugin install {} --sha256 <HEX> \
             (compute it with `sha256sum` on a copy you trust)",
            url::redact(url)
        )));
    }
    if let Some(name) = &request.name {
        check_name(name)?;
        refuse_existing(
            name,
            &plugin_dir.join(format!("{PLUGIN_PREFIX}{name}")),
            request.force,
        )?;
    }
    Ok(sha256)
}

/// `--name`, else the name in the fetched file's name (`app-<name>`).
fn plugin_name(request: &Request, artifact: &Artifact) -> Result<String> {
    if let Some(name) = &request.name {
        return Ok(name.clone());
    }
    artifact
        .file_name
        .as_deref()
        .and_then(name::from_file_name)
        .map(String::from)
        .ok_or_else(|| {
            Error::Usage(format!(
                "cannot tell the plugin name from '{}' (it is not named app-<name>); pass --name NAME",
                artifact.file_name.as_deref().unwrap_or(&request.source.to_record())
            ))
        })
}

/// Writes `bytes` to `dest` atomically (a synced temp file in `plugin_dir`,
/// renamed), asking the new plugin for its version before the rename.
fn write_plugin(plugin_dir: &Path, dest: &Path, bytes: &[u8]) -> Result<Option<String>> {
    let io_err = |e| Error::io(format!("cannot write plugin {}", dest.display()), e);
    let mut tmp = atomic::TempFile::new_in(plugin_dir, 0o755).map_err(io_err)?;
    tmp.write_all(bytes).map_err(io_err)?;
    tmp.sync_and_close().map_err(io_err)?;
    let version = metadata::query(tmp.path(), metadata::METADATA_TIMEOUT).and_then(|m| m.version);
    tmp.persist(dest).map_err(io_err)?;
    Ok(version)
}

/// The receipt for what was just installed: where from, which version
/// (an index's when installed from one), its checksums, when.
fn record(request: &Request, artifact: Artifact, version: Option<String>) -> Entry {
    let mut entry = Entry {
        source: request.source.to_record(),
        version,
        sha256: checksum::sha256_hex(&artifact.bytes),
        archive_sha256: artifact.archive_sha256,
        installed_at: receipts::rfc3339(SystemTime::now()),
        index: None,
        git: None,
        pinned: false,
        files: artifact.files.iter().map(|f| f.path.clone()).collect(),
    };
    if let Some(origin) = &request.origin {
        entry.pinned = origin.pinned;
        if let Some((index, version)) = &origin.index {
            entry.index = Some(index.clone());
            entry.version = Some(version.clone());
        }
        if let Some(git) = &origin.git {
            entry.source = format!("git+{}", url::redact(&git.url));
            // The clone URL's password or token is not stored either.
            entry.git = Some(receipts::GitRecord {
                url: url::redact(&git.url),
                ..git.clone()
            });
        }
    }
    entry
}

/// Removes a plugin `install` put in `plugin_dir`, and its record. Refuses
/// anything else, naming where the plugin `app` would run actually is.
pub fn remove(plugin_dir: &Path, name: &str, search: &SearchPath) -> Result<Removed> {
    let found = || {
        search
            .find_executable(&format!("{PLUGIN_PREFIX}{name}"))
            .map(|f| f.path)
    };
    let receipts = load_receipts(plugin_dir)?;
    if !receipts.plugins.contains_key(name) {
        return Err(not_installed(name, found(), &receipts));
    }
    let _lock = lock(plugin_dir)?;
    let mut receipts = load_receipts(plugin_dir)?;
    let Some(entry) = receipts.plugins.get(name) else {
        return Err(not_installed(name, found(), &receipts));
    };
    let path = plugin_dir.join(format!("{PLUGIN_PREFIX}{name}"));
    let was_missing = match fs::read(&path) {
        Ok(bytes) => {
            if checksum::sha256_hex(&bytes) != entry.sha256 {
                return Err(Error::NotManaged {
                    name: name.to_string(),
                    reason: "was changed since 'app plugin install' put it there (its sha256 differs from the record), so it is left alone".into(),
                    found: Some(path),
                });
            }
            atomic::remove(&path)
                .map_err(|e| Error::io(format!("cannot remove {}", path.display()), e))?;
            false
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => true,
        Err(e) => return Err(Error::io(format!("cannot read {}", path.display()), e)),
    };
    files::remove(plugin_dir, name).map_err(|e| {
        Error::io(
            format!("cannot remove {}", files::dir(plugin_dir, name).display()),
            e,
        )
    })?;
    receipts.plugins.remove(name);
    save_receipts(&receipts, plugin_dir)?;
    Ok(Removed {
        name: name.to_string(),
        path,
        was_missing,
    })
}

/// Re-installs a plugin from the source its record names. A URL source
/// needs the new checksum.
pub fn upgrade(
    plugin_dir: &Path,
    name: &str,
    sha256: Option<String>,
    search: &SearchPath,
    acquire: &Acquire,
) -> Result<Installed> {
    let receipts = load_receipts(plugin_dir)?;
    let Some(entry) = receipts.plugins.get(name) else {
        let found = search
            .find_executable(&format!("{PLUGIN_PREFIX}{name}"))
            .map(|f| f.path);
        return Err(not_installed(name, found, &receipts));
    };
    let source = Source::parse(&entry.source, Path::new("/"))?;
    if matches!(&source, Source::Url(url) if url::has_secret(url)) {
        return Err(Error::Usage(format!(
            "plugin '{name}' was installed from {}, whose user info and query values (where tokens go) were not recorded; install it again with the whole URL: app plugin install <URL> --name {name} --force --sha256 <HEX>",
            entry.source
        )));
    }
    if let (Source::Url(url), None) = (&source, &sha256) {
        return Err(Error::Usage(format!(
            "plugin '{name}' was installed from {url}; upgrading downloads it again and needs the checksum of the new file: app plugin upgrade {name} --sha256 <HEX>"
        )));
    }
    install(
        plugin_dir,
        &Request {
            source,
            name: Some(name.to_string()),
            force: true,
            sha256,
            origin: None,
        },
        acquire,
    )
}

/// Pins plugin `name` at its version, or releases it (`plugin pin`,
/// `unpin`): only the receipt changes. Returns the receipt as it was.
pub fn set_pin(plugin_dir: &Path, name: &str, pinned: bool, search: &SearchPath) -> Result<Entry> {
    let missing = |receipts: &Receipts| {
        let found = search
            .find_executable(&format!("{PLUGIN_PREFIX}{name}"))
            .map(|f| f.path);
        not_installed(name, found, receipts)
    };
    let receipts = load_receipts(plugin_dir)?;
    if !receipts.plugins.contains_key(name) {
        return Err(missing(&receipts));
    }
    let _lock = lock(plugin_dir)?;
    let mut receipts = load_receipts(plugin_dir)?;
    let before = receipts.plugins.get(name).cloned();
    let Some(entry) = receipts.plugins.get_mut(name) else {
        return Err(missing(&receipts));
    };
    entry.pinned = pinned;
    if before.as_ref() != Some(entry) {
        save_receipts(&receipts, plugin_dir)?;
    }
    before.ok_or_else(|| missing(&receipts))
}

/// The receipts of `plugin_dir` (empty when there are none).
pub fn load_receipts(plugin_dir: &Path) -> Result<Receipts> {
    Receipts::load(plugin_dir).map_err(|e| match e {
        ReceiptsError::Io(path, source) => Error::io(format!("cannot read {}", path.display()), source),
        ReceiptsError::Corrupt(path, source) => Error::io(
            format!(
                "{} is not a valid install record (fix or delete it: installed plugins stay, only their records go)",
                path.display()
            ),
            io::Error::new(io::ErrorKind::InvalidData, source),
        ),
    })
}

fn save_receipts(receipts: &Receipts, plugin_dir: &Path) -> Result<()> {
    receipts.save(plugin_dir).map_err(|e| {
        Error::io(
            format!("cannot write {}", plugin_dir.join(receipts::FILE).display()),
            e,
        )
    })
}

fn lock(plugin_dir: &Path) -> Result<Lock> {
    Lock::acquire(plugin_dir)
        .map_err(|e| Error::io(format!("cannot lock {}", plugin_dir.display()), e))
}

fn check_name(name: &str) -> Result<()> {
    name::validate(name).map_err(|e| Error::BadPluginName {
        name: name.to_string(),
        reason: e.to_string(),
        retry: "choose another name (--name NAME)",
    })
}

/// Refuses when `dest` exists and `force` is not set; says whether it exists.
fn refuse_existing(name: &str, dest: &Path, force: bool) -> Result<bool> {
    let exists = fs::symlink_metadata(dest).is_ok();
    if exists && !force {
        return Err(Error::PluginExists {
            name: name.to_string(),
            path: dest.to_path_buf(),
        });
    }
    Ok(exists)
}

/// The refusal of `remove`/`upgrade NAME` for a name without a receipt:
/// where `app NAME` finds it, or else the installed name it is closest to.
fn not_installed(name: &str, found: Option<PathBuf>, receipts: &Receipts) -> Error {
    let mut reason =
        String::from("was not installed with 'app plugin install' (it has no install receipt)");
    let installed = receipts.plugins.keys().map(String::as_str);
    if let Some(near) = found
        .is_none()
        .then(|| crate::suggest::closest(name, installed))
        .flatten()
    {
        reason = format!("{reason}; did you mean '{near}'?");
    }
    Error::NotManaged {
        name: name.to_string(),
        reason,
        found,
    }
}
