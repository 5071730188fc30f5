//! One entry of a project's lists: a glob (`*` also crosses `/`, `{a,b}` alternatives), which
//! denies instead of permitting when it starts with `!`. Entries are compiled once per text and
//! kept in the caller's [`ProjectMemos`]: a project's lists are judged on every reconcile (its
//! sources, its destination, each object's kind), and compiling a glob into a regex costs far
//! more than matching it.

use globset::{Glob, GlobMatcher};

use super::memos::ProjectMemos;

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
    /// Compiles `text` (kept by [`ProjectMemos::pattern`]); a leading `!` makes it a deny entry
    /// (`!*` is refused: it would deny everything, as Argo CD says).
    ///
    /// # Errors
    /// Not a glob, or `!*`.
    pub fn compile(text: &str) -> Result<Self, PatternError> {
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

/// What a list of entries (`sourceRepos`, `sourceNamespaces`) makes of a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListVerdict {
    /// An allow entry matches and no deny entry does.
    Permitted,
    /// This `!` entry matches.
    Denied(String),
    /// No allow entry matches.
    Unmatched,
}

/// Judges `value` by `entries` (each compared as `prepare` makes it, compiled once in `memos`): a
/// matching deny entry wins, else some allow entry must match.
///
/// # Errors
/// The index of an entry that is not a usable glob, with why.
pub fn judge_list(
    entries: &[String],
    value: &str,
    prepare: impl Fn(&str) -> String,
    memos: &ProjectMemos,
) -> Result<ListVerdict, (usize, PatternError)> {
    let mut allowed = false;
    for (index, entry) in entries.iter().enumerate() {
        let pattern = memos
            .pattern(&prepare(entry))
            .map_err(|error| (index, error))?;
        let matched = pattern.matches(value);
        if pattern.denies() && matched {
            return Ok(ListVerdict::Denied(entry.clone()));
        }
        allowed |= !pattern.denies() && matched;
    }
    Ok(if allowed {
        ListVerdict::Permitted
    } else {
        ListVerdict::Unmatched
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn globs_cross_slashes_and_bang_denies() {
        let memos = ProjectMemos::default();
        let parse = |text| memos.pattern(text);
        let any = parse("https://git.example.com/*").unwrap();
        assert!(any.matches("https://git.example.com/team/app"));
        assert!(!any.denies());
        let deny = parse("!kube-*").unwrap();
        assert!(deny.denies() && deny.matches("kube-system") && !deny.matches("shop"));
        let either = parse("{prod,staging}-*").unwrap();
        assert!(either.matches("prod-eu") && either.matches("staging-us"));
        assert!(!either.matches("dev-eu"));
        assert!(parse("!*").is_err());
        assert!(parse("!*").is_err(), "a refusal is kept too");
        assert!(parse("a[").is_err());
    }

    #[test]
    fn an_entry_is_compiled_once_per_text() {
        let memos = ProjectMemos::default();
        let parse = |text| memos.pattern(text);
        let first = parse("compiled-once-*").unwrap();
        let again = parse("compiled-once-*").unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert!(!Arc::ptr_eq(&first, &parse("!compiled-once-*").unwrap()));
    }

    #[test]
    fn a_list_permits_when_an_allow_entry_matches_and_no_deny_entry() {
        let entries = ["team-*".to_owned(), "!team-secret".to_owned()];
        let memos = ProjectMemos::default();
        let judge = |value| judge_list(&entries, value, str::to_owned, &memos).unwrap();
        assert_eq!(judge("team-a"), ListVerdict::Permitted);
        assert_eq!(
            judge("team-secret"),
            ListVerdict::Denied("!team-secret".to_owned())
        );
        assert_eq!(judge("other"), ListVerdict::Unmatched);
        let broken = ["ok".to_owned(), "a[".to_owned()];
        assert_eq!(
            judge_list(&broken, "x", str::to_owned, &memos)
                .unwrap_err()
                .0,
            1
        );
    }
}
