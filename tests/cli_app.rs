//! The people-facing commands against a real API server: `flotilla app sync` requests an
//! operation, `app terminate` targets the running one (or withdraws a pending request),
//! `app wait` exits 0 once the Application is Healthy and Synced and 1 on timeout,
//! `app confirm-prune` (and its alias `confirm-deletion`) writes the approval time, and
//! `flotilla get apps` lists what the status says. The status is written by the test, standing in
//! for the controller, so these tests pin down the commands alone.

mod support;

use std::process::Stdio;

use flotilla_core::api::Application;
use flotilla_core::api::application::{DELETION_APPROVED_ANNOTATION, TERMINATE_ANNOTATION};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use support::{
    TestNamespace, apply, flotilla, install_flotilla_crds, namespace, object, run_flotilla,
};

async fn with_application(label: &str) -> (TestNamespace, Api<Application>) {
    let ns = namespace(1, label).await;
    install_flotilla_crds(&ns.client).await;
    let apps: Api<Application> = ns.api();
    let app: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "web", "namespace": ns.name},
        "spec": {
            "project": "default",
            "source": {"repoURL": "file:///nowhere", "path": "web"},
            "destination": {"name": "in-cluster", "namespace": ns.name},
        },
    }));
    apply(&apps, &app).await;
    (ns, apps)
}

