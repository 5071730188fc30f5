//! Helm and Kustomize sources end to end, through the controller on the real control plane: a
//! bare repository served by `git daemon` holds a small chart (values per region, a pre-install
//! migration hook, a keep-policy Secret) and a Kustomize base with a region overlay; one
//! Application deploys the chart with a release name, a values file and a parameter, another the
//! overlay with Application-level namePrefix, images and commonLabels. The hook runs (and
//! succeeds) before the StatefulSet is created, and the keep-policy Secret survives the
//! deletion of its Application. A third Application deploys the chart from a chart repository
//! served on loopback, at the newest version of a range. A two-step RollingSync ApplicationSet
//! of that chart (a range) rolls out the resolved version step by step, and the newer version
//! published in range later, again in step order. The real helm and kubectl come from FLOTILLA_HELM and
//! FLOTILLA_KUBECTL (tests/tools/install.sh), else PATH.

mod controller_support;
mod support;

use std::path::Path;

use std::time::Duration;

use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::sync::{HookType, OperationPhase, SyncPhase};
use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::DeleteParams;
use serde_json::json;

use controller_support::{setup, start};
use support::chart_repository::ChartRepository;
use support::fixture_dir::copy_dir;
use support::git_remote::{GitDaemon, Remote};
use support::two_tier_appset::{rolled_out, two_tier_appset};
use support::{apply, eventually, object, wait_until};

/// An Application of `path` in `url` with `source` fields added, synced automatically into
/// `namespace` and deleted with its resources.
fn application(
    name: &str,
    namespace: &str,
    url: &str,
    path: &str,
    source: serde_json::Value,
) -> Application {
    let mut value = json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
        "spec": {
            "project": "default",
            "source": {"repoURL": url, "targetRevision": "main", "path": path},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": {"automated": {"prune": true}}
        }
    });
    if let (Some(spec), serde_json::Value::Object(extra)) =
        (value["spec"]["source"].as_object_mut(), source)
    {
        spec.extend(extra);
    }
    object(value)
}

/// The value of `key` in `map`.
fn entry<'a>(map: &'a std::collections::BTreeMap<String, String>, key: &str) -> Option<&'a str> {
    map.get(key).map(String::as_str)
}

/// Waits until the Application's operation Succeeded.
async fn synced(api: &Api<Application>, name: &str) -> Application {
    wait_until(api, name, &format!("{name} synced"), |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| o.phase == OperationPhase::Succeeded)
    })
    .await
}

#[tokio::test]
async fn a_chart_and_an_overlay_deploy_through_the_controller() {
    let remote = Remote::new("stack");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sources");
    copy_dir(&fixtures, remote.work());
    remote.push("a chart and a kustomization");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let ns = setup("sources").await;
    support::require_node_sim(&ns.client, 1).await;
    let apps: Api<Application> = ns.api();
    let db = application(
        "db",
        &ns.name,
        &url,
        "charts/db",
        json!({"helm": {
            "releaseName": "orders",
            "valueFiles": ["values-eu.yaml"],
            "parameters": [{"name": "tier", "value": "gold"}],
            "skipCrds": true,
        }}),
    );
    let api = application(
        "api",
        &ns.name,
        &url,
        "kustomize/overlays/eu",
        json!({"kustomize": {
            "namePrefix": "eu-",
            "images": ["example.com/shop/api=registry.local/api:2.0"],
            "commonLabels": {"team": "shop"},
        }}),
    );
    apply(&apps, &db).await;
    apply(&apps, &api).await;
    let stored = apps.get("db").await.expect("stored");
    assert_eq!(
        stored
            .spec
            .source
            .helm
            .as_ref()
            .map(|h| h.release_name.as_str()),
        Some("orders"),
        "the API server keeps source.helm"
    );
    let controller = start(&ns, "sources");

    let db = synced(&apps, "db").await;
    let config = ns
        .api::<ConfigMap>()
        .get("orders-config")
        .await
        .expect("the release's ConfigMap");
    let data = config.data.unwrap_or_default();
    assert_eq!(entry(&data, "greeting"), Some("hallo"), "values-eu.yaml");
    assert_eq!(entry(&data, "tier"), Some("gold"), "the parameter");
    assert_eq!(
        entry(&data, "releaseNamespace"),
        Some(ns.name.as_str()),
        "the destination namespace is the release's"
    );
    let results = db.status.unwrap().operation_state.unwrap().resources;
    let hook = results
        .iter()
        .find(|r| r.kind == "Job")
        .expect("the migration hook in the results");
    assert_eq!(
        (hook.name.as_str(), hook.sync_phase, hook.hook_type),
        (
            "orders-migrate",
            SyncPhase::PreSync,
            Some(HookType::PreSync)
        ),
    );
    let job = ns
        .api::<Job>()
        .get("orders-migrate")
        .await
        .expect("the hook Job");
    let statefulset = ns
        .api::<StatefulSet>()
        .get("orders-db")
        .await
        .expect("the StatefulSet");
    let finished = job
        .status
        .and_then(|s| s.completion_time)
        .expect("the hook completed");
    let created = statefulset
        .metadata
        .creation_timestamp
        .expect("a creation time");
    assert!(
        finished.0 <= created.0,
        "the hook finished ({finished:?}) before the StatefulSet was created ({created:?})"
    );

    synced(&apps, "api").await;
    let deployment = ns
        .api::<Deployment>()
        .get("eu-api")
        .await
        .expect("namePrefix applied");
    let labels = deployment.metadata.labels.clone().unwrap_or_default();
    assert_eq!(entry(&labels, "team"), Some("shop"), "commonLabels");
    assert_eq!(entry(&labels, "region"), Some("eu"), "the overlay's labels");
    let image = deployment.spec.unwrap().template.spec.unwrap().containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("registry.local/api:2.0"), "images");

    apps.delete("db", &DeleteParams::default())
        .await
        .expect("deletes db");
    eventually("the db Application gone", async || {
        match apps.get_opt("db").await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(app) => Err(format!("{:#?}", app.status.map(|s| s.conditions))),
        }
    })
    .await;
    assert!(
        ns.api::<ConfigMap>()
            .get_opt("orders-config")
            .await
            .unwrap()
            .is_none(),
        "the release's objects are deleted with it"
    );
    ns.api::<Secret>()
        .get("orders-credentials")
        .await
        .expect("helm.sh/resource-policy: keep survives the deletion");
    controller.stop().await;
}

