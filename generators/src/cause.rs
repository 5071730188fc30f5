//! The error a data source's read failed with, kept whole for the error chain while the errors
//! that carry it stay `Clone` and comparable: two causes are equal when they read the same.

use std::fmt;
use std::sync::Arc;

/// An error from an implementation this crate cannot name (a Kubernetes client, HTTP, git),
/// shared. It reads as the error itself and passes on its source, so wrapping it adds no link
/// to the chain.
#[derive(Debug, Clone)]
pub struct Cause(Arc<dyn std::error::Error + Send + Sync>);

impl Cause {
    /// Wraps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self(Arc::new(error))
    }

    /// `context: cause`, or the cause alone when there is no context.
    #[must_use]
    pub fn with_context(&self, context: &str) -> String {
        if context.is_empty() {
            self.to_string()
        } else {
            format!("{context}: {self}")
        }
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Cause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for Cause {}

#[cfg(test)]
mod tests {
    use std::error::Error;

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn reads_as_the_error_and_passes_on_its_source() {
        let cause = Cause::new(Outer(std::io::Error::other("inner")));
        assert_eq!(cause.to_string(), "outer");
        assert_eq!(cause.source().unwrap().to_string(), "inner");
        assert_eq!(cause.with_context("reading"), "reading: outer");
        assert_eq!(cause.with_context(""), "outer");
        assert_eq!(cause, Cause::new(std::io::Error::other("outer")));
    }
}
