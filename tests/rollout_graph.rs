//! The RollingSync step graph and removal in steps against the control plane, with
//! `flotilla controller` (the binary):
//! - `db → (backend-eu ∥ backend-us) → frontend`: every status the controller writes is read
//!   from a watch of the ApplicationSet; both backends leave Waiting in the same write, once the
//!   database is Healthy, and the frontend only once both backends are Healthy.
//! - Removal in steps: the `old` region's elements leave the list generator; its Applications
//!   are deleted frontend, then backend, then database — each component a ConfigMap with a
//!   finalizer the test holds, so each deletion lasts until the test lets it go, and the next
//!   one must wait for it.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flotilla_core::api::application_set_status::RolloutApplicationState as State;
use flotilla_core::api::{Application, ApplicationSet};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::git_remote::{GitDaemon, Remote};
use support::list_appset::{apply_graph, appset};
use support::{
    TestNamespace, apply, controller_process, eventually, kill_process, namespace, object,
    wait_until,
};

/// The finalizer the removal test puts on each component's ConfigMap to hold its deletion.
const HOLD: &str = "test.flotilla.dev/hold";

/// A repository with one ConfigMap per component (held by [`HOLD`] when `held`), served by
/// `git daemon`.
fn repository(name: &str, components: &[&str], held: bool) -> (Remote, GitDaemon) {
    let remote = Remote::new(name);
    for component in components {
        let finalizers: Vec<&str> = if held { vec![HOLD] } else { Vec::new() };
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": component, "finalizers": finalizers},
            "data": {"component": component}});
        remote.write(&format!("{component}/config.json"), &config.to_string());
    }
    remote.push("v1");
    let daemon = GitDaemon::start(remote.exported());
    (remote, daemon)
}

/// A step `name` of the Applications labelled `step: name`, waiting for `depends_on`.
fn step(name: &str, depends_on: &[&str]) -> serde_json::Value {
    json!({"name": name, "dependsOn": depends_on,
        "matchExpressions": [{"key": "step", "operator": "In", "values": [name]}]})
}

/// Every distinct `status.applicationStatus` the ApplicationSet `name` had, in order, as
/// Application → rollout state.
type Writes = Arc<Mutex<Vec<BTreeMap<String, State>>>>;

fn record_writes(ns: &TestNamespace, name: &str) -> (Writes, tokio::task::JoinHandle<()>) {
    let writes: Writes = Arc::default();
    let recording = Arc::clone(&writes);
    let stream = watcher(
        ns.api::<ApplicationSet>(),
        watcher::Config::default().fields(&format!("metadata.name={name}")),
    );
    let task = tokio::spawn(async move {
        let mut events = std::pin::pin!(stream);
        while let Some(event) = events.next().await {
            let Ok(watcher::Event::Apply(appset) | watcher::Event::InitApply(appset)) = event
            else {
                continue;
            };
            let states: BTreeMap<String, State> = appset
                .status
                .map(|s| s.application_status)
                .unwrap_or_default()
                .into_iter()
                .map(|entry| (entry.application, entry.status))
                .collect();
            let mut all = recording.lock().expect("not poisoned");
            if !states.is_empty() && all.last() != Some(&states) {
                all.push(states);
            }
        }
    });
    (writes, task)
}

