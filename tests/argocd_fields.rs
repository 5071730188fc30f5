//! Argo CD's fields either work as in Argo CD or are refused by name, on the real control plane:
//! `syncPolicy.managedNamespaceMetadata` labels and annotates the namespace `CreateNamespace=true`
//! writes (an existing one too) and follows the Application at the next sync, keeping what
//! others set; `Validate=false` applies an object the server's strict field validation refuses
//! (and server-side applies the others, keeping what other managers set);
//! `FailOnSharedResource=true` fails the sync naming the object and the other Application;
//! `argocd.argoproj.io/skip-reconcile` leaves an Application alone until it is removed; an
//! ApplicationSet's `preservedFields` keeps a label changed by hand; `kubectl apply` refuses
//! the fields Flotilla does not implement (the CRDs agree with `render`) and accepts
//! `applyNestedSelectors`; what the CRD keeps free-form (a `templatePatch`'s fields, a generator
//! override, a nested matrix, an analysis Job's spec) is refused by name by `render` and the
//! controller, nothing written; `forceCommonLabels`/`forceCommonAnnotations` with the real
//! kustomize; a negative retry limit retries until the sync succeeds; the refresh annotations
//! refresh and are removed; the controller-wide sync timeout and the annotation's `0`; the wave
//! delay; and `ServerSideDiff=true` refused by name.

mod controller_support;
mod support;

use std::collections::BTreeMap;
use std::process::Command;

use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use controller_support::{Options, RESYNC, appset, setup, start, start_with};
use flotilla::sync::execute::ExecuteSettings;
use flotilla_core::api::application_set_status::{ConditionStatus, ConditionType};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use std::time::Duration;
use support::git_remote::{GitDaemon, Remote};
use support::{TestNamespace, apply, kubeconfig_path, kubectl, object, wait_until};

/// A repository served on loopback with these files; returns the daemon (kept alive) and the URL.
fn served(name: &str, files: &[(&str, &str)]) -> (GitDaemon, String, Remote) {
    let remote = Remote::new(name);
    for (path, content) in files {
        remote.write(path, content);
    }
    remote.push("manifests");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    (daemon, url, remote)
}

/// A ConfigMap manifest named `name` with `extra` merged into it.
fn config_map(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{extra}data:\n  a: \"1\"\n"
    )
}

/// An Application of `path` in `url` into `namespace`, synced automatically, with `sync_policy`
/// merged into its `syncPolicy` and `annotations` on it.
fn application(
    name: &str,
    namespace: &str,
    url: &str,
    path: &str,
    sync_policy: Value,
    annotations: Value,
) -> Application {
    let mut policy = json!({"automated": {"prune": true}});
    if let (Some(policy), Value::Object(extra)) = (policy.as_object_mut(), sync_policy) {
        policy.extend(extra);
    }
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            "project": "default",
            "source": {"repoURL": url, "targetRevision": "main", "path": path},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": policy,
        }
    }))
}

/// Waits until an operation of the Application other than the one of id `not` has ended
/// (Succeeded or Failed), and returns the Application.
async fn ended(api: &Api<Application>, name: &str, not: Option<&str>) -> Application {
    wait_until(api, name, &format!("{name}'s operation ended"), |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| {
                matches!(o.phase, OperationPhase::Succeeded | OperationPhase::Failed)
                    && Some(o.operation_id.as_str()) != not
            })
    })
    .await
}

/// The operation's phase and message.
fn outcome(app: &Application) -> (OperationPhase, String) {
    let state = app
        .status
        .as_ref()
        .and_then(|s| s.operation_state.as_ref())
        .expect("an operation");
    (state.phase, state.message.clone())
}

/// A label or annotation map of an object's metadata, as (key, value) strings.
fn entries(map: Option<&BTreeMap<String, String>>) -> Vec<(&str, &str)> {
    map.into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .filter(|(k, _)| !k.starts_with("kubernetes.io/"))
        .collect()
}

