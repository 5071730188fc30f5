//! ApplicationSets in any namespace on the real control plane: `flotilla controller
//! --applicationset-namespaces` (with `--application-namespaces`, as Argo CD needs both)
//! reconciles the ApplicationSets of a listed namespace and writes their Applications there,
//! which the Application controller of that namespace syncs; the project's `sourceNamespaces`
//! decides which projects they may use (one without it is refused, nothing written); an
//! ApplicationSet of a namespace listed for ApplicationSets but not for Applications is not
//! reconciled. An ApplicationSet created the moment the controller starts, in the control
//! plane's namespace or a listed one, is reconciled (tried over several starts: a creation
//! racing the controllers' first lists was once never reconciled).

mod controller_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use flotilla_core::api::{AppProject, Application, ApplicationSet};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::ResourceExt;
use serde_json::{Value, json};

use support::git_remote::{GitDaemon, Remote};
use support::{TestNamespace, apply, eventually, eventually_within, object};

/// The controller process, killed when dropped, and its log.
struct Controller {
    child: Child,
    log: PathBuf,
}

impl Controller {
    /// `flotilla controller -n control` with `args`, logging into `scratch`.
    fn start(scratch: &Path, control: &str, args: &[String]) -> Self {
        let log = scratch.join("controller.log");
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args(["controller", "-n", control])
            .args(args)
            .arg("--kubeconfig")
            .arg(support::kubeconfig_path(1))
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
        support::print_log_tail_if_panicking(&self.log, 120);
    }
}

/// An ApplicationSet of one Application `app` of `project`, syncing `path` of `url` into
/// `namespace` automatically.
fn application_set(name: &str, app: &str, project: &str, url: &str, namespace: &str) -> Value {
    json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name},
        "spec": {
            "generators": [{"list": {"elements": [{"app": app}]}}],
            "template": {
                "metadata": {"name": "{{app}}"},
                "spec": {
                    "project": project,
                    "source": {"repoURL": url, "targetRevision": "main", "path": "team"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
                    "syncPolicy": {"automated": {"prune": true}}
                }
            }
        }
    })
}

/// Writes AppProject `name` of `control`, permitting every repository and destination, and
/// Applications of `source_namespaces`.
async fn apply_project(control: &TestNamespace, name: &str, source_namespaces: Value) {
    let project = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": name},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "sourceNamespaces": source_namespaces,
        }
    }));
    apply(&control.api::<AppProject>(), &project).await;
}

/// The conditions' messages of ApplicationSet `name` in `ns`.
async fn conditions(ns: &TestNamespace, name: &str) -> Vec<String> {
    let appset = ns
        .api::<ApplicationSet>()
        .get(name)
        .await
        .expect("the ApplicationSet");
    appset
        .status
        .map(|s| s.conditions.into_iter().map(|c| c.message).collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn application_sets_of_listed_namespaces_generate_there_under_source_namespaces() {
    let remote = Remote::new("appset-namespaces");
    let manifests = remote.work().join("team");
    std::fs::create_dir_all(&manifests).unwrap();
    std::fs::write(
        manifests.join("settings.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team-settings\ndata:\n  a: b\n",
    )
    .unwrap();
    remote.push("the team's manifests");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let control = controller_support::setup("appset-control").await;
    let team = support::namespace(1, "appset-team").await;
    let other = support::namespace(1, "appset-other").await;

    for (name, source_namespaces) in [("team", json!([team.name])), ("locked", json!([]))] {
        apply_project(&control, name, source_namespaces).await;
    }
    let team_sets = team.api::<ApplicationSet>();
    let web = application_set("web", "team-web", "team", &url, &team.name);
    apply(&team_sets, &object(web)).await;
    let locked = application_set("locked", "team-locked", "locked", &url, &team.name);
    apply(&team_sets, &object(locked)).await;
    let ignored = application_set("ignored", "other-web", "team", &url, &other.name);
    apply(&other.api::<ApplicationSet>(), &object(ignored)).await;

    let scratch = tempfile::tempdir().unwrap();
    let controller = Controller::start(
        scratch.path(),
        &control.name,
        &[
            format!("--application-namespaces={}", team.name),
            format!("--applicationset-namespaces={},{}", team.name, other.name),
        ],
    );

    // The team's ApplicationSet writes its Application in its own namespace, which is synced.
    let team_apps = team.api::<Application>();
    eventually(
        &format!("team-web synced ({})", controller.log_tail()),
        async || {
            let app = team_apps.get("team-web").await.map_err(|e| e.to_string())?;
            let owner = app.owner_references().first().map(|o| o.name.clone());
            if owner.as_deref() != Some("web") {
                return Err(format!("owner {owner:?}"));
            }
            team.api::<ConfigMap>()
                .get("team-settings")
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        },
    )
    .await;
    // A project without the namespace in sourceNamespaces refuses it: nothing written.
    let refused = eventually("locked refused by its project", async || {
        let messages = conditions(&team, "locked").await;
        messages
            .iter()
            .find(|m| m.contains("team-locked") && m.contains("sourceNamespaces"))
            .cloned()
            .ok_or_else(|| format!("{messages:?}"))
    })
    .await;
    assert!(
        refused.contains(&format!(
            "an Application in namespace {} may not use project \"locked\"",
            team.name
        )),
        "{refused}"
    );
    assert!(
        team_apps.get_opt("team-locked").await.unwrap().is_none(),
        "a refused Application is not written"
    );
    // Nothing generated in the control plane's namespace, and the namespace listed only for
    // ApplicationSets is not reconciled.
    let control_apps = control.api::<Application>();
    let listed = control_apps.list(&Default::default()).await.unwrap();
    assert!(listed.items.is_empty(), "{:?}", listed.items);
    assert!(
        conditions(&other, "ignored").await.is_empty(),
        "an ApplicationSet of a namespace whose Applications are not managed has no status"
    );
    assert!(
        other
            .api::<Application>()
            .get_opt("other-web")
            .await
            .unwrap()
            .is_none()
    );
    drop(controller);
}

#[tokio::test]
async fn application_sets_created_as_the_controller_starts_are_reconciled() {
    let url = "https://git.invalid/unused.git";
    for start in 0..3 {
        // Fresh namespaces each time: a killed controller's Lease would hold the next one back.
        let control = controller_support::setup("appset-start").await;
        let team = support::namespace(1, "appset-start-team").await;
        apply_project(&control, "team", json!([team.name])).await;
        let scratch = tempfile::tempdir().unwrap();
        let controller = Controller::start(
            scratch.path(),
            &control.name,
            &[
                format!("--application-namespaces={}", team.name),
                format!("--applicationset-namespaces={}", team.name),
            ],
        );
        for ns in [&control, &team] {
            let appset = application_set("fresh", "fresh-app", "team", url, &ns.name);
            apply(&ns.api::<ApplicationSet>(), &object(appset)).await;
        }
        for ns in [&control, &team] {
            let apps = ns.api::<Application>();
            // Generous: a reconcile takes well under a second; missed, it never comes.
            eventually_within(
                std::time::Duration::from_secs(30),
                &format!("start {start}: fresh-app generated in {}", ns.name),
                async || {
                    apps.get("fresh-app")
                        .await
                        .map(drop)
                        .map_err(|e| e.to_string())
                },
            )
            .await;
        }
        drop(controller);
    }
}
