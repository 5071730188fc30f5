//! `syncPolicy.retry` as the engine uses it: how often and how patiently a failed operation is
//! retried, and the pauses between the attempts.

use std::time::Duration;

/// `syncPolicy.retry`: how often and how patiently a failed operation is retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt: `None` retries forever (Argo CD's negative limit).
    pub limit: Option<usize>,
    /// The first backoff (Argo CD default 5 s).
    pub duration: Duration,
    /// Growth of the backoff per retry (default 2).
    pub factor: f32,
    /// The longest backoff (default 3 min).
    pub max_duration: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            limit: Some(0),
            duration: Duration::from_secs(5),
            factor: 2.0,
            max_duration: Duration::from_secs(180),
        }
    }
}

impl RetryPolicy {
    /// The pause before retry `retry` (0 for the first), computed by backon's exponential
    /// backoff (no jitter); `None` once the limit is spent.
    #[must_use]
    pub fn delay(&self, retry: usize) -> Option<Duration> {
        use backon::BackoffBuilder;
        if self.limit.is_some_and(|limit| retry >= limit) {
            return None;
        }
        backon::ExponentialBuilder::default()
            .with_min_delay(self.duration)
            .with_factor(self.factor)
            .with_max_delay(self.max_duration)
            .with_max_times(retry.saturating_add(1))
            .build()
            .nth(retry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_by_factor_up_to_the_maximum() {
        let mut policy = RetryPolicy {
            limit: Some(5),
            duration: Duration::from_secs(5),
            factor: 2.0,
            max_duration: Duration::from_secs(30),
        };
        let seconds = |policy: &RetryPolicy| -> Vec<Option<u64>> {
            (0..7)
                .map(|retry| policy.delay(retry).map(|d| d.as_secs()))
                .collect()
        };
        let some = |list: &[u64]| list.iter().copied().map(Some).collect::<Vec<_>>();
        let mut expected = some(&[5, 10, 20, 30, 30]);
        expected.extend([None, None]);
        assert_eq!(seconds(&policy), expected);
        assert_eq!(RetryPolicy::default().delay(0), None);
        // A negative limit in Argo CD: retried forever, the pause capped.
        policy.limit = None;
        assert_eq!(seconds(&policy), some(&[5, 10, 20, 30, 30, 30, 30]));
        assert_eq!(policy.delay(10_000), Some(Duration::from_secs(30)));
    }
}
