//! Live state on the real control plane: what the controller reports is what the cluster has,
//! long before the periodic resync (set to Argo CD's three minutes) so that only the watches can
//! tell it. `kubectl scale`, `set image` and `delete` of a managed object turn the
//! Application OutOfSync (the object Missing), naming the field; with `selfHeal` the change is
//! reverted as soon, and a change another writer keeps re-applying is reverted ever more slowly
//! (Argo CD's self-heal backoff: each revert waits longer after the one before); an operator's resource going `Ready=False` after the
//! sync turns the Application Progressing, naming it, and so does a pod of a Deployment that
//! stops being ready; while an operation waits on a wave, the
//! objects it created show as they are; and a Helm chart with a LoadBalancer Service and a
//! kustomize stack with an Ingress (shaped as Argo CD's example applications), neither ever given
//! an address, sync (operation Succeeded) and stay Synced + Progressing, naming the Service or
//! Ingress — while a RollingSync step holding such an Application waits, its gate being Healthy.

mod controller_support;
mod support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use flotilla_core::api::Application;
use flotilla_core::api::application::ResourceStatus;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use controller_support::{Options, setup, start_with};
use support::git_remote::Remote;
use support::{TestNamespace, apply, eventually_within, object, wait_until};

/// Argo CD's default resync: nothing in these tests may wait for it.
const RESYNC: Duration = Duration::from_secs(180);

/// A controller that compares unchanged Applications only every [`RESYNC`]: whatever it sees
/// sooner comes from its watches.
fn start_resyncing_rarely(ns: &TestNamespace) -> controller_support::Running {
    start_with(
        ns,
        "only",
        Options {
            resync: RESYNC,
            ..Options::default()
        },
    )
}

/// How soon a change must show in the Application's status: a sixth of the resync, so that only
/// the watches can pass, on however slow a machine (a quiet one shows it well within a second;
/// the times are printed).
const SEEN_WITHIN: Duration = Duration::from_secs(RESYNC.as_secs() / 6);
/// How soon self-heal must have reverted a change: likewise well before any resync.
const HEALED_WITHIN: Duration = Duration::from_secs(RESYNC.as_secs() / 6);
/// How many self-heals in a row the fight with another writer lasts.
const HEALS: usize = 3;
/// How long those may take: their backoffs (0, 2 and 6 s) and syncs, with room for a slow
/// machine.
const FIGHT_WITHIN: Duration = Duration::from_secs(120);

/// A Deployment `name` with one replica and its ConfigMap `<name>-settings`.
fn web(name: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-settings\ndata:\n  LOG_LEVEL: info\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  replicas: 1\n  \
         selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    \
         spec:\n      containers: [{{name: web, image: \"registry.example.com/web:1\"}}]\n"
    )
}

/// The Application `name` syncing `path` of `remote` into the test namespace, with
/// `syncPolicy.automated` = `automated`.
fn application(
    ns: &TestNamespace,
    remote: &Remote,
    name: &str,
    path: &str,
    automated: Value,
) -> Application {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name},
        "spec": {
            "project": "default",
            "source": {"repoURL": remote.file_url(), "targetRevision": "main", "path": path},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
            "syncPolicy": {"automated": automated}
        }
    }))
}

/// `kubectl -n <test namespace> args…` against cluster 1, as a person would type it (the
/// control plane's own kubectl when it has one).
fn kubectl(ns: &TestNamespace, args: &[&str]) {
    let beside = support::state_dir().join("bin").join("kubectl");
    let kubectl = if beside.exists() {
        beside
    } else {
        support::kubectl()
    };
    let output = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args(["-n", &ns.name])
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(
        output.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// (sync, health) of the Application.
fn summary(app: &Application) -> (String, String) {
    let status = app.status.clone().unwrap_or_default();
    (
        status.sync.unwrap_or_default().status.as_str().to_owned(),
        status.health.unwrap_or_default().status.as_str().to_owned(),
    )
}

/// The Application's health: its status and message.
fn health(app: &Application) -> (String, String) {
    let health = app
        .status
        .as_ref()
        .and_then(|s| s.health.clone())
        .unwrap_or_default();
    (health.status.as_str().to_owned(), health.message)
}

/// The Application's resource entry for `kind` `name`.
fn resource<'a>(app: &'a Application, kind: &str, name: &str) -> Option<&'a ResourceStatus> {
    app.status
        .as_ref()?
        .resources
        .iter()
        .find(|r| r.kind == kind && r.name == name)
}

