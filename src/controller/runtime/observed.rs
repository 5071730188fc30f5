//! The metrics read from the controllers' watches when scraped, so no reconcile pays for them:
//! Applications by status (`flotilla_applications`) and one by one (`argocd_app_info`),
//! ApplicationSets (`argocd_appset_info`) and their rollouts ([`super::rollout_metrics`]), and
//! the clusters the controller syncs to with what it watches there (`argocd_cluster_*`). Each
//! namespace of Applications registers what it watches as an [`Observed`]; a scrape adds them
//! up.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use flotilla_core::api::ApplicationSet;
use flotilla_core::api::application_set_status::{ConditionStatus, ConditionType};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

use super::argocd_metrics::AppInfo;
use super::rollout_metrics;
use crate::cluster::destinations::clients::ClusterFacts;

/// Lists something a controller watches, when scraped.
pub type Lister<T> = Box<dyn Fn() -> Vec<T> + Send + Sync>;

/// What one namespace's Application controller watches.
pub struct Observed {
    /// Its Applications (only this replica's when sharded).
    pub applications: Lister<AppInfo>,
    /// The ApplicationSets of the namespace (shown while this replica leads).
    pub appsets: Lister<Arc<ApplicationSet>>,
    /// The clusters it has synced to.
    pub clusters: Lister<ClusterFacts>,
}

/// The [`Observed`] of every namespace, encoded on each scrape. ApplicationSets (and their
/// rollouts) are shown only while this replica leads, as only the leader reconciles them:
/// summed over the replicas, each counts once.
#[derive(Clone)]
pub struct ObservedCollector {
    observed: Arc<Mutex<BTreeMap<String, Observed>>>,
    leader: Gauge,
}

impl fmt::Debug for ObservedCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ObservedCollector")
    }
}

impl ObservedCollector {
    /// Shows what is registered; ApplicationSets while `leader` is 1.
    #[must_use]
    pub fn new(leader: Gauge) -> Self {
        Self {
            observed: Arc::default(),
            leader,
        }
    }

    /// Sets what `namespace` watches (replacing what it registered before).
    pub fn set(&self, namespace: &str, observed: Observed) {
        self.observed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(namespace.to_owned(), observed);
    }
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    sync: String,
    health: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AppSetLabels {
    namespace: String,
    name: String,
    resource_update_status: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterInfoLabels {
    server: String,
    name: String,
    k8s_version: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

/// Writes `metric` as the family `name`.
///
/// # Errors
/// Only when writing the text fails.
pub fn encode(
    encoder: &mut DescriptorEncoder,
    (name, help): (&str, &str),
    metric: &impl EncodeMetric,
) -> fmt::Result {
    metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)
}

fn count(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Collector for ObservedCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let (mut apps, mut appsets, mut clusters) = (Vec::new(), Vec::new(), Vec::new());
        let leading = self.leader.get() == 1;
        for observed in self
            .observed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
        {
            apps.extend((observed.applications)());
            if leading {
                appsets.extend((observed.appsets)());
            }
            clusters.extend((observed.clusters)());
        }
        let by_status: Family<StatusLabels, Gauge> = Family::default();
        let info: Family<AppInfo, Gauge> = Family::default();
        for app in apps {
            by_status
                .get_or_create(&StatusLabels {
                    sync: app.sync_status.clone(),
                    health: app.health_status.clone(),
                })
                .inc();
            info.get_or_create(&app).set(1);
        }
        let e = &mut encoder;
        encode(
            e,
            (
                "flotilla_applications",
                "Applications by sync and health status",
            ),
            &by_status,
        )?;
        encode(
            e,
            (
                "argocd_app_info",
                "Information about each Application, always 1 (Argo CD's name)",
            ),
            &info,
        )?;
        let appset_info: Family<AppSetLabels, Gauge> = Family::default();
        for appset in &appsets {
            appset_info.get_or_create(&appset_labels(appset)).set(1);
        }
        encode(
            e,
            (
                "argocd_appset_info",
                "Information about each ApplicationSet, always 1 (Argo CD's name)",
            ),
            &appset_info,
        )?;
        rollout_metrics::encode_rollouts(e, &appsets)?;
        encode_clusters(e, &clusters)
    }
}

/// An ApplicationSet's `argocd_appset_info` labels: `resource_update_status` is the status of
/// its `ResourcesUpToDate` condition (`Unknown` before it has one).
fn appset_labels(appset: &ApplicationSet) -> AppSetLabels {
    let status = appset
        .status
        .as_ref()
        .and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == ConditionType::ResourcesUpToDate)
        })
        .map_or(ConditionStatus::Unknown, |c| c.status);
    AppSetLabels {
        namespace: appset.metadata.namespace.clone().unwrap_or_default(),
        name: appset.metadata.name.clone().unwrap_or_default(),
        resource_update_status: format!("{status:?}"),
    }
}

/// `argocd_cluster_info`, `argocd_cluster_api_resources`, `argocd_cluster_api_resource_objects`
/// and `argocd_cluster_events_total`, per server (added up over the namespaces' controllers).
fn encode_clusters(e: &mut DescriptorEncoder, clusters: &[ClusterFacts]) -> fmt::Result {
    let info: Family<ClusterInfoLabels, Gauge> = Family::default();
    let resources: Family<ServerLabels, Gauge> = Family::default();
    let objects: Family<ServerLabels, Gauge> = Family::default();
    let events: Family<ServerLabels, Counter> = Family::default();
    for cluster in clusters {
        info.get_or_create(&ClusterInfoLabels {
            server: cluster.server.clone(),
            name: cluster.name.clone(),
            k8s_version: cluster.k8s_version.clone(),
        })
        .set(1);
        let server = ServerLabels {
            server: cluster.server.clone(),
        };
        resources
            .get_or_create(&server)
            .inc_by(count(cluster.api_resources));
        objects
            .get_or_create(&server)
            .inc_by(count(cluster.objects));
        events.get_or_create(&server).inc_by(cluster.events);
    }
    encode(
        e,
        (
            "argocd_cluster_info",
            "Each cluster the controller syncs to, always 1 (Argo CD's name)",
        ),
        &info,
    )?;
    encode(
        e,
        (
            "argocd_cluster_api_resources",
            "Resource types watched per cluster (Argo CD's name)",
        ),
        &resources,
    )?;
    encode(
        e,
        (
            "argocd_cluster_api_resource_objects",
            "Tracked objects held by the watches per cluster (Argo CD's name)",
        ),
        &objects,
    )?;
    encode(
        e,
        (
            "argocd_cluster_events",
            "Watch events received per cluster (Argo CD's name)",
        ),
        &events,
    )
}
