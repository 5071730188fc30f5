//! Flotilla's API against a real API server: the committed CRDs are accepted and Established,
//! rendered Applications and an Argo CD ApplicationSet are stored without losing a field, and the
//! clusters generator reads its inventory from cluster Secrets in a namespace. What the CRDs ask
//! of a current API server: Applications selectable by project (`--field-selector
//! spec.project=…`), and a destination naming both server and name refused by a CEL rule.

mod support;

use std::path::PathBuf;

use flotilla::cluster::generator_inputs::live_inventory::read_inventory;
use flotilla::render::{Sources, render_application_set};
use flotilla::repo::LocalRepos;
use flotilla_core::api::document::parse_application_set;
use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::json;
use support::{apply, namespace, object};

fn example(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test]
async fn crds_are_established_and_store_rendered_applications_unchanged() {
    let ns = namespace(1, "crds").await;
    support::install_flotilla_crds(&ns.client).await;

    let mut appset =
        parse_application_set("three-tier-stack.yaml", &example("three-tier-stack.yaml"))
            .expect("example parses");
    appset.metadata.namespace = Some(ns.name.clone());
    let appsets: Api<ApplicationSet> = ns.api();
    let stored = apply(&appsets, &appset).await;
    assert_eq!(
        stored.spec, appset.spec,
        "the ApplicationSet lost or changed fields"
    );

    let (inventory, repos) = (
        flotilla::cluster::generator_inputs::inventory::StaticInventory::default(),
        LocalRepos::default(),
    );
    let sources = Sources::offline(&inventory, &repos);
    let applications = render_application_set(&stored, sources).expect("renders");
    let api: Api<Application> = ns.api();
    for mut application in applications {
        application.metadata.namespace = Some(ns.name.clone());
        let stored = apply(&api, &application).await;
        assert_eq!(
            stored.spec, application.spec,
            "the Application lost or changed fields"
        );
        assert_eq!(stored.metadata.labels, application.metadata.labels);
    }
    let names: Vec<_> = api
        .list(&Default::default())
        .await
        .expect("lists")
        .items
        .into_iter()
        .filter_map(|a| a.metadata.name)
        .collect();
    assert_eq!(
        names,
        [
            "platform-backend-eu-west",
            "platform-backend-us-east",
            "platform-database-eu-west",
            "platform-database-us-east",
            "platform-frontend-eu-west",
            "platform-frontend-us-east",
        ]
    );
}

#[tokio::test]
async fn the_clusters_generator_reads_cluster_secrets_from_a_namespace() {
    let ns = namespace(1, "inventory").await;
    let secrets: Api<Secret> = ns.api();
    let registrations: Vec<serde_json::Value> =
        serde_saphyr::from_str(&example("clusters.yaml")).expect("parses");
    for registration in registrations {
        let secret: Secret = object(registration);
        apply(&secrets, &secret).await;
    }
    let unrelated: Secret = object(serde_json::json!({
        "metadata": {"name": "not-a-cluster"}, "stringData": {"server": "https://ignored"}
    }));
    apply(&secrets, &unrelated).await;

    let inventory = read_inventory(&ns.client, &ns.name)
        .await
        .expect("reads the inventory");
    let names: Vec<_> = inventory
        .registrations()
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "prod-eu-1",
            "prod-eu-2",
            "prod-us-1",
            "prod-us-2",
            "staging-eu"
        ]
    );

    let appset = parse_application_set(
        "multi-cluster-promotion.yaml",
        &example("multi-cluster-promotion.yaml"),
    )
    .expect("example parses");
    let repos = LocalRepos::default();
    let live =
        render_application_set(&appset, Sources::offline(&inventory, &repos)).expect("renders");
    let golden: Vec<Application> =
        serde_saphyr::from_str(&example("expected/multi-cluster-promotion.yaml"))
            .expect("golden parses");
    assert_eq!(live.len(), golden.len());
    for (live, golden) in live.iter().zip(&golden) {
        assert_eq!(
            (&live.metadata.name, &live.spec),
            (&golden.metadata.name, &golden.spec)
        );
    }
}

/// An Application of `project` deploying to `destination`.
fn application(name: &str, project: &str, destination: serde_json::Value) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": project,
            "source": {"repoURL": "https://git.example.com/apps.git", "path": name},
            "destination": destination
        }
    }))
}

#[tokio::test]
async fn applications_are_selected_by_project_and_a_double_destination_is_refused() {
    let ns = namespace(1, "crd-rules").await;
    support::install_flotilla_crds(&ns.client).await;
    let apps: Api<Application> = ns.api();
    let in_cluster = json!({"server": "https://kubernetes.default.svc", "namespace": "web"});
    for (name, project) in [("web", "team"), ("db", "team"), ("tools", "default")] {
        apps.create(
            &PostParams::default(),
            &application(name, project, in_cluster.clone()),
        )
        .await
        .expect("creates the Application");
    }
    let selected = apps
        .list(&ListParams::default().fields("spec.project=team"))
        .await
        .expect("lists by field");
    let mut names: Vec<_> = selected
        .items
        .iter()
        .filter_map(|app| app.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["db", "web"]);

    let both = json!({"server": "https://kubernetes.default.svc", "name": "in-cluster",
                      "namespace": "web"});
    let refused = apps
        .create(&PostParams::default(), &application("both", "team", both))
        .await
        .expect_err("the API server refuses both server and name");
    assert!(
        refused
            .to_string()
            .contains("destination sets both server and name; set one"),
        "{refused}"
    );
}
