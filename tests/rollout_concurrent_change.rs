//! A RollingSync decision made over an ApplicationSet that changes while the pass runs, against
//! the control plane with `flotilla controller` (the binary). The ApplicationSet's generators are
//! a list (`db-a` in step 1, `web` in step 2) and a plugin service on loopback whose answers
//! the test holds, so it can stop a pass between reading the ApplicationSet and writing its
//! status. `db-a` deploys a `Database` of a kind of the test's own, Healthy only once the test
//! writes its status as its operator would.
//!
//! The pass held is one that sees `db-a` Healthy; while it is held, `db-b` joins step 1 of the
//! list. The held pass would open step 2 over the list it read; its status write is refused as
//! superseded, and `web` is promoted only in a write whose list holds `db-b`, once `db-b` is
//! Healthy. A refresh request annotated meanwhile (as a webhook does on every push) changes
//! nothing the pass decided from: its status is written over it.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use flotilla_core::api::application_set_status::RolloutApplicationState as State;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::health::HealthStatus;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::Api;
use kube::api::DynamicObject;
use serde_json::json;
use support::appset_writes::{self, Writes};
use support::git_remote::{GitDaemon, Remote};
use support::list_appset::appset;
use support::plugin_service::{self, PluginGate};
use support::{
    ControllerProcess, TestNamespace, apply, controller_process, install_kind, namespace, object,
    wait_until, write_status,
};

/// How long the test waits for a held request to arrive (within the plugin's 30 s timeout).
const ARRIVAL: Duration = Duration::from_secs(25);

/// One version of the ApplicationSet: the elements listed, and each Application's rollout state.
#[derive(Clone, Debug, PartialEq)]
struct Version {
    listed: BTreeSet<String>,
    states: BTreeMap<String, State>,
}

/// Every distinct version of the ApplicationSet `name`, in order.
fn record_versions(
    ns: &TestNamespace,
    name: &str,
) -> (Writes<Version>, tokio::task::JoinHandle<()>) {
    appset_writes::record(ns, name, |appset| {
        let spec = serde_json::to_value(&appset.spec).unwrap_or_default();
        let listed = spec["generators"][0]["list"]["elements"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|element| element["app"].as_str().map(str::to_owned))
            .collect();
        let states = appset_writes::states(appset);
        Some(Version { listed, states })
    })
}

/// The ApplicationSet `stack` over `components` (`db-*` in step 1, the rest in step 2) and the
/// plugin `held-plugin`, which generates nothing but answers when the test lets it.
fn stack(url: &str, ns: &TestNamespace, components: &[&str]) -> ApplicationSet {
    let elements: Vec<serde_json::Value> = components
        .iter()
        .map(|c| {
            let step = if c.starts_with("db-") { "1" } else { "2" };
            json!({"app": c, "component": c, "step": step})
        })
        .collect();
    let step =
        |n: &str| json!({"matchExpressions": [{"key": "step", "operator": "In", "values": [n]}]});
    let typed = appset(
        "stack",
        url,
        ns,
        &json!(elements),
        &json!([step("1"), step("2")]),
    );
    let mut value = serde_json::to_value(typed).expect("an ApplicationSet serialises");
    value["spec"]["generators"]
        .as_array_mut()
        .expect("the list generator")
        .push(json!({"plugin": {
            "configMapRef": {"name": "held-plugin"},
            "input": {"parameters": {"apps": []}},
        }}));
    object(value)
}

/// Waits until `gate`'s request `ticket` has arrived.
async fn arrival(gate: &PluginGate, ticket: usize, what: &str) {
    tokio::time::timeout(ARRIVAL, gate.arrival(ticket))
        .await
        .unwrap_or_else(|_| panic!("{what}: no plugin request within {ARRIVAL:?}"));
}

/// What a test holds once a pass that sees `db-a` Healthy is held at the plugin.
struct HeldPass {
    ns: TestNamespace,
    url: String,
    appsets: Api<ApplicationSet>,
    gate: PluginGate,
    controller: ControllerProcess,
    versions: Writes<Version>,
    watch: tokio::task::JoinHandle<()>,
    /// Served as long as the test runs: the repository's directories go with it.
    _served: (Remote, GitDaemon),
}

