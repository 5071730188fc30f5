//! Operators' custom resources on the real control plane: every built-in operator rule walked
//! through the statuses its operator documents (the walks of
//! `core/src/health/testdata/operator-walks.yaml`, each kind installed as a minimal CRD with a
//! status subresource whose status preserves unknown fields), judged live as the controller
//! judges them — first "waiting for its controller" while no status is written; a RollingSync
//! whose step 2 opens only after step 1's custom resource reports Ready, its "operator" (a task
//! of the test) writing a first `Ready=False` about a second after creation (a test `Database`
//! kind, and a cert-manager `Certificate`); and a library of health scripts laid out as Argo
//! CD's, read from a directory by the controller.

mod controller_support;
mod support;

use std::time::Duration;

use flotilla::cli::health_args::read_library;
use flotilla::cluster::api_server::kube_cluster::KubeCluster;
use flotilla::sync::execute::cluster_api::ClusterApi;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::health::walks::{Walk, operator_walks};
use flotilla_core::health::{HealthChecks, HealthDefaults, HealthStatus};
use flotilla_core::manifest::{ObjectKey, group_of};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use controller_support::{Options, setup, start, start_with};
use support::git_remote::Remote;
use support::two_tier_appset::{rolled_out, two_tier_appset};
use support::{TestNamespace, apply, eventually, install_kind, object, wait_until, write_status};

/// Flotilla's health of the live object `key`, read and judged as the controller does (the
/// cluster's discovery telling which kinds declare a status subresource).
async fn live_health(key: &ObjectKey) -> (HealthStatus, String) {
    let cluster = KubeCluster::new(support::client(1).await);
    let object = cluster
        .get(key)
        .await
        .expect("reads the object")
        .expect("the object exists");
    let health = cluster
        .observing(&HealthChecks::default())
        .await
        .assess(&object);
    (health.status, health.message)
}

/// Walks one kind in `ns`: creates `walk`, checks it waits for its operator, then writes each
/// step's status (for the generation the operator sees) and checks the judgement.
async fn walk_kind(ns: &TestNamespace, walk: Walk) {
    let group = group_of(&walk.api_version).to_owned();
    let installed = install_kind(&ns.client, &group, &walk.kind, &walk.plural).await;
    let api: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, &installed);
    let mut created = DynamicObject::new("walk", &installed);
    created.data = json!({"spec": walk.spec});
    api.create(&PostParams::default(), &created)
        .await
        .unwrap_or_else(|e| panic!("creating a {group}/{}: {e}", walk.kind));
    let key = ObjectKey {
        group: group.clone(),
        kind: walk.kind.clone(),
        namespace: Some(ns.name.clone()),
        name: "walk".to_owned(),
    };
    let named = format!("{group}/{}", walk.kind);
    assert_eq!(
        live_health(&key).await,
        (
            HealthStatus::Progressing,
            "Waiting for its controller to report status".to_owned()
        ),
        "{named} without status"
    );
    for step in walk.steps {
        if let Some(spec) = &step.spec {
            api.patch(
                "walk",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": spec })),
            )
            .await
            .expect("changes the spec");
        }
        let mut status = step.status.clone();
        if status.get("observedGeneration").and_then(Value::as_i64) == Some(1) {
            let live = api.get("walk").await.expect("reads the object");
            status["observedGeneration"] = json!(live.metadata.generation);
        }
        write_status(&api, "walk", status.clone()).await;
        let (health, message) = live_health(&key).await;
        assert_eq!(health, step.health, "{named} {status}: {message}");
        if let Some(expected) = &step.message {
            assert_eq!(&message, expected, "{named} {status}");
        }
    }
}

#[tokio::test]
async fn every_operator_rule_walks_from_waiting_to_healthy_and_degraded_on_the_api_server() {
    let ns = support::namespace(1, "operator-walks").await;
    let walks = operator_walks();
    assert!(walks.len() >= 40, "{} walks", walks.len());
    futures::stream::iter(walks)
        .for_each_concurrent(8, |walk| walk_kind(&ns, walk))
        .await;
}

/// The operator of one custom resource the step-1 Application deploys.
struct Operator {
    api: Api<DynamicObject>,
    name: &'static str,
    /// `Ready=False` as the operator first reports it.
    starting: Value,
    /// `Ready=True`.
    ready: Value,
}

