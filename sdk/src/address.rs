//! Server addresses as flags give them (`tcp://host:1883`, `host:4222`,
//! `http://user:pw@[::1]:8080`), parsed by the `url` crate under one set of
//! rules per flag: which schemes, their default ports, whether a path or
//! credentials may appear. Every plugin that reads an address reads it
//! here, so `tcp://a/b` means the same (a path, refused unless allowed)
//! wherever it is typed.
//!
//! Messages show the address through [`crate::redact::url`]: never with a
//! password or a query value.
//!
//! ```
//! use app_plugin::address::{Rules, Scheme};
//! const MQTT: Rules = Rules {
//!     schemes: &[Scheme::plain("tcp", 1883), Scheme::tls("mqtts", 8883)],
//!     bare: Some("tcp"),
//!     path: false,
//!     credentials: Some("--username"),
//! };
//! let a = MQTT.parse("broker:1884").unwrap();
//! assert_eq!((a.scheme.name, a.host.as_str(), a.port), ("tcp", "broker", 1884));
//! assert_eq!(a.host_port(), "broker:1884");
//! let v6 = MQTT.parse("mqtts://[::1]").unwrap();
//! assert_eq!((v6.host.as_str(), v6.port, v6.scheme.tls), ("::1", 8883, true));
//! assert_eq!(v6.host_port(), "[::1]:8883");
//! assert!(MQTT.parse("tcp://a/b").unwrap_err().to_string().contains("a path"));
//! let e = MQTT.parse("tcp://u:hunter2@h").unwrap_err().to_string();
//! assert!(!e.contains("hunter2"), "{e}");
//! ```

use std::fmt;

/// One scheme an address may have, and the port it means when none is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scheme {
    /// The scheme as written before `://`, lower case.
    pub name: &'static str,
    /// The port of an address that gives none.
    pub default_port: u16,
    /// Whether the scheme speaks TLS (`mqtts`, `tls`, `https`).
    pub tls: bool,
}

impl Scheme {
    /// A scheme in clear text.
    pub const fn plain(name: &'static str, default_port: u16) -> Scheme {
        Scheme {
            name,
            default_port,
            tls: false,
        }
    }

    /// A scheme over TLS.
    pub const fn tls(name: &'static str, default_port: u16) -> Scheme {
        Scheme {
            name,
            default_port,
            tls: true,
        }
    }
}

/// What an address read by one flag may hold.
#[derive(Debug, Clone, Copy)]
pub struct Rules {
    /// The schemes taken, the first one named first in messages.
    pub schemes: &'static [Scheme],
    /// The scheme of an address written without one (`host:port`), or
    /// `None` when a scheme is required.
    pub bare: Option<&'static str>,
    /// Whether a path (or query) may follow the host; `/` alone always may.
    pub path: bool,
    /// `None` when user and password may be given in the address;
    /// otherwise where to give them instead, named in the refusal.
    pub credentials: Option<&'static str>,
}

/// An address, checked against its [`Rules`].
#[derive(Clone, PartialEq, Eq)]
pub struct Address {
    /// The scheme, given or implied ([`Rules::bare`]).
    pub scheme: Scheme,
    /// The host: a name, an IPv4 address, or an IPv6 address without its
    /// brackets.
    pub host: String,
    /// The port given, else the scheme's default.
    pub port: u16,
    /// Whether the port was written in the address.
    pub port_given: bool,
    /// The path and query (`""` when there is none, or only `/`).
    pub target: String,
    /// The user name, percent-decoded (only where [`Rules::credentials`]
    /// is `None`).
    pub user: Option<String>,
    /// The password, percent-decoded; never shown (see the `Debug` impl).
    pub password: Option<String>,
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let user = if self.user.is_some() { "***@" } else { "" };
        write!(
            f,
            "Address({}://{user}{}{})",
            self.scheme.name,
            self.host_port(),
            self.target
        )
    }
}

impl Address {
    /// `host:port`, an IPv6 host in brackets.
    pub fn host_port(&self) -> String {
        join_host_port(&self.host, self.port)
    }
}

/// `host:port`, an IPv6 host (one holding a `:`) in brackets.
///
/// ```
/// assert_eq!(app_plugin::address::join_host_port("::1", 7), "[::1]:7");
/// assert_eq!(app_plugin::address::join_host_port("h", 7), "h:7");
/// ```
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Why an address was refused; its `Display` shows the address masked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressError {
    /// Not a URL at all (a bad port, a character no host may hold).
    #[error("{shown:?} is not an address ({reason}); use {forms}")]
    Syntax {
        /// The address, masked.
        shown: String,
        /// What the `url` crate found.
        reason: String,
        /// The forms taken ([`Rules::forms`]).
        forms: String,
    },
    /// A scheme the rules do not take.
    #[error("{shown:?}: unsupported scheme {scheme}://; use {forms}")]
    Scheme {
        /// The address, masked.
        shown: String,
        /// The scheme found.
        scheme: String,
        /// The forms taken ([`Rules::forms`]).
        forms: String,
    },
    /// No host, or an empty one.
    #[error("{shown:?} has no host; use {forms}")]
    NoHost {
        /// The address, masked.
        shown: String,
        /// The forms taken ([`Rules::forms`]).
        forms: String,
    },
    /// A path, query or fragment where the rules take none.
    #[error("{shown:?}: a path or query after the host is not taken here; use {forms}")]
    Path {
        /// The address, masked.
        shown: String,
        /// The forms taken ([`Rules::forms`]).
        forms: String,
    },
    /// A user or password where the rules take none.
    #[error("{shown:?}: give credentials with {instead}, not in the address")]
    Credentials {
        /// The address, masked.
        shown: String,
        /// Where to give them ([`Rules::credentials`]).
        instead: String,
    },
    /// A user or password that does not decode to UTF-8.
    #[error("{shown:?}: the user or password is not UTF-8 once %XX are decoded")]
    Encoding {
        /// The address, masked.
        shown: String,
    },
}

