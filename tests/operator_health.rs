//! Health of operator-managed resources on the real control plane: the test plays the operator
//! of a CloudNativePG-style `Cluster` (the built-in rule) and of a `Database` kind of its own
//! (the status conventions), writing their status as operators do, while `flotilla`'s controller
//! syncs an Application from a bare repository into a namespace it creates. A sync wave waits
//! for the database to be up; a failed database degrades the Application, naming it.

mod controller_support;
mod support;

use flotilla_core::api::Application;
use flotilla_core::health::HealthStatus;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::DynamicObject;
use serde_json::json;

use controller_support::{setup, start};
use support::git_remote::Remote;
use support::{TestNamespace, apply, install_kind, object, wait_until, write_status};

/// An Application `name` syncing `path` of `remote` automatically into `<ns>-<name>`, which
/// Flotilla creates.
fn application(ns: &TestNamespace, remote: &Remote, name: &str) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "default",
            "source": {"repoURL": remote.file_url(), "targetRevision": "main", "path": name},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": format!("{}-{name}", ns.name)},
            "syncPolicy": {"automated": {"prune": true}, "syncOptions": ["CreateNamespace=true"]}
        }
    }))
}

/// The Application's health: (status, message of the resource `name`).
fn health_of(app: &Application, name: &str) -> (HealthStatus, String) {
    let status = app.status.as_ref();
    let overall = status
        .and_then(|s| s.health.as_ref())
        .map(|h| h.status)
        .unwrap_or_default();
    let message = status
        .and_then(|s| s.resources.iter().find(|r| r.name == name))
        .and_then(|r| r.health.as_ref())
        .map(|h| h.message.clone())
        .unwrap_or_default();
    (overall, message)
}

async fn wait_for_health(
    ns: &TestNamespace,
    app: &str,
    status: HealthStatus,
    resource: &str,
) -> String {
    let found = wait_until(
        &ns.api::<Application>(),
        app,
        &format!("{app} {status}"),
        |a| health_of(a, resource).0 == status,
    )
    .await;
    health_of(&found, resource).1
}

#[tokio::test]
async fn a_wave_waits_for_its_database_cluster_and_a_failed_one_degrades_the_application() {
    let ns = setup("health-cnpg").await;
    let resource = install_kind(&ns.client, "postgresql.cnpg.io", "Cluster", "clusters").await;
    let remote = Remote::new("platform");
    remote.write(
        "db/cluster.yaml",
        "apiVersion: postgresql.cnpg.io/v1\nkind: Cluster\nmetadata:\n  name: pg\nspec:\n  instances: 2\n  storage: {size: 1Gi}\n",
    );
    remote.write(
        "db/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: backend-config\n  annotations:\n    argocd.argoproj.io/sync-wave: \"1\"\ndata: {database: pg}\n",
    );
    remote.push("a database, then what needs it");
    let controller = start(&ns, "only");
    apply(&ns.api::<Application>(), &application(&ns, &remote, "db")).await;
    let target = format!("{}-db", ns.name);
    let clusters: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &target, &resource);
    let config_maps: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &target);

    // Created by the sync; no operator has written a status (its CRD declares a status
    // subresource): wave 1 waits, and the running operation says on what.
    wait_until(&clusters, "pg", "the Cluster created", |_| true).await;
    wait_until(
        &ns.api::<Application>(),
        "db",
        "the operation waiting on the Cluster",
        |app| {
            let record = app
                .status
                .as_ref()
                .and_then(|s| s.operation_state.as_ref())
                .and_then(|o| o.resources.iter().find(|r| r.name == "pg"));
            record.is_some_and(|r| {
                r.health == Some(HealthStatus::Progressing)
                    && r.message == "Waiting for its controller to report status"
            })
        },
    )
    .await;
    write_status(
        &clusters,
        "pg",
        json!({"phase": "Setting up primary", "instances": 2, "readyInstances": 0}),
    )
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert!(
        config_maps
            .get_opt("backend-config")
            .await
            .unwrap()
            .is_none(),
        "wave 1 waits while the database is set up"
    );

    write_status(
        &clusters,
        "pg",
        json!({"phase": "Cluster in healthy state", "instances": 2, "readyInstances": 2,
               "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterIsReady",
                               "message": "Cluster is Ready", "lastTransitionTime": "2026-12-01T00:00:00Z"}]}),
    )
    .await;
    wait_until(&config_maps, "backend-config", "wave 1 applied", |_| true).await;
    wait_for_health(&ns, "db", HealthStatus::Healthy, "pg").await;

    write_status(
        &clusters,
        "pg",
        json!({"phase": "Unable to create required cluster objects",
               "phaseReason": "secrets \"pg-app\" is forbidden", "readyInstances": 0,
               "conditions": [{"type": "Ready", "status": "False", "reason": "ClusterIsNotReady",
                               "message": "Cluster Is Not Ready", "lastTransitionTime": "2026-12-01T00:01:00Z"}]}),
    )
    .await;
    let degraded = wait_for_health(&ns, "db", HealthStatus::Degraded, "pg").await;
    assert_eq!(
        degraded,
        "Unable to create required cluster objects: secrets \"pg-app\" is forbidden"
    );
    controller.stop().await;
}

