//! `strategy.deletionOrder: Reverse` and PreDelete hooks end to end: `flotilla controller` (the
//! binary, so it can be SIGKILLed) rolls out the three-step RollingSync ApplicationSet
//! `platform-stack` (database → backend → frontend) on cluster 1, each component a ConfigMap
//! with a finalizer the test holds (so each step's deletion lasts until the test lets it go),
//! the database also a PreDelete hook Job the node simulator completes after 3 s. Deleting the
//! ApplicationSet deletes the frontend's objects, then the backend's, then runs the database's
//! PreDelete Job and deletes the database's objects — the order read from a watch of the
//! objects — with the controller SIGKILLed while the frontend's are being deleted and a new one
//! resuming the order; `status.deletion` and `flotilla rollout explain` say which step is
//! being deleted and what is left.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use flotilla_core::api::application_set::DeletionOrder;
use flotilla_core::api::application_set_status::{DeletionGroupStatus, DeletionProgress};
use flotilla_core::api::{Application, ApplicationSet};
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::git_remote::{GitDaemon, Remote};
use support::three_step_appset::three_steps;
use support::{
    TestNamespace, apply, controller_process, eventually, eventually_within, namespace, wait_until,
};

/// The finalizer the test puts on each component's ConfigMap to hold its deletion.
const HOLD: &str = "test.flotilla.dev/hold";

/// The three components, each a held ConfigMap; the database also a PreDelete hook Job. Served
/// by `git daemon`.
fn repository() -> (Remote, GitDaemon) {
    let remote = Remote::new("platform");
    for component in ["database", "backend", "frontend"] {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": component, "finalizers": [HOLD]},
            "data": {"component": component}});
        remote.write(&format!("{component}/config.json"), &config.to_string());
    }
    let backup = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "backup", "annotations": {"argocd.argoproj.io/hook": "PreDelete"}},
        "spec": {"backoffLimit": 0, "template": {
            "metadata": {"annotations": {"sim.flotilla.dev/ready-after": "3s"}},
            "spec": {"restartPolicy": "Never",
                "containers": [{"name": "backup", "image": "example.com/backup:1"}]}}}});
    remote.write("database/backup.json", &backup.to_string());
    remote.push("v1");
    let daemon = GitDaemon::start(remote.exported());
    (remote, daemon)
}

/// What the watch of the namespace saw, in order: a component's ConfigMap being deleted, the
/// PreDelete Job created and succeeded.
#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

impl Seen {
    fn note(&self, what: String) {
        let mut seen = self.0.lock().expect("not poisoned");
        if !seen.contains(&what) {
            seen.push(what);
        }
    }

    fn all(&self) -> Vec<String> {
        self.0.lock().expect("not poisoned").clone()
    }
}

/// Watches the ConfigMaps and Jobs of `ns` into `seen` until aborted.
fn record(ns: &TestNamespace, seen: &Arc<Seen>) -> Vec<tokio::task::JoinHandle<()>> {
    let configs = watcher(ns.api::<ConfigMap>(), watcher::Config::default());
    let recording = Arc::clone(seen);
    let configs = tokio::spawn(async move {
        let mut events = std::pin::pin!(configs);
        while let Some(event) = events.next().await {
            let Ok(watcher::Event::Apply(config) | watcher::Event::InitApply(config)) = event
            else {
                continue;
            };
            let name = config.name_any();
            if ["database", "backend", "frontend"].contains(&name.as_str())
                && config.metadata.deletion_timestamp.is_some()
            {
                recording.note(format!("{name} objects deleted"));
            }
        }
    });
    let jobs = watcher(ns.api::<Job>(), watcher::Config::default());
    let recording = Arc::clone(seen);
    let jobs = tokio::spawn(async move {
        let mut events = std::pin::pin!(jobs);
        while let Some(event) = events.next().await {
            let Ok(watcher::Event::Apply(job) | watcher::Event::InitApply(job)) = event else {
                continue;
            };
            recording.note(format!("Job {} created", job.name_any()));
            if job.status.as_ref().and_then(|s| s.succeeded) == Some(1) {
                recording.note(format!("Job {} succeeded", job.name_any()));
            }
        }
    });
    vec![configs, jobs]
}

/// Whether `name` exists and is being deleted (`None`: it is gone).
async fn deleting<K>(api: &Api<K>, name: &str) -> Option<bool>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.get_opt(name)
        .await
        .unwrap_or_else(|error| panic!("reading {name}: {error}"))
        .map(|object| object.meta().deletion_timestamp.is_some())
}

