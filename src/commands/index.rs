//! `app plugin index add|list|remove|update`: the indexes `install NAME`
//! looks plugins up in (see [`crate::plugin_index`]); `init` and `publish`,
//! a publisher's, are carried out by `app_fetch` (`fetch/src/publish/`).

use std::path::{Path, PathBuf};

use crate::cli::IndexCmd;
use crate::error::{code, Error, Result};
use crate::install::{receipts::Lock, url, Source};
use crate::plugin_index::config::{IndexConfig, Indexes};
use crate::plugin_index::{self as pi, cache, summary, verify};
use crate::session::Session;
use app_fetch_protocol::publish;
use app_plugin::text::escape_for_terminal as printable;

pub fn run(session: &Session, cmd: IndexCmd) -> Result<i32> {
    match cmd {
        IndexCmd::Add {
            name,
            url,
            key_file,
            key,
            token_file,
            insecure_no_signature,
            max_age,
        } => {
            let key = match (key, key_file) {
                (Some(key), _) => {
                    Some(verify::parse_key(&key).map_err(|e| Error::Usage(format!("--key: {e}")))?)
                }
                (None, Some(file)) => Some(read_key_file(&file)?),
                (None, None) => None,
            };
            let cfg = IndexConfig {
                url: location(&url)?,
                token_file: token_file.map(|f| check_token_file(&f)).transpose()?,
                key,
                insecure_no_signature,
                name,
                id: None,
                max_age_secs: max_age
                    .map(|a| pi::age::parse(&a).map_err(Error::Usage))
                    .transpose()?,
            };
            add(session, cfg)
        }
        IndexCmd::List => list(session),
        IndexCmd::Remove { name } => remove(session, &name),
        IndexCmd::Update { names } => update(session, &names),
        IndexCmd::Init {
            dir,
            secret_key,
            no_password,
            url,
        } => crate::install::helper::publish(&publish::Request::Init {
            dir,
            secret_key,
            no_password,
            id: url,
        }),
        IndexCmd::Publish {
            dir,
            plugin,
            version,
            os,
            arch,
            secret_key,
            description,
            homepage,
        } => crate::install::helper::publish(&publish::Request::Publish {
            dir,
            plugin,
            version,
            os: os.unwrap_or_else(|| std::env::consts::OS.to_string()),
            arch: arch.unwrap_or_else(|| std::env::consts::ARCH.to_string()),
            secret_key,
            description,
            homepage,
        }),
    }
}

/// What `index add` records as the index's location: an http(s) URL as
/// typed, or an absolute path.
pub(crate) fn location(text: &str) -> Result<String> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    match Source::parse(text, &cwd)? {
        Source::Url(u) if url::has_secret(&u) => Err(Error::Usage(format!(
            "{} carries user info or a query value, which would be stored in clear (either can hold a token); add the URL without them, put the credential in a file and pass --token-file FILE instead",
            url::redact(&u)
        ))),
        Source::Url(u) => Ok(u),
        Source::Path(p) => Ok(p.display().to_string()),
    }
}

pub(crate) fn read_key_file(file: &Path) -> Result<String> {
    let bytes = app_plugin::file::read_limited(file, 64 * 1024)
        .map_err(|e| Error::Usage(format!("--key-file {} {e}", file.display())))?;
    verify::parse_key(&String::from_utf8_lossy(&bytes))
        .map_err(|e| Error::Usage(format!("--key-file {}: {e}", file.display())))
}

/// The token file, made absolute, after checking it can be read (its
/// contents are not kept, nor shown).
pub(crate) fn check_token_file(file: &Path) -> Result<PathBuf> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::io("cannot read the current directory", e))?;
    let file = cwd.join(file);
    app_plugin::file::read_limited(&file, 64 * 1024).map_err(|e| {
        Error::Usage(format!(
            "--token-file {} {e}; it must be a file holding the token",
            file.display()
        ))
    })?;
    crate::install::helper::warn_if_shared(&file);
    Ok(file)
}

fn check_index_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(Error::Usage(format!(
            "'{}' cannot be an index name: use lowercase letters, digits, '-' and '_' (at most 64, starting with a letter or digit)",
            name.escape_debug()
        )))
    }
}

fn lock(session: &Session) -> Result<Lock> {
    let dir = cache::dir(&session.dirs.cache_dir);
    std::fs::create_dir_all(&dir)
        .and_then(|()| Lock::at(&dir.join(".index.lock")))
        .map_err(|e| Error::io(format!("cannot lock {}", dir.display()), e))
}

fn load(session: &Session) -> Result<Indexes> {
    Indexes::load(&session.dirs.config_dir).map_err(Error::Usage)
}

