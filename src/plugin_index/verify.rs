//! Checking an index's minisign signature over the exact bytes downloaded,
//! before anything parses them (the `minisign-verify` crate: Ed25519, no
//! dependencies).

use minisign_verify::{Error as MsError, PublicKey, Signature};

/// A public key as `--key` takes it: the base64 line starting `RW`, or the
/// whole `minisign.pub` file (`untrusted comment:` line, then that line).
/// Returns the base64 line, which is what the index config records.
pub fn parse_key(text: &str) -> Result<String, String> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("untrusted comment:"))
        .unwrap_or("");
    PublicKey::from_base64(line).map_err(|e| {
        format!("it is not a minisign public key ({e}): give the RW… line of the publisher's minisign.pub, or the file itself with --key-file")
    })?;
    Ok(line.to_string())
}

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// A valid signature, by another key than the recorded one.
    OtherKey,
    /// Unreadable, legacy, or not matching the bytes (said for a person).
    Bad(String),
}

/// Whether `signature` (a `.minisig` file's text) is `key`'s signature of
/// exactly `bytes`. The error says why not.
pub fn verify(key: &str, bytes: &[u8], signature: &[u8]) -> Result<(), Refused> {
    check(key, bytes, signature).map_err(|e| match e {
        None => Refused::OtherKey,
        Some(why) => Refused::Bad(why),
    })
}

/// [`verify`], with `None` for another key.
fn check(key: &str, bytes: &[u8], signature: &[u8]) -> Result<(), Option<String>> {
    let key = PublicKey::from_base64(key)
        .map_err(|e| Some(format!("the recorded key is unusable ({e})")))?;
    let text = std::str::from_utf8(signature).map_err(|_| {
        Some("the .minisig file is not a minisign signature (not text)".to_string())
    })?;
    let signature = Signature::decode(text).map_err(|e| {
        Some(format!(
            "the .minisig file is not a minisign signature ({e})"
        ))
    })?;
    key.verify(bytes, &signature, false).map_err(|e| match e {
        MsError::UnexpectedKeyId => None,
        // minisign-verify checks the signature of the bytes, then that of
        // the trusted comment, and says the same for both: the message names
        // both.
        MsError::InvalidSignature => Some(
            "the signature does not match what was served: the index's bytes, or the trusted comment of its .minisig, were changed after signing"
                .to_string(),
        ),
        MsError::UnexpectedAlgorithm => Some(
            "it is a legacy (non-prehashed) minisign signature; sign with a current minisign"
                .to_string(),
        ),
        other => Some(other.to_string()),
    })
}
