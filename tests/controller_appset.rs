//! The ApplicationSet controller against a real API server, run in-process on cluster 1 in a
//! fresh namespace per test: Applications generated with owner references and the label,
//! `applicationsSync` policies, no writes when nothing changed, invalid input that changes
//! nothing, the clusters generator reacting to a cluster Secret, the refresh annotation on a git
//! generator, the plugin generator against plugin services on loopback, the
//! clusterDecisionResource generator following a custom resource's status (also from no
//! Application at all) and the watch on its kind reporting a change, and leader election between
//! two controllers (which run both reconcilers); `flotilla controller
//! --max-resources-status-count` bounding what the status lists; a label removed from the
//! template removed from the Applications; a status write the API server
//! refuses (an admission policy) reported as an Event on the ApplicationSet.

mod controller_support;
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use controller_support::{git, setup, start};
use flotilla::cluster::generator_inputs::decision_watches::DecisionWatches;
use flotilla::controller::appset::FIELD_MANAGER;
use flotilla_core::api::REFRESH_ANNOTATION;
use flotilla_core::api::application_set_status::{ConditionStatus, ConditionType};
use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};
use flotilla_core::controller::appset::ownership::RESOURCES_FINALIZER;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use support::{TestNamespace, apply, eventually, object, plugin_service, wait_until};

/// An ApplicationSet whose list generator yields one Application per name.
fn list_appset(names: &[&str], path_prefix: &str, policy: Option<&str>) -> ApplicationSet {
    let elements: Vec<Value> = names.iter().map(|n| json!({ "name": n })).collect();
    let mut appset = json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "stack"},
        "spec": {
            "generators": [{"list": {"elements": elements}}],
            "template": {
                "metadata": {"name": "{{name}}"},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "file:///srv/repo", "path": format!("{path_prefix}/{{{{name}}}}")},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "{{name}}"}
                }
            }
        }
    });
    if let Some(policy) = policy {
        appset["spec"]["syncPolicy"] = json!({ "applicationsSync": policy });
    }
    object(appset)
}

/// The Applications in the namespace: name → (what the ApplicationSet controller last wrote,
/// source path). What it wrote is the generation and the time of its managed-fields entry: the
/// Application controller writes status (and so the resourceVersion) on its own.
async fn applications(ns: &TestNamespace) -> BTreeMap<String, (String, String)> {
    let api: Api<Application> = ns.api();
    api.list(&Default::default())
        .await
        .expect("lists Applications")
        .items
        .into_iter()
        .map(|app| {
            (
                app.name_any(),
                (
                    written_by_appset_controller(&app),
                    app.spec.source.path.clone(),
                ),
            )
        })
        .collect()
}

fn written_by_appset_controller(app: &Application) -> String {
    let time = app
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .find(|entry| entry.manager.as_deref() == Some(FIELD_MANAGER))
        .and_then(|entry| entry.time.as_ref())
        .map(|time| time.0.to_string());
    format!("generation {:?} at {time:?}", app.metadata.generation)
}

/// Waits until the Applications have exactly `names`.
async fn wait_for_names(ns: &TestNamespace, names: &[&str]) -> BTreeMap<String, (String, String)> {
    eventually(&format!("Applications {names:?}"), async || {
        let current = applications(ns).await;
        if current.keys().map(String::as_str).eq(names.iter().copied()) {
            Ok(current)
        } else {
            Err(format!("{:?}", current.keys().collect::<Vec<_>>()))
        }
    })
    .await
}

/// Sets the refresh annotation and waits until the controller has removed it, i.e. a whole
/// reconcile ran after it was set.
async fn refresh(ns: &TestNamespace, name: &str) {
    let api: Api<ApplicationSet> = ns.api();
    let patch = json!({"metadata": {"annotations": {REFRESH_ANNOTATION: "1"}}});
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .expect("annotates");
    wait_until(&api, name, "the refresh annotation removed", |appset| {
        !appset.annotations().contains_key(REFRESH_ANNOTATION)
    })
    .await;
}

fn condition(
    appset: &ApplicationSet,
    type_: ConditionType,
) -> Option<(ConditionStatus, String, String)> {
    appset
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status, c.reason.clone(), c.message.clone()))
}

