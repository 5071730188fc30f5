//! The Application controller against real API servers, run in-process (with the ApplicationSet
//! controller, under one Lease) on cluster 1 in a fresh namespace per test, syncing from local
//! git repositories: generated Applications synced and Healthy, a new commit synced
//! automatically, removed Applications taking their resources with them (unless preserved),
//! RollingSync-owned Applications syncing only on request, a destination reached through a
//! cluster Secret, a sync resumed after the controller was killed, and one acting replica.

mod controller_support;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use flotilla::cluster::api_server::api_limits::ApiLimits;
use flotilla::cluster::destinations::clients::ClusterClients;
use flotilla::controller::leases::leadership::Leadership;
use flotilla_core::api::application::ApplicationDestination;
use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::sync::{HookPhase, OperationPhase};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use controller_support::{Running, appset, commit, repository, setup, start};
use support::{TestNamespace, apply, eventually, object, wait_until};

/// The manifests of one Application: a ConfigMap with `version` and a Deployment.
fn manifests(name: &str, version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  version: \"{version}\"\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}-web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  \
         template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: web\n          image: registry.example.com/web:1\n"
    )
}

/// Commits the manifests of `names` at `version`.
fn commit_apps(repo: &Path, names: &[&str], version: &str) -> String {
    controller_support::commit_apps(repo, names, version, manifests)
}

fn sync_of(app: &Application) -> (String, String, String) {
    let status = app.status.clone().unwrap_or_default();
    let sync = status.sync.unwrap_or_default();
    let health = status.health.unwrap_or_default();
    (
        sync.status.as_str().to_owned(),
        sync.revision,
        health.status.as_str().to_owned(),
    )
}

/// Waits until `name` is Synced at `revision` and Healthy.
async fn synced_and_healthy(ns: &TestNamespace, name: &str, revision: &str) -> Application {
    let api: Api<Application> = ns.api();
    wait_until(
        &api,
        name,
        &format!("{name} Synced at {revision} and Healthy"),
        |app| sync_of(app) == ("Synced".into(), revision.into(), "Healthy".into()),
    )
    .await
}

async fn config_version(ns: &TestNamespace, name: &str) -> Option<String> {
    let api: Api<ConfigMap> = ns.api();
    api.get_opt(name)
        .await
        .expect("reads ConfigMaps")
        .and_then(|cm| cm.data?.get("version").cloned())
}

/// Waits until the Application `name` no longer exists.
async fn gone(ns: &TestNamespace, name: &str) {
    let api: Api<Application> = ns.api();
    eventually(&format!("Application {name} deleted"), async || {
        match api.get_opt(name).await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(app) => Err(format!("{:?}", app.metadata)),
        }
    })
    .await;
}

/// The reasons of the Events on object `name`.
async fn event_reasons(ns: &TestNamespace, name: &str) -> Vec<String> {
    let api: Api<Event> = ns.api();
    api.list(&Default::default())
        .await
        .expect("lists Events")
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter_map(|e| e.reason)
        .collect()
}