/// Waits until `name` is Synced and Healthy.
async fn synced_and_healthy(ns: &TestNamespace, name: &str) {
    wait_until(
        &ns.api::<Application>(),
        name,
        &format!("{name} Synced and Healthy"),
        |app| summary(app) == ("Synced".into(), "Healthy".into()),
    )
    .await;
}

/// Waits at most `within` from `since` until `check` holds for the Application `name`; returns
/// how long it took.
async fn seen(
    ns: &TestNamespace,
    name: &str,
    what: &str,
    since: Instant,
    within: Duration,
    check: impl Fn(&Application) -> bool,
) -> Duration {
    let apps = ns.api::<Application>();
    let left = within.saturating_sub(since.elapsed());
    eventually_within(left, what, async || {
        let app = apps.get(name).await.map_err(|e| e.to_string())?;
        if check(&app) {
            Ok(since.elapsed())
        } else {
            Err(format!("{:?}", app.status))
        }
    })
    .await
}

/// The `Database` `orders` of the test's own kind, as a platform team's manifest has it.
const DATABASE: &str = "apiVersion: live.flotilla.dev/v1\nkind: Database\nmetadata:\n  name: orders\nspec:\n  size: small\n";

/// The test playing the operator of its `Database` kind: it waits for the sync to create
/// `orders`, then writes its `Ready` condition as an operator would.
struct Operator {
    databases: Api<DynamicObject>,
}

impl Operator {
    /// Installs the kind (before the sync needs it).
    async fn install(ns: &TestNamespace) -> Self {
        let kind =
            support::install_kind(&ns.client, "live.flotilla.dev", "Database", "databases").await;
        Self {
            databases: Api::namespaced_with(ns.client.clone(), &ns.name, &kind),
        }
    }

    /// Waits until the sync created `orders`.
    async fn created(&self) {
        eventually_within(support::TIMEOUT, "the Database created", async || {
            self.databases
                .get_opt("orders")
                .await
                .map_err(|e| e.to_string())?
                .ok_or("missing".to_owned())
        })
        .await;
    }

    /// Writes `Ready` = `status` with `reason` and `message`.
    async fn ready(&self, status: &str, reason: &str, message: &str) {
        let status = json!({"status": {"conditions": [
            {"type": "Ready", "status": status, "reason": reason, "message": message}
        ]}});
        self.databases
            .patch_status("orders", &PatchParams::default(), &Patch::Merge(status))
            .await
            .expect("the operator writes status");
    }
}

