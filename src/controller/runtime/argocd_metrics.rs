//! The metrics Argo CD's application controller, ApplicationSet controller and notifications
//! controller serve, under their names and with their labels, recorded from what Flotilla does,
//! so the dashboards and alerts written for Argo CD keep working: syncs by phase
//! (`argocd_app_sync_total`), reconcile durations (`argocd_app_reconcile`), notification
//! deliveries and trigger evaluations, and each Application's [`AppInfo`] (`argocd_app_info`,
//! read from the watch when scraped, see [`super::observed`]).

use std::time::Duration;

use flotilla_core::api::Application;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::metrics::registered;

/// One Application as `argocd_app_info` shows it, with Argo CD's labels: its namespace, name
/// and project, whether automated sync is enabled, its (first) source's repository, its
/// destination, its sync and health status (`Unknown` before the first compare) and the
/// operation it runs (`sync`, `delete` while it is deleted, or empty).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AppInfo {
    pub namespace: String,
    pub name: String,
    pub project: String,
    pub autosync_enabled: String,
    pub repo: String,
    pub dest_server: String,
    pub dest_namespace: String,
    pub sync_status: String,
    pub health_status: String,
    pub operation: String,
}

impl AppInfo {
    /// What `app` shows. The destination is its `server`, or its `name` when it names the
    /// cluster by name.
    #[must_use]
    pub fn of(app: &Application) -> Self {
        let spec = &app.spec;
        let status = app.status.as_ref();
        let source = spec.sources.first().unwrap_or(&spec.source);
        let operation = if app.metadata.deletion_timestamp.is_some() {
            "delete"
        } else if spec.operation.is_some() {
            "sync"
        } else {
            ""
        };
        let autosync = spec
            .sync_policy
            .as_ref()
            .is_some_and(|policy| policy.automated_enabled().is_some());
        Self {
            namespace: app.metadata.namespace.clone().unwrap_or_default(),
            name: app.metadata.name.clone().unwrap_or_default(),
            project: spec.project.clone(),
            autosync_enabled: autosync.to_string(),
            repo: source.repo_url.clone(),
            dest_server: destination_server(app),
            dest_namespace: spec.destination.namespace.clone().unwrap_or_default(),
            sync_status: status
                .and_then(|s| s.sync.as_ref())
                .map_or("Unknown", |s| s.status.as_str())
                .to_owned(),
            health_status: status
                .and_then(|s| s.health.as_ref())
                .map_or("Unknown", |h| h.status.as_str())
                .to_owned(),
            operation: operation.to_owned(),
        }
    }
}

/// The destination cluster of `app` as the `dest_server` label shows it: its `server`, else its
/// `name`.
fn destination_server(app: &Application) -> String {
    let destination = &app.spec.destination;
    destination
        .server
        .clone()
        .or_else(|| destination.name.clone())
        .unwrap_or_default()
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SyncLabels {
    namespace: String,
    name: String,
    project: String,
    dest_server: String,
    phase: String,
    dry_run: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcileLabels {
    namespace: String,
    dest_server: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeliveryLabels {
    trigger: String,
    service: String,
    succeeded: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TriggerLabels {
    name: String,
    triggered: String,
}

type ReconcileFamily = Family<ReconcileLabels, Histogram, fn() -> Histogram>;

/// Argo CD's event metrics, recorded as Flotilla's controllers work.
pub struct ArgoCdMetrics {
    syncs: Family<SyncLabels, Counter>,
    reconciles: ReconcileFamily,
    deliveries: Family<DeliveryLabels, Counter>,
    triggers: Family<TriggerLabels, Counter>,
}

/// Argo CD's buckets for `argocd_app_reconcile` (seconds).
fn reconcile_histogram() -> Histogram {
    Histogram::new([0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0])
}

impl ArgoCdMetrics {
    /// The families, registered in `registry` under Argo CD's names.
    pub fn registered(registry: &mut Registry) -> Self {
        let r = registry;
        Self {
            syncs: registered(
                r,
                (
                    "argocd_app_sync",
                    "Sync operations of Applications by phase (Argo CD's name)",
                ),
                Family::default(),
            ),
            reconciles: registered(
                r,
                (
                    "argocd_app_reconcile",
                    "Application reconcile durations in seconds (Argo CD's name)",
                ),
                Family::new_with_constructor(reconcile_histogram),
            ),
            deliveries: registered(
                r,
                (
                    "argocd_notifications_deliveries",
                    "Notification deliveries by trigger, service and success (Argo CD's name)",
                ),
                Family::default(),
            ),
            triggers: registered(
                r,
                (
                    "argocd_notifications_trigger_eval",
                    "Trigger evaluations by trigger and whether it fired (Argo CD's name)",
                ),
                Family::default(),
            ),
        }
    }

    /// Counts a sync operation of `app` that ended in `phase`.
    pub fn synced(&self, app: &Application, phase: &str) {
        let info = AppInfo::of(app);
        self.syncs
            .get_or_create(&SyncLabels {
                namespace: info.namespace,
                name: info.name,
                project: info.project,
                dest_server: info.dest_server,
                phase: phase.to_owned(),
                dry_run: "false".to_owned(),
            })
            .inc();
    }

    /// Records a reconcile of an Application of `namespace` with destination `dest_server`.
    pub fn reconciled(&self, namespace: &str, dest_server: &str, took: Duration) {
        self.reconciles
            .get_or_create(&ReconcileLabels {
                namespace: namespace.to_owned(),
                dest_server: dest_server.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts a notification on `trigger` through `service` (the destination's service, e.g.
    /// `webhook` or `slack`), delivered or not.
    pub fn delivered(&self, trigger: &str, service: &str, succeeded: bool) {
        self.deliveries
            .get_or_create(&DeliveryLabels {
                trigger: trigger.to_owned(),
                service: service.to_owned(),
                succeeded: succeeded.to_string(),
            })
            .inc();
    }

    /// Counts an evaluation of `trigger` that fired or not.
    pub fn trigger_evaluated(&self, trigger: &str, triggered: bool) {
        self.triggers
            .get_or_create(&TriggerLabels {
                name: trigger.to_owned(),
                triggered: triggered.to_string(),
            })
            .inc();
    }
}

/// `app`'s namespace and destination as `argocd_app_reconcile` labels them.
#[must_use]
pub fn reconcile_labels(app: &Application) -> (String, String) {
    (
        app.metadata.namespace.clone().unwrap_or_default(),
        destination_server(app),
    )
}