/// Lets the deletion of `component`'s ConfigMap finish.
async fn release(configs: &Api<ConfigMap>, component: &str) {
    let patch = json!({"metadata": {"finalizers": null}});
    configs
        .patch(component, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap_or_else(|error| panic!("releasing {component}: {error}"));
}

/// Waits until `component`'s ConfigMap is being deleted, and checks that the Applications of the
/// earlier steps are untouched and their objects in place.
async fn step_deleting(ns: &TestNamespace, component: &str, earlier: &[&str]) {
    let configs: Api<ConfigMap> = ns.api();
    let apps: Api<Application> = ns.api();
    wait_until(
        &configs,
        component,
        &format!("{component}'s objects deleted"),
        |c| c.metadata.deletion_timestamp.is_some(),
    )
    .await;
    for name in earlier {
        assert_eq!(
            deleting(&apps, name).await,
            Some(false),
            "Application {name}"
        );
        assert_eq!(
            deleting(&configs, name).await,
            Some(false),
            "ConfigMap {name}"
        );
    }
}

/// Waits until the ApplicationSet's `status.deletion` says `current` is being deleted with
/// `remaining` left, and checks that `flotilla rollout explain` says so too.
async fn progress_shown(
    ns: &TestNamespace,
    current: (u64, &str),
    remaining: &[(u64, &str)],
    explained: &str,
) {
    let appsets: Api<ApplicationSet> = ns.api();
    let group = |(step, app): (u64, &str)| DeletionGroupStatus {
        step,
        applications: vec![app.to_owned()],
    };
    let expected = DeletionProgress {
        steps: 3,
        current: group(current),
        remaining: remaining.iter().copied().map(group).collect(),
    };
    wait_until(
        &appsets,
        "platform-stack",
        &format!("status.deletion at step {}", current.0),
        |a| a.status.as_ref().and_then(|s| s.deletion.as_ref()) == Some(&expected),
    )
    .await;
    let out = support::run_flotilla(ns, &["rollout", "explain", "platform-stack"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.starts_with(&format!("Deletion: {explained}\n")),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn reverse_order_deletes_frontend_then_backend_then_database_after_its_pre_delete_hook() {
    let ns = namespace(1, "deletion-order").await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let (remote, daemon) = repository();
    let mut appset = three_steps(&daemon.url(&remote.served_name()), &ns);
    if let Some(strategy) = appset.spec.strategy.as_mut() {
        strategy.deletion_order = Some(DeletionOrder::Reverse);
    }
    let first = controller_process(&ns, "first");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &appset).await;

    // Rolled out: every component's object in place, the PreDelete hook neither applied nor
    // compared (the database is Synced without it) but listed, the finalizer added.
    let apps: Api<Application> = ns.api();
    let configs: Api<ConfigMap> = ns.api();
    let jobs: Api<Job> = ns.api();
    let backup = format!("Job {}/backup", ns.name);
    wait_until(
        &apps,
        "database",
        "the database synced, its PreDelete hook listed",
        |app| {
            let status = app.status.clone().unwrap_or_default();
            status.pre_delete_hooks == [backup.clone()]
                && status.sync.is_some_and(|s| {
                    s.status == flotilla_core::api::application_set_status::SyncStatusCode::Synced
                })
        },
    )
    .await;
    for component in ["database", "backend", "frontend"] {
        wait_until(&configs, component, "the component's object", |_| true).await;
    }
    assert!(jobs.get_opt("backup").await.expect("reads").is_none());
    let appset = wait_until(&appsets, "platform-stack", "the finalizer", |a| {
        a.finalizers() == ["flotilla.dev/resources-finalizer"]
    })
    .await;
    assert_eq!(appset.metadata.name.as_deref(), Some("platform-stack"));

    let seen = Arc::new(Seen::default());
    let watches = record(&ns, &seen);
    appsets
        .delete("platform-stack", &DeleteParams::default())
        .await
        .expect("deletes the ApplicationSet");

    // The frontend first; the controller SIGKILLed meanwhile, a new one resumes the order.
    step_deleting(&ns, "frontend", &["backend", "database"]).await;
    progress_shown(
        &ns,
        (3, "frontend"),
        &[(2, "backend"), (1, "database")],
        "deleting in reverse step order: step 3 of 3 (frontend); left: step 2 (backend), step 1 (database)",
    )
    .await;
    first.kill();
    let second = controller_process(&ns, "second");
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        deleting(&apps, "backend").await,
        Some(false),
        "the backend waits"
    );
    assert_eq!(deleting(&appsets, "platform-stack").await, Some(true));
    release(&configs, "frontend").await;

    step_deleting(&ns, "backend", &["database"]).await;
    progress_shown(
        &ns,
        (2, "backend"),
        &[(1, "database")],
        "deleting in reverse step order: step 2 of 3 (backend); left: step 1 (database)",
    )
    .await;
    assert_eq!(
        deleting(&apps, "frontend").await,
        None,
        "the frontend is gone"
    );
    release(&configs, "backend").await;

    step_deleting(&ns, "database", &[]).await;
    progress_shown(
        &ns,
        (1, "database"),
        &[],
        "deleting in reverse step order: step 1 of 3 (database); nothing after it",
    )
    .await;
    assert_eq!(
        deleting(&apps, "backend").await,
        None,
        "the backend is gone"
    );
    release(&configs, "database").await;

    eventually_within(
        Duration::from_secs(60),
        "the ApplicationSet and its Applications gone",
        async || {
            let left = apps
                .list(&Default::default())
                .await
                .map_err(|e| e.to_string())?;
            let appset = deleting(&appsets, "platform-stack").await;
            if left.items.is_empty() && appset.is_none() {
                Ok(())
            } else {
                Err(format!(
                    "{} Application(s), ApplicationSet {appset:?}",
                    left.items.len()
                ))
            }
        },
    )
    .await;
    eventually("the watch caught up", async || {
        let all = seen.all();
        if all.len() >= 5 {
            Ok(())
        } else {
            Err(format!("{all:?}"))
        }
    })
    .await;
    for watch in watches {
        watch.abort();
    }
    assert_eq!(
        seen.all(),
        [
            "frontend objects deleted",
            "backend objects deleted",
            "Job backup created",
            "Job backup succeeded",
            "database objects deleted",
        ]
    );
    // HookSucceeded is a PreDelete hook's default delete policy, as a PostDelete hook's.
    eventually("the succeeded hook deleted", async || {
        match jobs.get_opt("backup").await.map_err(|e| e.to_string())? {
            None => Ok(()),
            Some(job) => Err(format!("{:?}", job.status)),
        }
    })
    .await;
    second.kill();
}
