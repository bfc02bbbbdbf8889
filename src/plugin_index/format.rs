//! The index file, `app.index/v1` (docs/plugin-index.md): one JSON document
//! listing plugins, one entry per (name, version), each with the builds it
//! has per platform (an archive URL and its sha256) or a source to build.
//!
//! [`parse`] reads bytes that were already verified (see [`super::verify`])
//! and checks what JSON alone cannot: names, versions, checksums, the expiry
//! date, one entry per (name, version).

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::install::{checksum, name};

/// The only `apiVersion` this `app` reads.
pub const API_VERSION: &str = "app.index/v1";
/// The longest `index` (self-name) an index may carry.
pub const MAX_INDEX_NAME: usize = 512;

/// A whole index.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IndexFile {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Raised by the publisher at each signing; never goes back.
    pub serial: u64,
    /// RFC 3339 in UTC (`2027-06-01T00:00:00Z`): refused after that.
    pub expires: String,
    /// The index's own name, as its publisher calls it (a canonical URL,
    /// say): `index add` records it and every update must carry the same,
    /// so that the same key's signature on another index is refused.
    #[serde(default)]
    pub index: Option<String>,
    /// When it was signed (RFC 3339, UTC): what `index add --max-age` is
    /// checked against.
    #[serde(default)]
    pub signed_at: Option<String>,
    pub plugins: Vec<PluginEntry>,
}

/// One version of one plugin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginEntry {
    pub name: String,
    /// Semantic version (`1.2.0`, `2.0.0-rc.1`).
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub homepage: Option<String>,
    pub platforms: Vec<Platform>,
}

/// How to get one plugin version: a build for one os/arch, or a source any
/// machine with cargo can build.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawPlatform")]
pub enum Platform {
    Build {
        /// As Rust's `std::env::consts::OS` spells it: `linux`, `macos`, …
        os: String,
        /// As `std::env::consts::ARCH`: `x86_64`, `aarch64`, …
        arch: String,
        /// Absolute, or relative to the index's own URL.
        url: String,
        /// Of the file at `url` as downloaded.
        sha256: String,
    },
    Source {
        source: GitSource,
    },
}

/// A git repository holding the plugin's crate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GitSource {
    pub git: String,
    /// A commit, tag or branch; the default branch when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    /// The crate's directory inside the repository, when not at its root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// A platform as written: read into this plain struct, then into
/// [`Platform`]. (An untagged enum would do it too, but buffers every
/// entry to try each variant: several times slower on a large index.)
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlatform {
    os: Option<String>,
    arch: Option<String>,
    url: Option<String>,
    sha256: Option<String>,
    source: Option<GitSource>,
}

impl TryFrom<RawPlatform> for Platform {
    type Error = String;

    fn try_from(raw: RawPlatform) -> Result<Platform, String> {
        match raw {
            RawPlatform {
                os: Some(os),
                arch: Some(arch),
                url: Some(url),
                sha256: Some(sha256),
                source: None,
            } => Ok(Platform::Build {
                os,
                arch,
                url,
                sha256,
            }),
            RawPlatform {
                os: None,
                arch: None,
                url: None,
                sha256: None,
                source: Some(source),
            } => Ok(Platform::Source { source }),
            _ => Err(
                "a platform has either all of os, arch, url and sha256, or only a source".into(),
            ),
        }
    }
}

impl Platform {
    /// `linux/x86_64`, or `source`.
    pub fn label(&self) -> String {
        match self {
            Platform::Build { os, arch, .. } => format!("{os}/{arch}"),
            Platform::Source { .. } => "source".into(),
        }
    }
}

/// This machine, as index platforms name it.
pub fn this_platform() -> String {
    format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH)
}

impl PluginEntry {
    /// The way to install this version here: this machine's build, else a
    /// source to build; `None` when it has neither.
    pub fn platform_for_here(&self) -> Option<&Platform> {
        let here = this_platform();
        self.platforms
            .iter()
            .find(|p| matches!(p, Platform::Build { .. }) && p.label() == here)
            .or_else(|| {
                self.platforms
                    .iter()
                    .find(|p| matches!(p, Platform::Source { .. }))
            })
    }

    /// The parsed version (checked by [`parse`], so it parses).
    pub fn semver(&self) -> semver::Version {
        semver::Version::parse(&self.version).unwrap_or(semver::Version::new(0, 0, 0))
    }
}

