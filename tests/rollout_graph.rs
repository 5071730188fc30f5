//! The RollingSync step graph and removal in steps against the control plane, with
//! `flotilla controller` (the binary):
//! - `db → (backend-eu ∥ backend-us) → frontend`: every status the controller writes is read
//!   from a watch of the ApplicationSet; both backends leave Waiting in the same write, once the
//!   database is Healthy, and the frontend only once both backends are Healthy.
//! - Removal in steps: the `old` region's elements leave the list generator; its Applications
//!   are deleted frontend, then backend, then database — each component a ConfigMap with a
//!   finalizer the test holds, so each deletion lasts until the test lets it go, and the next
//!   one must wait for it.
//! - Across ApplicationSets: `services` waits for `platform`'s `database`, and `platform`'s
//!   `rest` for `services`; one watch of the namespace's ApplicationSets shows the order after a
//!   commit to both; the same with every rollout past `--rollout-status-limit` (each entry on
//!   its Application, `sameRevision` judged from counts per revision, `matchLabels` from the
//!   Applications' entries), watched from the Applications. A missing ApplicationSet is a named condition until it is created.
//! - Across namespaces: `services` waits for `platform` in another namespace this controller
//!   manages (permitted by the project's `sourceNamespaces`) and starts once that step is
//!   approved and complete; one naming a namespace the project does not permit is named
//!   (`NamespaceNotPermitted`) and never opens.
//! - A cycle through three ApplicationSets (`a` → `b` → `c` → `a`) is named on each.
//! - A cluster leaving a clusters generator's selector: its Applications go frontend, backend,
//!   database, and `status.deletion` shows each step and what is left.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use flotilla_core::api::application_set_status::{ConditionType, RolloutApplicationState as State};
use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::json;
use support::appset_writes::{self, Writes};
use support::git_remote::{GitDaemon, Remote};
use support::list_appset::{apply_graph, appset};
use support::{
    TestNamespace, apply, controller_process, controller_process_with, eventually, namespace,
    object, wait_until,
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
fn record_writes(
    ns: &TestNamespace,
    name: &str,
) -> (Writes<BTreeMap<String, State>>, tokio::task::JoinHandle<()>) {
    appset_writes::record(ns, name, |appset| {
        let states = appset_writes::states(appset);
        (!states.is_empty()).then_some(states)
    })
}

#[tokio::test]
async fn parallel_backends_start_in_one_pass_after_the_database_and_the_frontend_after_both() {
    let ns = namespace(1, "rollout-graph").await;
    support::install_flotilla_crds(&ns.client).await;
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
    wait_healthy(&appsets, "graph", 4).await;
    controller.kill();
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

/// Waits until the ApplicationSet `name` has `count` Applications in its rollout, all Healthy.
async fn wait_healthy(appsets: &Api<ApplicationSet>, name: &str, count: usize) {
    wait_until(
        appsets,
        name,
        &format!("{count} Applications Healthy"),
        |a| {
            let status = a.status.clone().unwrap_or_default();
            status.application_status.len() == count
                && status
                    .application_status
                    .iter()
                    .all(|e| e.status == State::Healthy)
        },
    )
    .await;
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
    support::install_flotilla_crds(&ns.client).await;
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
    wait_healthy(&appsets, "stack", 3).await;

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
    controller.kill();
}

/// The rollout state and target revisions of every Application of every ApplicationSet of a
/// namespace: (ApplicationSet, Application) → (state, revisions, message).
type Fleet = BTreeMap<(String, String), (State, Vec<String>, String)>;

/// Every distinct [`Fleet`] of `ns`, in the order one watch of its ApplicationSets delivers
/// their versions (so what one ApplicationSet had when another changed is known exactly).
fn record_fleet(ns: &TestNamespace) -> (Arc<Mutex<Vec<Fleet>>>, tokio::task::JoinHandle<()>) {
    record(ns.api::<ApplicationSet>(), |fleet, appset| {
        let name = appset.name_any();
        fleet.retain(|(owner, _), _| *owner != name);
        for entry in appset
            .status
            .map(|s| s.application_status)
            .unwrap_or_default()
        {
            fleet.insert(
                (name.clone(), entry.application),
                (entry.status, entry.target_revisions, entry.message),
            );
        }
    })
}

/// [`record_fleet`] for rollouts past `--rollout-status-limit`: from one watch of the
/// namespace's Applications, each keeping its own entry (`status.rollout`).
fn record_counted_fleet(
    ns: &TestNamespace,
) -> (Arc<Mutex<Vec<Fleet>>>, tokio::task::JoinHandle<()>) {
    record(ns.api::<Application>(), |fleet, app| {
        let owner = app.labels().get(APPLICATION_SET_LABEL).cloned();
        let key = (owner.unwrap_or_default(), app.name_any());
        match app.status.and_then(|s| s.rollout) {
            Some(entry) => fleet.insert(key, (entry.status, entry.target_revisions, entry.message)),
            None => fleet.remove(&key),
        };
    })
}

/// Every distinct [`Fleet`] that `update` makes of the objects one watch of `api` delivers, in
/// order.
fn record<K>(
    api: Api<K>,
    update: fn(&mut Fleet, K),
) -> (Arc<Mutex<Vec<Fleet>>>, tokio::task::JoinHandle<()>)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let fleets: Arc<Mutex<Vec<Fleet>>> = Arc::default();
    let recording = Arc::clone(&fleets);
    let stream = watcher(api, watcher::Config::default());
    let task = tokio::spawn(async move {
        let mut events = std::pin::pin!(stream);
        let mut fleet = Fleet::new();
        while let Some(event) = events.next().await {
            let Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event
            else {
                continue;
            };
            update(&mut fleet, object);
            let mut all = recording.lock().expect("not poisoned");
            if all.last() != Some(&fleet) {
                all.push(fleet.clone());
            }
        }
    });
    (fleets, task)
}

/// A step `name` of the Applications labelled `step: name`, waiting for `depends_on` (names
/// and steps of other ApplicationSets as written).
fn step_after(name: &str, depends_on: &serde_json::Value) -> serde_json::Value {
    json!({"name": name, "dependsOn": depends_on,
        "matchExpressions": [{"key": "step", "operator": "In", "values": [name]}]})
}

/// Writes every component of `remote` again at `version` and pushes it: its commit.
fn new_commit(remote: &Remote, components: &[&str], version: &str) -> String {
    for component in components {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": component},
            "data": {"component": component, "version": version}});
        remote.write(&format!("{component}/config.json"), &config.to_string());
    }
    remote.push(version)
}

