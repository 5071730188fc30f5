//! What the ApplicationSet reconciler needs ([`AppSetContext`]): a client, where to look, how to
//! read repositories, and what it remembers between reconciles (failures, pacing, promotions).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::channel::mpsc::UnboundedReceiver;
use kube::runtime::reflector::Store;
use kube::{Client, ResourceExt};

use super::watched_namespaces::WatchedNamespaces;
use crate::cluster::destinations::clients::{ClusterClients, Connect};
use crate::cluster::generator_inputs::decision_watches::DecisionWatches;
use crate::cluster::watches::watched_projects::WatchedProjects;
use crate::controller::runtime::events::EventPublisher;
use crate::controller::runtime::failure_backoff::FailureBackoff;
use crate::controller::runtime::metrics::Metrics;
use crate::repo::cache::RepoCache;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::controller::appset::pacing::LastReconcile;
use flotilla_core::controller::appset::promotion::StepWatch;
use flotilla_core::controller::appset::rollout_layout::DEFAULT_ROLLOUT_STATUS_LIMIT;
use flotilla_core::controller::appset::status::DEFAULT_MAX_RESOURCES_STATUS_COUNT;
use flotilla_core::sync::JqFilters;

/// What the reconciler needs: a client, where to look, and how to read repositories.
pub struct AppSetContext {
    pub client: Client,
    /// The namespace of the ApplicationSets and their Applications.
    pub namespace: String,
    /// The control plane's namespace: cluster Secrets, AppProjects, and what plugin and
    /// clusterDecisionResource generators read (the same as `namespace`, unless
    /// `--applicationset-namespaces` names others).
    pub control_namespace: String,
    /// Repositories, for git generators and the revisions a rollout targets (commits and chart
    /// versions, read as the Application controller reads them).
    pub repos: Arc<RepoCache>,
    /// Poll interval of git generators without `requeueAfterSeconds`.
    pub git_poll: Duration,
    /// How many Applications an ApplicationSet's `status.resources` lists at most (0: as many
    /// as fit in the status's size).
    pub max_resources_status_count: usize,
    /// How many bytes of JSON `status.applicationStatus` may take before each Application
    /// keeps its own rollout state ([`flotilla_core::controller::appset::rollout_layout`]).
    pub rollout_status_limit: usize,
    pub metrics: Arc<Metrics>,
    pub events: EventPublisher,
    /// Watches on the kinds clusterDecisionResource generators read.
    pub(super) decision_watches: Arc<DecisionWatches>,
    /// The AppProjects of `control_namespace`.
    pub projects: WatchedProjects,
    /// The jq expressions of `ignoreApplicationDifferences`, compiled once for the controller's
    /// life.
    pub jq_filters: Arc<JqFilters>,
    /// The destination clusters, where analysis Jobs run.
    pub clusters: ClusterClients,
    /// Consecutive failures per ApplicationSet, for the backoff.
    pub(super) failures: FailureBackoff,
    /// The last reconcile of each ApplicationSet, for pacing the next one.
    pub(super) last_reconciles: Mutex<BTreeMap<String, LastReconcile>>,
    /// The Applications of each ApplicationSet seen since its last reconcile, and the
    /// ApplicationSets whose next reconcile may open the next step (not paced).
    pub(super) promotions: Mutex<(BTreeMap<String, StepWatch>, BTreeSet<String>)>,
    /// The running controllers' watches of the ApplicationSets of their namespaces (this one's
    /// and, when shared, the other managed namespaces'), where the rollout reads the
    /// ApplicationSets its steps wait for; empty when no controller runs.
    pub(super) watched: Arc<WatchedNamespaces>,
}

