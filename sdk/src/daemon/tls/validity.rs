//! A certificate's validity dates (X.509 `notBefore`, `notAfter`), read
//! from its DER with a few bounded steps, so that a certificate outside its
//! dates is a start-up error naming them instead of a server that starts
//! and then fails every handshake. Only these two fields are read; what
//! rustls checks (that the pair is usable) it still checks.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `notBefore` and `notAfter` of a DER certificate; `None` when it is not
/// laid out as X.509 says (rustls then says what is wrong with it).
pub(super) fn dates(der: &[u8]) -> Option<(SystemTime, SystemTime)> {
    let (cert, _) = expect(der, SEQUENCE)?;
    let (tbs, _) = expect(cert, SEQUENCE)?;
    let mut rest = tbs;
    // version [0] EXPLICIT, optional; then serialNumber, signature, issuer.
    if rest.first() == Some(&0xa0) {
        rest = tlv(rest)?.2;
    }
    for tag in [INTEGER, SEQUENCE, SEQUENCE] {
        rest = expect(rest, tag)?.1;
    }
    let (validity, _) = expect(rest, SEQUENCE)?;
    let (before_tag, before, rest) = tlv(validity)?;
    let (after_tag, after, _) = tlv(rest)?;
    Some((time(before_tag, before)?, time(after_tag, after)?))
}

const INTEGER: u8 = 0x02;
const SEQUENCE: u8 = 0x30;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// The content of a `tag` element at the start of `input`, and what follows.
fn expect(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (found, content, rest) = tlv(input)?;
    (found == tag).then_some((content, rest))
}

/// Tag, content and rest of the DER element at the start of `input`.
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, input) = input.split_first()?;
    let (&first, mut input) = input.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        // Four length bytes are 4 GiB: more is no certificate.
        if n == 0 || n > 4 || input.len() < n {
            return None;
        }
        let (bytes, rest) = input.split_at(n);
        input = rest;
        bytes.iter().fold(0usize, |l, b| (l << 8) | usize::from(*b))
    };
    (input.len() >= len).then(|| (tag, &input[..len], &input[len..]))
}

/// A UTCTime (`YYMMDDHHMMSSZ`, years 1950–2049) or GeneralizedTime
/// (`YYYYMMDDHHMMSSZ`), the two forms RFC 5280 allows.
fn time(tag: u8, text: &[u8]) -> Option<SystemTime> {
    let text = std::str::from_utf8(text).ok()?.strip_suffix('Z')?;
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let num = |s: &str| s.parse::<u64>().ok();
    let (year, rest) = match (tag, text.len()) {
        (UTC_TIME, 12) => {
            let yy = num(&text[..2])?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &text[2..])
        }
        (GENERALIZED_TIME, 14) => (num(&text[..4])?, &text[4..]),
        _ => return None,
    };
    let (month, day) = (num(&rest[..2])?, num(&rest[2..4])?);
    let (hour, minute, second) = (num(&rest[4..6])?, num(&rest[6..8])?, num(&rest[8..10])?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    // Dates before 1970 are as good as any past date: the epoch.
    let days = crate::time::days_from_civil(year, month, day).unwrap_or(0);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    Some(UNIX_EPOCH + Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, tag: u8) -> String {
        crate::time::rfc3339(time(tag, text.as_bytes()).expect(text))
    }

    #[test]
    fn both_time_forms_are_read() {
        assert_eq!(at("250101000000Z", UTC_TIME), "2025-01-01T00:00:00Z");
        assert_eq!(at("491231235959Z", UTC_TIME), "2049-12-31T23:59:59Z");
        // Before the epoch counts as the epoch: as past as any.
        assert_eq!(at("500101000000Z", UTC_TIME), "1970-01-01T00:00:00Z");
        assert_eq!(
            at("20240229120000Z", GENERALIZED_TIME),
            "2024-02-29T12:00:00Z"
        );
        assert_eq!(
            at("99991231235959Z", GENERALIZED_TIME),
            "9999-12-31T23:59:59Z"
        );
        for bad in [
            "2501010000Z",
            "250101000000",
            "25010100000xZ",
            "251301000000Z",
        ] {
            assert!(time(UTC_TIME, bad.as_bytes()).is_none(), "{bad}");
        }
    }

    #[test]
    fn truncated_or_odd_der_is_none_never_a_panic() {
        assert!(dates(&[]).is_none());
        assert!(dates(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_none());
        assert!(dates(&[0x30, 0x85, 0, 0, 0, 0, 1]).is_none());
        assert!(dates(&[0x30, 0x03, 0x30, 0x01, 0x02]).is_none());
        assert!(dates(b"not der at all").is_none());
    }
}
