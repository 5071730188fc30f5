//! The metrics reference page: every metric of the controller's registry as `/metrics` declares
//! it (name, type, help), with its labels. The exposition declares every registered family, but
//! a family's labels show only in its samples, so the page renders a registry given one sample
//! of each; a test fails when a registered family has none.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::markdown::{code, generated_note, table};
use crate::cluster::destinations::clients::ClusterFacts;
use crate::controller::runtime::argocd_metrics::AppInfo;
use crate::controller::runtime::metrics::{Metrics, Reconciler};
use crate::controller::runtime::observed::Observed;
use flotilla_core::api::{Application, ApplicationSet};

/// An Application and an ApplicationSet in the middle of a rollout, for the samples.
fn examples() -> (Application, ApplicationSet) {
    let app = serde_json::from_value(serde_json::json!({
        "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": "web", "namespace": "flotilla"},
        "spec": {"project": "default",
                 "source": {"repoURL": "https://git.example/shop.git", "path": "web"},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": "shop"}}
    }))
    .expect("an Application");
    let appset = serde_json::from_value(serde_json::json!({
        "apiVersion": "flotilla.dev/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "shop", "namespace": "flotilla"},
        "spec": {"generators": [], "template": {"metadata": {"name": "web"}, "spec": {
            "project": "default", "destination": {}}}},
        "status": {
            "applicationStatus": [{"application": "web", "status": "Progressing", "step": "1"}],
            "rolloutSteps": [{"step": 1, "bakeStartedAt": "2026-01-01T00:00:00Z",
                              "analysis": {"startedAt": "2026-01-01T00:05:00Z"}}],
            "rolloutRollback": {"failedStep": 2, "failure": "an Application degraded",
                                "startedAt": "2026-01-01T00:00:00Z"}
        }
    }))
    .expect("an ApplicationSet");
    (app, appset)
}

/// The exposition of a registry with one sample in each family.
fn sampled() -> String {
    let metrics = Metrics::default();
    metrics.set_leader(true);
    let (app, appset) = examples();
    metrics.reconciled(None);
    metrics.application_reconciled(None);
    metrics.observe_application_reconcile(&app, Duration::ZERO);
    let _slow = metrics.slow_reconcile(Reconciler::Application);
    let _running = metrics.reconciling(Reconciler::Application);
    let info = AppInfo::of(&app);
    let appset = Arc::new(appset);
    metrics.observe(
        "docs",
        Observed {
            applications: Box::new(move || vec![info.clone()]),
            appsets: Box::new(move || vec![Arc::clone(&appset)]),
            clusters: Box::new(|| {
                vec![ClusterFacts {
                    server: "https://kubernetes.default.svc".to_owned(),
                    name: "in-cluster".to_owned(),
                    k8s_version: "v1.33.1".to_owned(),
                    api_resources: 1,
                    objects: 1,
                    events: 1,
                }]
            }),
        },
    );
    metrics.synced(&app, "Succeeded");
    metrics.webhook("github", "refreshed");
    metrics.webhook_refreshes("annotated", 1);
    metrics
        .listener("webhook")
        .refused(crate::httpd::listener_counters::Refusal::Busy);
    metrics.notification("on-step-started", "webhook.ops", "delivered");
    metrics.trigger_evaluated("on-step-started", true);
    crate::repo::git_requests::counted(
        "https://git.example/shop.git",
        crate::repo::git_requests::GitRequest::Fetch,
        || (),
    );
    crate::cluster::api_server::k8s_requests::count(
        "https://kubernetes.default.svc",
        &http::Method::GET,
        &http::Uri::from_static("/api/v1/namespaces/shop/pods"),
        "200".to_owned(),
    );
    // The retry counters are process-wide: a server's counter exists once a client to it does.
    let _ =
        crate::cluster::api_server::throttled_retry::retries_of("https://kubernetes.default.svc/");
    metrics.render()
}

/// The page.
#[must_use]
pub fn page() -> String {
    let exposition = sampled();
    let mut help = BTreeMap::new();
    let mut kinds = Vec::new();
    let mut labels: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in exposition.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help.insert(name.to_owned(), text.trim_end_matches('.').to_owned());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            kinds.push((name.to_owned(), kind.to_owned()));
        } else if let Some((sample, rest)) = line.split_once('{') {
            let family = kinds.last().map_or(sample, |(name, _)| name.as_str());
            let set = labels.entry(family.to_owned()).or_default();
            for pair in rest.split('}').next().unwrap_or_default().split(',') {
                if let Some((label, _)) = pair.split_once('=')
                    && label != "le"
                {
                    set.insert(label.to_owned());
                }
            }
        }
    }
    let rows: Vec<Vec<String>> = kinds
        .iter()
        .map(|(name, kind)| {
            let sample = match kind.as_str() {
                "counter" => format!("{name}_total"),
                "histogram" => format!("{name}_bucket, {name}_sum, {name}_count"),
                _ => name.clone(),
            };
            let label_names: Vec<String> = labels
                .get(name)
                .into_iter()
                .flatten()
                .map(|label| code(label))
                .collect();
            vec![
                code(&sample),
                kind.clone(),
                label_names.join(", "),
                help.get(name).cloned().unwrap_or_default(),
            ]
        })
        .collect();
    format!(
        "# Metrics\n\n{}`flotilla controller --metrics-addr ADDR` serves them at `/metrics` in the \
         OpenMetrics text format, with `/healthz` and `/readyz` (ready while the replica's Lease \
         reads answer: leading or standing by; not ready from the first unanswered read). The `result` label of the reconcile counters is `ok` \
         or the failed step's reason ([reasons](reasons.md)); Applications, ApplicationSets, \
         their rollouts and the clusters synced to are read from the controller's watches when \
         scraped.\n\n{}\n{ARGOCD_NAMES}",
        generated_note(),
        table(&["Metric", "Type", "Labels", "Help"], &rows)
    )
}

