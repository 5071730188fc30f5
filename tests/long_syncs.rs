//! Long syncs do not starve the others, on the real control plane through the in-process
//! controller: forty Applications (more than its 32 reconcile slots) whose PreSync Job runs for
//! 60 s all start before any of those hooks ends — a waiting operation is parked, not holding a
//! slot (a held one would make eight wait for the hooks' minute) — and an unrelated Application
//! created meanwhile syncs while every hook still runs; then every one of them finishes, woken by
//! its Job's completion. (The hooks' minute is the test's own pace: no bound on how fast the
//! machine is; the spread of the starts on a quiet one, printed, is about a second.)

mod controller_support;
mod support;

use std::time::{Duration, Instant};

use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::sync::OperationPhase;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use serde_json::json;

use controller_support::{Options, appset, setup, start_with};
use support::git_remote::{GitDaemon, Remote};
use support::{apply, eventually_within, object, require_node_sim, wait_until};

const SLOW: usize = 40;

/// A ConfigMap and, with `hook_runs`, a PreSync Job whose pod runs that long.
fn manifests(remote: &Remote, app: &str, hook_runs: Option<&str>) {
    remote.write(
        &format!("apps/{app}/config.yaml"),
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {app}\ndata:\n  k: v\n"),
    );
    if let Some(runs) = hook_runs {
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": format!("{app}-migrate"),
                         "annotations": {"argocd.argoproj.io/hook": "PreSync"}},
            "spec": {"backoffLimit": 0, "template": {
                "metadata": {"annotations": {"sim.flotilla.dev/ready-after": runs}},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "migrate", "image": "example.com/migrate:1"}]}}}
        });
        remote.write(&format!("apps/{app}/migrate.json"), &job.to_string());
    }
}

/// The spread of the Applications' creation times.
fn created_spread(apps: &[Application]) -> String {
    let times: Vec<Timestamp> = apps
        .iter()
        .filter_map(|a| a.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .collect();
    let (first, last) = (times.iter().min().unwrap(), times.iter().max().unwrap());
    format!("{:#}", last.duration_since(*first))
}

/// Whether `app`'s operation is in `phase`.
fn in_phase(app: &Application, phase: OperationPhase) -> bool {
    app.status
        .as_ref()
        .and_then(|s| s.operation_state.as_ref())
        .is_some_and(|op| op.phase == phase)
}

/// When each Application's operation started, if it has one.
fn started(apps: &[Application]) -> Vec<(String, Option<Timestamp>)> {
    apps.iter()
        .map(|app| {
            let started = app
                .status
                .as_ref()
                .and_then(|s| s.operation_state.as_ref())
                .and_then(|op| op.started_at.as_ref())
                .map(|t| t.0);
            (app.metadata.name.clone().unwrap_or_default(), started)
        })
        .collect()
}

#[tokio::test]
async fn forty_long_presync_hooks_starve_no_one() {
    let ns = setup("long-syncs").await;
    require_node_sim(&ns.client, 1).await;
    let remote = Remote::new("fleet");
    let names: Vec<String> = (0..SLOW).map(|i| format!("slow-{i}")).collect();
    for name in &names {
        manifests(&remote, name, Some("60s"));
    }
    manifests(&remote, "quick", None);
    remote.push("fleet");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());
    let target = format!("{}-fleet", ns.name);
    // As `flotilla controller` runs by default (--repo-refresh 10s): forty Applications of one
    // repository share its fetches instead of queueing forty of them.
    let controller = start_with(
        &ns,
        "only",
        Options {
            refresh: Duration::from_secs(10),
            ..Options::default()
        },
    );
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut fleet = appset(&target, &url, &refs, json!({}));
    fleet.spec.template.spec.sync_policy = Some(object(
        json!({"automated": {"prune": true}, "syncOptions": ["CreateNamespace=true"]}),
    ));
    apply(&ns.api::<ApplicationSet>(), &fleet).await;

    let apps = ns.api::<Application>();
    let running = eventually_within(
        Duration::from_secs(120),
        "40 operations started",
        async || {
            let listed = apps
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let started = started(&listed.items);
            let count = started.iter().filter(|(_, s)| s.is_some()).count();
            let waiting = listed
                .items
                .iter()
                .filter(|app| in_phase(app, OperationPhase::Running))
                .count();
            (count == SLOW)
                .then_some((started, waiting))
                .ok_or(format!("{count} of {SLOW} started"))
        },
    )
    .await;
    let (running, waiting) = running;
    let times: Vec<Timestamp> = running.iter().filter_map(|(_, s)| *s).collect();
    let (first, last) = (times.iter().min().unwrap(), times.iter().max().unwrap());
    let spread = last.duration_since(*first);
    let listed = apps.list(&ListParams::default()).await.unwrap().items;
    eprintln!(
        "40 operations started within {spread:#}; the Applications were created within {}",
        created_spread(&listed)
    );
    assert_eq!(
        waiting, SLOW,
        "the last operation started only after some hooks ended (started {spread:#} apart): {running:?}"
    );

    // Every slow sync now waits on its hook for a minute; a new Application syncs meanwhile.
    let quick: Application = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1", "kind": "Application",
        "metadata": {"name": "quick"},
        "spec": {"project": "default",
                 "source": {"repoURL": url, "targetRevision": "main", "path": "apps/quick"},
                 "destination": {"server": "https://kubernetes.default.svc", "namespace": target},
                 "syncPolicy": {"automated": {}, "syncOptions": ["CreateNamespace=true"]}}
    }));
    let created = Instant::now();
    apply(&apps, &quick).await;
    wait_until(&apps, "quick", "quick synced", |app| {
        in_phase(app, OperationPhase::Succeeded)
    })
    .await;
    let took = created.elapsed();
    eprintln!("quick synced {took:?} after it was created");
    let still = started(&apps.list(&ListParams::default()).await.unwrap().items);
    let slow_running = apps
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|app| in_phase(app, OperationPhase::Running))
        .count();
    assert_eq!(slow_running, SLOW, "the slow syncs still wait: {still:?}");

    eventually_within(
        Duration::from_secs(240),
        "every slow sync Succeeded",
        async || {
            let listed = apps
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let done = listed
                .items
                .iter()
                .filter(|app| in_phase(app, OperationPhase::Succeeded))
                .count();
            (done == SLOW + 1)
                .then_some(())
                .ok_or(format!("{done} of {} Succeeded", SLOW + 1))
        },
    )
    .await;
    controller.stop().await;
}