#[tokio::test]
async fn generated_applications_sync_follow_new_commits_and_take_their_resources_when_removed() {
    let repo = repository();
    let first = commit_apps(repo.path(), &["a", "b", "c"], "1");
    let url = format!("file://{}", repo.path().display());
    let ns = setup("app-sync").await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(
        &appsets,
        &appset(&ns.name, &url, &["a", "b", "c"], json!({})),
    )
    .await;
    for name in ["a", "b", "c"] {
        synced_and_healthy(&ns, name, &first).await;
        assert_eq!(
            config_version(&ns, &format!("{name}-config"))
                .await
                .as_deref(),
            Some("1")
        );
    }
    let a = ns.api::<Application>().get("a").await.unwrap();
    let status = a.status.unwrap();
    assert_eq!(status.resources.len(), 2);
    assert!(
        status
            .resources
            .iter()
            .all(|r| r.status == SyncStatusCode::Synced)
    );
    let operation = status
        .operation_state
        .expect("the automated sync's operation");
    assert_eq!(
        (operation.phase, operation.revision.as_deref()),
        (OperationPhase::Succeeded, Some(first.as_str()))
    );
    assert!(status.reconciled_at.is_some());
    // Healthy says nothing more: the Missing the first compare saw is not kept beside it (a
    // merge patch keeps what it does not name; such a status differed from every later compare,
    // and each write of it was another write).
    assert_eq!(status.health.as_ref().map(|h| h.message.as_str()), Some(""));
    let settled = a.metadata.resource_version.clone();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let later = ns.api::<Application>().get("a").await.unwrap();
    assert_eq!(
        later.metadata.resource_version, settled,
        "a settled Application is written again: {:?}",
        later.status
    );

    // A new commit: OutOfSync, then synced automatically.
    let second = commit_apps(repo.path(), &["a", "b", "c"], "2");
    for name in ["a", "b", "c"] {
        let app = synced_and_healthy(&ns, name, &second).await;
        assert_eq!(
            config_version(&ns, &format!("{name}-config"))
                .await
                .as_deref(),
            Some("2")
        );
        let history: Vec<String> = app
            .status
            .unwrap()
            .history
            .into_iter()
            .map(|h| h.revision)
            .collect();
        assert_eq!(history, [first.clone(), second.clone()], "{name}");
    }
    let reasons = event_reasons(&ns, "a").await;
    for reason in ["SyncStarted", "SyncSucceeded"] {
        assert!(
            reasons.iter().any(|r| r == reason),
            "{reason} in {reasons:?}"
        );
    }
    assert!(
        event_reasons(&ns, "stack")
            .await
            .iter()
            .any(|r| r == "ApplicationsGenerated")
    );
    // The gauge counts the statuses the controller has seen; it catches up within a resync.
    let metrics = std::sync::Arc::clone(&controller.metrics);
    eventually(
        "three Synced and Healthy Applications in the metrics",
        async || {
            let text = metrics.render();
            let counted = text
                .contains("flotilla_applications{sync=\"Synced\",health=\"Healthy\"} 3")
                && text.contains("flotilla_sync_operations_total{result=\"Succeeded\"} 6");
            if counted { Ok(()) } else { Err(text) }
        },
    )
    .await;

    // Removing an element deletes its Application and, with it, its resources.
    apply(&appsets, &appset(&ns.name, &url, &["a", "b"], json!({}))).await;
    gone(&ns, "c").await;
    assert_eq!(config_version(&ns, "c-config").await, None);
    let deployments: Api<Deployment> = ns.api();
    eventually("Deployment c-web deleted", async || {
        match deployments
            .get_opt("c-web")
            .await
            .map_err(|e| e.to_string())?
        {
            None => Ok(()),
            Some(d) => Err(format!("{:?}", d.metadata.deletion_timestamp)),
        }
    })
    .await;
    assert_eq!(config_version(&ns, "a-config").await.as_deref(), Some("2"));
    controller.stop().await;
}

#[tokio::test]
async fn preserved_resources_stay_when_their_application_is_removed() {
    let repo = repository();
    let first = commit_apps(repo.path(), &["a", "b"], "1");
    let url = format!("file://{}", repo.path().display());
    let ns = setup("app-preserve").await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    let preserve = json!({"syncPolicy": {"preserveResourcesOnDeletion": true}});
    apply(
        &appsets,
        &appset(&ns.name, &url, &["a", "b"], preserve.clone()),
    )
    .await;
    synced_and_healthy(&ns, "b", &first).await;
    let b = ns.api::<Application>().get("b").await.unwrap();
    assert_eq!(b.metadata.finalizers, None);

    apply(&appsets, &appset(&ns.name, &url, &["a"], preserve)).await;
    gone(&ns, "b").await;
    assert_eq!(config_version(&ns, "b-config").await.as_deref(), Some("1"));
    assert!(
        ns.api::<Deployment>()
            .get_opt("b-web")
            .await
            .unwrap()
            .is_some()
    );
    controller.stop().await;
}

