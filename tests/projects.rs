//! Projects on the real control plane, as a platform team writes them: an AppProject (applied
//! with the API, never pre-creating what the controller creates) that permits one namespace
//! pattern and, of cluster-scoped kinds, only those Namespaces. An ApplicationSet generates
//! three Applications from a bare repository served by `git daemon`: one is synced; the one
//! that also holds a ClusterRole fails before anything is written (its ConfigMap and Namespace
//! stay absent), naming the object and the rule; the one aimed at a namespace the project does
//! not permit is never created. The ApplicationSet reports both. Permitting the namespace
//! later creates the refused Application at once; offline, `flotilla render --project` refuses
//! the same Application with the same rule.

mod controller_support;
mod support;

use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::api::application_set_status::{ConditionStatus, ConditionType};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::health::HealthStatus;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::Api;
use serde_json::{Value, json};

use controller_support::{setup, start};
use support::git_remote::{GitDaemon, Remote};
use support::{apply, eventually, object, wait_until};

fn config_map(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n")
}

/// The project `team`: any repository, destinations `<ns>-team-*` (plus `extra`), and of
/// cluster-scoped kinds only Namespaces of those names.
fn project(ns: &str, extra: &[&str]) -> Value {
    let team = format!("{ns}-team-*");
    let mut destinations =
        vec![json!({"server": "https://kubernetes.default.svc", "namespace": team})];
    let mut namespaces = vec![json!({"group": "", "kind": "Namespace", "name": team})];
    for namespace in extra {
        destinations.push(json!({"name": "in-cluster", "namespace": namespace}));
        namespaces.push(json!({"kind": "Namespace", "name": namespace}));
    }
    json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": "team"},
        "spec": {
            "description": "team apps",
            "sourceRepos": ["!https://forbidden.example.com/*", "*"],
            "destinations": destinations,
            "clusterResourceWhitelist": namespaces
        }
    })
}

fn application_set(ns: &str, url: &str) -> ApplicationSet {
    let element = |name: &str, namespace: String| json!({"name": name, "namespace": namespace});
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "team-apps"},
        "spec": {
            "generators": [{"list": {"elements": [
                element("web", format!("{ns}-team-web")),
                element("admin", format!("{ns}-team-admin")),
                element("outside", format!("{ns}-other")),
            ]}}],
            "template": {
                "metadata": {"name": "{{name}}"},
                "spec": {
                    "project": "team",
                    "source": {"repoURL": url, "targetRevision": "main", "path": "apps/{{name}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": "{{namespace}}"},
                    "syncPolicy": {"automated": {"prune": true}, "syncOptions": ["CreateNamespace=true"]}
                }
            }
        }
    }))
}