#[tokio::test]
async fn generated_applications_are_owned_unchanged_ones_not_written_removed_ones_deleted() {
    let ns = setup("appset-sync").await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    let appset = apply(&appsets, &list_appset(&["a", "b", "c"], "apps", None)).await;
    let before = wait_for_names(&ns, &["a", "b", "c"]).await;

    let api: Api<Application> = ns.api();
    for name in ["a", "b", "c"] {
        let app = api.get(name).await.expect("reads");
        let owner = &app.metadata.owner_references.as_ref().expect("owned")[0];
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
                owner.controller
            ),
            (
                "ApplicationSet",
                "stack",
                appset.uid().unwrap().as_str(),
                Some(true)
            )
        );
        assert_eq!(app.labels()[APPLICATION_SET_LABEL], "stack");
        assert_eq!(
            app.metadata.finalizers,
            Some(vec![RESOURCES_FINALIZER.to_string()]),
            "resources are deleted with the Application"
        );
    }
    let stored = wait_until(&appsets, "stack", "status with three resources", |a| {
        a.status.as_ref().is_some_and(|s| s.resources.len() == 3)
    })
    .await;
    assert_eq!(
        condition(&stored, ConditionType::ResourcesUpToDate).map(|c| c.0),
        Some(ConditionStatus::True)
    );
    assert_eq!(
        condition(&stored, ConditionType::ErrorOccurred).map(|c| c.0),
        Some(ConditionStatus::False)
    );

    refresh(&ns, "stack").await;
    assert_eq!(
        applications(&ns).await,
        before,
        "an unchanged reconcile writes nothing"
    );

    apply(&appsets, &list_appset(&["a", "b"], "apps", None)).await;
    let after = wait_for_names(&ns, &["a", "b"]).await;
    assert_eq!(after["a"], before["a"]);
    controller.stop().await;
}

#[tokio::test]
async fn status_lists_at_most_max_resources_status_count_applications_and_counts_them_all() {
    let ns = setup("appset-listed").await;
    let controller =
        support::controller_process_with(&ns, "only", &["--max-resources-status-count", "2"]);
    let appsets: Api<ApplicationSet> = ns.api();
    let listed = |names: &'static [&'static str], count: i64| {
        move |appset: &ApplicationSet| {
            appset.status.as_ref().is_some_and(|s| {
                s.resources_count == Some(count)
                    && s.resources
                        .iter()
                        .map(|r| r.name.as_str())
                        .eq(names.iter().copied())
            })
        }
    };
    apply(&appsets, &list_appset(&["c", "a", "b"], "apps", None)).await;
    wait_until(
        &appsets,
        "stack",
        "the first two of three listed",
        listed(&["a", "b"], 3),
    )
    .await;
    apply(&appsets, &list_appset(&["c"], "apps", None)).await;
    wait_until(&appsets, "stack", "the one left listed", listed(&["c"], 1)).await;
    controller.kill();
}

#[tokio::test]
async fn a_label_removed_from_the_template_is_removed_from_the_applications() {
    let ns = setup("appset-label").await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    let labelled = |labels: Value| {
        let mut appset = serde_json::to_value(list_appset(&["a"], "apps", None)).unwrap();
        appset["spec"]["template"]["metadata"]["labels"] = labels;
        object::<ApplicationSet>(appset)
    };
    apply(&appsets, &labelled(json!({"team": "shop", "tier": "web"}))).await;
    let api: Api<Application> = ns.api();
    let label_of = |app: &Application, key: &str| app.labels().get(key).cloned();
    wait_until(&api, "a", "both labels", |app| {
        label_of(app, "team").is_some() && label_of(app, "tier").is_some()
    })
    .await;
    apply(&appsets, &labelled(json!({"team": "shop"}))).await;
    wait_until(&api, "a", "the label removed", |app| {
        label_of(app, "team").is_some() && label_of(app, "tier").is_none()
    })
    .await;
    controller.stop().await;
}

#[tokio::test]
async fn a_status_the_api_server_refuses_is_an_event_on_the_application_set() {
    let ns = setup("appset-refused").await;
    // A ValidatingAdmissionPolicy refusing every status write of this namespace's
    // ApplicationSets, as the API server refuses one too large for etcd.
    let refusal = support::admission::Refusal::install(
        &ns,
        "refuse-appset-status",
        json!([{
            "apiGroups": ["flotilla.dev"], "apiVersions": ["*"],
            "operations": ["UPDATE"], "resources": ["applicationsets/status"],
        }]),
        "false",
        "status refused by the test's policy",
    )
    .await;

    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &list_appset(&["a"], "apps", None)).await;
    let events: Api<Event> = ns.api();
    let note = eventually("an Event saying the status was refused", async || {
        let list = events
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        list.items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("stack"))
            .filter(|e| e.reason.as_deref() == Some("ApplicationSetError"))
            .find_map(|e| e.note.filter(|note| note.starts_with("StatusError")))
            .ok_or_else(|| "no such Event yet".to_string())
    })
    .await;
    assert!(
        note.contains("writing the status of ApplicationSet stack")
            && note.contains("status refused by the test's policy"),
        "{note}"
    );
    controller.stop().await;
    refusal.remove().await;
}