#[tokio::test]
async fn managed_namespace_metadata_labels_the_namespace_and_follows_the_application() {
    let (_daemon, url, _remote) = served("managed-ns", &[("app/cm.yaml", &config_map("c", ""))]);
    let ns = setup("managed-ns").await;
    let namespaces: Api<Namespace> = Api::all(ns.client.clone());
    // An existing namespace, labelled by someone else: Argo CD writes the metadata to it too.
    let destination = format!("{}-dest", ns.name);
    let existing: Namespace = object(json!({"metadata": {"name": destination,
        "labels": {"owner": "platform"}}}));
    let by_hand = PostParams {
        field_manager: Some("kubectl-label".into()),
        ..PostParams::default()
    };
    namespaces
        .create(&by_hand, &existing)
        .await
        .expect("creates the namespace");
    let apps: Api<Application> = ns.api();
    let policy = |labels: Value, annotations: Value| {
        json!({"syncOptions": ["CreateNamespace=true"],
               "managedNamespaceMetadata": {"labels": labels, "annotations": annotations}})
    };
    let first = application(
        "web",
        &destination,
        &url,
        "app",
        policy(
            json!({"team": "shop", "tier": "web"}),
            json!({"contact": "ops@shop"}),
        ),
        json!({}),
    );
    apply(&apps, &first).await;
    let stored = apps.get("web").await.expect("stored");
    assert!(
        stored
            .spec
            .sync_policy
            .as_ref()
            .and_then(|p| p.managed_namespace_metadata.as_ref())
            .is_some(),
        "the API server keeps managedNamespaceMetadata"
    );
    let controller = start(&ns, "managed-ns");
    let synced = ended(&apps, "web", None).await;
    assert_eq!(outcome(&synced).0, OperationPhase::Succeeded, "{synced:?}");
    let live = namespaces.get(&destination).await.expect("the namespace");
    assert_eq!(
        entries(live.metadata.labels.as_ref()),
        [("owner", "platform"), ("team", "shop"), ("tier", "web")]
    );
    assert_eq!(
        entries(live.metadata.annotations.as_ref()),
        [("contact", "ops@shop")]
    );
    let record = synced
        .status
        .as_ref()
        .and_then(|s| s.operation_state.as_ref())
        .and_then(|o| o.resources.iter().find(|r| r.kind == "Namespace"))
        .map(|r| r.message.clone());
    assert_eq!(record.as_deref(), Some("managedNamespaceMetadata applied"));

    // The Application changes: one label changed, one removed, the annotation removed; the next
    // sync (requested here) writes it, and the label someone else set stays.
    let first_id = synced
        .status
        .as_ref()
        .and_then(|s| s.operation_state.as_ref())
        .map(|o| o.operation_id.clone());
    apply(
        &apps,
        &application(
            "web",
            &destination,
            &url,
            "app",
            policy(json!({"team": "checkout"}), json!({})),
            json!({}),
        ),
    )
    .await;
    let request =
        json!({"spec": {"operation": {"sync": {}, "initiatedBy": {"username": "tester"}}}});
    apps.patch("web", &PatchParams::default(), &Patch::Merge(request))
        .await
        .expect("requests a sync");
    let again = ended(&apps, "web", first_id.as_deref()).await;
    assert_eq!(outcome(&again).0, OperationPhase::Succeeded, "{again:?}");
    let live = namespaces.get(&destination).await.expect("the namespace");
    assert_eq!(
        entries(live.metadata.labels.as_ref()),
        [("owner", "platform"), ("team", "checkout")]
    );
    assert_eq!(entries(live.metadata.annotations.as_ref()), []);
    controller.stop().await;
    namespaces
        .delete(&destination, &Default::default())
        .await
        .expect("deletes the namespace");
}

/// A custom resource of `kind` with `spec` (YAML lines) and sync options.
fn widget(group: &str, name: &str, options: &str, spec: &str) -> String {
    format!(
        "apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: {name}\n  annotations:\n    \
         argocd.argoproj.io/sync-options: {options}\nspec:\n{spec}"
    )
}

#[tokio::test]
async fn validate_false_applies_what_strict_field_validation_refuses() {
    let ns = setup("validate").await;
    // A kind whose schema knows `spec.size` only: a server-side apply of `spec.colour` is
    // refused, a Validate=false write drops it.
    let group = format!("{}.validate.test", ns.name);
    let crd = object(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("widgets.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}
    }));
    support::install_crd(&ns.client, &crd).await;
    let unknown = "  size: 2\n  colour: red\n";
    let lenient = widget(&group, "lenient", "Validate=false", unknown);
    let strict = widget(&group, "strict", "Validate=true", unknown);
    // A ConfigMap Validate=false writes, whose schema declares every field: server-side applied,
    // so a key another manager set stays (a replace would drop it).
    let kept = config_map(
        "kept",
        "  annotations:\n    argocd.argoproj.io/sync-options: Validate=false\n",
    );
    let (_daemon, url, _remote) = served(
        "validate",
        &[
            ("lenient/w.yaml", &lenient),
            ("lenient/kept.yaml", &kept),
            ("strict/w.yaml", &strict),
        ],
    );
    let maps: Api<ConfigMap> = ns.api();
    let theirs: ConfigMap = object(json!({"metadata": {"name": "kept"}, "data": {"theirs": "1"}}));
    maps.create(&PostParams::default(), &theirs)
        .await
        .expect("creates the ConfigMap another manager owns a key of");
    let apps: Api<Application> = ns.api();
    for path in ["lenient", "strict"] {
        apply(
            &apps,
            &application(path, &ns.name, &url, path, json!({}), json!({})),
        )
        .await;
    }
    let controller = start(&ns, "validate");
    let lenient = ended(&apps, "lenient", None).await;
    assert_eq!(
        outcome(&lenient).0,
        OperationPhase::Succeeded,
        "{lenient:?}"
    );
    let resource = kube::discovery::ApiResource {
        group: group.clone(),
        version: "v1".to_owned(),
        api_version: format!("{group}/v1"),
        kind: "Widget".to_owned(),
        plural: "widgets".to_owned(),
    };
    let widgets: Api<kube::api::DynamicObject> =
        Api::namespaced_with(ns.client.clone(), &ns.name, &resource);
    let applied = widgets.get("lenient").await.expect("applied");
    assert_eq!(
        applied.data["spec"],
        json!({"size": 2}),
        "the unknown field dropped"
    );
    let kept = maps.get("kept").await.expect("applied");
    assert_eq!(
        kept.data,
        Some(BTreeMap::from([
            ("a".to_owned(), "1".to_owned()),
            ("theirs".to_owned(), "1".to_owned())
        ])),
        "applied server-side: another manager's key kept"
    );
    let strict = ended(&apps, "strict", None).await;
    let (phase, message) = outcome(&strict);
    assert_eq!(phase, OperationPhase::Failed);
    assert!(
        message.contains(".spec.colour: field not declared in schema"),
        "{message}"
    );
    assert!(
        widgets.get_opt("strict").await.unwrap().is_none(),
        "nothing written"
    );
    controller.stop().await;
}

