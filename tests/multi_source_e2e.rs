//! Multi-source Applications (`spec.sources`) end to end, through the controller on the real
//! control plane. A chart of a chart repository served on loopback (a version range) takes its
//! values from `$values/envs/prod.yaml` of a bare repository served by `git daemon` (`ref:
//! values`): the prod values are applied and the status holds both revisions. An unknown `$ref`
//! is a ComparisonError naming the Application, the source and the field, and nothing is
//! applied. A RollingSync ApplicationSet whose template has `sources` (a chart in one
//! repository, its values in another) rolls out step by step, then again, in order, when only
//! the values repository changes: the gate compares both revisions. With the chart from the
//! chart repository (a range) instead, the gate compares its resolved version and the values
//! commit, and a newer chart version published in range is rolled out in order too.

mod controller_support;
mod support;

use std::time::Duration;

use flotilla_core::api::application::ApplicationConditionType;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::{Value, json};

use controller_support::{setup, start};
use support::chart_repository::ChartRepository;
use support::git_remote::{GitDaemon, Remote};
use support::two_tier_appset::two_tier_appset;
use support::{apply, object, wait_until};

const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(240);

/// An Application `name` with `sources`, synced automatically into `namespace`.
fn application(name: &str, namespace: &str, sources: Value) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
        "spec": {
            "project": "default",
            "sources": sources,
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": {"automated": {"prune": true}}
        }
    }))
}

/// A bare repository holding `files`, served by `git daemon`; its URL and commit.
fn served(name: &str, files: &[(&str, &str)]) -> (Remote, GitDaemon, String, String) {
    let remote = Remote::new(name);
    for (path, content) in files {
        remote.write(path, content);
    }
    let commit = remote.push("first");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    (remote, daemon, url, commit)
}

/// A ConfigMap's `greeting`, if it exists.
async fn greeting(api: &Api<ConfigMap>, name: &str) -> Option<String> {
    let config = api.get_opt(name).await.expect("reads ConfigMaps")?;
    config.data.unwrap_or_default().get("greeting").cloned()
}

#[tokio::test]
async fn a_chart_takes_its_values_from_a_ref_source() {
    let repository = ChartRepository::start(&["0.1.0", "0.1.3", "0.2.0"]);
    let (_values, _daemon, values_url, commit) = served(
        "values",
        &[("envs/prod.yaml", "greeting: prod-hello\ntier: platinum\n")],
    );
    let ns = setup("multi-source").await;
    support::require_node_sim(&ns.client, 1).await;
    let apps: Api<Application> = ns.api();
    let chart = |value_file: &str| {
        json!({"repoURL": repository.server.url(), "chart": "db", "targetRevision": "~0.1",
               "helm": {"valueFiles": [value_file]}})
    };
    let values = json!({"repoURL": values_url, "targetRevision": "main", "ref": "values"});
    let shop = application(
        "shop",
        &ns.name,
        json!([chart("$values/envs/prod.yaml"), values]),
    );
    let broken = application(
        "broken",
        &ns.name,
        json!([chart("$nope/envs/prod.yaml"), values]),
    );
    apply(&apps, &shop).await;
    apply(&apps, &broken).await;
    let stored = apps.get("shop").await.expect("stored");
    assert_eq!(
        stored
            .spec
            .sources
            .iter()
            .map(|s| s.reference.as_str())
            .collect::<Vec<_>>(),
        ["", "values"],
        "the API server keeps spec.sources and their ref"
    );
    let controller = start(&ns, "multi-source");

    let synced = wait_until(&apps, "shop", "shop synced", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| o.phase == OperationPhase::Succeeded)
    })
    .await;
    let configs = ns.api::<ConfigMap>();
    let config = configs
        .get("shop-config")
        .await
        .expect("the release's ConfigMap");
    let data = config.data.unwrap_or_default();
    assert_eq!(
        (
            data.get("greeting").map(String::as_str),
            data.get("tier").map(String::as_str)
        ),
        (Some("prod-hello"), Some("platinum")),
        "$values/envs/prod.yaml applied"
    );
    let status = synced.status.expect("a status");
    let both = vec!["0.1.3".to_owned(), commit.clone()];
    let operation = status.operation_state.expect("an operation");
    assert_eq!(operation.revisions, both, "operationState.revisions");
    assert_eq!(
        status.history.last().map(|h| h.revisions.clone()),
        Some(both.clone()),
        "history revisions"
    );
    let sync = wait_until(&apps, "shop", "shop Synced on both revisions", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.sync.as_ref())
            .is_some_and(|s| s.revisions == both)
    })
    .await
    .status
    .and_then(|s| s.sync)
    .expect("a sync status");
    assert_eq!(
        sync.revision, "",
        "a multi-source Application has revisions only"
    );

    let broken = wait_until(&apps, "broken", "broken's ComparisonError", |app| {
        app.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == ApplicationConditionType::ComparisonError)
        })
    })
    .await;
    let status = broken.status.expect("a status");
    let message = &status.conditions[0].message;
    for part in [
        "Application broken",
        "sources[0].helm.valueFiles[0]",
        "no source has ref \"nope\"",
    ] {
        assert!(message.contains(part), "{part:?} in {message}");
    }
    assert!(status.operation_state.is_none(), "no sync was started");
    assert_eq!(
        greeting(&configs, "broken-config").await,
        None,
        "nothing applied"
    );
    controller.stop().await;
}

