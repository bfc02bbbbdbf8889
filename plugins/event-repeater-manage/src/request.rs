//! A request to the repeater's API: its method, and its path with what a
//! URL may not hold as is percent-encoded. The command line builds these
//! ([`crate::cli`]) and [`crate::remote`] sends them; neither knows the other.

use app_event_repeater_api::path as api_path;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use crate::error::Error;
use crate::value::ValueSpec;

/// An HTTP method of the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Read.
    Get,
    /// Add.
    Post,
    /// Upsert or replace.
    Put,
    /// Remove.
    Delete,
}

impl Method {
    /// The method's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }
}

/// One request to send.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// The method.
    pub method: Method,
    /// The path, percent-encoded where needed (may carry a query).
    pub path: String,
    /// The body, still to be read and checked.
    pub value: Option<ValueSpec>,
}

/// A query value with everything but letters and digits percent-encoded.
pub fn query_value(value: &str) -> String {
    utf8_percent_encode(value, NON_ALPHANUMERIC).to_string()
}

/// `/events/<topic>` with every byte of the topic that is not plainly safe
/// in a path percent-encoded (`%` and `?` included: a topic is literal).
pub fn topic_path(topic: &str) -> String {
    /// RFC 3986's unreserved characters and `/` stay; everything else is encoded.
    const TOPIC: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'/');
    api_path::event(&utf8_percent_encode(topic, TOPIC).to_string())
}

/// `/tap`, with `?route=R` or `?topic=T` (the value percent-encoded).
pub fn tap_path(route: Option<&str>, topic: Option<&str>) -> String {
    use app_event_repeater_api::tap::query;
    /// Unreserved characters and `/` stay; everything else is encoded.
    const VALUE: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'/');
    let (key, value) = match (route, topic) {
        (Some(r), _) => (query::ROUTE, r),
        (None, Some(t)) => (query::TOPIC, t),
        (None, None) => return api_path::TAP.to_string(),
    };
    format!(
        "{}?{key}={}",
        api_path::TAP,
        utf8_percent_encode(value, VALUE)
    )
}

/// The source topic of a path `/events/<topic>` (query aside), decoded:
/// the inverse of [`topic_path`]. A malformed escape is kept as typed,
/// invalid UTF-8 replaced.
pub fn topic_of(path: &str) -> Option<String> {
    let path = path.split('?').next().unwrap_or_default();
    match path.strip_prefix(api_path::EVENT_PREFIX) {
        Some(t) if !t.is_empty() => Some(
            percent_encoding::percent_decode_str(t)
                .decode_utf8_lossy()
                .into_owned(),
        ),
        _ => None,
    }
}

/// Whether `path` (query aside) is the collection of routes, `/events`.
pub fn is_collection(path: &str) -> bool {
    let path = path.split('?').next().unwrap_or_default();
    path.trim_end_matches('/') == api_path::EVENTS
}

/// Checks that `--path` starts with `/` and percent-encodes what may not
/// appear in a URL path as is (spaces, `#`, non-ASCII, …). A `?` starts the
/// query (`/events?replace=true`); `%XX` is kept as already encoded.
pub fn check_path(path: &str) -> Result<String, Error> {
    if !path.starts_with('/') {
        return Err(Error::Usage(format!(
            "--path '{path}' must start with /; for example --path /events or --path /events/timer/sec/1"
        )));
    }
    /// What a path or query may hold as is (RFC 3986 pchar, `/` and `?`);
    /// `%` is encoded unless it starts an escape (kept below).
    const PATH: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'.')
        .remove(b'_')
        .remove(b'~')
        .remove(b'!')
        .remove(b'$')
        .remove(b'&')
        .remove(b'\'')
        .remove(b'(')
        .remove(b')')
        .remove(b'*')
        .remove(b'+')
        .remove(b',')
        .remove(b';')
        .remove(b'=')
        .remove(b':')
        .remove(b'@')
        .remove(b'/')
        .remove(b'?');
    // `%XX` is already encoded: the text between escapes is encoded, the
    // escapes copied.
    let bytes = path.as_bytes();
    let mut out = String::with_capacity(path.len());
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let escape = bytes[i] == b'%'
            && bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
            && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit);
        if escape {
            out.extend(utf8_percent_encode(&path[start..i], PATH));
            out.push_str(&path[i..i + 3]);
            i += 3;
            start = i;
        } else {
            i += 1;
        }
    }
    out.extend(utf8_percent_encode(&path[start..], PATH));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_encoded() {
        assert_eq!(
            check_path("/events/timer/sec/1").unwrap(),
            "/events/timer/sec/1"
        );
        assert_eq!(check_path("/events/a b#c").unwrap(), "/events/a%20b%23c");
        assert_eq!(check_path("/events/é").unwrap(), "/events/%C3%A9");
        assert_eq!(check_path("/events/50%").unwrap(), "/events/50%25");
        assert_eq!(check_path("/events/a%2Fb").unwrap(), "/events/a%2Fb");
        assert_eq!(
            check_path("/events?replace=true").unwrap(),
            "/events?replace=true"
        );
        assert!(check_path("").is_err());
    }

    #[test]
    fn a_tap_path_carries_its_filter_encoded() {
        assert_eq!(tap_path(None, None), "/tap");
        assert_eq!(tap_path(Some("timer/"), None), "/tap?route=timer/");
        assert_eq!(
            tap_path(None, Some("a b&c=#")),
            "/tap?topic=a%20b%26c%3D%23"
        );
    }

    #[test]
    fn topics_are_literal_in_their_path() {
        assert_eq!(topic_path("timer/sec/1"), "/events/timer/sec/1");
        assert_eq!(
            topic_path("a b?c%d#é+"),
            "/events/a%20b%3Fc%25d%23%C3%A9%2B"
        );
        for topic in ["timer/sec/1", "a b?c%d#é+", "50%"] {
            assert_eq!(topic_of(&topic_path(topic)).as_deref(), Some(topic));
        }
        assert_eq!(topic_of("/events/a%2").as_deref(), Some("a%2"));
        assert_eq!(topic_of("/events?replace=true"), None);
        assert_eq!(topic_of("/events/"), None);
    }
}