/// Whether every Application of `fleet` (there are `count`) is Healthy on `revision`.
fn all_on(fleet: &Fleet, count: usize, revision: &str) -> bool {
    fleet.len() == count
        && fleet
            .values()
            .all(|(state, on, _)| *state == State::Healthy && on == &[revision.to_owned()])
}

#[tokio::test]
async fn services_wait_for_the_platforms_database_and_the_rest_of_the_platform_for_services() {
    across_application_sets(false).await;
}

/// The same past `--rollout-status-limit` (1 byte: every rollout only counted, each entry on
/// its Application): `sameRevision` is judged from the counts per revision, `matchLabels` from
/// the Applications' entries.
#[tokio::test]
async fn a_same_revision_gate_on_a_counted_rollout_holds_as_on_a_listed_one() {
    across_application_sets(true).await;
}

/// `services` waits for `platform`'s `database` and `platform`'s `rest` for `services`' `api`
/// (its Applications labelled `step: api`), each on the same revision; both rolled out on a
/// commit, then a new commit to both. When `counted`, the controller keeps every rollout's
/// entries on the Applications.
async fn across_application_sets(counted: bool) {
    let ns = namespace(
        1,
        if counted {
            "rollout-cross-counted"
        } else {
            "rollout-cross"
        },
    )
    .await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let components = ["database", "cache", "api"];
    let (remote, daemon) = repository("cross", &components, false);
    let url = daemon.url(&remote.served_name());
    let platform = appset(
        "platform",
        &url,
        &ns,
        &json!([
            {"app": "database", "component": "database", "step": "database"},
            {"app": "cache", "component": "cache", "step": "rest"}
        ]),
        &json!([
            step("database", &[]),
            step_after(
                "rest",
                &json!(["database",
                {"applicationSet": "services", "step": "api", "sameRevision": true,
                 "matchLabels": {"step": "api"}}])
            ),
        ]),
    );
    let services = appset(
        "services",
        &url,
        &ns,
        &json!([{"app": "api", "component": "api", "step": "api"}]),
        &json!([step_after(
            "api",
            &json!([
            {"applicationSet": "platform", "step": "database", "sameRevision": true}])
        )]),
    );
    let (fleets, watch) = if counted {
        record_counted_fleet(&ns)
    } else {
        record_fleet(&ns)
    };
    apply_graph(&ns, &platform).await;
    apply_graph(&ns, &services).await;
    let limit: &[&str] = if counted {
        &["--rollout-status-limit", "1"]
    } else {
        &[]
    };
    let controller = controller_process_with(&ns, "cross", limit);
    let first = support::git_remote::git(remote.work(), &["rev-parse", "HEAD"]);
    let fleet_now = || fleets.lock().expect("not poisoned").last().cloned();
    eventually("both rolled out on the first commit", async || {
        fleet_now()
            .filter(|f| all_on(f, 3, &first))
            .map(|_| ())
            .ok_or_else(|| format!("{:#?}", fleet_now()))
    })
    .await;

    // A new commit to both: each reconciles at once (the refresh annotation).
    let second = new_commit(&remote, &components, "v2");
    let appsets: Api<ApplicationSet> = ns.api();
    for name in ["platform", "services"] {
        let patch = json!({"metadata": {"annotations": {
            "argocd.argoproj.io/application-set-refresh": "true"}}});
        appsets
            .patch(name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .expect("annotates");
    }
    eventually("both rolled out on the second commit", async || {
        fleet_now()
            .filter(|f| all_on(f, 3, &second))
            .map(|_| ())
            .ok_or_else(|| format!("{:#?}", fleet_now()))
    })
    .await;
    watch.abort();
    controller.kill();
    for name in ["platform", "services"] {
        let status = appsets.get(name).await.expect("reads it").status;
        let status = status.unwrap_or_default();
        assert_eq!(
            (
                status.application_status.is_empty(),
                status.application_status_summary.is_empty()
            ),
            (counted, !counted),
            "{name}: only counted when past the limit: {status:?}"
        );
    }

    let fleets = fleets.lock().expect("not poisoned").clone();
    let key = |appset: &str, app: &str| (appset.to_owned(), app.to_owned());
    let on_second = |fleet: &Fleet, appset: &str, app: &str| {
        fleet
            .get(&key(appset, app))
            .filter(|(_, on, _)| on == std::slice::from_ref(&second))
            .map(|(state, _, _)| *state)
    };
    let started = |appset: &str, app: &str| {
        fleets
            .iter()
            .position(|f| on_second(f, appset, app).is_some_and(|s| s != State::Waiting))
            .unwrap_or_else(|| panic!("{appset}/{app} started on {second}: {fleets:#?}"))
    };
    let (database, api, cache) = (
        started("platform", "database"),
        started("services", "api"),
        started("platform", "cache"),
    );
    assert!(database < api && api < cache, "{fleets:#?}");
    assert_eq!(
        on_second(&fleets[api], "platform", "database"),
        Some(State::Healthy),
        "services' api starts once platform's database is Healthy on the commit: {fleets:#?}"
    );
    assert_eq!(
        on_second(&fleets[cache], "services", "api"),
        Some(State::Healthy),
        "platform's cache starts once services' api is Healthy on the commit: {fleets:#?}"
    );
}

#[tokio::test]
async fn a_missing_application_set_is_named_and_its_creation_opens_the_step() {
    let ns = namespace(1, "rollout-missing").await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let (remote, daemon) = repository("missing", &["api", "queue"], false);
    let url = daemon.url(&remote.served_name());
    let services = appset(
        "services",
        &url,
        &ns,
        &json!([{"app": "api", "component": "api", "step": "api"}]),
        &json!([step_after(
            "api",
            &json!([{"applicationSet": "messaging", "step": "queue"}])
        )]),
    );
    apply_graph(&ns, &services).await;
    let controller = controller_process(&ns, "missing");
    let appsets: Api<ApplicationSet> = ns.api();
    let named = format!(
        "step 1 (api): dependsOn ApplicationSet messaging step queue: there is no ApplicationSet messaging in namespace {}; the step waits until this is fixed",
        ns.name
    );
    wait_until(
        &appsets,
        "services",
        "the InvalidRolloutDependency condition",
        |a| {
            a.status.as_ref().is_some_and(|s| {
                s.conditions.iter().any(|c| {
                    c.type_ == ConditionType::InvalidRolloutDependency
                        && c.reason == "ApplicationSetNotFound"
                        && c.message == named
                }) && s
                    .application_status
                    .iter()
                    .all(|e| e.status == State::Waiting)
            })
        },
    )
    .await;
    let out = support::run_flotilla(&ns, &["rollout", "explain", "services"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success()
            && text.contains(
                "Step 1 (api, after ApplicationSet messaging step queue): WaitingForApplicationSet"
            )
            && text.contains("there is no ApplicationSet messaging in namespace"),
        "{text}"
    );
    let apps: Api<Application> = ns.api();
    let api = apps.get("api").await.expect("the api Application exists");
    assert!(
        api.status
            .as_ref()
            .is_none_or(|s| s.operation_state.is_none()),
        "not synced while it waits: {api:?}"
    );

    // The ApplicationSet appears: its step completes, and the waiting step opens.
    let messaging = appset(
        "messaging",
        &url,
        &ns,
        &json!([{"app": "queue", "component": "queue", "step": "queue"}]),
        &json!([step("queue", &[])]),
    );
    apply_graph(&ns, &messaging).await;
    wait_until(
        &appsets,
        "services",
        "api Healthy, the condition gone",
        |a| {
            a.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .all(|c| c.type_ != ConditionType::InvalidRolloutDependency)
                    && s.application_status.len() == 1
                    && s.application_status[0].status == State::Healthy
            })
        },
    )
    .await;
    controller.kill();
}

