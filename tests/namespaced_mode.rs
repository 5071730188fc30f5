//! The namespaced deployment mode on the real control plane, which authorizes with RBAC: the
//! ServiceAccount, Roles, RoleBindings and the in-cluster cluster Secret of `kubectl kustomize
//! deploy/namespaced` are applied for a test namespace (the control plane's, instead of
//! `flotilla`) and one managed namespace (instead of `team-a`), and the real `flotilla controller
//! --application-namespaces` runs with a kubeconfig that impersonates that ServiceAccount (`as:`
//! on the admin credentials), so it has only those rights: no ClusterRoleBinding, nothing
//! cluster-wide. An Application in the managed namespace is synced into it, and a change made
//! by hand to what it synced is reported OutOfSync (the controller's per-namespace watch saw
//! it); one deploying into a namespace the in-cluster Secret does not list, and one deploying a
//! ClusterRole, get a `ComparisonError` naming the cluster and the object, and nothing of them
//! is written; one in a namespace the controller does not manage is ignored (no status, nothing
//! synced); one whose project's `sourceNamespaces` does not permit the managed namespace gets
//! `InvalidSpecError` naming the rule, and nothing of it is synced. With a glob in
//! `--application-namespaces` (and `namespace-watcher.yaml`'s one cluster-wide right, list and
//! watch of Namespaces), a namespace created after the controller started that the glob matches
//! is managed without a restart; one created later that it does not match is ignored. The
//! Applications, AppProjects, namespaces and their RoleBindings are created as users and
//! operators create them; everything else is the controller's.

mod controller_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use flotilla_core::api::{AppProject, Application};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use controller_support::{commit, repository};
use support::namespaced_deploy::{
    SERVICE_ACCOUNT, apply_all, client_of, delete_cluster_scoped, deployed_for, namespace_watcher,
    role_binding_in,
};
use support::{apply, eventually, impersonating_kubeconfig, object, wait_until};

/// The controller process, killed when dropped, and its log.
struct Controller {
    child: Child,
    log: PathBuf,
}

impl Controller {
    /// Starts `flotilla controller` for `control` with `kubeconfig` and `--application-namespaces`
    /// set to `managed`, logging into `scratch`.
    fn start(scratch: &Path, control: &str, managed: &str, kubeconfig: &Path) -> Self {
        let log = scratch.join("controller.log");
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args(["controller", "-n", control])
            .arg(format!("--application-namespaces={managed}"))
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--repo-cache")
            .arg(scratch.join("repos"))
            .args(["--app-resync", "2s", "-v"])
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("flotilla controller starts");
        Self { child, log }
    }