/// Sets up the stack `db-a`, `web` in namespace `name` and holds the first pass that sees
/// `db-a` Healthy (it read the list without `db-b`).
async fn held_pass(name: &str) -> HeldPass {
    let ns = namespace(1, name).await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    let databases = install_kind(&ns.client, "db.flotilla.test", "Database", "databases").await;
    let remote = Remote::new(name);
    remote.write(
        "db-a/database.yaml",
        "apiVersion: db.flotilla.test/v1\nkind: Database\nmetadata:\n  name: a\nspec:\n  engine: postgres\n",
    );
    for component in ["db-b", "web"] {
        let config = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": component}, "data": {"component": component}});
        remote.write(&format!("{component}/config.json"), &config.to_string());
    }
    remote.push("v1");
    let daemon = GitDaemon::start(remote.exported());
    let url = daemon.url(&remote.served_name());

    let (plugin, gate) = plugin_service::start_gated("s3cret").await;
    let secret: Secret = object(json!({
        "metadata": {"name": "plugin-token"}, "stringData": {"token": "s3cret"}}));
    apply(&ns.api::<Secret>(), &secret).await;
    let config: ConfigMap = object(json!({"metadata": {"name": "held-plugin"},
        "data": {"baseUrl": plugin, "token": "$plugin-token:token"}}));
    apply(&ns.api::<ConfigMap>(), &config).await;

    let (versions, watch) = record_versions(&ns, "stack");
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &stack(&url, &ns, &["db-a", "web"])).await;
    let controller = controller_process(&ns, name);
    wait_until(&appsets, "stack", "db-a syncing, web Waiting", |a| {
        let entries = a.status.clone().unwrap_or_default().application_status;
        let state = |name: &str| {
            entries
                .iter()
                .find(|e| e.application == name)
                .map(|e| e.status)
        };
        state("db-a") == Some(State::Progressing) && state("web") == Some(State::Waiting)
    })
    .await;

    // Hold the next pass (it read db-a not Healthy yet), then let the operator report.
    let first = gate.close();
    arrival(&gate, first, "a pass before the Database is Ready").await;
    let database: Api<DynamicObject> =
        Api::namespaced_with(ns.client.clone(), &ns.name, &databases);
    write_status(
        &database,
        "a",
        json!({"observedGeneration": 1, "conditions": [{"type": "Ready", "status": "True",
            "reason": "Available", "message": "accepting connections",
            "lastTransitionTime": "2026-12-01T00:00:00Z"}]}),
    )
    .await;
    let applications: Api<Application> = ns.api();
    wait_until(&applications, "db-a", "db-a Healthy", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.health.as_ref())
            .is_some_and(|h| h.status == HealthStatus::Healthy)
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    // The next pass reads db-a Healthy and the list without db-b: hold it.
    gate.let_through_below(first + 1);
    arrival(&gate, first + 1, "a pass that sees db-a Healthy").await;
    HeldPass {
        ns,
        url,
        appsets,
        gate,
        controller,
        versions,
        watch,
        _served: (remote, daemon),
    }
}

impl HeldPass {
    /// Lets every pass through and waits until the entries of `apps` are all Healthy; the
    /// versions written, and the controller's log.
    async fn finish(self, apps: usize) -> (Vec<Version>, String) {
        self.gate.open();
        wait_until(&self.appsets, "stack", "every entry Healthy", |a| {
            let entries = a.status.clone().unwrap_or_default().application_status;
            entries.len() == apps && entries.iter().all(|e| e.status == State::Healthy)
        })
        .await;
        let log = std::fs::read_to_string(self.controller.log()).expect("the controller's log");
        self.controller.kill();
        self.watch.abort();
        let versions = self.versions.lock().expect("not poisoned").clone();
        (versions, log)
    }
}

#[tokio::test]
async fn a_pass_superseded_by_a_list_change_opens_no_step_past_the_application_it_adds() {
    let held = held_pass("rollout-superseded").await;
    apply(
        &held.appsets,
        &stack(&held.url, &held.ns, &["db-a", "db-b", "web"]),
    )
    .await;
    let (versions, log) = held.finish(3).await;
    let promoted = versions
        .iter()
        .find(|v| v.states.get("web").is_some_and(|s| *s != State::Waiting))
        .expect("web promoted");
    assert!(
        promoted.listed.contains("db-b") && promoted.states.get("db-b") == Some(&State::Healthy),
        "web is promoted only in a write whose list holds db-b, once db-b is Healthy: {versions:#?}"
    );
    assert!(
        log.contains("changed during the pass; passing it again"),
        "the held pass's status write was superseded"
    );
}

/// A webhook annotates the ApplicationSet on every push; were that to supersede the pass, a
/// fleet whose passes outlast the interval between pushes would never be written again.
#[tokio::test]
async fn a_refresh_request_during_a_pass_does_not_supersede_it() {
    let held = held_pass("rollout-refreshed").await;
    let refresh = json!({"metadata": {"annotations": {
        "argocd.argoproj.io/application-set-refresh": "true"}}});
    held.appsets
        .patch(
            "stack",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&refresh),
        )
        .await
        .expect("the refresh requested");
    let (versions, log) = held.finish(2).await;
    assert!(
        !log.contains("changed during the pass; passing it again"),
        "no pass was superseded"
    );
    let promoted = versions
        .iter()
        .find(|v| v.states.get("web").is_some_and(|s| *s != State::Waiting))
        .expect("web promoted");
    assert_eq!(
        promoted.states.get("db-a"),
        Some(&State::Healthy),
        "{versions:#?}"
    );
}
