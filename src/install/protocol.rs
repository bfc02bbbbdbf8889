//! What `app` and its fetch helper `app_fetch` (the `app-fetch` crate,
//! fetch/) say to each other: both sides use this module, so they cannot
//! disagree. It is private between an `app` and the `app_fetch` of the same
//! build.
//!
//! `app` runs `app_fetch SOURCE [--sha256 HEX] [--raw MAX] [--token-file FILE]`
//! ([`args`], read back with [`parse_args`]): `--raw` fetches any file (a
//! plugin index, its signature) of at most MAX bytes, unchecked and
//! unpacked; `--token-file` sends `Authorization: Bearer` with the token in
//! FILE to SOURCE's own origin only, never to a redirect elsewhere (the
//! token itself is never on a command line). `app_fetch` gets the executable SOURCE stands for
//! (step 2 of an install, see [`super`]) and writes to stdout one JSON line,
//! either `{"ok":{"file_name":…,"archive_sha256":…,"len":N}}` followed by
//! exactly N bytes of the executable, or `{"error":{"code":C,"message":…}}`
//! ([`write_answer`], read back with [`read_answer`]). Its stderr is the
//! terminal's (download progress), and it writes no file.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Artifact, Source};
use crate::error::{Error, Result};

/// File name of the helper. It does not start with `app-`, so it is never
/// taken for a plugin.
pub const HELPER: &str = "app_fetch";

/// Largest plugin (file, download or archive member) accepted unless
/// [`MAX_BYTES_VAR`] says otherwise.
pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024 * 1024;
/// Environment variable that overrides [`DEFAULT_MAX_BYTES`].
pub const MAX_BYTES_VAR: &str = "APP_INSTALL_MAX_BYTES";

/// The size cap in force: `app_fetch` refuses more, and `app` reads no more
/// than that (plus the answer line) from it.
pub fn max_bytes() -> u64 {
    std::env::var(MAX_BYTES_VAR)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_MAX_BYTES)
}

/// What `app` asks of `app_fetch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchArgs {
    pub source: Source,
    /// The checksum the fetched file must have.
    pub sha256: Option<String>,
    /// Fetch any file of at most this many bytes, as is (no unpacking, no
    /// executable check).
    pub raw: Option<u64>,
    /// A file holding a bearer token for SOURCE's origin.
    pub token_file: Option<PathBuf>,
}

impl FetchArgs {
    /// A plain plugin fetch: `source`, checked against `sha256`.
    pub fn plugin(source: &Source, sha256: Option<&str>) -> FetchArgs {
        FetchArgs {
            source: source.clone(),
            sha256: sha256.map(String::from),
            raw: None,
            token_file: None,
        }
    }
}

/// The arguments `app` runs `app_fetch` with: the whole source, password
/// included, and the options.
pub fn args(fetch: &FetchArgs) -> Vec<String> {
    let mut args = vec![fetch.source.to_arg()];
    if let Some(sum) = &fetch.sha256 {
        args.extend(["--sha256".to_string(), sum.clone()]);
    }
    if let Some(max) = fetch.raw {
        args.extend(["--raw".to_string(), max.to_string()]);
    }
    if let Some(file) = &fetch.token_file {
        args.extend(["--token-file".to_string(), file.display().to_string()]);
    }
    args
}

/// `app_fetch`'s reading of [`args`]; `None` for anything else.
pub fn parse_args(args: &[OsString]) -> Option<FetchArgs> {
    let args: Vec<&str> = args.iter().map(|a| a.to_str()).collect::<Option<_>>()?;
    let (source, mut rest) = args.split_first()?;
    // `app` passes absolute paths; anything else is resolved against "/".
    let mut fetch = FetchArgs::plugin(&Source::parse(source, Path::new("/")).ok()?, None);
    while let [flag, value, tail @ ..] = rest {
        match *flag {
            "--sha256" if fetch.sha256.is_none() => fetch.sha256 = Some(value.to_string()),
            "--raw" if fetch.raw.is_none() => fetch.raw = Some(value.parse().ok()?),
            "--token-file" if fetch.token_file.is_none() => {
                fetch.token_file = Some(PathBuf::from(value))
            }
            _ => return None,
        }
        rest = tail;
    }
    rest.is_empty().then_some(fetch)
}

/// The answer line.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Header {
    Ok {
        file_name: Option<String>,
        archive_sha256: Option<String>,
        len: u64,
    },
    Error {
        code: i32,
        message: String,
    },
}

