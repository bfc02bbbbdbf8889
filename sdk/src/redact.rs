//! The one redaction rule of `app` and its plugins: what a secret looks
//! like in a URL, an argument list or a config, and its masked form
//! ([`MASK`]) to print, log or store instead.
//!
//! - A URL ([`url()`]): its user info, user and password both
//!   (`http://ghp_TOKEN@host`, `nats://u:pw@host`, `unix://u:pw@/path`),
//!   and **every** query and fragment value, whatever its name
//!   (`?private_token=…`, `?X-Goog-Signature=…`, `?to%6Ben=…`): a list of
//!   names is always one name short. Scheme, host, port and path stay, so a
//!   message still says where. A malformed URL is masked too: when what
//!   follows `scheme://` has no `@` before its first `/`, `?` or `#` but a
//!   non-numeric port (`http://u:pa/ss#?@host`, a password holding `/`),
//!   everything up to the last `@` is taken as the user info.
//! - A bare address (`user:pw@127.0.0.1:4222`, `TOKEN@host`): the part
//!   before the last `@`.
//! - An argument list ([`args`]): the values of flags that carry secrets
//!   (a name holding `token`, `password`, `passwd`, `secret`, `header`,
//!   `auth`, `credential` or `key`; `--token X` and `--token=X` alike) are
//!   masked whole; the value of a `-file`/`-path` flag is a path, not a
//!   secret, and stays. Every other argument goes through [`url()`].
//! - A config ([`config`]): values of keys named like those flags, or
//!   declared secret by the plugin ([`Metadata::secrets`]), are masked
//!   whole; every other string goes through [`url()`].
//!
//! Masking never fails: text that is none of these comes back unchanged.
//! The url crate is not used here on purpose: it refuses the malformed URLs
//! that most need masking, and writes back a normalised URL instead of the
//! text the user typed.
//!
//! [`Metadata::secrets`]: crate::metadata::Metadata::secrets

use std::borrow::Cow;

/// What a masked secret reads as.
pub const MASK: &str = "***";

/// `text` with every secret the URL and bare-address rules find replaced
/// by [`MASK`].
///
/// ```
/// use app_plugin::redact::url;
/// assert_eq!(url("nats://u:hunter3@127.0.0.1:4222"), "nats://***:***@127.0.0.1:4222");
/// assert_eq!(url("http://ghp_T0KEN@github.com/o/r"), "http://***@github.com/o/r");
/// assert_eq!(url("https://x/p.tgz?to%6Ben=abc&v=1#k=s"), "https://x/p.tgz?to%6Ben=***&v=***#k=***");
/// assert_eq!(url("u:pw@127.0.0.1:1883"), "***@127.0.0.1:1883");
/// assert_eq!(url("http://h:80/p"), "http://h:80/p");
/// assert_eq!(url("not a url"), "not a url");
/// ```
pub fn url(text: &str) -> Cow<'_, str> {
    let (masked, secret) = mask(text);
    if secret {
        Cow::Owned(masked)
    } else {
        Cow::Borrowed(text)
    }
}

/// Whether `text` carries something [`url()`] masks (or has masked: a
/// masked URL still had a secret, it is just not known any more). What
/// refuses to store a URL that would lose its secret.
///
/// ```
/// use app_plugin::redact::has_secret;
/// assert!(has_secret("http://TOKEN@h/") && has_secret("https://h/x?v=***"));
/// assert!(!has_secret("http://h:8/x") && !has_secret("/a/b"));
/// ```
pub fn has_secret(text: &str) -> bool {
    mask(text).1
}

/// Every word of free text (split at whitespace, which is kept) through
/// [`url()`]: for a line that quotes URLs among other words.
///
/// ```
/// use app_plugin::redact::words;
/// assert_eq!(words("running: a u:pw@h:1 --x"), "running: a ***@h:1 --x");
/// ```
pub fn words(text: &str) -> Cow<'_, str> {
    if !has_secret_word(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let cut = rest.find(char::is_whitespace).unwrap_or(rest.len());
        out.push_str(&url(&rest[..cut]));
        let tail = &rest[cut..];
        let space = tail.len() - tail.trim_start().len();
        out.push_str(&tail[..space]);
        rest = &tail[space..];
    }
    Cow::Owned(out)
}

