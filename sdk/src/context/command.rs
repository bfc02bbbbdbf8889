//! The command line as the context carries it: shell-quoted, bounded.

/// The most bytes of `APP_COMMAND` (and the context's `command`): whole
/// shell-quoted words up to this size, the rest counted in
/// [`vars::COMMAND_OMITTED`](super::vars::COMMAND_OMITTED). The kernel refuses any one environment string
/// over 128 KiB (`MAX_ARG_STRLEN`) and the whole of arguments and
/// environment over `ARG_MAX`, so a copy of a long command line in one
/// variable would make `app` fail where the plugin run directly works.
pub const COMMAND_MAX: usize = 16 * 1024;

/// `argv` joined with shell quoting, whole words only, at most
/// [`COMMAND_MAX`] bytes; with the number of words left out. Linear in the
/// size of `argv`.
///
/// ```
/// use app_plugin::context::command_line;
/// assert_eq!(command_line(["app", "foo", "a b"]), ("app foo 'a b'".to_string(), 0));
/// let many = std::iter::once("app").chain(std::iter::repeat("word").take(10_000));
/// let (line, omitted) = command_line(many);
/// assert!(line.len() <= app_plugin::context::COMMAND_MAX);
/// assert_eq!(line.split(' ').count() + omitted, 10_001);
/// ```
pub fn command_line<'a>(argv: impl IntoIterator<Item = &'a str>) -> (String, usize) {
    let mut line = String::new();
    let mut omitted = 0;
    for word in argv {
        if omitted > 0 {
            omitted += 1;
            continue;
        }
        let quoted = shell_words::quote(word);
        let sep = usize::from(!line.is_empty());
        if line.len() + sep + quoted.len() > COMMAND_MAX {
            omitted = 1;
            continue;
        }
        if sep == 1 {
            line.push(' ');
        }
        line.push_str(&quoted);
    }
    (line, omitted)
}
