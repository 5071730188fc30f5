//! The manifests under `deploy/` as a cluster admits them: `kubectl kustomize` (the kubectl of
//! tests/tools/install.sh, `FLOTILLA_KUBECTL`) renders both modes, `deploy/` (cluster-wide) and
//! `deploy/namespaced/`; in each the controller's pod is admitted by the API server's Pod Security
//! admission in a namespace enforcing the restricted standard, as deploy/ labels its own, and a
//! privileged pod is refused there; it runs the image the Containerfile builds,
//! tagged with the crate's version; its Role lets it read AppProjects; and the namespaced mode
//! grants nothing cluster-wide and writes only in the namespaces it manages, which its in-cluster
//! cluster Secret lists (tests/namespaced_mode.rs runs it under RBAC); the cluster-wide mode may
//! review the web view's viewers (TokenReview, SubjectAccessReview).
//! (Feature `controlplane`; the Role read as a file is checked offline, in
//! deploy_manifests_offline.rs.)

mod deploy_manifests_support;
mod support;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, ServiceAccount};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::rbac::v1::Role;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Api;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use support::eventually;

use deploy_manifests_support::{read, rendered, root};

/// The two modes: cluster-wide (`deploy/`) and namespaced.
const MODES: [&str; 2] = ["", "namespaced"];

/// The one rendered object of `kind`.
fn one<K: serde::de::DeserializeOwned>(objects: &[Value], kind: &str) -> K {
    let mut found = objects.iter().filter(|o| o["kind"] == kind);
    let object = found.next().unwrap_or_else(|| panic!("no {kind}"));
    assert!(found.next().is_none(), "more than one {kind}");
    serde_json::from_value(object.clone()).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

/// In each mode the controller's namespace enforces the restricted Pod Security Standard, and the
/// API server's Pod Security admission (not a check of ours) admits the controller's pod in a
/// namespace labelled so, while it refuses a privileged pod there.
#[tokio::test]
async fn pod_security_admission_admits_the_controller_and_refuses_a_privileged_pod() {
    for mode in MODES {
        let objects = rendered(mode);
        let namespace: Namespace = one(&objects, "Namespace");
        let labels = namespace.metadata.labels.unwrap_or_default();
        assert_eq!(
            labels
                .get("pod-security.kubernetes.io/enforce")
                .map(String::as_str),
            Some("restricted")
        );
        let ns = support::namespace(1, "pod-security").await;
        let namespaces: Api<Namespace> = Api::all(ns.client.clone());
        namespaces
            .patch(
                &ns.name,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": labels}})),
            )
            .await
            .expect("labels the namespace as deploy/ does");

        let mut account: ServiceAccount = one(&objects, "ServiceAccount");
        account.metadata.namespace = Some(ns.name.clone());
        ns.api::<ServiceAccount>()
            .create(&PostParams::default(), &account)
            .await
            .expect("creates the ServiceAccount");
        let mut deployment: Deployment = one(&objects, "Deployment");
        deployment.metadata.namespace = Some(ns.name.clone());
        let name = deployment.metadata.name.clone().expect("a name");
        ns.api::<Deployment>()
            .create(&PostParams::default(), &deployment)
            .await
            .expect("creates the Deployment");
        let pods: Api<Pod> = ns.api();
        eventually(
            &format!("deploy/{mode}: the ReplicaSet's pod to be admitted"),
            async || {
                let listed = pods
                    .list(&ListParams::default())
                    .await
                    .map_err(|e| e.to_string())?;
                listed
                    .items
                    .iter()
                    .any(|pod| {
                        pod.metadata
                            .name
                            .as_deref()
                            .is_some_and(|n| n.starts_with(&name))
                    })
                    .then_some(())
                    .ok_or_else(|| format!("no pod yet (kubectl get events -n {})", ns.name))
            },
        )
        .await;

        let privileged: Pod = serde_json::from_value(json!({
            "metadata": {"name": "privileged"},
            "spec": {"containers": [{"name": "root", "image": "example.com/tool:1",
                                     "securityContext": {"privileged": true}}]}
        }))
        .expect("a pod");
        let refused = pods
            .create(&PostParams::default(), &privileged)
            .await
            .expect_err("the privileged pod is refused");
        let message = refused.to_string();
        assert!(
            message.contains("violates PodSecurity \"restricted:latest\"")
                && message.contains("privileged"),
            "{message}"
        );
    }
}

/// deploy/ runs the image of this version, as the Containerfile builds it: the tag is the
/// crate's version, the image's numeric user is the pod's, and helm and kubectl come from the
/// script the tests install them with.
#[test]
fn the_controller_runs_the_image_of_this_version() {
    let deployment: Deployment = one(&rendered(""), "Deployment");
    let container = &deployment
        .spec
        .and_then(|s| s.template.spec)
        .expect("a pod spec")
        .containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some(format!("ghcr.io/flotilla/flotilla:{}", env!("CARGO_PKG_VERSION")).as_str())
    );
    let containerfile =
        std::fs::read_to_string(root().join("Containerfile")).expect("the Containerfile");
    let user = containerfile
        .lines()
        .find_map(|line| line.strip_prefix("USER "))
        .expect("a USER line");
    let uid = container
        .security_context
        .as_ref()
        .and_then(|s| s.run_as_user)
        .expect("runAsUser");
    assert_eq!(user.split(':').next(), Some(uid.to_string().as_str()));
    assert!(containerfile.contains("COPY tests/tools/install.sh"));
}

