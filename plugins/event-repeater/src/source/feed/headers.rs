//! A feed's request headers from its flags: `--source-header`s, the token
//! of `--source-token-file`, the default `User-Agent`. Values may be
//! secrets: every one is marked sensitive, and no message quotes one.

use std::path::Path;

use hyper::header::{HeaderName, HeaderValue};

use super::FeedArgs;

/// Most `--source-header` flags.
pub const MAX_HEADERS: usize = 64;
/// Largest `--source-header` (name and value), and token file.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

/// The headers of every request: `User-Agent: app-event-repeater/VERSION`
/// unless a `--source-header` sets one, the token, then the flags'.
pub fn headers(args: &FeedArgs) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    if args.source_header.len() > MAX_HEADERS {
        return Err(format!("more than {MAX_HEADERS} --source-header flags"));
    }
    let mut out = Vec::new();
    for (i, h) in args.source_header.iter().enumerate() {
        // The value may be a secret: messages name the flag's position
        // and the header's name, never the value.
        let n = i + 1;
        if h.len() > MAX_HEADER_BYTES {
            return Err(format!(
                "--source-header number {n} is over {MAX_HEADER_BYTES} bytes"
            ));
        }
        let (name, value) = h
            .split_once(':')
            .ok_or_else(|| format!("--source-header number {n} is not 'Name: value' (no ':')"))?;
        let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| {
            format!(
                "--source-header number {n}: {} is not a header name",
                app_plugin::text::escape_for_terminal(name.trim())
            )
        })?;
        let mut value = HeaderValue::from_str(value.trim()).map_err(|_| {
            format!("--source-header {name}: the value holds a character no header may hold")
        })?;
        value.set_sensitive(true);
        out.push((name, value));
    }
    if let Some(file) = &args.source_token_file {
        let token = read_token(file)?;
        let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
            format!(
                "--source-token-file {}: the token holds a character no header may hold",
                file.display()
            )
        })?;
        value.set_sensitive(true);
        out.push((hyper::header::AUTHORIZATION, value));
    }
    if !out.iter().any(|(n, _)| n == hyper::header::USER_AGENT) {
        let agent = concat!("app-event-repeater/", env!("CARGO_PKG_VERSION"));
        out.push((hyper::header::USER_AGENT, HeaderValue::from_static(agent)));
    }
    Ok(out)
}

/// The token in `file`: a regular file of at most 8 KiB, one line.
fn read_token(file: &Path) -> Result<String, String> {
    // A secret: warned about once when others can read it, like --password-file.
    let bytes =
        crate::files::read_secret_file(file, "--source-token-file", MAX_HEADER_BYTES as u64)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("--source-token-file {} is not UTF-8", file.display()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(format!("--source-token-file {} is empty", file.display()));
    }
    Ok(token.to_string())
}
