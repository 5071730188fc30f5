//! Fields owned by someone else on the real control plane: an autoscaler-like field manager
//! takes `spec.replicas` of a Deployment that `flotilla`'s controller synced from a bare
//! repository. Without `ignoreDifferences` the Application is OutOfSync, naming `/spec/replicas`;
//! with it, Synced; and with `RespectIgnoreDifferences=true` the next sync keeps the live
//! replicas.

mod controller_support;
mod support;

use flotilla::api::Application;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use controller_support::{setup, start};
use support::git_remote::Remote;
use support::{TestNamespace, apply, object, wait_until};

/// The Deployment `web` of the repository, with `image`.
fn deployment(image: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  \
         selector: {{matchLabels: {{app: web}}}}\n  template:\n    metadata: {{labels: {{app: web}}}}\n    \
         spec:\n      containers: [{{name: web, image: \"{image}\"}}]\n"
    )
}

/// The Application `web`, synced automatically into `<ns>-web`, with `extra` spec fields and
/// sync options.
fn application(ns: &TestNamespace, remote: &Remote, extra: Value, options: &[&str]) -> Application {
    let mut spec = json!({
        "project": "default",
        "source": {"repoURL": remote.file_url(), "targetRevision": "main", "path": "web"},
        "destination": {"server": "https://kubernetes.default.svc", "namespace": format!("{}-web", ns.name)},
        "syncPolicy": {"automated": {}, "syncOptions": options}
    });
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web"},
        "spec": spec
    }))
}

/// (sync status, revision, first difference of `web`).
fn sync_of(app: &Application) -> (String, String, String) {
    let status = app.status.as_ref();
    let sync = status.and_then(|s| s.sync.as_ref());
    let difference = status
        .and_then(|s| s.resources.iter().find(|r| r.name == "web"))
        .map(|r| r.first_difference.clone())
        .unwrap_or_default();
    (
        sync.map(|s| s.status.clone()).unwrap_or_default(),
        sync.map(|s| s.revision.clone()).unwrap_or_default(),
        difference,
    )
}

#[tokio::test]
async fn replicas_owned_by_an_autoscaler_are_ignored_and_kept() {
    let ns = setup("ignore-diff").await;
    let remote = Remote::new("platform");
    remote.write("web/deployment.yaml", &deployment("registry.example/web:1"));
    let first = remote.push("web");
    let controller = start(&ns, "only");
    let apps = ns.api::<Application>();
    apply(
        &apps,
        &application(&ns, &remote, json!({}), &["CreateNamespace=true"]),
    )
    .await;
    wait_until(&apps, "web", "web Synced", |app| {
        sync_of(app) == ("Synced".into(), first.clone(), String::new())
    })
    .await;

    // The autoscaler scales out, as its own field manager.
    let deployments: Api<Deployment> =
        Api::namespaced(ns.client.clone(), &format!("{}-web", ns.name));
    deployments
        .patch(
            "web",
            &PatchParams::apply("horizontal-pod-autoscaler").force(),
            &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                 "metadata": {"name": "web"}, "spec": {"replicas": 5}})),
        )
        .await
        .expect("scaling web");
    wait_until(&apps, "web", "web OutOfSync at /spec/replicas", |app| {
        sync_of(app) == ("OutOfSync".into(), first.clone(), "/spec/replicas".into())
    })
    .await;

    let ignore = json!({"ignoreDifferences": [
        {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}
    ]});
    apply(
        &apps,
        &application(
            &ns,
            &remote,
            ignore,
            &["CreateNamespace=true", "RespectIgnoreDifferences=true"],
        ),
    )
    .await;
    wait_until(&apps, "web", "web Synced with replicas ignored", |app| {
        sync_of(app) == ("Synced".into(), first.clone(), String::new())
    })
    .await;

    // A new revision is synced, and the autoscaler's replicas stay.
    remote.write("web/deployment.yaml", &deployment("registry.example/web:2"));
    let second = remote.push("web 2");
    wait_until(&apps, "web", "web Synced at the second revision", |app| {
        sync_of(app) == ("Synced".into(), second.clone(), String::new())
    })
    .await;
    let web = wait_until(&deployments, "web", "web at image 2", |d| {
        let spec = d.spec.as_ref().and_then(|s| s.template.spec.as_ref());
        spec.is_some_and(|s| s.containers[0].image.as_deref() == Some("registry.example/web:2"))
    })
    .await;
    assert_eq!(web.spec.and_then(|s| s.replicas), Some(5));
    controller.stop().await;
}
