//! `syncPolicy.retry` as the engine uses it: how often and how patiently a failed operation is
//! retried, and the pauses between the attempts.

use std::time::Duration;

/// Retries are capped: Argo CD's negative limit ("forever") becomes this many.
pub const MAX_RETRIES: usize = 100;

/// `syncPolicy.retry`: how often and how patiently a failed operation is retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub limit: usize,
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
            limit: 0,
            duration: Duration::from_secs(5),
            factor: 2.0,
            max_duration: Duration::from_secs(180),
        }
    }
}

impl RetryPolicy {
    /// The pauses before each retry, computed by backon's exponential backoff (no jitter).
    #[must_use]
    pub fn delays(&self) -> Vec<Duration> {
        use backon::BackoffBuilder;
        backon::ExponentialBuilder::default()
            .with_min_delay(self.duration)
            .with_factor(self.factor)
            .with_max_delay(self.max_duration)
            .with_max_times(self.limit)
            .build()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_by_factor_up_to_the_maximum() {
        let policy = RetryPolicy {
            limit: 5,
            duration: Duration::from_secs(5),
            factor: 2.0,
            max_duration: Duration::from_secs(30),
        };
        let seconds: Vec<u64> = policy.delays().iter().map(Duration::as_secs).collect();
        assert_eq!(seconds, [5, 10, 20, 30, 30]);
        assert!(RetryPolicy::default().delays().is_empty());
    }
}