#[tokio::test]
async fn create_only_and_create_update_keep_removed_applications() {
    // (policy, source path of "a" after the template changed)
    let cases = [("create-only", "apps/a"), ("create-update", "v2/a")];
    for (policy, path_of_a) in cases {
        let ns = setup(policy).await;
        let controller = start(&ns, "only");
        let appsets: Api<ApplicationSet> = ns.api();
        apply(&appsets, &list_appset(&["a", "b"], "apps", Some(policy))).await;
        wait_for_names(&ns, &["a", "b"]).await;

        apply(&appsets, &list_appset(&["a", "c"], "v2", Some(policy))).await;
        wait_for_names(&ns, &["a", "b", "c"]).await;
        // A whole reconcile after the change: whatever it was allowed to do is done.
        refresh(&ns, "stack").await;
        let after = applications(&ns).await;
        assert_eq!(after["a"].1, path_of_a, "{policy}");
        assert_eq!(after["b"].1, "apps/b", "{policy}: b is kept as it was");
        controller.stop().await;
    }
}

#[tokio::test]
async fn invalid_input_sets_error_occurred_and_changes_nothing() {
    let ns = setup("appset-invalid").await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &list_appset(&["a"], "apps", None)).await;
    let before = wait_for_names(&ns, &["a"]).await;

    // Two parameter sets naming the same Application, and one Application fewer.
    apply(&appsets, &list_appset(&["dup", "dup"], "v2", None)).await;
    let failed = wait_until(&appsets, "stack", "ErrorOccurred=True", |a| {
        condition(a, ConditionType::ErrorOccurred).is_some_and(|c| c.0 == ConditionStatus::True)
    })
    .await;
    let (_, reason, message) = condition(&failed, ConditionType::ErrorOccurred).unwrap();
    assert_eq!(reason, "RenderError");
    assert!(message.contains("the same name"), "{message}");
    assert_eq!(
        condition(&failed, ConditionType::ResourcesUpToDate).map(|c| c.0),
        Some(ConditionStatus::False)
    );
    assert_eq!(
        applications(&ns).await,
        before,
        "nothing that exists changed"
    );

    apply(&appsets, &list_appset(&["a"], "apps", None)).await;
    wait_until(&appsets, "stack", "ErrorOccurred=False again", |a| {
        condition(a, ConditionType::ErrorOccurred).is_some_and(|c| c.0 == ConditionStatus::False)
    })
    .await;
    controller.stop().await;
}

/// An ApplicationSet `name` making `guestbook-<cluster name>` for each cluster `generator` yields,
/// deploying to that cluster's server.
fn guestbook_per_cluster(name: &str, generator: Value) -> ApplicationSet {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name},
        "spec": {
            "generators": [generator],
            "template": {
                "metadata": {"name": "guestbook-{{name}}"},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "file:///srv/repo", "path": "guestbook"},
                    "destination": {"server": "{{server}}", "namespace": "guestbook"}
                }
            }
        }
    }))
}

/// The cluster Secret registering cluster `name` at `https://<name>.example.com`.
fn cluster_secret(name: &str) -> Secret {
    object(json!({
        "metadata": {
            "name": format!("cluster-{name}"),
            "labels": {"argocd.argoproj.io/secret-type": "cluster"}
        },
        "stringData": {"name": name, "server": format!("https://{name}.example.com")}
    }))
}

#[tokio::test]
async fn the_clusters_generator_reacts_to_a_new_cluster_secret() {
    let ns = setup("appset-clusters").await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(
        &appsets,
        &guestbook_per_cluster("per-cluster", json!({"clusters": {}})),
    )
    .await;
    // The cluster the controller runs in is always registered, as in Argo CD.
    wait_for_names(&ns, &["guestbook-in-cluster"]).await;

    apply(&ns.api::<Secret>(), &cluster_secret("edge")).await;
    wait_for_names(&ns, &["guestbook-edge", "guestbook-in-cluster"]).await;
    let app = ns
        .api::<Application>()
        .get("guestbook-edge")
        .await
        .expect("reads");
    assert_eq!(
        app.spec.destination.server.as_deref(),
        Some("https://edge.example.com")
    );
    controller.stop().await;
}

