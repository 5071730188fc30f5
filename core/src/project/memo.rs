//! A bounded memo of parse outcomes by key, shared by what a project says and is judged on every
//! reconcile — its globs and its sync windows — where parsing again (a regex per glob, a cron
//! schedule per window) costs far more than the judgement.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{LazyLock, Mutex, PoisonError};

/// Outcomes by key; reaching `limit` entries starts over, so keys that come and go (projects
/// edited many times) cannot grow the memory without bound.
pub struct Memo<K, V> {
    entries: LazyLock<Mutex<HashMap<K, V>>>,
    limit: usize,
}

impl<K: Hash + Eq, V: Clone> Memo<K, V> {
    /// An empty memo keeping at most `limit` outcomes.
    #[must_use]
    pub const fn new(limit: usize) -> Self {
        Self {
            entries: LazyLock::new(|| Mutex::new(HashMap::new())),
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
        static MEMO: Memo<String, usize> = Memo::new(2);
        let parses = std::cell::Cell::new(0);
        let parse = |key: &str| {
            MEMO.get_or_parse(key, || {
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
