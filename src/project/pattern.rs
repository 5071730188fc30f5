//! One entry of a project's lists: a glob (`*` also crosses `/`, `{a,b}` alternatives), which
//! denies instead of permitting when it starts with `!`.

use globset::{Glob, GlobMatcher};

/// An entry that is not a usable glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pattern:?} is not a usable glob: {message}")]
pub struct PatternError {
    pub pattern: String,
    pub message: String,
}

/// A parsed entry.
#[derive(Debug, Clone)]
pub struct Pattern {
    matcher: GlobMatcher,
    deny: bool,
}

impl Pattern {
    /// Parses `text`; a leading `!` makes it a deny entry (`!*` is refused: it would deny
    /// everything, as Argo CD says).
    ///
    /// # Errors
    /// Not a glob, or `!*`.
    pub fn parse(text: &str) -> Result<Self, PatternError> {
        let (deny, glob) = text
            .strip_prefix('!')
            .map_or((false, text), |rest| (true, rest));
        if deny && glob == "*" {
            return Err(PatternError {
                pattern: text.to_owned(),
                message: "denying everything is not a rule (remove the entry instead)".to_owned(),
            });
        }
        let matcher = Glob::new(glob)
            .map_err(|error| PatternError {
                pattern: text.to_owned(),
                message: error.kind().to_string(),
            })?
            .compile_matcher();
        Ok(Self { matcher, deny })
    }

    /// Whether the glob (without its `!`) matches `value`.
    #[must_use]
    pub fn matches(&self, value: &str) -> bool {
        self.matcher.is_match(value)
    }

    /// Whether the entry denies.
    #[must_use]
    pub fn denies(&self) -> bool {
        self.deny
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_cross_slashes_and_bang_denies() {
        let any = Pattern::parse("https://git.example.com/*").unwrap();
        assert!(any.matches("https://git.example.com/team/app"));
        assert!(!any.denies());
        let deny = Pattern::parse("!kube-*").unwrap();
        assert!(deny.denies() && deny.matches("kube-system") && !deny.matches("shop"));
        let either = Pattern::parse("{prod,staging}-*").unwrap();
        assert!(either.matches("prod-eu") && either.matches("staging-us"));
        assert!(!either.matches("dev-eu"));
        assert!(Pattern::parse("!*").is_err());
        assert!(Pattern::parse("a[").is_err());
    }
}
