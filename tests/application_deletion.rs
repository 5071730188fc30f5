//! Objects that wait for a person, and hooks that run when an Application goes, against a real
//! API server with the controller run in-process on cluster 1. Inputs are shaped as users write
//! them: manifests pushed to a bare git repository, an Application with
//! `CreateNamespace=true` into a namespace nobody created, the Argo CD resources finalizer.
//! `Prune=confirm` keeps an automated prune waiting (status shows it, a restarted controller
//! resumes the wait) until `flotilla app confirm-prune`; `Delete=confirm` holds the deletion of
//! the Application's objects until then; PostDelete hook Jobs run after the resources are gone
//! and before the Application disappears, with their delete policies, once even when the
//! controller is killed while they run; a failing one, or one that outlasts the operation
//! timeout, keeps the Application and is reported. A failing PreDelete hook keeps every object
//! and the Application, and is reported.

mod controller_support;
mod support;

use flotilla_core::api::Application;
use flotilla_core::api::application::ApplicationConditionType;
use flotilla_core::api::application_set_status::SyncStatusCode;
use flotilla_core::sync::{OperationPhase, ResourceAction, ResultStatus};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use controller_support::{Running, setup, start};
use support::git_remote::Remote;
use support::{TestNamespace, apply, eventually, object, run_flotilla, wait_until};

/// A ConfigMap manifest, with `sync-options` when given.
fn config(name: &str, options: &str) -> String {
    let annotations = if options.is_empty() {
        String::new()
    } else {
        format!("\n  annotations:\n    argocd.argoproj.io/sync-options: {options}")
    };
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}{annotations}\ndata:\n  a: b\n"
    )
}

/// How a hook Job's pod behaves on the node simulator.
#[derive(Clone, Copy)]
enum Pod {
    /// Succeeds after 3 s (so the test sees it run).
    Succeeds,
    /// Fails after 3 s.
    Fails,
    /// Runs for 10 minutes.
    Slow,
}

/// A PostDelete hook Job.
fn post_delete_job(name: &str, policy: Option<&str>, pod: Pod) -> String {
    hook_job("PostDelete", name, policy, pod)
}

/// A hook Job of `hook` (PreDelete, PostDelete).
fn hook_job(hook: &str, name: &str, policy: Option<&str>, pod: Pod) -> String {
    let policy = policy.map_or(String::new(), |p| {
        format!("\n    argocd.argoproj.io/hook-delete-policy: {p}")
    });
    let pod = match pod {
        Pod::Succeeds => "sim.flotilla.dev/ready-after: 3s",
        Pod::Fails => "sim.flotilla.dev/ready-after: 3s\n        sim.flotilla.dev/fail: \"true\"",
        Pod::Slow => "sim.flotilla.dev/ready-after: 10m",
    };
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\n  annotations:\n    \
         argocd.argoproj.io/hook: {hook}{policy}\nspec:\n  backoffLimit: 0\n  template:\n    \
         metadata:\n      annotations:\n        {pod}\n    \
         spec:\n      restartPolicy: Never\n      containers:\n        - name: task\n          \
         image: example.com/cleanup:1\n"
    )
}

/// Application `web` synced from a bare repository holding `files`, the controller running.
struct Deployed {
    /// The repository (removed when dropped).
    remote: Remote,
    ns: TestNamespace,
    /// The destination namespace.
    dest: String,
    controller: Running,
    apps: Api<Application>,
}

async fn deployed(label: &str, files: &[(&str, String)]) -> Deployed {
    let (remote, first) = remote_with(files);
    let ns = setup(label).await;
    let controller = start(&ns, "only");
    let apps = application(&ns, &remote).await;
    synced(&apps, &first).await;
    Deployed {
        dest: destination(&ns),
        remote,
        ns,
        controller,
        apps,
    }
}

async fn delete(apps: &Api<Application>) {
    apps.delete("web", &DeleteParams::default())
        .await
        .expect("deletes the Application");
}

/// A bare repository with `files` under `web/`, pushed; and the commit.
fn remote_with(files: &[(&str, String)]) -> (Remote, String) {
    let remote = Remote::new("web");
    for (file, content) in files {
        remote.write(&format!("web/{file}"), content);
    }
    let commit = remote.push("first");
    (remote, commit)
}

/// The namespace the Application deploys into, created by the sync (`CreateNamespace=true`).
fn destination(ns: &TestNamespace) -> String {
    format!("{}-dest", ns.name)
}

/// Applies Application `web` as a user writes it: automated sync with prune, `CreateNamespace`,
/// Argo CD's resources finalizer.
async fn application(ns: &TestNamespace, remote: &Remote) -> Api<Application> {
    let apps: Api<Application> = ns.api();
    let app: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": "web",
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": {
            "project": "default",
            "source": {"repoURL": remote.file_url(), "targetRevision": "main", "path": "web"},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": destination(ns)},
            "syncPolicy": {"automated": {"prune": true}, "syncOptions": ["CreateNamespace=true"]},
        },
    }));
    apply(&apps, &app).await;
    apps
}

