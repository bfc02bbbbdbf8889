//! HTTP Basic credentials for the source (`http://USER:PASSWORD@…`), kept
//! so that they are sent and never shown. A leaf: the address and the feed
//! both hold them.

/// HTTP Basic credentials. Shown (Display, Debug, `/healthz`, the log, the
/// checkpoint) as `USER:***`: the password is only ever in the header sent.
#[derive(Clone, PartialEq, Eq)]
pub struct BasicAuth {
    user: String,
    header: String,
}

impl BasicAuth {
    /// Credentials for `user` and `password` (both already percent-decoded).
    pub fn new(user: &str, password: &str) -> BasicAuth {
        use base64::Engine;
        let token = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
        BasicAuth {
            user: user.to_string(),
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
        write!(f, "{}:{}", self.user, app_plugin::text::MASK)
    }
}
