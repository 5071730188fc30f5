//! Consecutive failures per object and the retry delay they earn (5 s doubling up to 5 min),
//! shared by the ApplicationSet and Application reconcilers' error policies.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// Consecutive failures by object name.
#[derive(Debug, Default)]
pub struct FailureBackoff {
    failures: Mutex<BTreeMap<String, u32>>,
}

impl FailureBackoff {
    /// Counts one more failure of `name`; returns the count and the delay before the retry.
    pub fn failed(&self, name: &str) -> (u32, Duration) {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        let count = failures.entry(name.to_owned()).or_default();
        *count = count.saturating_add(1);
        (*count, retry_delay(*count))
    }

    /// `name` was reconciled without failing: its next failure starts the backoff again.
    pub fn succeeded(&self, name: &str) {
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
    }
}

/// Delay before retrying an object that failed `failures` times in a row: 5 s doubling up to
/// 5 min.
#[must_use]
pub fn retry_delay(failures: u32) -> Duration {
    let seconds = 5u64.saturating_mul(1 << failures.saturating_sub(1).min(6));
    Duration::from_secs(seconds.min(300))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_to_five_minutes() {
        let delays: Vec<u64> = [1, 2, 3, 4, 6, 7, 8, 40]
            .into_iter()
            .map(|n| retry_delay(n).as_secs())
            .collect();
        assert_eq!(delays, [5, 10, 20, 40, 160, 300, 300, 300]);
    }

    #[test]
    fn a_success_starts_the_backoff_again() {
        let backoff = FailureBackoff::default();
        assert_eq!(backoff.failed("a"), (1, Duration::from_secs(5)));
        assert_eq!(backoff.failed("a"), (2, Duration::from_secs(10)));
        assert_eq!(
            backoff.failed("b"),
            (1, Duration::from_secs(5)),
            "per object"
        );
        backoff.succeeded("a");
        assert_eq!(backoff.failed("a"), (1, Duration::from_secs(5)));
    }
}