fn save(session: &Session, indexes: &Indexes) -> Result<()> {
    indexes.save(&session.dirs.config_dir).map_err(|e| {
        Error::io(
            format!(
                "cannot write {}",
                session.dirs.config_dir.join(pi::config::FILE).display()
            ),
            e,
        )
    })
}

/// `index add`: fetch and verify first; record the index only if it passed.
fn add(session: &Session, cfg: IndexConfig) -> Result<i32> {
    add_to(session, cfg, &mut std::io::stdout())
}

/// [`add`], its report written to `out` (`plugin apply -o json` sends it
/// to stderr).
pub fn add_to(
    session: &Session,
    mut cfg: IndexConfig,
    out: &mut dyn std::io::Write,
) -> Result<i32> {
    check_index_name(&cfg.name)?;
    let _lock = lock(session)?;
    let mut indexes = load(session)?;
    if let Some(existing) = indexes.get(&cfg.name) {
        return Err(Error::Fetch {
            message: format!(
                "index '{}' is already added (from {}); 'app plugin index remove {}' first to add it again",
                cfg.name,
                url::redact(&existing.url),
                cfg.name
            ),
            code: code::REFUSED,
        });
    }
    // A copy left by an index of the same name removed earlier must not
    // set the serial floor of this one.
    let verified = pi::fetch_verified(&cfg, None, std::time::SystemTime::now())?;
    cache::store(
        &session.dirs.cache_dir,
        &cfg.name,
        &verified.bytes,
        &summary::Summary::of(&verified.index),
    )
    .map_err(|e| {
        Error::io(
            format!(
                "cannot write {}",
                cache::path(&session.dirs.cache_dir, &cfg.name).display()
            ),
            e,
        )
    })?;
    writeln!(
        out,
        "added index '{}' ({}): serial {}, {} plugin versions, expires {}",
        cfg.name,
        url::redact(&cfg.url),
        verified.index.serial,
        verified.index.plugins.len(),
        printable(&verified.index.expires)
    )
    .ok();
    if let Some(id) = verified.new_id(&cfg) {
        writeln!(
            out,
            "index '{}' names itself \"{}\": every update must carry the same name",
            cfg.name,
            printable(id)
        )
        .ok();
        cfg.id = Some(id.to_string());
    }
    if let Some(warning) = verified.unbound_warning(&cfg) {
        crate::warn::warn(warning);
    }
    if let Some(warning) = far_expiry_warning(&cfg, &verified.index) {
        crate::warn::warn(warning);
    }
    if cfg.insecure_no_signature {
        crate::warn::warn(format_args!(
            "index '{}' is not signed: anyone who can change what {} serves can choose what 'app plugin install' installs from it",
            cfg.name,
            url::redact(&cfg.url)
        ));
    }
    indexes.indexes.push(cfg);
    save(session, &indexes)?;
    Ok(0)
}

/// How far ahead an `expires` may be before `index add` suggests --max-age.
const FAR_EXPIRY: std::time::Duration = std::time::Duration::from_secs(366 * 86_400);

/// The warning for an index whose publisher's `expires` is more than a
/// year away, added without `--max-age`: a mirror frozen at this copy
/// would be taken until then (the publisher's choice; --max-age is the
/// user's bound).
fn far_expiry_warning(cfg: &IndexConfig, index: &pi::format::IndexFile) -> Option<String> {
    let expires = pi::format::parse_rfc3339(&index.expires)?;
    let far = expires.duration_since(std::time::SystemTime::now()).ok()? > FAR_EXPIRY;
    (far && cfg.max_age_secs.is_none()).then(|| {
        format!(
            "index '{}' expires only on {}, so a server frozen at this copy would be believed until then; to bound it yourself: app plugin index remove {} and add it again with --max-age 30d (needs \"signed_at\" in the index)",
            cfg.name,
            printable(&index.expires),
            cfg.name
        )
    })
}

fn list(session: &Session) -> Result<i32> {
    let indexes = load(session)?;
    if indexes.indexes.is_empty() {
        println!("No plugin indexes. Add one: app plugin index add NAME URL --key-file FILE");
        return Ok(0);
    }
    let rows: Vec<[String; 5]> = indexes
        .indexes
        .iter()
        .map(|cfg| {
            let cached = summary::load(&session.dirs.cache_dir, &cfg.name);
            let (serial, expires) = match &cached {
                Ok(Some(file)) => (
                    file.serial.to_string(),
                    printable(&file.expires).into_owned(),
                ),
                Ok(None) => ("-".into(), "not fetched".into()),
                Err(_) => ("-".into(), "cache unreadable".into()),
            };
            let signature = match &cfg.key {
                Some(key) => format!("minisign {key}"),
                None => "UNSIGNED (--insecure-no-signature)".into(),
            };
            let token = cfg
                .token_file
                .as_ref()
                .map(|f| format!("  token file {}", f.display()))
                .unwrap_or_default();
            [
                cfg.name.clone(),
                url::redact(&cfg.url),
                serial,
                expires,
                format!("{signature}{token}"),
            ]
        })
        .collect();
    print_table(&["NAME", "URL", "SERIAL", "EXPIRES", "SIGNATURE"], &rows);
    Ok(0)
}

