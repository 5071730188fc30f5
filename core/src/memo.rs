//! A bounded memo of parse outcomes by key, for what is judged on every reconcile — a project's
//! globs and sync windows, `ignoreDifferences`' jq filters — where parsing again (a regex per
//! glob, a cron schedule per window, a jq program) costs far more than the judgement. A memo is
//! a value its owner passes to the decisions (the controller keeps one for its life, a command
//! for its run), never a global.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Mutex, PoisonError};

/// Outcomes by key; reaching `limit` entries starts over, so keys that come and go (projects
/// edited many times) cannot grow the memory without bound.
pub struct Memo<K, V> {
    entries: Mutex<HashMap<K, V>>,
    limit: usize,
}

impl<K, V> std::fmt::Debug for Memo<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memo")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq, V: Clone> Memo<K, V> {
    /// An empty memo keeping at most `limit` outcomes.
    #[must_use]
    pub fn new(limit: usize) -> Self {
        Self {
            entries: Mutex::new(HashMap::new()),
            limit,
        }
    }

    /// The outcome kept for `key`, or `parse`'s, kept.
    pub fn get_or_parse<Q>(&self, key: &Q, parse: impl FnOnce() -> V) -> V
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(outcome) = entries.get(key) {
            return outcome.clone();
        }
        let outcome = parse();
        if entries.len() >= self.limit {
            entries.clear();
        }
        entries.insert(key.to_owned(), outcome.clone());
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_is_parsed_once_per_key_and_the_limit_starts_over() {
        let memo: Memo<String, usize> = Memo::new(2);
        let parses = std::cell::Cell::new(0);
        let parse = |key: &str| {
            memo.get_or_parse(key, || {
                parses.set(parses.get() + 1);
                key.len()
            })
        };
        assert_eq!(parse("one"), 3);
        assert_eq!(parse("one"), 3);
        assert_eq!(parse("three"), 5);
        assert_eq!(parses.get(), 2, "the second look at \"one\" is kept");
        assert_eq!(parse("sixsix"), 6, "the limit reached: started over");
        assert_eq!(parse("one"), 3);
        assert_eq!(parses.get(), 4);
    }
}