async fn synced(apps: &Api<Application>, revision: &str) {
    wait_until(apps, "web", &format!("web Synced at {revision}"), |app| {
        let status = app.status.clone().unwrap_or_default();
        let sync = status.sync.unwrap_or_default();
        let operation = status.operation_state.map(|op| op.phase);
        sync.status == SyncStatusCode::Synced
            && sync.revision == revision
            && operation == Some(OperationPhase::Succeeded)
    })
    .await;
}

async fn confirm(ns: &TestNamespace) {
    let out = run_flotilla(ns, &["app", "confirm-prune", "web"]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout.starts_with(
            "pruning and deletion of Application web's objects confirmed (argocd.argoproj.io/deletion-approved: "
        ),
        "{stdout}"
    );
}

async fn exists<K>(api: &Api<K>, name: &str) -> bool
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name)
        .await
        .unwrap_or_else(|error| panic!("reading {name}: {error}"))
        .is_some()
}

/// The message of the Application's `DeletionError` condition.
fn deletion_error(app: &Application) -> Option<String> {
    let conditions = &app.status.as_ref()?.conditions;
    conditions
        .iter()
        .find(|c| c.type_ == ApplicationConditionType::DeletionError)
        .map(|c| c.message.clone())
}

/// `kept`, and `critical` which asks for a pruning confirmation.
fn kept_and_critical() -> [(&'static str, String); 2] {
    [
        ("kept.yaml", config("kept", "")),
        ("critical.yaml", config("critical", "Prune=confirm")),
    ]
}

/// Removes `critical` from the repository and waits until the automated sync waits for the
/// confirmation of its prune; returns the new commit.
async fn waiting_for_prune_confirmation(web: &Deployed) -> String {
    std::fs::remove_file(web.remote.work().join("web/critical.yaml")).expect("removes the file");
    let second = web.remote.push("critical goes");
    let expected = format!(
        "prune wave 0: waiting for pruning confirmation of ConfigMap {}/critical (Prune=confirm)",
        web.dest
    );
    wait_until(
        &web.apps,
        "web",
        "the sync waiting for confirmation",
        |app| {
            let operation = app.status.as_ref().and_then(|s| s.operation_state.as_ref());
            operation.is_some_and(|op| {
                op.phase == OperationPhase::Running
                    && op.message == expected
                    && op.revision.as_deref() == Some(second.as_str())
            })
        },
    )
    .await;
    second
}

/// The id of Application `web`'s current or last operation.
async fn operation_id(apps: &Api<Application>) -> Option<String> {
    let app = apps.get("web").await.expect("reads the Application");
    Some(app.status?.operation_state?.operation_id)
}

async fn gone(apps: &Api<Application>) {
    eventually("Application web deleted", async || {
        match apps.get_opt("web").await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(app) => Err(format!("{:#?}", app.status)),
        }
    })
    .await;
}

#[tokio::test]
async fn a_prune_confirm_object_waits_for_confirm_prune() {
    let web = deployed("prune-confirm", &kept_and_critical()).await;
    let (ns, dest, apps) = (&web.ns, web.dest.clone(), web.apps.clone());
    let configs: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &dest);
    assert!(exists(&configs, "critical").await);

    let second = waiting_for_prune_confirmation(&web).await;
    let waiting = operation_id(&apps).await;
    // A controller killed while the sync waits: the next one resumes the same operation, still
    // waiting, and takes the confirmation.
    web.controller.kill().await;
    let controller = start(ns, "successor");
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    assert!(exists(&configs, "critical").await, "not pruned unconfirmed");

    confirm(ns).await;
    synced(&apps, &second).await;
    assert!(!exists(&configs, "critical").await, "pruned once confirmed");
    assert!(exists(&configs, "kept").await);
    let pruned = apps
        .get("web")
        .await
        .unwrap()
        .status
        .unwrap()
        .operation_state
        .unwrap()
        .resources
        .into_iter()
        .find(|r| r.name == "critical")
        .expect("a record of the prune");
    assert_eq!(
        (pruned.status, pruned.action),
        (ResultStatus::Pruned, Some(ResourceAction::Pruned))
    );
    assert_eq!(
        operation_id(&apps).await,
        waiting,
        "the waiting operation, resumed"
    );
    controller.stop().await;
}