#[tokio::test]
async fn rolling_sync_applications_sync_only_when_an_operation_asks() {
    let repo = repository();
    let first = commit_apps(repo.path(), &["a"], "1");
    let url = format!("file://{}", repo.path().display());
    let ns = setup("app-rolling").await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    let strategy = json!({"strategy": {"type": "RollingSync", "rollingSync": {"steps": [
        {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}
    ]}}});
    apply(&appsets, &appset(&ns.name, &url, &["a"], strategy)).await;
    let api: Api<Application> = ns.api();
    let compared = wait_until(&api, "a", "a compared: OutOfSync", |app| {
        sync_of(app).0 == "OutOfSync"
    })
    .await;
    // Several resyncs later it is still not synced: the rollout decides.
    tokio::time::sleep(controller_support::RESYNC * 3).await;
    let still = api.get("a").await.unwrap();
    assert_eq!(sync_of(&still).0, "OutOfSync");
    assert!(
        still.status.unwrap().operation_state.is_none(),
        "{:?}",
        compared.status
    );

    let operation = json!({"spec": {"operation": {
        "sync": {"prune": true}, "initiatedBy": {"username": "rollout/stack", "automated": true}
    }}});
    api.patch("a", &PatchParams::default(), &Patch::Merge(operation))
        .await
        .expect("requests a sync");
    let synced = synced_and_healthy(&ns, "a", &first).await;
    assert_eq!(synced.spec.operation, None, "the request is consumed");
    let status = synced.status.unwrap();
    assert_eq!(
        status.operation_state.unwrap().phase,
        OperationPhase::Succeeded
    );
    assert_eq!(status.history[0].initiated_by.username, "rollout/stack");
    controller.stop().await;
}

/// A controller stopped after storing a requested operation as Running and before removing the
/// request leaves both behind; the next controller resumes the operation and consumes the
/// request: one sync, not two.
#[tokio::test]
async fn a_request_left_behind_by_a_stopped_controller_runs_once() {
    let repo = repository();
    let first = commit_apps(repo.path(), &["a"], "1");
    let url = format!("file://{}", repo.path().display());
    let ns = setup("app-request-once").await;
    let api: Api<Application> = ns.api();
    let request = json!({
        "sync": {"revision": first},
        "initiatedBy": {"username": "rollout/stack", "automated": true}
    });
    let app: Application = serde_json::from_value(json!({
        "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": "a"},
        "spec": {
            "project": "default",
            "source": {"repoURL": url, "targetRevision": "main", "path": "apps/a"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "operation": request
        }
    }))
    .expect("an Application");
    api.create(&PostParams::default(), &app)
        .await
        .expect("creates the Application with its request");
    // What a controller stopped between storing the operation and removing the request leaves.
    let stopped = json!({"status": {
        "operation": request,
        "operationState": {
            "operationId": "a-stopped", "phase": "Running", "message": "",
            "revision": first, "startedAt": "2026-12-01T00:00:00Z"
        }
    }});
    api.patch_status("a", &PatchParams::default(), &Patch::Merge(stopped))
        .await
        .expect("stores the Running operation");

    let controller = start(&ns, "only");
    synced_and_healthy(&ns, "a", &first).await;
    wait_until(&api, "a", "the request consumed", |app| {
        app.spec.operation.is_none()
    })
    .await;
    // Long enough for a second operation to start and end, were the request run again.
    tokio::time::sleep(controller_support::RESYNC * 3).await;
    let status = api.get("a").await.unwrap().status.unwrap();
    let state = status.operation_state.expect("an operation state");
    assert_eq!(
        (state.operation_id.as_str(), state.phase),
        ("a-stopped", OperationPhase::Succeeded),
        "the stored operation resumed and ended"
    );
    assert_eq!(status.history.len(), 1, "one sync: {:#?}", status.history);
    controller.stop().await;
}

/// An Argo CD cluster Secret registering cluster 2 as `second`, with its token and CA.
fn second_cluster_secret() -> Secret {
    let (server, ca, token) = support::cluster_credentials(2);
    let config = json!({"bearerToken": token, "tlsClientConfig": {"caData": ca}}).to_string();
    object(json!({
        "metadata": {"name": "cluster-second", "labels": {"argocd.argoproj.io/secret-type": "cluster"}},
        "stringData": {"name": "second", "server": server, "config": config}
    }))
}

