//! `index add --max-age`: how long ago an index may have been signed (its
//! `signed_at`), the freeze bound the user sets, whatever the publisher put
//! in `expires`.

use std::time::{Duration, SystemTime};

pub use crate::error::index::show_age as show;

/// The longest `--max-age` taken: ten years.
pub const MAX: u64 = 3650 * 86_400;
/// A `signed_at` this far ahead of our clock is taken as clock skew; more
/// is refused (a future date would defeat the bound).
pub const SKEW: Duration = Duration::from_secs(3600);

/// Reads `30d`, `12h`, `90m` or `45s` (a whole number and one unit).
pub fn parse(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "--max-age '{}' is not a duration like 30d, 12h, 90m or 45s (at most 3650d)",
            text.escape_debug()
        )
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let unit = match unit {
        "d" => 86_400,
        "h" => 3600,
        "m" => 60,
        "s" => 1,
        _ => return Err(bad()),
    };
    number
        .checked_mul(unit)
        .filter(|s| (1..=MAX).contains(s))
        .ok_or_else(bad)
}

/// Whether an index signed at `signed_at` is within `max_age` of `now`:
/// `Err(true)` when it is older, `Err(false)` when it is dated ahead of
/// `now` by more than [`SKEW`].
pub fn check(signed_at: SystemTime, max_age: u64, now: SystemTime) -> Result<(), bool> {
    match now.duration_since(signed_at) {
        Ok(age) if age.as_secs() > max_age => Err(true),
        Ok(_) => Ok(()),
        Err(ahead) if ahead.duration() > SKEW => Err(false),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_and_show_alike() {
        for (text, secs) in [
            ("30d", 30 * 86_400),
            ("12h", 43_200),
            ("90m", 5400),
            ("45s", 45),
        ] {
            assert_eq!(parse(text), Ok(secs), "{text}");
            assert_eq!(show(secs), text);
        }
        for bad in ["", "30", "d", "30x", "-1d", "0d", "3651d", "1.5d", "30 d"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn an_old_or_future_signature_is_out_of_bounds() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(100 * 86_400);
        let day = Duration::from_secs(86_400);
        assert_eq!(check(now - day, 2 * 86_400, now), Ok(()));
        assert_eq!(check(now - 3 * day, 2 * 86_400, now), Err(true));
        assert_eq!(check(now + Duration::from_secs(60), 86_400, now), Ok(()));
        assert_eq!(check(now + day, 86_400, now), Err(false));
    }
}
