//! Which namespaces besides its own the controller manages Applications in
//! (`flotilla controller --application-namespaces`, Argo CD's `application.namespaces`): a list
//! of globs (`!` denies). Names without glob characters are used as given, so a controller with
//! only namespaced rights never lists namespaces; globs are matched against the namespaces as a
//! watch of Namespaces sees them come and go. Pure: the namespaces are given.

use std::sync::Arc;

use crate::project::ProjectMemos;
use crate::project::pattern::{ListVerdict, PatternError, judge_list};

/// An entry of `--application-namespaces` that is not a usable glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} entry {index}: {error}")]
pub struct ApplicationNamespacesError {
    /// The flag it was given to.
    pub flag: &'static str,
    pub index: usize,
    #[source]
    pub error: PatternError,
}

/// The parsed `--application-namespaces`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplicationNamespaces {
    entries: Vec<String>,
    /// The entries compiled (each namespace seen is judged against them).
    memos: Arc<ProjectMemos>,
}

impl ApplicationNamespaces {
    /// The entries of comma-separated `lists` (blank entries dropped).
    ///
    /// # Errors
    /// An entry that is not a usable glob, naming it.
    pub fn parse(lists: &[String]) -> Result<Self, ApplicationNamespacesError> {
        Self::parse_flag("--application-namespaces", lists)
    }

    /// The entries of comma-separated `lists` given to `flag` (`--applicationset-namespaces`
    /// reads the same syntax).
    ///
    /// # Errors
    /// An entry that is not a usable glob, naming it and the flag.
    pub fn parse_flag(
        flag: &'static str,
        lists: &[String],
    ) -> Result<Self, ApplicationNamespacesError> {
        let entries: Vec<String> = lists
            .iter()
            .flat_map(|list| list.split(','))
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(str::to_owned)
            .collect();
        let memos = Arc::new(ProjectMemos::default());
        judge_list(&entries, "", str::to_owned, &memos)
            .map_err(|(index, error)| ApplicationNamespacesError { flag, index, error })?;
        Ok(Self { entries, memos })
    }

    /// The namespaces named, other than `control`, when every entry is a name without glob
    /// characters: then no namespace needs to be listed.
    #[must_use]
    pub fn literal(&self, control: &str) -> Option<Vec<String>> {
        let glob = |entry: &String| entry.contains(['*', '?', '[', '{', '!', '\\']);
        (!self.entries.iter().any(glob)).then(|| self.select(&self.entries, control))
    }

    /// Whether the entries permit `namespace`.
    #[must_use]
    pub fn permits(&self, namespace: &str) -> bool {
        judge_list(&self.entries, namespace, str::to_owned, &self.memos)
            == Ok(ListVerdict::Permitted)
    }

    /// The namespaces of `existing` the entries permit, other than the control plane's
    /// `control`, sorted and without duplicates.
    #[must_use]
    pub fn select(&self, existing: &[String], control: &str) -> Vec<String> {
        let mut selected: Vec<String> = existing
            .iter()
            .filter(|namespace| namespace.as_str() != control)
            .filter(|namespace| self.permits(namespace))
            .cloned()
            .collect();
        selected.sort();
        selected.dedup();
        selected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(lists: &[&str]) -> ApplicationNamespaces {
        let lists: Vec<String> = lists.iter().map(|l| (*l).to_owned()).collect();
        ApplicationNamespaces::parse(&lists).unwrap()
    }

    #[test]
    fn names_are_used_as_given_and_globs_select_among_existing_namespaces() {
        let names = parse(&["team-a, team-b", "team-c"]);
        assert_eq!(
            names.literal("team-b"),
            Some(vec!["team-a".into(), "team-c".into()])
        );
        let globs = parse(&["team-*,!team-secret"]);
        assert_eq!(globs.literal("flotilla"), None);
        let existing = [
            "team-b",
            "flotilla",
            "team-secret",
            "shop",
            "team-a",
            "team-flotilla",
        ]
        .map(str::to_owned);
        assert_eq!(
            globs.select(&existing, "team-flotilla"),
            ["team-a", "team-b"].map(str::to_owned)
        );
        assert_eq!(parse(&[]).literal("flotilla"), Some(vec![]));
        let bad = ApplicationNamespaces::parse(&["ok,a[".to_owned()]).unwrap_err();
        assert_eq!(bad.index, 1);
    }
}