#[tokio::test]
async fn fail_on_shared_resource_names_the_object_and_the_other_application() {
    let files = [
        ("app/shared.yaml", config_map("shared", "")),
        ("app/own.yaml", config_map("own", "")),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let (_daemon, url, _remote) = served("shared", &files);
    let ns = setup("shared").await;
    let maps: Api<ConfigMap> = ns.api();
    // The ConfigMap another Application of the namespace synced.
    let other: ConfigMap = object(json!({"metadata": {"name": "shared", "annotations": {
        "flotilla.dev/tracking-id": format!("{}_other:/ConfigMap:{}/shared", ns.name, ns.name)}},
        "data": {"owner": "other"}}));
    let before = maps
        .create(&PostParams::default(), &other)
        .await
        .expect("created");
    let apps: Api<Application> = ns.api();
    let fail_on_shared = json!({"syncOptions": ["FailOnSharedResource=true"]});
    apply(
        &apps,
        &application("web", &ns.name, &url, "app", fail_on_shared, json!({})),
    )
    .await;
    let controller = start(&ns, "shared");
    let failed = ended(&apps, "web", None).await;
    let (phase, message) = outcome(&failed);
    assert_eq!(phase, OperationPhase::Failed);
    assert_eq!(
        message,
        format!(
            "nothing was written: FailOnSharedResource=true and ConfigMap {0}/shared is tracked \
             by Application {0}/other (flotilla.dev/tracking-id)",
            ns.name
        )
    );
    let after = maps.get("shared").await.expect("still there");
    assert_eq!(
        after.metadata.resource_version, before.metadata.resource_version,
        "the other Application's object is unchanged"
    );
    assert!(
        maps.get_opt("own").await.unwrap().is_none(),
        "nothing written"
    );
    controller.stop().await;
}

#[tokio::test]
async fn skip_reconcile_leaves_the_application_alone_until_removed() {
    let (_daemon, url, _remote) = served("skip", &[("app/cm.yaml", &config_map("c", ""))]);
    let ns = setup("skip").await;
    let apps: Api<Application> = ns.api();
    let skipped = json!({"argocd.argoproj.io/skip-reconcile": "true"});
    apply(
        &apps,
        &application("web", &ns.name, &url, "app", json!({}), skipped),
    )
    .await;
    let controller = start(&ns, "skip");
    // Several resyncs: no status, nothing synced.
    tokio::time::sleep(RESYNC * 3).await;
    let untouched = apps.get("web").await.expect("the Application");
    assert_eq!(untouched.status, None, "status untouched");
    let maps: Api<ConfigMap> = ns.api();
    assert!(maps.get_opt("c").await.unwrap().is_none(), "nothing synced");
    // The annotation removed: reconciled and synced.
    let removed = json!({"metadata": {"annotations": {"argocd.argoproj.io/skip-reconcile": null}}});
    apps.patch("web", &PatchParams::default(), &Patch::Merge(removed))
        .await
        .expect("removes the annotation");
    let synced = ended(&apps, "web", None).await;
    assert_eq!(outcome(&synced).0, OperationPhase::Succeeded);
    assert!(maps.get_opt("c").await.unwrap().is_some(), "synced");
    controller.stop().await;
}

#[tokio::test]
async fn preserved_fields_keep_a_label_changed_by_hand() {
    let (_daemon, url, _remote) = served("preserved", &[("apps/a/cm.yaml", &config_map("c", ""))]);
    let ns = setup("preserved").await;
    let with_template = |note: &str| {
        let mut set: ApplicationSet = appset(
            &ns.name,
            &url,
            &["a"],
            json!({"preservedFields": {"labels": ["env"], "annotations": ["note"]}}),
        );
        set.spec.template.metadata.labels = [("env".to_owned(), "prod".to_owned())].into();
        set.spec.template.metadata.annotations = [("note".to_owned(), note.to_owned())].into();
        set.spec.template.spec.sync_policy = None;
        set
    };
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &with_template("first")).await;
    let controller = start(&ns, "preserved");
    let apps: Api<Application> = ns.api();
    wait_until(&apps, "a", "a generated", |_| true).await;
    let by_hand = PatchParams::apply("kubectl-edit").force();
    let edit = json!({"apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": "a", "labels": {"env": "staging"}, "annotations": {"note": "mine"}}});
    apps.patch("a", &by_hand, &Patch::Apply(edit))
        .await
        .expect("edits the Application");
    // The ApplicationSet changes (a new label): its update keeps the preserved values.
    let mut changed = with_template("second");
    changed
        .spec
        .template
        .metadata
        .labels
        .insert("tier".to_owned(), "web".to_owned());
    apply(&appsets, &changed).await;
    let updated = wait_until(&apps, "a", "the update applied", |app| {
        app.metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key("tier"))
    })
    .await;
    let labels = updated.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("env").map(String::as_str), Some("staging"));
    let annotations = updated.metadata.annotations.unwrap_or_default();
    assert_eq!(annotations.get("note").map(String::as_str), Some("mine"));
    controller.stop().await;
}

