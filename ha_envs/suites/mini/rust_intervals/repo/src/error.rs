//! The error type of the crate.

use std::fmt;

/// Errors raised when building or parsing intervals and sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// An interval whose start lies after its end.
    Reversed { start: i64, end: i64 },
    /// Text that is not a valid interval or set; carries the offending part.
    Syntax(String),
    /// A number that does not fit in an `i64`.
    OutOfRange(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Reversed { start, end } => {
                write!(
                    f,
                    "interval start {} is greater than its end {}",
                    start, end
                )
            }
            Error::Syntax(text) => write!(f, "invalid interval syntax: {:?}", text),
            Error::OutOfRange(text) => write!(f, "number out of range: {:?}", text),
        }
    }
}

impl std::error::Error for Error {}