/// Refuses an index past its `expires` at `now`.
pub fn check_fresh(index: &IndexFile, now: SystemTime) -> Result<(), Invalid> {
    match parse_rfc3339(&index.expires) {
        Some(expires) if now <= expires => Ok(()),
        _ => Err(Invalid::Expired(index.expires.clone())),
    }
}

/// Reads and checks an index's JSON (not its expiry: [`check_fresh`]).
pub fn parse(bytes: &[u8]) -> Result<IndexFile, Invalid> {
    let index: IndexFile =
        // serde quotes the publisher's keys and values in its message.
        serde_json::from_slice(bytes).map_err(|e| {
            Invalid::Malformed(app_plugin::text::escape_for_terminal(&e.to_string()).into_owned())
        })?;
    if index.api_version != API_VERSION {
        return Err(Invalid::Malformed(format!(
            "apiVersion is \"{}\", this app reads \"{API_VERSION}\" (a newer app may read it)",
            index.api_version.escape_debug()
        )));
    }
    parse_rfc3339(&index.expires).ok_or_else(|| {
        Invalid::Malformed(format!(
            "expires \"{}\" is not a UTC date like 2027-06-01T00:00:00Z",
            index.expires.escape_debug()
        ))
    })?;
    if let Some(signed_at) = &index.signed_at {
        parse_rfc3339(signed_at).ok_or_else(|| {
            Invalid::Malformed(format!(
                "signed_at \"{}\" is not a UTC date like 2027-06-01T00:00:00Z",
                signed_at.escape_debug()
            ))
        })?;
    }
    if let Some(name) = &index.index {
        if name.is_empty() || name.len() > MAX_INDEX_NAME || name.chars().any(char::is_control) {
            return Err(Invalid::Malformed(format!(
                "index \"{}\" is not a name: 1 to {MAX_INDEX_NAME} characters, no control characters",
                name.escape_debug()
            )));
        }
    }
    let mut seen = HashSet::new();
    for entry in &index.plugins {
        check_entry(entry)?;
        if !seen.insert((entry.name.as_str(), entry.semver())) {
            return Err(Invalid::Malformed(format!(
                "plugin '{}' version {} is listed twice",
                entry.name, entry.version
            )));
        }
    }
    Ok(index)
}

/// Why [`parse`] refused an index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Invalid {
    Malformed(String),
    /// Past this `expires`.
    Expired(String),
}

fn check_entry(entry: &PluginEntry) -> Result<(), Invalid> {
    let bad = |why: String| {
        Err(Invalid::Malformed(format!(
            "plugin '{}': {why}",
            entry.name.escape_debug()
        )))
    };
    if let Err(e) = name::validate(&entry.name) {
        return bad(format!("not a plugin name: {e}"));
    }
    if semver::Version::parse(&entry.version).is_err() {
        return bad(format!(
            "version \"{}\" is not a semantic version (like 1.2.0)",
            entry.version.escape_debug()
        ));
    }
    if entry.platforms.is_empty() {
        return bad("no platforms".into());
    }
    for platform in &entry.platforms {
        match platform {
            Platform::Build { sha256, url, .. } => {
                if checksum::parse_hex(sha256).is_none() {
                    return bad(format!(
                        "sha256 \"{}\" is not 64 hex digits",
                        sha256.escape_debug()
                    ));
                }
                if url.is_empty() {
                    return bad("an empty url".into());
                }
            }
            Platform::Source { source } => {
                if source.git.is_empty() {
                    return bad("an empty git URL".into());
                }
            }
        }
    }
    Ok(())
}

