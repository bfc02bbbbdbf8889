//! One page from a clap command: clap_mangen's NAME, DESCRIPTION, OPTIONS
//! and VERSION, with a synopsis of our own (the command as typed, `app
//! plugin install`, and each option's value placeholder), the commands it
//! has (only those that have pages), and the FILES, ENVIRONMENT, EXIT
//! STATUS and SEE ALSO sections of [`crate::extra`].

use clap::{Arg, Command};
use roff::{bold, italic, roman, Inline, Roff};

use crate::extra::Extra;

/// A page to write: `file` (`app-plugin-install`) documents `cmd`, typed as
/// `spelled` (`app plugin install`).
pub struct Page {
    pub file: String,
    pub spelled: String,
    pub cmd: Command,
    /// The commands below it that have pages: (name as typed, page, about).
    pub commands: Vec<(String, String, String)>,
    /// Its EXIT STATUS lines.
    pub exit: Vec<String>,
    /// Pages it refers to, `name(section)`.
    pub see_also: Vec<String>,
}

/// The roff text of `page`.
pub fn render(page: &Page, extra: &Extra) -> Result<Vec<u8>, String> {
    let man = clap_mangen::Man::new(page.cmd.clone());
    let mut out = Vec::new();
    let io = |e: std::io::Error| format!("cannot render {}: {e}", page.file);
    man.render_title(&mut out).map_err(io)?;
    man.render_name_section(&mut out).map_err(io)?;
    let mut roff = Roff::new();
    roff.control("SH", ["SYNOPSIS"]);
    roff.text(synopsis(&page.cmd, &page.spelled));
    out.extend(roff.render().into_bytes());
    man.render_description_section(&mut out).map_err(io)?;
    let mut roff = Roff::new();
    let (notes, _) = after_help(&page.cmd);
    for paragraph in extra
        .description
        .iter()
        .copied()
        .chain(notes.iter().map(String::as_str))
    {
        roff.control("PP", []);
        if paragraph.contains('\n') {
            // Its lines as they are (no filling).
            roff.control("nf", []);
            for line in paragraph.lines() {
                roff.text([roman(line)]);
                roff.control("br", []);
            }
            roff.control("fi", []);
        } else {
            roff.text([roman(paragraph)]);
        }
    }
    out.extend(roff.render().into_bytes());
    if page.cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out).map_err(io)?;
    }
    let mut roff = Roff::new();
    if !page.commands.is_empty() {
        roff.control("SH", ["COMMANDS"]);
        for (name, file, about) in &page.commands {
            roff.control("TP", []);
            roff.text([bold(name.as_str())]);
            roff.text([roman(format!("{about}; see {file}(1)."))]);
        }
    }
    list(&mut roff, "FILES", extra.files);
    list(&mut roff, "ENVIRONMENT", extra.environment);
    roff.control("SH", ["EXIT STATUS"]);
    lines(&mut roff, &page.exit);
    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(page.see_also.join(", "))]);
    out.extend(roff.render().into_bytes());
    if page.cmd.get_version().is_some() {
        man.render_version_section(&mut out).map_err(io)?;
    }
    Ok(out)
}

/// A `.TP` list: each term in bold, its text below.
pub fn list(roff: &mut Roff, heading: &str, items: &[(&str, &str)]) {
    if items.is_empty() {
        return;
    }
    roff.control("SH", [heading]);
    for (term, text) in items {
        roff.control("TP", []);
        roff.text([bold(*term)]);
        roff.text([roman(*text)]);
    }
}

/// Lines kept apart (`.br` between them).
pub fn lines(roff: &mut Roff, lines: &[String]) {
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            roff.control("br", []);
        }
        roff.text([roman(line.as_str())]);
    }
}

/// The command's after-help, split at `Exit codes:` into its paragraphs
/// before (notes, examples) and the exit-code lines after.
pub fn after_help(cmd: &Command) -> (Vec<String>, Vec<String>) {
    let text = cmd
        .get_after_long_help()
        .or_else(|| cmd.get_after_help())
        .map(|t| t.to_string())
        .unwrap_or_default();
    // The exit codes end at the first blank line; what follows them
    // (manage's examples) is notes again.
    let (notes, exit) = match text.find("Exit codes:") {
        Some(at) => {
            let rest = &text[at + "Exit codes:".len()..];
            let (exit, after) = rest.split_once("\n\n").unwrap_or((rest, ""));
            (format!("{}\n\n{after}", &text[..at]), exit)
        }
        None => (text.clone(), ""),
    };
    let paragraphs = notes
        .split("\n\n")
        .map(|p| {
            // A list (`Examples:` and indented lines) keeps its lines.
            if p.lines().skip(1).any(|l| l.starts_with("  ")) {
                p.trim().to_string()
            } else {
                p.split_whitespace().collect::<Vec<_>>().join(" ")
            }
        })
        .filter(|p| !p.is_empty())
        .collect();
    (paragraphs, exit_lines(exit))
}