    /// The last 30 lines of its log.
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().rev().take(30).collect::<Vec<_>>().join("\n")
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until `name` of `apps` is Synced and its ConfigMap `config` is in `namespace`.
async fn synced(
    apps: &Api<Application>,
    name: &str,
    namespace: &support::TestNamespace,
    config: &str,
    controller: &Controller,
) -> Application {
    eventually(
        &format!("{name} Synced and its ConfigMap {config} written"),
        async || {
            let app = apps.get(name).await.map_err(|e| e.to_string())?;
            let written = namespace
                .api::<ConfigMap>()
                .get_opt(config)
                .await
                .ok()
                .flatten();
            match (sync_status(&app).as_str(), written) {
                ("Synced", Some(_)) => Ok(app),
                (sync, _) => Err(format!(
                    "sync {sync:?}; controller log:\n{}",
                    controller.log_tail()
                )),
            }
        },
    )
    .await
}

fn sync_status(app: &Application) -> String {
    serde_json::to_value(&app.status).unwrap_or_default()["sync"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The message of `app`'s condition of type `kind`, once it has one.
async fn condition(apps: &Api<Application>, name: &str, kind: &str) -> String {
    let app = wait_until(apps, name, kind, |app| {
        conditions(app).iter().any(|(k, _)| k == kind)
    })
    .await;
    conditions(&app)
        .into_iter()
        .find(|(k, _)| k == kind)
        .map(|(_, message)| message)
        .unwrap()
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

fn cluster_role(name: &str) -> String {
    format!(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {name}\nrules: []\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_controller_works_with_only_the_namespaced_rights() {
    let control = controller_support::setup("nsmode").await;
    let managed = support::namespace(1, "nsmode-team").await;
    let outside = support::namespace(1, "nsmode-other").await;
    let deployed = deployed_for(&control.name, &managed.name, &control.name);
    assert!(
        !deployed.iter().any(|o| o["kind"] == "ClusterRoleBinding"),
        "the namespaced mode grants nothing cluster-wide"
    );
    apply_all(&control.client, &deployed).await;

    let scratch = tempfile::tempdir().expect("a scratch directory");
    let user = format!("system:serviceaccount:{}:{SERVICE_ACCOUNT}", control.name);
    let kubeconfig = impersonating_kubeconfig(scratch.path(), &user);
    // The kubeconfig really acts with the ServiceAccount's rights: no write outside, and no
    // read across the cluster.
    let impersonated = client_of(&kubeconfig).await;
    let forbidden = Api::<ConfigMap>::namespaced(impersonated.clone(), &outside.name)
        .create(
            &PostParams::default(),
            &object(json!({"metadata": {"name": "probe"}})),
        )
        .await
        .expect_err("the ServiceAccount may not write outside the managed namespaces");
    assert!(forbidden.to_string().contains("forbidden"), "{forbidden}");
    let cluster_wide = Api::<ConfigMap>::all(impersonated)
        .list_metadata(&Default::default())
        .await
        .expect_err("the ServiceAccount may not list across the cluster");
    assert!(
        cluster_wide.to_string().contains("forbidden"),
        "{cluster_wide}"
    );

    let repo = repository();
    commit(
        repo.path(),
        &[
            ("apps/web/cm.yaml", &config_map("web-config")),
            ("apps/locked/cm.yaml", &config_map("locked-config")),
            ("apps/ignored/cm.yaml", &config_map("ignored-config")),
            ("apps/astray/cm.yaml", &config_map("astray-config")),
            (
                "apps/cluster-level/role.yaml",
                &cluster_role(&format!("{}-reader", control.name)),
            ),
        ],
        "apps",
    );
    let url = format!("file://{}", repo.path().display());
    let projects = control.api::<AppProject>();
    apply(&projects, &project("team", &[&managed.name], &managed.name)).await;
    apply(&projects, &project("wide", &[&managed.name], "*")).await;
    apply(
        &projects,
        &project("locked", &["elsewhere-*"], &managed.name),
    )
    .await;
    let apps: Api<Application> = managed.api();
    apply(&apps, &application("web", "team", &url, &managed.name)).await;
    apply(&apps, &application("locked", "locked", &url, &managed.name)).await;
    apply(&apps, &application("astray", "wide", &url, &outside.name)).await;
    apply(
        &apps,
        &application("cluster-level", "wide", &url, &managed.name),
    )
    .await;
    apply(
        &outside.api(),
        &application("ignored", "team", &url, &outside.name),
    )
    .await;

    let controller = Controller::start(scratch.path(), &control.name, &managed.name, &kubeconfig);
    let synced = synced(&apps, "web", &managed, "web-config", &controller).await;
    assert!(conditions(&synced).is_empty(), "{:?}", conditions(&synced));

    // Changed by hand: the per-namespace watch sees it, and the compare reports it (no
    // selfHeal, so it stays OutOfSync).
    managed
        .api::<ConfigMap>()
        .patch(
            "web-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "changed by hand"}})),
        )
        .await
        .expect("a change by hand");
    eventually("web OutOfSync after the change by hand", async || {
        let app = apps.get("web").await.map_err(|e| e.to_string())?;
        match sync_status(&app).as_str() {
            "OutOfSync" => Ok(()),
            sync => Err(format!("sync {sync:?}; log:\n{}", controller.log_tail())),
        }
    })
    .await;

    // Outside the in-cluster Secret's namespaces, and a cluster-scoped kind: refused, naming
    // the cluster and the object, before anything is written.
    let astray = condition(&apps, "astray", "ComparisonError").await;
    assert!(
        astray.contains(&format!(
            "cluster in-cluster (https://kubernetes.default.svc): Namespace \"{}\" for ConfigMap \"astray-config\" is not managed (the cluster Secret's namespaces: {})",
            outside.name, managed.name
        )),
        "{astray}"
    );
    let cluster_level = condition(&apps, "cluster-level", "ComparisonError").await;
    assert!(
        cluster_level.contains(&format!(
            "cluster in-cluster (https://kubernetes.default.svc): Cluster level ClusterRole \"{}-reader\" can not be managed when in namespaced mode",
            control.name
        )),
        "{cluster_level}"
    );
    assert!(
        outside
            .api::<ConfigMap>()
            .get_opt("astray-config")
            .await
            .unwrap()
            .is_none()
    );

    let locked = condition(&apps, "locked", "InvalidSpecError").await;
    assert!(
        locked.contains(&format!(
            "an Application in namespace {} may not use project \"locked\": no sourceNamespaces entry permits it (\"elsewhere-*\")",
            managed.name
        )),
        "{locked}"
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
    let log = std::fs::read_to_string(&controller.log).unwrap_or_default();
    assert!(!log.contains(" ERROR "), "{}", controller.log_tail());
    assert!(
        !log.contains("forbidden"),
        "nothing the controller did was forbidden:\n{}",
        log.lines()
            .filter(|l| l.contains("forbidden"))
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    delete_cluster_scoped(&control.client, &deployed).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_created_later_that_a_glob_matches_is_managed_without_a_restart() {
    let control = controller_support::setup("nsglob").await;
    let managed = support::namespace(1, "nsglob-dest").await;
    let mut deployed = deployed_for(&control.name, &managed.name, &control.name);
    deployed.extend(namespace_watcher(&control.name, &control.name));
    apply_all(&control.client, &deployed).await;
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let user = format!("system:serviceaccount:{}:{SERVICE_ACCOUNT}", control.name);
    let kubeconfig = impersonating_kubeconfig(scratch.path(), &user);

    let repo = repository();
    commit(
        repo.path(),
        &[
            ("apps/late/cm.yaml", &config_map("late-config")),
            ("apps/unmatched/cm.yaml", &config_map("unmatched-config")),
        ],
        "apps",
    );
    let url = format!("file://{}", repo.path().display());
    // The teams' namespaces: `nsglob-team-<process>-…`, created after the controller started.
    let glob = format!("nsglob-team-{}-*", std::process::id());
    let projects = control.api::<AppProject>();
    apply(&projects, &project("teams", &["nsglob-*"], &managed.name)).await;
    let controller = Controller::start(scratch.path(), &control.name, &glob, &kubeconfig);
    // Started: it has reconciled its own namespace (no Applications there yet).
    eventually("the controller leads", async || {
        let log = std::fs::read_to_string(&controller.log).unwrap_or_default();
        log.contains("leading")
            .then_some(())
            .ok_or_else(|| controller.log_tail())
    })
    .await;

    let late = support::namespace(1, &format!("nsglob-team-{}", std::process::id())).await;
    let unmatched = support::namespace(1, "nsglob-else").await;
    // The operator grants the controller the new namespaces (the glob alone grants nothing).
    let bindings: Vec<Value> = [&late.name, &unmatched.name]
        .into_iter()
        .map(|namespace| role_binding_in(&deployed, &managed.name, namespace))
        .collect();
    apply_all(&control.client, &bindings).await;
    apply(
        &late.api(),
        &application("late", "teams", &url, &managed.name),
    )
    .await;
    apply(
        &unmatched.api(),
        &application("unmatched", "teams", &url, &managed.name),
    )
    .await;

    let late_apps: Api<Application> = late.api();
    let started = std::time::Instant::now();
    synced(&late_apps, "late", &managed, "late-config", &controller).await;
    eprintln!(
        "the Application of the namespace created later synced {:.1} s after it was created",
        started.elapsed().as_secs_f64()
    );
    let ignored = unmatched
        .api::<Application>()
        .get("unmatched")
        .await
        .unwrap();
    assert!(ignored.status.is_none(), "{:?}", ignored.status);
    assert!(
        managed
            .api::<ConfigMap>()
            .get_opt("unmatched-config")
            .await
            .unwrap()
            .is_none()
    );
    let log = std::fs::read_to_string(&controller.log).unwrap_or_default();
    let started_managing = |namespace: &str| {
        log.lines().any(|line| {
            line.contains("managing the Applications of namespace") && line.contains(namespace)
        })
    };
    assert!(started_managing(&late.name), "{}", controller.log_tail());
    assert!(
        !started_managing(&unmatched.name),
        "{}",
        controller.log_tail()
    );
    delete_cluster_scoped(&control.client, &deployed).await;
}