/// What Argo CD's names mean in Flotilla.
const ARGOCD_NAMES: &str = "## Argo CD's metric names\n\n\
The `argocd_*` metrics, and the process, Go, gRPC and work-queue metrics Argo CD's Grafana \
dashboards chart, are served beside Flotilla's own under Argo CD's names and labels, so those \
dashboards and the alerts built on them keep working. Flotilla is one process where Argo CD runs \
several (application controller, ApplicationSet controller, repo server, API server, \
notifications controller): every one of these comes from the controller's `/metrics`.\n\n\
Recorded from what Flotilla does:\n\n\
- `argocd_app_info` — one series per Application, always 1. `repo` is its first source's \
`repoURL`; `dest_server` its destination's `server`, or its `name` when it names the cluster by \
name; `operation` is `sync` while a sync is requested, `delete` while it is deleted.\n\
- `argocd_app_sync_total` — sync operations that ended, by phase (`Succeeded`, `Failed`, \
`Error`); `dry_run` is always `false`.\n\
- `argocd_app_reconcile` — Application reconcile durations (a reconcile includes the sync it \
runs), with Argo CD's buckets.\n\
- `argocd_app_k8s_request_total` — every Kubernetes API request of the controller, by `server` \
(the API server's URL as the client reaches it), `verb`, `resource_kind` (the API resource the \
request addresses, plural as in its URL, e.g. `deployments`; empty for discovery), \
`resource_namespace` and `response_code` (`error` when no answer came). A client serves many \
Applications (watches are shared), so requests are counted per cluster: there is no `name` or \
`project` label.\n\
- `argocd_appset_info` — one series per ApplicationSet, always 1; `resource_update_status` is \
its `ResourcesUpToDate` condition's status.\n\
- `argocd_cluster_info`, `argocd_cluster_api_resources`, `argocd_cluster_api_resource_objects`, \
`argocd_cluster_events_total` — per cluster the controller has synced to (its own as \
`https://kubernetes.default.svc`): the resource types it watches there, the tracked objects \
those watches hold, and the watch events received; `k8s_version` is the version its API \
server reports (read once).\n\
- `argocd_git_request_total`, `argocd_git_request_duration_seconds` — per repository: \
`request_type=\"fetch\"` for each clone or fetch of the repository's mirror, \
`request_type=\"ls-remote\"` for each revision resolved to a commit (Argo CD asks the remote \
with `git ls-remote`; Flotilla resolves in its mirror, fetched first unless a fetch within \
`--repo-refresh` serves).\n\
- `argocd_notifications_deliveries_total` — notifications delivered (`succeeded=\"true\"`) or \
given up (`\"false\"`); `service` is the destination (`webhook.NAME`, `slack.NAME`). \
`argocd_notifications_trigger_eval_total` — each event of an object checked against the \
triggers, by trigger `name`; `triggered` is whether it was due to a destination.\n\
- `workqueue_depth` — the reconciles running now: `name=\"app_reconciliation_queue\"` for \
Applications, `\"applicationset\"` for ApplicationSets (objects waiting for their turn are not \
counted).\n\
- `process_cpu_seconds_total`, `process_start_time_seconds` — the process's own, from `/proc`.\n\
- `go_goroutines` — the tokio tasks alive (Flotilla's unit of concurrency).\n\
- `go_memstats_heap_alloc_bytes` — the process's resident memory in bytes (Flotilla is not a \
Go program; this is the closest figure of its memory).\n\n\
Always 0, because what they count never happens in Flotilla (served so the dashboards' panels \
show 0 instead of no data):\n\n\
- `go_gc_duration_seconds` — Rust has no garbage collector, so there are no collection pauses.\n\
- `grpc_server_handled_total` — Flotilla serves no gRPC API; one series per service Argo CD's \
dashboard charts.\n\
- `argocd_redis_request_total` — Flotilla uses no Redis.\n\
- `argocd_kubectl_exec_pending` — Flotilla never runs kubectl (it applies through the API).\n\n\
Flotilla's own rollout metrics (`flotilla_rollout_*`) are charted by the Grafana dashboard \
`deploy/grafana/flotilla-rollouts.json`; import it into Grafana with a Prometheus data source \
that scrapes the controller.\n";

#[cfg(test)]
mod tests {
    use super::sampled;

    /// The families of an exposition that have no sample: their labels would be missing from the
    /// page.
    fn unsampled(exposition: &str) -> Vec<String> {
        let mut families: Vec<(String, bool)> = Vec::new();
        for line in exposition.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let name = rest.split(' ').next().unwrap_or(rest);
                families.push((name.to_owned(), false));
            } else if !line.starts_with('#')
                && let Some((name, seen)) = families.last_mut()
                && line.starts_with(name.as_str())
            {
                *seen = true;
            }
        }
        families
            .into_iter()
            .filter(|(_, seen)| !seen)
            .map(|(name, _)| name)
            .collect()
    }

    #[test]
    fn every_registered_family_is_sampled_so_the_page_shows_its_labels() {
        let missing = unsampled(&sampled());
        assert!(
            missing.is_empty(),
            "give {missing:?} a sample in `sampled()`: a family without one shows no labels"
        );
    }

    #[test]
    fn a_family_without_a_sample_is_found() {
        let exposition = "# HELP a_total A.\n# TYPE a counter\na_total{result=\"ok\"} 1\n\
                          # HELP b B.\n# TYPE b gauge\n# EOF\n";
        assert_eq!(unsampled(exposition), vec!["b".to_owned()]);
    }
}