/// Three replicas share the Applications, a PodDisruptionBudget keeps two of them, and the Role
/// lets them list and delete member Leases.
#[test]
fn three_replicas_with_a_disruption_budget_and_member_leases() {
    for mode in ["", "namespaced"] {
        let objects = rendered(mode);
        let deployment: Deployment = one(&objects, "Deployment");
        let spec = deployment.spec.expect("a spec");
        assert_eq!(spec.replicas, Some(3), "{mode}");
        let args = spec.template.spec.expect("a pod spec").containers[0]
            .args
            .clone()
            .unwrap_or_default();
        assert!(
            !args.iter().any(|a| a == "--shards"),
            "--shards auto is the default: {args:?}"
        );
        let budget: PodDisruptionBudget = one(&objects, "PodDisruptionBudget");
        let budget = budget.spec.expect("a spec");
        assert_eq!(budget.max_unavailable, Some(IntOrString::Int(1)));
        assert_eq!(
            budget.selector.and_then(|s| s.match_labels),
            spec.selector.match_labels,
            "{mode}: the budget selects the controller's pods"
        );
    }
    let role: Role = read("base/role.yaml")
        .split("\n---\n")
        .filter_map(|doc| serde_saphyr::from_str::<Role>(doc).ok())
        .find(|role| role.metadata.name.as_deref() == Some("flotilla-controller"))
        .expect("the controller's Role");
    let rule = role
        .rules
        .iter()
        .flatten()
        .find(|rule| rule.resources.iter().flatten().any(|r| r == "leases"))
        .expect("a rule for leases");
    for verb in ["get", "list", "create", "update", "delete"] {
        assert!(rule.verbs.iter().any(|v| v == verb), "leases: {verb}");
    }
}

/// The cluster-wide mode lets the controller review viewers' tokens and rights for the web
/// view's actions (create of TokenReviews and SubjectAccessReviews, nothing else), bound to its
/// ServiceAccount; the namespaced mode leaves it out (its view stays read-only).
#[test]
fn the_cluster_wide_mode_may_review_the_web_views_viewers() {
    let objects = rendered("");
    let role = objects
        .iter()
        .find(|o| {
            o["kind"] == "ClusterRole" && o["metadata"]["name"] == "flotilla-web-view-reviews"
        })
        .expect("the web view's review ClusterRole");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}
        ])
    );
    let deployment: Deployment = one(&objects, "Deployment");
    let account = deployment
        .spec
        .and_then(|s| s.template.spec)
        .and_then(|s| s.service_account_name)
        .expect("a ServiceAccount");
    assert!(objects.iter().any(|o| o["kind"] == "ClusterRoleBinding"
        && o["roleRef"]["name"] == "flotilla-web-view-reviews"
        && o["subjects"][0]["name"] == account.as_str()
        && o["subjects"][0]["namespace"] == "flotilla"));
    assert!(
        !rendered("namespaced")
            .iter()
            .any(|o| o["metadata"]["name"] == "flotilla-web-view-reviews")
    );
}

