//! `app plugin index init DIR` and `app plugin index publish DIR PLUGIN
//! --version V`: a team's signed index in one command each (docs/plugin-index.md,
//! "Publishing an index"). `app` hands the request over
//! ([`app_fetch_protocol::publish`]); this is where the archive is packed
//! ([`pack`]), the document edited ([`document`]) and signed ([`keys`]).
//!
//! Every check comes first (the key opens and is the index's, the plugin
//! packs, the document parses); then the archive, the document and its
//! signature are written, each atomically: a refusal changes nothing.

mod document;
mod keys;
mod pack;

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use app_fetch_protocol::code;
use app_fetch_protocol::publish::Request;

/// Why publishing stopped: the message (`app: ` is added) and the exit code.
#[derive(Debug)]
pub struct Failure {
    pub code: i32,
    pub message: String,
}

impl Failure {
    fn usage(message: String) -> Failure {
        Failure {
            code: code::USAGE,
            message,
        }
    }
    fn io(message: String) -> Failure {
        Failure {
            code: code::FAILURE,
            message,
        }
    }
    fn verify(message: String) -> Failure {
        Failure {
            code: code::VERIFY,
            message,
        }
    }
}

/// An index is already there (`init`): exit 4, as `index add` of a name
/// already added.
const EXISTS: i32 = 4;

/// Carries out `request`; returns the exit code.
pub fn run(request: &Request) -> i32 {
    let done = match request {
        Request::Init {
            dir,
            secret_key,
            no_password,
            id,
        } => init(dir, secret_key.as_deref(), *no_password, id.as_deref()),
        Request::Publish {
            dir,
            plugin,
            version,
            os,
            arch,
            secret_key,
            description,
            homepage,
        } => publish(&Publish {
            dir,
            plugin,
            version,
            os,
            arch,
            secret_key,
            description,
            homepage,
        }),
    };
    match done {
        Ok(()) => 0,
        Err(f) => {
            let text = app_plugin::text::escape_for_terminal(&f.message).into_owned();
            eprintln!("app: {text}");
            f.code
        }
    }
}

fn secret_path(given: Option<&Path>) -> Result<PathBuf, Failure> {
    given.map(Path::to_path_buf).or_else(keys::default_secret_key).ok_or_else(|| {
        Failure::usage("no HOME to put minisign's key in (~/.minisign/minisign.key): pass --secret-key FILE".into())
    })
}

/// `index init DIR`.
fn init(
    dir: &Path,
    secret: Option<&Path>,
    no_password: bool,
    id: Option<&str>,
) -> Result<(), Failure> {
    let index = dir.join("index.json");
    if index.exists() {
        return Err(Failure {
            code: EXISTS,
            message: format!(
                "{} already exists, so nothing was changed; publish into it with 'app plugin index publish {} ./app-NAME --version V'",
                index.display(),
                dir.display()
            ),
        });
    }
    fs::create_dir_all(dir)
        .map_err(|e| Failure::io(format!("cannot create {}: {e}", dir.display())))?;
    let dir = fs::canonicalize(dir)
        .map_err(|e| Failure::io(format!("cannot read {}: {e}", dir.display())))?;
    let index = dir.join("index.json");
    let secret = absolute(&secret_path(secret)?);
    refuse_inside(&dir, &secret)?;
    let (public, secret_key, made) = if secret.exists() {
        let key = keys::load(&secret)?;
        (keys::public_of(&key)?, key, false)
    } else {
        let pair = keys::generate(&secret, no_password)?;
        (pair.pk, pair.sk, true)
    };
    let id = id.map_or_else(|| format!("file://{}", index.display()), String::from);
    let doc = document::new(&id);
    let bytes = document::bytes(&doc);
    let signature = keys::sign(&public, &secret_key, &bytes, "index.json")?;
    let public_text = keys::public_file(&public)?;
    write_atomic(&dir.join("index.pub"), public_text.as_bytes(), 0o644)?;
    write_atomic(&index, &bytes, 0o644)?;
    write_atomic(&dir.join("index.json.minisig"), signature.as_bytes(), 0o644)?;
    let line = keys::public_line(&public_text).unwrap_or_default();
    let shown = dir.display();
    println!("created the index {shown}/index.json (serial 1, no plugins) naming itself \"{id}\", signed by the key in {shown}/index.pub ({line})");
    match made {
        true => println!(
            "made the secret key {} (keep it, and never put it in {shown})",
            secret.display()
        ),
        false => println!("signed with the existing secret key {}", secret.display()),
    }
    println!("next: app plugin index publish {shown} ./app-NAME --version 1.0.0");
    println!("      serve {shown} over HTTP(S), then: app plugin index add NAME URL/index.json --key-file index.pub");
    Ok(())
}

/// The fields of a [`Request::Publish`].
struct Publish<'a> {
    dir: &'a PathBuf,
    plugin: &'a PathBuf,
    version: &'a String,
    os: &'a String,
    arch: &'a String,
    secret_key: &'a Option<PathBuf>,
    description: &'a Option<String>,
    homepage: &'a Option<String>,
}