#[tokio::test]
async fn kubectl_changes_show_through_the_watches_and_self_heal_reverts_them() {
    let ns = setup("live-drift").await;
    let remote = Remote::new("live-drift");
    remote.write("watched/web.yaml", &web("watched"));
    remote.write("healed/web.yaml", &web("healed"));
    remote.push("two webs");
    let _controller = start_resyncing_rarely(&ns);
    let apps = ns.api::<Application>();
    apply(
        &apps,
        &application(&ns, &remote, "watched", "watched", json!({})),
    )
    .await;
    apply(
        &apps,
        &application(&ns, &remote, "healed", "healed", json!({"selfHeal": true})),
    )
    .await;
    synced_and_healthy(&ns, "watched").await;
    synced_and_healthy(&ns, "healed").await;

    let difference = |name: &'static str, field: &'static str| {
        move |app: &Application| {
            summary(app).0 == "OutOfSync"
                && resource(app, "Deployment", name).is_some_and(|r| r.first_difference == field)
        }
    };
    let changed = Instant::now();
    kubectl(&ns, &["scale", "deployment/watched", "--replicas=3"]);
    let scaled = seen(
        &ns,
        "watched",
        "OutOfSync at /spec/replicas",
        changed,
        SEEN_WITHIN,
        difference("watched", "/spec/replicas"),
    )
    .await;

    let changed = Instant::now();
    kubectl(&ns, &["scale", "deployment/watched", "--replicas=1"]);
    seen(
        &ns,
        "watched",
        "Synced again",
        changed,
        SEEN_WITHIN,
        |app| summary(app).0 == "Synced",
    )
    .await;

    let changed = Instant::now();
    kubectl(
        &ns,
        &[
            "set",
            "image",
            "deployment/watched",
            "web=registry.example.com/web:2",
        ],
    );
    let edited = seen(
        &ns,
        "watched",
        "OutOfSync at the image",
        changed,
        SEEN_WITHIN,
        difference("watched", "/spec/template/spec/containers/0/image"),
    )
    .await;

    let changed = Instant::now();
    kubectl(
        &ns,
        &["delete", "configmap/watched-settings", "--wait=false"],
    );
    let deleted = seen(
        &ns,
        "watched",
        "the ConfigMap Missing",
        changed,
        SEEN_WITHIN,
        |app| {
            summary(app).0 == "OutOfSync"
                && resource(app, "ConfigMap", "watched-settings").is_some_and(|r| {
                    r.health
                        .as_ref()
                        .is_some_and(|h| h.status.as_str() == "Missing")
                })
        },
    )
    .await;
    eprintln!("seen after: scale {scaled:?}, set image {edited:?}, delete {deleted:?}");

    let changed = Instant::now();
    kubectl(&ns, &["scale", "deployment/healed", "--replicas=3"]);
    let deployments = ns.api::<Deployment>();
    let healed = eventually_within(HEALED_WITHIN, "healed back to 1 replica", async || {
        let deployment = deployments.get("healed").await.map_err(|e| e.to_string())?;
        let replicas = deployment.spec.and_then(|s| s.replicas);
        (replicas == Some(1))
            .then(|| changed.elapsed())
            .ok_or(format!("{replicas:?}"))
    })
    .await;
    eprintln!("self-heal reverted the scale after {healed:?}");
    // A sync without hooks records its operation with its end, after the apply just seen.
    let operation = eventually_within(HEALED_WITHIN, "the self-heal recorded", async || {
        let healed_app = apps.get("healed").await.map_err(|e| e.to_string())?;
        let history = healed_app.status.as_ref().map_or(0, |s| s.history.len());
        let operation = healed_app.status.and_then(|s| s.operation);
        match operation {
            Some(operation) if history > 1 => Ok(operation),
            other => Err(format!("{history} syncs in history; operation {other:?}")),
        }
    })
    .await;
    assert!(operation.initiated_by.automated);
    assert_eq!(
        operation.sync.self_heal_attempts_count, 1,
        "the first self-heal in a row"
    );
}