/// `kubectl apply --dry-run=server` of `document` (JSON) into the test namespace: its success and
/// its stderr.
fn kubectl_apply(ns: &TestNamespace, document: &Value) -> (bool, String) {
    kubectl_apply_with(ns, document, &["--dry-run=server"])
}

/// `kubectl apply` of `document` (JSON) into the test namespace, with `flags`: its success and
/// its stderr.
fn kubectl_apply_with(ns: &TestNamespace, document: &Value, flags: &[&str]) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("object.json");
    std::fs::write(&file, document.to_string()).unwrap();
    let output = Command::new(kubectl())
        .arg("--kubeconfig")
        .arg(kubeconfig_path(1))
        .arg("apply")
        .args(flags)
        .args(["-n", &ns.name, "-f"])
        .arg(&file)
        .output()
        .expect("runs kubectl");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn kubectl_apply_accepts_what_works_and_refuses_the_rest_by_name() {
    let ns = setup("crd-fields").await;
    let application = json!({"apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": "web"},
        "spec": {"project": "default",
            "source": {"repoURL": "https://git.example/apps.git", "path": "app"},
            "destination": {"name": "in-cluster", "namespace": "web"},
            "syncPolicy": {"syncOptions": ["CreateNamespace=true"],
                "managedNamespaceMetadata": {"labels": {"team": "shop"}}}}});
    let (ok, stderr) = kubectl_apply(&ns, &application);
    assert!(ok, "{stderr}");
    let mut appset = serde_json::to_value(appset(
        &ns.name,
        "https://git.example/a.git",
        &["a"],
        json!({
        "preservedFields": {"labels": ["env"]}}),
    ))
    .unwrap();
    let (ok, stderr) = kubectl_apply(&ns, &appset);
    assert!(ok, "{stderr}");
    appset["spec"]["strategy"] = json!({"type": "RollingSync", "deletionOrder": "Reverse",
        "rollingSync": {"steps": [{"matchExpressions": []}]}});
    let (ok, stderr) = kubectl_apply(&ns, &appset);
    assert!(ok, "{stderr}");
    appset["spec"]["strategy"]["deletionOrder"] = json!("Backwards");
    let (ok, stderr) = kubectl_apply(&ns, &appset);
    assert!(!ok);
    assert!(
        stderr.contains(r#"spec.strategy.deletionOrder: Unsupported value: "Backwards""#),
        "{stderr}"
    );
    let refused = [
        ("roles", json!([{"name": "ci"}])),
        ("signatureKeys", json!([{"keyID": "4AEE18F83AFDEB23"}])),
        ("orphanedResources", json!({"warn": true})),
        (
            "destinationServiceAccounts",
            json!([{"server": "*", "defaultServiceAccount": "x"}]),
        ),
    ];
    for (field, value) in refused {
        let project = json!({"apiVersion": "flotilla.dev/v1alpha1", "kind": "AppProject",
            "metadata": {"name": "team"}, "spec": {"sourceRepos": ["*"], field: value}});
        let (ok, stderr) = kubectl_apply(&ns, &project);
        assert!(!ok, "{field}");
        assert!(
            stderr.contains(&format!(r#"unknown field "spec.{field}""#)),
            "{field}: {stderr}"
        );
    }
    // Argo CD 3's `applyNestedSelectors` is accepted (nested selectors are always applied);
    // `tagPrefix` (semver ranges of git tags, which Flotilla does not resolve) and
    // `kustomize.version` (a kustomize per Application) are refused by name.
    appset["spec"]["strategy"]["deletionOrder"] = json!("Reverse");
    appset["spec"]["applyNestedSelectors"] = json!(true);
    let (ok, stderr) = kubectl_apply(&ns, &appset);
    assert!(ok, "{stderr}");
    let with_source = |field: &str, value: Value| {
        let mut document = application.clone();
        document["spec"]["source"][field] = value;
        document
    };
    for (document, field) in [
        (with_source("tagPrefix", json!("component-b/")), "tagPrefix"),
        (
            with_source("kustomize", json!({"version": "v5.4.3"})),
            "kustomize.version",
        ),
    ] {
        let (ok, stderr) = kubectl_apply(&ns, &document);
        assert!(!ok, "{field}");
        assert!(
            stderr.contains(&format!(r#"unknown field "spec.source.{field}""#)),
            "{field}: {stderr}"
        );
    }
    let overrun = json!({"apiVersion": "flotilla.dev/v1alpha1", "kind": "AppProject",
        "metadata": {"name": "team"}, "spec": {"syncWindows": [{"kind": "deny",
            "schedule": "0 22 * * *", "duration": "1h", "syncOverrun": true}]}});
    let (ok, stderr) = kubectl_apply(&ns, &overrun);
    assert!(!ok);
    assert!(
        stderr.contains(r#"unknown field "spec.syncWindows[0].syncOverrun""#),
        "{stderr}"
    );
}

/// An ApplicationSet (JSON) named `name` of a list generator over `a` whose template deploys
/// `apps/{{name}}` of `url` into `namespace`, with `extra` merged into its spec.
fn appset_document(name: &str, namespace: &str, url: &str, extra: Value) -> Value {
    let mut document = serde_json::to_value(appset(namespace, url, &["a"], json!({}))).unwrap();
    document["metadata"]["name"] = json!(name);
    // Merged as JSON: the typed ApplicationSet would drop what it does not know.
    if let (Some(spec), Value::Object(extra)) = (document["spec"].as_object_mut(), extra) {
        spec.extend(extra);
    }
    document
}

/// The message of the ApplicationSet's ErrorOccurred condition once it is True.
async fn appset_error(api: &Api<ApplicationSet>, name: &str) -> String {
    let failed = wait_until(api, name, &format!("{name} ErrorOccurred=True"), |a| {
        a.status.as_ref().is_some_and(|s| {
            s.conditions.iter().any(|c| {
                c.type_ == ConditionType::ErrorOccurred && c.status == ConditionStatus::True
            })
        })
    })
    .await;
    let status = failed.status.unwrap_or_default();
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::ErrorOccurred)
        .expect("the condition");
    condition.message.clone()
}

#[tokio::test]
async fn fields_a_patch_an_override_a_nested_generator_or_an_analysis_job_adds_are_refused_by_name()
{
    let ns = setup("appset-fields").await;
    let url = "https://git.example/apps.git";
    let cases = [
        (
            "patched",
            json!({"templatePatch": "spec:\n  source:\n    name: cmp\n"}),
            "unsupported field spec.templatePatch: spec.source.name",
        ),
        (
            "overridden",
            json!({"generators": [{"list": {"elements": [{"name": "a"}],
                "template": {"metadata": {}, "spec": {"sourc": {"path": "x"}}}}}]}),
            "unsupported field spec.generators.0.list.template.spec.sourc",
        ),
        (
            "nested",
            json!({"generators": [{"matrix": {"generators": [
                {"list": {"elements": [{"name": "a"}]}},
                {"matrix": {"generators": [
                    {"clusters": {"selectr": {"matchLabels": {"env": "prod"}}}},
                    {"list": {"elements": [{"tier": "web"}]}}]}}]}}]}),
            "unsupported field spec.generators.0.matrix.generators.1.matrix.generators.0.clusters.selectr",
        ),
        (
            "analysed",
            json!({"strategy": {"type": "RollingSync", "rollingSync": {"steps": [
                {"matchExpressions": [], "analysis": {"job": {"spec": {"backoffLimitt": 1,
                    "template": {"spec": {"restartPolicy": "Never",
                        "containers": [{"name": "check", "image": "busybox"}]}}}}}}]}}}),
            "unsupported field spec.strategy.rollingSync.steps.0.analysis.job.spec.backoffLimitt",
        ),
    ];
    // Each is accepted by the API server (the fields sit where the CRD keeps free-form JSON)...
    for (name, extra, _) in &cases {
        let document = appset_document(name, &ns.name, url, extra.clone());
        let (ok, stderr) = kubectl_apply_with(&ns, &document, &[]);
        assert!(ok, "{name}: {stderr}");
        // ...and refused by `flotilla render` naming the field, as by the controller below.
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("appset.json");
        std::fs::write(&file, document.to_string()).unwrap();
        let render = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .arg("render")
            .arg(&file)
            .output()
            .expect("runs flotilla render");
        let stderr = String::from_utf8_lossy(&render.stderr);
        assert!(!render.status.success(), "{name}");
        let expected = &cases.iter().find(|c| c.0 == *name).unwrap().2;
        assert!(stderr.contains(expected), "{name}: {stderr}");
    }
    let controller = start(&ns, "appset-fields");
    let appsets: Api<ApplicationSet> = ns.api();
    for (name, _, expected) in &cases {
        let message = appset_error(&appsets, name).await;
        assert!(message.contains(expected), "{name}: {message}");
        assert!(
            message.contains("Flotilla does not implement it"),
            "{name}: {message}"
        );
    }
    let apps: Api<Application> = ns.api();
    assert!(
        apps.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "nothing written"
    );
    controller.stop().await;
}

/// A kustomization of one ConfigMap that labels and annotates it itself.
const KUSTOMIZATION: &str = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n\
    commonLabels:\n  team: platform\ncommonAnnotations:\n  owner: platform\nresources:\n- cm.yaml\n";

#[tokio::test]
async fn force_common_labels_and_annotations_replace_the_kustomizations_own() {
    let cm = config_map("c", "");
    let (_daemon, url, _remote) = served(
        "kustomize-force",
        &[
            ("app/kustomization.yaml", KUSTOMIZATION),
            ("app/cm.yaml", &cm),
        ],
    );
    let ns = setup("kustomize-force").await;
    let apps: Api<Application> = ns.api();
    let with_kustomize = |name: &str, kustomize: Value| {
        let mut app = serde_json::to_value(application(
            name,
            &ns.name,
            &url,
            "app",
            json!({}),
            json!({}),
        ))
        .unwrap();
        app["spec"]["source"]["kustomize"] = kustomize;
        app
    };
    let labels = json!({"team": "shop"});
    let annotations = json!({"owner": "shop"});
    let unforced = [
        ("labels", json!({"commonLabels": labels})),
        ("annotations", json!({"commonAnnotations": annotations})),
    ];
    for (name, kustomize) in &unforced {
        let (ok, stderr) = kubectl_apply_with(&ns, &with_kustomize(name, kustomize.clone()), &[]);
        assert!(ok, "{stderr}");
    }
    let forced = with_kustomize(
        "forced",
        json!({"commonLabels": labels, "forceCommonLabels": true,
               "commonAnnotations": annotations, "forceCommonAnnotations": true,
               "nameSuffix": "-forced"}),
    );
    let (ok, stderr) = kubectl_apply_with(&ns, &forced, &[]);
    assert!(ok, "{stderr}");
    let controller = start(&ns, "kustomize-force");
    let synced = ended(&apps, "forced", None).await;
    assert_eq!(outcome(&synced).0, OperationPhase::Succeeded, "{synced:?}");
    let maps: Api<ConfigMap> = ns.api();
    let live = maps.get("c-forced").await.expect("synced");
    assert_eq!(
        live.metadata
            .labels
            .unwrap_or_default()
            .get("team")
            .map(String::as_str),
        Some("shop")
    );
    assert_eq!(
        live.metadata
            .annotations
            .unwrap_or_default()
            .get("owner")
            .map(String::as_str),
        Some("shop")
    );
    // Without the force flags, as Argo CD's `kustomize edit add` without --force: refused,
    // naming the field and the key.
    for (name, field, key) in [
        ("labels", "commonLabels", "team"),
        ("annotations", "commonAnnotations", "owner"),
    ] {
        let refused = wait_until(&apps, name, &format!("{name} refused"), |app| {
            app.status
                .as_ref()
                .is_some_and(|s| s.conditions.iter().any(|c| c.message.contains(field)))
        })
        .await;
        let status = refused.status.unwrap_or_default();
        let message = &status
            .conditions
            .iter()
            .find(|c| c.message.contains(field))
            .unwrap()
            .message;
        assert!(
            message.contains(&format!(
                "kustomize.{field}: \"{key}\" is already in the kustomization's {field}"
            )),
            "{message}"
        );
    }
    controller.stop().await;
}

#[tokio::test]
async fn a_negative_retry_limit_retries_until_the_sync_succeeds() {
    let ns = setup("retry-forever").await;
    let late = format!("{}-late", ns.name);
    let cm = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: late\n  namespace: {late}\ndata:\n  a: \"1\"\n"
    );
    let (_daemon, url, _remote) = served("retry-forever", &[("app/cm.yaml", &cm)]);
    let apps: Api<Application> = ns.api();
    let retry = json!({"retry": {"limit": -1, "backoff": {"duration": "1s", "factor": 1}}});
    let document =
        serde_json::to_value(application("web", &ns.name, &url, "app", retry, json!({}))).unwrap();
    let (ok, stderr) = kubectl_apply_with(&ns, &document, &[]);
    assert!(ok, "{stderr}");
    let controller = start(&ns, "retry-forever");
    // Its namespace is missing: the operation fails and is retried, again and again.
    wait_until(&apps, "web", "a third retry", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| o.operation_id.ends_with("-retry3"))
    })
    .await;
    let namespaces: Api<Namespace> = Api::all(ns.client.clone());
    let namespace: Namespace = object(json!({"metadata": {"name": late}}));
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("creates the namespace");
    let synced = wait_until(&apps, "web", "the retried sync succeeded", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|o| o.phase == OperationPhase::Succeeded)
    })
    .await;
    let state = synced.status.unwrap().operation_state.unwrap();
    assert!(
        state.operation_id.contains("-retry"),
        "{}",
        state.operation_id
    );
    controller.stop().await;
    namespaces
        .delete(&late, &Default::default())
        .await
        .expect("deletes the namespace");
}

