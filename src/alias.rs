//! Aliases from the config file, expanded before resolution.
//!
//! `{"aliases": {"routes": "event-repeater manage get --path /events"}}`
//! makes `app routes -o table` run `app event-repeater manage get --path
//! /events -o table`. Values are split with shell quoting rules. An alias can
//! never shadow a built-in, and a loop is an error, not a hang.

use std::ffi::OsString;

use crate::cli::is_builtin;
use crate::config::Config;
use crate::error::{Error, Result};

/// Expands the alias named by `args[0]`, if there is one: returns the new
/// argument list (expansion, then the remaining arguments). `seen` holds the
/// aliases expanded so far for this command, to detect loops.
pub fn expand(
    config: &Config,
    args: &[OsString],
    seen: &mut Vec<String>,
) -> Result<Option<Vec<OsString>>> {
    let Some(name) = args.first().and_then(|a| a.to_str()) else {
        return Ok(None);
    };
    if is_builtin(name) {
        return Ok(None);
    }
    let Some(value) = config.aliases.get(name) else {
        return Ok(None);
    };
    if seen.iter().any(|s| s == name) {
        let mut chain = seen.clone();
        chain.push(name.to_string());
        return Err(Error::AliasLoop {
            chain,
            config: config.path.clone(),
        });
    }
    seen.push(name.to_string());
    let words = shell_words::split(value).map_err(|e| Error::AliasSyntax {
        name: name.to_string(),
        message: e.to_string(),
        config: config.path.clone(),
    })?;
    if words.is_empty() {
        return Err(Error::AliasSyntax {
            name: name.to_string(),
            message: "it is empty".to_string(),
            config: config.path.clone(),
        });
    }
    let mut out: Vec<OsString> = words.into_iter().map(OsString::from).collect();
    out.extend(args[1..].iter().cloned());
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn config(json: &str) -> Config {
        Config::parse(json, Path::new("c.json")).unwrap()
    }

    fn os(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn expands_with_quotes_and_keeps_the_rest() {
        let c = config(r#"{"aliases":{"hi":"echo 'a b' \"c d\""}}"#);
        let out = expand(&c, &os(&["hi", "--x"]), &mut vec![])
            .unwrap()
            .unwrap();
        assert_eq!(out, os(&["echo", "a b", "c d", "--x"]));
    }

    #[test]
    fn builtins_are_never_aliased() {
        let c = config(r#"{"aliases":{"version":"echo"}}"#);
        assert!(expand(&c, &os(&["version"]), &mut vec![])
            .unwrap()
            .is_none());
    }

    #[test]
    fn loops_are_errors() {
        let c = config(r#"{"aliases":{"a":"b","b":"a x"}}"#);
        let mut seen = vec![];
        let once = expand(&c, &os(&["a"]), &mut seen).unwrap().unwrap();
        let twice = expand(&c, &once, &mut seen).unwrap().unwrap();
        let err = expand(&c, &twice, &mut seen).unwrap_err();
        assert!(err.to_string().contains("a -> b -> a"), "{err}");
    }
}
