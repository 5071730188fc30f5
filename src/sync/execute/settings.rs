//! How an operation is carried out: timeouts, polling, wave delay, prune and retry settings, and
//! the Application-wide sync options.

use std::time::Duration;

use crate::cluster::api::Propagation;
use crate::health::HealthChecks;
use crate::project::Admission;
use crate::sync::{IgnoreDifferences, SyncOptions};

/// The annotation of an Application that sets its operation timeout, e.g. `90s` or `20m`.
pub const SYNC_TIMEOUT_ANNOTATION: &str = "flotilla.dev/sync-timeout";

/// Settings of one sync operation.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecuteSettings {
    /// The operation fails when it has not finished after this long (default 10 min; per
    /// Application with [`SYNC_TIMEOUT_ANNOTATION`]).
    pub timeout: Duration,
    /// SyncFail hooks get this long after the failure (default 2 min).
    pub sync_fail_timeout: Duration,
    /// How often live state is re-read while waiting (default 250 ms).
    pub poll_interval: Duration,
    /// Pause before each new wave (Argo CD's `ARGOCD_SYNC_WAVE_DELAY`; default 0).
    pub wave_delay: Duration,
    /// How many objects are applied at once within a batch (default 16).
    pub concurrency: usize,
    /// Delete managed objects that are no longer desired.
    pub prune: bool,
    /// How a pruned object's dependents go (`PrunePropagationPolicy`, default foreground).
    pub prune_propagation: Propagation,
    /// Let pruning delete every managed object when the manifests are empty (refused
    /// otherwise, see [`crate::sync::refuse_empty_target`]).
    pub allow_empty: bool,
    /// Retries of a failed operation.
    pub retry: Option<RetryPolicy>,
    /// Application-wide sync options (`syncPolicy.syncOptions`); an object's own
    /// `sync-options` annotation wins over them.
    pub sync_options: SyncOptions,
    /// The destination namespace, created first when `sync_options` say `CreateNamespace=true`.
    pub destination_namespace: Option<String>,
    /// Configured health checks (Argo CD's `resource.customizations`), over the built-in rules.
    pub health: HealthChecks,
    /// The system-wide ignore rules joined with the Application's `ignoreDifferences`: ignored
    /// fields do not make an object out of sync for `ApplyOutOfSyncOnly`.
    pub ignore_differences: IgnoreDifferences,
    /// `RespectIgnoreDifferences=true`: an applied object takes the live values of its ignored
    /// fields.
    pub respect_ignore_differences: bool,
    /// What the Application's project permits; every object is judged before the first write.
    pub admission: Admission,
}

impl Default for ExecuteSettings {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(600),
            sync_fail_timeout: Duration::from_secs(120),
            poll_interval: Duration::from_millis(250),
            wave_delay: Duration::ZERO,
            concurrency: 16,
            prune: false,
            prune_propagation: Propagation::Foreground,
            allow_empty: false,
            retry: None,
            sync_options: SyncOptions::default(),
            destination_namespace: None,
            health: HealthChecks::default(),
            ignore_differences: IgnoreDifferences::default(),
            respect_ignore_differences: false,
            admission: Admission::default(),
        }
    }
}

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
