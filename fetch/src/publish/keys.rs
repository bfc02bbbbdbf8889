//! The publisher's minisign key pair, with the `minisign` crate: made by
//! `index init` (or an existing one reused), read by `publish`, and used to
//! sign exactly as the `minisign` tool does (prehashed Ed25519, a trusted
//! comment with the time and file name), so `minisign -V` verifies what is
//! signed here and a key made by `minisign -G` signs here.

use std::fs;
use std::io::Cursor;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use minisign::{KeyPair, PublicKey, PublicKeyBox, SecretKey, SecretKeyBox};

use super::{write_atomic, Failure};

/// A key file is a few hundred bytes.
const MAX_KEY_BYTES: u64 = 64 * 1024;

/// minisign's own place for the secret key: `$MINISIGN_CONFIG_DIR/minisign.key`,
/// else `~/.minisign/minisign.key`.
pub fn default_secret_key() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("MINISIGN_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("minisign.key"));
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty())?;
    Some(PathBuf::from(home).join(".minisign").join("minisign.key"))
}

/// The secret key at `path`, its password asked on the terminal when it
/// has one (as `minisign -S` asks it).
pub fn load(path: &Path) -> Result<SecretKey, Failure> {
    let bytes = app_plugin::file::read_limited(path, MAX_KEY_BYTES).map_err(|e| {
        Failure::usage(format!(
            "cannot read the secret key {}: {e}; give it with --secret-key FILE (or run 'app plugin index init' to make one)",
            path.display()
        ))
    })?;
    let text = with_checksum(&String::from_utf8_lossy(&bytes));
    let parse = || SecretKeyBox::from_string(&text);
    let bad = |e: minisign::PError| {
        Failure::verify(format!(
            "the secret key {} cannot be used: {e}",
            path.display()
        ))
    };
    let boxed = parse().map_err(bad)?;
    match boxed.into_unencrypted_secret_key() {
        Ok(key) => Ok(key),
        // It has a password: asked on the terminal.
        Err(_) => SecretKey::from_box(parse().map_err(bad)?, None).map_err(bad),
    }
}

/// The key file's text, its checksum filled in when it is a key without a
/// password that the `minisign` tool made (`minisign -G -W`, 0.11, leaves
/// the checksum zero, which the crate takes for a corrupt key): BLAKE2b-256
/// of the algorithm, key id and key, as minisign computes it for others.
fn with_checksum(text: &str) -> String {
    use blake2::digest::consts::U32;
    use blake2::{Blake2b, Digest};
    use ct_codecs::{Base64, Decoder, Encoder};
    // sig_alg 2, kdf_alg 2, chk_alg 2, salt 32, opslimit 8, memlimit 8,
    // then keynum 8, key 64, checksum 32.
    const KEY_AT: usize = 54;
    const CHK_AT: usize = KEY_AT + 8 + 64;
    let mut lines: Vec<&str> = text.lines().collect();
    let Some(Ok(mut raw)) = lines.get(1).map(|l| Base64::decode_to_vec(l.trim(), None)) else {
        return text.to_string();
    };
    let unencrypted = raw.len() == CHK_AT + 32 && raw[2..4] == [0, 0];
    if !unencrypted || raw[CHK_AT..].iter().any(|&b| b != 0) {
        return text.to_string();
    }
    let mut hash = Blake2b::<U32>::new();
    hash.update(&raw[0..2]);
    hash.update(&raw[KEY_AT..CHK_AT]);
    raw[CHK_AT..].copy_from_slice(&hash.finalize());
    let Ok(line) = Base64::encode_to_string(&raw) else {
        return text.to_string();
    };
    lines[1] = &line;
    let mut fixed = lines.join("\n");
    fixed.push('\n');
    fixed
}

/// A new key pair, its secret key written to `path` (mode 0600, in a
/// directory of mode 0700 when it makes one); with a password asked twice
/// on the terminal unless `no_password`.
pub fn generate(path: &Path, no_password: bool) -> Result<KeyPair, Failure> {
    let pair = if no_password {
        KeyPair::generate_unencrypted_keypair()
    } else {
        KeyPair::generate_encrypted_keypair(None)
    }
    .map_err(|e| {
        Failure::usage(format!(
            "cannot make a key pair: {e}; without a terminal to ask a password on, pass --no-password"
        ))
    })?;
    let text = pair
        .sk
        .to_box(None)
        .map_err(|e| Failure::io(format!("cannot encode the secret key: {e}")))?
        .to_string();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| Failure::io(format!("cannot create {}: {e}", dir.display())))?;
    }
    write_atomic(path, text.as_bytes(), 0o600)?;
    fs::set_permissions(path, fs::Permissions::from_mode(0o600)).ok();
    Ok(pair)
}

/// The public key of `secret`.
pub fn public_of(secret: &SecretKey) -> Result<PublicKey, Failure> {
    PublicKey::from_secret_key(secret)
        .map_err(|e| Failure::verify(format!("cannot derive the public key: {e}")))
}

/// The text of a `minisign.pub` file for `key`.
pub fn public_file(key: &PublicKey) -> Result<String, Failure> {
    key.to_box()
        .map(|b| b.to_string())
        .map_err(|e| Failure::io(format!("cannot encode the public key: {e}")))
}

/// The `RW…` line of a `minisign.pub` file's text.
pub fn public_line(text: &str) -> Option<String> {
    let key = PublicKeyBox::from_string(text)
        .ok()?
        .into_public_key()
        .ok()?;
    Some(key.to_base64())
}

/// The `.minisig` of `bytes` (the file `file_name`), as `minisign -S` writes it.
pub fn sign(
    public: &PublicKey,
    secret: &SecretKey,
    bytes: &[u8],
    file_name: &str,
) -> Result<String, Failure> {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let trusted = format!("timestamp:{secs}\tfile:{file_name}\thashed");
    minisign::sign(
        Some(public),
        secret,
        Cursor::new(bytes),
        Some(&trusted),
        Some("signature from app plugin index publish"),
    )
    .map(|s| s.to_string())
    .map_err(|e| Failure::verify(format!("cannot sign {file_name}: {e}")))
}
