//! `--value`: JSON given inline, as `@file.json`, or as `-` for stdin, checked
//! locally so that a typo is reported with its line and column before
//! anything is sent.

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::Error;

/// The most bytes read for a `--value` or `apply -f`: the repeater takes at
/// most 1 MiB of body, so there is no use reading more.
pub const MAX_INPUT: u64 = 1 << 20;

/// How long a pipe (`-f -`, `-f <(…)`, `--value -`) may take to reach its end.
pub const PIPE_TIMEOUT: Duration = Duration::from_secs(30);

/// Where a `--value` comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueSpec {
    /// The JSON text itself.
    Inline(String),
    /// `@path`: the contents of a file.
    File(PathBuf),
    /// `-`: standard input.
    Stdin,
}

impl ValueSpec {
    /// Reads the flag the way the user meant it: `-` is stdin, `@x` is the file `x`.
    pub fn parse(arg: &str) -> ValueSpec {
        if arg == "-" {
            ValueSpec::Stdin
        } else if let Some(path) = arg.strip_prefix('@') {
            ValueSpec::File(PathBuf::from(path))
        } else {
            ValueSpec::Inline(arg.to_string())
        }
    }

    /// How error messages name this value.
    pub fn origin(&self) -> String {
        match self {
            ValueSpec::Inline(_) => "--value".to_string(),
            ValueSpec::File(path) => format!("--value file {}", path.display()),
            ValueSpec::Stdin => "--value from stdin".to_string(),
        }
    }

    /// Reads the text (from `stdin` when the spec says so) and checks that it
    /// is JSON. Returns the text exactly as given, so what is sent is what the
    /// user wrote.
    pub fn load(&self, stdin: impl Read) -> Result<String, Error> {
        let text = self.read(stdin, "--value")?;
        check_json(&text, &self.origin())?;
        Ok(text)
    }

    /// Reads the text without checking it; `flag` names the option in
    /// messages (`--value`, `-f`). A file may be a regular file or a pipe
    /// (`<(command)`, `/dev/stdin`), as kubectl takes them; either is read up
    /// to [`MAX_INPUT`], a pipe within [`PIPE_TIMEOUT`].
    pub fn read(&self, stdin: impl Read, flag: &str) -> Result<String, Error> {
        match self {
            ValueSpec::Inline(text) => Ok(text.clone()),
            ValueSpec::File(path) => {
                let bytes = app_plugin::file::read_limited_or_pipe(path, MAX_INPUT, PIPE_TIMEOUT)
                    .map_err(|e| Error::Usage(format!("{flag} {} {e}", path.display())))?;
                String::from_utf8(bytes).map_err(|_| {
                    Error::Usage(format!("{flag} {} is not UTF-8 text", path.display()))
                })
            }
            ValueSpec::Stdin => read_all(stdin, flag),
        }
    }
}

fn read_all(stdin: impl Read, flag: &str) -> Result<String, Error> {
    let mut bytes = Vec::new();
    stdin
        .take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            Error::Usage(format!(
                "{flag} -: stdin {e}; pipe JSON text into the command"
            ))
        })?;
    if bytes.len() as u64 > MAX_INPUT {
        return Err(Error::Usage(format!(
            "{flag} -: stdin holds over {MAX_INPUT} bytes, the most this command reads"
        )));
    }
    String::from_utf8(bytes).map_err(|_| Error::Usage(format!("{flag} -: stdin is not UTF-8 text")))
}

/// Parses `text` as JSON; on error says where, 1-based line and column.
pub fn check_json(text: &str, origin: &str) -> Result<serde_json::Value, Error> {
    if text.trim().is_empty() {
        let hint = if origin.starts_with("--value") {
            "give JSON inline, as @file.json, or as - to read stdin"
        } else {
            "give it JSON text"
        };
        return Err(Error::Usage(format!("{origin} is empty; {hint}")));
    }
    serde_json::from_str(text).map_err(|e| json_error(&e, text, origin))
}

/// Turns a serde_json error into [`Error::Json`] with its position.
pub fn json_error(e: &serde_json::Error, text: &str, origin: &str) -> Error {
    let (line, column) = (e.line(), e.column());
    // serde_json reports column 0 when the error is at the very start of a
    // line (typically: the input ended); point at the end of the previous
    // line instead, which is where the text stopped.
    let (line, column) = if column == 0 && line > 1 {
        let prev = text.lines().nth(line - 2).map_or(0, |l| l.chars().count());
        (line - 1, prev + 1)
    } else {
        (line, column.max(1))
    };
    let full = e.to_string();
    let message = full
        .rsplit_once(" at line ")
        .map_or(full.as_str(), |(m, _)| m)
        .to_string();
    Error::Json {
        origin: origin.to_string(),
        line,
        column,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(spec: &ValueSpec) -> Result<String, Error> {
        spec.load(&b""[..])
    }

    #[test]
    fn spec_forms() {
        assert_eq!(ValueSpec::parse("-"), ValueSpec::Stdin);
        assert_eq!(
            ValueSpec::parse("@r.json"),
            ValueSpec::File("r.json".into())
        );
        assert_eq!(ValueSpec::parse("[]"), ValueSpec::Inline("[]".into()));
    }

    #[test]
    fn inline_json_is_kept_verbatim() {
        let text = r#"[{"sourcetopic":"timer/sec/1", "sinktopic":"/t"}]"#;
        assert_eq!(load(&ValueSpec::Inline(text.into())).unwrap(), text);
    }

    #[test]
    fn error_points_at_line_and_column() {
        let text = "[\n  {\"sourcetopic\": \"a\",}\n]";
        let err = load(&ValueSpec::Inline(text.into())).unwrap_err();
        match err {
            Error::Json {
                line,
                column,
                ref message,
                ..
            } => {
                assert_eq!((line, column), (2, 23));
                assert_eq!(message, "trailing comma");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(err.exit_code(), 2);
        assert!(err
            .to_string()
            .starts_with("--value is not valid JSON: trailing comma at line 2, column 23"));
    }

    #[test]
    fn truncated_input_points_at_its_end() {
        let err = load(&ValueSpec::Inline("{\"a\":\n".into())).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Json {
                    line: 1,
                    column: 6,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn stdin_is_read() {
        let v = ValueSpec::Stdin
            .load(&b"{\"sourcetopic\":\"x\"}\n"[..])
            .unwrap();
        assert_eq!(v, "{\"sourcetopic\":\"x\"}\n");
        let err = ValueSpec::Stdin.load(&b"nope"[..]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("--value from stdin is not valid JSON"),
            "{err}"
        );
    }

    #[test]
    fn file_is_read_and_missing_file_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        std::fs::write(&path, "[1,]").unwrap();
        let err = load(&ValueSpec::File(path.clone())).unwrap_err();
        assert!(
            matches!(
                err,
                Error::Json {
                    line: 1,
                    column: 4,
                    ..
                }
            ),
            "{err:?}"
        );
        std::fs::write(&path, "[]").unwrap();
        assert_eq!(load(&ValueSpec::File(path)).unwrap(), "[]");
        let err = load(&ValueSpec::File(dir.path().join("none.json"))).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("none.json"));
    }

    #[test]
    fn empty_value_is_a_usage_error() {
        let err = load(&ValueSpec::Inline("  ".into())).unwrap_err();
        assert!(matches!(err, Error::Usage(_)));
    }
}
