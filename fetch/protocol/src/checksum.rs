//! SHA-256 checksums as people write them: 64 hex digits.

use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`, lowercase hex.
///
/// ```
/// assert_eq!(
///     app_fetch_protocol::checksum::sha256_hex(b""),
///     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
/// );
/// ```
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Normalises a checksum given by the user (`--sha256`): 64 hex digits,
/// either case, optionally prefixed `sha256:` (in either case). `None` if it
/// is not one.
pub fn parse_hex(text: &str) -> Option<String> {
    let hex = text.trim();
    // `SHA256:ABC…` as some tools print it: the prefix in either case too.
    let hex = match hex.get(..7) {
        Some(prefix) if prefix.eq_ignore_ascii_case("sha256:") => &hex[7..],
        _ => hex,
    };
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| hex.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hex_in_either_case_with_optional_prefix() {
        let lower = sha256_hex(b"abc");
        assert_eq!(parse_hex(&lower.to_uppercase()), Some(lower.clone()));
        assert_eq!(parse_hex(&format!("sha256:{lower}")), Some(lower.clone()));
        let upper = lower.to_uppercase();
        assert_eq!(parse_hex(&format!("SHA256:{upper}")), Some(lower.clone()));
        assert_eq!(parse_hex(&format!("Sha256:{upper}")), Some(lower.clone()));
        assert_eq!(parse_hex("sha256:"), None);
        assert_eq!(parse_hex(&lower[1..]), None);
        assert_eq!(parse_hex(&format!("{}g", &lower[1..])), None);
    }
}
