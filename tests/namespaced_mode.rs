//! The namespaced deployment mode on the real control plane, which authorizes with RBAC: the
//! ServiceAccount, Roles, RoleBindings and ClusterRoles of `kubectl kustomize deploy/namespaced`
//! are applied for a test namespace (the control plane's, instead of `flotilla`) and one managed
//! namespace (instead of `team-a`), and the real `flotilla controller --application-namespaces`
//! runs with a kubeconfig that impersonates that ServiceAccount (`as:` on the admin
//! credentials), so it has only those rights. An Application in the managed namespace is synced
//! into it; one in a namespace the controller does not manage is ignored (no status, nothing
//! synced); one whose project's `sourceNamespaces` does not permit the managed namespace gets
//! `InvalidSpecError` naming the rule, and nothing of it is synced. The Applications and
//! AppProjects are created as users create them; everything else is the controller's.

mod controller_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use flotilla::api::{AppProject, Application};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use serde_json::{Value, json};

use controller_support::{commit, repository};
use support::{apply, eventually, object, wait_until};

/// The ServiceAccount the deploy manifests bind.
const SERVICE_ACCOUNT: &str = "flotilla-controller";

/// `kubectl kustomize deploy/namespaced`: every object of the namespaced mode.
fn namespaced_mode() -> Vec<Value> {
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

/// The RBAC objects of the namespaced mode, moved from `flotilla` to `control` and from `team-a`
/// to `managed`; cluster-scoped names get `suffix` so parallel tests do not share them.
fn rbac_for(control: &str, managed: &str, suffix: &str) -> Vec<Value> {
    let rename_namespace = |value: &mut Value| {
        let renamed = match value.as_str() {
            Some("flotilla") => control,
            Some("team-a") => managed,
            _ => return,
        };
        *value = json!(renamed);
    };
    let kinds = [
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "ClusterRole",
        "ClusterRoleBinding",
    ];
    let mut objects: Vec<Value> = namespaced_mode()
        .into_iter()
        .filter(|o| kinds.iter().any(|k| o["kind"] == *k))
        .collect();
    for object in &mut objects {
        if let Some(namespace) = object.pointer_mut("/metadata/namespace") {
            rename_namespace(namespace);
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

/// Applies `objects` as the cluster's administrator.
async fn apply_all(client: &kube::Client, objects: &[Value]) {
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
            &PatchParams::apply("namespaced-mode-test").force(),
            &Patch::Apply(&object),
        )
        .await
        .unwrap_or_else(|e| panic!("applying {} {:?}: {e}", types.kind, object.metadata.name));
    }
}

/// Deletes the cluster-scoped objects among `objects`.
async fn delete_cluster_scoped(client: &kube::Client, objects: &[Value]) {
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

/// Cluster 1's kubeconfig acting as `user` (`as:`), written into `dir`.
fn impersonating_kubeconfig(dir: &Path, user: &str) -> PathBuf {
    let admin = std::fs::read_to_string(support::kubeconfig_path(1)).expect("cluster 1 kubeconfig");
    let mut config: Value = serde_saphyr::from_str(&admin).expect("kubeconfig YAML");
    for entry in config["users"].as_array_mut().expect("users") {
        entry["user"]["as"] = json!(user);
    }
    let path = dir.join("impersonating.kubeconfig");
    std::fs::write(&path, serde_json::to_string(&config).unwrap()).expect("writing");
    path
}

/// The controller process, killed when dropped.
struct Controller(Child);

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n")
}

fn application(name: &str, project: &str, url: &str, destination: &str) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": project,
            "source": {"repoURL": url, "targetRevision": "main", "path": format!("apps/{name}")},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": destination},
            "syncPolicy": {"automated": {"prune": true}}
        }
    }))
}

fn project(name: &str, source_namespaces: &[&str], destination: &str) -> AppProject {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": name},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": destination}],
            "sourceNamespaces": source_namespaces
        }
    }))
}

