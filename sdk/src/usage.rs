//! A clap usage error as one line for a plugin's log: clap renders several
//! paragraphs (the error with its details, a tip, the usage), and the first
//! line alone loses the point ("the following required arguments were not
//! provided:" without the argument; "invalid value '3'" without the valid
//! ones). This keeps the whole first paragraph, joined into one line.

/// The first paragraph of clap's message, on one line, without clap's
/// `error: ` tag (the logger adds the program's name and level).
///
/// ```
/// let cmd = clap::Command::new("x")
///     .arg(clap::Arg::new("cert").long("cert").requires("key"))
///     .arg(clap::Arg::new("key").long("key"));
/// let e = cmd.try_get_matches_from(["x", "--cert", "c.pem"]).unwrap_err();
/// let line = app_plugin::usage::one_line(&e);
/// assert!(line.starts_with("the following required arguments were not provided: --key"), "{line}");
/// ```
pub fn one_line(e: &clap::Error) -> String {
    let rendered = e.render().to_string();
    let first: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .skip_while(|l| l.is_empty())
        .take_while(|l| !l.is_empty())
        .collect();
    let mut first = first.join(" ");
    // clap's "did you mean" is a tip paragraph of its own: kept, in brackets.
    let tips: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tip: "))
        .collect();
    if !tips.is_empty() {
        first = format!("{first} ({})", tips.join("; "));
    }
    match first.strip_prefix("error: ") {
        Some(rest) => rest.to_string(),
        None if first.is_empty() => "bad arguments".to_string(),
        None => first,
    }
}

#[cfg(test)]
mod tests {
    use super::one_line;
    use clap::{Arg, Command};

    #[test]
    fn a_similar_flag_is_suggested() {
        let cmd = Command::new("x").arg(Arg::new("listen").long("listen"));
        let e = cmd.try_get_matches_from(["x", "--lisen", "1"]).unwrap_err();
        assert_eq!(
            one_line(&e),
            "unexpected argument '--lisen' found (tip: a similar argument exists: '--listen')"
        );
    }

    #[test]
    fn the_valid_values_stay_with_an_invalid_one() {
        let cmd = Command::new("x").arg(Arg::new("qos").long("qos").value_parser(["0", "1", "2"]));
        let e = cmd.try_get_matches_from(["x", "--qos", "3"]).unwrap_err();
        assert_eq!(
            one_line(&e),
            "invalid value '3' for '--qos <qos>' [possible values: 0, 1, 2]"
        );
    }
}