/// Prints rows in aligned columns (the last one unpadded), buffered: a
/// search can print thousands of rows.
pub fn print_table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    use std::io::Write;
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if i + 1 == N {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:w$}  ", w = widths[i]));
            }
        }
        writeln!(out, "{}", text.trim_end())
    };
    let written = std::iter::once(header.to_vec())
        .chain(rows.iter().map(|r| r.iter().map(String::as_str).collect()))
        .try_for_each(&mut line);
    // A closed pipe (`app plugin search | head`) ends the listing, quietly.
    let _ = written.and_then(|()| out.flush());
}

fn remove(session: &Session, name: &str) -> Result<i32> {
    let _lock = lock(session)?;
    let mut indexes = load(session)?;
    let before = indexes.indexes.len();
    indexes.indexes.retain(|i| i.name != name);
    if indexes.indexes.len() == before {
        return Err(Error::Usage(format!(
            "there is no index named '{}'; 'app plugin index list' shows the indexes added",
            name.escape_debug()
        )));
    }
    save(session, &indexes)?;
    cache::remove(&session.dirs.cache_dir, name).map_err(|e| {
        Error::io(
            format!(
                "cannot remove {}",
                cache::path(&session.dirs.cache_dir, name).display()
            ),
            e,
        )
    })?;
    println!("removed index '{name}' (plugins installed from it stay installed)");
    Ok(0)
}

/// `index update`: every index (or those named), each on its own: a
/// refusal keeps that index's last good copy and makes the exit non-zero.
fn update(session: &Session, names: &[String]) -> Result<i32> {
    refresh(session, names, &mut std::io::stdout())
}

/// [`update`], its report written to `out` (`plugin outdated --refresh
/// -o json` sends it to stderr, beside its JSON on stdout).
pub fn refresh(session: &Session, names: &[String], out: &mut dyn std::io::Write) -> Result<i32> {
    let _lock = lock(session)?;
    let mut indexes = load(session)?;
    for name in names {
        if indexes.get(name).is_none() {
            return Err(Error::Usage(format!(
                "there is no index named '{}'; 'app plugin index list' shows the indexes added",
                name.escape_debug()
            )));
        }
    }
    if indexes.indexes.is_empty() {
        writeln!(
            out,
            "No plugin indexes to update. Add one: app plugin index add NAME URL --key-file FILE"
        )
        .ok();
        return Ok(0);
    }
    let mut exit = 0;
    let mut named = Vec::new();
    for cfg in indexes
        .indexes
        .iter()
        .filter(|c| names.is_empty() || names.contains(&c.name))
    {
        let before = summary::load(&session.dirs.cache_dir, &cfg.name)
            .ok()
            .flatten()
            .map(|f| f.serial);
        match pi::update(cfg, &session.dirs.cache_dir) {
            Ok(v) => {
                let change = match before {
                    Some(b) if b == v.index.serial => format!("serial {b}, unchanged"),
                    Some(b) => format!("serial {b} → {}", v.index.serial),
                    None => format!("serial {}", v.index.serial),
                };
                writeln!(
                    out,
                    "{}: {change}, {} plugin versions",
                    cfg.name,
                    v.index.plugins.len()
                )
                .ok();
                if let Some(warning) = v.unbound_warning(cfg) {
                    crate::warn::warn(warning);
                }
                if let Some(id) = v.new_id(cfg) {
                    writeln!(
            out,
                        "{}: names itself \"{}\" from now on: every update must carry the same name",
                        cfg.name,
                        printable(id)
                    ).ok();
                    named.push((cfg.name.clone(), id.to_string()));
                }
            }
            Err(e) => {
                eprintln!("app: {}", printable(&e.to_string()));
                if exit == 0 {
                    exit = e.exit_code();
                }
            }
        }
    }
    if !named.is_empty() {
        for (name, id) in named {
            if let Some(cfg) = indexes.indexes.iter_mut().find(|c| c.name == name) {
                cfg.id = Some(id);
            }
        }
        save(session, &indexes)?;
    }
    Ok(if exit == 0 {
        0
    } else {
        exit.max(code::FAILURE)
    })
}
