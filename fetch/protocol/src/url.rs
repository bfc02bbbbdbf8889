//! What `plugin install` accepts as a URL, and how one is shown.
//!
//! - `http://` and `https://` are downloaded; `file:///path` is the local
//!   path it names (`%XX` escapes decoded); any other `scheme://` is refused
//!   with a clear message instead of being read as a relative file name.
//! - User info in a URL (`http://user:pass@host/…`, `http://TOKEN@host/…`)
//!   and every query value (`?token=…`, `&sig=…`) are never shown nor
//!   recorded: [`redact`] replaces them with `***` (`app_plugin::redact`,
//!   the one masking rule of `app` and its plugins).
//! - A redirect is followed only to another http(s) URL ([`follow`]).

/// What a `scheme://…` text is, as far as `plugin install` cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Not a URL: a path.
    Path,
    /// `http://` or `https://`.
    Http,
    /// `file://`: the local path it names.
    File(String),
    /// A `file://` URL naming another host, or that cannot be decoded.
    BadFile,
    /// Any other scheme (its name, lower-cased).
    Unsupported(String),
}

/// The mask that replaces a secret.
pub use app_plugin::redact::MASK;

/// The scheme of `text` when it starts like a URL (`scheme://`), lower-cased.
pub fn scheme(text: &str) -> Option<String> {
    let (scheme, _) = text.split_once("://")?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then(|| scheme.to_ascii_lowercase())
}

/// Classifies what the user typed.
pub fn kind(text: &str) -> Kind {
    match scheme(text).as_deref() {
        None => Kind::Path,
        Some("http" | "https") => Kind::Http,
        Some("file") => {
            let rest = &text["file://".len()..];
            // file:///path and file://localhost/path name this machine.
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            match (path.starts_with('/'), percent_decode(path)) {
                (true, Some(decoded)) => Kind::File(decoded),
                _ => Kind::BadFile,
            }
        }
        Some(other) => Kind::Unsupported(other.to_string()),
    }
}

/// `url` with its user info and every query value replaced by [`MASK`]
/// ([`app_plugin::redact::url`]).
pub fn redact(url: &str) -> String {
    app_plugin::redact::url(url).into_owned()
}

/// Whether `url` carries user info or a query value, which [`redact`]
/// masks (a recorded one is always [`MASK`]): such a URL cannot be stored
/// whole.
pub fn has_secret(url: &str) -> bool {
    app_plugin::redact::has_secret(url)
}