#[tokio::test]
async fn the_refresh_annotations_refresh_now_and_are_removed() {
    let files = [
        ("apps/a/cm.yaml", config_map("a", "")),
        ("app/cm.yaml", config_map("c", "")),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let (_daemon, url, remote) = served("refresh", &files);
    let ns = setup("refresh").await;
    // Fetches serve for an hour: a new commit is seen only when a refresh asks for it.
    let controller = start_with(
        &ns,
        "refresh",
        Options {
            refresh: Duration::from_secs(3600),
            ..Options::default()
        },
    );
    let apps: Api<Application> = ns.api();
    apply(
        &apps,
        &application("web", &ns.name, &url, "app", json!({}), json!({})),
    )
    .await;
    let first = ended(&apps, "web", None).await;
    assert_eq!(outcome(&first).0, OperationPhase::Succeeded);
    let synced_revision = |app: &Application| {
        app.status
            .as_ref()
            .and_then(|s| s.sync.as_ref())
            .map(|s| s.revision.clone())
    };
    remote.write("app/cm.yaml", &config_map("c", "  labels:\n    v: \"2\"\n"));
    let second = remote.push("label the ConfigMap");
    for refresh in ["normal", "hard"] {
        let asked = json!({"metadata": {"annotations": {"argocd.argoproj.io/refresh": refresh}}});
        apps.patch("web", &PatchParams::default(), &Patch::Merge(asked))
            .await
            .expect("asks for a refresh");
        let refreshed = wait_until(&apps, "web", &format!("{refresh} refresh done"), |app| {
            !app.annotations().contains_key("argocd.argoproj.io/refresh")
                && synced_revision(app).as_deref() == Some(second.as_str())
        })
        .await;
        assert_eq!(synced_revision(&refreshed), Some(second.clone()));
    }
    // An ApplicationSet: a directory pushed is generated at once when Argo CD's annotation asks.
    let appsets: Api<ApplicationSet> = ns.api();
    let mut set = appset(&ns.name, &url, &[], json!({}));
    set.spec.generators = vec![object(json!({"git": {"repoURL": url, "revision": "main",
        "directories": [{"path": "apps/*"}]}}))];
    set.spec.template.metadata.name = "gen-{{path.basename}}".into();
    set.spec.template.spec.source.path = "{{path}}".into();
    apply(&appsets, &set).await;
    wait_until(&apps, "gen-a", "gen-a generated", |_| true).await;
    remote.write("apps/b/cm.yaml", &config_map("b", ""));
    remote.push("add b");
    let asked = json!({"metadata": {"annotations": {"argocd.argoproj.io/application-set-refresh": "true"}}});
    appsets
        .patch("stack", &PatchParams::default(), &Patch::Merge(asked))
        .await
        .expect("asks for a regeneration");
    wait_until(&apps, "gen-b", "gen-b generated", |_| true).await;
    wait_until(&appsets, "stack", "the annotation removed", |set| {
        !set.annotations()
            .contains_key("argocd.argoproj.io/application-set-refresh")
    })
    .await;
    controller.stop().await;
}

/// A PreSync Job hook whose pod runs `runs` (node-sim), as a manifest.
fn presync_job(name: &str, runs: &str) -> String {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "annotations": {"argocd.argoproj.io/hook": "PreSync"}},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"annotations": {"sim.flotilla.dev/ready-after": runs}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "migrate", "image": "example.com/migrate:1"}]}}}
    })
    .to_string()
}