impl Rules {
    /// The forms an address may take, for messages: `tcp://HOST:PORT or
    /// mqtts://HOST:PORT`.
    pub fn forms(&self) -> String {
        let all: Vec<String> = self
            .schemes
            .iter()
            .map(|s| format!("{}://HOST:PORT", s.name))
            .collect();
        all.join(" or ")
    }

    /// Parses `text` under these rules.
    pub fn parse(&self, text: &str) -> Result<Address, AddressError> {
        let text = text.trim();
        let shown = crate::redact::url(text).into_owned();
        let forms = self.forms();
        let full = match (text.contains("://"), self.bare) {
            (true, _) => text.to_string(),
            (false, Some(bare)) => format!("{bare}://{text}"),
            (false, None) => {
                return Err(AddressError::Syntax {
                    shown,
                    reason: "no scheme".into(),
                    forms,
                })
            }
        };
        let url = url::Url::parse(&full).map_err(|e| match e {
            url::ParseError::EmptyHost => AddressError::NoHost {
                shown: shown.clone(),
                forms: forms.clone(),
            },
            other => AddressError::Syntax {
                shown: shown.clone(),
                reason: other.to_string(),
                forms: forms.clone(),
            },
        })?;
        let scheme = *self
            .schemes
            .iter()
            .find(|s| s.name == url.scheme())
            .ok_or_else(|| AddressError::Scheme {
                shown: shown.clone(),
                scheme: url.scheme().to_string(),
                forms: forms.clone(),
            })?;
        let has_credentials = !url.username().is_empty() || url.password().is_some();
        if let (true, Some(instead)) = (has_credentials, self.credentials) {
            return Err(AddressError::Credentials {
                shown,
                instead: instead.to_string(),
            });
        }
        let host = match url.host() {
            Some(url::Host::Domain(d)) if !d.is_empty() => d.to_string(),
            Some(url::Host::Ipv4(ip)) => ip.to_string(),
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            _ => return Err(AddressError::NoHost { shown, forms }),
        };
        let mut target = match url.path() {
            "" | "/" => String::new(),
            path => path.to_string(),
        };
        if let Some(q) = url.query() {
            target.push_str(if target.is_empty() { "/?" } else { "?" });
            target.push_str(q);
        }
        if (!target.is_empty() || url.fragment().is_some()) && !self.path {
            return Err(AddressError::Path { shown, forms });
        }
        let decode = |part: &str| {
            percent_encoding::percent_decode_str(part)
                .decode_utf8()
                .map(|t| t.into_owned())
                .map_err(|_| AddressError::Encoding {
                    shown: shown.clone(),
                })
        };
        let user = match url.username() {
            "" => None,
            u => Some(decode(u)?),
        };
        let password = url.password().map(decode).transpose()?;
        Ok(Address {
            scheme,
            host,
            port: url.port().unwrap_or(scheme.default_port),
            port_given: url.port().is_some(),
            target,
            user,
            password,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NATS: Rules = Rules {
        schemes: &[Scheme::plain("nats", 4222), Scheme::tls("tls", 4222)],
        bare: Some("nats"),
        path: false,
        credentials: Some("--username or --creds"),
    };

    const SOURCE: Rules = Rules {
        schemes: &[Scheme::plain("http", 80)],
        bare: None,
        path: true,
        credentials: None,
    };

    #[test]
    fn hosts_ports_and_schemes() {
        let a = NATS.parse("h").unwrap();
        assert_eq!(
            (a.scheme.name, a.host.as_str(), a.port),
            ("nats", "h", 4222)
        );
        assert!(!a.port_given);
        let a = NATS.parse("tls://10.0.0.1:5/").unwrap();
        assert_eq!((a.host_port(), a.scheme.tls), ("10.0.0.1:5".into(), true));
        assert_eq!(NATS.parse("[::1]:1").unwrap().host, "::1");
        for bad in ["mqtt://h", "h:notaport", "nats://", "nats://a/b", "a b", ""] {
            assert!(NATS.parse(bad).is_err(), "{bad}");
        }
        let e = NATS.parse("ws://h").unwrap_err().to_string();
        assert!(e.contains("unsupported scheme ws://"), "{e}");
        assert!(e.contains("nats://HOST:PORT or tls://HOST:PORT"), "{e}");
    }

    #[test]
    fn credentials_are_refused_masked_or_decoded_where_taken() {
        let e = NATS.parse("nats://u:hunter3@h:1").unwrap_err().to_string();
        assert!(
            e.contains("nats://***:***@h:1") && !e.contains("hunter3"),
            "{e}"
        );
        assert!(e.contains("--username or --creds"), "{e}");
        let a = SOURCE
            .parse("http://u:hun%40ter5@127.0.0.1:1/events?x=1")
            .unwrap();
        assert_eq!(a.user.as_deref(), Some("u"));
        assert_eq!(a.password.as_deref(), Some("hun@ter5"));
        assert_eq!(a.target, "/events?x=1");
        assert!(!format!("{a:?}").contains("hun"));
        assert!(SOURCE.parse("127.0.0.1:1").is_err());
    }
}