/// Writes `app_fetch`'s answer: the artifact, or the error's message and
/// exit code, for `app` to report as its own.
pub fn write_answer(out: &mut impl Write, result: &Result<Artifact>) -> io::Result<()> {
    let (header, bytes) = match result {
        Ok(artifact) => (
            Header::Ok {
                file_name: artifact.file_name.clone(),
                archive_sha256: artifact.archive_sha256.clone(),
                len: artifact.bytes.len() as u64,
            },
            &artifact.bytes[..],
        ),
        Err(e) => (
            Header::Error {
                code: e.exit_code(),
                message: e.to_string(),
            },
            &[][..],
        ),
    };
    serde_json::to_writer(&mut *out, &header).map_err(io::Error::other)?;
    out.write_all(b"\n")?;
    out.write_all(bytes)?;
    out.flush()
}

/// Why an answer could not be read: `app_fetch` crashed or is not the one
/// of this build.
#[derive(Debug)]
pub enum Broken {
    /// No answer line at all.
    NoAnswer,
    /// The answer line is not one [`write_answer`] writes.
    Unreadable(String),
    /// Fewer or more bytes than the answer line announced.
    Length { sent: usize, len: u64 },
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::NoAnswer => f.write_str("it gave no answer"),
            Broken::Unreadable(e) => write!(f, "unreadable answer: {e}"),
            Broken::Length { sent, len } => write!(f, "it sent {sent} of {len} bytes"),
        }
    }
}

/// Reads everything `app_fetch` wrote: its result (an error carries its
/// message and exit code, as [`Error::Fetch`]), or why that cannot be read.
pub fn read_answer(mut out: Vec<u8>) -> std::result::Result<Result<Artifact>, Broken> {
    let newline = out
        .iter()
        .position(|b| *b == b'\n')
        .ok_or(Broken::NoAnswer)?;
    let header: Header =
        serde_json::from_slice(&out[..newline]).map_err(|e| Broken::Unreadable(e.to_string()))?;
    match header {
        Header::Error { code, message } => Ok(Err(Error::Fetch { message, code })),
        Header::Ok {
            file_name,
            archive_sha256,
            len,
        } => {
            let bytes = out.split_off(newline + 1);
            if bytes.len() as u64 != len {
                return Err(Broken::Length {
                    sent: bytes.len(),
                    len,
                });
            }
            Ok(Ok(Artifact {
                file_name,
                bytes,
                archive_sha256,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(result: &Result<Artifact>) -> Vec<u8> {
        let mut out = Vec::new();
        write_answer(&mut out, result).unwrap();
        out
    }

    fn os_args(fetch: &FetchArgs) -> Vec<OsString> {
        args(fetch).into_iter().map(OsString::from).collect()
    }

    #[test]
    fn arguments_read_back_as_written() {
        let url = Source::Url("https://u:p@h/app-foo".into());
        let read = parse_args(&os_args(&FetchArgs::plugin(&url, Some("ab"))));
        assert_eq!(read, Some(FetchArgs::plugin(&url, Some("ab"))));
        let path = Source::Path("/d/app-foo".into());
        let plain = FetchArgs::plugin(&path, None);
        assert_eq!(parse_args(&os_args(&plain)), Some(plain));
        let raw = FetchArgs {
            raw: Some(1024),
            token_file: Some("/t/token".into()),
            ..FetchArgs::plugin(&url, None)
        };
        assert_eq!(parse_args(&os_args(&raw)), Some(raw));
        assert_eq!(parse_args(&["a".into(), "--sha".into(), "b".into()]), None);
        assert_eq!(parse_args(&["a".into(), "--raw".into()]), None);
        assert_eq!(parse_args(&[]), None);
    }

    #[test]
    fn answers_read_back_as_written() {
        let artifact = Artifact {
            file_name: Some("app-foo".into()),
            bytes: b"#!/bin/sh\n\nbinary\n".to_vec(),
            archive_sha256: None,
        };
        let read = read_answer(answer(&Ok(artifact.clone()))).unwrap().unwrap();
        assert_eq!(read.file_name, artifact.file_name);
        assert_eq!(read.bytes, artifact.bytes);
        let failed = Error::Download {
            url: "http://h/app-foo".into(),
            reason: "the server answered HTTP 404".into(),
        };
        let message = failed.to_string();
        match read_answer(answer(&Err(failed))).unwrap() {
            Err(Error::Fetch { message: m, code }) => {
                assert_eq!((m, code), (message, crate::error::code::DOWNLOAD));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn broken_answers_are_told_apart() {
        assert!(matches!(read_answer(Vec::new()), Err(Broken::NoAnswer)));
        assert!(matches!(
            read_answer(b"{\"ok\":1}\n".to_vec()),
            Err(Broken::Unreadable(_))
        ));
        let mut short = answer(&Ok(Artifact {
            file_name: None,
            bytes: vec![1; 10],
            archive_sha256: None,
        }));
        short.truncate(short.len() - 3);
        assert!(matches!(
            read_answer(short),
            Err(Broken::Length { sent: 7, len: 10 })
        ));
    }
}