/// A chart whose ConfigMap `<release>-config` carries `.Values.greeting`.
const CHART: [(&str, &str); 3] = [
    (
        "chart/Chart.yaml",
        "apiVersion: v2\nname: greeter\nversion: 0.1.0\n",
    ),
    ("chart/values.yaml", "greeting: default\n"),
    (
        "chart/templates/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
    ),
];

/// The two-step ApplicationSet `stack` (database, then backend), each Application the chart
/// `chart` (a source without its values) with the values `envs/<component>.yaml` of
/// `values_url`.
fn appset(namespace: &str, mut chart: Value, values_url: &str) -> Value {
    chart["helm"]["valueFiles"] = json!(["$values/envs/{{.component}}.yaml"]);
    two_tier_appset(
        "stack",
        namespace,
        "sources",
        json!([chart, {"repoURL": values_url, "targetRevision": "main", "ref": "values"}]),
    )
}

/// Waits until every Application of `stack` is Healthy on `revisions` in its rollout status,
/// and returns when each one's last sync started.
async fn rolled_out(
    appsets: &Api<ApplicationSet>,
    apps: &Api<Application>,
    revisions: &[String],
) -> Vec<k8s_openapi::jiff::Timestamp> {
    support::two_tier_appset::rolled_out(
        appsets,
        apps,
        "stack",
        revisions,
        ROLLOUT_TIMEOUT,
        |name, status| {
            let sync = status.sync.unwrap_or_default();
            if sync.revisions != revisions {
                return Err(format!("{name} compared at {:?}", sync.revisions));
            }
            Ok(status
                .operation_state
                .and_then(|o| o.started_at)
                .ok_or(format!("{name} has not synced"))?
                .0)
        },
    )
    .await
}

#[tokio::test]
async fn a_rolling_sync_of_multi_source_applications_compares_both_revisions() {
    let (_charts, _chart_daemon, chart_url, chart_commit) = served("greeter", &CHART);
    let (values, _values_daemon, values_url, first) = served(
        "stack-values",
        &[
            ("envs/database.yaml", "greeting: db-1\n"),
            ("envs/backend.yaml", "greeting: api-1\n"),
        ],
    );
    let ns = setup("multi-rollout").await;
    let appsets: Api<ApplicationSet> = ns.api();
    let apps: Api<Application> = ns.api();
    let chart = json!({"repoURL": chart_url, "targetRevision": "main", "path": "chart"});
    apply(&appsets, &object(appset(&ns.name, chart, &values_url))).await;
    let controller = start(&ns, "multi-rollout");

    let started = rolled_out(&appsets, &apps, &[chart_commit.clone(), first]).await;
    assert!(
        started[0] < started[1],
        "database before backend: {started:?}"
    );
    let configs = ns.api::<ConfigMap>();
    assert_eq!(
        greeting(&configs, "database-config").await.as_deref(),
        Some("db-1")
    );
    assert_eq!(
        greeting(&configs, "backend-config").await.as_deref(),
        Some("api-1")
    );

    // Only the values repository changes: the second revision is rolled out, in order.
    values.write("envs/database.yaml", "greeting: db-2\n");
    values.write("envs/backend.yaml", "greeting: api-2\n");
    let second = values.push("second values");
    let again = rolled_out(&appsets, &apps, &[chart_commit, second]).await;
    assert!(
        again[0] > started[0] && again[1] > started[1],
        "both synced again: {started:?} then {again:?}"
    );
    assert!(again[0] < again[1], "database before backend: {again:?}");
    assert_eq!(
        greeting(&configs, "database-config").await.as_deref(),
        Some("db-2")
    );
    assert_eq!(
        greeting(&configs, "backend-config").await.as_deref(),
        Some("api-2")
    );
    controller.stop().await;
}

#[tokio::test]
async fn a_rolling_sync_rolls_out_a_chart_repository_source_with_its_values() {
    let repository = ChartRepository::start(&["0.1.0", "0.1.3", "0.2.0"]);
    let (_values, _values_daemon, values_url, commit) = served(
        "chart-stack-values",
        &[
            ("envs/database.yaml", "greeting: db\n"),
            ("envs/backend.yaml", "greeting: api\n"),
        ],
    );
    let ns = setup("multi-chart-rollout").await;
    support::require_node_sim(&ns.client, 1).await;
    let appsets: Api<ApplicationSet> = ns.api();
    let apps: Api<Application> = ns.api();
    // Without the chart's CRD, which both Applications would otherwise own and fight over.
    let chart = json!({"repoURL": repository.server.url(), "chart": "db", "targetRevision": "~0.1",
                       "helm": {"skipCrds": true}});
    apply(&appsets, &object(appset(&ns.name, chart, &values_url))).await;
    let controller = start(&ns, "multi-chart-rollout");

    let started = rolled_out(&appsets, &apps, &["0.1.3".to_owned(), commit.clone()]).await;
    assert!(
        started[0] < started[1],
        "database before backend: {started:?}"
    );
    let configs = ns.api::<ConfigMap>();
    assert_eq!(
        greeting(&configs, "database-config").await.as_deref(),
        Some("db")
    );

    // Only the chart repository changes: the newer version in range (other manifests) is
    // rolled out, in order.
    repository.publish("0.1.5", "upgraded");
    let again = rolled_out(&appsets, &apps, &["0.1.5".to_owned(), commit]).await;
    assert!(
        again[0] > started[0] && again[1] > started[1],
        "both synced again: {started:?} then {again:?}"
    );
    assert!(again[0] < again[1], "database before backend: {again:?}");
    controller.stop().await;
}