#[tokio::test]
async fn a_drift_another_writer_keeps_reapplying_is_reverted_ever_more_slowly() {
    let ns = setup("live-fight").await;
    let remote = Remote::new("live-fight");
    remote.write("fought/web.yaml", &web("fought"));
    remote.push("web");
    let _controller = start_resyncing_rarely(&ns);
    let apps = ns.api::<Application>();
    apply(
        &apps,
        &application(&ns, &remote, "fought", "fought", json!({"selfHeal": true})),
    )
    .await;
    synced_and_healthy(&ns, "fought").await;
    let before = apps.get("fought").await.expect("reads fought");
    let first = before
        .status
        .and_then(|s| s.operation_state)
        .map(|op| op.operation_id)
        .unwrap_or_default();

    // Another writer (an autoscaler, a person with a script) sets 3 replicas whenever it sees
    // another number, until self-heal has reverted it three times.
    let deployments = ns.api::<Deployment>();
    let deadline = Instant::now() + FIGHT_WITHIN;
    // Each self-heal, by operation id: when it started and when it finished.
    let (mut writes, mut heals) = (0_usize, BTreeMap::new());
    while heals.len() < HEALS {
        assert!(
            Instant::now() < deadline,
            "{} self-heals within {FIGHT_WITHIN:?}: {heals:?}",
            heals.len()
        );
        let deployment = deployments
            .get("fought")
            .await
            .expect("reads the Deployment");
        if deployment.spec.and_then(|s| s.replicas) != Some(3) {
            deployments
                .patch(
                    "fought",
                    &PatchParams::apply("other-writer").force(),
                    &Patch::Apply(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                         "metadata": {"name": "fought"}, "spec": {"replicas": 3}})),
                )
                .await
                .expect("scales fought");
            writes += 1;
        }
        let app = apps.get("fought").await.expect("reads fought");
        if let Some(state) = app.status.and_then(|s| s.operation_state)
            && state.operation_id != first
            && let (Some(started), Some(finished)) = (state.started_at, state.finished_at)
        {
            heals.insert(state.operation_id, (started.0, finished.0));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let app = apps.get("fought").await.expect("reads fought");
    let attempts = app
        .status
        .and_then(|s| s.operation)
        .map_or(0, |op| op.sync.self_heal_attempts_count);
    let mut times: Vec<_> = heals.values().copied().collect();
    times.sort();
    eprintln!(
        "{writes} writes of the other writer, {} self-heals {times:?}, the last attempt {attempts}",
        heals.len()
    );
    // Each self-heal in a row waits longer after the end of the one before: 0, 2 s, 6 s
    // (status keeps whole seconds; the controller counts from the stored end).
    for ((pair, wait), index) in times.windows(2).zip([2, 6]).zip(2..) {
        let [(_, finished), (started, _)] = pair else {
            continue;
        };
        let waited = started.duration_since(*finished).as_secs();
        assert!(
            waited >= wait,
            "self-heal {index} started {waited} s after the one before ended, not {wait} s: {times:?}"
        );
    }
    // The other writer only wrote again after each revert.
    assert!(
        writes <= heals.len() + 1,
        "the other writer wrote {writes} times against {} self-heals",
        heals.len()
    );
    assert_eq!(
        usize::try_from(attempts).unwrap(),
        heals.len(),
        "attempts counted in a row"
    );
}

#[tokio::test]
async fn an_operator_resource_going_not_ready_after_the_sync_turns_the_application_progressing() {
    let ns = setup("live-operator").await;
    let operator = Operator::install(&ns).await;
    let remote = Remote::new("live-operator");
    remote.write("orders/database.yaml", DATABASE);
    remote.push("orders database");
    let _controller = start_resyncing_rarely(&ns);
    let apps = ns.api::<Application>();
    apply(
        &apps,
        &application(&ns, &remote, "orders", "orders", json!({})),
    )
    .await;
    operator.created().await;
    operator
        .ready("True", "Provisioned", "3/3 replicas ready")
        .await;
    synced_and_healthy(&ns, "orders").await;

    let changed = Instant::now();
    operator
        .ready("False", "Resizing", "replica 2 catching up")
        .await;
    let after = seen(
        &ns,
        "orders",
        "orders Progressing naming the Database",
        changed,
        SEEN_WITHIN,
        |app| {
            let (status, message) = health(app);
            status == "Progressing"
                && message
                    == format!(
                        "Database {}/orders: Progressing: replica 2 catching up",
                        ns.name
                    )
        },
    )
    .await;
    eprintln!("Ready=False seen after {after:?}");
    let changed = Instant::now();
    operator
        .ready("False", "ReplicaFailed", "replica 2 lost its volume")
        .await;
    seen(
        &ns,
        "orders",
        "orders Degraded",
        changed,
        SEEN_WITHIN,
        |app| summary(app).1 == "Degraded",
    )
    .await;
}