#[tokio::test]
async fn a_replica_that_does_not_lead_writes_to_no_destination_cluster() {
    let ns = setup("app-remote-gate").await;
    let remote = support::namespace(2, "app-remote-gate-target").await;
    apply(&ns.api::<Secret>(), &second_cluster_secret()).await;
    // Built as `flotilla controller` builds its clients: one gate for every cluster.
    let leadership = Leadership::default();
    let clients = ClusterClients::new(
        ns.client.clone(),
        &ns.name,
        leadership.connect(&ApiLimits::default()),
    );
    let destination = ApplicationDestination {
        name: Some("second".into()),
        namespace: Some(remote.name.clone()),
        ..ApplicationDestination::default()
    };
    // The watch of cluster Secrets sees the new Secret shortly.
    let cluster = eventually("cluster 2 registered", async || {
        clients
            .for_destination(&destination)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client(), &remote.name);
    let written: ConfigMap = object(json!({"metadata": {"name": "gated"}}));

    let refused = config_maps
        .create(&PostParams::default(), &written)
        .await
        .expect_err("no write leaves a replica that does not lead");
    assert!(
        refused
            .to_string()
            .contains("no longer holds the leader Lease"),
        "{refused}"
    );
    assert!(
        config_maps.list(&ListParams::default()).await.is_ok(),
        "reads pass"
    );
    let none: Api<ConfigMap> = Api::namespaced(remote.client.clone(), &remote.name);
    assert!(
        none.get_opt("gated").await.unwrap().is_none(),
        "nothing written"
    );

    leadership.set(Some(Instant::now() + Duration::from_secs(30)));
    config_maps
        .create(&PostParams::default(), &written)
        .await
        .expect("a leading replica writes to the destination");
}

#[tokio::test]
async fn an_application_deploys_to_the_second_cluster_through_its_cluster_secret() {
    let repo = repository();
    let revision = commit(
        repo.path(),
        &[(
            "edge/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: edge-config\ndata:\n  version: \"1\"\n",
        )],
        "edge",
    );
    let ns = setup("app-remote").await;
    let remote = support::namespace(2, "app-remote-target").await;
    let secret = second_cluster_secret();
    let controller = start(&ns, "only");
    let application: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "edge"},
        "spec": {
            "project": "default",
            "source": {"repoURL": format!("file://{}", repo.path().display()), "path": "edge"},
            "destination": {"name": "second", "namespace": remote.name},
            "syncPolicy": {"automated": {}}
        }
    }));
    apply(&ns.api::<Application>(), &application).await;
    // No cluster Secret names `second` yet: the comparison fails and says so.
    wait_until(
        &ns.api::<Application>(),
        "edge",
        "a comparison error naming the unknown destination",
        |app: &Application| {
            app.status.as_ref().is_some_and(|status| {
                status
                    .conditions
                    .iter()
                    .any(|c| c.message.contains("second"))
            })
        },
    )
    .await;
    // Registered now: the controller's watch of cluster Secrets sees it, the next retry deploys.
    apply(&ns.api::<Secret>(), &secret).await;
    synced_and_healthy(&ns, "edge", &revision).await;
    assert_eq!(
        config_version(&remote, "edge-config").await.as_deref(),
        Some("1")
    );
    let local: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &remote.name);
    assert!(
        local.get_opt("edge-config").await.unwrap_or(None).is_none(),
        "not on cluster 1"
    );
    controller.stop().await;
}

/// The interrupt fixture: a PreSync Job, a ConfigMap, a Deployment ready after 6 s in wave 1 and
/// a ConfigMap in wave 2.
fn interrupt_manifests() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sync/interrupt/app.yaml");
    std::fs::read_to_string(path).expect("the interrupt fixture")
}