fn conditions(app: &Application) -> Vec<(String, String)> {
    let status = serde_json::to_value(&app.status).unwrap_or_default();
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or_default().to_owned(),
                c["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_controller_works_with_only_the_namespaced_rights() {
    let control = controller_support::setup("nsmode").await;
    let managed = support::namespace(1, "nsmode-team").await;
    let outside = support::namespace(1, "nsmode-other").await;
    let rbac = rbac_for(&control.name, &managed.name, &control.name);
    apply_all(&control.client, &rbac).await;

    let scratch = tempfile::tempdir().expect("a scratch directory");
    let user = format!("system:serviceaccount:{}:{SERVICE_ACCOUNT}", control.name);
    let kubeconfig = impersonating_kubeconfig(scratch.path(), &user);
    // The kubeconfig really acts with the ServiceAccount's rights: no write outside.
    let impersonated = kube::Client::try_from(
        kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let forbidden = Api::<ConfigMap>::namespaced(impersonated, &outside.name)
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": "probe"}})),
        )
        .await
        .expect_err("the ServiceAccount may not write outside the managed namespaces");
    assert!(forbidden.to_string().contains("forbidden"), "{forbidden}");

    let repo = repository();
    commit(
        repo.path(),
        &[
            ("apps/web/cm.yaml", &config_map("web-config")),
            ("apps/locked/cm.yaml", &config_map("locked-config")),
            ("apps/ignored/cm.yaml", &config_map("ignored-config")),
        ],
        "apps",
    );
    let url = format!("file://{}", repo.path().display());
    let projects = control.api::<AppProject>();
    apply(&projects, &project("team", &[&managed.name], &managed.name)).await;
    apply(
        &projects,
        &project("locked", &["elsewhere-*"], &managed.name),
    )
    .await;
    apply(
        &managed.api(),
        &application("web", "team", &url, &managed.name),
    )
    .await;
    apply(
        &managed.api(),
        &application("locked", "locked", &url, &managed.name),
    )
    .await;
    apply(
        &outside.api(),
        &application("ignored", "team", &url, &outside.name),
    )
    .await;

    let log = std::fs::File::create(scratch.path().join("controller.log")).unwrap();
    let _controller = Controller(
        Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args(["controller", "-n", &control.name])
            .arg(format!("--application-namespaces={}", managed.name))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--repo-cache")
            .arg(scratch.path().join("repos"))
            .args(["--app-resync", "2s", "-v"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("flotilla controller starts"),
    );
    let log_tail = || {
        let text =
            std::fs::read_to_string(scratch.path().join("controller.log")).unwrap_or_default();
        text.lines().rev().take(30).collect::<Vec<_>>().join("\n")
    };

    let apps: Api<Application> = managed.api();
    let synced = eventually(
        "web Synced and its ConfigMap in the managed namespace",
        async || {
            let app = apps.get("web").await.map_err(|e| e.to_string())?;
            let sync =
                serde_json::to_value(&app.status).unwrap_or_default()["sync"]["status"].clone();
            let written = managed
                .api::<ConfigMap>()
                .get_opt("web-config")
                .await
                .ok()
                .flatten();
            match (sync.as_str(), written) {
                (Some("Synced"), Some(_)) => Ok(app),
                (sync, _) => Err(format!("sync {sync:?}; controller log:\n{}", log_tail())),
            }
        },
    )
    .await;
    assert!(conditions(&synced).is_empty(), "{:?}", conditions(&synced));

    let locked = wait_until(&apps, "locked", "InvalidSpecError", |app| {
        conditions(app)
            .iter()
            .any(|(kind, _)| kind == "InvalidSpecError")
    })
    .await;
    let (_, message) = conditions(&locked)
        .into_iter()
        .find(|(kind, _)| kind == "InvalidSpecError")
        .unwrap();
    assert!(
        message.contains(&format!(
            "an Application in namespace {} may not use project \"locked\": no sourceNamespaces entry permits it (\"elsewhere-*\")",
            managed.name
        )),
        "{message}"
    );
    assert!(
        managed
            .api::<ConfigMap>()
            .get_opt("locked-config")
            .await
            .unwrap()
            .is_none()
    );

    // By now the controller has reconciled its namespaces several times: the Application of
    // the namespace it does not manage is untouched.
    let ignored = outside.api::<Application>().get("ignored").await.unwrap();
    assert!(ignored.status.is_none(), "{:?}", ignored.status);
    assert!(
        outside
            .api::<ConfigMap>()
            .get_opt("ignored-config")
            .await
            .unwrap()
            .is_none()
    );
    assert!(!log_tail().contains(" ERROR "), "{}", log_tail());
    delete_cluster_scoped(&control.client, &rbac).await;
}