#[tokio::test]
async fn a_pod_of_a_deployment_that_stops_being_ready_turns_the_application_unhealthy() {
    let ns = setup("live-pod").await;
    let remote = Remote::new("live-pod");
    remote.write("web/web.yaml", &web("web"));
    remote.push("web");
    let _controller = start_resyncing_rarely(&ns);
    apply(
        &ns.api::<Application>(),
        &application(&ns, &remote, "web", "web", json!({})),
    )
    .await;
    synced_and_healthy(&ns, "web").await;

    // Its container starts failing (the node simulator's kubelet reports CrashLoopBackOff, as a
    // failing liveness probe would): the pod is no longer ready, and the Deployment controller
    // counts the replica unavailable. Pods are not the Application's objects: only the
    // Deployment's status tells it.
    kubectl(
        &ns,
        &[
            "annotate",
            "pod",
            "-l",
            "app=web",
            "sim.flotilla.dev/fail=true",
        ],
    );
    wait_until(
        &ns.api::<Deployment>(),
        "web",
        "the Deployment counting its replica unavailable",
        |deployment| {
            deployment
                .status
                .as_ref()
                .is_some_and(|s| s.unavailable_replicas.unwrap_or(0) > 0)
        },
    )
    .await;
    let changed = Instant::now();
    let after = seen(
        &ns,
        "web",
        "web Progressing or Degraded, naming the Deployment",
        changed,
        SEEN_WITHIN,
        |app| {
            let (status, message) = health(app);
            matches!(status.as_str(), "Progressing" | "Degraded")
                && message.contains(&format!("Deployment {}/web", ns.name))
        },
    )
    .await;
    eprintln!("unavailable replica seen after {after:?} (from the Deployment's status)");
    assert_eq!(
        summary(&ns.api::<Application>().get("web").await.unwrap()).0,
        "Synced",
        "a pod's readiness is health, not drift"
    );
}

#[tokio::test]
async fn objects_the_running_operation_created_show_as_they_are() {
    let ns = setup("live-operation").await;
    let remote = Remote::new("live-operation");
    // Wave 0 waits for a Deployment whose pods take 20 s to be ready; wave 1 follows.
    remote.write(
        "slow/app.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: slow\nspec:\n  replicas: 1\n  \
         selector: {matchLabels: {app: slow}}\n  template:\n    metadata:\n      labels: {app: slow}\n      \
         annotations: {sim.flotilla.dev/ready-after: 20s}\n    spec:\n      containers: [{name: web, image: \"registry.example.com/web:1\"}]\n\
         ---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: later\n  annotations: {argocd.argoproj.io/sync-wave: \"1\"}\ndata: {k: v}\n",
    );
    remote.push("slow");
    let _controller = start_resyncing_rarely(&ns);
    let apps = ns.api::<Application>();
    apply(&apps, &application(&ns, &remote, "slow", "slow", json!({}))).await;
    let during = wait_until(
        &apps,
        "slow",
        "the Deployment shown Synced while the operation runs",
        |app| {
            let running = app
                .status
                .as_ref()
                .and_then(|s| s.operation_state.as_ref())
                .is_some_and(|op| op.phase == OperationPhase::Running);
            running
                && resource(app, "Deployment", "slow")
                    .is_some_and(|r| r.status.as_str() == "Synced")
        },
    )
    .await;
    let deployment = resource(&during, "Deployment", "slow").expect("listed");
    assert_eq!(
        deployment.health.as_ref().map(|h| h.status.as_str()),
        Some("Progressing"),
        "{deployment:?}"
    );
    let later = resource(&during, "ConfigMap", "later").expect("listed");
    assert_eq!(
        later.status.as_str(),
        "OutOfSync",
        "not applied yet: {later:?}"
    );
    synced_and_healthy(&ns, "slow").await;
}