/// The exit codes as one line per code: the help gives them either one per
/// line (`  0  stopped …`) or as a sentence (`0 ok; 1 failed; 2 usage`).
fn exit_lines(text: &str) -> Vec<String> {
    let starts_code = |s: &str| {
        s.split_whitespace()
            .next()
            .is_some_and(|w| w.chars().all(|c| c.is_ascii_digit() || c == ','))
    };
    let collapse = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    // Per command (`  run     0 stopped …`, continued on lines indented
    // deeper): one line per command, `run: 0 stopped …`.
    let raw: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if raw.first().is_some_and(|first| !starts_code(first)) {
        let indent = |l: &str| l.len() - l.trim_start().len();
        let base = indent(raw[0]);
        let mut out: Vec<String> = Vec::new();
        for line in raw {
            match out.last_mut() {
                Some(last) if indent(line) > base => {
                    last.push(' ');
                    last.push_str(&collapse(line));
                }
                _ => {
                    let line = collapse(line);
                    match line.split_once(' ') {
                        Some((command, codes)) => out.push(format!("{command}: {codes}")),
                        None => out.push(line),
                    }
                }
            }
        }
        return out;
    }
    let rows: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if rows.len() > 1 && rows.iter().all(|r| starts_code(r)) {
        return rows.iter().map(|r| collapse(r)).collect();
    }
    let mut out: Vec<String> = Vec::new();
    for part in collapse(text).split("; ") {
        let part = part.trim();
        match out.last_mut() {
            // A new code starts with a number; anything else continues the last.
            Some(last) if !starts_code(part) => {
                last.push_str("; ");
                last.push_str(part);
            }
            _ if !part.is_empty() => out.push(part.to_string()),
            _ => {}
        }
    }
    out
}

/// `app plugin install [--name NAME] [--force] SOURCE`, in roff.
pub fn synopsis(cmd: &Command, spelled: &str) -> Vec<Inline> {
    let mut line = vec![bold(spelled), roman(" ")];
    let options: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| !a.is_positional() && !a.is_hide_set())
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .collect();
    for arg in options {
        let flag = match (arg.get_long(), arg.get_short()) {
            (Some(long), _) => format!("--{long}"),
            (None, Some(short)) => format!("-{short}"),
            (None, None) => continue,
        };
        let required = arg.is_required_set();
        if !required {
            line.push(roman("["));
        }
        line.push(bold(flag));
        if arg.get_action().takes_values() {
            line.push(roman(" "));
            line.push(italic(value_name(arg)));
        }
        if !required {
            line.push(roman("]"));
        }
        line.push(roman(" "));
    }
    for arg in cmd.get_positionals().filter(|a| !a.is_hide_set()) {
        let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
        let name = format!("{}{}", value_name(arg), if many { "..." } else { "" });
        if arg.is_required_set() {
            line.push(italic(name));
        } else {
            line.push(roman("["));
            line.push(italic(name));
            line.push(roman("]"));
        }
        line.push(roman(" "));
    }
    if cmd.get_name() == "app" {
        // app itself: a built-in command or any plugin, then its arguments.
        line.push(italic("COMMAND"));
        line.push(roman("|"));
        line.push(italic("PLUGIN"));
        line.push(roman(" ["));
        line.push(italic("ARGS"));
        line.push(roman("]..."));
    } else if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        if cmd.is_subcommand_required_set() {
            line.push(italic("COMMAND"));
        } else {
            line.push(roman("["));
            line.push(italic("COMMAND"));
            line.push(roman("]"));
        }
        line.push(roman(" ..."));
    }
    line
}

fn value_name(arg: &Arg) -> String {
    arg.get_value_names()
        .and_then(|v| v.first())
        .map(|v| v.to_string())
        .unwrap_or_else(|| arg.get_id().as_str().to_uppercase())
}

#[cfg(test)]
mod tests {
    use super::exit_lines;

    #[test]
    fn exit_codes_per_command_become_one_line_per_command() {
        assert_eq!(
            exit_lines(
                "\n  run     0 ok; 1 failed;\n          2 usage.\n  manage  0 ok; 3 down.\n"
            ),
            vec!["run: 0 ok; 1 failed; 2 usage.", "manage: 0 ok; 3 down."]
        );
    }

    #[test]
    fn exit_codes_become_one_line_each() {
        assert_eq!(
            exit_lines(" 0 ok; 1 refused; or failed; 2 usage\n error."),
            ["0 ok", "1 refused; or failed", "2 usage error."]
        );
        assert_eq!(
            exit_lines("\n  0  stopped\n  1  cannot  start\n"),
            ["0 stopped", "1 cannot start"]
        );
    }
}