impl AppSetContext {
    /// A context with no failures recorded, for the ApplicationSets of the control plane's
    /// namespace `namespace`; destination clusters are resolved through the cluster Secrets of
    /// `namespace` and reached through clients made by `connect` (`client` for the
    /// controller's own cluster).
    #[must_use]
    pub fn new(
        client: Client,
        connect: Connect,
        namespace: String,
        repos: Arc<RepoCache>,
        git_poll: Duration,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            clusters: ClusterClients::new(client.clone(), &namespace, connect),
            events: EventPublisher::new(client.clone()),
            decision_watches: Arc::new(DecisionWatches::new(client.clone(), namespace.clone())),
            projects: WatchedProjects::new(client.clone(), &namespace),
            jq_filters: Arc::default(),
            client,
            control_namespace: namespace.clone(),
            namespace,
            repos,
            git_poll,
            max_resources_status_count: DEFAULT_MAX_RESOURCES_STATUS_COUNT,
            rollout_status_limit: DEFAULT_ROLLOUT_STATUS_LIMIT,
            metrics,
            failures: FailureBackoff::default(),
            last_reconciles: Mutex::default(),
            promotions: Mutex::default(),
            watched: Arc::default(),
        }
    }

    /// Reconciles the ApplicationSets of `namespace` (another than the control plane's, whose
    /// Secrets, projects and generator inputs it still reads), writing their Applications there.
    #[must_use]
    pub fn managing(self, namespace: &str) -> Self {
        Self {
            namespace: namespace.to_owned(),
            ..self
        }
    }

    /// Shares `watched`, the ApplicationSet watches of the other managed namespaces'
    /// controllers, so a step waiting for an ApplicationSet of one of them is woken by its
    /// changes.
    #[must_use]
    pub fn sharing_watches(self, watched: Arc<WatchedNamespaces>) -> Self {
        Self { watched, ..self }
    }

    /// Lists at most `count` Applications in each ApplicationSet's `status.resources` (0: as
    /// many as fit in the status's size).
    #[must_use]
    pub fn listing_at_most(self, count: usize) -> Self {
        Self {
            max_resources_status_count: count,
            ..self
        }
    }

    /// Keeps a RollingSync's per-Application state in the ApplicationSet's status while it
    /// takes at most `bytes` of JSON, on the Applications beyond.
    #[must_use]
    pub fn keeping_rollout_inline_up_to(self, bytes: usize) -> Self {
        Self {
            rollout_status_limit: bytes,
            ..self
        }
    }

    /// Whether the next reconcile of `appset` may open the next step; forgets what the watch
    /// saw of its Applications (the reconcile observes them anew).
    pub(super) fn take_promotion(&self, appset: &str) -> bool {
        let mut promotions = self.promotions();
        promotions.0.remove(appset);
        promotions.1.remove(appset)
    }

    /// Records a change of `application`, owned by `appset`, as the watch sees it; `owned`
    /// gives the ApplicationSet's Applications as the watch holds them (read when the rollout's
    /// entries are kept on them).
    pub(super) fn observe_application(
        &self,
        appset: &ApplicationSet,
        application: &Application,
        owned: impl FnOnce() -> Vec<Arc<Application>>,
    ) {
        let name = appset.name_any();
        let mut promotions = self.promotions();
        let (watches, promote) = &mut *promotions;
        let kept = || {
            owned()
                .iter()
                .filter_map(|app| app.status.as_ref()?.rollout.clone())
                .collect()
        };
        let completes = watches.entry(name.clone()).or_default().completes_step(
            appset.status.as_ref(),
            application,
            kept,
        );
        if completes {
            tracing::debug!(appset = %name, application = %application.name_any(), "completes a step");
            promote.insert(name);
        }
    }

    /// A running controller's watch of the ApplicationSets of `namespace` (this one's or a
    /// shared one's), once it has listed.
    pub(super) async fn watched_appsets(&self, namespace: &str) -> Option<Store<ApplicationSet>> {
        self.watched.store(namespace).await
    }

    /// Remembers `store`, the ApplicationSets watched by the controller that starts now;
    /// returns the changes of the other watched namespaces' ApplicationSets.
    pub(super) fn watch_appsets(
        &self,
        store: Store<ApplicationSet>,
    ) -> UnboundedReceiver<ApplicationSet> {
        self.watched.register(&self.namespace, store)
    }

    pub(super) fn promotions(
        &self,
    ) -> std::sync::MutexGuard<'_, (BTreeMap<String, StepWatch>, BTreeSet<String>)> {
        self.promotions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn last_reconciles(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<String, LastReconcile>> {
        self.last_reconciles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}