/// The Application's operation phase, sync, health and health message.
fn outcome(app: &Application) -> (Option<OperationPhase>, String, String, String) {
    let status = app.status.clone().unwrap_or_default();
    let (sync, health) = summary(app);
    (
        status.operation_state.map(|op| op.phase),
        sync,
        health,
        status.health.unwrap_or_default().message,
    )
}

#[tokio::test]
async fn a_load_balancer_and_an_ingress_without_an_address_sync_and_stay_progressing() {
    let ns = setup("live-address").await;
    let remote = Remote::new("live-address");
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/live_state");
    for app in ["helm-guestbook", "kustomize-guestbook"] {
        for entry in walk(&fixtures.join(app)) {
            let relative = entry
                .strip_prefix(&fixtures)
                .expect("inside")
                .to_string_lossy()
                .into_owned();
            remote.write(
                &relative,
                &std::fs::read_to_string(&entry).expect("reads a fixture"),
            );
        }
    }
    remote.push("guestbooks");
    let _controller = start_resyncing_rarely(&ns);
    let apps = ns.api::<Application>();
    for app in ["helm-guestbook", "kustomize-guestbook"] {
        apply(&apps, &application(&ns, &remote, app, app, json!({}))).await;
    }
    let expectations = [
        (
            "helm-guestbook",
            "Service",
            "helm-guestbook-helm-guestbook",
            "waiting for a load balancer address",
        ),
        (
            "kustomize-guestbook",
            "Ingress",
            "kustomize-guestbook-ui",
            "waiting for an ingress address",
        ),
    ];
    for (app, kind, object, reason) in expectations {
        let message = format!("{kind} {}/{object}: Progressing: {reason}", ns.name);
        let reached = wait_until(
            &apps,
            app,
            &format!("{app} Succeeded, Synced, Progressing"),
            |a| {
                outcome(a)
                    == (
                        Some(OperationPhase::Succeeded),
                        "Synced".into(),
                        "Progressing".into(),
                        message.clone(),
                    )
            },
        )
        .await;
        let state = reached
            .status
            .and_then(|s| s.operation_state)
            .expect("an operation");
        assert_eq!(
            state.message, "successfully synced (all tasks run)",
            "{app}"
        );
    }
    // The Deployments became Healthy meanwhile; the address never comes.
    let deployments = ns.api::<Deployment>();
    for name in ["helm-guestbook-helm-guestbook", "kustomize-guestbook-ui"] {
        wait_until(&deployments, name, "available", |d| {
            d.status.as_ref().and_then(|s| s.available_replicas) == Some(1)
        })
        .await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    for (app, _, _, reason) in expectations {
        let now = apps.get(app).await.expect("reads the Application");
        let (_, sync, health, message) = outcome(&now);
        assert_eq!(
            (sync.as_str(), health.as_str()),
            ("Synced", "Progressing"),
            "{app}"
        );
        assert!(message.ends_with(reason), "{app}: {message}");
    }
}

/// The files under `dir`, recursively.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).expect("reads a fixture directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn a_rolling_sync_step_waits_while_an_application_of_it_stays_progressing() {
    let ns = setup("live-rollout").await;
    let remote = Remote::new("live-rollout");
    let fixtures =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/live_state");
    let chart = fixtures.join("helm-guestbook");
    for entry in walk(&chart) {
        let relative = entry
            .strip_prefix(&chart)
            .expect("inside")
            .to_string_lossy()
            .into_owned();
        remote.write(
            &format!("database/{relative}"),
            &std::fs::read_to_string(&entry).expect("reads"),
        );
    }
    remote.write("backend/web.yaml", &web("backend"));
    remote.push("two tiers");
    let _controller = start_resyncing_rarely(&ns);
    let source =
        json!({"repoURL": remote.file_url(), "targetRevision": "main", "path": "{{.component}}"});
    let appset = support::two_tier_appset::two_tier_appset("stack", &ns.name, "source", source);
    apply(
        &ns.api::<flotilla_core::api::ApplicationSet>(),
        &object(appset),
    )
    .await;
    let apps = ns.api::<Application>();
    wait_until(
        &apps,
        "database",
        "database synced and Progressing",
        |app| {
            let (phase, sync, health, _) = outcome(app);
            phase == Some(OperationPhase::Succeeded) && sync == "Synced" && health == "Progressing"
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let backend = apps.get("backend").await.expect("backend generated");
    assert!(
        backend
            .status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_none(),
        "step 2 must wait for step 1 to be Healthy"
    );
    let stack = ns
        .api::<flotilla_core::api::ApplicationSet>()
        .get("stack")
        .await
        .expect("reads the ApplicationSet");
    let text = serde_json::to_string(&stack.status).unwrap_or_default();
    assert!(text.contains("database"), "{text}");
}

#[tokio::test]
async fn a_rolling_sync_notices_a_degraded_application_of_an_earlier_step_through_the_watches() {
    let ns = setup("live-degraded").await;
    let operator = Operator::install(&ns).await;
    let remote = Remote::new("live-degraded");
    remote.write("database/database.yaml", DATABASE);
    // The backend's pods take a while: step 2 is still rolling out when the database degrades.
    remote.write(
        "backend/web.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: backend\nspec:\n  replicas: 1\n  \
         selector: {matchLabels: {app: backend}}\n  template:\n    metadata:\n      labels: {app: backend}\n      \
         annotations: {sim.flotilla.dev/ready-after: 60s}\n    spec:\n      containers: [{name: web, image: \"registry.example.com/web:1\"}]\n",
    );
    remote.push("two tiers");
    let _controller = start_resyncing_rarely(&ns);
    let source =
        json!({"repoURL": remote.file_url(), "targetRevision": "main", "path": "{{.component}}"});
    let appset = support::two_tier_appset::two_tier_appset("stack", &ns.name, "source", source);
    let appsets = ns.api::<flotilla_core::api::ApplicationSet>();
    apply(&appsets, &object(appset)).await;
    operator.created().await;
    operator
        .ready("True", "Provisioned", "3/3 replicas ready")
        .await;
    let apps = ns.api::<Application>();
    wait_until(&apps, "backend", "step 2 opened: backend syncing", |app| {
        app.status
            .as_ref()
            .and_then(|s| s.operation_state.as_ref())
            .is_some()
    })
    .await;

    let changed = Instant::now();
    operator
        .ready("False", "ReplicaFailed", "replica 2 lost its volume")
        .await;
    let condition = |set: &flotilla_core::api::ApplicationSet| {
        serde_json::to_value(&set.status)
            .ok()
            .and_then(|status| status.get("conditions").cloned())
            .unwrap_or_default()
            .to_string()
    };
    let stalled = eventually_within(
        SEEN_WITHIN,
        "the rollout stalled on database Degraded",
        async || {
            let set = appsets.get("stack").await.map_err(|e| e.to_string())?;
            let text = condition(&set);
            text.contains("database Degraded")
                .then(|| changed.elapsed())
                .ok_or(text)
        },
    )
    .await;
    eprintln!("the rollout saw database Degraded after {stalled:?}");
    let explained = support::run_flotilla(&ns, &["rollout", "explain", "stack"]).await;
    let text = String::from_utf8_lossy(&explained.stdout);
    assert!(
        text.contains("database Degraded"),
        "{text}{}",
        String::from_utf8_lossy(&explained.stderr)
    );
    assert!(text.contains("replica 2 lost its volume"), "{text}");
}