/// The namespaced mode grants nothing cluster-wide (no ClusterRoleBinding), writes (a binding
/// of the application controller's ClusterRole) only in namespaces the controller manages, and
/// registers the in-cluster cluster with those namespaces and no cluster-scoped kinds, so the
/// controller watches nothing across the cluster; `namespace-watcher.yaml` (for globs) grants
/// list and watch of Namespaces and nothing else. The cluster-wide mode binds that ClusterRole
/// cluster-wide.
#[test]
fn the_namespaced_mode_writes_only_in_the_namespaces_it_manages() {
    let objects = rendered("namespaced");
    let deployment: Deployment = one(&objects, "Deployment");
    let control = deployment.metadata.namespace.clone().expect("a namespace");
    let args = deployment
        .spec
        .and_then(|s| s.template.spec)
        .expect("a pod spec")
        .containers[0]
        .args
        .clone()
        .unwrap_or_default();
    let managed: Vec<String> = args
        .iter()
        .filter_map(|a| a.strip_prefix("--application-namespaces="))
        .flat_map(|list| list.split(',').map(str::to_owned))
        .collect();
    assert!(!managed.is_empty(), "{args:?}");
    // ApplicationSets are reconciled only where their Applications are managed.
    let appset_namespaces: Vec<&str> = args
        .iter()
        .filter_map(|a| a.strip_prefix("--applicationset-namespaces="))
        .flat_map(|list| list.split(','))
        .collect();
    assert!(
        !appset_namespaces.is_empty()
            && appset_namespaces
                .iter()
                .all(|n| managed.iter().any(|m| m == n)),
        "{args:?}"
    );
    let cluster_wide_bindings: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == "ClusterRoleBinding")
        .collect();
    assert!(
        cluster_wide_bindings.is_empty(),
        "{cluster_wide_bindings:?}"
    );
    let in_cluster = objects
        .iter()
        .find(|o| {
            o["kind"] == "Secret"
                && o["metadata"]["labels"]["argocd.argoproj.io/secret-type"] == "cluster"
        })
        .expect("the in-cluster cluster Secret");
    assert_eq!(in_cluster["metadata"]["namespace"], control.as_str());
    assert_eq!(
        in_cluster["stringData"]["server"],
        "https://kubernetes.default.svc"
    );
    assert_eq!(in_cluster["stringData"]["clusterResources"], "false");
    let listed: Vec<&str> = in_cluster["stringData"]["namespaces"]
        .as_str()
        .expect("namespaces")
        .split(',')
        .map(str::trim)
        .collect();
    assert_eq!(listed, managed, "the Secret lists the managed namespaces");
    let watcher: Vec<Value> =
        serde_saphyr::from_multiple(&read("namespaced/namespace-watcher.yaml")).expect("YAML");
    let role = watcher
        .iter()
        .find(|o| o["kind"] == "ClusterRole")
        .expect("a ClusterRole");
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list", "watch"]}])
    );
    let bound: Vec<&str> = objects
        .iter()
        .filter(|o| o["kind"] == "RoleBinding")
        .map(|o| o["metadata"]["namespace"].as_str().expect("namespaced"))
        .collect();
    for namespace in &managed {
        assert!(
            bound.contains(&namespace.as_str()),
            "no RoleBinding in {namespace}"
        );
    }
    for namespace in bound {
        assert!(
            namespace == control || managed.iter().any(|m| m == namespace),
            "RoleBinding in {namespace}, which the controller does not manage"
        );
    }
    let cluster_wide = rendered("");
    assert!(
        cluster_wide
            .iter()
            .any(|o| o["kind"] == "ClusterRoleBinding"
                && o["roleRef"]["name"] == "flotilla-application-controller")
    );
}

/// The Service `flotilla-webhook` reaches the port the controller receives git webhooks on, in
/// both modes.
#[test]
fn the_webhook_service_reaches_the_webhook_listener() {
    use k8s_openapi::api::core::v1::Service;
    for mode in MODES {
        let objects = rendered(mode);
        let deployment: Deployment = one(&objects, "Deployment");
        let template = deployment.spec.expect("a spec").template;
        let pod_labels = template.metadata.and_then(|m| m.labels).unwrap_or_default();
        let container = template.spec.expect("a pod spec").containers.remove(0);
        let args = container.args.unwrap_or_default();
        let address = args
            .iter()
            .position(|arg| arg == "--webhook-addr")
            .and_then(|at| args.get(at + 1))
            .unwrap_or_else(|| panic!("deploy/{mode}: --webhook-addr in {args:?}"));
        let port = container
            .ports
            .unwrap_or_default()
            .into_iter()
            .find(|port| port.name.as_deref() == Some("webhook"))
            .expect("a container port named webhook");
        assert_eq!(address, &format!("0.0.0.0:{}", port.container_port));
        let service: Service = objects
            .iter()
            .filter(|o| o["kind"] == "Service" && o["metadata"]["name"] == "flotilla-webhook")
            .map(|o| serde_json::from_value(o.clone()).expect("a Service"))
            .next()
            .unwrap_or_else(|| panic!("deploy/{mode}: Service flotilla-webhook"));
        let spec = service.spec.expect("a spec");
        let selector = spec.selector.unwrap_or_default();
        assert!(!selector.is_empty());
        for (key, value) in &selector {
            assert_eq!(
                pod_labels.get(key),
                Some(value),
                "deploy/{mode}: selector {key}"
            );
        }
        let target = &spec.ports.expect("ports")[0].target_port;
        assert_eq!(
            target,
            &Some(
                k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("webhook".into())
            )
        );
    }
}