#[tokio::test]
async fn the_controller_wide_timeout_applies_unless_the_application_says_none() {
    let files = [
        ("slow/job.json", presync_job("slow", "30s")),
        ("slow/cm.yaml", config_map("slow", "")),
        ("patient/job.json", presync_job("patient", "6s")),
        ("patient/cm.yaml", config_map("patient", "")),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let (_daemon, url, _remote) = served("timeout", &files);
    let ns = setup("timeout").await;
    support::require_node_sim(&ns.client, 1).await;
    let apps: Api<Application> = ns.api();
    apply(
        &apps,
        &application("slow", &ns.name, &url, "slow", json!({}), json!({})),
    )
    .await;
    // "0", as Argo CD's setting: no timeout for this one.
    let none = json!({"flotilla.dev/sync-timeout": "0"});
    apply(
        &apps,
        &application("patient", &ns.name, &url, "patient", json!({}), none),
    )
    .await;
    let settings = ExecuteSettings {
        timeout: Some(Duration::from_secs(3)),
        ..ExecuteSettings::default()
    };
    let controller = start_with(
        &ns,
        "timeout",
        Options {
            settings,
            ..Options::default()
        },
    );
    let slow = ended(&apps, "slow", None).await;
    let (phase, message) = outcome(&slow);
    assert_eq!(phase, OperationPhase::Failed);
    assert!(message.contains("timed out after 3s"), "{message}");
    let patient = ended(&apps, "patient", None).await;
    assert_eq!(
        outcome(&patient).0,
        OperationPhase::Succeeded,
        "{patient:?}"
    );
    controller.stop().await;
}

#[tokio::test]
async fn the_wave_delay_holds_the_next_wave_after_the_last_apply() {
    let wave = |name: &str, wave: i32| {
        config_map(
            name,
            &format!("  annotations:\n    argocd.argoproj.io/sync-wave: \"{wave}\"\n"),
        )
    };
    let files = [
        ("app/one.yaml", wave("one", 1)),
        ("app/two.yaml", wave("two", 2)),
    ];
    let files: Vec<(&str, &str)> = files.iter().map(|(p, c)| (*p, c.as_str())).collect();
    let (_daemon, url, _remote) = served("wave-delay", &files);
    let ns = setup("wave-delay").await;
    let apps: Api<Application> = ns.api();
    apply(
        &apps,
        &application("web", &ns.name, &url, "app", json!({}), json!({})),
    )
    .await;
    let settings = ExecuteSettings {
        wave_delay: Duration::from_secs(3),
        ..ExecuteSettings::default()
    };
    let controller = start_with(
        &ns,
        "wave-delay",
        Options {
            settings,
            ..Options::default()
        },
    );
    let synced = ended(&apps, "web", None).await;
    assert_eq!(outcome(&synced).0, OperationPhase::Succeeded, "{synced:?}");
    let state = synced.status.unwrap().operation_state.unwrap();
    let at = |name: &str, field: fn(&flotilla_core::sync::ResourceResult) -> Option<&Time>| {
        let record = state.resources.iter().find(|r| r.name == name).unwrap();
        field(record).expect("a time").0
    };
    let one_applied = at("one", |r| r.finished_at.as_ref());
    let two_started = at("two", |r| r.started_at.as_ref());
    let waited = two_started.duration_since(one_applied);
    assert!(
        waited >= k8s_openapi::jiff::SignedDuration::from_secs(3),
        "wave 2 started {waited} after wave 1's apply"
    );
    controller.stop().await;
}

#[tokio::test]
async fn server_side_diff_is_refused_by_name_and_false_accepted() {
    let (_daemon, url, _remote) =
        served("compare-options", &[("app/cm.yaml", &config_map("c", ""))]);
    let ns = setup("compare-options").await;
    let apps: Api<Application> = ns.api();
    let options = |value: &str| json!({"argocd.argoproj.io/compare-options": value});
    let refused = application(
        "refused",
        &ns.name,
        &url,
        "app",
        json!({}),
        options("ServerSideDiff=true,IncludeMutationWebhook=true"),
    );
    let accepted = application(
        "accepted",
        &ns.name,
        &url,
        "app",
        json!({}),
        options("ServerSideDiff=false"),
    );
    for app in [&refused, &accepted] {
        let (ok, stderr) = kubectl_apply_with(&ns, &serde_json::to_value(app).unwrap(), &[]);
        assert!(ok, "{stderr}");
    }
    let controller = start(&ns, "compare-options");
    let synced = ended(&apps, "accepted", None).await;
    assert_eq!(outcome(&synced).0, OperationPhase::Succeeded, "{synced:?}");
    let expected = "annotation argocd.argoproj.io/compare-options: compare option \
                    ServerSideDiff=true is not implemented";
    let failed = wait_until(&apps, "refused", "ServerSideDiff=true refused", |app| {
        app.status
            .as_ref()
            .is_some_and(|s| s.conditions.iter().any(|c| c.message.contains(expected)))
    })
    .await;
    assert!(
        failed.status.and_then(|s| s.operation_state).is_none(),
        "nothing synced"
    );
    controller.stop().await;
}
