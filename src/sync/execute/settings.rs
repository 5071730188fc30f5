//! How an operation is carried out: timeouts, polling, wave delay, prune and retry settings, and
//! the Application-wide sync options.

use std::time::Duration;

use crate::sync::execute::cluster_api::Propagation;
use flotilla_core::api::application::ManagedNamespaceMetadata;
use flotilla_core::api::retry_policy::RetryPolicy;
use flotilla_core::health::HealthChecks;
use flotilla_core::project::Admission;
use flotilla_core::sync::{IgnoreDifferences, SyncOptions};

/// The annotation of an Application that sets its operation timeout, e.g. `90s` or `20m` (`0`:
/// none, over a controller-wide timeout).
pub const SYNC_TIMEOUT_ANNOTATION: &str = "flotilla.dev/sync-timeout";

/// The default wave delay: none. Argo CD's is 2 s, to keep its health checks from reading a
/// status its controller has not updated yet; Flotilla's waves wait for each object to be
/// Healthy on its current generation (observedGeneration caught up), so the delay is left to
/// the teams whose webhooks or controllers need it (`--sync-wave-delay`, Argo CD's key). It
/// overlaps the wait for a wave's health, holding back only a wave Healthy sooner.
pub const DEFAULT_WAVE_DELAY: Duration = Duration::ZERO;

/// [`DEFAULT_WAVE_DELAY`] as a flag's default.
pub const DEFAULT_WAVE_DELAY_TEXT: &str = "0s";

/// Settings of one sync operation.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecuteSettings {
    /// The operation fails when it has not finished after this long; None (the default, as
    /// Argo CD's `controller.sync.timeout.seconds: "0"`) never times out. Controller-wide with
    /// `--sync-timeout`, per Application with [`SYNC_TIMEOUT_ANNOTATION`].
    pub timeout: Option<Duration>,
    /// SyncFail hooks get this long after the failure (default 2 min).
    pub sync_fail_timeout: Duration,
    /// How often live state is re-read while waiting (default 250 ms).
    pub poll_interval: Duration,
    /// How long after a wave's last apply its health may count before the next wave starts
    /// (Argo CD's `ARGOCD_SYNC_WAVE_DELAY`; see [`flotilla_core::sync::SyncState::wave_delay`]).
    pub wave_delay: Duration,
    /// How many objects are applied at once within a batch (default 16).
    pub concurrency: usize,
    /// Delete managed objects that are no longer desired.
    pub prune: bool,
    /// How a pruned object's dependents go (`PrunePropagationPolicy`, default foreground).
    pub prune_propagation: Propagation,
    /// Let pruning delete every managed object when the manifests are empty (refused
    /// otherwise, see [`flotilla_core::sync::refuse_empty_target`]).
    pub allow_empty: bool,
    /// Retries of a failed operation.
    pub retry: Option<RetryPolicy>,
    /// Application-wide sync options (`syncPolicy.syncOptions`); an object's own
    /// `sync-options` annotation wins over them.
    pub sync_options: SyncOptions,
    /// The destination namespace, created first when `sync_options` say `CreateNamespace=true`.
    pub destination_namespace: Option<String>,
    /// The labels and annotations of the namespace `CreateNamespace=true` writes
    /// (`syncPolicy.managedNamespaceMetadata`), which is then written at every sync.
    pub managed_namespace_metadata: Option<ManagedNamespaceMetadata>,
    /// `FailOnSharedResource=true`: the operation fails before its first write when an object
    /// of the plan is tracked by another Application.
    pub fail_on_shared_resource: bool,
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
            timeout: None,
            sync_fail_timeout: Duration::from_secs(120),
            poll_interval: Duration::from_millis(250),
            wave_delay: DEFAULT_WAVE_DELAY,
            concurrency: 16,
            prune: false,
            prune_propagation: Propagation::Foreground,
            allow_empty: false,
            retry: None,
            sync_options: SyncOptions::default(),
            destination_namespace: None,
            managed_namespace_metadata: None,
            fail_on_shared_resource: false,
            health: HealthChecks::default(),
            ignore_differences: IgnoreDifferences::default(),
            respect_ignore_differences: false,
            admission: Admission::default(),
        }
    }
}