/// A RollingSync of two steps: `database` deploys `manifest` (the operator's resource),
/// `backend` a ConfigMap. The operator writes `starting` a second after the resource is created
/// and `ready` five seconds later; until then neither the backend Application has started a
/// sync nor its ConfigMap exists, and the ConfigMap is created after the resource's `Ready`.
async fn rolling_sync_waits_for(ns: &TestNamespace, operator: Operator, manifest: &str) {
    let remote = Remote::new("operator-gate");
    remote.write("database/resource.yaml", manifest);
    remote.write(
        "backend/config.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: backend\ndata: {tier: backend}\n",
    );
    let revision = remote.push("two tiers");
    let controller = start(ns, "only");
    let source =
        json!({"repoURL": remote.file_url(), "targetRevision": "main", "path": "{{.component}}"});
    let appsets = ns.api::<ApplicationSet>();
    apply(
        &appsets,
        &object(two_tier_appset("stack", &ns.name, "source", source)),
    )
    .await;
    let apps = ns.api::<Application>();
    let config_maps = ns.api::<ConfigMap>();

    wait_until(&operator.api, operator.name, "the resource created", |_| {
        true
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    write_status(&operator.api, operator.name, operator.starting.clone()).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    // What step 2 did before the operator reported Ready.
    let backend_started = apps
        .get_opt("backend")
        .await
        .expect("reads backend")
        .and_then(|app| app.status.and_then(|s| s.operation_state))
        .is_some();
    let backend_written = config_maps
        .get_opt("backend")
        .await
        .expect("reads the ConfigMap")
        .is_some();
    assert!(
        !backend_started && !backend_written,
        "step 2 opened before the resource was Ready (sync started: {backend_started}, ConfigMap written: {backend_written})"
    );
    write_status(&operator.api, operator.name, operator.ready.clone()).await;
    let ready_at = status_written_at(&operator.api, operator.name).await;

    rolled_out(
        &appsets,
        &apps,
        "stack",
        &[revision],
        support::TIMEOUT,
        |_, _| Ok(()),
    )
    .await;
    let written = config_maps.get("backend").await.expect("backend deployed");
    let created = written
        .metadata
        .creation_timestamp
        .expect("a creation time")
        .0;
    // The API server's times, to the second.
    assert!(
        created >= ready_at,
        "the backend ConfigMap ({created}) is created after the resource reported Ready ({ready_at})"
    );
    controller.stop().await;
}

/// When the status of `name` was last written, as the API server recorded it.
async fn status_written_at(api: &Api<DynamicObject>, name: &str) -> Timestamp {
    let object = api.get(name).await.expect("reads the resource");
    object
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter(|entry| entry.subresource.as_deref() == Some("status"))
        .filter_map(|entry| entry.time.map(|time| time.0))
        .max()
        .expect("the status write is recorded")
}

fn condition(status: &str, reason: &str, message: &str) -> Value {
    json!({"conditions": [{"type": "Ready", "status": status, "reason": reason, "message": message,
                           "lastTransitionTime": "2026-12-01T00:00:00Z"}]})
}

fn operator(ns: &TestNamespace, installed: &ApiResource, name: &'static str) -> Operator {
    Operator {
        api: Api::namespaced_with(ns.client.clone(), &ns.name, installed),
        name,
        starting: json!(null),
        ready: json!(null),
    }
}

#[tokio::test]
async fn step_two_opens_only_after_the_database_of_step_one_reports_ready() {
    let ns = setup("gate-database").await;
    let installed = install_kind(&ns.client, "gate.flotilla.test", "Database", "databases").await;
    let database = Operator {
        starting: condition("False", "Provisioning", "creating volumes"),
        ready: condition("True", "Available", "accepting connections"),
        ..operator(&ns, &installed, "orders")
    };
    rolling_sync_waits_for(
        &ns,
        database,
        "apiVersion: gate.flotilla.test/v1\nkind: Database\nmetadata:\n  name: orders\nspec:\n  engine: postgres\n",
    )
    .await;
}

#[tokio::test]
async fn step_two_opens_only_after_the_certificate_of_step_one_is_issued() {
    let ns = setup("gate-certificate").await;
    let installed =
        install_kind(&ns.client, "cert-manager.io", "Certificate", "certificates").await;
    let issuing = json!({"conditions": [
        {"type": "Ready", "status": "False", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist"},
        {"type": "Issuing", "status": "True", "reason": "DoesNotExist", "message": "Issuing certificate as Secret does not exist"}
    ]});
    let issued = json!({"conditions": [
        {"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired"},
        {"type": "Issuing", "status": "False", "reason": "Issued"}
    ]});
    let certificate = Operator {
        starting: issuing,
        ready: issued,
        ..operator(&ns, &installed, "web-tls")
    };
    rolling_sync_waits_for(
        &ns,
        certificate,
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: web-tls\nspec:\n  secretName: web-tls\n  dnsNames: [web.example.com]\n  issuerRef: {name: letsencrypt, kind: ClusterIssuer}\n",
    )
    .await;
}

/// A health library as Argo CD lays it out, with a check that needs the open libraries.
const LIBRARY_CHECK: &str = r#"local hs = {status = "Progressing", message = "waiting for the operator"}
if obj.status ~= nil and obj.status.state == "up" then
  hs.status = "Healthy"
  hs.message = "up since " .. os.date("!%Y", 0)
end
return hs
"#;

#[tokio::test]
async fn a_health_library_directory_decides_through_the_controller_and_argocd_cm_wins() {
    let ns = setup("health-library").await;
    let databases =
        install_kind(&ns.client, "library.flotilla.test", "Database", "databases").await;
    install_kind(&ns.client, "library.flotilla.test", "Cache", "caches").await;
    let library = tempfile::tempdir().expect("a directory");
    for (kind, script) in [
        ("Database", LIBRARY_CHECK),
        (
            "Cache",
            "return {status = 'Degraded', message = 'from the library'}",
        ),
    ] {
        let dir = library.path().join("library.flotilla.test").join(kind);
        std::fs::create_dir_all(&dir).expect("creates the kind's directory");
        std::fs::write(dir.join("health.lua"), script).expect("writes the script");
        std::fs::write(dir.join("health_test.yaml"), "tests: []\n").expect("writes its tests");
    }
    let settings: ConfigMap = object(json!({
        "metadata": {"name": "argocd-cm"},
        "data": {"resource.customizations.health.library.flotilla.test_Cache":
                 "return {status = 'Healthy', message = 'from argocd-cm'}"}
    }));
    apply(&ns.api::<ConfigMap>(), &settings).await;
    let remote = Remote::new("library");
    remote.write(
        "orders/database.yaml",
        "apiVersion: library.flotilla.test/v1\nkind: Database\nmetadata:\n  name: orders\nspec:\n  engine: postgres\n",
    );
    remote.write(
        "orders/cache.yaml",
        "apiVersion: library.flotilla.test/v1\nkind: Cache\nmetadata:\n  name: sessions\nspec: {}\n",
    );
    remote.push("a database and a cache");
    let defaults = HealthDefaults {
        library: read_library(library.path()).expect("reads the library"),
        ..HealthDefaults::default()
    };
    let controller = start_with(
        &ns,
        "only",
        Options {
            health: defaults,
            ..Options::default()
        },
    );
    let apps = ns.api::<Application>();
    let application: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "orders"},
        "spec": {
            "project": "default",
            "source": {"repoURL": remote.file_url(), "targetRevision": "main", "path": "orders"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "syncPolicy": {"automated": {"prune": true}}
        }
    }));
    apply(&apps, &application).await;
    let resource_health = |app: &Application, name: &str| {
        app.status
            .as_ref()
            .and_then(|s| s.resources.iter().find(|r| r.name == name))
            .and_then(|r| r.health.as_ref())
            .map(|h| (h.status, h.message.clone()))
    };
    wait_until(&apps, "orders", "the library's check waiting", |app| {
        resource_health(app, "orders")
            == Some((
                HealthStatus::Progressing,
                "waiting for the operator".to_owned(),
            ))
    })
    .await;
    let api: Api<DynamicObject> = Api::namespaced_with(ns.client.clone(), &ns.name, &databases);
    write_status(&api, "orders", json!({"state": "up"})).await;
    let app = wait_until(&apps, "orders", "the library's check Healthy", |app| {
        resource_health(app, "orders").is_some_and(|(status, _)| status == HealthStatus::Healthy)
    })
    .await;
    assert_eq!(
        resource_health(&app, "orders"),
        Some((HealthStatus::Healthy, "up since 1970".to_owned())),
        "the library's script runs with the open libraries"
    );
    assert_eq!(
        resource_health(&app, "sessions"),
        Some((HealthStatus::Healthy, "from argocd-cm".to_owned())),
        "argocd-cm's check wins over the library's"
    );
    eventually("the Application Healthy", async || {
        let app = apps.get("orders").await.map_err(|e| e.to_string())?;
        let health = app.status.and_then(|s| s.health).map(|h| h.status);
        (health == Some(HealthStatus::Healthy))
            .then_some(())
            .ok_or(format!("{health:?}"))
    })
    .await;
    controller.stop().await;
}
