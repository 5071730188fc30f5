//! The objects of the namespaced deployment mode (`kubectl kustomize deploy/namespaced`) moved
//! into a test's namespaces and applied as the cluster's administrator, and a client acting with
//! a kubeconfig (e.g. [`super::impersonating_kubeconfig`], as the controller's ServiceAccount):
//! shared by the tests that run the controller with only the shipped RBAC.

use std::path::{Path, PathBuf};
use std::process::Command;

use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use super::object;

/// The ServiceAccount the deploy manifests bind.
pub const SERVICE_ACCOUNT: &str = "flotilla-controller";

/// `kubectl kustomize deploy/namespaced`: every object of the namespaced mode.
pub fn namespaced_mode() -> Vec<Value> {
    let kubectl = std::env::var_os("FLOTILLA_KUBECTL").unwrap_or_else(|| "kubectl".into());
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/namespaced");
    let output = Command::new(&kubectl)
        .arg("kustomize")
        .arg(&dir)
        .output()
        .unwrap_or_else(|e| panic!("{kubectl:?} kustomize: {e} (set FLOTILLA_KUBECTL)"));
    assert!(
        output.status.success(),
        "kubectl kustomize deploy/namespaced: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_saphyr::from_multiple(&String::from_utf8_lossy(&output.stdout)).expect("YAML documents")
}

/// What the namespaced mode deploys that the controller runs with (its RBAC objects and the
/// in-cluster cluster Secret), moved from `flotilla` to `control` and from `team-a` to `managed`.
pub fn deployed_for(control: &str, managed: &str, suffix: &str) -> Vec<Value> {
    let kinds = [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
        "Secret",
    ];
    let objects: Vec<Value> = namespaced_mode()
        .into_iter()
        .filter(|o| kinds.iter().any(|k| o["kind"] == *k))
        .collect();
    renamed(objects, control, managed, suffix)
}

/// `objects` moved from `flotilla` to `control` and from `team-a` to `managed` (the in-cluster
/// Secret's `namespaces` too); cluster-scoped names get `suffix` so parallel tests do not share
/// them.
pub fn renamed(mut objects: Vec<Value>, control: &str, managed: &str, suffix: &str) -> Vec<Value> {
    let rename_namespace = |value: &mut Value| {
        let renamed = match value.as_str() {
            Some("flotilla") => control,
            Some("team-a") => managed,
            _ => return,
        };
        *value = json!(renamed);
    };
    for object in &mut objects {
        if let Some(namespace) = object.pointer_mut("/metadata/namespace") {
            rename_namespace(namespace);
        }
        if let Some(namespaces) = object.pointer_mut("/stringData/namespaces") {
            rename_namespace(namespaces);
        }
        let subjects = object.get_mut("subjects").and_then(Value::as_array_mut);
        for subject in subjects.into_iter().flatten() {
            rename_namespace(&mut subject["namespace"]);
        }
        if object["kind"]
            .as_str()
            .is_some_and(|k| k.starts_with("Cluster"))
        {
            let name = format!("{}-{suffix}", object["metadata"]["name"].as_str().unwrap());
            object["metadata"]["name"] = json!(name);
        }
        if object["roleRef"]["kind"] == "ClusterRole" {
            let name = format!("{}-{suffix}", object["roleRef"]["name"].as_str().unwrap());
            object["roleRef"]["name"] = json!(name);
        }
    }
    objects
}

/// The objects of `deploy/namespaced/namespace-watcher.yaml` (for globs), renamed as
/// [`renamed`] does.
pub fn namespace_watcher(control: &str, suffix: &str) -> Vec<Value> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("deploy/namespaced/namespace-watcher.yaml");
    let text = std::fs::read_to_string(&path).expect("namespace-watcher.yaml");
    let objects = serde_saphyr::from_multiple(&text).expect("YAML documents");
    renamed(objects, control, "team-a", suffix)
}

/// The managed namespace's RoleBinding of `objects`, for `namespace` instead.
pub fn role_binding_in(objects: &[Value], managed: &str, namespace: &str) -> Value {
    let mut binding = objects
        .iter()
        .find(|o| o["kind"] == "RoleBinding" && o["metadata"]["namespace"] == managed)
        .expect("the managed namespace's RoleBinding")
        .clone();
    binding["metadata"]["namespace"] = json!(namespace);
    binding
}

/// Applies `objects` as the cluster's administrator.
pub async fn apply_all(client: &kube::Client, objects: &[Value]) {
    for value in objects {
        let object: DynamicObject = object(value.clone());
        let types = object.types.clone().expect("apiVersion and kind");
        let (group, version) = types
            .api_version
            .split_once('/')
            .unwrap_or(("", types.api_version.as_str()));
        let resource = ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            group,
            version,
            &types.kind,
        ));
        let api: Api<DynamicObject> = match object.metadata.namespace.as_deref() {
            Some(namespace) => Api::namespaced_with(client.clone(), namespace, &resource),
            None => Api::all_with(client.clone(), &resource),
        };
        api.patch(
            object.metadata.name.as_deref().expect("named"),
            &PatchParams::apply("namespaced-deploy-test").force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {} {:?}: {e}", types.kind, object.metadata.name));
    }
}

/// Deletes the cluster-scoped objects among `objects`.
pub async fn delete_cluster_scoped(client: &kube::Client, objects: &[Value]) {
    for value in objects
        .iter()
        .filter(|o| o["metadata"]["namespace"].is_null())
    {
        let resource = ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            "rbac.authorization.k8s.io",
            "v1",
            value["kind"].as_str().unwrap(),
        ));
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        let _ = api
            .delete(
                value["metadata"]["name"].as_str().unwrap(),
                &Default::default(),
            )
            .await;
    }
}

/// A kube client acting with `kubeconfig`.
pub async fn client_of(kubeconfig: &Path) -> kube::Client {
    kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(kubeconfig).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap()
}