#[tokio::test]
async fn a_kind_without_a_rule_is_judged_by_its_conditions() {
    let ns = setup("health-conditions").await;
    let resource = install_kind(&ns.client, "db.flotilla.test", "Database", "databases").await;
    let remote = Remote::new("platform");
    remote.write(
        "orders/database.yaml",
        "apiVersion: db.flotilla.test/v1\nkind: Database\nmetadata:\n  name: orders\nspec:\n  engine: postgres\n",
    );
    remote.push("a database");
    let controller = start(&ns, "only");
    apply(
        &ns.api::<Application>(),
        &application(&ns, &remote, "orders"),
    )
    .await;
    let target = format!("{}-orders", ns.name);
    let databases: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &target, &resource);
    wait_until(&databases, "orders", "the Database created", |_| true).await;

    let condition = |type_: &str, status: &str, reason: &str, message: &str| {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": "2026-12-01T00:00:00Z"})
    };
    // Its CRD declares a status subresource: not Healthy before the operator reports.
    let message = wait_for_health(&ns, "orders", HealthStatus::Progressing, "orders").await;
    assert_eq!(message, "Waiting for its controller to report status");
    write_status(
        &databases,
        "orders",
        json!({"observedGeneration": 1, "conditions": [condition("Ready", "False", "Provisioning", "creating volumes")]}),
    )
    .await;
    wait_until(
        &ns.api::<Application>(),
        "orders",
        "the operator's first status",
        |app| {
            health_of(app, "orders") == (HealthStatus::Progressing, "creating volumes".to_owned())
        },
    )
    .await;

    write_status(
        &databases,
        "orders",
        json!({"observedGeneration": 1, "conditions": [
            condition("Ready", "False", "Provisioning", "creating volumes"),
            condition("Stalled", "True", "QuotaExceeded", "storage quota exceeded in zone a"),
        ]}),
    )
    .await;
    let message = wait_for_health(&ns, "orders", HealthStatus::Degraded, "orders").await;
    assert_eq!(message, "storage quota exceeded in zone a");

    write_status(
        &databases,
        "orders",
        json!({"observedGeneration": 1, "conditions": [
            condition("Ready", "True", "Available", "accepting connections"),
            condition("Stalled", "False", "", ""),
        ]}),
    )
    .await;
    let message = wait_for_health(&ns, "orders", HealthStatus::Healthy, "orders").await;
    assert_eq!(message, "accepting connections");
    controller.stop().await;
}

/// The health check of `Database` as a platform team writes it in `argocd-cm`: up when the
/// operator says `state: up`.
const DATABASE_CHECK: &str = r#"hs = {}
if obj.status ~= nil and obj.status.state == "up" then
  hs.status = "Healthy"
  hs.message = "database is up"
  return hs