async fn set_status(apps: &Api<Application>, status: Value) {
    apps.patch_status(
        "web",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .expect("status written");
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn app_wait_exits_zero_once_healthy_and_synced_and_one_on_timeout() {
    let (ns, apps) = with_application("cli-wait").await;
    set_status(
        &apps,
        json!({"sync": {"status": "OutOfSync"}, "health": {"status": "Progressing", "message": "0/1 pods ready"}}),
    )
    .await;

    let timed_out = run_flotilla(&ns, &["app", "wait", "web", "--timeout", "2s"]).await;
    assert_eq!(timed_out.status.code(), Some(1), "{timed_out:?}");
    let stderr = text(&timed_out.stderr);
    assert!(
        stderr.contains("sync is OutOfSync; health is Progressing: 0/1 pods ready"),
        "{stderr}"
    );

    let health_only = run_flotilla(&ns, &["app", "wait", "web", "--sync", "--timeout", "1s"]).await;
    assert_eq!(health_only.status.code(), Some(1), "{health_only:?}");

    let mut waiting = flotilla(&ns, &["app", "wait", "web", "--timeout", "60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("flotilla starts");
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        waiting.try_wait().expect("pollable").is_none(),
        "wait returned early"
    );
    set_status(
        &apps,
        json!({"sync": {"status": "Synced", "revision": "abc"}, "health": {"status": "Healthy", "message": null}}),
    )
    .await;
    let done = tokio::task::spawn_blocking(move || waiting.wait_with_output().expect("waited"))
        .await
        .expect("joined");
    assert_eq!(done.status.code(), Some(0), "{done:?}");
    assert!(text(&done.stdout).contains("Application web is ready"));
}

#[tokio::test]
async fn app_sync_requests_once_and_terminate_targets_the_running_operation() {
    let (ns, apps) = with_application("cli-sync").await;

    let synced = run_flotilla(
        &ns,
        &[
            "app",
            "sync",
            "web",
            "--prune",
            "--allow-empty",
            "--revision",
            "v2",
        ],
    )
    .await;
    assert!(synced.status.success(), "{synced:?}");
    let operation = apps
        .get("web")
        .await
        .unwrap()
        .spec
        .operation
        .expect("requested");
    assert!(operation.sync.prune && operation.sync.allow_empty);
    assert_eq!(operation.sync.revision, "v2");
    assert!(!operation.initiated_by.username.is_empty());
    assert!(!operation.initiated_by.automated);

    let again = run_flotilla(&ns, &["app", "sync", "web"]).await;
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("already has a sync requested"));

    let withdrawn = run_flotilla(&ns, &["app", "terminate", "web"]).await;
    assert!(withdrawn.status.success(), "{withdrawn:?}");
    assert!(apps.get("web").await.unwrap().spec.operation.is_none());

    let nothing = run_flotilla(&ns, &["app", "terminate", "web"]).await;
    assert_eq!(nothing.status.code(), Some(1));
    assert!(text(&nothing.stderr).contains("no sync to terminate"));

    set_status(
        &apps,
        json!({"operationState": {"phase": "Running", "operationId": "web-42", "resources": []}}),
    )
    .await;
    let terminated = run_flotilla(&ns, &["app", "terminate", "web"]).await;
    assert!(terminated.status.success(), "{terminated:?}");
    let app = apps.get("web").await.unwrap();
    assert_eq!(
        app.annotations()
            .get(TERMINATE_ANNOTATION)
            .map(String::as_str),
        Some("web-42")
    );
}

#[tokio::test]
async fn get_apps_lists_sync_and_health() {
    let (ns, apps) = with_application("cli-get").await;
    set_status(
        &apps,
        json!({"sync": {"status": "Synced", "revision": "0123456789abcdef"}, "health": {"status": "Healthy"}}),
    )
    .await;
    let listed = run_flotilla(&ns, &["get", "apps"]).await;
    assert!(listed.status.success(), "{listed:?}");
    let table = text(&listed.stdout);
    let row = table.lines().nth(1).expect("one row");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cells,
        ["web", "Synced", "Healthy", "0123456789ab"],
        "{table}"
    );

    let json_out = run_flotilla(&ns, &["get", "apps", "-o", "json"]).await;
    let items: Vec<Value> = serde_json::from_slice(&json_out.stdout).expect("JSON list");
    assert_eq!(items[0]["status"]["health"]["status"], "Healthy");

    // -l selects by label; -A lists every namespace, naming each.
    let label = json!({"metadata": {"labels": {"cli-get": ns.name}}});
    apps.patch("web", &PatchParams::default(), &Patch::Merge(label))
        .await
        .expect("labels the Application");
    let other = run_flotilla(&ns, &["get", "apps", "-l", "cli-get=someone-else"]).await;
    assert_eq!(text(&other.stdout).lines().count(), 1, "{other:?}");
    let everywhere = tokio::task::spawn_blocking({
        let selector = format!("cli-get={}", ns.name);
        move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"))
                .args(["get", "apps", "-A", "-l", &selector, "--kubeconfig"])
                .arg(support::kubeconfig_path(1))
                .output()
                .expect("flotilla runs")
        }
    })
    .await
    .expect("joined");
    assert!(everywhere.status.success(), "{everywhere:?}");
    let table = text(&everywhere.stdout);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|line| line.split_whitespace().take(3).collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["NAMESPACE", "NAME", "SYNC"],
            vec![&ns.name, "web", "Synced"]
        ],
        "{table}"
    );
}

#[tokio::test]
async fn app_confirm_prune_sets_the_approval_now_and_names_a_missing_application() {
    let (ns, apps) = with_application("cli-confirm").await;
    for command in ["confirm-prune", "confirm-deletion"] {
        // Written to the millisecond.
        let before = Timestamp::now() - SignedDuration::from_millis(1);
        let confirmed = run_flotilla(&ns, &["app", command, "web"]).await;
        assert!(confirmed.status.success(), "{confirmed:?}");
        let app = apps.get("web").await.unwrap();
        let approved = app.deletion_approved().expect("a readable approval time");
        assert!(
            before <= approved && approved <= Timestamp::now(),
            "{approved} is now"
        );
        assert_eq!(
            text(&confirmed.stdout).trim(),
            format!(
                "pruning and deletion of Application web's objects confirmed ({DELETION_APPROVED_ANNOTATION}: {})",
                app.annotations()[DELETION_APPROVED_ANNOTATION]
            )
        );
    }

    let missing = run_flotilla(&ns, &["app", "confirm-prune", "missing"]).await;
    assert_eq!(missing.status.code(), Some(20), "{missing:?}");
    assert_eq!(
        text(&missing.stderr).trim(),
        format!(
            "error: Application missing does not exist in namespace {}",
            ns.name
        )
    );
}