fn add_app_dir(repo: &Path, name: &str) {
    std::fs::create_dir_all(repo.join("apps").join(name)).unwrap();
    std::fs::write(
        repo.join("apps").join(name).join("cm.yaml"),
        "kind: ConfigMap\n",
    )
    .unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", name]);
}

#[tokio::test]
async fn the_refresh_annotation_regenerates_a_git_generator() {
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q", "-b", "main"]);
    add_app_dir(repo.path(), "one");
    let url = format!("file://{}", repo.path().display());

    let ns = setup("appset-git").await;
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    let appset: ApplicationSet = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "from-git"},
        "spec": {
            "generators": [{"git": {"repoURL": url, "revision": "main", "directories": [{"path": "apps/*"}]}}],
            "template": {
                "metadata": {"name": "{{path.basename}}"},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": url, "targetRevision": "main", "path": "{{path}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "{{path.basename}}"}
                }
            }
        }
    }));
    apply(&appsets, &appset).await;
    wait_for_names(&ns, &["one"]).await;

    add_app_dir(repo.path(), "two");
    refresh(&ns, "from-git").await;
    wait_for_names(&ns, &["one", "two"]).await;
    controller.stop().await;
}

#[tokio::test]
async fn only_the_lease_holder_reconciles_and_another_takes_over_when_it_stops() {
    let ns = setup("appset-lease").await;
    let first = start(&ns, "first");
    let metrics = Arc::clone(&first.metrics);
    eventually("the first controller leading", async || {
        if metrics.render().contains("flotilla_leader 1") {
            Ok(())
        } else {
            Err(metrics.render())
        }
    })
    .await;
    let second = start(&ns, "second");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &list_appset(&["a"], "apps", None)).await;
    wait_for_names(&ns, &["a"]).await;
    refresh(&ns, "stack").await;
    assert!(first.metrics.reconcile_count() > 0);
    assert_eq!(
        second.metrics.reconcile_count(),
        0,
        "the waiting replica never reconciles"
    );
    assert!(
        first.readiness.is_ready() && second.readiness.is_ready(),
        "the leader and the replica standing by are both ready"
    );

    first.stop().await;
    apply(&appsets, &list_appset(&["a", "b"], "apps", None)).await;
    wait_for_names(&ns, &["a", "b"]).await;
    let taken_over = Arc::clone(&second.metrics);
    eventually("the second replica reconciling as the leader", async || {
        let metrics = taken_over.render();
        if taken_over.reconcile_count() > 0 && metrics.contains("flotilla_leader 1") {
            Ok(())
        } else {
            Err(metrics)
        }
    })
    .await;
    second.stop().await;
}

/// An ApplicationSet `name` whose plugin generator uses ConfigMap `config_map`.
fn plugin_appset(name: &str, config_map: &str) -> ApplicationSet {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name},
        "spec": {
            "generators": [{"plugin": {
                "configMapRef": {"name": config_map},
                "input": {"parameters": {"apps": ["alpha", "beta"], "env": "prod"}},
                "values": {"base": "apps"},
            }}],
            "template": {
                "metadata": {"name": "{{app}}-{{generator.input.parameters.env}}"},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": "file:///srv/repo", "path": "{{values.base}}/{{app}}-{{appset}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "{{app}}"}
                }
            }
        }
    }))
}

#[tokio::test]
async fn the_plugin_generator_asks_a_plugin_service_and_names_it_when_it_fails() {
    let ns = setup("appset-plugin").await;
    let (working, failing) = (
        plugin_service::start("s3cret", 200).await,
        plugin_service::start("s3cret", 500).await,
    );
    let secret: Secret = object(json!({
        "metadata": {"name": "plugin-token"},
        "stringData": {"token": "s3cret"}
    }));
    apply(&ns.api::<Secret>(), &secret).await;
    for (name, url) in [("my-plugin", &working), ("broken-plugin", &failing)] {
        let config_map: k8s_openapi::api::core::v1::ConfigMap = object(json!({
            "metadata": {"name": name},
            "data": {"baseUrl": url, "token": "$plugin-token:token"}
        }));
        apply(&ns.api(), &config_map).await;
    }
    let controller = start(&ns, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &plugin_appset("from-plugin", "my-plugin")).await;
    let generated = wait_for_names(&ns, &["alpha-prod", "beta-prod"]).await;
    assert_eq!(generated["alpha-prod"].1, "apps/alpha-from-plugin");

    apply(
        &appsets,
        &plugin_appset("from-broken-plugin", "broken-plugin"),
    )
    .await;
    let failed = wait_until(&appsets, "from-broken-plugin", "ErrorOccurred=True", |a| {
        condition(a, ConditionType::ErrorOccurred).is_some_and(|c| c.0 == ConditionStatus::True)
    })
    .await;
    let (_, reason, message) = condition(&failed, ConditionType::ErrorOccurred).unwrap();
    assert_eq!(reason, "GenerateError");
    let expected = format!(
        "plugin broken-plugin ({failing}/api/v1/getparams.execute): answered HTTP 500: plugin exploded"
    );
    assert!(message.contains(&expected), "{message}");
    assert_eq!(
        wait_for_names(&ns, &["alpha-prod", "beta-prod"])
            .await
            .len(),
        2,
        "the failing ApplicationSet generated nothing"
    );
    controller.stop().await;
}

