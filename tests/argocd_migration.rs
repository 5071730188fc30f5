//! Coming from Argo CD: a Jsonnet directory source (the guestbook of tests/fixtures/jsonnet/,
//! shaped like Argo CD's example application: a `.jsonnet` importing a `.libsonnet` beside it
//! and one from `libs`, with top-level arguments (one from `$ARGOCD_APP_NAME`) and an external
//! variable) is planned by
//! `flotilla plan` of an Application file and deployed by the controller on the real control
//! plane; a Jsonnet error names the file and line, an import out of the repository is refused,
//! and an evaluation past the exec timeout or the memory limit is stopped and named.
//! Objects Argo CD wrote (its tracking annotation, its instance label) are adopted in place by
//! the first sync: same uids, Flotilla's tracking written; another Application's object in the
//! namespace is neither pruned nor changed.
//! (Feature `controlplane`; the offline `flotilla plan` tests are in argocd_migration_offline.rs.)

mod argocd_migration_support;
mod controller_support;
mod support;

use flotilla::api::Application;
use flotilla::sync::OperationPhase;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Service};
use kube::Api;
use kube::api::PostParams;
use serde_json::{Value, json};

use controller_support::{setup, start};
use support::fixture_dir::copy_dir;
use support::git_remote::{GitDaemon, Remote};
use support::{apply, object, wait_until};

use argocd_migration_support::{fixtures, guestbook_directory};

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

/// An Application of `path` in `url`, synced automatically (with prune) into `namespace`.
fn application(
    name: &str,
    namespace: &str,
    url: &str,
    path: &str,
    directory: Value,
) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "default",
            "source": {"repoURL": url, "targetRevision": "main", "path": path,
                       "directory": directory},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": {"automated": {"prune": true}}
        }
    }))
}

#[tokio::test]
async fn the_jsonnet_guestbook_deploys_through_the_controller() {
    let remote = Remote::new("jsonnet");
    copy_dir(&fixtures(), remote.work());
    remote.push("the jsonnet guestbook");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let ns = setup("jsonnet").await;
    let apps: Api<Application> = ns.api();
    let guestbook = application(
        "guestbook",
        &ns.name,
        &url,
        "guestbook",
        guestbook_directory(),
    );
    apply(&apps, &guestbook).await;
    let stored = apps.get("guestbook").await.expect("stored");
    assert_eq!(
        stored
            .spec
            .source
            .directory
            .and_then(|d| d.jsonnet)
            .map(|j| (j.tlas.len(), j.ext_vars.len(), j.libs)),
        Some((2, 1, vec!["lib".to_owned()])),
        "the API server keeps directory.jsonnet"
    );
    let controller = start(&ns, "jsonnet");
    synced(&apps, "guestbook").await;
    let deployment = ns
        .api::<Deployment>()
        .get("guestbook-ui")
        .await
        .expect("the Deployment");
    let spec = deployment.spec.expect("a spec");
    assert_eq!(spec.replicas, Some(2), "the top-level argument, as code");
    let image = spec.template.spec.expect("a pod spec").containers[0]
        .image
        .clone();
    assert_eq!(
        image.as_deref(),
        Some("registry.local/guestbook-ui:0.2"),
        "the extVar"
    );
    let service = ns
        .api::<Service>()
        .get("guestbook-ui")
        .await
        .expect("the Service");
    let ports = service.spec.and_then(|s| s.ports).unwrap_or_default();
    assert_eq!(ports[0].port, 80, "params.libsonnet beside the file");
    controller.stop().await;
}

/// A ConfigMap as Argo CD's controller writes it for `app` (annotation+label tracking: its
/// tracking annotation and instance label), with `data`.
fn argocd_config_map(name: &str, namespace: &str, app: &str, data: &Value) -> ConfigMap {
    object(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": {"app.kubernetes.io/instance": app},
            "annotations": {
                "argocd.argoproj.io/tracking-id": format!("{app}:/ConfigMap:{namespace}/{name}"),
            },
        },
        "data": data,
    }))
}

#[tokio::test]
async fn objects_argo_cd_tracked_are_adopted_in_place() {
    let remote = Remote::new("adopted");
    let manifests = remote.work().join("app");
    std::fs::create_dir_all(&manifests).unwrap();
    for name in ["settings", "labelled"] {
        std::fs::write(
            manifests.join(format!("{name}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  owner: flotilla\n"),
        )
        .unwrap();
    }
    remote.push("the Application's manifests");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let ns = setup("adopted").await;
    let maps: Api<ConfigMap> = ns.api();
    let argocd = PostParams {
        field_manager: Some("argocd-controller".into()),
        ..PostParams::default()
    };
    let before = json!({"owner": "argocd"});
    let mut written = Vec::new();
    for map in [
        argocd_config_map("settings", &ns.name, "guestbook", &before),
        argocd_config_map("other-settings", &ns.name, "other", &before),
    ] {
        written.push(
            maps.create(&argocd, &map)
                .await
                .expect("written as Argo CD would"),
        );
    }
    // The label method alone: the instance label, no annotation.
    let mut labelled = argocd_config_map("labelled", &ns.name, "guestbook", &before);
    labelled.metadata.annotations = None;
    written.push(maps.create(&argocd, &labelled).await.expect("written"));

    let apps: Api<Application> = ns.api();
    apply(
        &apps,
        &application("guestbook", &ns.name, &url, "app", json!({})),
    )
    .await;
    let controller = start(&ns, "adopted");
    synced(&apps, "guestbook").await;

    for name in ["settings", "labelled"] {
        let adopted = maps.get(name).await.expect("still there");
        let old = written
            .iter()
            .find(|m| m.metadata.name.as_deref() == Some(name))
            .unwrap();
        assert_eq!(
            adopted.metadata.uid, old.metadata.uid,
            "{name} adopted in place"
        );
        assert_eq!(
            adopted
                .data
                .unwrap_or_default()
                .get("owner")
                .map(String::as_str),
            Some("flotilla"),
            "{name} synced"
        );
        let annotations = adopted.metadata.annotations.unwrap_or_default();
        assert_eq!(
            annotations.get("flotilla.dev/tracking-id"),
            Some(&format!(
                "{}_guestbook:/ConfigMap:{}/{name}",
                ns.name, ns.name
            )),
            "{name} tracked by Flotilla"
        );
    }
    let other = maps.get("other-settings").await.expect("not pruned");
    let old = &written[1];
    assert_eq!(
        (&other.metadata.uid, &other.metadata.resource_version),
        (&old.metadata.uid, &old.metadata.resource_version),
        "another Application's object is untouched"
    );
    controller.stop().await;
}