#[tokio::test]
async fn a_chart_of_a_chart_repository_deploys_at_the_newest_version_in_range() {
    let repository = ChartRepository::start(&["0.1.0", "0.1.3", "0.2.0"]);
    let ns = setup("chart-repo").await;
    support::require_node_sim(&ns.client, 1).await;
    let apps: Api<Application> = ns.api();
    let mut cache = application(
        "cache",
        &ns.name,
        &repository.server.url(),
        "",
        json!({"chart": "db", "targetRevision": "~0.1", "helm": {"values": "greeting: hej"}}),
    );
    cache.spec.source.path.clear();
    apply(&apps, &cache).await;
    let controller = start(&ns, "chart-repo");
    let synced = synced(&apps, "cache").await;
    let sync = synced.status.and_then(|s| s.sync).expect("a sync status");
    assert_eq!(sync.revision, "0.1.3", "the newest version in range");
    let config = ns
        .api::<ConfigMap>()
        .get("cache-config")
        .await
        .expect("the release of the Application's name");
    assert_eq!(
        entry(&config.data.unwrap_or_default(), "greeting"),
        Some("hej")
    );
    controller.stop().await;
}

/// The two-step RollingSync ApplicationSet `charts` (`database`, then `backend`), each
/// Application the chart `db` of `url` at the newest version of `~0.1`, without its CRD (which
/// both would own and fight over).
fn chart_appset(namespace: &str, url: &str) -> ApplicationSet {
    object(two_tier_appset(
        "charts",
        namespace,
        "source",
        json!({"repoURL": url, "chart": "db", "targetRevision": "~0.1",
               "helm": {"values": "greeting: {{.component}}", "skipCrds": true}}),
    ))
}

/// Waits until both Applications of `charts` are Healthy at chart `version` in the rollout
/// status and synced at it (`status.sync.revision`), and returns when each one's last sync
/// started (`database`, `backend`).
async fn rolled_out_at(
    appsets: &Api<ApplicationSet>,
    apps: &Api<Application>,
    version: &str,
) -> [k8s_openapi::jiff::Timestamp; 2] {
    let started = rolled_out(
        appsets,
        apps,
        "charts",
        &[version.to_owned()],
        Duration::from_secs(240),
        |name, status| {
            let revision = status.sync.unwrap_or_default().revision;
            if revision != version {
                return Err(format!("{name} synced at {revision:?}"));
            }
            let operation = status
                .operation_state
                .ok_or(format!("{name} never synced"))?;
            if operation.phase != OperationPhase::Succeeded {
                return Err(format!("{name}: {:?}", operation.phase));
            }
            Ok(operation.started_at.ok_or("no start time")?.0)
        },
    )
    .await;
    [started[0], started[1]]
}

#[tokio::test]
async fn a_rolling_sync_rolls_out_a_chart_version_step_by_step() {
    let repository = ChartRepository::start(&["0.1.0", "0.1.3", "0.2.0"]);
    let ns = setup("chart-rollout").await;
    support::require_node_sim(&ns.client, 1).await;
    let appsets: Api<ApplicationSet> = ns.api();
    let apps: Api<Application> = ns.api();
    apply(&appsets, &chart_appset(&ns.name, &repository.server.url())).await;
    let controller = start(&ns, "chart-rollout");

    let first = rolled_out_at(&appsets, &apps, "0.1.3").await;
    assert!(first[0] < first[1], "database before backend: {first:?}");
    let configs = ns.api::<ConfigMap>();
    let value = async |name: &str, key: &str| {
        let config = configs.get(name).await.expect("the chart's ConfigMap");
        entry(&config.data.unwrap_or_default(), key).map(str::to_owned)
    };
    assert_eq!(
        value("database-config", "greeting").await.as_deref(),
        Some("database")
    );
    assert_eq!(
        value("backend-config", "greeting").await.as_deref(),
        Some("backend")
    );

    // A newer version in range, with other manifests: rolled out again, in step order.
    repository.publish("0.1.5", "upgraded");
    let second = rolled_out_at(&appsets, &apps, "0.1.5").await;
    assert!(
        second[0] > first[0] && second[1] > first[1],
        "both synced again: {first:?} then {second:?}"
    );
    assert!(second[0] < second[1], "database before backend: {second:?}");
    for name in ["database-config", "backend-config"] {
        assert_eq!(value(name, "tier").await.as_deref(), Some("upgraded"));
    }
    controller.stop().await;
}