/// The decisions of a clusterDecisionResource generator in a test namespace: the custom resource
/// `fleet` of a kind of its own, read through ConfigMap `placement`, and the cluster Secrets of
/// `clusters`.
struct Placement {
    resource: kube::api::ApiResource,
    decisions: Api<kube::api::DynamicObject>,
}

impl Placement {
    async fn install(ns: &TestNamespace, clusters: &[&str]) -> Self {
        let resource = support::install_kind(
            &ns.client,
            "decisions.flotilla.test",
            "PlacementDecision",
            "placementdecisions",
        )
        .await;
        for cluster in clusters {
            apply(&ns.api::<Secret>(), &cluster_secret(cluster)).await;
        }
        let config_map: k8s_openapi::api::core::v1::ConfigMap = object(json!({
            "metadata": {"name": "placement"},
            "data": {
                "apiVersion": "decisions.flotilla.test/v1",
                "kind": "PlacementDecision",
                "statusListKey": "decisions",
                "matchKey": "clusterName"
            }
        }));
        apply(&ns.api(), &config_map).await;
        let decisions: Api<kube::api::DynamicObject> =
            Api::namespaced_with(ns.client.clone(), &ns.name, &resource);
        let mut decision = kube::api::DynamicObject::new("fleet", &resource);
        decision.metadata.labels = Some([("placement".to_string(), "fleet".to_string())].into());
        apply(&decisions, &decision).await;
        Self {
            resource,
            decisions,
        }
    }

    /// Writes `clusters` as the decisions in the resource's status.
    async fn decide(&self, clusters: &[&str]) {
        let list: Vec<Value> = clusters.iter().map(|c| json!({"clusterName": c})).collect();
        self.decisions
            .patch_status(
                "fleet",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"decisions": list}})),
            )
            .await
            .expect("writes the decisions");
    }

    /// ApplicationSet `placed`: one guestbook per decided cluster, never polling within a test
    /// (only the watch on the decision kind can notice a change).
    fn appset() -> ApplicationSet {
        let mut appset = guestbook_per_cluster(
            "placed",
            json!({"clusterDecisionResource": {
                "configMapRef": "placement",
                "labelSelector": {"matchLabels": {"placement": "fleet"}},
                "requeueAfterSeconds": 3600
            }}),
        );
        // No resources finalizer: the clusters are fictitious, nothing could be pruned there.
        appset.spec.sync_policy = Some(object(json!({"preserveResourcesOnDeletion": true})));
        appset
    }
}

#[tokio::test]
async fn the_cluster_decision_resource_generator_follows_the_decisions_in_status() {
    let ns = setup("appset-decisions").await;
    let placement = Placement::install(&ns, &["east", "west"]).await;
    placement.decide(&["east", "west"]).await;

    let controller = start(&ns, "only");
    apply(&ns.api::<ApplicationSet>(), &Placement::appset()).await;
    wait_for_names(&ns, &["guestbook-east", "guestbook-west"]).await;
    let east = ns
        .api::<Application>()
        .get("guestbook-east")
        .await
        .expect("reads");
    assert_eq!(
        east.spec.destination.server.as_deref(),
        Some("https://east.example.com")
    );

    placement.decide(&["east"]).await;
    wait_for_names(&ns, &["guestbook-east"]).await;
    controller.stop().await;
}