fn has_secret_word(text: &str) -> bool {
    text.split_whitespace().any(has_secret)
}

/// Whether a flag's or a config key's value is a secret, by its name
/// (`--nats-token`, `--password`, `--source-header`, `db_password`). A
/// `-file` or `-path` flag names where the secret is, which is not one.
///
/// ```
/// use app_plugin::redact::is_secret_name;
/// assert!(is_secret_name("--nats-token") && is_secret_name("db_password") && is_secret_name("--source-header"));
/// assert!(!is_secret_name("--token-file") && !is_secret_name("--sink") && !is_secret_name("name"));
/// ```
pub fn is_secret_name(name: &str) -> bool {
    let name = name.trim_start_matches('-').to_ascii_lowercase();
    if name.ends_with("-file")
        || name.ends_with("_file")
        || name.ends_with("-path")
        || name.ends_with("_path")
    {
        return false;
    }
    [
        "token",
        "password",
        "passwd",
        "secret",
        "header",
        "auth",
        "credential",
        "key",
    ]
    .iter()
    .any(|w| name.contains(w))
}

/// `args` (an argv, without or with the program) as they may be shown or
/// logged: the value of a [secret flag](is_secret_name) or of a flag named
/// after one of `declared` (a plugin's secret config keys, `db_password`
/// matching `--db-password`) masked whole, in `--flag value` and
/// `--flag=value` forms; every other argument through [`url()`].
///
/// ```
/// use app_plugin::redact::args;
/// let shown = args(
///     ["run", "--token", "T1", "--nats-token=T2", "--sink", "mqtt://T3@h:1", "--db-password", "T4", "-H", "http://u:T5@h"],
///     &["db_password"],
/// );
/// assert_eq!(shown, ["run", "--token", "***", "--nats-token=***", "--sink", "mqtt://***@h:1", "--db-password", "***", "-H", "http://***:***@h"]);
/// ```
pub fn args<I, S>(args: I, declared: &[&str]) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let secret_flag = |flag: &str| {
        flag.starts_with('-') && flag.len() > 2 && {
            let bare = flag.trim_start_matches('-');
            is_secret_name(bare)
                || declared.iter().any(|d| {
                    d.replace('_', "-")
                        .eq_ignore_ascii_case(&bare.replace('_', "-"))
                })
        }
    };
    let mut out = Vec::new();
    let mut mask_next = false;
    for arg in args {
        let arg = arg.as_ref();
        if std::mem::take(&mut mask_next) {
            out.push(MASK.to_string());
            continue;
        }
        if arg.starts_with("--") {
            if let Some((flag, _)) = arg.split_once('=') {
                if secret_flag(flag) {
                    out.push(format!("{flag}={MASK}"));
                    continue;
                }
            } else if secret_flag(arg) {
                mask_next = true;
            }
        }
        out.push(url(arg).into_owned());
    }
    out
}

/// A shell-quoted command line (the context's `command`) with its words
/// through [`args`]; a line that does not split as shell words has every
/// word through [`url()`] instead.
///
/// ```
/// use app_plugin::redact::command_line;
/// assert_eq!(command_line("app x --token 'a b' -H http://T@h", &[]), "app x --token '***' -H 'http://***@h'");
/// ```
pub fn command_line(line: &str, declared: &[&str]) -> String {
    match shell_words::split(line) {
        Ok(words) => crate::context::command_line(args(&words, declared).iter().map(|w| &**w)).0,
        Err(_) => words(line).into_owned(),
    }
}