/// The `RolloutProgressing` reason and the `InvalidRolloutDependency` condition (reason,
/// message) of `appset`, and whether all its Applications are in `state`.
fn dependency_state(
    appset: &ApplicationSet,
    state: State,
) -> (Option<String>, Option<(String, String)>, bool) {
    let status = appset.status.clone().unwrap_or_default();
    let reason = |kind: ConditionType| {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == kind)
            .map(|c| (c.reason.clone(), c.message.clone()))
    };
    (
        reason(ConditionType::RolloutProgressing).map(|(reason, _)| reason),
        reason(ConditionType::InvalidRolloutDependency),
        !status.application_status.is_empty()
            && status.application_status.iter().all(|e| e.status == state),
    )
}

#[tokio::test]
async fn a_dependency_in_another_managed_namespace_wakes_the_waiting_step_and_a_refused_one_is_named()
 {
    let control = namespace(1, "xns-control").await;
    support::install_flotilla_crds(&control.client).await;
    let team = namespace(1, "xns-team").await;
    let project = object(json!({
        "apiVersion": "flotilla.dev/v1alpha1", "kind": "AppProject",
        "metadata": {"name": "platform"},
        "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                 "sourceNamespaces": [team.name]}
    }));
    apply(&control.api::<flotilla_core::api::AppProject>(), &project).await;
    let (remote, daemon) = repository("xns", &["database", "api", "worker"], false);
    let url = daemon.url(&remote.served_name());
    // `platform`, in the team's namespace, opens its database step only when approved.
    let platform = appset(
        "platform",
        &url,
        &team,
        &json!([{"app": "database", "component": "database", "step": "database"}]),
        &json!([{"name": "database", "approval": "manual",
            "matchExpressions": [{"key": "step", "operator": "In", "values": ["database"]}]}]),
    );
    apply_graph(&team, &platform).await;
    let after = |namespace: &str| {
        json!([step_after(
            "api",
            &json!([{"applicationSet": "platform", "namespace": namespace, "step": "database"}])
        )])
    };
    let services = appset(
        "services",
        &url,
        &control,
        &json!([{"app": "api", "component": "api", "step": "api"}]),
        &after(&team.name),
    );
    // `workers` names a namespace the project's sourceNamespaces does not list.
    let elsewhere = format!("{}-elsewhere", team.name);
    let workers = appset(
        "workers",
        &url,
        &control,
        &json!([{"app": "worker", "component": "worker", "step": "api"}]),
        &after(&elsewhere),
    );
    apply_graph(&control, &workers).await;
    let managed = ["--application-namespaces", &team.name];
    let controller = support::controller_process_with(
        &control,
        "xns",
        &[
            managed[0],
            managed[1],
            "--applicationset-namespaces",
            &team.name,
        ],
    );
    // platform reports its rollout (database waiting for approval) before services exists: an
    // ApplicationSet that has reported none yet reads as having nothing left to roll out.
    let team_sets: Api<ApplicationSet> = team.api();
    wait_until(
        &team_sets,
        "platform",
        "database waiting for approval",
        |a| dependency_state(a, State::Waiting).2,
    )
    .await;
    apply_graph(&control, &services).await;
    let appsets: Api<ApplicationSet> = control.api();
    wait_until(&appsets, "workers", "NamespaceNotPermitted named", |a| {
        let (_, invalid, waiting) = dependency_state(a, State::Waiting);
        waiting
            && invalid.is_some_and(|(reason, message)| {
                reason == "NamespaceNotPermitted"
                    && message.contains(&format!("namespace {elsewhere} is not permitted"))
            })
    })
    .await;
    wait_until(
        &appsets,
        "services",
        "waiting for platform's database",
        |a| {
            let (progress, invalid, waiting) = dependency_state(a, State::Waiting);
            waiting
                && invalid.is_none()
                && progress.as_deref() == Some("StepWaitingForApplicationSet")
        },
    )
    .await;
    let out = support::run_flotilla(&control, &["rollout", "explain", "services"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "after ApplicationSet {}/platform step database): WaitingForApplicationSet",
            team.name
        )),
        "{text}"
    );

    // Approved, platform's database completes in its namespace: its watch wakes services (a
    // rollout only waiting for watched ApplicationSets is not passed again on a timer).
    let out = support::run_flotilla(&team, &["rollout", "promote", "platform"]).await;
    assert!(out.status.success(), "{out:?}");
    wait_until(&appsets, "services", "api Healthy", |a| {
        dependency_state(a, State::Healthy).2
    })
    .await;
    let workers = appsets.get("workers").await.expect("workers");
    assert!(
        dependency_state(&workers, State::Waiting).2,
        "a refused namespace never opens the step: {workers:?}"
    );
    controller.kill();
}

