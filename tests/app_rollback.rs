//! `flotilla app history` and `flotilla app rollback` against the real controller (run
//! in-process on cluster 1) syncing an Application from a local git repository: two commits
//! synced, the history lists both with their source; a rollback is refused while automated
//! sync is on; `--force` suspends it (`automated.enabled: false`) and the controller syncs the
//! first commit back (checked on the live ConfigMap and Deployment), which stays (no automated
//! sync undoes it) and is the history's newest entry; a rollback by id goes forward again; and
//! `revisionHistoryLimit: 3` keeps three entries.

mod controller_support;
mod support;

use std::path::Path;

use flotilla_core::api::Application;
use flotilla_core::api::application::RevisionHistory;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use serde_json::json;

use controller_support::{RESYNC, commit_apps, repository, setup, start, web_application};
use support::{TestNamespace, apply, eventually, run_flotilla, wait_until};

/// A ConfigMap with `version` and a Deployment of image tag `version`.
fn manifests(name: &str, version: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-config\ndata:\n  version: \"{version}\"\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}-web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: {name}}}\n  \
         template:\n    metadata:\n      labels: {{app: {name}}}\n    spec:\n      containers:\n        - name: web\n          image: registry.example.com/web:{version}\n"
    )
}

fn commit(repo: &Path, version: &str) -> String {
    commit_apps(repo, &["web"], version, manifests)
}

/// The live objects' versions: the ConfigMap's `version` and the Deployment's image.
async fn live(ns: &TestNamespace) -> (String, String) {
    let config = ns.api::<ConfigMap>().get("web-config").await.unwrap();
    let deployment = ns.api::<Deployment>().get("web-web").await.unwrap();
    let image = deployment.spec.unwrap().template.spec.unwrap().containers[0]
        .image
        .clone()
        .unwrap_or_default();
    (config.data.unwrap()["version"].clone(), image)
}

fn expected(version: &str) -> (String, String) {
    (
        version.to_owned(),
        format!("registry.example.com/web:{version}"),
    )
}

/// Waits until the last operation Succeeded at `revision` and the live objects are at `version`.
async fn synced_to(ns: &TestNamespace, revision: &str, version: &str) -> Application {
    let apps: Api<Application> = ns.api();
    let app = wait_until(
        &apps,
        "web",
        &format!("an operation Succeeded at {revision}"),
        |app| {
            app.status
                .as_ref()
                .and_then(|s| s.operation_state.as_ref())
                .is_some_and(|op| {
                    op.phase == OperationPhase::Succeeded
                        && op.revision.as_deref() == Some(revision)
                })
        },
    )
    .await;
    eventually(&format!("live objects at version {version}"), async || {
        let seen = live(ns).await;
        if seen == expected(version) {
            Ok(())
        } else {
            Err(format!("{seen:?}"))
        }
    })
    .await;
    app
}

fn revisions(app: &Application) -> Vec<(i64, String)> {
    app.status
        .as_ref()
        .unwrap()
        .history
        .iter()
        .map(|h| (h.id, h.revision.clone()))
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn rollback_restores_the_previous_commit_refused_with_automated_sync_unless_forced() {
    let repo = repository();
    let first = commit(repo.path(), "1");
    let url = format!("file://{}", repo.path().display());
    let ns = setup("app-rollback").await;
    let controller = start(&ns, "only");
    let apps: Api<Application> = ns.api();
    let app = web_application(&ns.name, &url, json!({"revisionHistoryLimit": 3}));
    apply(&apps, &app).await;
    synced_to(&ns, &first, "1").await;
    let second = commit(repo.path(), "2");
    let app = synced_to(&ns, &second, "2").await;
    assert_eq!(revisions(&app), [(0, first.clone()), (1, second.clone())]);

    let listed = run_flotilla(&ns, &["app", "history", "web"]).await;
    assert!(listed.status.success(), "{listed:?}");
    let table = text(&listed.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert!(lines[0].starts_with("ID  DEPLOYED AT"), "{table}");
    assert!(
        lines[1].starts_with("0 ") && lines[1].contains(&first),
        "{table}"
    );
    assert!(
        lines[2].starts_with("1 ") && lines[2].contains(&second),
        "{table}"
    );
    assert!(
        lines[2].contains(&format!("{url} apps/web@main")),
        "{table}"
    );
    let as_json = run_flotilla(&ns, &["app", "history", "web", "-o", "json"]).await;
    let entries: Vec<RevisionHistory> = serde_json::from_slice(&as_json.stdout).expect("JSON");
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].source.as_ref().unwrap().path, "apps/web");

    // Refused while automated sync is on: nothing written.
    let refused = run_flotilla(&ns, &["app", "rollback", "web"]).await;
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    let message = text(&refused.stderr);
    assert!(
        message.contains("automated sync enabled") && message.contains("--force"),
        "{message}"
    );
    let app = apps.get("web").await.unwrap();
    assert!(app.spec.operation.is_none());
    assert_eq!(live(&ns).await, expected("2"));

    // --force suspends automated sync and rolls back to the previous entry (the first commit).
    let forced = run_flotilla(&ns, &["app", "rollback", "web", "--force"]).await;
    assert!(forced.status.success(), "{forced:?}");
    assert!(
        text(&forced.stdout).contains("history entry 0"),
        "{forced:?}"
    );
    let automated = apps
        .get("web")
        .await
        .unwrap()
        .spec
        .sync_policy
        .unwrap()
        .automated
        .unwrap();
    assert_eq!((automated.enabled, automated.prune), (Some(false), true));
    let app = synced_to(&ns, &first, "1").await;
    assert_eq!(
        revisions(&app),
        [(0, first.clone()), (1, second.clone()), (2, first.clone())]
    );
    let newest = app.status.unwrap().history.pop().unwrap();
    assert!(!newest.initiated_by.automated && !newest.initiated_by.username.is_empty());
    // The Application is OutOfSync with main, and no automated sync undoes the rollback.
    wait_until(&apps, "web", "OutOfSync at the second commit", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.sync.as_ref())
            .is_some_and(|sync| sync.status.as_str() == "OutOfSync" && sync.revision == second)
    })
    .await;
    tokio::time::sleep(RESYNC * 3).await;
    assert_eq!(live(&ns).await, expected("1"));

    // By id, without --force now that automated sync is suspended; three entries kept.
    let by_id = run_flotilla(&ns, &["app", "rollback", "web", "1"]).await;
    assert!(by_id.status.success(), "{by_id:?}");
    let app = synced_to(&ns, &second, "2").await;
    assert_eq!(
        revisions(&app),
        [(1, second.clone()), (2, first.clone()), (3, second.clone())]
    );
    let missing = run_flotilla(&ns, &["app", "rollback", "web", "0"]).await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains("no history entry 0 (ids: 1, 2, 3)"),
        "{missing:?}"
    );
    controller.stop().await;
}