/// `YYYY-MM-DDTHH:MM:SSZ` (optionally with fractional seconds) to a time.
pub fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let text = text.strip_suffix('Z').or_else(|| text.strip_suffix('z'))?;
    let (date, time) = text.split_once(['T', 't'])?;
    let num = |s: &str, len: usize| -> Option<u64> {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok())?
    };
    let mut d = date.split('-');
    let (year, month, day) = (num(d.next()?, 4)?, num(d.next()?, 2)?, num(d.next()?, 2)?);
    let time = time.split('.').next()?;
    let mut t = time.split(':');
    let (hour, min, sec) = (num(t.next()?, 2)?, num(t.next()?, 2)?, num(t.next()?, 2)?);
    if d.next().is_some() || t.next().is_some() {
        return None;
    }
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let days = app_plugin::time::days_from_civil(year, month, day)?;
    Some(UNIX_EPOCH + Duration::from_secs(days * 86_400 + hour * 3600 + min * 60 + sec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(plugins: &str, expires: &str) -> Vec<u8> {
        format!(
            r#"{{"apiVersion":"app.index/v1","serial":3,"expires":"{expires}","plugins":[{plugins}]}}"#
        )
        .into_bytes()
    }

    const HELLO: &str = r#"{"name":"hello","version":"1.0.0","description":"d","platforms":[
        {"os":"linux","arch":"x86_64","url":"a.tar.gz","sha256":"0000000000000000000000000000000000000000000000000000000000000000"},
        {"source":{"git":"https://h/r","rev":"v1"}}]}"#;

    #[test]
    fn dates_parse_as_utc() {
        let t = parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(crate::time::rfc3339(t), "2026-01-01T00:00:00Z");
        let t = parse_rfc3339("2000-02-29T12:34:56.789Z").unwrap();
        assert_eq!(crate::time::rfc3339(t), "2000-02-29T12:34:56Z");
        for bad in [
            "2026-01-01",
            "2026-01-01T00:00:00+02:00",
            "2026-13-01T00:00:00Z",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_good_index_parses_and_picks_this_platform_or_source() {
        let i = parse(&index(HELLO, "2999-01-01T00:00:00Z")).unwrap();
        assert_eq!(check_fresh(&i, SystemTime::now()), Ok(()));
        assert_eq!(i.serial, 3);
        let p = i.plugins[0].platform_for_here().unwrap();
        if this_platform() == "linux/x86_64" {
            assert_eq!(p.label(), "linux/x86_64");
        } else {
            assert_eq!(p.label(), "source");
        }
    }

    #[test]
    fn an_entry_named_under_a_shipped_command_is_refused() {
        let bad = HELLO.replace("\"hello\"", "\"event-repeater-run\"");
        let Err(Invalid::Malformed(m)) = parse(&index(&bad, "2999-01-01T00:00:00Z")) else {
            panic!("an entry under event-repeater is refused");
        };
        assert!(
            m.contains("under the shipped command 'event-repeater'"),
            "{m}"
        );
        // Positive control: the same entry under its own name is taken.
        assert!(parse(&index(HELLO, "2999-01-01T00:00:00Z")).is_ok());
    }

    #[test]
    fn serdes_message_quoting_a_publishers_key_reaches_no_terminal_raw() {
        // ESC, an OSC title with BEL, a C1 CSI, a bidi override, a newline.
        let key = r#"\u001b]0;pwned\u0007\u009b2J\u202etxt\nforged"#;
        let bad = HELLO.replace("\"description\"", &format!("\"{key}\""));
        let Err(Invalid::Malformed(m)) = parse(&index(&bad, "2999-01-01T00:00:00Z")) else {
            panic!("an unknown key is refused");
        };
        assert!(m.contains("unknown field"), "{m}");
        assert!(!m.chars().any(app_plugin::text::is_dangerous), "{m:?}");
        assert!(
            m.contains(r"\x1b]0;pwned\x07\u{9b}2J\u{202e}txt\nforged"),
            "{m}"
        );
    }

    #[test]
    fn expired_duplicate_and_malformed_indexes_are_refused() {
        let old = parse(&index(HELLO, "2001-01-01T00:00:00Z")).unwrap();
        assert_eq!(
            check_fresh(&old, SystemTime::now()),
            Err(Invalid::Expired("2001-01-01T00:00:00Z".into()))
        );
        let twice = format!("{HELLO},{HELLO}");
        let err = parse(&index(&twice, "2999-01-01T00:00:00Z")).unwrap_err();
        assert!(matches!(err, Invalid::Malformed(m) if m.contains("listed twice")));
        for bad in [
            HELLO.replace("1.0.0", "one"),
            HELLO.replace("hello", "Hello"),
            HELLO.replace("0000000000000000", "zz"),
            HELLO.replace("\"description\"", "\"unknown\""),
        ] {
            let err = parse(&index(&bad, "2999-01-01T00:00:00Z"));
            assert!(matches!(err, Err(Invalid::Malformed(_))), "{bad}: {err:?}");
        }
        assert!(matches!(parse(b"<html>"), Err(Invalid::Malformed(_))));
    }
}
