//! The controller's Prometheus metrics, kept with `prometheus-client`: reconciles by result and
//! their durations per reconciler, reconciles running now and those running longer than a
//! minute, sync operations by result, git webhooks by provider and result and the Applications
//! they refreshed, notifications by trigger, destination and result, and whether this replica
//! leads; what the watches hold, read when scraped ([`super::observed`]); Argo CD's metric names beside them
//! ([`super::argocd_metrics`], [`crate::cluster::api_server::k8s_requests`], [`super::process_metrics`], git
//! requests). Encoded in the OpenMetrics text format; served by [`super::endpoint`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use flotilla_core::api::Application;

use crate::httpd::listener_counters::{ListenerCounters, ListenerFamilies};
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};

use super::argocd_metrics::{ArgoCdMetrics, reconcile_labels};
use super::observed::{Observed, ObservedCollector};
use super::process_metrics::ProcessCollector;

/// Which reconciler a duration is of.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, EncodeLabelValue)]
pub enum Reconciler {
    ApplicationSet,
    Application,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReconcilerLabels {
    controller: Reconciler,
}

/// Argo CD's `workqueue_depth` label: the name of its work queue a reconciler's is.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabels {
    name: &'static str,
}

impl Reconciler {
    fn queue(self) -> QueueLabels {
        QueueLabels {
            name: match self {
                Self::Application => "app_reconciliation_queue",
                Self::ApplicationSet => "applicationset",
            },
        }
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    provider: String,
    result: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NotificationLabels {
    trigger: String,
    destination: String,
    result: String,
}

type DurationFamily = Family<ReconcilerLabels, Histogram, fn() -> Histogram>;

/// The metrics of one controller process.
pub struct Metrics {
    registry: Registry,
    /// ApplicationSet reconciles by result: `ok` or the failed step's reason.
    reconciles: Family<ResultLabels, Counter>,
    /// Application reconciles by result.
    application_reconciles: Family<ResultLabels, Counter>,
    durations: DurationFamily,
    syncs: Family<ResultLabels, Counter>,
    /// Git webhooks by provider and result (`refreshed`, `ping`, or why one was refused).
    webhooks: Family<WebhookLabels, Counter>,
    /// The Applications pushes asked to refresh, by result (`annotated`, `failed`).
    webhook_refreshes: Family<ResultLabels, Counter>,
    /// Notification deliveries by trigger, destination and result (`delivered`, `failed`,
    /// `retried` for each failed attempt retried).
    notifications: Family<NotificationLabels, Counter>,
    leader: Gauge,
    /// Times this process stopped acting because its Lease was not renewed in time or was taken.
    leadership_lost: Counter,
    /// Reconciles running longer than a minute now, per reconciler.
    slow: Family<ReconcilerLabels, Gauge>,
    /// Reconciles running now, per reconciler (Argo CD's `workqueue_depth`).
    running: Family<QueueLabels, Gauge>,
    argocd: ArgoCdMetrics,
    /// The HTTP listeners' connections and refusals.
    listeners: ListenerFamilies,
    /// What the watches of each namespace hold, read when scraped.
    observed: ObservedCollector,
    /// Totals of the two reconcile families, for callers that wait for work to happen.
    reconcile_total: AtomicU64,
    application_reconcile_total: AtomicU64,
}

/// One reconcile counted in a gauge (`flotilla_slow_reconciles`, `workqueue_depth`) while it
/// lives.
#[derive(Debug)]
pub struct Counted(Gauge);

impl Counted {
    fn new(gauge: &Gauge) -> Self {
        gauge.inc();
        Self(gauge.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// Reconcile durations from 5 ms to about 3 minutes (an Application's reconcile includes its
/// sync).
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let r = &mut registry;
        let by_result = Family::default;
        // The process's generator tool runs: counted where they run.
        r.register(
            "flotilla_source_tool_runs",
            "helm and kustomize runs (none for sources in the generation cache) and Jsonnet evaluations",
            crate::source::run::runs(),
        );
        // The process's API retries and requests: counted by its clients.
        r.register(
            "flotilla_api_retries",
            "Requests sent again after HTTP 429, 503 or 504, per Kubernetes API server",
            crate::cluster::api_server::throttled_retry::retries(),
        );
        r.register(
            "argocd_app_k8s_request",
            "Kubernetes API requests by server, verb, resource, namespace and response code (Argo CD's name)",
            crate::cluster::api_server::k8s_requests::requests(),
        );
        r.register(
            "argocd_git_request",
            "git fetches and revision resolutions by repository (Argo CD's name)",
            crate::repo::git_requests::requests(),
        );
        r.register(
            "argocd_git_request_duration_seconds",
            "How long git fetches and revision resolutions take (Argo CD's name)",
            crate::repo::git_requests::durations(),
        );
        let leader = Gauge::default();
        let observed = ObservedCollector::new(leader.clone());
        r.register_collector(Box::new(observed.clone()));
        r.register_collector(Box::new(ProcessCollector));
        let argocd = ArgoCdMetrics::registered(r);
        let listeners = ListenerFamilies::default();
        listeners.register(r);
        let metrics = Self {
            reconciles: registered(
                r,
                (
                    "flotilla_appset_reconciles",
                    "ApplicationSet reconciles by result",
                ),
                by_result(),
            ),
            application_reconciles: registered(
                r,
                (
                    "flotilla_application_reconciles",
                    "Application reconciles by result",
                ),
                by_result(),
            ),
            durations: registered(
                r,
                (
                    "flotilla_reconcile_duration_seconds",
                    "How long reconciles take, per reconciler",
                ),
                Family::new_with_constructor(duration_histogram),
            ),
            syncs: registered(
                r,
                ("flotilla_sync_operations", "Sync operations by result"),
                by_result(),
            ),
            webhooks: registered(
                r,
                (
                    "flotilla_webhook_requests",
                    "Git webhook requests by provider and result",
                ),
                Family::default(),
            ),
            webhook_refreshes: registered(
                r,
                (
                    "flotilla_webhook_application_refreshes",
                    "Applications git pushes asked to refresh, by result of the annotation write",
                ),
                by_result(),
            ),
            notifications: registered(
                r,
                (
                    "flotilla_notifications",
                    "Notification deliveries by trigger, destination and result",
                ),
                Family::default(),
            ),
            leader: registered(
                r,
                (
                    "flotilla_leader",
                    "Whether this process holds the controller Lease",
                ),
                leader,
            ),
            leadership_lost: registered(
                r,
                (
                    "flotilla_leadership_lost",
                    "Times this process stopped acting because its Lease was not renewed by the renew deadline or was taken by another replica",
                ),
                Counter::default(),
            ),
            slow: registered(
                r,
                (
                    "flotilla_slow_reconciles",
                    "Reconciles running longer than a minute now, per reconciler",
                ),
                Family::default(),
            ),
            running: registered(
                r,
                (
                    "workqueue_depth",
                    "Reconciles running now, per reconciler (Argo CD's name)",
                ),
                Family::default(),
            ),
            argocd,
            listeners,
            observed,
            registry,
            reconcile_total: AtomicU64::new(0),
            application_reconcile_total: AtomicU64::new(0),
        };
        // The gauges of both reconcilers are served from the start: 0 until one runs.
        for controller in [Reconciler::Application, Reconciler::ApplicationSet] {
            metrics
                .slow
                .get_or_create(&ReconcilerLabels { controller })
                .set(0);
            metrics.running.get_or_create(&controller.queue()).set(0);
        }
        metrics
    }
}

/// `metric`, registered with its name and help; the registry keeps a clone sharing its values.
pub(super) fn registered<M: Metric + Clone>(
    registry: &mut Registry,
    (name, help): (&str, &str),
    metric: M,
) -> M {
    registry.register(name, help, metric.clone());
    metric
}

fn result(failure: Option<&str>) -> ResultLabels {
    ResultLabels {
        result: failure.unwrap_or("ok").to_owned(),
    }
}

impl Metrics {
    /// Counts an ApplicationSet reconcile that succeeded (`None`) or failed with `reason`.
    pub fn reconciled(&self, failure: Option<&'static str>) {
        self.reconciles.get_or_create(&result(failure)).inc();
        self.reconcile_total.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an Application reconcile that succeeded (`None`) or failed with `reason`.
    pub fn application_reconciled(&self, failure: Option<&'static str>) {
        self.application_reconciles
            .get_or_create(&result(failure))
            .inc();
        self.application_reconcile_total
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Records how long one reconcile took.
    pub fn observe_reconcile(&self, controller: Reconciler, took: Duration) {
        self.durations
            .get_or_create(&ReconcilerLabels { controller })
            .observe(took.as_secs_f64());
    }

    /// Records how long one reconcile of `app` took (in Argo CD's `argocd_app_reconcile` too).
    pub fn observe_application_reconcile(&self, app: &Application, took: Duration) {
        self.observe_reconcile(Reconciler::Application, took);
        let (namespace, dest_server) = reconcile_labels(app);
        self.argocd.reconciled(&namespace, &dest_server, took);
    }

    /// Counts a reconcile of `controller` as slow until the returned guard is dropped.
    #[must_use]
    pub fn slow_reconcile(&self, controller: Reconciler) -> Counted {
        Counted::new(&self.slow.get_or_create(&ReconcilerLabels { controller }))
    }

    /// Counts a reconcile of `controller` as running until the returned guard is dropped.
    #[must_use]
    pub fn reconciling(&self, controller: Reconciler) -> Counted {
        Counted::new(&self.running.get_or_create(&controller.queue()))
    }

    /// ApplicationSet reconciles counted so far, successful or not.
    #[must_use]
    pub fn reconcile_count(&self) -> u64 {
        self.reconcile_total.load(Ordering::Relaxed)
    }

    /// Application reconciles counted so far, successful or not.
    #[must_use]
    pub fn application_reconcile_count(&self) -> u64 {
        self.application_reconcile_total.load(Ordering::Relaxed)
    }

    /// Sets what the controller of `namespace` watches, read on each scrape (every
    /// namespace's are added up).
    pub fn observe(&self, namespace: &str, observed: Observed) {
        self.observed.set(namespace, observed);
    }

    /// Counts a sync operation of `app` that ended in `phase` (e.g. `Succeeded`).
    pub fn synced(&self, app: &Application, phase: &str) {
        self.syncs
            .get_or_create(&ResultLabels {
                result: phase.to_owned(),
            })
            .inc();
        self.argocd.synced(app, phase);
    }

    /// The counters of the HTTP listener called `listener` (`metrics`, `web`, `webhook`).
    #[must_use]
    pub fn listener(&self, listener: &str) -> ListenerCounters {
        self.listeners.listener(listener)
    }

    /// Counts a git webhook request of `provider` (`unknown` when none was recognised) by
    /// `result`.
    pub fn webhook(&self, provider: &str, result: &str) {
        self.webhooks
            .get_or_create(&WebhookLabels {
                provider: provider.to_owned(),
                result: result.to_owned(),
            })
            .inc();
    }

    /// Counts `count` Applications a push asked to refresh by `result` (`annotated`, `failed`).
    pub fn webhook_refreshes(&self, result: &str, count: usize) {
        self.webhook_refreshes
            .get_or_create(&ResultLabels {
                result: result.to_owned(),
            })
            .inc_by(count as u64);
    }

    /// Counts a notification to `destination` on `trigger` by `result`.
    /// A delivery that ended (`delivered` or `failed`) counts in Argo CD's
    /// `argocd_notifications_deliveries_total` too, its service being the destination.
    pub fn notification(&self, trigger: &str, destination: &str, result: &str) {
        self.notifications
            .get_or_create(&NotificationLabels {
                trigger: trigger.to_owned(),
                destination: destination.to_owned(),
                result: result.to_owned(),
            })
            .inc();
        if let "delivered" | "failed" = result {
            self.argocd
                .delivered(trigger, destination, result == "delivered");
        }
    }

    /// Counts an evaluation of notification `trigger` that fired or not.
    pub fn trigger_evaluated(&self, trigger: &str, fired: bool) {
        self.argocd.trigger_evaluated(trigger, fired);
    }

    /// Records whether this process holds the Lease.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Counts a loss of the Lease (not a release at shutdown).
    pub fn leadership_lost(&self) {
        self.leadership_lost.inc();
    }

    /// Every metric in the OpenMetrics text format, what the watches hold read now.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::controller::runtime::argocd_metrics::AppInfo;

    /// An Application `name` of namespace `ns` in project `default`, synced and healthy.
    fn application(ns: &str, name: &str) -> Application {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"project": "default",
                     "source": {"repoURL": "https://git.example/shop.git", "path": "web"},
                     "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"},
                     "syncPolicy": {"automated": {}}},
            "status": {"sync": {"status": "Synced"}, "health": {"status": "Healthy"}}
        }))
        .unwrap()
    }