/// The origin of an http(s) URL, `scheme://host:port` in lower case with
/// the default port filled in (user info dropped): what a token is bound to.
pub fn origin(url: &str) -> Option<String> {
    let scheme = scheme(url)?;
    let default_port = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    let rest = &url[url.find("://")? + 3..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit('@').next()?.to_ascii_lowercase();
    // `[::1]:8080`, `host:8080`, `host`: a port follows the last ':' after any `]`.
    let port_at = host_port
        .rfind(':')
        .filter(|i| !host_port[*i..].contains(']'));
    let (host, port) = match port_at {
        Some(i) => (&host_port[..i], host_port[i + 1..].parse().ok()?),
        None => (host_port.as_str(), default_port),
    };
    (!host.is_empty()).then(|| format!("{scheme}://{host}:{port}"))
}

/// Where a redirect from `base` to `location` leads, if it is an http(s)
/// URL; otherwise the scheme it named.
pub fn follow(base: &str, location: &str) -> Result<String, String> {
    if let Some(scheme) = scheme_of_reference(location) {
        return match scheme.as_str() {
            "http" | "https" => Ok(location.to_string()),
            _ => Err(scheme),
        };
    }
    let base_scheme = scheme(base).unwrap_or_else(|| "http".into());
    let after = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[after..]
        .find(['/', '?', '#'])
        .map_or(base.len(), |i| after + i);
    Ok(if let Some(rest) = location.strip_prefix("//") {
        format!("{base_scheme}://{rest}")
    } else if location.starts_with('/') {
        format!("{}{location}", &base[..path_start])
    } else {
        // Relative to the base's directory (its query and fragment dropped).
        let path_end = base[path_start..]
            .find(['?', '#'])
            .map_or(base.len(), |i| path_start + i);
        let dir_end = base[path_start..path_end]
            .rfind('/')
            .map_or(path_start, |i| path_start + i);
        format!("{}/{location}", &base[..dir_end])
    })
}

/// The scheme of a redirect target (`scheme:` before any `/`, `?` or `#`).
fn scheme_of_reference(location: &str) -> Option<String> {
    let colon = location.find(':')?;
    let scheme = &location[..colon];
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then(|| scheme.to_ascii_lowercase())
}

/// Decodes `%XX` escapes; `None` when one is malformed (a `%` not followed
/// by two hex digits: the crate would keep it as is, a path would then name
/// another file than the user meant) or the result is not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let malformed = bytes.iter().enumerate().any(|(i, &b)| {
        b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    });
    if malformed {
        return None;
    }
    percent_encoding::percent_decode_str(text)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(kind("bin/app-x"), Kind::Path);
        assert_eq!(kind("/a/b:c"), Kind::Path);
        assert_eq!(kind("HTTPS://h/app-x"), Kind::Http);
        assert_eq!(
            kind("file:///tmp/my%20dir/app-x"),
            Kind::File("/tmp/my dir/app-x".into())
        );
        assert_eq!(
            kind("file://localhost/tmp/app-x"),
            Kind::File("/tmp/app-x".into())
        );
        assert_eq!(kind("file://otherhost/tmp/app-x"), Kind::BadFile);
        // A malformed escape or bytes that are not UTF-8 name no file.
        assert_eq!(kind("file:///tmp/100%"), Kind::BadFile);
        assert_eq!(kind("file:///tmp/a%zz"), Kind::BadFile);
        assert_eq!(kind("file:///tmp/%FF"), Kind::BadFile);
        assert_eq!(kind("ftp://h/app-x"), Kind::Unsupported("ftp".into()));
    }

    #[test]
    fn passwords_are_redacted_and_nothing_else() {
        assert_eq!(redact("http://u:p%40ss@h:8/a@b"), "http://***:***@h:8/a@b");
        assert_eq!(redact("https://TOKEN@h/x"), "https://***@h/x");
        assert_eq!(redact("https://h/x?a=b:c@d"), "https://h/x?a=***");
        assert!(has_secret("http://u:@h/") && has_secret("http://u@h/"));
        assert!(!has_secret("http://h:8/x"));
        assert_eq!(
            redact("https://h/p.tar.gz?token=hunter7&v=2"),
            "https://h/p.tar.gz?token=***&v=***"
        );
        assert!(has_secret("https://h/p?token=***"));
    }

    #[test]
    fn origins_ignore_user_info_case_and_default_ports() {
        assert_eq!(
            origin("HTTP://U:p@Host/x").as_deref(),
            Some("http://host:80")
        );
        assert_eq!(
            origin("http://host:80/y?z").as_deref(),
            Some("http://host:80")
        );
        assert_eq!(origin("https://host/").as_deref(), Some("https://host:443"));
        assert_eq!(
            origin("http://[::1]:81/i").as_deref(),
            Some("http://[::1]:81")
        );
        assert_eq!(origin("http://[::1]/i").as_deref(), Some("http://[::1]:80"));
        assert_ne!(origin("http://host:81/"), origin("http://host:80/"));
        assert_ne!(origin("https://host/"), origin("http://host:443/"));
        assert_eq!(origin("file:///x"), None);
    }

    #[test]
    fn redirects_resolve_and_only_to_http() {
        let base = "http://h:1/dir/app-x?v=1";
        assert_eq!(follow(base, "https://o/app-y").unwrap(), "https://o/app-y");
        assert_eq!(
            follow(base, "/other/app-y").unwrap(),
            "http://h:1/other/app-y"
        );
        assert_eq!(follow(base, "app-y").unwrap(), "http://h:1/dir/app-y");
        assert_eq!(follow(base, "//o/app-y").unwrap(), "http://o/app-y");
        assert_eq!(follow(base, "file:///etc/passwd").unwrap_err(), "file");
        assert_eq!(follow(base, "FTP://o/x").unwrap_err(), "ftp");
    }
}
