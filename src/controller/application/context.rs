//! The Application reconciler's shared context: clients, caches, watched settings and projects, and what it remembers between reconciles.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use kube::{Api, Client, ResourceExt};

use super::error::ApplicationError;
use crate::cluster::destinations::clients::{ClusterClients, Connect};
use crate::cluster::watches::watched_customizations::{DEFAULT_CONFIG_MAP, WatchedCustomizations};
use crate::cluster::watches::watched_projects::WatchedProjects;
use crate::controller::application::running_syncs::RunningSyncs;
use crate::controller::leases::ownership::Ownership;
use crate::controller::runtime::events::EventPublisher;
use crate::controller::runtime::failure_backoff::FailureBackoff;
use crate::controller::runtime::metrics::Metrics;
use crate::customizations::Customizations;
use crate::repo::cache::RepoCache;
use crate::sync::execute::ExecuteSettings;
use flotilla_core::api::Application;
use flotilla_core::controller::application::freshness::LastCompare;
use flotilla_core::health::HealthDefaults;

/// What the Application reconciler needs.
pub struct ApplicationContext {
    pub client: Client,
    /// The control plane's namespace: AppProjects, cluster and repository Secrets, settings.
    pub namespace: String,
    /// The namespace of the Applications it reconciles: `namespace`, or one of the namespaces
    /// `flotilla controller --application-namespaces` manages besides it.
    pub app_namespace: String,
    pub repos: Arc<RepoCache>,
    pub clusters: ClusterClients,
    /// How often an Application is compared again without a change (Argo CD: 3 min).
    pub resync: Duration,
    /// Timeouts and polling of sync operations; prune and retry come from each Application.
    pub settings: ExecuteSettings,
    pub metrics: Arc<Metrics>,
    pub events: EventPublisher,
    /// Consecutive failures per Application, for the backoff.
    pub(super) failures: FailureBackoff,
    /// The last successful compare of each Application, to skip the next one when nothing it
    /// read changed.
    pub(super) compared: Mutex<HashMap<String, LastCompare>>,
    /// The customizations configured in the settings ConfigMap, and those the remembered
    /// compares used (when they change, every Application is compared again).
    pub(super) customizations: WatchedCustomizations,
    pub(super) compared_customizations: Mutex<Customizations>,
    /// The operations running between two of their steps.
    pub(super) runs: RunningSyncs,
    /// The AppProjects of `namespace`.
    pub projects: WatchedProjects,
    /// A sharded replica's slots: only their Applications are reconciled (None: every one).
    pub ownership: Option<Ownership>,
}

impl ApplicationContext {
    /// A context with no failures recorded; destinations are resolved through the cluster
    /// Secrets of `namespace`, and reached through clients made by `connect` (`client` for the
    /// controller's own cluster).
    #[must_use]
    pub fn new(
        client: Client,
        connect: Connect,
        namespace: String,
        repos: Arc<RepoCache>,
        resync: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            clusters: ClusterClients::new(client.clone(), &namespace, connect),
            events: EventPublisher::new(client.clone()),
            customizations: WatchedCustomizations::new(
                client.clone(),
                &namespace,
                DEFAULT_CONFIG_MAP,
            ),
            projects: WatchedProjects::new(client.clone(), &namespace),
            client,
            app_namespace: namespace.clone(),
            namespace,
            repos,
            resync,
            settings: ExecuteSettings::default(),
            metrics,
            failures: FailureBackoff::default(),
            compared: Mutex::default(),
            compared_customizations: Mutex::default(),
            runs: RunningSyncs::default(),
            ownership: None,
        }
    }

    /// Reconciles only the Applications `ownership` gives this replica.
    #[must_use]
    pub fn sharded(self, ownership: Ownership) -> Self {
        Self {
            ownership: Some(ownership),
            ..self
        }
    }

    /// Whether this replica reconciles `app` now.
    #[must_use]
    pub fn owns(&self, app: &Application) -> bool {
        owned(self.ownership.as_ref(), &self.app_namespace, app)
    }

    /// Reconciles the Applications of `namespace` (another than the control plane's, whose
    /// projects, Secrets and settings it still reads).
    #[must_use]
    pub fn managing(self, namespace: &str) -> Self {
        Self {
            app_namespace: namespace.to_owned(),
            ..self
        }
    }

    /// Reads the configured customizations from ConfigMap `name` instead of
    /// [`DEFAULT_CONFIG_MAP`], each with `defaults` (the health flags).
    #[must_use]
    pub fn with_settings_config_map(self, name: &str, defaults: HealthDefaults) -> Self {
        Self {
            customizations: WatchedCustomizations::new(self.client.clone(), &self.namespace, name)
                .with_health_defaults(defaults),
            ..self
        }
    }

    /// Runs sync operations with `settings` (the controller-wide sync timeout and wave delay)
    /// instead of [`ExecuteSettings::default`].
    #[must_use]
    pub fn with_execute_settings(self, settings: ExecuteSettings) -> Self {
        Self { settings, ..self }
    }

    /// The configured customizations now; when they differ from those of the remembered
    /// compares, those are forgotten.
    pub(super) async fn customizations(
        &self,
        app: &Application,
    ) -> Result<Customizations, ApplicationError> {
        let checks = self.customizations.current().await.map_err(|error| {
            ApplicationError::Customizations {
                app: app.name_any(),
                error,
            }
        })?;
        let mut compared = self
            .compared_customizations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if *compared != checks {
            self.compared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
            *compared = checks.clone();
        }
        Ok(checks)
    }

    pub(super) fn last_compare(&self, app: &str) -> Option<LastCompare> {
        self.compared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(app)
            .cloned()
    }

    /// Records the last compare of `app`, or forgets it (`None`).
    pub(super) fn remember_compare(&self, app: String, last: Option<LastCompare>) {
        let mut compared = self.compared.lock().unwrap_or_else(PoisonError::into_inner);
        match last {
            Some(last) => compared.insert(app, last),
            None => compared.remove(&app),
        };
    }

    pub(super) fn api(&self) -> Api<Application> {
        Api::namespaced(self.client.clone(), &self.app_namespace)
    }
}

/// Whether `app` (of `namespace` unless it says) is reconciled by a replica with `ownership`
/// (None: not sharded, every Application).
pub(super) fn owned(ownership: Option<&Ownership>, namespace: &str, app: &Application) -> bool {
    ownership.is_none_or(|ownership| {
        ownership.owns(
            app.namespace().as_deref().unwrap_or(namespace),
            &app.name_any(),
        )
    })
}
