//! The answer `app_fetch` writes on its stdout, and `app`'s reading of it
//! (see the crate's documentation).

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use crate::{Artifact, ExtraFile, Result};

/// One extra file in the answer line; its bytes follow the executable's.
#[derive(Serialize, Deserialize)]
struct FileHeader {
    path: String,
    mode: u32,
    len: u64,
}

/// The answer line.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Header {
    Ok {
        file_name: Option<String>,
        archive_sha256: Option<String>,
        len: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<FileHeader>,
    },
    Error {
        code: i32,
        message: String,
    },
}

/// Writes `app_fetch`'s answer: the artifact, or the error's message and
/// exit code, for `app` to report as its own.
pub fn write_answer(out: &mut impl Write, result: &Result<Artifact>) -> io::Result<()> {
    let (header, bytes): (Header, Vec<&[u8]>) = match result {
        Ok(artifact) => (
            Header::Ok {
                file_name: artifact.file_name.clone(),
                archive_sha256: artifact.archive_sha256.clone(),
                len: artifact.bytes.len() as u64,
                files: artifact
                    .files
                    .iter()
                    .map(|f| FileHeader {
                        path: f.path.clone(),
                        mode: f.mode,
                        len: f.bytes.len() as u64,
                    })
                    .collect(),
            },
            std::iter::once(&artifact.bytes[..])
                .chain(artifact.files.iter().map(|f| &f.bytes[..]))
                .collect(),
        ),
        Err(e) => (
            Header::Error {
                code: e.exit_code(),
                message: e.to_string(),
            },
            Vec::new(),
        ),
    };
    serde_json::to_writer(&mut *out, &header).map_err(io::Error::other)?;
    out.write_all(b"\n")?;
    for part in bytes {
        out.write_all(part)?;
    }
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

/// What `app_fetch` said went wrong: its message and exit code, which
/// `app` reports as its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    pub message: String,
    pub code: i32,
}

/// Reads everything `app_fetch` wrote: its result (the artifact, or what
/// went wrong), or why that cannot be read.
pub fn read_answer(mut out: Vec<u8>) -> std::result::Result<Result<Artifact, Failed>, Broken> {
    let newline = out
        .iter()
        .position(|b| *b == b'\n')
        .ok_or(Broken::NoAnswer)?;
    let header: Header =
        serde_json::from_slice(&out[..newline]).map_err(|e| Broken::Unreadable(e.to_string()))?;
    match header {
        Header::Error { code, message } => Ok(Err(Failed { message, code })),
        Header::Ok {
            file_name,
            archive_sha256,
            len,
            files,
        } => {
            let mut rest = out.split_off(newline + 1);
            let total = len + files.iter().map(|f| f.len).sum::<u64>();
            if rest.len() as u64 != total {
                return Err(Broken::Length {
                    sent: rest.len(),
                    len: total,
                });
            }
            let mut take = |n: u64| {
                let tail = rest.split_off(n as usize);
                std::mem::replace(&mut rest, tail)
            };
            let bytes = take(len);
            let files = files
                .into_iter()
                .map(|f| ExtraFile {
                    bytes: take(f.len),
                    path: f.path,
                    mode: f.mode,
                })
                .collect();
            Ok(Ok(Artifact {
                file_name,
                bytes,
                archive_sha256,
                files,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{code, Error};

    fn answer(result: &Result<Artifact>) -> Vec<u8> {
        let mut out = Vec::new();
        write_answer(&mut out, result).unwrap();
        out
    }

    #[test]
    fn answers_read_back_as_written() {
        let artifact = Artifact {
            file_name: Some("app-foo".into()),
            bytes: b"#!/bin/sh\n\nbinary\n".to_vec(),
            archive_sha256: None,
            files: vec![
                ExtraFile {
                    path: "share/a.txt".into(),
                    mode: 0o644,
                    bytes: b"a\n".to_vec(),
                },
                ExtraFile {
                    path: "completions/app-foo.bash".into(),
                    mode: 0o644,
                    bytes: b"complete -F _f app-foo\n".to_vec(),
                },
            ],
        };
        let read = read_answer(answer(&Ok(artifact.clone()))).unwrap().unwrap();
        assert_eq!(read.file_name, artifact.file_name);
        assert_eq!(read.bytes, artifact.bytes);
        assert_eq!(read.files, artifact.files);
        let failed = Error::Download {
            url: "http://h/app-foo".into(),
            reason: "the server answered HTTP 404".into(),
        };
        let message = failed.to_string();
        match read_answer(answer(&Err(failed))).unwrap() {
            Err(Failed {
                message: m,
                code: c,
            }) => {
                assert_eq!((m, c), (message, code::DOWNLOAD));
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
            files: Vec::new(),
        }));
        short.truncate(short.len() - 3);
        assert!(matches!(
            read_answer(short),
            Err(Broken::Length { sent: 7, len: 10 })
        ));
    }
}