fn error_occurred(appset: &ApplicationSet) -> String {
    appset
        .status
        .as_ref()
        .and_then(|s| {
            s.conditions.iter().find(|c| {
                c.type_ == ConditionType::ErrorOccurred && c.status == ConditionStatus::True
            })
        })
        .map(|c| c.message.clone())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_project_refuses_a_cluster_role_and_a_namespace_and_the_application_set_says_so() {
    let ns = setup("projects").await;
    let remote = Remote::new("team");
    remote.write("apps/web/cm.yaml", &config_map("web"));
    remote.write("apps/outside/cm.yaml", &config_map("outside"));
    remote.write("apps/admin/cm.yaml", &config_map("admin"));
    let role = format!("{}-reader", ns.name);
    remote.write(
        "apps/admin/role.yaml",
        &format!("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {role}\nrules: []\n"),
    );
    remote.push("three apps");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let projects: Api<flotilla_core::api::AppProject> = ns.api();
    apply(&projects, &object(project(&ns.name, &[]))).await;
    let controller = start(&ns, "only");
    let appsets = ns.api::<ApplicationSet>();
    apply(&appsets, &application_set(&ns.name, &url)).await;
    let apps = ns.api::<Application>();

    let web_ns = format!("{}-team-web", ns.name);
    wait_until(&apps, "web", "web Synced and Healthy", |app| {
        let status = app.status.as_ref();
        status
            .and_then(|s| s.sync.as_ref())
            .is_some_and(|s| s.status == SyncStatusCode::Synced)
            && status
                .and_then(|s| s.health.as_ref())
                .is_some_and(|h| h.status == HealthStatus::Healthy)
    })
    .await;
    let web_maps: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &web_ns);
    assert!(web_maps.get_opt("web").await.expect("reads").is_some());

    let admin = wait_until(&apps, "admin", "admin's sync failed", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|op| op.phase == OperationPhase::Failed)
    })
    .await;
    let operation = admin
        .status
        .and_then(|s| s.operation_state)
        .expect("an operation");
    assert!(
        operation.message.contains(&format!(
            "project \"team\" does not permit ClusterRole {role}"
        )),
        "{}",
        operation.message
    );
    let record = operation
        .resources
        .iter()
        .find(|r| r.kind == "ClusterRole")
        .expect("the ClusterRole's record");
    assert_eq!(
        record.message,
        format!(
            "ClusterRole.rbac.authorization.k8s.io {role} is not permitted in project \"team\": \
             no clusterResourceWhitelist entry names it"
        )
    );
    let admin_ns = format!("{}-team-admin", ns.name);
    let namespaces: Api<Namespace> = Api::all(ns.client.clone());
    let roles: Api<ClusterRole> = Api::all(ns.client.clone());
    assert!(
        namespaces
            .get_opt(&admin_ns)
            .await
            .expect("reads")
            .is_none(),
        "nothing written"
    );
    assert!(
        roles.get_opt(&role).await.expect("reads").is_none(),
        "nothing written"
    );

    let reported = eventually("the ApplicationSet reports both refusals", async || {
        let appset = appsets.get("team-apps").await.map_err(|e| e.to_string())?;
        let message = error_occurred(&appset);
        (message.contains(
            "outside: destination https://kubernetes.default.svc (in-cluster), namespace",
        ) && message.contains("no destinations entry permits it")
            && message.contains(
                "admin: nothing was written: project \"team\" does not permit ClusterRole",
            ))
        .then_some(message.clone())
        .ok_or(message)
    })
    .await;
    assert!(
        reported.contains(&format!("namespace \"{}-other\"", ns.name)),
        "{reported}"
    );
    assert!(
        apps.get_opt("outside").await.expect("reads").is_none(),
        "outside is not created"
    );

    // Offline, the same check refuses the same Application with the same rule.
    let dir = tempfile::tempdir().expect("a directory");
    let project_file = dir.path().join("team.yaml");
    let mut argo = project(&ns.name, &[]);
    argo["apiVersion"] = "argoproj.io/v1alpha1".into();
    std::fs::write(&project_file, serde_json::to_string(&argo).expect("json")).expect("writes");
    let appset_file = dir.path().join("appset.yaml");
    std::fs::write(
        &appset_file,
        serde_json::to_string(&application_set(&ns.name, &url)).expect("json"),
    )
    .expect("writes");
    let rendered = std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .args(["render", &appset_file.display().to_string(), "--project"])
        .arg(&project_file)
        .args(["-o", "table"])
        .output()
        .expect("flotilla runs");
    let stderr = String::from_utf8_lossy(&rendered.stderr);
    assert_eq!(rendered.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "1 Application(s) refused by their project and not written: outside: destination"
        ),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        stdout.contains("admin") && stdout.contains("web") && !stdout.contains("outside"),
        "{stdout}"
    );

    // Permitting the namespace creates the refused Application at once.
    apply(
        &projects,
        &object(project(&ns.name, &[&format!("{}-other", ns.name)])),
    )
    .await;
    wait_until(&apps, "outside", "outside created and Synced", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.sync.as_ref())
            .is_some_and(|s| s.status == SyncStatusCode::Synced)
    })
    .await;
    controller.stop().await;
}

