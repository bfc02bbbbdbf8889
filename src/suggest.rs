//! "Did you mean …?" for unknown commands.

/// The candidate closest to `typed`, if it is close enough to be a likely typo.
///
/// ```
/// let names = ["event-repeater", "event-time", "plugin"];
/// assert_eq!(app::suggest::closest("evnt-repeater", names), Some("event-repeater"));
/// assert_eq!(app::suggest::closest("zzz", names), None);
/// ```
pub fn closest<'a>(typed: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    // 0.7 keeps one or two slips in a short word and a few in a long one,
    // without offering unrelated names.
    const BAR: f64 = 0.7;
    candidates
        .into_iter()
        .map(|c| (strsim::normalized_damerau_levenshtein(typed, c), c))
        .filter(|(score, _)| *score >= BAR)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}
