//! Timestamps as RFC 3339 in UTC, for event payloads, listener events and
//! the install index, without pulling a date crate into `app`.

use std::time::{SystemTime, UNIX_EPOCH};

/// `time` as RFC 3339 in UTC with milliseconds.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_millis(951_782_400_005);
/// assert_eq!(app_plugin::time::rfc3339_millis(t), "2000-02-29T00:00:00.005Z");
/// ```
pub fn rfc3339_millis(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!(
        "{}.{:03}Z",
        date_time(since.as_secs()),
        since.subsec_millis()
    )
}

/// `time` as RFC 3339 in UTC, whole seconds.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_secs(1_767_225_600);
/// assert_eq!(app_plugin::time::rfc3339(t), "2026-01-01T00:00:00Z");
/// ```
pub fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{}Z", date_time(since.as_secs()))
}

/// `YYYY-MM-DDTHH:MM:SS` for seconds since the epoch.
fn date_time(secs: u64) -> String {
    let (year, month, day) = civil_from_days(secs / 86_400);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 of a (proleptic Gregorian) date, after Howard
/// Hinnant's `days_from_civil`; `None` before 1970.
///
/// ```
/// assert_eq!(app_plugin::time::days_from_civil(2000, 3, 1), Some(11_017));
/// assert_eq!(app_plugin::time::days_from_civil(1969, 12, 31), None);
/// ```
pub fn days_from_civil(year: u64, month: u64, day: u64) -> Option<u64> {
    let y = if month <= 2 {
        year.checked_sub(1)?
    } else {
        year
    };
    let era = y / 400;
    let yoe = y % 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

/// Days since 1970-01-01 to (year, month, day), after Howard Hinnant's
/// `civil_from_days` (proleptic Gregorian calendar).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(secs: u64, millis: u64) -> String {
        rfc3339_millis(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(millis))
    }

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_709_251_199, 999), "2024-02-29T23:59:59.999Z");
        assert_eq!(at(1_798_761_600, 120), "2027-01-01T00:00:00.120Z");
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
        assert_eq!(
            rfc3339(UNIX_EPOCH + Duration::from_secs(951_825_599)),
            "2000-02-29T11:59:59Z"
        );
    }
}