#[tokio::test]
async fn a_cycle_through_three_application_sets_is_named_on_each() {
    let ns = namespace(1, "rollout-cycle3").await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let (remote, daemon) = repository("cycle3", &["a", "b", "c"], false);
    let url = daemon.url(&remote.served_name());
    let ring = [("a", "b"), ("b", "c"), ("c", "a")];
    for (name, waits_for) in ring {
        let one = appset(
            name,
            &url,
            &ns,
            &json!([{"app": name, "component": name, "step": name}]),
            &json!([step_after(
                name,
                &json!([{"applicationSet": waits_for, "step": waits_for}])
            )]),
        );
        apply_graph(&ns, &one).await;
    }
    let controller = controller_process(&ns, "cycle3");
    let appsets: Api<ApplicationSet> = ns.api();
    for (name, waits_for) in ring {
        let third = ring
            .iter()
            .find(|(n, _)| *n == waits_for)
            .expect("in the ring")
            .1;
        let message = format!(
            "step 1 ({name}): dependsOn ApplicationSet {waits_for} step {waits_for}: its step 1 ({waits_for}) waits for step 1 ({third}) of {third}, which waits for step 1 ({name}) of {name}, which waits for it: a cycle across ApplicationSets; the step waits until this is fixed"
        );
        wait_until(&appsets, name, "DependencyCycle named", |a| {
            let (_, invalid, waiting) = dependency_state(a, State::Waiting);
            waiting
                && invalid
                    .as_ref()
                    .is_some_and(|(reason, said)| reason == "DependencyCycle" && *said == message)
        })
        .await;
    }
    controller.kill();
}