/// A change of the decisions alone regenerates the ApplicationSet, through the controller's watch
/// on the decision kind. With no Application there is no Application event to re-trigger it, the
/// poll is an hour away, and nothing else changes; what remains is a watcher of the controller
/// relisting, which reconciles every ApplicationSet (on the shared test control plane a watch
/// ends whenever a CRD's spec changes, and resuming it from an older resourceVersion gets HTTP 410
/// and a relist). So the controller runs on a client that records its watchers' lists (the
/// `limit=` pages a relist reads; the reconcilers' own lists have no limit, and a resumed watch
/// re-delivers nothing), and a decision counts as proof only when the new Application appeared
/// with no such list in between. A window with one is inconclusive and the next cluster is
/// decided; with the decision watch disabled no Application appears without a relist, and the
/// test fails.
#[tokio::test]
async fn a_decision_change_alone_regenerates_through_the_decision_watch() {
    const CLUSTERS: [&str; 8] = ["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"];
    let ns = setup("appset-decision-watch").await;
    let placement = Placement::install(&ns, &CLUSTERS).await;
    placement.decide(&[]).await;

    let relists = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let observed = TestNamespace {
        client: relist_recording_client(Arc::clone(&relists)).await,
        name: ns.name.clone(),
    };
    let controller = start(&observed, "only");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &Placement::appset()).await;
    wait_until(&appsets, "placed", "a status", |appset| {
        condition(appset, ConditionType::ResourcesUpToDate).is_some()
    })
    .await;
    // The status write makes one more reconcile, which changes nothing.
    eventually("the reconcile after the status write", async || {
        let count = controller.metrics.reconcile_count();
        if count >= 2 {
            Ok(())
        } else {
            Err(format!("{count} reconciles"))
        }
    })
    .await;
    assert!(applications(&ns).await.is_empty());

    let mut inconclusive = Vec::new();
    for decided in 1..=CLUSTERS.len() {
        let before = relists.lock().expect("not poisoned").len();
        placement.decide(&CLUSTERS[..decided]).await;
        let names: Vec<String> = CLUSTERS[..decided]
            .iter()
            .map(|cluster| format!("guestbook-{cluster}"))
            .collect();
        wait_for_names(&ns, &names.iter().map(String::as_str).collect::<Vec<_>>()).await;
        let relisted = relists.lock().expect("not poisoned")[before..].to_vec();
        if relisted.is_empty() {
            controller.stop().await;
            return;
        }
        inconclusive.push(format!("{}: {relisted:?}", CLUSTERS[decided - 1]));
    }
    panic!(
        "a watcher relisted after every decision before its Application appeared, so none shows \
         the decision watch regenerating: {inconclusive:#?}"
    );
}

/// A client of cluster 1 that records in `lists` the path and query of every page of a watcher's
/// list (a request with a `limit`).
async fn relist_recording_client(lists: Arc<std::sync::Mutex<Vec<String>>>) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(support::kubeconfig_path(1)).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("a client configuration");
    let record = tower::layer::layer_fn(move |service| {
        let lists = Arc::clone(&lists);
        tower::util::MapRequest::new(
            service,
            move |request: http::Request<kube::client::Body>| {
                let query = request.uri().query().unwrap_or_default();
                if query.contains("limit=") && !query.contains("watch=") {
                    let path = request.uri().path_and_query().map(ToString::to_string);
                    lists.lock().expect("not poisoned").extend(path);
                }
                request
            },
        )
    });
    kube::client::ClientBuilder::try_from(config)
        .expect("a client builder")
        .with_layer(&record)
        .build()
}

/// The watch itself, without a controller: once started on the decision kind it reports the
/// existing resource, then a change of its decisions, to the trigger it was given.
#[tokio::test]
async fn a_decision_watch_reports_a_change_of_the_decisions() {
    let ns = setup("decision-watch").await;
    let placement = Placement::install(&ns, &["east"]).await;
    let watches = Arc::new(DecisionWatches::new(ns.client.clone(), ns.name.clone()));
    let (trigger, mut changes) = futures::channel::mpsc::unbounded();
    watches.notify(trigger);
    watches.ensure(&placement.resource, &tokio::runtime::Handle::current());
    // Bounded only so that a broken watch fails the test instead of hanging it.
    let mut reported = async |what: &str| {
        tokio::time::timeout(support::TIMEOUT, changes.next())
            .await
            .unwrap_or_else(|_| panic!("{what} not reported within {:?}", support::TIMEOUT))
            .expect("the trigger stays open");
    };
    reported("the existing resource").await;
    placement.decide(&["east"]).await;
    reported("the change of its decisions").await;
}
