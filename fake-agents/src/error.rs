//! The error every scenario and profile file reports, with its place in the file.
//!
//! Its own module, depending on nothing else in the crate, so that the parsers (`de`,
//! `profile`, `scenario`) can all use it without importing
//! one another. Re-exported as `scenario::ScenarioError`.

/// A scenario (or profile) that cannot be used, with its place in the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}:{col}: {message}")]
pub struct ScenarioError {
    /// The path as given (or as found under the scenarios folder).
    pub file: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub col: usize,
    pub message: String,
}