/// An Argo CD cluster Secret `cluster-<name>` for test cluster 1, labelled `fleet: fleet`.
fn cluster_secret(name: &str, fleet: &str) -> Secret {
    let (server, ca_data, token) = support::cluster_credentials(1);
    let config = json!({"bearerToken": token, "tlsClientConfig": {"caData": ca_data}});
    object(json!({
        "metadata": {
            "name": format!("cluster-{name}"),
            "labels": {"argocd.argoproj.io/secret-type": "cluster", "fleet": fleet}
        },
        "stringData": {"name": name, "server": server, "config": config.to_string()}
    }))
}

/// Where the removal in steps stands in `status.deletion`: (the step being deleted and its
/// Applications, the steps left), `None` when there is none.
fn removal_progress(appset: &ApplicationSet) -> Option<(u64, Vec<String>, Vec<u64>)> {
    let progress = appset.status.as_ref()?.deletion.as_ref()?;
    Some((
        progress.current.step,
        progress.current.applications.clone(),
        progress.remaining.iter().map(|g| g.step).collect(),
    ))
}

#[tokio::test]
async fn a_cluster_leaving_the_selector_loses_its_applications_frontend_backend_then_database() {
    let ns = namespace(1, "removal-cluster").await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let components = ["database", "backend", "frontend"];
    let (remote, daemon) = repository("removal-cluster", &components, true);
    let secrets: Api<Secret> = ns.api();
    apply(&secrets, &cluster_secret("old", "active")).await;
    let elements: Vec<serde_json::Value> = components
        .iter()
        .map(|c| json!({"component": c, "step": c}))
        .collect();
    let mut stack = appset(
        "stack",
        &daemon.url(&remote.served_name()),
        &ns,
        &json!([]),
        &json!(components
            .iter()
            .map(|c| json!({"matchExpressions": [{"key": "step", "operator": "In", "values": [c]}]}))
            .collect::<Vec<_>>()),
    );
    stack.spec.generators = vec![object(json!({"matrix": {"generators": [
        {"clusters": {"selector": {"matchLabels": {"fleet": "active"}}}},
        {"list": {"elements": elements}}
    ]}}))];
    stack.spec.template.metadata.name = "{{.component}}-{{.name}}".into();
    stack.spec.template.spec.destination.server = Some("{{.server}}".into());
    support::install_flotilla_crds(&ns.client).await;
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &stack).await;
    let controller = controller_process(&ns, "removal-cluster");
    let configs: Api<ConfigMap> = ns.api();
    let apps: Api<Application> = ns.api();
    wait_healthy(&appsets, "stack", 3).await;

    // The cluster is retired: relabelled, it leaves the clusters generator's selector.
    apply(&secrets, &cluster_secret("old", "retired")).await;
    let order = [
        ("frontend-old", "frontend", 3, vec![2, 1]),
        ("backend-old", "backend", 2, vec![1]),
        ("database-old", "database", 1, vec![]),
    ];
    for (index, (app, config, step, left)) in order.iter().enumerate() {
        wait_until(&apps, app, &format!("{app} being deleted"), |a| {
            a.metadata.deletion_timestamp.is_some()
        })
        .await;
        wait_until(
            &appsets,
            "stack",
            &format!("status.deletion at {app}"),
            |a| removal_progress(a) == Some((*step, vec![(*app).to_owned()], left.clone())),
        )
        .await;
        wait_until(
            &configs,
            config,
            &format!("{config}'s object deleted"),
            |c| c.metadata.deletion_timestamp.is_some(),
        )
        .await;
        for (earlier, ..) in &order[index + 1..] {
            assert_eq!(
                deleting(&apps, earlier).await,
                Some(false),
                "{earlier} waits while {app} is deleted"
            );
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
    wait_until(&appsets, "stack", "status.deletion cleared", |a| {
        removal_progress(a).is_none()
    })
    .await;
    controller.kill();
}
