//! The Helm chart `deploy/helm/flotilla/` (the helm of tests/tools/install.sh, `FLOTILLA_HELM`):
//! `helm lint` finds nothing wrong in either mode; `helm template` renders, object by object
//! (kind, name, namespace and content), what `kubectl kustomize` renders of `deploy/` with the
//! default values and of `deploy/namespaced/` in the namespaced mode, so the two installs cannot
//! drift; a value the chart does not have is refused by name; and `helm install` on cluster 1
//! into a fresh namespace (the CRDs already there) creates the controller, whose pod the API
//! server admits, with the rights the controller uses, as the API server's SubjectAccessReviews
//! answer. (Feature `controlplane`.)

mod deploy_manifests_support;
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::authorization::v1::SubjectAccessReview;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, PostParams};
use serde_json::{Value, json};

use deploy_manifests_support::{rendered, root};
use support::eventually;

/// The values of the namespaced mode, as deploy/namespaced/ (which leaves out the web view's
/// actions).
const NAMESPACED: &str = "namespaced.enabled=true,webView.actions=false";

fn helm() -> PathBuf {
    std::env::var_os("FLOTILLA_HELM").map_or_else(|| "helm".into(), PathBuf::from)
}

fn chart() -> PathBuf {
    root().join("deploy/helm/flotilla")
}

/// `helm ARGS`, its output.
fn run_helm(args: &[&str]) -> Output {
    Command::new(helm())
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "helm {args:?}: {e} (bash tests/tools/install.sh installs it; set FLOTILLA_HELM)"
            )
        })
}

/// `helm template flotilla <chart> --namespace flotilla --include-crds` with `--set` `values`:
/// every object `helm install` would send.
fn helm_rendered(values: &str) -> Vec<Value> {
    let chart = chart();
    let mut args = vec![
        "template",
        "flotilla",
        chart.to_str().expect("a UTF-8 path"),
        "--namespace",
        "flotilla",
        "--include-crds",
    ];
    if !values.is_empty() {
        args.extend(["--set", values]);
    }
    let output = run_helm(&args);
    assert!(
        output.status.success(),
        "helm {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let documents: Vec<Value> =
        serde_saphyr::from_multiple(&String::from_utf8_lossy(&output.stdout))
            .expect("helm prints YAML documents");
    documents.into_iter().filter(|d| !d.is_null()).collect()
}

/// `value` with every number as a float: YAML's `0.0` and `0` (kustomize rewrites one as the
/// other) are the same value.
fn normalised(value: Value) -> Value {
    match value {
        Value::Number(n) => n.as_f64().map_or(Value::Number(n), Value::from),
        Value::Array(items) => Value::Array(items.into_iter().map(normalised).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, normalised(v))).collect())
        }
        other => other,
    }
}

/// Where `a` and `b` first differ (a JSON pointer), with both values there.
fn first_difference(a: &Value, b: &Value, at: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| {
                let null = Value::Null;
                first_difference(
                    x.get(k).unwrap_or(&null),
                    y.get(k).unwrap_or(&null),
                    &format!("{at}/{k}"),
                )
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (a, b))| first_difference(a, b, &format!("{at}/{i}"))),
        _ if a == b => None,
        _ => Some(format!("{at}: {a} (the chart) != {b} (kustomize)")),
    }
}

/// The objects by (kind, namespace, name).
fn by_identity(objects: Vec<Value>) -> BTreeMap<(String, String, String), Value> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let mut keyed = BTreeMap::new();
    for object in objects {
        let key = (
            text(&object["kind"]),
            text(&object["metadata"]["namespace"]),
            text(&object["metadata"]["name"]),
        );
        assert!(
            keyed.insert(key.clone(), normalised(object)).is_none(),
            "{key:?} twice"
        );
    }
    keyed
}

/// Fails naming each object only one side has, and each that differs (with both).
fn assert_same_objects(helm: Vec<Value>, kustomize: Vec<Value>, what: &str) {
    let (helm, kustomize) = (by_identity(helm), by_identity(kustomize));
    let only = |a: &BTreeMap<_, Value>, b: &BTreeMap<_, Value>| -> Vec<_> {
        a.keys().filter(|k| !b.contains_key(*k)).cloned().collect()
    };
    assert_eq!(
        only(&helm, &kustomize),
        Vec::new(),
        "{what}: only the chart renders these"
    );
    assert_eq!(
        only(&kustomize, &helm),
        Vec::new(),
        "{what}: only kustomize renders these"
    );
    for (key, object) in &helm {
        let difference = first_difference(object, &kustomize[key], "");
        assert_eq!(difference, None, "{what}: {key:?} differs");
    }
}

#[test]
fn the_chart_renders_what_kustomize_renders_in_both_modes() {
    assert_same_objects(helm_rendered(""), rendered(""), "deploy/");
    assert_same_objects(
        helm_rendered(NAMESPACED),
        rendered("namespaced"),
        "deploy/namespaced/",
    );
}

