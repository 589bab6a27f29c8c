//! The one error type of this crate; its `Display` is the line a user reads.

/// A mistake in what the user asked for. The text names the option, the value and the
/// accepted form, so it can be printed as it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A value that does not parse as the option's kind.
    #[error("{option} {value}: expected {expected}")]
    Invalid {
        /// Where the value came from, as the user wrote it (`--bs`, `bs in job 2 of a.toml`).
        option: String,
        /// The value as given.
        value: String,
        /// The accepted form.
        expected: String,
    },
    /// A job file that cannot be read as TOML, or holds a key stormark does not know.
    #[error("{path}: {message}")]
    JobFile {
        /// The job file.
        path: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A profile name that is not shipped.
    #[error("--profile {name}: unknown profile; expected one of {known}")]
    UnknownProfile {
        /// The name given.
        name: String,
        /// The shipped profile names, comma separated.
        known: String,
    },
}

impl SpecError {
    pub(crate) fn invalid(option: &str, value: &str, expected: impl Into<String>) -> Self {
        SpecError::Invalid {
            option: shown(option),
            value: shown(value),
            expected: expected.into(),
        }
    }
}

/// The most characters of a value an error quotes.
const SHOWN_MAX: usize = 80;

/// A value as an error quotes it: on one line (control characters escaped) and at most
/// [`SHOWN_MAX`] characters, so that a pasted file or a runaway argument cannot flood the
/// terminal or split the message.
pub fn shown(value: &str) -> String {
    printable(value, SHOWN_MAX)
}

/// A URL as an error may quote it: credentials (`user:secret@`) and a query (`?secret=`)
/// replaced by a mention, as [`shown`] otherwise. A mistaken URL is often one pasted with its
/// secret; the error is printed, logged and pasted again.
pub fn shown_url(value: &str) -> String {
    let (scheme, rest) = value.split_once("://").unwrap_or(("", value));
    let (before_query, query) = match rest.find(['?', '#']) {
        Some(i) => (&rest[..i], "?<query hidden>"),
        None => (rest, ""),
    };
    let (authority_end, path) = match before_query.find('/') {
        Some(i) => (&before_query[..i], &before_query[i..]),
        None => (before_query, ""),
    };
    let host = match authority_end.rfind('@') {
        Some(i) => format!("<credentials hidden>{}", &authority_end[i..]),
        None => authority_end.to_string(),
    };
    let sep = if value.contains("://") { "://" } else { "" };
    shown(&format!("{scheme}{sep}{host}{path}{query}"))
}

/// Text that came from elsewhere (a server's refusal, an agent's message, a service's
/// error) as stormark prints or records it: on one line, every control character escaped
/// (an escape sequence cannot clear the screen, retitle the window or forge a line of
/// stormark's own), and at most `max` characters.
pub fn printable(value: &str, max: usize) -> String {
    let mut out = String::new();
    for (n, c) in value.chars().enumerate() {
        if n + 1 == max {
            out.push('…');
            break;
        }
        if c.is_control()
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_from_elsewhere_cannot_drive_the_terminal() {
        let evil = "busy\x1b[2J\x1b]0;owned\x07\nstatus: ok\u{202e}";
        let p = printable(evil, 500);
        assert_eq!(
            shown_url("http://AK:SeCrEt@h:9000/p?X-Amz-Signature=SeCrEt2"),
            "http://<credentials hidden>@h:9000/p?<query hidden>"
        );
        assert_eq!(shown_url("http://h:9000"), "http://h:9000");
        assert!(!p.chars().any(|c| c.is_control()), "{p}");
        assert!(!p.contains('\u{202e}'), "{p}");
        assert_eq!(p.lines().count(), 1);
        assert!(p.starts_with("busy\\u{1b}[2J"), "{p}");
        assert_eq!(printable(&"x".repeat(1000), 10).chars().count(), 10);
    }

    #[test]
    fn values_are_quoted_on_one_short_line() {
        assert_eq!(shown("4kk"), "4kk");
        assert_eq!(shown("a\nb"), "a\\nb");
        let long = "9".repeat(10_000);
        let s = shown(&long);
        assert_eq!(s.chars().count(), SHOWN_MAX);
        assert!(s.ends_with('…'));
        let e = SpecError::invalid("--bs", &long, "a size").to_string();
        assert!(e.len() < 200 && !e.contains('\n'), "{e}");
    }
}