#[tokio::test]
async fn delete_confirm_holds_the_deletion_until_confirmed() {
    let web = deployed(
        "delete-confirm",
        &[
            ("plain.yaml", config("plain", "")),
            ("precious.yaml", config("precious", "Delete=confirm")),
        ],
    )
    .await;
    let (ns, dest, apps) = (&web.ns, web.dest.clone(), web.apps.clone());

    delete(&apps).await;
    let expected = format!(
        "waiting for deletion confirmation of ConfigMap {dest}/precious (Delete=confirm): flotilla app confirm-prune web"
    );
    wait_until(
        &apps,
        "web",
        "the deletion waiting for confirmation",
        |app| deletion_error(app).as_deref() == Some(expected.as_str()),
    )
    .await;
    let configs: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &dest);
    assert!(
        exists(&configs, "plain").await,
        "nothing deleted unconfirmed"
    );
    assert!(exists(&configs, "precious").await);

    confirm(ns).await;
    gone(&apps).await;
    assert!(!exists(&configs, "plain").await);
    assert!(!exists(&configs, "precious").await);
    web.controller.stop().await;
}

/// The deletion held by `Delete=confirm` shows `DeletionError`; the held object deleted by hand,
/// the next step finds nothing left: it clears the condition and removes the finalizer in one
/// pass, the finalizer's write sent with the resourceVersion of the condition's write (a stale
/// one is refused with a conflict, a failed reconcile counted as `WriteError`).
#[tokio::test]
async fn a_held_deletion_whose_object_goes_by_hand_ends_without_a_conflict() {
    let web = deployed(
        "delete-by-hand",
        &[("precious.yaml", config("precious", "Delete=confirm"))],
    )
    .await;
    let (ns, dest, apps) = (&web.ns, web.dest.clone(), web.apps.clone());

    delete(&apps).await;
    wait_until(
        &apps,
        "web",
        "the deletion waiting for confirmation",
        |app| deletion_error(app).is_some(),
    )
    .await;
    let configs: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &dest);
    configs
        .delete("precious", &DeleteParams::default())
        .await
        .expect("deletes the held ConfigMap by hand");
    gone(&apps).await;
    let metrics = web.controller.metrics.render();
    assert!(
        !metrics.contains("flotilla_application_reconciles_total{result=\"WriteError\"}"),
        "no write failed on the way:\n{metrics}"
    );
    web.controller.stop().await;
}

#[tokio::test]
async fn post_delete_hooks_run_after_the_resources_with_their_delete_policies() {
    let web = deployed(
        "post-delete",
        &[
            ("config.yaml", config("settings", "")),
            (
                "cleanup.yaml",
                post_delete_job("cleanup", None, Pod::Succeeds),
            ),
            (
                "report.yaml",
                post_delete_job("report", Some("HookFailed"), Pod::Succeeds),
            ),
        ],
    )
    .await;
    let (ns, dest, apps) = (&web.ns, web.dest.clone(), web.apps.clone());
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &dest);
    let configs: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &dest);
    assert!(
        !exists(&jobs, "cleanup").await,
        "PostDelete hooks never run in a sync"
    );

    delete(&apps).await;
    // Seen running: the resources are gone and the Application is still there.
    for hook in ["cleanup", "report"] {
        eventually(&format!("PostDelete hook {hook} running"), async || {
            if !exists(&jobs, hook).await {
                return Err(format!("no Job {hook} yet"));
            }
            assert!(!exists(&configs, "settings").await, "resources first");
            assert!(
                exists(&apps, "web").await,
                "the Application waits for {hook}"
            );
            Ok(())
        })
        .await;
    }
    // A controller killed while the hooks run: the next one resumes their operation from the
    // Application's status and creates no hook twice.
    let first_report = jobs.get("report").await.unwrap().uid();
    wait_until(&apps, "web", "the hooks recorded", |app| {
        let operation = app.status.as_ref().and_then(|s| s.operation_state.as_ref());
        operation.is_some_and(|op| {
            op.operation_id == "web-post-delete"
                && ["cleanup", "report"]
                    .iter()
                    .all(|hook| op.resources.iter().any(|r| r.name == *hook))
        })
    })
    .await;
    web.controller.kill().await;
    let controller = start(ns, "successor");
    gone(&apps).await;
    assert!(
        !exists(&jobs, "cleanup").await,
        "HookSucceeded (the PostDelete default): deleted once it succeeded"
    );
    let report = jobs
        .get("report")
        .await
        .expect("HookFailed: kept after success");
    assert_eq!(report.uid(), first_report, "created once");
    assert_eq!(report.status.and_then(|s| s.succeeded), Some(1));
    controller.stop().await;
}