#[test]
fn helm_lint_is_clean_and_an_unknown_value_is_refused_by_name() {
    let chart = chart();
    let chart = chart.to_str().expect("a UTF-8 path");
    for values in ["", NAMESPACED] {
        let mut args = vec!["lint", "--strict", chart];
        if !values.is_empty() {
            args.extend(["--set", values]);
        }
        let output = run_helm(&args);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("0 chart(s) failed"),
            "helm {args:?}: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            !stdout.contains("[WARNING]") && !stdout.contains("[ERROR]"),
            "{stdout}"
        );
    }
    let refused = run_helm(&["template", "x", chart, "--set", "replica=2"]);
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && message.contains("replica"),
        "{message}"
    );
    let refused = run_helm(&["template", "x", chart, "--set", "shards=3"]);
    let message = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && message.contains("shards"),
        "{message}"
    );
}

/// What the API server answers whether `user` may `verb` `resource` (`group`, `subresource`)
/// in `namespace` (None: cluster-wide).
async fn may(
    client: &kube::Client,
    user: &str,
    (verb, group, resource, subresource): (&str, &str, &str, &str),
    namespace: Option<&str>,
) -> bool {
    let review: SubjectAccessReview = serde_json::from_value(json!({
        "spec": {
            "user": user,
            "groups": ["system:serviceaccounts", "system:authenticated"],
            "resourceAttributes": {
                "verb": verb, "group": group, "resource": resource,
                "subresource": subresource, "namespace": namespace.unwrap_or_default()
            }
        }
    }))
    .expect("a review");
    let answered = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await
        .expect("the API server reviews");
    answered.status.is_some_and(|s| s.allowed)
}

#[tokio::test]
async fn helm_install_creates_a_controller_with_the_rights_it_uses() {
    let ns = support::namespace(1, "helm-chart").await;
    support::install_flotilla_crds(&ns.client).await;
    let release = ns.name.clone();
    let chart = chart();
    let kubeconfig = support::kubeconfig_path(1);
    let installed = run_helm(&[
        "install",
        &release,
        chart.to_str().expect("a UTF-8 path"),
        "--namespace",
        &ns.name,
        "--kubeconfig",
        kubeconfig.to_str().expect("a UTF-8 path"),
        "--set",
        "createNamespace=false",
    ]);
    assert!(
        installed.status.success(),
        "helm install: {}",
        String::from_utf8_lossy(&installed.stderr)
    );

    let controller = format!("{release}-controller");
    let deployment = ns
        .api::<Deployment>()
        .get(&controller)
        .await
        .expect("the controller's Deployment");
    let spec = deployment.spec.expect("a spec");
    assert_eq!(spec.replicas, Some(3));
    let pods: Api<Pod> = ns.api();
    eventually("the ReplicaSet's pods to be admitted", async || {
        let listed = pods
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let admitted = listed
            .items
            .iter()
            .filter(|pod| {
                pod.metadata
                    .name
                    .as_deref()
                    .is_some_and(|n| n.starts_with(&controller))
            })
            .count();
        (admitted == 3)
            .then_some(())
            .ok_or_else(|| format!("{admitted} pods (kubectl get events -n {})", ns.name))
    })
    .await;

    let user = format!("system:serviceaccount:{}:{controller}", ns.name);
    let own = Some(ns.name.as_str());
    for (rights, namespace) in [
        (("watch", "flotilla.dev", "applicationsets", ""), own),
        (("patch", "flotilla.dev", "applicationsets", "status"), own),
        (("create", "flotilla.dev", "applications", ""), own),
        (("patch", "flotilla.dev", "applications", "status"), own),
        (("list", "flotilla.dev", "appprojects", ""), own),
        (("update", "coordination.k8s.io", "leases", ""), own),
        (("create", "events.k8s.io", "events", ""), own),
        (("watch", "", "secrets", ""), own),
        // Syncing into any namespace (the cluster-wide mode), and reviewing the web view's
        // viewers.
        (("patch", "apps", "deployments", ""), Some("default")),
        (("watch", "apps", "deployments", ""), None),
        (
            ("create", "authentication.k8s.io", "tokenreviews", ""),
            None,
        ),
        (
            ("create", "authorization.k8s.io", "subjectaccessreviews", ""),
            None,
        ),
    ] {
        assert!(
            may(&ns.client, &user, rights, namespace).await,
            "{user} may not {rights:?} in {namespace:?}"
        );
    }
    assert!(
        !may(&ns.client, &user, ("impersonate", "", "users", ""), None).await,
        "nothing beyond the chart's rules"
    );

    let uninstalled = run_helm(&[
        "uninstall",
        &release,
        "--namespace",
        &ns.name,
        "--kubeconfig",
        kubeconfig.to_str().expect("a UTF-8 path"),
    ]);
    assert!(
        uninstalled.status.success(),
        "helm uninstall: {}",
        String::from_utf8_lossy(&uninstalled.stderr)
    );
    assert!(
        !may(
            &ns.client,
            &user,
            ("patch", "apps", "deployments", ""),
            Some("default")
        )
        .await,
        "the cluster-wide rights go with the release"
    );
}