/// The public key file is a line of base64 and a comment: 64 KiB is ample.
const MAX_PUBLIC_KEY_BYTES: u64 = 64 * 1024;

/// `index publish DIR PLUGIN --version V`.
fn publish(request: &Publish) -> Result<(), Failure> {
    let Publish {
        dir,
        plugin,
        version,
        os,
        arch,
        secret_key,
        description,
        homepage,
    } = *request;
    let index = dir.join("index.json");
    let mut doc = document::load(&index)?;
    // A regular file of bounded size, as every other file read here.
    let public_text = app_plugin::file::read_limited(&dir.join("index.pub"), MAX_PUBLIC_KEY_BYTES)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .map_err(|e| Failure::usage(format!("cannot read {}/index.pub: {e}", dir.display())))?;
    let expected = keys::public_line(&public_text).ok_or_else(|| {
        Failure::verify(format!(
            "{}/index.pub is not a minisign public key",
            dir.display()
        ))
    })?;
    let secret = absolute(&secret_path(secret_key.as_deref())?);
    refuse_inside(&absolute(dir), &secret)?;
    let packed = pack::pack(plugin)?;
    semver_like(version)?;
    let key = keys::load(&secret)?;
    let public = keys::public_of(&key)?;
    if public.to_base64() != expected {
        return Err(Failure::verify(format!(
            "the secret key {} is not the key of {}/index.pub ({expected}), so nothing was changed; give the index's key with --secret-key FILE",
            secret.display(),
            dir.display()
        )));
    }
    let name = &packed.name;
    let file = format!("{name}/app-{name}-{version}-{os}-{arch}.tar.gz");
    let sha256 = app_fetch_protocol::checksum::sha256_hex(&packed.bytes);
    let replaced = document::add(
        &mut doc,
        &document::Build {
            name,
            version,
            os,
            arch,
            url: &file,
            sha256: &sha256,
            description: description.as_deref(),
            homepage: homepage.as_deref(),
        },
    );
    let bytes = document::bytes(&doc);
    let signature = keys::sign(&public, &key, &bytes, "index.json")?;
    // Checked and signed: now written, archive first (the index names it).
    let archive = dir.join(&file);
    if let Some(parent) = archive.parent() {
        fs::create_dir_all(parent)
            .map_err(|e| Failure::io(format!("cannot create {}: {e}", parent.display())))?;
    }
    write_atomic(&archive, &packed.bytes, 0o644)?;
    write_atomic(&index, &bytes, 0o644)?;
    write_atomic(&dir.join("index.json.minisig"), signature.as_bytes(), 0o644)?;
    let serial = doc["serial"].as_u64().unwrap_or(0);
    let verb = if replaced { "replaced" } else { "published" };
    let extra = match packed.extra.len() {
        0 => String::new(),
        n => format!(" with {n} more files ({})", packed.extra.join(", ")),
    };
    println!(
        "{verb} {name} {version} for {os}/{arch} in {}/index.json (serial {serial}): {file}{extra}, sha256 {sha256}",
        dir.display()
    );
    Ok(())
}

/// A version is what the index format takes: `1.2.0`, `2.0.0-rc.1`.
fn semver_like(version: &str) -> Result<(), Failure> {
    let core = version.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    let ok = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && version.len() <= 64
        && version
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-+.".contains(&b));
    ok.then_some(()).ok_or_else(|| {
        Failure::usage(format!(
            "--version '{}' is not a semantic version (1.2.0, 2.0.0-rc.1)",
            version.escape_debug()
        ))
    })
}

fn absolute(path: &Path) -> PathBuf {
    std::env::current_dir().map_or_else(|_| path.to_path_buf(), |d| d.join(path))
}

/// The secret key must never be served with the index.
fn refuse_inside(dir: &Path, secret: &Path) -> Result<(), Failure> {
    let dir = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let parent = secret
        .parent()
        .and_then(|p| fs::canonicalize(p).ok())
        .unwrap_or_else(|| secret.to_path_buf());
    if parent.starts_with(&dir) {
        return Err(Failure::usage(format!(
            "the secret key {} is inside {}, which is served to everyone: keep it outside (the default is minisign's, ~/.minisign/minisign.key)",
            secret.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temp file beside it, synced and renamed.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8], mode: u32) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure::io(format!("cannot write {}: {e}", path.display()));
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(".app-tmp-{}", std::process::id()));
    let mut file = fs::File::create(&tmp).map_err(fail)?;
    let written = file
        .set_permissions(fs::Permissions::from_mode(mode))
        .and_then(|()| file.write_all(bytes))
        .and_then(|()| file.sync_all())
        .and_then(|()| fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(fail(e));
    }
    fs::File::open(dir).and_then(|d| d.sync_all()).map_err(fail)
}
