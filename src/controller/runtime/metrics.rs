//! The controller's Prometheus metrics, kept with `prometheus-client`: reconciles by result and
//! their durations per reconciler, reconciles running longer than a minute, Applications by sync and health status (counted when
//! scraped), sync operations by result, git webhooks by provider and result, notifications by
//! trigger, destination and result, and whether this replica leads. Encoded in the
//! OpenMetrics text format; served by [`super::endpoint`].

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Metric, Registry};

/// Counts Applications by (sync status, health status).
pub type ApplicationCounter = Box<dyn Fn() -> BTreeMap<(String, String), u64> + Send + Sync>;

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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    sync: String,
    health: String,
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
    applications: Family<StatusLabels, Gauge>,
    syncs: Family<ResultLabels, Counter>,
    /// Git webhooks by provider and result (`refreshed`, `ping`, or why one was refused).
    webhooks: Family<WebhookLabels, Counter>,
    /// Notification deliveries by trigger, destination and result (`delivered`, `failed`,
    /// `retried` for each failed attempt retried).
    notifications: Family<NotificationLabels, Counter>,
    leader: Gauge,
    /// Reconciles running longer than a minute now, per reconciler.
    slow: Family<ReconcilerLabels, Gauge>,
    /// Totals of the two reconcile families, for callers that wait for work to happen.
    reconcile_total: AtomicU64,
    application_reconcile_total: AtomicU64,
    /// Counts the Applications by status when scraped (from the controller's watch), so no
    /// reconcile pays for counting them all; one counter per namespace of Applications.
    count_applications: Mutex<BTreeMap<String, ApplicationCounter>>,
}

/// One slow reconcile, counted in `flotilla_slow_reconciles` while it lives.
#[derive(Debug)]
pub struct SlowReconcile(Gauge);

impl Drop for SlowReconcile {
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
        // The process's API requests, refusals and retries: counted by its clients.
        crate::cluster::api_server::api_requests::register(r);
        Self {
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
            applications: registered(
                r,
                (
                    "flotilla_applications",
                    "Applications by sync and health status",
                ),
                Family::default(),
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
                Gauge::default(),
            ),
            slow: registered(
                r,
                (
                    "flotilla_slow_reconciles",
                    "Reconciles running longer than a minute now, per reconciler",
                ),
                Family::default(),
            ),
            registry,
            reconcile_total: AtomicU64::new(0),
            application_reconcile_total: AtomicU64::new(0),
            count_applications: Mutex::default(),
        }
    }
}

/// `metric`, registered with its name and help; the registry keeps a clone sharing its values.
fn registered<M: Metric + Clone>(
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

    /// Counts a reconcile of `controller` as slow until the returned guard is dropped.
    #[must_use]
    pub fn slow_reconcile(&self, controller: Reconciler) -> SlowReconcile {
        let gauge = self
            .slow
            .get_or_create(&ReconcilerLabels { controller })
            .clone();
        gauge.inc();
        SlowReconcile(gauge)
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

    /// Sets what counts the Applications of `namespace` per (sync, health) status on each
    /// scrape (the counts of every namespace are added).
    pub fn count_applications_with(&self, namespace: &str, counter: ApplicationCounter) {
        if let Ok(mut applications) = self.count_applications.lock() {
            applications.insert(namespace.to_owned(), counter);
        }
    }

    /// Counts a sync operation that ended in `phase` (e.g. `Succeeded`).
    pub fn synced(&self, phase: &str) {
        self.syncs
            .get_or_create(&ResultLabels {
                result: phase.to_owned(),
            })
            .inc();
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

    /// Counts a notification to `destination` on `trigger` by `result`.
    pub fn notification(&self, trigger: &str, destination: &str, result: &str) {
        self.notifications
            .get_or_create(&NotificationLabels {
                trigger: trigger.to_owned(),
                destination: destination.to_owned(),
                result: result.to_owned(),
            })
            .inc();
    }

    /// Records whether this process holds the Lease.
    pub fn set_leader(&self, leader: bool) {
        self.leader.set(i64::from(leader));
    }

    /// Every metric in the OpenMetrics text format, the Applications counted now.
    #[must_use]
    pub fn render(&self) -> String {
        let mut counts: BTreeMap<(String, String), u64> = BTreeMap::new();
        if let Ok(counters) = self.count_applications.lock() {
            for (status, n) in counters.values().flat_map(|count| count()) {
                *counts.entry(status).or_default() += n;
            }
        }
        self.applications.clear();
        for ((sync, health), n) in counts {
            let labels = StatusLabels { sync, health };
            self.applications
                .get_or_create(&labels)
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_gauges_and_histograms_in_the_text_format() {
        let metrics = Metrics::default();
        metrics.reconciled(None);
        metrics.reconciled(None);
        metrics.reconciled(Some("RenderError"));
        metrics.set_leader(true);
        metrics.application_reconciled(None);
        metrics.synced("Succeeded");
        metrics.observe_reconcile(Reconciler::Application, Duration::from_millis(30));
        metrics.count_applications_with(
            "a",
            Box::new(|| BTreeMap::from([(("Synced".to_string(), "Healthy".to_string()), 1)])),
        );
        metrics.count_applications_with(
            "b",
            Box::new(|| BTreeMap::from([(("Synced".to_string(), "Healthy".to_string()), 2)])),
        );
        assert_eq!(metrics.reconcile_count(), 3);
        assert_eq!(metrics.application_reconcile_count(), 1);
        let text = metrics.render();
        for expected in [
            "flotilla_appset_reconciles_total{result=\"ok\"} 2\n",
            "flotilla_appset_reconciles_total{result=\"RenderError\"} 1\n",
            "flotilla_leader 1\n",
            "flotilla_application_reconciles_total{result=\"ok\"} 1\n",
            "flotilla_applications{sync=\"Synced\",health=\"Healthy\"} 3\n",
            "flotilla_sync_operations_total{result=\"Succeeded\"} 1\n",
            "flotilla_reconcile_duration_seconds_count{controller=\"Application\"} 1\n",
            "flotilla_reconcile_duration_seconds_bucket{le=\"0.04\",controller=\"Application\"} 1\n",
            "flotilla_reconcile_duration_seconds_bucket{le=\"0.02\",controller=\"Application\"} 0\n",
        ] {
            assert!(text.contains(expected), "{expected} in\n{text}");
        }
        assert!(
            text.contains("\nflotilla_source_tool_runs_total "),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn applications_are_counted_again_on_every_render() {
        let metrics = Metrics::default();
        let healthy = std::sync::Arc::new(AtomicU64::new(2));
        let counted = std::sync::Arc::clone(&healthy);
        metrics.count_applications_with(
            "ns",
            Box::new(move || {
                let n = counted.load(Ordering::Relaxed);
                if n == 0 {
                    BTreeMap::new()
                } else {
                    BTreeMap::from([(("Synced".into(), "Healthy".into()), n)])
                }
            }),
        );
        assert!(metrics.render().contains("health=\"Healthy\"} 2\n"));
        healthy.store(0, Ordering::Relaxed);
        assert!(
            !metrics.render().contains("health=\"Healthy\""),
            "a status no Application has any more is not shown"
        );
    }
}
