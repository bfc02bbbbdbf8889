//! HTTP Basic credentials for the source (`http://USER:PASSWORD@…`), kept
//! so that they are sent and never shown. A leaf: the address and the feed
//! both hold them.

/// HTTP Basic credentials. Shown (Display, Debug, `/healthz`, the log, the
/// checkpoint) as `***:***`: they are only ever in the header sent.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    header: String,
}

impl BasicAuth {
    /// Credentials for `user` and `password` (both already percent-decoded).
    pub fn new(user: &str, password: &str) -> BasicAuth {
        use base64::Engine;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        BasicAuth {
            header: format!("Basic {token}"),
        }
    }

    /// The `Authorization` header value.
    pub fn header(&self) -> &str {
        &self.header
    }
}

impl std::fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // User and password both: a token is often given as the user.
        let mask = app_plugin::redact::MASK;
        write!(f, "{mask}:{mask}")
    }
}