#[tokio::test]
async fn a_failing_post_delete_hook_keeps_the_application_and_is_reported() {
    let web = deployed(
        "post-delete-fail",
        &[
            ("config.yaml", config("settings", "")),
            ("cleanup.yaml", post_delete_job("cleanup", None, Pod::Fails)),
        ],
    )
    .await;
    let (ns, dest, apps) = (&web.ns, web.dest.clone(), web.apps.clone());

    delete(&apps).await;
    let app = wait_until(&apps, "web", "the failed PostDelete hook reported", |app| {
        deletion_error(app).is_some()
    })
    .await;
    assert_eq!(
        deletion_error(&app).unwrap(),
        format!(
            "PostDelete hooks Failed: PostDelete wave 0: Job {dest}/cleanup hook failed: Job has reached the specified backoff limit"
        )
    );
    // The Application stays, with its finalizer; the failed hook stays for inspection.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let app = apps.get("web").await.expect("the Application stays");
    assert_eq!(app.finalizers(), ["resources-finalizer.argocd.argoproj.io"]);
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &dest);
    assert!(exists(&jobs, "cleanup").await);
    web.controller.stop().await;
}

#[tokio::test]
async fn a_failing_pre_delete_hook_keeps_every_object_and_is_reported() {
    let web = deployed(
        "pre-delete-fail",
        &[
            ("config.yaml", config("settings", "")),
            (
                "backup.yaml",
                hook_job("PreDelete", "backup", None, Pod::Fails),
            ),
        ],
    )
    .await;
    let (ns, dest, apps) = (&web.ns, web.dest.clone(), web.apps.clone());
    let jobs: Api<Job> = Api::namespaced(ns.client.clone(), &dest);
    let configs: Api<ConfigMap> = Api::namespaced(ns.client.clone(), &dest);
    // Never applied by a sync, nor compared: the Application is Synced without it.
    assert!(!exists(&jobs, "backup").await);
    let listed = wait_until(&apps, "web", "the PreDelete hook in status", |app| {
        app.status
            .as_ref()
            .is_some_and(|s| !s.pre_delete_hooks.is_empty())
    })
    .await;
    let status = listed.status.unwrap_or_default();
    assert_eq!(status.pre_delete_hooks, [format!("Job {dest}/backup")]);
    assert!(
        status.resources.iter().all(|r| r.name != "backup"),
        "{:?}",
        status.resources
    );

    delete(&apps).await;
    let app = wait_until(&apps, "web", "the failed PreDelete hook reported", |app| {
        deletion_error(app).is_some()
    })
    .await;
    assert_eq!(
        deletion_error(&app).unwrap(),
        format!(
            "PreDelete hooks Failed: PreDelete wave 0: Job {dest}/backup hook failed: Job has reached the specified backoff limit"
        )
    );
    // Nothing was deleted: the objects, the Application and the failed hook stay.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let settings = configs.get("settings").await.expect("the object stays");
    assert!(settings.metadata.deletion_timestamp.is_none());
    let app = apps.get("web").await.expect("the Application stays");
    assert_eq!(app.finalizers(), ["resources-finalizer.argocd.argoproj.io"]);
    assert!(exists(&jobs, "backup").await);
    web.controller.stop().await;
}

#[tokio::test]
async fn a_post_delete_hook_that_outlasts_the_timeout_is_reported() {
    let web = deployed(
        "post-delete-slow",
        &[
            ("config.yaml", config("settings", "")),
            ("cleanup.yaml", post_delete_job("cleanup", None, Pod::Slow)),
        ],
    )
    .await;
    let (dest, apps) = (web.dest.clone(), web.apps.clone());
    let timeout = json!({"metadata": {"annotations": {"flotilla.dev/sync-timeout": "5s"}}});
    apps.patch("web", &PatchParams::default(), &Patch::Merge(&timeout))
        .await
        .expect("sets the timeout");
    delete(&apps).await;
    let app = wait_until(
        &apps,
        "web",
        "the timed-out PostDelete hook reported",
        |app| deletion_error(app).is_some(),
    )
    .await;
    assert_eq!(
        deletion_error(&app).unwrap(),
        format!(
            "PostDelete hooks Failed: timed out after 5s: PostDelete wave 0: Job {dest}/cleanup Progressing: job running, 1 active pods"
        )
    );
    let app = apps.get("web").await.expect("the Application stays");
    assert_eq!(app.finalizers(), ["resources-finalizer.argocd.argoproj.io"]);
    web.controller.stop().await;
}

#[tokio::test]
async fn deleting_an_application_whose_prune_waits_does_not_wait_for_the_confirmation() {
    let web = deployed("prune-wait-delete", &kept_and_critical()).await;
    waiting_for_prune_confirmation(&web).await;
    delete(&web.apps).await;
    // Far sooner than the sync's 10-minute timeout: the waiting sync is terminated.
    gone(&web.apps).await;
    let configs: Api<ConfigMap> = Api::namespaced(web.ns.client.clone(), &web.dest);
    assert!(!exists(&configs, "kept").await);
    assert!(
        !exists(&configs, "critical").await,
        "deleted with the Application (Delete=confirm is another option)"
    );
    web.controller.stop().await;
}