/// `kubectl --kubeconfig <cluster 1> ARGS...`.
fn kubectl(args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(support::kubectl());
    command
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args(args);
    command
}

/// What the API server stores of `object` in `namespace`, as `kubectl get -o json` prints it.
fn kubectl_get_json(namespace: &str, object: &str) -> Value {
    let out = kubectl(&["get", "-n", namespace, object, "-o", "json"])
        .output()
        .expect("runs kubectl");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("kubectl prints JSON")
}

/// `kubectl apply -f -` of `yaml` to cluster 1; fails the test with kubectl's message.
fn kubectl_apply(yaml: &str) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = kubectl(&["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs kubectl");
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(yaml.as_bytes())
        .expect("writes to kubectl");
    let out = child.wait_with_output().expect("kubectl ends");
    assert!(
        out.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An AppProject as Argo CD's documentation writes one, applied with kubectl: `group: ''` names
/// the core group and the description is empty. The API server keeps both as written, and the
/// project is enforced: an Application holding a ResourceQuota fails before anything is written,
/// naming the blacklist entry, while its namespace (whitelisted with `group: ''`) is allowed.
#[tokio::test]
async fn an_app_project_with_empty_strings_applied_with_kubectl_is_enforced() {
    let ns = setup("projects-kubectl").await;
    kubectl_apply(&format!(
        "apiVersion: flotilla.dev/v1alpha1
kind: AppProject
metadata:
  name: no-quotas
  namespace: {ns}
spec:
  description: \"\"
  sourceRepos: ['*']
  destinations:
  - namespace: '*'
    server: https://kubernetes.default.svc
  clusterResourceWhitelist:
  - group: ''
    kind: Namespace
  namespaceResourceBlacklist:
  - group: ''
    kind: ResourceQuota
",
        ns = ns.name
    ));
    let stored = kubectl_get_json(&ns.name, "appproject.flotilla.dev/no-quotas");
    assert_eq!(stored["spec"]["description"], json!(""), "{stored}");
    assert_eq!(
        stored["spec"]["namespaceResourceBlacklist"],
        json!([{"group": "", "kind": "ResourceQuota"}]),
        "{stored}"
    );

    let remote = Remote::new("quotas");
    remote.write("app/cm.yaml", &config_map("settings"));
    remote.write(
        "app/quota.yaml",
        "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: pods\nspec:\n  hard:\n    pods: \"10\"\n",
    );
    remote.push("a quota");
    let target = format!("{}-quota", ns.name);
    let controller = start(&ns, "only");
    let apps = ns.api::<Application>();
    apply(
        &apps,
        &object(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "quota"},
            "spec": {
                "project": "no-quotas",
                "source": {"repoURL": remote.file_url(), "targetRevision": "main", "path": "app"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": target},
                "syncPolicy": {"automated": {}, "syncOptions": ["CreateNamespace=true"]}
            }
        })),
    )
    .await;
    let failed = wait_until(&apps, "quota", "quota's sync failed", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some_and(|op| op.phase == OperationPhase::Failed)
    })
    .await;
    let operation = failed
        .status
        .and_then(|s| s.operation_state)
        .expect("an operation");
    let record = operation
        .resources
        .iter()
        .find(|r| r.kind == "ResourceQuota")
        .expect("the ResourceQuota's record");
    assert_eq!(
        record.message,
        format!(
            "ResourceQuota {target}/pods is not permitted in project \"no-quotas\": denied by \
             namespaceResourceBlacklist entry {{group: \"\", kind: \"ResourceQuota\"}}"
        )
    );
    let maps: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &target);
    assert!(
        maps.get_opt("settings").await.expect("reads").is_none(),
        "nothing written"
    );
    controller.stop().await;
}