/// A config document as it may be shown or logged: the values of keys
/// [named like secrets](is_secret_name) or in `declared` masked whole
/// (objects and arrays under them too), every other string through [`url()`].
///
/// ```
/// use serde_json::json;
/// let shown = app_plugin::redact::config(
///     &json!({"db_pass": "p1", "db_password": "p2", "url": "http://u:p3@h", "n": 1}),
///     &["db_pass"],
/// );
/// assert_eq!(shown, json!({"db_pass": "***", "db_password": "***", "url": "http://***:***@h", "n": 1}));
/// ```
pub fn config(value: &serde_json::Value, declared: &[&str]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(s) => Value::String(url(s).into_owned()),
        Value::Array(items) => Value::Array(items.iter().map(|v| config(v, declared)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let secret =
                        is_secret_name(k) || declared.iter().any(|d| d.eq_ignore_ascii_case(k));
                    let shown = if secret && !v.is_null() {
                        Value::String(MASK.to_string())
                    } else {
                        config(v, declared)
                    };
                    (k.clone(), shown)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The masked text, and whether it had a secret.
fn mask(text: &str) -> (String, bool) {
    match scheme_end(text) {
        Some((start, after)) => {
            let (rest, secret) = mask_after_scheme(&text[after..]);
            debug_assert!(start < after);
            (format!("{}{rest}", &text[..after]), secret)
        }
        None => mask_bare(text),
    }
}

/// Where `scheme://` ends in `text` (the first one), with where the scheme
/// starts: an embedded URL (`-Hhttp://…`, `x=http://…`) counts.
fn scheme_end(text: &str) -> Option<(usize, usize)> {
    let sep = text.find("://")?;
    let bytes = text.as_bytes();
    let mut start = sep;
    while start > 0
        && (bytes[start - 1].is_ascii_alphanumeric()
            || matches!(bytes[start - 1], b'+' | b'-' | b'.'))
    {
        start -= 1;
    }
    while start < sep && !bytes[start].is_ascii_alphabetic() {
        start += 1;
    }
    (start < sep).then_some((start, sep + 3))
}

/// Masks `[userinfo@]host[:port][/path][?query][#fragment]`.
fn mask_after_scheme(rest: &str) -> (String, bool) {
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let userinfo_end = match authority.rfind('@') {
        Some(at) => Some(at),
        // A password holding '/', '?' or '#' cuts the authority short: its
        // "port" is then not a number. The user info runs to the last '@'.
        None if bad_port(authority) => rest.rfind('@'),
        None => None,
    };
    let mut out = String::with_capacity(rest.len());
    let mut secret = false;
    let tail = match userinfo_end {
        Some(at) => {
            let userinfo = &rest[..at];
            if !userinfo.is_empty() {
                secret = true;
                out.push_str(if userinfo.contains(':') {
                    "***:***"
                } else {
                    MASK
                });
            }
            &rest[at..]
        }
        None => rest,
    };
    let (before_fragment, fragment) = tail.split_at(tail.find('#').unwrap_or(tail.len()));
    match before_fragment.split_once('?') {
        Some((path, query)) => {
            out.push_str(path);
            out.push('?');
            secret |= mask_pairs(query, &mut out);
        }
        None => out.push_str(before_fragment),
    }
    if let Some(fragment) = fragment.strip_prefix('#') {
        out.push('#');
        secret |= mask_pairs(fragment, &mut out);
    }
    (out, secret)
}

/// Whether `authority` (without user info) has a port that is not a number.
fn bad_port(authority: &str) -> bool {
    let host_end = authority.rfind(']').map_or(0, |i| i + 1);
    authority[host_end..]
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.bytes().all(|b| b.is_ascii_digit()))
}

/// `a=1&b&c=` as `a=***&***&c=` into `out`; whether any value was masked.
fn mask_pairs(pairs: &str, out: &mut String) -> bool {
    let mut secret = false;
    for (i, pair) in pairs.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        match pair.split_once('=') {
            Some((name, value)) if !value.is_empty() => {
                secret = true;
                out.push_str(name);
                out.push('=');
                out.push_str(MASK);
            }
            Some(_) => out.push_str(pair),
            None if !pair.is_empty() => {
                secret = true;
                out.push_str(MASK);
            }
            None => {}
        }
    }
    secret
}

/// `user[:pw]@host[:port][/…]` without a scheme: the part before the last
/// `@` when it reads as user info (one word, not a path or flag) and what
/// follows reads as a host.
fn mask_bare(text: &str) -> (String, bool) {
    let Some(at) = text.rfind('@') else {
        return (text.to_string(), false);
    };
    let (userinfo, host) = (&text[..at], &text[at + 1..]);
    let host_name = host.split(['/', '?', '#']).next().unwrap_or_default();
    let userinfo_like = !userinfo.is_empty()
        && !userinfo.starts_with(['/', '.', '~', '-'])
        && !userinfo.contains(char::is_whitespace);
    let host_like = host_name.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '[')
        && host_name.chars().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']' | '%')
        });
    if userinfo_like && host_like {
        (format!("{MASK}@{host}"), true)
    } else {
        (text.to_string(), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reported_form_is_masked_and_the_rest_kept() {
        for (text, shown) in [
            ("http://ghp_S1@host/x", "http://***@host/x"),
            ("http://u:S2@h:8/a@b", "http://***:***@h:8/a@b"),
            (
                "mqtt://user:p%40S3@[::1]:1883/x?qos=1",
                "mqtt://***:***@[::1]:1883/x?qos=***",
            ),
            ("nats://S4@127.0.0.1:4222", "nats://***@127.0.0.1:4222"),
            ("unix://user:S5@/run/x.sock", "unix://***:***@/run/x.sock"),
            (
                "http://u:pa/S6#?@127.0.0.1:9/p",
                "http://***:***@127.0.0.1:9/p",
            ),
            ("http://u:S7?x@h:1", "http://***:***@h:1"),
            ("http://u:pw/x@h/", "http://***:***@h/"),
            ("u:S8@127.0.0.1:1883", "***@127.0.0.1:1883"),
            ("S9@127.0.0.1", "***@127.0.0.1"),
            (
                "https://h/i.json?private_token=S10",
                "https://h/i.json?private_token=***",
            ),
            (
                "https://h/o?X-Goog-Signature=S11&client_secret=S12&access-token=S13",
                "https://h/o?X-Goog-Signature=***&client_secret=***&access-token=***",
            ),
            ("https://h/o?to%6Ben=S14&S15", "https://h/o?to%6Ben=***&***"),
            ("https://h/#access_token=S16", "https://h/#access_token=***"),
            ("-Hhttp://S17@h", "-Hhttp://***@h"),
            ("HTTPS://h:443/?a=", "HTTPS://h:443/?a="),
        ] {
            assert_eq!(url(text), shown, "{text}");
            assert!(has_secret(text) || text.ends_with("a="), "{text}");
        }
        for plain in [
            "http://h:80/path",
            "https://[::1]:8/x",
            "/var/lib/app/x@y",
            "./x@y",
            "@scope/pkg",
            "a b@c",
            "event-time",
            "",
        ] {
            assert_eq!(url(plain), plain);
            assert!(!has_secret(plain), "{plain}");
        }
    }

    #[test]
    fn argv_flags_mask_their_values_in_both_forms() {
        let argv = [
            "app",
            "-H",
            "http://u:S1@h:1",
            "x",
            "--token",
            "S2",
            "--nats-token=S3",
            "--password",
            "S4",
            "--password-file",
            "/etc/p",
            "--source-header",
            "Authorization: Bearer S5",
            "--sink",
            "u:S6@127.0.0.1:1",
            "--source=http://u:S7@h",
            "--api-key",
            "S8",
            "--name",
            "n",
        ];
        let shown = args(argv, &[]).join(" ");
        assert!(
            !(1..=8).any(|i| shown.contains(&format!("S{i}"))),
            "{shown}"
        );
        // Positive control: what is not a secret is kept.
        assert!(
            shown.contains("--password-file /etc/p")
                && shown.contains("--name n")
                && shown.contains("@h:1")
                && shown.contains("@127.0.0.1:1"),
            "{shown}"
        );
    }

    #[test]
    fn words_mask_urls_inside_a_line() {
        assert_eq!(
            words("fetch https://h/x?t=S1  then\tu:S2@h"),
            "fetch https://h/x?t=***  then\t***@h"
        );
        assert_eq!(words("nothing here"), "nothing here");
    }
}