#[tokio::test]
async fn parallel_backends_start_in_one_pass_after_the_database_and_the_frontend_after_both() {
    let ns = namespace(1, "rollout-graph").await;
    support::permissive_project(&ns, "platform").await;
    let components = ["db", "backend-eu", "backend-us", "frontend"];
    let (remote, daemon) = repository("graph", &components, false);
    let elements: Vec<serde_json::Value> = components
        .iter()
        .map(|c| json!({"app": c, "component": c, "step": c}))
        .collect();
    let steps = json!([
        step("db", &[]),
        step("backend-eu", &["db"]),
        step("backend-us", &["db"]),
        step("frontend", &["backend-eu", "backend-us"]),
    ]);
    let graph = appset(
        "graph",
        &daemon.url(&remote.served_name()),
        &ns,
        &json!(elements),
        &steps,
    );
    let (writes, watch) = record_writes(&ns, "graph");
    apply_graph(&ns, &graph).await;
    let controller = controller_process(&ns, "graph");

    let appsets: Api<ApplicationSet> = ns.api();
    wait_until(&appsets, "graph", "every Application Healthy", |a| {
        let status = a.status.clone().unwrap_or_default();
        status.application_status.len() == 4
            && status
                .application_status
                .iter()
                .all(|e| e.status == State::Healthy)
    })
    .await;
    kill_process(controller);
    watch.abort();

    let writes = writes.lock().expect("not poisoned").clone();
    let state = |write: &BTreeMap<String, State>, app: &str| write.get(app).copied();
    let started = |write: &BTreeMap<String, State>, app: &str| {
        state(write, app).is_some_and(|s| s != State::Waiting)
    };
    let first_backend = writes
        .iter()
        .position(|w| started(w, "backend-eu") || started(w, "backend-us"))
        .expect("a backend started");
    let both = &writes[first_backend];
    assert!(
        started(both, "backend-eu") && started(both, "backend-us"),
        "both backends leave Waiting in the same status write: {writes:#?}"
    );
    assert_eq!(state(both, "db"), Some(State::Healthy), "{writes:#?}");
    assert!(
        writes[..first_backend]
            .iter()
            .all(|w| !started(w, "frontend")),
        "{writes:#?}"
    );
    let frontend = writes
        .iter()
        .position(|w| started(w, "frontend"))
        .expect("the frontend started");
    let joined = &writes[frontend];
    assert_eq!(
        state(joined, "backend-eu"),
        Some(State::Healthy),
        "{writes:#?}"
    );
    assert_eq!(
        state(joined, "backend-us"),
        Some(State::Healthy),
        "{writes:#?}"
    );

    // The condition and `rollout explain` name the graph's steps.
    let out = support::run_flotilla(&ns, &["rollout", "explain", "graph"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("\nStep 4 (frontend, after steps 2, 3): Complete"),
        "{text}"
    );
}

/// Whether the Application `name` exists and is being deleted (`None`: it is gone).
async fn deleting(apps: &Api<Application>, name: &str) -> Option<bool> {
    apps.get_opt(name)
        .await
        .unwrap_or_else(|error| panic!("reading {name}: {error}"))
        .map(|app| app.metadata.deletion_timestamp.is_some())
}

/// Lets the deletion of the ConfigMap `name` finish.
async fn release(configs: &Api<ConfigMap>, name: &str) {
    let patch = json!({"metadata": {"finalizers": null}});
    configs
        .patch(name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .unwrap_or_else(|error| panic!("releasing {name}: {error}"));
}

#[tokio::test]
async fn applications_leaving_the_generator_go_frontend_then_backend_then_database() {
    let ns = namespace(1, "removal-steps").await;
    support::permissive_project(&ns, "platform").await;
    let components = ["database", "backend", "frontend"];
    let (remote, daemon) = repository("removal", &components, true);
    let elements = |regions: &[&str]| -> serde_json::Value {
        regions
            .iter()
            .flat_map(|region| {
                components.iter().map(
                    move |c| json!({"app": format!("{c}-{region}"), "component": c, "step": c}),
                )
            })
            .collect()
    };
    // The list order of Argo CD: no names, no dependsOn.
    let steps: serde_json::Value = components
        .iter()
        .map(|c| json!({"matchExpressions": [{"key": "step", "operator": "In", "values": [c]}]}))
        .collect();
    let url = daemon.url(&remote.served_name());
    let stack = appset("stack", &url, &ns, &elements(&["old"]), &steps);
    support::install_flotilla_crds(&ns.client).await;
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &stack).await;
    let controller = controller_process(&ns, "removal");
    let configs: Api<ConfigMap> = ns.api();
    let apps: Api<Application> = ns.api();
    for component in components {
        wait_until(&configs, component, "the component's object", |_| true).await;
    }
    wait_until(&appsets, "stack", "the rollout complete", |a| {
        let status = a.status.clone().unwrap_or_default();
        status.application_status.len() == 3
            && status
                .application_status
                .iter()
                .all(|e| e.status == State::Healthy)
    })
    .await;

    // The old region leaves the generator's output: no element is left.
    let mut emptied = stack.clone();
    emptied.spec.generators = vec![object(json!({"list": {"elements": []}}))];
    apply(&appsets, &emptied).await;
    let order = [
        ("frontend-old", "frontend"),
        ("backend-old", "backend"),
        ("database-old", "database"),
    ];
    for (index, (app, config)) in order.iter().enumerate() {
        wait_until(&apps, app, &format!("{app} being deleted"), |a| {
            a.metadata.deletion_timestamp.is_some()
        })
        .await;
        wait_until(
            &configs,
            config,
            &format!("{config}'s object deleted"),
            |c| c.metadata.deletion_timestamp.is_some(),
        )
        .await;
        for (earlier, _) in &order[index + 1..] {
            assert_eq!(
                deleting(&apps, earlier).await,
                Some(false),
                "{earlier} waits while {app} is deleted"
            );
        }
        // Held a while: what comes next still waits.
        tokio::time::sleep(Duration::from_secs(3)).await;
        for (earlier, _) in &order[index + 1..] {
            assert_eq!(deleting(&apps, earlier).await, Some(false), "{earlier}");
        }
        release(&configs, config).await;
        eventually(&format!("{app} gone"), async || {
            match deleting(&apps, app).await {
                None => Ok(()),
                Some(state) => Err(format!("being deleted: {state}")),
            }
        })
        .await;
    }
    assert!(
        apps.list(&Default::default())
            .await
            .expect("lists")
            .items
            .iter()
            .all(|a| a.labels().get("step").is_none()),
        "every removed Application gone"
    );
    kill_process(controller);
}