    /// Observes `apps` as the Applications of `namespace`, with no ApplicationSet or cluster.
    fn observe_applications(metrics: &Metrics, namespace: &str, apps: Vec<AppInfo>) {
        metrics.observe(
            namespace,
            Observed {
                applications: Box::new(move || apps.clone()),
                appsets: Box::new(Vec::new),
                clusters: Box::new(Vec::new),
            },
        );
    }

    #[test]
    fn renders_counters_gauges_and_histograms_in_the_text_format() {
        let metrics = Metrics::default();
        metrics.reconciled(None);
        metrics.reconciled(None);
        metrics.reconciled(Some("RenderError"));
        metrics.set_leader(true);
        metrics.leadership_lost();
        metrics.application_reconciled(None);
        let app = application("a", "web");
        metrics.synced(&app, "Succeeded");
        metrics.synced(&app, "Succeeded");
        metrics.observe_application_reconcile(&app, Duration::from_millis(30));
        observe_applications(&metrics, "a", vec![AppInfo::of(&app)]);
        let other = application("b", "api");
        observe_applications(
            &metrics,
            "b",
            vec![AppInfo::of(&other), AppInfo::of(&application("b", "db"))],
        );
        let _running = metrics.reconciling(Reconciler::Application);
        assert_eq!(metrics.reconcile_count(), 3);
        assert_eq!(metrics.application_reconcile_count(), 1);
        let text = metrics.render();
        for expected in [
            "flotilla_appset_reconciles_total{result=\"ok\"} 2\n",
            "flotilla_appset_reconciles_total{result=\"RenderError\"} 1\n",
            "flotilla_leader 1\n",
            "flotilla_leadership_lost_total 1\n",
            "flotilla_application_reconciles_total{result=\"ok\"} 1\n",
            "flotilla_applications{sync=\"Synced\",health=\"Healthy\"} 3\n",
            "flotilla_sync_operations_total{result=\"Succeeded\"} 2\n",
            "flotilla_reconcile_duration_seconds_count{controller=\"Application\"} 1\n",
            "flotilla_reconcile_duration_seconds_bucket{le=\"0.04\",controller=\"Application\"} 1\n",
            "flotilla_reconcile_duration_seconds_bucket{le=\"0.02\",controller=\"Application\"} 0\n",
            "argocd_app_sync_total{namespace=\"a\",name=\"web\",project=\"default\",\
             dest_server=\"https://kubernetes.default.svc\",phase=\"Succeeded\",dry_run=\"false\"} 2\n",
            "argocd_app_info{namespace=\"b\",name=\"api\",project=\"default\",autosync_enabled=\"true\",\
             repo=\"https://git.example/shop.git\",dest_server=\"https://kubernetes.default.svc\",\
             dest_namespace=\"shop\",sync_status=\"Synced\",health_status=\"Healthy\",operation=\"\"} 1\n",
            "argocd_app_reconcile_bucket{le=\"0.25\",namespace=\"a\",\
             dest_server=\"https://kubernetes.default.svc\"} 1\n",
            "workqueue_depth{name=\"app_reconciliation_queue\"} 1\n",
            "go_gc_duration_seconds{quantile=\"1\"} 0\n",
        ] {
            assert!(text.contains(expected), "{expected} in\n{text}");
        }
        for family in [
            "\nflotilla_source_tool_runs_total ",
            "\nprocess_cpu_seconds_total ",
            "\nprocess_start_time_seconds ",
            "\ngo_goroutines ",
            "\ngo_memstats_heap_alloc_bytes ",
        ] {
            assert!(text.contains(family), "{family} in\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn applications_are_listed_again_on_every_render() {
        let metrics = Metrics::default();
        let healthy = Arc::new(AtomicU64::new(2));
        let counted = Arc::clone(&healthy);
        metrics.observe(
            "ns",
            Observed {
                applications: Box::new(move || {
                    (0..counted.load(Ordering::Relaxed))
                        .map(|n| AppInfo::of(&application("ns", &format!("app-{n}"))))
                        .collect()
                }),
                appsets: Box::new(Vec::new),
                clusters: Box::new(Vec::new),
            },
        );
        assert!(metrics.render().contains("health=\"Healthy\"} 2\n"));
        healthy.store(0, Ordering::Relaxed);
        let text = metrics.render();
        assert!(
            !text.contains("health=\"Healthy\"") && !text.contains("name=\"app-0\""),
            "an Application gone is not shown:\n{text}"
        );
    }
}