end
hs.status = "Progressing"
if obj.status ~= nil and obj.status.state ~= nil then
  hs.message = "database is " .. obj.status.state
else
  hs.message = "waiting for the operator"
end
return hs
"#;

/// The record of `name` in the running operation: (health, message).
fn operation_record(app: &Application, name: &str) -> Option<(Option<HealthStatus>, String)> {
    app.status
        .as_ref()
        .and_then(|s| s.operation_state.as_ref())
        .and_then(|o| o.resources.iter().find(|r| r.name == name))
        .map(|r| (r.health, r.message.clone()))
}

#[tokio::test]
async fn lua_checks_from_argocd_cm_decide_and_a_runaway_script_is_stopped_and_named() {
    let ns = setup("health-lua").await;
    let databases = install_kind(&ns.client, "db.flotilla.test", "Database", "databases").await;
    install_kind(&ns.client, "widgets.flotilla.test", "Widget", "widgets").await;
    let settings: ConfigMap = object(json!({
        "metadata": {"name": "argocd-cm"},
        "data": {
            "resource.customizations.health.db.flotilla.test_Database": DATABASE_CHECK,
            "resource.customizations": "widgets.flotilla.test/*:\n  health.lua: |\n    while true do end\n"
        }
    }));
    apply(&ns.api::<ConfigMap>(), &settings).await;
    let remote = Remote::new("platform");
    remote.write(
        "orders/database.yaml",
        "apiVersion: db.flotilla.test/v1\nkind: Database\nmetadata:\n  name: orders\nspec:\n  engine: postgres\n",
    );
    remote.write(
        "orders/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: orders-config\n  annotations:\n    argocd.argoproj.io/sync-wave: \"1\"\ndata: {database: orders}\n",
    );
    remote.write(
        "gadgets/widget.yaml",
        "apiVersion: widgets.flotilla.test/v1\nkind: Widget\nmetadata:\n  name: spinner\n",
    );
    remote.push("a database with a health check, and a widget whose check never ends");
    let controller = start(&ns, "only");
    let apps = ns.api::<Application>();
    apply(&apps, &application(&ns, &remote, "orders")).await;
    apply(&apps, &application(&ns, &remote, "gadgets")).await;

    // The script (a configured check decides, not the wait for a first status)
    // holds wave 1.
    wait_until(&apps, "orders", "the wave waiting on the script", |app| {
        operation_record(app, "orders")
            == Some((
                Some(HealthStatus::Progressing),
                "waiting for the operator".to_owned(),
            ))
    })
    .await;
    let target = format!("{}-orders", ns.name);
    let database: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &target, &databases);
    write_status(&database, "orders", json!({"state": "starting"})).await;
    wait_until(&apps, "orders", "the script's message", |app| {
        operation_record(app, "orders")
            .is_some_and(|(_, message)| message == "database is starting")
    })
    .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &target);
    assert!(
        config_maps
            .get_opt("orders-config")
            .await
            .unwrap()
            .is_none(),
        "wave 1 waits"
    );
    write_status(&database, "orders", json!({"state": "up"})).await;
    wait_until(&config_maps, "orders-config", "wave 1 applied", |_| true).await;
    assert_eq!(
        wait_for_health(&ns, "orders", HealthStatus::Healthy, "orders").await,
        "database is up"
    );

    // The Widget is the last wave: the operation ends once it is applied, and the Application's
    // status judges it.
    let stopped = wait_until(&apps, "gadgets", "the runaway script stopped", |app| {
        health_of(app, "spinner").0 == HealthStatus::Unknown
    })
    .await;
    let (_, message) = health_of(&stopped, "spinner");
    // Stopped by its instruction or its time budget, whichever a machine reaches first.
    let expected = format!(
        "health check ConfigMap {}/argocd-cm resource.customizations widgets.flotilla.test/* health.lua: runtime error: stopped after ",
        ns.name
    );
    assert!(message.starts_with(&expected), "{message}");
    controller.stop().await;
}