/// Starts a controller and waits until it leads.
async fn leading(ns: &TestNamespace, identity: &str) -> Running {
    let running = start(ns, identity);
    let metrics = std::sync::Arc::clone(&running.metrics);
    eventually(&format!("{identity} leading"), async || {
        if metrics.render().contains("flotilla_leader 1") {
            Ok(())
        } else {
            Err(metrics.render())
        }
    })
    .await;
    running
}

#[tokio::test]
async fn a_sync_interrupted_by_a_killed_controller_resumes_without_rerunning_its_presync_hook() {
    let repo = repository();
    let revision = commit(
        repo.path(),
        &[("app/app.yaml", &interrupt_manifests())],
        "interrupt",
    );
    let ns = setup("app-resume").await;
    let first = leading(&ns, "first").await;
    let application: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "resume"},
        "spec": {
            "project": "default",
            "source": {"repoURL": format!("file://{}", repo.path().display()), "path": "app"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "operation": {"sync": {}, "initiatedBy": {"username": "tester"}}
        }
    }));
    apply(&ns.api::<Application>(), &application).await;
    let deployments: Api<Deployment> = ns.api();
    eventually(
        "wave 1 (Deployment slow) applied",
        async || match deployments
            .get_opt("slow")
            .await
            .map_err(|e| e.to_string())?
        {
            Some(_) => Ok(()),
            None => Err("not yet".to_owned()),
        },
    )
    .await;
    first.kill().await;
    let jobs: Api<Job> = ns.api();
    let migrate = jobs
        .get("migrate")
        .await
        .expect("the PreSync hook ran")
        .uid();
    let api: Api<Application> = ns.api();
    let interrupted = api.get("resume").await.unwrap();
    assert_eq!(
        interrupted.spec.operation, None,
        "consumed when the sync started"
    );
    let stored = interrupted.status.unwrap().operation_state.expect("stored");
    assert_eq!(stored.phase, OperationPhase::Running);
    assert!(
        ns.api::<ConfigMap>()
            .get_opt("done")
            .await
            .unwrap()
            .is_none(),
        "killed in wave 1"
    );

    let second = start(&ns, "second");
    let finished = wait_until(&api, "resume", "the operation Succeeded", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| o.phase == OperationPhase::Succeeded)
    })
    .await;
    let state = finished.status.unwrap().operation_state.unwrap();
    assert_eq!(
        state.operation_id, stored.operation_id,
        "the same operation, resumed"
    );
    assert_eq!(state.revision.as_deref(), Some(revision.as_str()));
    assert_eq!(
        jobs.get("migrate").await.unwrap().uid(),
        migrate,
        "the same hook Job"
    );
    let hook = state
        .resources
        .iter()
        .find(|r| r.name == "migrate")
        .expect("the hook's record");
    assert_eq!(hook.hook_phase, Some(HookPhase::Succeeded));
    assert!(
        ns.api::<ConfigMap>()
            .get_opt("done")
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        event_reasons(&ns, "resume")
            .await
            .iter()
            .any(|r| r == "SyncResumed")
    );
    second.stop().await;
}

#[tokio::test]
async fn only_the_lease_holder_syncs_applications() {
    let repo = repository();
    let first_commit = commit_apps(repo.path(), &["a"], "1");
    let url = format!("file://{}", repo.path().display());
    let ns = setup("app-lease").await;
    let first = leading(&ns, "first").await;
    let second = start(&ns, "second");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &appset(&ns.name, &url, &["a"], json!({}))).await;
    synced_and_healthy(&ns, "a", &first_commit).await;
    assert!(first.metrics.application_reconcile_count() > 0);
    assert_eq!(
        second.metrics.application_reconcile_count(),
        0,
        "the waiting replica never acts"
    );
    assert!(
        !second
            .metrics
            .render()
            .contains("flotilla_sync_operations_total{")
    );

    first.stop().await;
    let next = commit_apps(repo.path(), &["a"], "2");
    synced_and_healthy(&ns, "a", &next).await;
    assert!(
        second
            .metrics
            .render()
            .contains("flotilla_sync_operations_total{result=\"Succeeded\"} 1")
    );
    second.stop().await;
}
