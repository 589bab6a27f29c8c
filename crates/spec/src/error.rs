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
            option: option.to_string(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }
}
