//! RollingSync end to end on the real control plane: `flotilla controller` (ApplicationSet and
//! Application controllers) runs as a process against cluster 1, Applications come from a local
//! git repository and deploy Deployments that the node simulator runs. Every version of the
//! ApplicationSet's status is recorded through a watch, and each Application's `status.history`
//! says when its syncs started and ended; the assertions read those records.

mod browser;
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use browser::Browser;
use flotilla_core::api::application::RevisionHistory;
use flotilla_core::api::application_set::{Approval, OnFailure};
use flotilla_core::api::application_set_status::{
    AnalysisCluster, ApplicationSetStatus, ConditionStatus, ConditionType,
    RolloutApplicationState as State, RolloutStepStatus,
};
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::health::HealthStatus;
use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::events::v1::Event;
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use support::git_remote::{GitDaemon, Remote};
use support::{TestNamespace, apply, eventually, eventually_within, namespace, object};

/// How long a whole rollout may take.
const ROLLOUT_TIMEOUT: Duration = Duration::from_secs(300);

// ---------------------------------------------------------------------------------------------
// A local git repository of components

/// A bare git repository (a remote, as teams have them) with one directory per component,
/// written and pushed to from a clone.
struct Repo {
    remote: Remote,
}

/// How a component's pods behave in the node simulator.
#[derive(Clone, Copy, Default)]
struct Pods {
    fail: bool,
    ready_after: Option<&'static str>,
}

impl Pods {
    fn ready_after(after: &'static str) -> Self {
        Self {
            fail: false,
            ready_after: Some(after),
        }
    }

    /// The pod template annotations that tell the node simulator how to run them.
    fn annotations(self) -> serde_json::Map<String, Value> {
        let mut annotations = serde_json::Map::new();
        if self.fail {
            annotations.insert("sim.flotilla.dev/fail".into(), "true".into());
        }
        if let Some(after) = self.ready_after {
            annotations.insert("sim.flotilla.dev/ready-after".into(), after.into());
        }
        annotations
    }
}

impl Repo {
    fn new() -> Self {
        Self {
            remote: Remote::new("platform"),
        }
    }

    fn url(&self) -> String {
        self.remote.file_url()
    }

    /// Writes `component/` with a ConfigMap carrying `version` and a one-replica Deployment.
    fn component(&self, component: &str, version: &str, pods: Pods) {
        let dir = self.remote.work().join(component);
        std::fs::create_dir_all(&dir).expect("creates the component directory");
        let annotations = pods.annotations();
        let config = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("{component}-config")},
            "data": {"version": version}
        });
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": component},
            "spec": {
                "replicas": 1,
                "progressDeadlineSeconds": 600,
                "selector": {"matchLabels": {"app": component}},
                "template": {
                    "metadata": {"labels": {"app": component}, "annotations": annotations},
                    "spec": {"containers": [{"name": "main", "image": format!("example.com/{component}:{version}")}]}
                }
            }
        });
        for (file, manifest) in [("config.json", config), ("deployment.json", deployment)] {
            std::fs::write(dir.join(file), manifest.to_string()).expect("writes a manifest");
        }
    }

    /// Adds a PreSync hook to `component/`: a Job `<component>-migrate` whose pod runs as `pods`
    /// say (the default delete policy, BeforeHookCreation, keeps it until the next sync).
    fn presync_hook(&self, component: &str, pods: Pods) {
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {
                "name": format!("{component}-migrate"),
                "annotations": {"argocd.argoproj.io/hook": "PreSync"}
            },
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"annotations": pods.annotations()},
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "migrate", "image": format!("example.com/{component}-migrate:1")}]
                    }
                }
            }
        });
        let file = self.remote.work().join(component).join("presync.json");
        std::fs::write(file, job.to_string()).expect("writes the hook");
    }

    /// Commits everything, pushes it, and returns the commit.
    fn commit(&self, message: &str) -> String {
        self.remote.push(message)
    }
}

// ---------------------------------------------------------------------------------------------
// The controller as a process

/// `flotilla controller` for one namespace on cluster 1, logging to the control plane's logs,
/// comparing Applications every 2 s, fetching at every resolve, with its own repository cache.
struct Controller {
    child: Child,
    /// Where it serves `/metrics`, `/healthz` and `/readyz`.
    endpoint: std::net::SocketAddr,
    _cache: tempfile::TempDir,
}

impl Controller {
    fn start(ns: &TestNamespace, identity: &str) -> Self {
        Self::start_with(ns, identity, &[])
    }

    /// [`Self::start`] with more arguments.
    fn start_with(ns: &TestNamespace, identity: &str, extra: &[&str]) -> Self {
        let log = support::controller_log(&ns.name, identity);
        let cache = tempfile::tempdir().expect("a repository cache directory");
        // A port free a moment ago; the controller binds it right away.
        let endpoint = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free port");
        let child = Command::new(env!("CARGO_BIN_EXE_flotilla"))
            .args([
                "controller",
                "--namespace",
                &ns.name,
                "--identity",
                identity,
                "--app-resync",
                "2s",
                // Every resolve fetches: a commit pushed mid-rollout is seen at the next
                // reconcile (the default, 10 s, would let step 3 start on the older commit).
                "--repo-refresh",
                "0s",
                "--metrics-addr",
                &endpoint.to_string(),
                "--repo-cache",
            ])
            .arg(cache.path())
            .arg("--kubeconfig")
            .arg(support::kubeconfig_path(1))
            .args(extra)
            .env("RUST_LOG", support::controller_log_filter())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("starts flotilla controller");
        Self {
            child,
            endpoint,
            _cache: cache,
        }
    }

    /// The whole HTTP response of its endpoint to `GET path`.
    async fn get(&self, path: &str) -> String {
        http_get(self.endpoint, path).await
    }

    /// SIGTERM (the controller releases its Lease) and waits for the exit.
    fn stop(mut self) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("a pid");
        // SAFETY: signalling a child process this test started and has not reaped.
        #[allow(unsafe_code, reason = "a SIGTERM is only sent through kill(2)")]
        unsafe {
            libc::kill(pid, libc::SIGTERM)
        };
        let _ = self.child.wait();
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole HTTP response of the server at `address` to `GET path`.
async fn http_get(address: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("the server accepts connections");
    let request = format!("GET {path} HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("reads");
    response
}

/// `flotilla ARGS... -n NS --kubeconfig <cluster 1>`; returns stdout, failing the test on a
/// non-zero exit.
fn flotilla(ns: &TestNamespace, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .args(args)
        .args(["-n", &ns.name])
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .stdin(Stdio::null())
        .output()
        .expect("runs flotilla");
    assert!(
        out.status.success(),
        "flotilla {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---------------------------------------------------------------------------------------------
// Recording status transitions

/// One stored version of the rollout status: Application → (rollout state, target revisions).
type Snapshot = BTreeMap<String, (State, Vec<String>)>;

/// Every version of an ApplicationSet's status, as a watch delivers them.
struct Recording {
    snapshots: Arc<Mutex<Vec<Snapshot>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Recording {
    fn start(api: &Api<ApplicationSet>, name: &str) -> Self {
        let snapshots = Arc::new(Mutex::new(Vec::<Snapshot>::new()));
        let stream = watcher(
            api.clone(),
            watcher::Config::default().fields(&format!("metadata.name={name}")),
        );
        let recorded = Arc::clone(&snapshots);
        let task = watch_each(stream, move |appset: ApplicationSet| {
            let snapshot = snapshot(appset.status.as_ref());
            let mut all = recorded.lock().expect("not poisoned");
            if all.last() != Some(&snapshot) {
                all.push(snapshot);
            }
        });
        Self { snapshots, task }
    }

    fn snapshots(&self) -> Vec<Snapshot> {
        self.snapshots.lock().expect("not poisoned").clone()
    }

    /// Whether any recorded version passes `check`.
    fn seen(&self, check: impl Fn(&Snapshot) -> bool) -> bool {
        self.snapshots
            .lock()
            .expect("not poisoned")
            .iter()
            .any(check)
    }
}

/// Calls `seen` with every version of an object that `stream` delivers, until aborted.
fn watch_each<K: Send + 'static>(
    stream: impl futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
    mut seen: impl FnMut(K) + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            if let Ok(watcher::Event::Apply(object) | watcher::Event::InitApply(object)) = event {
                seen(object);
            }
        }
    })
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn snapshot(status: Option<&ApplicationSetStatus>) -> Snapshot {
    status
        .map(|s| {
            s.application_status
                .iter()
                .map(|e| {
                    (
                        e.application.clone(),
                        (e.status, e.target_revisions.clone()),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn in_flight(state: State) -> bool {
    matches!(state, State::Pending | State::Progressing)
}

/// The state of `app` in `snapshot` (`Waiting` when absent).
fn state_of(snapshot: &Snapshot, app: &str) -> (State, Vec<String>) {
    snapshot
        .get(app)
        .cloned()
        .unwrap_or((State::Waiting, Vec::new()))
}

// ---------------------------------------------------------------------------------------------
// Setup and waits

/// Starts the controller (as `identity`), records the ApplicationSet's status, and applies it.
async fn start_rollout(
    ns: &TestNamespace,
    identity: &str,
    appset: &ApplicationSet,
) -> (Controller, Api<ApplicationSet>, Recording) {
    let controller = Controller::start(ns, identity);
    let appsets: Api<ApplicationSet> = ns.api();
    let recording = Recording::start(&appsets, &appset.name_any());
    apply(&appsets, appset).await;
    (controller, appsets, recording)
}

/// A namespace with the CRDs installed, the platform team's AppProject `platform` (its
/// Applications name it, and the controller refuses Applications of a project that does not
/// exist, as Argo CD does) and a repository.
async fn setup(label: &str) -> (TestNamespace, Repo) {
    let ns = namespace(1, label).await;
    support::install_flotilla_crds(&ns.client).await;
    support::permissive_project(&ns, "platform").await;
    (ns, Repo::new())
}

/// A step selecting `key In [values]` with `maxUpdate`.
fn step(key: &str, values: &[&str], max_update: Value) -> Value {
    json!({"matchExpressions": [{"key": key, "operator": "In", "values": values}], "maxUpdate": max_update})
}

/// A RollingSync ApplicationSet `platform-stack`: one `generator`, the `rollingSync` strategy,
/// and a template with `metadata` whose Applications deploy `path` of `repo` to `server`, into
/// the test namespace.
fn rolling_appset(
    ns: &TestNamespace,
    repo: &Repo,
    generator: Value,
    rolling_sync: Value,
    metadata: Value,
    (path, server): (&str, &str),
) -> ApplicationSet {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "platform-stack"},
        "spec": {
            "generators": [generator],
            "strategy": {"type": "RollingSync", "rollingSync": rolling_sync},
            "template": {
                "metadata": metadata,
                "spec": {
                    "project": "platform",
                    "source": {"repoURL": repo.url(), "targetRevision": "main", "path": path},
                    "destination": {"server": server, "namespace": ns.name}
                }
            }
        }
    }))
}

/// The seed's three-tier ApplicationSet (Go templates): `platform-{database,backend,frontend}`
/// labelled with priority 1, 2, 3, one step per priority, automated sync in the template (which
/// RollingSync overrides).
fn three_tier(
    ns: &TestNamespace,
    repo: &Repo,
    paused: bool,
    deadline: Option<&str>,
) -> ApplicationSet {
    let mut rolling = json!({"steps": [
        step("priority", &["1"], json!("100%")),
        step("priority", &["2"], json!("100%")),
        step("priority", &["3"], json!("100%")),
    ]});
    if let Some(deadline) = deadline {
        rolling["progressDeadline"] = json!(deadline);
    }
    let elements = json!([
        {"component": "database", "priority": "1"},
        {"component": "backend", "priority": "2"},
        {"component": "frontend", "priority": "3"},
    ]);
    let mut appset = rolling_appset(
        ns,
        repo,
        json!({"list": {"elements": elements}}),
        rolling,
        json!({"name": "platform-{{.component}}", "labels": {"priority": "{{.priority}}"}}),
        ("{{.component}}", IN_CLUSTER),
    );
    let spec = &mut appset.spec;
    spec.go_template = true;
    spec.go_template_options = vec!["missingkey=error".into()];
    if let Some(strategy) = spec.strategy.as_mut() {
        strategy.paused = paused;
    }
    spec.template.spec.sync_policy = Some(object(json!({"automated": {"prune": true}})));
    appset
}

/// The cluster the controller runs in.
const IN_CLUSTER: &str = "https://kubernetes.default.svc";

/// Waits until `check` holds for the stored ApplicationSet, showing its status on timeout.
async fn wait_for_appset(
    api: &Api<ApplicationSet>,
    name: &str,
    what: &str,
    timeout: Duration,
    check: impl Fn(&ApplicationSetStatus) -> bool,
) -> ApplicationSetStatus {
    eventually_within(timeout, what, async || {
        let appset = api.get(name).await.map_err(|e| e.to_string())?;
        match appset.status {
            Some(status) if check(&status) => Ok(status),
            other => Err(format!("{other:#?}")),
        }
    })
    .await
}

/// The stored status of the ApplicationSet `platform-stack`.
async fn stored_status(api: &Api<ApplicationSet>) -> ApplicationSetStatus {
    api.get("platform-stack")
        .await
        .expect("reads the ApplicationSet")
        .status
        .unwrap_or_default()
}

/// The `RolloutProgressing` condition's (status, reason, message).
fn progressing(status: &ApplicationSetStatus) -> Option<(ConditionStatus, String, String)> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutProgressing)
        .map(|c| (c.status, c.reason.clone(), c.message.clone()))
}

/// Every Application of `apps` Healthy in the rollout on `revision`, and the rollout complete.
fn complete_on(status: &ApplicationSetStatus, apps: &[&str], revision: &str) -> bool {
    let snapshot = snapshot(Some(status));
    progressing(status).is_some_and(|(_, reason, _)| reason == "ApplicationSetRolloutComplete")
        && apps.iter().all(|app| {
            let (state, target) = state_of(&snapshot, app);
            state == State::Healthy && target == [revision.to_string()]
        })
}

async fn wait_complete(api: &Api<ApplicationSet>, name: &str, apps: &[&str], revision: &str) {
    wait_for_appset(
        api,
        name,
        &format!("the rollout of {apps:?} complete on {revision}"),
        ROLLOUT_TIMEOUT,
        |s| complete_on(s, apps, revision),
    )
    .await;
}

/// Each Application's `status.history`.
async fn histories(ns: &TestNamespace) -> BTreeMap<String, Vec<RevisionHistory>> {
    ns.api::<Application>()
        .list(&ListParams::default())
        .await
        .expect("lists Applications")
        .items
        .into_iter()
        .map(|app| {
            let name = app.name_any();
            (name, app.status.map(|s| s.history).unwrap_or_default())
        })
        .collect()
}

/// The first sync of `app`: (started, finished) in seconds, checking its revision and initiator.
/// (An Application seen OutOfSync again later is synced again, in order; only the first sync
/// shows the order of promotion.)
fn first_sync(
    histories: &BTreeMap<String, Vec<RevisionHistory>>,
    app: &str,
    revision: &str,
) -> (i64, i64) {
    let entry = histories
        .get(app)
        .and_then(|history| history.first())
        .unwrap_or_else(|| panic!("{app} was synced: {histories:#?}"));
    sync_window(entry, app, revision)
}

fn sync_window(entry: &RevisionHistory, app: &str, revision: &str) -> (i64, i64) {
    assert_eq!(entry.revision, revision, "{app} synced {revision}");
    assert_eq!(
        entry.initiated_by.username, "rollout/platform-stack",
        "{app} was synced by the rollout"
    );
    let started = entry
        .deploy_started_at
        .as_ref()
        .unwrap_or_else(|| panic!("{app}: history records the start"))
        .0
        .as_second();
    (started, entry.deployed_at.0.as_second())
}

const TIERS: [&str; 3] = ["platform-database", "platform-backend", "platform-frontend"];

fn tier_components(repo: &Repo, version: &str, backend: Pods) {
    repo.component("database", version, Pods::default());
    repo.component("backend", version, backend);
    repo.component("frontend", version, Pods::default());
}

/// Every promotion of a `later` Application (a snapshot where it becomes Pending or Progressing)
/// happened while its `earlier` one was Healthy on the same target revision.
fn assert_promoted_after(snapshots: &[Snapshot], pairs: &[(&str, &str)]) {
    for (index, pair) in snapshots.windows(2).enumerate() {
        let [before, after] = pair else { continue };
        for (later, earlier) in pairs {
            let (state, target) = state_of(after, later);
            if in_flight(state) && !in_flight(state_of(before, later).0) {
                assert_eq!(
                    state_of(after, earlier),
                    (State::Healthy, target.clone()),
                    "snapshot {}: {later} {state:?} on {target:?} before {earlier} was Healthy on it: {after:#?}",
                    index + 1,
                );
            }
        }
    }
}

/// Each tier is promoted only while every earlier tier is Healthy on the same revision.
fn assert_tiers_in_order(snapshots: &[Snapshot]) {
    assert_promoted_after(
        snapshots,
        &[
            (TIERS[1], TIERS[0]),
            (TIERS[2], TIERS[1]),
            (TIERS[2], TIERS[0]),
        ],
    );
}

// ---------------------------------------------------------------------------------------------
// 1. The seed's three tiers

/// The three tiers at v1 rolled out by a controller that goes on running.
struct RolledOut {
    ns: TestNamespace,
    repo: Repo,
    commit: String,
    controller: Controller,
    appsets: Api<ApplicationSet>,
    recording: Recording,
}

/// Rolls the three tiers out at v1 in a namespace labelled `label`, with controller `identity`.
async fn three_tiers_rolled_out(label: &str, identity: &str) -> RolledOut {
    let (ns, repo) = setup(label).await;
    tier_components(&repo, "v1", Pods::default());
    let commit = repo.commit("v1");
    let (controller, appsets, recording) =
        start_rollout(&ns, identity, &three_tier(&ns, &repo, false, None)).await;
    wait_complete(&appsets, "platform-stack", &TIERS, &commit).await;
    RolledOut {
        ns,
        repo,
        commit,
        controller,
        appsets,
        recording,
    }
}

#[tokio::test]
async fn three_tiers_sync_database_then_backend_then_frontend() {
    let RolledOut {
        ns,
        repo: _repo,
        commit,
        controller,
        appsets: _,
        recording,
    } = three_tiers_rolled_out("rollout-tiers", "tiers").await;

    let histories = histories(&ns).await;
    let [database, backend, frontend] = TIERS.map(|app| first_sync(&histories, app, &commit));
    assert!(
        backend.0 >= database.1,
        "backend started after database finished: {database:?} {backend:?}"
    );
    assert!(
        frontend.0 >= backend.1,
        "frontend started after backend finished: {backend:?} {frontend:?}"
    );
    let snapshots = recording.snapshots();
    assert_tiers_in_order(&snapshots);
    for app in TIERS {
        assert!(
            snapshots.iter().any(|s| in_flight(state_of(s, app).0)),
            "{app} was seen Pending or Progressing: {snapshots:#?}"
        );
    }

    // Live explain exports the state it used; replaying that file explains the same decision.
    let export = ns_file(&ns, "state.yaml");
    let export_arg = export.display().to_string();
    let explain = |flag: &str| {
        let args = [
            "rollout",
            "explain",
            "platform-stack",
            "-o",
            "json",
            flag,
            &export_arg,
        ];
        flotilla(&ns, &args)
    };
    let live = explain("--export");
    let replayed = explain("--state");
    assert_eq!(live, replayed);
    let live: Value = serde_json::from_str(&live).expect("explain prints JSON");
    assert_eq!(live["steps"]["2"], json!(["platform-backend"]));
    assert_eq!(live["syncTriggered"], json!([]));
    let table = flotilla(&ns, &["rollout", "status", "platform-stack"]);
    for app in TIERS {
        assert!(table.contains(app), "{table}");
    }

    // The process's endpoint: probes, and metrics with reconcile durations.
    assert!(controller.get("/healthz").await.starts_with("HTTP/1.1 200"));
    assert!(controller.get("/readyz").await.starts_with("HTTP/1.1 200"));
    let metrics = controller.get("/metrics").await;
    for family in [
        "flotilla_reconcile_duration_seconds_count{controller=\"Application\"}",
        "flotilla_reconcile_duration_seconds_count{controller=\"ApplicationSet\"}",
        "flotilla_sync_operations_total{result=\"Succeeded\"}",
        "flotilla_applications{sync=",
        "flotilla_leader 1",
    ] {
        assert!(metrics.contains(family), "{family} in {metrics}");
    }
    controller.stop();
}

/// A file named after the namespace in the system temporary directory.
fn ns_file(ns: &TestNamespace, name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{}-{name}", ns.name))
}

// ---------------------------------------------------------------------------------------------
// 2. maxUpdate 25% of eight

#[tokio::test]
async fn a_quarter_of_eight_means_two_at_a_time() {
    let (ns, repo) = setup("rollout-quarter").await;
    let names: Vec<String> = (0..8).map(|i| format!("web-{i}")).collect();
    for name in &names {
        repo.component(name, "v1", Pods::ready_after("1s"));
    }
    let commit = repo.commit("v1");
    let elements: Vec<Value> = names.iter().map(|n| json!({"component": n})).collect();
    let appset = rolling_appset(
        &ns,
        &repo,
        json!({"list": {"elements": elements}}),
        json!({"steps": [step("tier", &["web"], json!("25%"))]}),
        json!({"name": "{{component}}", "labels": {"tier": "web"}}),
        ("{{component}}", IN_CLUSTER),
    );
    let (controller, appsets, recording) = start_rollout(&ns, "quarter", &appset).await;
    let apps: Vec<&str> = names.iter().map(String::as_str).collect();
    wait_complete(&appsets, "platform-stack", &apps, &commit).await;

    let snapshots = recording.snapshots();
    let most = snapshots
        .iter()
        .map(|s| s.values().filter(|(state, _)| in_flight(*state)).count())
        .max()
        .unwrap_or(0);
    assert_eq!(
        most, 2,
        "at most two (and at some point two) in flight: {snapshots:#?}"
    );
    let histories = histories(&ns).await;
    for app in &apps {
        first_sync(&histories, app, &commit);
        // Synced once: a reconcile of a watched copy that still showed the finished operation
        // Running used to resume it, a second sync at the same revision.
        assert_eq!(
            histories[*app].len(),
            1,
            "{app} synced once: {histories:#?}"
        );
    }
    controller.stop();
}

// ---------------------------------------------------------------------------------------------
// 3. A failing database stalls the rollout

#[tokio::test]
async fn a_failing_database_stalls_the_rollout_within_its_deadline() {
    let (ns, repo) = setup("rollout-stall").await;
    repo.component(
        "database",
        "v1",
        Pods {
            fail: true,
            ..Pods::default()
        },
    );
    repo.component("backend", "v1", Pods::default());
    repo.component("frontend", "v1", Pods::default());
    repo.commit("v1");
    let (controller, appsets, recording) =
        start_rollout(&ns, "stall", &three_tier(&ns, &repo, false, Some("10s"))).await;

    wait_for_appset(
        &appsets,
        "platform-stack",
        "database promoted",
        ROLLOUT_TIMEOUT,
        |s| in_flight(state_of(&snapshot(Some(s)), TIERS[0]).0),
    )
    .await;
    let stalled = wait_for_appset(
        &appsets,
        "platform-stack",
        "RolloutProgressing=False RolloutStalled",
        // Generous: the deadline is 10 s, the machine's speed is not asserted.
        ROLLOUT_TIMEOUT,
        |s| progressing(s).is_some_and(|(_, reason, _)| reason == "RolloutStalled"),
    )
    .await;
    let (status, _, message) = progressing(&stalled).expect("the condition");
    assert_eq!(status, ConditionStatus::False);
    assert!(
        message.contains("platform-database")
            && ["progressDeadline", "Degraded", "sync Failed"]
                .iter()
                .any(|why| message.contains(why)),
        "the condition names the database and why: {message}"
    );

    // Later steps stay closed: give the controller time to (wrongly) promote them.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let apps = ns.api::<Application>();
    for app in &TIERS[1..] {
        let app = apps.get(app).await.expect("reads the Application");
        let status = app.status.clone().unwrap_or_default();
        assert!(
            status.operation_state.is_none()
                && status.history.is_empty()
                && app.spec.operation.is_none(),
            "{} never synced: {status:#?}",
            app.name_any()
        );
    }
    for snapshot in recording.snapshots() {
        for app in &TIERS[1..] {
            assert_eq!(state_of(&snapshot, app).0, State::Waiting, "{snapshot:#?}");
        }
    }
    let events: Api<Event> = ns.api();
    let events = events
        .list(&ListParams::default())
        .await
        .expect("lists Events");
    assert!(
        events.items.iter().any(|e| {
            e.reason.as_deref() == Some("RolloutStalled")
                && e.type_.as_deref() == Some("Warning")
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("platform-stack")
        }),
        "a RolloutStalled Warning Event on the ApplicationSet: {:#?}",
        events.items
    );
    controller.stop();
}

// ---------------------------------------------------------------------------------------------
// 4. Staging, then prod, across two clusters

#[tokio::test]
async fn prod_syncs_only_after_staging_is_healthy_on_the_same_revision() {
    let (ns, repo) = setup("rollout-clusters").await;
    // The destination namespace must exist on the second cluster too.
    let cluster2 = support::client(2).await;
    support::require_node_sim(&cluster2, 2).await;
    let remote_ns: Namespace = object(json!({"metadata": {"name": ns.name}}));
    Api::<Namespace>::all(cluster2.clone())
        .create(&PostParams::default(), &remote_ns)
        .await
        .expect("creates the namespace on cluster 2");
    repo.component("web", "v1", Pods::default());
    let commit = repo.commit("v1");
    for (cluster, env) in [(1u8, "staging"), (2, "prod")] {
        apply(&ns.api::<Secret>(), &cluster_secret(cluster, ("env", env))).await;
    }
    let appset = rolling_appset(
        &ns,
        &repo,
        json!({"clusters": {"selector": {"matchExpressions": [{"key": "env", "operator": "Exists"}]}}}),
        json!({"steps": [step("env", &["staging"], json!(1)), step("env", &["prod"], json!(1))]}),
        json!({"name": "web-{{metadata.labels.env}}", "labels": {"env": "{{metadata.labels.env}}"}}),
        ("web", "{{server}}"),
    );
    let (controller, appsets, recording) = start_rollout(&ns, "clusters", &appset).await;
    wait_complete(
        &appsets,
        "platform-stack",
        &["web-prod", "web-staging"],
        &commit,
    )
    .await;

    let histories = histories(&ns).await;
    let staging = first_sync(&histories, "web-staging", &commit);
    let prod = first_sync(&histories, "web-prod", &commit);
    assert!(
        prod.0 >= staging.1,
        "prod started after staging finished: {staging:?} {prod:?}"
    );
    assert_promoted_after(&recording.snapshots(), &[("web-prod", "web-staging")]);
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(cluster2, &ns.name);
    deployments
        .get("web")
        .await
        .expect("prod deployed on cluster 2");
    controller.stop();
}

/// An Argo CD cluster Secret `cluster-<value>` for test cluster `n`, labelled `key: value`.
fn cluster_secret(cluster: u8, (key, value): (&str, &str)) -> Secret {
    let (server, ca_data, token) = support::cluster_credentials(cluster);
    let config = json!({"bearerToken": token, "tlsClientConfig": {"caData": ca_data}});
    object(json!({
        "metadata": {
            "name": format!("cluster-{value}"),
            "labels": {"argocd.argoproj.io/secret-type": "cluster", key: value}
        },
        "stringData": {"name": value, "server": server, "config": config.to_string()}
    }))
}

/// Two regions: cluster 1 registered as `east`, cluster 2 (its node simulator running, the
/// test namespace created there) as `west`, both by their server URL. Returns cluster 2's
/// client.
async fn two_regions(ns: &TestNamespace) -> kube::Client {
    let cluster2 = support::client(2).await;
    support::require_node_sim(&cluster2, 2).await;
    let remote_ns: Namespace = object(json!({"metadata": {"name": ns.name}}));
    Api::<Namespace>::all(cluster2.clone())
        .create(&PostParams::default(), &remote_ns)
        .await
        .expect("creates the namespace on cluster 2");
    for (cluster, region) in [(1u8, "east"), (2, "west")] {
        apply(
            &ns.api::<Secret>(),
            &cluster_secret(cluster, ("region", region)),
        )
        .await;
    }
    cluster2
}

/// Every registered region: the clusters generator's selector.
fn every_region() -> Value {
    json!({"clusters": {"selector": {"matchExpressions": [{"key": "region", "operator": "Exists"}]}}})
}

// ---------------------------------------------------------------------------------------------
// 5. A commit landing mid-rollout

#[tokio::test]
async fn a_commit_mid_rollout_reaches_step_three_only_after_steps_one_and_two() {
    let (ns, repo) = setup("rollout-commit").await;
    let slow = Pods::ready_after("6s");
    tier_components(&repo, "v1", slow);
    let first = repo.commit("v1");
    let (controller, appsets, recording) =
        start_rollout(&ns, "commit", &three_tier(&ns, &repo, false, None)).await;
    wait_for_appset(
        &appsets,
        "platform-stack",
        "backend Progressing",
        ROLLOUT_TIMEOUT,
        |s| state_of(&snapshot(Some(s)), TIERS[1]).0 == State::Progressing,
    )
    .await;
    tier_components(&repo, "v2", slow);
    let second = repo.commit("v2");
    wait_complete(&appsets, "platform-stack", &TIERS, &second).await;

    assert_tiers_in_order(&recording.snapshots());
    let histories = histories(&ns).await;
    let on_second = |app: &str| {
        let entry = histories[app]
            .iter()
            .find(|h| h.revision == second)
            .unwrap_or_else(|| panic!("{app} synced {second}: {:#?}", histories[app]));
        sync_window(entry, app, &second)
    };
    let [database, backend, frontend] = TIERS.map(on_second);
    assert!(
        frontend.0 >= database.1 && frontend.0 >= backend.1,
        "frontend started {second} after database and backend finished it: {database:?} {backend:?} {frontend:?}"
    );
    let frontend_revisions: Vec<&str> = histories[TIERS[2]]
        .iter()
        .map(|h| h.revision.as_str())
        .collect();
    assert_eq!(
        frontend_revisions,
        [second.as_str()],
        "frontend never synced {first}"
    );
    controller.stop();
}

// ---------------------------------------------------------------------------------------------
// 6. Pause, resume, and a controller restart

#[tokio::test]
async fn pause_holds_promotion_and_a_restart_continues_from_status() {
    let (ns, repo) = setup("rollout-pause").await;
    tier_components(&repo, "v1", Pods::ready_after("4s"));
    let commit = repo.commit("v1");
    let (controller, appsets, recording) =
        start_rollout(&ns, "pause-1", &three_tier(&ns, &repo, true, None)).await;

    wait_for_appset(
        &appsets,
        "platform-stack",
        "the rollout paused",
        ROLLOUT_TIMEOUT,
        |s| progressing(s).is_some_and(|(_, reason, _)| reason == "RolloutPaused"),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        histories(&ns).await.values().all(Vec::is_empty),
        "nothing synced while paused"
    );
    assert!(
        recording
            .snapshots()
            .iter()
            .flat_map(|s| s.values())
            .all(|(state, _)| *state == State::Waiting),
        "nothing promoted while paused"
    );

    flotilla(&ns, &["rollout", "resume", "platform-stack"]);
    wait_for_appset(
        &appsets,
        "platform-stack",
        "backend in flight",
        ROLLOUT_TIMEOUT,
        |s| in_flight(state_of(&snapshot(Some(s)), TIERS[1]).0),
    )
    .await;
    flotilla(&ns, &["rollout", "pause", "platform-stack"]);
    let database_syncs = histories(&ns).await[TIERS[0]].len();
    controller.stop();
    let controller = Controller::start(&ns, "pause-2");
    // The running backend sync finishes; the frontend is not promoted.
    wait_for_appset(
        &appsets,
        "platform-stack",
        "backend Healthy while paused",
        ROLLOUT_TIMEOUT,
        |s| state_of(&snapshot(Some(s)), TIERS[1]).0 == State::Healthy,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let status = stored_status(&appsets).await;
    assert_eq!(
        state_of(&snapshot(Some(&status)), TIERS[2]).0,
        State::Waiting
    );
    let after_restart = histories(&ns).await;
    assert!(
        after_restart[TIERS[2]].is_empty(),
        "frontend not synced while paused"
    );
    assert_eq!(
        after_restart[TIERS[0]].len(),
        database_syncs,
        "the restarted controller did not sync the Healthy database again"
    );

    flotilla(&ns, &["rollout", "resume", "platform-stack"]);
    wait_complete(&appsets, "platform-stack", &TIERS, &commit).await;
    let histories = histories(&ns).await;
    for app in TIERS {
        first_sync(&histories, app, &commit);
    }
    assert_tiers_in_order(&recording.snapshots());
    controller.stop();
}

// ---------------------------------------------------------------------------------------------
// 6b. bakeTime (issue 33)

/// The three tiers in two regions (issue 33's first test): a clusters × list matrix generates
/// `platform-{database,backend,frontend}-{east,west}` (east on cluster 1, west on cluster 2),
/// one step per tier taking both regions at once, step 1 (the databases) baking `bake`.
fn three_tiers_two_regions(ns: &TestNamespace, repo: &Repo, bake: &str) -> ApplicationSet {
    let tiers = json!({"list": {"elements": [
        {"component": "database", "priority": "1"},
        {"component": "backend", "priority": "2"},
        {"component": "frontend", "priority": "3"},
    ]}});
    let mut rolling = json!({"steps": [
        step("priority", &["1"], json!("100%")),
        step("priority", &["2"], json!("100%")),
        step("priority", &["3"], json!("100%")),
    ]});
    rolling["steps"][0]["bakeTime"] = json!(bake);
    let mut appset = rolling_appset(
        ns,
        repo,
        json!({"matrix": {"generators": [every_region(), tiers]}}),
        rolling,
        json!({
            "name": "platform-{{component}}-{{metadata.labels.region}}",
            "labels": {"priority": "{{priority}}", "region": "{{metadata.labels.region}}"}
        }),
        ("{{component}}", "{{server}}"),
    );
    appset.spec.template.spec.sync_policy = Some(object(json!({"automated": {"prune": true}})));
    appset
}

/// The Applications of `tier` (`database`, `backend`, `frontend`) in both regions.
fn regional(tier: &str) -> [String; 2] {
    ["east", "west"].map(|region| format!("platform-{tier}-{region}"))
}

/// Every Application of the two-region stack.
fn every_regional() -> Vec<String> {
    ["database", "backend", "frontend"]
        .iter()
        .flat_map(|tier| regional(tier))
        .collect()
}

/// Step 1's record in `status.rolloutSteps`.
fn step_one(status: &ApplicationSetStatus) -> Option<&RolloutStepStatus> {
    status.rollout_steps.iter().find(|record| record.step == 1)
}

/// Waits until step 1 bakes and returns when its bake started (seconds).
async fn wait_baking(appsets: &Api<ApplicationSet>) -> i64 {
    let status = wait_for_appset(
        appsets,
        "platform-stack",
        "step 1 baking",
        ROLLOUT_TIMEOUT,
        |s| progressing(s).is_some_and(|(_, reason, _)| reason == "StepBaking"),
    )
    .await;
    step_one(&status)
        .and_then(|record| record.bake_started_at.as_ref())
        .expect("the bake's start is in status")
        .0
        .as_second()
}

/// Three tiers × two regions, a 20 s bake on the databases: the backends (both regions) start
/// at least 20 s after the bake began, which began once both databases were Healthy; the
/// controller, SIGKILLed during the bake, is restarted and resumes the same bake (its start
/// unchanged) and completes it exactly once.
#[tokio::test]
async fn a_bake_delays_the_next_step_and_a_killed_controller_resumes_it_once() {
    let (ns, repo) = setup("rollout-bake").await;
    let cluster2 = two_regions(&ns).await;
    tier_components(&repo, "v1", Pods::default());
    let commit = repo.commit("v1");
    let (controller, appsets, recording) =
        start_rollout(&ns, "bake-1", &three_tiers_two_regions(&ns, &repo, "20s")).await;
    let bake_started = wait_baking(&appsets).await;
    let explain = flotilla(&ns, &["rollout", "explain", "platform-stack"]);
    assert!(
        explain.contains("Step 1: Baking (maxUpdate 100%: 0/2 in flight, bakeTime 20s)"),
        "{explain}"
    );
    assert!(explain.contains("  bakes until "), "{explain}");
    // SIGKILL mid-bake (Drop kills), then a new controller.
    drop(controller);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let during = histories(&ns).await;
    for backend in regional("backend") {
        assert!(
            during[&backend].is_empty(),
            "{backend} did not sync during the bake"
        );
    }
    let controller = Controller::start(&ns, "bake-2");
    let all = every_regional();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    wait_complete(&appsets, "platform-stack", &all, &commit).await;
    let status = stored_status(&appsets).await;
    let record = step_one(&status).expect("step 1's record");
    assert_eq!(
        record.bake_started_at.as_ref().map(|t| t.0.as_second()),
        Some(bake_started),
        "the restarted controller resumed the bake: {record:?}"
    );
    let baked_at = record.baked_at.as_ref().expect("baked").0.as_second();
    assert!(baked_at > bake_started + 20, "{record:?}");
    let histories = histories(&ns).await;
    for database in regional("database") {
        let synced = first_sync(&histories, &database, &commit);
        assert!(
            bake_started >= synced.1 - 1,
            "bake after {database}'s sync: {synced:?} {bake_started}"
        );
    }
    for backend in regional("backend") {
        let started = first_sync(&histories, &backend, &commit).0;
        assert!(
            started >= bake_started + 20,
            "{backend} started {}s after the bake began",
            started - bake_started
        );
    }
    for app in &all {
        assert_eq!(
            histories[*app].len(),
            1,
            "{app} synced exactly once: {histories:#?}"
        );
    }
    let snapshots = recording.snapshots();
    for backend in regional("backend") {
        let promotions = snapshots
            .windows(2)
            .filter(|pair| {
                in_flight(state_of(&pair[1], &backend).0)
                    && !in_flight(state_of(&pair[0], &backend).0)
            })
            .count();
        assert_eq!(promotions, 1, "{backend} was promoted once: {snapshots:#?}");
    }
    let mut order = Vec::new();
    for (later, earlier) in [("backend", "database"), ("frontend", "backend")] {
        for l in regional(later) {
            for e in regional(earlier) {
                order.push((l.clone(), e));
            }
        }
    }
    let order: Vec<(&str, &str)> = order
        .iter()
        .map(|(l, e)| (l.as_str(), e.as_str()))
        .collect();
    assert_promoted_after(&snapshots, &order);
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(cluster2, &ns.name);
    for tier in ["database", "backend", "frontend"] {
        deployments
            .get(tier)
            .await
            .unwrap_or_else(|e| panic!("{tier} deployed on cluster 2 (west): {e}"));
    }
    controller.stop();
}

/// Three tiers × two regions: a pod of the west database (on cluster 2) that turns unready
/// during a 10-minute bake fails step 1: the ApplicationSet says StepFailed naming that
/// database, no backend syncs, and the failure stays when the pod is ready again.
#[tokio::test]
async fn a_pod_unready_during_the_bake_fails_the_step() {
    let (ns, repo) = setup("rollout-bake-fail").await;
    let cluster2 = two_regions(&ns).await;
    tier_components(&repo, "v1", Pods::default());
    repo.commit("v1");
    let (controller, appsets, _recording) = start_rollout(
        &ns,
        "bake-fail",
        &three_tiers_two_regions(&ns, &repo, "10m"),
    )
    .await;
    wait_baking(&appsets).await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(cluster2, &ns.name);
    let listed = pods
        .list(&ListParams::default().labels("app=database"))
        .await
        .expect("lists the west database pods");
    let [pod] = listed.items.as_slice() else {
        panic!("one database pod on cluster 2: {listed:?}")
    };
    let crash = json!({"metadata": {"annotations": {"sim.flotilla.dev/fail": "true"}}});
    pods.patch(
        &pod.name_any(),
        &PatchParams::default(),
        &Patch::Merge(&crash),
    )
    .await
    .expect("makes the pod fail");
    let status = wait_for_appset(
        &appsets,
        "platform-stack",
        "step 1 failed",
        ROLLOUT_TIMEOUT,
        |s| progressing(s).is_some_and(|(_, reason, _)| reason == "StepFailed"),
    )
    .await;
    let (condition, _, message) = progressing(&status).expect("the condition");
    assert_eq!(condition, ConditionStatus::False);
    assert!(
        message.starts_with("step 1 of 3 failed: platform-database-west ")
            && message.contains("left Healthy during the 10m0s bake started at ")
            && !message.contains("platform-database-east"),
        "{message}"
    );
    let record = step_one(&status).expect("step 1's record");
    assert!(
        record.failed_at.is_some() && record.baked_at.is_none(),
        "{record:?}"
    );
    let explain = flotilla(&ns, &["rollout", "explain", "platform-stack"]);
    assert!(explain.contains("Step 1: Failed"), "{explain}");
    // A new pod, without the annotation, replaces it and turns ready.
    pods.delete(&pod.name_any(), &Default::default())
        .await
        .expect("deletes the failing pod");
    tokio::time::sleep(Duration::from_secs(8)).await;
    let status = stored_status(&appsets).await;
    assert_eq!(
        progressing(&status).map(|(_, reason, _)| reason).as_deref(),
        Some("StepFailed"),
        "the failure stays once the database is Healthy again"
    );
    let histories = histories(&ns).await;
    for backend in regional("backend") {
        assert!(histories[&backend].is_empty(), "{backend} never synced");
    }
    controller.stop();
}

/// Step 2 (the backend) with `approval: manual`: after the database, the rollout waits — the
/// condition, `status.rolloutSteps`, `rollout explain` and the web view say so, and nothing of
/// step 2 syncs — until `flotilla rollout promote`; then it proceeds and the controller removes
/// the annotation.
#[tokio::test]
async fn a_manual_step_waits_for_rollout_promote_then_proceeds() {
    let (ns, repo) = setup("rollout-approval").await;
    tier_components(&repo, "v1", Pods::default());
    let commit = repo.commit("v1");
    let mut appset = three_tier(&ns, &repo, false, None);
    appset
        .spec
        .strategy
        .as_mut()
        .and_then(|strategy| strategy.rolling_sync.as_mut())
        .expect("a RollingSync strategy")
        .steps[1]
        .approval = Some(Approval::Manual);
    let ui = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let controller = Controller::start_with(&ns, "approval", &["--ui-addr", &ui.to_string()]);
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, &appset).await;
    let status = wait_for_appset(
        &appsets,
        "platform-stack",
        "step 2 waiting for approval",
        ROLLOUT_TIMEOUT,
        |s| progressing(s).is_some_and(|(_, reason, _)| reason == "StepWaitingForApproval"),
    )
    .await;
    let (_, _, message) = progressing(&status).expect("the condition");
    assert!(
        message.starts_with("step 2 of 3 waits for approval since "),
        "{message}"
    );
    let record = status.rollout_steps.iter().find(|r| r.step == 2);
    assert!(
        record.is_some_and(|r| r.waiting_for_approval_since.is_some() && r.approved_at.is_none()),
        "{status:#?}"
    );
    let explain = flotilla(&ns, &["rollout", "explain", "platform-stack"]);
    assert!(explain.contains("Step 2: WaitingForApproval"), "{explain}");
    let page = http_get(ui, "/applicationsets/platform-stack").await;
    assert!(page.contains("waits for approval since"), "{page}");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let before = histories(&ns).await;
    assert!(
        before[TIERS[1]].is_empty() && before[TIERS[2]].is_empty(),
        "{before:#?}"
    );

    let approved_at = k8s_openapi::jiff::Timestamp::now().as_second();
    let said = flotilla(&ns, &["rollout", "promote", "platform-stack"]);
    assert!(said.contains("step 2 of"), "{said}");
    wait_complete(&appsets, "platform-stack", &TIERS, &commit).await;
    let stored = appsets.get("platform-stack").await.expect("reads it");
    assert!(
        !stored.annotations().contains_key("flotilla.dev/promote"),
        "the controller removed the annotation: {:?}",
        stored.annotations()
    );
    let record = stored
        .status
        .as_ref()
        .and_then(|s| s.rollout_steps.iter().find(|r| r.step == 2).cloned())
        .expect("step 2's record");
    assert!(record.approved_at.is_some(), "{record:?}");
    let histories = histories(&ns).await;
    let backend = first_sync(&histories, TIERS[1], &commit);
    assert!(
        backend.0 >= approved_at - 1,
        "backend synced after the approval: {backend:?}"
    );
    controller.stop();
}

// ---------------------------------------------------------------------------------------------
// 7. What a new user does

/// An ApplicationSet as a user writes it (three components × two regions, a RollingSync by tier,
/// `CreateNamespace=true`), its Applications pointing at `url` and deploying into
/// `<prefix>-<region>`.
fn new_user_appset(url: &str, prefix: &str) -> String {
    format!(
        r#"apiVersion: flotilla.dev/v1alpha1
kind: ApplicationSet
metadata:
  name: platform-stack
spec:
  goTemplate: true
  goTemplateOptions: ["missingkey=error"]
  generators:
    - matrix:
        generators:
          - list:
              elements:
                - component: database
                  tier: "1"
                - component: backend
                  tier: "2"
                - component: frontend
                  tier: "3"
          - list:
              elements:
                - region: eu
                - region: us
  strategy:
    type: RollingSync
    rollingSync:
      steps:
        - matchExpressions:
            - {{key: tier, operator: In, values: ["1"]}}
        - matchExpressions:
            - {{key: tier, operator: In, values: ["2"]}}
        - matchExpressions:
            - {{key: tier, operator: In, values: ["3"]}}
  template:
    metadata:
      name: "{{{{.component}}}}-{{{{.region}}}}"
      labels:
        tier: "{{{{.tier}}}}"
    spec:
      project: default
      source:
        repoURL: {url}
        targetRevision: main
        path: "{{{{.component}}}}"
      destination:
        server: https://kubernetes.default.svc
        namespace: "{prefix}-{{{{.region}}}}"
      syncPolicy:
        automated:
          prune: true
        syncOptions:
          - CreateNamespace=true
"#
    )
}

#[tokio::test]
async fn a_new_users_appset_applied_with_kubectl_rolls_out_from_a_served_bare_repository() {
    let (ns, repo) = setup("new-user").await;
    tier_components(&repo, "v1", Pods::default());
    let commit = repo.commit("v1");
    let daemon = GitDaemon::start(repo.remote.exported());
    let url = daemon.url(&repo.remote.served_name());
    let regions = ["eu", "us"].map(|region| format!("{}-{region}", ns.name));
    let namespaces: Api<Namespace> = Api::all(ns.client.clone());
    for region in &regions {
        assert!(
            namespaces.get_opt(region).await.expect("reads").is_none(),
            "{region} does not exist before the rollout"
        );
    }
    let tiers: [Vec<String>; 3] = ["database", "backend", "frontend"]
        .map(|component| ["eu", "us"].map(|r| format!("{component}-{r}")).to_vec());
    let apps: Vec<&str> = tiers.iter().flatten().map(String::as_str).collect();

    let controller = Controller::start(&ns, "new-user");
    let appsets: Api<ApplicationSet> = ns.api();
    let recording = Recording::start(&appsets, "platform-stack");
    let mut kubectl = Command::new(support::kubectl())
        .arg("--kubeconfig")
        .arg(support::kubeconfig_path(1))
        .args(["apply", "-n", &ns.name, "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs kubectl");
    {
        use std::io::Write;
        let mut stdin = kubectl.stdin.take().expect("piped stdin");
        stdin
            .write_all(new_user_appset(&url, &ns.name).as_bytes())
            .expect("writes the ApplicationSet to kubectl");
    }
    let applied = kubectl.wait_with_output().expect("kubectl ends");
    assert!(
        applied.status.success(),
        "kubectl apply: {}",
        String::from_utf8_lossy(&applied.stderr)
    );

    wait_complete(&appsets, "platform-stack", &apps, &commit).await;
    let applications = ns.api::<Application>();
    for app in &apps {
        let status = applications
            .get(app)
            .await
            .expect("reads the Application")
            .status
            .expect("has a status");
        let sync = status.sync.expect("a sync status");
        assert_eq!(
            (sync.status.as_str(), sync.revision.as_str()),
            ("Synced", commit.as_str()),
            "{app}"
        );
        assert_eq!(
            status.health.expect("a health").status,
            HealthStatus::Healthy,
            "{app}"
        );
    }
    for region in &regions {
        // It did not exist before the rollout, and nothing but Flotilla creates it.
        namespaces.get(region).await.expect("Flotilla created it");
        let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
            Api::namespaced(ns.client.clone(), region);
        for component in ["database", "backend", "frontend"] {
            deployments
                .get(component)
                .await
                .unwrap_or_else(|e| panic!("{component} in {region}: {e}"));
        }
    }
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for (later, tier) in tiers.iter().enumerate() {
        for earlier in &tiers[..later] {
            for l in tier {
                pairs.extend(earlier.iter().map(|e| (l.as_str(), e.as_str())));
            }
        }
    }
    let snapshots = recording.snapshots();
    assert_promoted_after(&snapshots, &pairs);
    for app in &apps {
        assert!(
            snapshots.iter().any(|s| in_flight(state_of(s, app).0)),
            "{app} was seen Pending or Progressing: {snapshots:#?}"
        );
    }
    controller.stop();
}

// ---------------------------------------------------------------------------------------------
// 8. A controller killed at random moments

/// A small xorshift generator: the kills' moments, replayable from the printed seed
/// (`FLOTILLA_CHAOS_SEED`).
struct Moments(u64);

impl Moments {
    fn new() -> Self {
        let seed = std::env::var("FLOTILLA_CHAOS_SEED")
            .ok()
            .and_then(|seed| seed.parse().ok())
            .unwrap_or_else(|| {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |elapsed| elapsed.subsec_nanos());
                u64::from(nanos) | 1
            });
        println!("chaos seed {seed} (FLOTILLA_CHAOS_SEED={seed} replays these moments)");
        Self(seed)
    }

    /// A duration in `[min, max)` milliseconds.
    fn between(&mut self, min: u64, max: u64) -> Duration {
        Duration::from_millis(min + self.next() % (max - min))
    }

    /// An index in `0..len`.
    fn index(&mut self, len: usize) -> usize {
        usize::try_from(self.next() % len as u64).unwrap_or_default()
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Every uid each Job of the namespace had, and those that succeeded, as a watch delivers them.
struct Jobs {
    seen: Arc<Mutex<JobUids>>,
    task: tokio::task::JoinHandle<()>,
}

/// Job name → the uids it was created with, and those of them that succeeded.
#[derive(Default)]
struct JobUids {
    created: BTreeMap<String, std::collections::BTreeSet<String>>,
    succeeded: BTreeMap<String, std::collections::BTreeSet<String>>,
}

impl Jobs {
    fn start(ns: &TestNamespace) -> Self {
        let seen = Arc::new(Mutex::new(JobUids::default()));
        let recorded = Arc::clone(&seen);
        let stream = watcher(ns.api::<Job>(), watcher::Config::default());
        let task = watch_each(stream, move |job: Job| {
            let mut all = recorded.lock().expect("not poisoned");
            let (name, uid) = (job.name_any(), job.uid().unwrap_or_default());
            if job.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) > 0 {
                all.succeeded
                    .entry(name.clone())
                    .or_default()
                    .insert(uid.clone());
            }
            all.created.entry(name).or_default().insert(uid);
        });
        Self { seen, task }
    }

    /// How many times Job `name` was created.
    fn created(&self, name: &str) -> usize {
        let seen = self.seen.lock().expect("not poisoned");
        seen.created
            .get(name)
            .map_or(0, std::collections::BTreeSet::len)
    }

    /// How many of the Jobs named `name` succeeded.
    fn succeeded(&self, name: &str) -> usize {
        let seen = self.seen.lock().expect("not poisoned");
        seen.succeeded
            .get(name)
            .map_or(0, std::collections::BTreeSet::len)
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long each tier's PreSync hook pod runs in the chaos tests (node-sim's ready delay).
const CHAOS_HOOK_RUNS: &str = "3s";
/// How long each tier's Deployment pod takes to be ready in the chaos tests.
const CHAOS_PODS_START: &str = "5s";

/// A state of one tier's sync, observed, after which the chaos tests kill a controller at a
/// random moment within the time the next phase is known to take (set by the test through
/// node-sim's ready delays), so the number of kills and where they land do not depend on
/// how fast the machine is.
#[derive(Clone, Copy, Debug)]
enum Checkpoint {
    /// The tier Progressing (or further) on the revision: its PreSync hook is running, for
    /// [`CHAOS_HOOK_RUNS`].
    Syncing,
    /// The tier's hook Job of this rollout succeeded: its Deployment is being applied and its
    /// pod starts, for [`CHAOS_PODS_START`].
    HookDone,
    /// The tier Healthy on the revision: the next step is about to open.
    Healthy,
}

impl Checkpoint {
    /// The kill comes within this long after the checkpoint is seen.
    fn window(self) -> Duration {
        let phase = match self {
            Self::Syncing => CHAOS_HOOK_RUNS,
            Self::HookDone => CHAOS_PODS_START,
            Self::Healthy => "500ms",
        };
        flotilla_generators::duration::parse_duration(phase).expect("a duration")
    }
}

/// One SIGKILL of the chaos tests: during which rollout, after which checkpoint, which replica
/// came next, and what the rollout looked like.
struct Kill {
    revision: String,
    after: String,
    replica: String,
    states: String,
}

/// The kills of one test: its namespace, the ApplicationSet watched (and its recorded
/// status), the Jobs watched, when to kill, and what each kill found.
struct Chaos<'a> {
    ns: &'a TestNamespace,
    /// The arguments every controller starts with.
    args: Vec<&'static str>,
    appsets: Api<ApplicationSet>,
    recording: &'a Recording,
    jobs: &'a Jobs,
    moments: Moments,
    kills: Vec<Kill>,
}

impl Chaos<'_> {
    /// Rolls `revision` (the `rollout`-th, counting from 1) out to every tier while killing one
    /// of the controllers (a random one) at each [`Checkpoint`] of each tier (but the last
    /// tier Healthy: the rollout is then complete), restarting it each time, twice as the same
    /// identity (which renews its own Leases at once) then as another (whose Leases wait for
    /// the old ones to expire).
    async fn until_complete(
        &mut self,
        mut controllers: Vec<Controller>,
        revision: &str,
        rollout: usize,
    ) -> Vec<Controller> {
        let checkpoints = [
            Checkpoint::Syncing,
            Checkpoint::HookDone,
            Checkpoint::Healthy,
        ];
        for (tier, (app, component)) in TIERS.iter().zip(COMPONENTS).enumerate() {
            for checkpoint in checkpoints {
                if tier + 1 == TIERS.len() && matches!(checkpoint, Checkpoint::Healthy) {
                    break;
                }
                self.reached(app, component, checkpoint, revision, rollout)
                    .await;
                let window = u64::try_from(checkpoint.window().as_millis()).unwrap_or(1);
                tokio::time::sleep(self.moments.between(0, window)).await;
                let after = format!("{app} {checkpoint:?}");
                controllers = self.kill_one(controllers, revision, after).await;
            }
        }
        wait_complete(&self.appsets, "platform-stack", &TIERS, revision).await;
        controllers
    }

    /// Waits until `app` (deploying `component`) has passed `checkpoint` on `revision`.
    async fn reached(
        &self,
        app: &str,
        component: &str,
        checkpoint: Checkpoint,
        revision: &str,
        rollout: usize,
    ) {
        let target = [revision.to_owned()];
        let what = format!("{app} past {checkpoint:?} on {revision}");
        eventually_within(ROLLOUT_TIMEOUT, &what, async || {
            let passed = match checkpoint {
                Checkpoint::Syncing => self.recording.seen(|snapshot| {
                    let (state, on) = state_of(snapshot, app);
                    matches!(state, State::Progressing | State::Healthy) && on == target
                }),
                Checkpoint::HookDone => {
                    self.jobs.succeeded(&format!("{component}-migrate")) >= rollout
                }
                Checkpoint::Healthy => self
                    .recording
                    .seen(|snapshot| state_of(snapshot, app) == (State::Healthy, target.to_vec())),
            };
            passed
                .then_some(())
                .ok_or_else(|| format!("{:?}", self.recording.snapshots().last()))
        })
        .await;
    }

    /// SIGKILLs a random controller (no Lease release, no status written on the way out) and
    /// starts its successor in its place.
    async fn kill_one(
        &mut self,
        mut controllers: Vec<Controller>,
        revision: &str,
        after: String,
    ) -> Vec<Controller> {
        let status = stored_status(&self.appsets).await;
        let victim = self.moments.index(controllers.len());
        drop(controllers.remove(victim));
        let replica = format!(
            "chaos-{victim}{}",
            if self.kills.len() % 3 == 2 { "b" } else { "" }
        );
        let states = snapshot(Some(&status))
            .iter()
            .map(|(app, (state, _))| format!("{app}={state:?}"))
            .collect::<Vec<_>>()
            .join(" ");
        println!(
            "kill {} after {after} ({revision}): {states}; restarting as {replica}",
            self.kills.len() + 1,
        );
        self.kills.push(Kill {
            revision: revision[..7].to_owned(),
            after,
            replica: replica.clone(),
            states,
        });
        controllers.insert(
            victim,
            Controller::start_with(self.ns, &replica, &self.args),
        );
        controllers
    }
}

/// The component each of [`TIERS`] deploys.
const COMPONENTS: [&str; 3] = ["database", "backend", "frontend"];

/// The Lease timings of the chaos tests' controllers: short, so that kills cost little.
const CHAOS_LEASE: [&str; 6] = [
    "--lease-duration",
    "3s",
    "--renew-deadline",
    "2s",
    "--retry-period",
    "500ms",
];

#[tokio::test]
async fn a_rollout_killed_at_random_moments_converges_in_order_running_each_hook_once() {
    rollout_under_kills("rollout-chaos", 1).await;
}

/// The same with three replicas sharing the Applications (`--shards auto`), one of them killed
/// at each moment.
#[tokio::test]
async fn three_replicas_killed_at_random_moments_converge_in_order_running_each_hook_once() {
    rollout_under_kills("rollout-chaos3", 3).await;
}

/// Rolls out two commits of three tiers with PreSync hooks while `replicas` controllers are
/// killed at random moments of each tier's sync (see [`Chaos`]); the tiers were promoted in
/// order, each Application ends on the second commit, and each sync ran its hook exactly once.
async fn rollout_under_kills(label: &str, replicas: usize) {
    let (ns, repo) = setup(label).await;
    let write = |version: &str| {
        for component in COMPONENTS {
            repo.component(component, version, Pods::ready_after(CHAOS_PODS_START));
            repo.presync_hook(component, Pods::ready_after(CHAOS_HOOK_RUNS));
        }
    };
    write("v1");
    let first = repo.commit("v1");
    let jobs = Jobs::start(&ns);
    // The replicas share the Applications (`--shards auto`, the default).
    let args = CHAOS_LEASE.to_vec();
    let controllers: Vec<Controller> = (0..replicas)
        .map(|i| Controller::start_with(&ns, &format!("chaos-{i}"), &args))
        .collect();
    let appsets: Api<ApplicationSet> = ns.api();
    let appset = three_tier(&ns, &repo, false, None);
    let recording = Recording::start(&appsets, &appset.name_any());
    apply(&appsets, &appset).await;
    let mut chaos = Chaos {
        ns: &ns,
        args,
        appsets,
        recording: &recording,
        jobs: &jobs,
        moments: Moments::new(),
        kills: Vec::new(),
    };
    let controllers = chaos.until_complete(controllers, &first, 1).await;

    write("v2");
    let second = repo.commit("v2");
    let controllers = chaos.until_complete(controllers, &second, 2).await;
    for controller in controllers {
        controller.stop();
    }

    assert_tiers_in_order(&recording.snapshots());
    let histories = histories(&ns).await;
    for (app, component) in TIERS.into_iter().zip(COMPONENTS) {
        let history = &histories[app];
        let revisions: Vec<&str> = history.iter().map(|h| h.revision.as_str()).collect();
        assert_eq!(
            revisions.first().copied(),
            Some(first.as_str()),
            "{app}: {history:#?}"
        );
        assert_eq!(
            revisions.last().copied(),
            Some(second.as_str()),
            "{app}: {history:#?}"
        );
        let hook = format!("{component}-migrate");
        assert_eq!(
            jobs.created(&hook),
            history.len(),
            "{app}: one {hook} Job per sync operation ({revisions:?})"
        );
    }
    println!("{} kills; converged on {second}", chaos.kills.len());
    for kill in &chaos.kills {
        println!(
            "  {} after {} then {}: {}",
            kill.revision, kill.after, kill.replica, kill.states
        );
    }
}

/// The components of the step graph `db → (backend-eu ∥ backend-us) → frontend`, each a step
/// of its own named after it, with the steps it waits for.
const GRAPH: [(&str, &[&str]); 4] = [
    ("db", &[]),
    ("backend-eu", &["db"]),
    ("backend-us", &["db"]),
    ("frontend", &["backend-eu", "backend-us"]),
];

/// The graph's ApplicationSet `platform-stack`: Applications `graph-<component>`.
fn graph_appset(ns: &TestNamespace, repo: &Repo) -> ApplicationSet {
    let steps: Vec<Value> = GRAPH
        .iter()
        .map(|(component, depends_on)| {
            json!({"name": component, "dependsOn": depends_on, "matchExpressions":
                [{"key": "component", "operator": "In", "values": [component]}]})
        })
        .collect();
    let elements: Vec<Value> = GRAPH.iter().map(|(c, _)| json!({"component": c})).collect();
    let mut appset = rolling_appset(
        ns,
        repo,
        json!({"list": {"elements": elements}}),
        json!({"steps": steps}),
        json!({"name": "graph-{{.component}}", "labels": {"component": "{{.component}}"}}),
        ("{{.component}}", IN_CLUSTER),
    );
    appset.spec.go_template = true;
    appset.spec.template.spec.sync_policy = Some(object(json!({"automated": {"prune": true}})));
    appset
}

/// A step graph rolled out while the controller is SIGKILLed while the database's hook runs,
/// while both backends sync, and while the frontend syncs: each restart resumes from status,
/// the backends start only once the database is Healthy and the frontend once both are, and
/// every Application synced once, running its PreSync hook once.
#[tokio::test]
async fn a_killed_controller_resumes_a_step_graph_running_each_hook_once() {
    let (ns, repo) = setup("graph-chaos").await;
    for (component, _) in GRAPH {
        repo.component(component, "v1", Pods::ready_after(CHAOS_PODS_START));
        repo.presync_hook(component, Pods::ready_after(CHAOS_HOOK_RUNS));
    }
    let commit = repo.commit("v1");
    let jobs = Jobs::start(&ns);
    let args = CHAOS_LEASE.to_vec();
    let mut controller = Controller::start_with(&ns, "graph-0", &args);
    let appsets: Api<ApplicationSet> = ns.api();
    let recording = Recording::start(&appsets, "platform-stack");
    let graph_apps: Vec<String> = GRAPH.iter().map(|(c, _)| format!("graph-{c}")).collect();
    apply(&appsets, &graph_appset(&ns, &repo)).await;
    let target = [commit.clone()];
    let syncing = |apps: &[&str]| {
        let apps: Vec<String> = apps.iter().map(|a| (*a).to_owned()).collect();
        let target = target.clone();
        move |snapshot: &Snapshot| {
            apps.iter().all(|app| {
                let (state, on) = state_of(snapshot, app);
                state == State::Progressing && on == target
            })
        }
    };
    let moments: [&[&str]; 3] = [
        &["graph-db"],
        &["graph-backend-eu", "graph-backend-us"],
        &["graph-frontend"],
    ];
    for (kill, apps) in moments.into_iter().enumerate() {
        let seen = syncing(apps);
        eventually_within(ROLLOUT_TIMEOUT, &format!("{apps:?} syncing"), async || {
            recording
                .seen(&seen)
                .then_some(())
                .ok_or_else(|| format!("{:?}", recording.snapshots().last()))
        })
        .await;
        drop(controller);
        controller = Controller::start_with(&ns, &format!("graph-{}", kill + 1), &args);
    }
    let apps: Vec<&str> = graph_apps.iter().map(String::as_str).collect();
    wait_complete(&appsets, "platform-stack", &apps, &commit).await;
    controller.stop();

    assert_promoted_after(
        &recording.snapshots(),
        &[
            ("graph-backend-eu", "graph-db"),
            ("graph-backend-us", "graph-db"),
            ("graph-frontend", "graph-backend-eu"),
            ("graph-frontend", "graph-backend-us"),
        ],
    );
    let histories = histories(&ns).await;
    for (component, _) in GRAPH {
        let app = format!("graph-{component}");
        let revisions: Vec<&str> = histories[&app]
            .iter()
            .map(|h| h.revision.as_str())
            .collect();
        assert_eq!(revisions, [commit.as_str()], "{app} synced once");
        let hook = format!("{component}-migrate");
        assert_eq!(jobs.created(&hook), 1, "{hook} ran once");
    }
}

// ---------------------------------------------------------------------------------------------
// 9. Leaving RollingSync

#[tokio::test]
async fn switching_to_all_at_once_clears_the_rollout_and_issues_no_rollout_syncs() {
    let RolledOut {
        ns,
        repo,
        commit: _,
        controller,
        appsets,
        recording: _recording,
    } = three_tiers_rolled_out("rollout-off", "off").await;

    appsets
        .patch(
            "platform-stack",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"strategy": {"type": "AllAtOnce", "rollingSync": null}}}),
            ),
        )
        .await
        .expect("switches the strategy");
    wait_for_appset(
        &appsets,
        "platform-stack",
        "applicationStatus cleared",
        ROLLOUT_TIMEOUT,
        |s| s.application_status.is_empty(),
    )
    .await;

    // A new commit now reaches every Application through its own automated sync, at once.
    tier_components(&repo, "v2", Pods::default());
    let second = repo.commit("v2");
    let applications: Api<Application> = ns.api();
    eventually_within(ROLLOUT_TIMEOUT, "every tier synced to v2", async || {
        let histories = histories(&ns).await;
        let synced = TIERS.iter().all(|app| {
            histories[*app]
                .last()
                .is_some_and(|entry| entry.revision == second)
        });
        if synced {
            Ok(())
        } else {
            Err(format!("{histories:#?}"))
        }
    })
    .await;
    for app in TIERS {
        let application = applications.get(app).await.expect("reads");
        for entry in &application.status.unwrap_or_default().history {
            if entry.revision == second {
                assert_ne!(
                    entry.initiated_by.username, "rollout/platform-stack",
                    "{app} synced {second} outside the rollout"
                );
            }
        }
    }
    let status = stored_status(&appsets).await;
    assert!(
        status.application_status.is_empty(),
        "no rollout state came back: {status:#?}"
    );
    controller.stop();
}

// ---------------------------------------------------------------------------------------------
// The web view in a real browser

/// Where the browser tests' screenshots go: `web-view/` in the target directory.
fn screenshot_path(page: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory")
        .join("web-view")
        .join(format!("{page}.png"))
}

/// The `data-state` of each step section on the page, in order (`Closed`, `Progressing`, …).
async fn step_states(browser: &Browser) -> Vec<String> {
    let states = browser
        .script(
            "return Array.from(document.querySelectorAll('section[data-step]'), s => s.dataset.state);",
        )
        .await;
    serde_json::from_value(states).expect("a list of step states")
}

/// A controller serving the web view (as `identity`), a browser showing the ApplicationSet
/// page of `platform-stack` from before it exists, then the three tiers of `repo` applied;
/// returns the web view's address too.
async fn rollout_in_a_browser(
    ns: &TestNamespace,
    appset: &ApplicationSet,
    identity: &str,
) -> (Controller, Browser, std::net::SocketAddr) {
    let ui = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let controller = Controller::start_with(ns, identity, &["--ui-addr", &ui.to_string()]);
    eventually("the web view to accept connections", async || {
        tokio::net::TcpStream::connect(ui)
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    let browser = Browser::start().await;
    browser
        .goto(&format!("http://{ui}/applicationsets/platform-stack"))
        .await;
    // A reload would forget this.
    browser.script("window.flotillaNoReload = true;").await;
    let appsets: Api<ApplicationSet> = ns.api();
    apply(&appsets, appset).await;
    (controller, browser, ui)
}

/// Fails the test when the page was reloaded since [`rollout_in_a_browser`] opened it.
async fn assert_not_reloaded(browser: &Browser) {
    let marked = browser
        .script("return window.flotillaNoReload === true;")
        .await;
    assert_eq!(marked, json!(true), "the page was reloaded");
}

/// Waits until the page's step states pass `check`; returns them.
async fn wait_for_steps(
    browser: &Browser,
    what: &str,
    check: impl Fn(&[String]) -> bool,
) -> Vec<String> {
    eventually_within(ROLLOUT_TIMEOUT, what, async || {
        let states = step_states(browser).await;
        if check(&states) {
            Ok(states)
        } else {
            Err(format!("{states:?}"))
        }
    })
    .await
}

/// The text of the page's `<main>`.
async fn main_text(browser: &Browser) -> String {
    let text = browser
        .script("return document.querySelector('main').innerText;")
        .await;
    text.as_str().unwrap_or_default().to_owned()
}

/// The ApplicationSet page follows a rollout as it happens: step 1 Progressing, then step 2
/// opening, without a reload; and, across a restart of the controller, the rest of it.
#[tokio::test]
async fn the_application_set_page_shows_step_one_progressing_then_step_two_opening_without_a_reload()
 {
    let (ns, repo) = setup("web-view").await;
    // Pods that take a while to be ready keep each step Progressing long enough to be seen.
    repo.component("database", "v1", Pods::ready_after("8s"));
    repo.component("backend", "v1", Pods::ready_after("8s"));
    repo.component("frontend", "v1", Pods::default());
    let commit = repo.commit("v1");
    let (controller, browser, ui) =
        rollout_in_a_browser(&ns, &three_tier(&ns, &repo, false, None), "web-view").await;

    let seen = wait_for_steps(&browser, "step 1 Progressing on the page", |states| {
        states.first().is_some_and(|state| state == "Progressing")
    })
    .await;
    assert_eq!(seen, ["Progressing", "Closed", "Closed"]);
    let opened = wait_for_steps(&browser, "step 2 opening on the page", |states| {
        states.get(1).is_some_and(|state| state != "Closed")
    })
    .await;
    assert_eq!(opened[0], "Complete", "{opened:?}");
    assert_not_reloaded(&browser).await;
    browser
        .screenshot(&screenshot_path("application-set"))
        .await;

    // A restarted controller: the page reconnects by itself and follows the rollout to its end.
    controller.stop();
    let controller = Controller::start_with(&ns, "web-view-again", &["--ui-addr", &ui.to_string()]);
    wait_for_steps(&browser, "every step Complete after a restart", |states| {
        states.iter().all(|state| state == "Complete")
    })
    .await;
    assert_not_reloaded(&browser).await;
    wait_complete(&ns.api(), "platform-stack", &TIERS, &commit).await;
    browser.goto(&format!("http://{ui}/")).await;
    let fleet = main_text(&browser).await;
    assert!(fleet.contains("platform-stack"), "{fleet}");
    browser.screenshot(&screenshot_path("fleet")).await;
    browser
        .goto(&format!("http://{ui}/applications/platform-database"))
        .await;
    let application = main_text(&browser).await;
    assert!(application.contains("Deployment"), "{application}");
    browser.screenshot(&screenshot_path("application")).await;
    browser.quit().await;
    controller.stop();
}

#[tokio::test]
async fn a_failing_migration_shows_the_blocked_step_and_the_hooks_message() {
    let (ns, repo) = setup("web-view-fail").await;
    tier_components(&repo, "v1", Pods::default());
    repo.presync_hook(
        "database",
        Pods {
            fail: true,
            ..Pods::default()
        },
    );
    repo.commit("v1");
    let (controller, browser, ui) =
        rollout_in_a_browser(&ns, &three_tier(&ns, &repo, false, None), "web-view-fail").await;

    let blocked = wait_for_steps(&browser, "step 1 Stalled on the page", |states| {
        states.first().is_some_and(|state| state == "Stalled")
    })
    .await;
    assert_eq!(blocked, ["Stalled", "Closed", "Closed"]);
    let page = main_text(&browser).await;
    // What keeps the step closed names the hook and its message.
    assert!(
        page.contains("database-migrate hook failed") && page.contains("backoff limit"),
        "{page}"
    );
    browser.screenshot(&screenshot_path("blocked-step")).await;
    browser
        .goto(&format!("http://{ui}/applications/platform-database"))
        .await;
    let hook = browser
        .script(concat!(
            "const row = Array.from(document.querySelectorAll('tr'))",
            ".find(r => r.innerText.includes('database-migrate'));",
            "return row ? row.innerText : null;"
        ))
        .await;
    let hook = hook.as_str().unwrap_or_default();
    // The hook's outcome and the Job's own message.
    assert!(
        hook.contains("PreSync") && hook.contains("Failed") && hook.contains("backoff limit"),
        "{hook}"
    );
    browser.screenshot(&screenshot_path("failed-hook")).await;
    browser.quit().await;
    controller.stop();
}

/// `onFailure: rollback` with `rollbackCompletedSteps: true` and a 20 s bake on step 2: v1 rolls
/// out; under v2 a backend pod crashes during step 2's bake, the step fails, and the backend and
/// then the database go back to v1 on the live cluster (their ConfigMaps and Deployments), each
/// synced back once (its history), the frontend never takes v2, and the ApplicationSet shows
/// `RolloutRolledBack` naming the revisions; v3 then rolls out normally.
#[tokio::test]
async fn a_failed_step_rolls_back_with_the_completed_steps_and_the_next_commit_rolls_out() {
    let (ns, repo) = setup("rollout-rollback").await;
    tier_components(&repo, "v1", Pods::default());
    let v1 = repo.commit("v1");
    let mut appset = three_tier(&ns, &repo, false, None);
    let rolling = appset
        .spec
        .strategy
        .as_mut()
        .and_then(|strategy| strategy.rolling_sync.as_mut())
        .expect("a RollingSync strategy");
    rolling.steps[1].bake_time = Some("20s".into());
    rolling.on_failure = Some(OnFailure::Rollback);
    rolling.rollback_completed_steps = true;
    let (controller, appsets, _recording) = start_rollout(&ns, "rollback", &appset).await;
    wait_complete(&appsets, "platform-stack", &TIERS, &v1).await;

    tier_components(&repo, "v2", Pods::default());
    let v2 = repo.commit("v2");
    wait_for_appset(
        &appsets,
        "platform-stack",
        "step 2 baking on v2",
        ROLLOUT_TIMEOUT,
        |s| {
            progressing(s).is_some_and(|(_, reason, message)| {
                reason == "StepBaking" && message.starts_with("step 2 of 3")
            })
        },
    )
    .await;
    let pods: Api<k8s_openapi::api::core::v1::Pod> = ns.api();
    let crash = json!({"metadata": {"annotations": {"sim.flotilla.dev/fail": "true"}}});
    for pod in pods
        .list(&ListParams::default().labels("app=backend"))
        .await
        .expect("lists the backend pods")
        .items
    {
        // A pod of the old ReplicaSet may be gone already.
        let _ = pods
            .patch(
                &pod.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&crash),
            )
            .await;
    }
    let status = wait_for_appset(
        &appsets,
        "platform-stack",
        "the rollback complete",
        ROLLOUT_TIMEOUT,
        |s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == ConditionType::RolloutRolledBack && c.reason == "RolledBack")
        },
    )
    .await;
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutRolledBack)
        .expect("RolloutRolledBack");
    let (short1, short2) = (&v1[..7], &v2[..7]);
    assert!(
        condition.message.starts_with("step 2 of 3 failed (platform-backend ")
            && condition.message.contains(&format!(
                "platform-backend (step 2) back on {short1} from {short2}, platform-database (step 1) back on {short1} from {short2}"
            )),
        "{}",
        condition.message
    );
    let (_, reason, _) = progressing(&status).expect("RolloutProgressing");
    assert_eq!(reason, "RolloutRolledBack");
    let record = status
        .rollout_rollback
        .as_ref()
        .expect("status.rolloutRollback");
    assert!(record.completed_at.is_some(), "{record:?}");
    // The live objects are v1's again; the frontend never took v2.
    let configs: Api<k8s_openapi::api::core::v1::ConfigMap> = ns.api();
    for component in ["database", "backend", "frontend"] {
        let config = configs
            .get(&format!("{component}-config"))
            .await
            .expect("reads the ConfigMap");
        assert_eq!(
            config
                .data
                .unwrap_or_default()
                .get("version")
                .map(String::as_str),
            Some("v1"),
            "{component}"
        );
    }
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> = ns.api();
    let backend = deployments.get("backend").await.expect("reads the backend");
    let image = backend
        .spec
        .and_then(|s| s.template.spec)
        .map(|s| s.containers[0].image.clone());
    assert_eq!(image, Some(Some("example.com/backend:v1".to_string())));
    // Each synced v1, v2, then v1 again — the rollback once; the frontend v1 only.
    let synced = histories(&ns).await;
    for (app, expected) in [
        (TIERS[0], vec![v1.clone(), v2.clone(), v1.clone()]),
        (TIERS[1], vec![v1.clone(), v2.clone(), v1.clone()]),
        (TIERS[2], vec![v1.clone()]),
    ] {
        let revisions: Vec<String> = synced[app].iter().map(|h| h.revision.clone()).collect();
        assert_eq!(revisions, expected, "{app}");
    }
    // Held: nothing syncs v2 again.
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(
        histories(&ns).await[TIERS[1]].len(),
        3,
        "the rollback is not undone"
    );

    // A new commit rolls out normally.
    tier_components(&repo, "v3", Pods::default());
    let v3 = repo.commit("v3");
    wait_complete(&appsets, "platform-stack", &TIERS, &v3).await;
    let status = stored_status(&appsets).await;
    assert!(
        status.rollout_rollback.is_none(),
        "{:?}",
        status.rollout_rollback
    );
    assert!(
        !status
            .conditions
            .iter()
            .any(|c| c.type_ == ConditionType::RolloutRolledBack)
    );
    controller.stop();
}

// ---------------------------------------------------------------------------------------------
// 6e. analysis (issue 33)

/// A Job analysis spec whose pod runs as `pods` say in the node simulator.
fn analysis_job(pods: Pods) -> Value {
    json!({"job": {"spec": {
        "backoffLimit": 0,
        "template": {
            "metadata": {"annotations": pods.annotations()},
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "smoke", "image": "example.com/smoke:1"}]
            }
        }
    }}})
}

/// The three tiers with `analysis` on step 1 (the database) and `onFailure: rollback`.
fn analysed_three_tier(ns: &TestNamespace, repo: &Repo, analysis: &Value) -> ApplicationSet {
    let mut appset = three_tier(ns, repo, false, None);
    let rolling = appset
        .spec
        .strategy
        .as_mut()
        .and_then(|strategy| strategy.rolling_sync.as_mut())
        .expect("a RollingSync strategy");
    rolling.steps[0].analysis =
        Some(serde_json::from_value(analysis.clone()).expect("an analysis"));
    rolling.on_failure = Some(OnFailure::Rollback);
    appset
}

/// The analysis Jobs of step 1 in the test namespace, by name.
async fn analysis_jobs(ns: &TestNamespace) -> Vec<Job> {
    ns.api::<Job>()
        .list(
            &ListParams::default()
                .labels("flotilla.dev/application-set=platform-stack,flotilla.dev/rollout-step=1"),
        )
        .await
        .expect("lists the analysis Jobs")
        .items
}

/// Whether the Job has the condition `type_` True.
fn job_condition(job: &Job, type_: &str) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

/// A Job analysis on the database: under v1 its Job takes 10 s and succeeds; the controller,
/// SIGKILLed while it runs, is restarted and waits for the same Job (one Job, created once; the
/// analysis' start unchanged), and the backend syncs only after it passed. Under v2 the Job
/// fails: step 2 never opens, the database goes back to v1's objects (on the live cluster), the
/// ApplicationSet shows `RolloutRolledBack`, and v3 (with a passing Job again) rolls out
/// normally.
#[tokio::test]
async fn an_analysis_job_gates_step_two_fails_into_a_rollback_and_resumes_once_after_a_kill() {
    let (ns, repo) = setup("rollout-analysis-job").await;
    tier_components(&repo, "v1", Pods::default());
    let v1 = repo.commit("v1");
    let passing = analysis_job(Pods::ready_after("10s"));
    let (controller, appsets, _recording) = start_rollout(
        &ns,
        "analysis-1",
        &analysed_three_tier(&ns, &repo, &passing),
    )
    .await;
    let analysing = wait_for_appset(
        &appsets,
        "platform-stack",
        "step 1 analysing",
        ROLLOUT_TIMEOUT,
        |s| progressing(s).is_some_and(|(_, reason, _)| reason == "StepAnalysing"),
    )
    .await;
    let started = step_one(&analysing)
        .and_then(|record| record.analysis.clone())
        .expect("the analysis is in status");
    assert!(
        started
            .job
            .starts_with(&format!("{}/platform-stack-analysis-1-", ns.name)),
        "{started:?}"
    );
    let explain = flotilla(&ns, &["rollout", "explain", "platform-stack"]);
    assert!(
        explain.contains("Step 1: Analysing (maxUpdate 100%: 0/1 in flight, analysis Job)"),
        "{explain}"
    );
    // SIGKILL during the analysis (Drop kills), then a new controller.
    drop(controller);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        histories(&ns).await[TIERS[1]].is_empty(),
        "the backend waits"
    );
    let controller = Controller::start(&ns, "analysis-2");
    wait_complete(&appsets, "platform-stack", &TIERS, &v1).await;
    let status = stored_status(&appsets).await;
    let passed = step_one(&status)
        .and_then(|record| record.analysis.clone())
        .expect("the analysis is kept");
    assert_eq!(
        passed.started_at, started.started_at,
        "the same analysis resumed"
    );
    assert_eq!(passed.job, started.job);
    let passed_at = passed.passed_at.as_ref().expect("passed").0.as_second();
    let jobs = analysis_jobs(&ns).await;
    assert_eq!(jobs.len(), 1, "one analysis Job: {jobs:#?}");
    assert!(job_condition(&jobs[0], "Complete"), "{:?}", jobs[0].status);
    let created = jobs[0]
        .metadata
        .creation_timestamp
        .as_ref()
        .expect("created")
        .0
        .as_second();
    assert!(
        created <= started.started_at.0.as_second() + 2,
        "created by the first controller, not again: {created} vs {started:?}"
    );
    let histories_v1 = histories(&ns).await;
    let backend = first_sync(&histories_v1, TIERS[1], &v1);
    assert!(
        backend.0 >= passed_at,
        "the backend synced after the analysis passed: {backend:?} {passed_at}"
    );

    // v2: the analysis Job fails.
    let failing = analysis_job(Pods {
        fail: true,
        ready_after: None,
    });
    apply(&appsets, &analysed_three_tier(&ns, &repo, &failing)).await;
    tier_components(&repo, "v2", Pods::default());
    let v2 = repo.commit("v2");
    let status = wait_for_appset(
        &appsets,
        "platform-stack",
        "step 1 rolled back after its analysis failed",
        ROLLOUT_TIMEOUT,
        |s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == ConditionType::RolloutRolledBack && c.reason == "RolledBack")
        },
    )
    .await;
    let condition = status
        .conditions
        .iter()
        .find(|c| c.type_ == ConditionType::RolloutRolledBack)
        .expect("RolloutRolledBack");
    assert!(
        condition
            .message
            .starts_with("step 1 of 3 failed (analysis Job ")
            && condition.message.contains(&format!(
                "platform-database (step 1) back on {} from {}",
                &v1[..7],
                &v2[..7]
            )),
        "{}",
        condition.message
    );
    let configs: Api<k8s_openapi::api::core::v1::ConfigMap> = ns.api();
    let database = configs.get("database-config").await.expect("reads it");
    assert_eq!(
        database
            .data
            .unwrap_or_default()
            .get("version")
            .map(String::as_str),
        Some("v1"),
        "the database's live objects are v1's again"
    );
    let synced = histories(&ns).await;
    let revisions =
        |app: &str| -> Vec<String> { synced[app].iter().map(|h| h.revision.clone()).collect() };
    assert_eq!(revisions(TIERS[0]), [v1.clone(), v2.clone(), v1.clone()]);
    assert_eq!(revisions(TIERS[1]), [v1.as_str()], "step 2 held");
    let jobs = analysis_jobs(&ns).await;
    assert_eq!(jobs.len(), 2, "one Job per revision: {jobs:#?}");
    assert!(jobs.iter().any(|job| job_condition(job, "Failed")));

    // v3, with a passing analysis again, rolls out normally.
    apply(
        &appsets,
        &analysed_three_tier(&ns, &repo, &analysis_job(Pods::default())),
    )
    .await;
    tier_components(&repo, "v3", Pods::default());
    let v3 = repo.commit("v3");
    wait_complete(&appsets, "platform-stack", &TIERS, &v3).await;
    let status = stored_status(&appsets).await;
    assert!(
        status.rollout_rollback.is_none(),
        "{:?}",
        status.rollout_rollback
    );
    assert_eq!(analysis_jobs(&ns).await.len(), 3);
    controller.stop();
}

/// A step whose Application goes to cluster 2 (region west, step 1) runs its analysis Job on
/// cluster 2, in the destination namespace: the Job exists there and succeeds, no analysis Job
/// exists on cluster 1, the step's record names cluster 2, and region east (step 2, cluster 1)
/// syncs only after the analysis passed.
#[tokio::test]
async fn an_analysis_job_runs_on_the_destination_cluster_of_its_step() {
    let (ns, repo) = setup("rollout-analysis-remote").await;
    let cluster2 = two_regions(&ns).await;
    repo.component("web", "v1", Pods::default());
    let commit = repo.commit("v1");
    let mut appset = rolling_appset(
        &ns,
        &repo,
        every_region(),
        json!({"steps": [step("region", &["west"], json!(1)), step("region", &["east"], json!(1))]}),
        json!({"name": "web-{{metadata.labels.region}}", "labels": {"region": "{{metadata.labels.region}}"}}),
        ("web", "{{server}}"),
    );
    if let Some(rolling) = appset
        .spec
        .strategy
        .as_mut()
        .and_then(|strategy| strategy.rolling_sync.as_mut())
    {
        rolling.steps[0].analysis = Some(
            serde_json::from_value(analysis_job(Pods::ready_after("5s"))).expect("an analysis"),
        );
    }
    let (controller, appsets, _recording) = start_rollout(&ns, "analysis-remote", &appset).await;
    wait_complete(
        &appsets,
        "platform-stack",
        &["web-east", "web-west"],
        &commit,
    )
    .await;

    let status = stored_status(&appsets).await;
    let analysis = step_one(&status)
        .and_then(|record| record.analysis.clone())
        .expect("step 1's analysis");
    let (west_server, _, _) = support::cluster_credentials(2);
    assert_eq!(
        analysis.clusters,
        [AnalysisCluster {
            server: west_server,
            name: String::new()
        }],
        "{analysis:?}"
    );
    let passed_at = analysis.passed_at.as_ref().expect("passed").0.as_second();
    let labels = "flotilla.dev/application-set=platform-stack,flotilla.dev/rollout-step=1";
    let on_cluster2 = Api::<Job>::namespaced(cluster2, &ns.name)
        .list(&ListParams::default().labels(labels))
        .await
        .expect("lists Jobs on cluster 2")
        .items;
    let [job] = on_cluster2.as_slice() else {
        panic!("one analysis Job on cluster 2: {on_cluster2:#?}")
    };
    assert_eq!(
        analysis.job,
        format!("{}/{}", ns.name, job.name_any()),
        "the recorded Job is cluster 2's"
    );
    assert!(job_condition(job, "Complete"), "{:?}", job.status);
    let on_cluster1 = analysis_jobs(&ns).await;
    assert!(
        on_cluster1.is_empty(),
        "no analysis Job on cluster 1: {on_cluster1:#?}"
    );
    let histories = histories(&ns).await;
    let east = first_sync(&histories, "web-east", &commit);
    assert!(
        east.0 >= passed_at,
        "east synced after the analysis on west passed: {east:?} {passed_at}"
    );
    controller.stop();
}

/// Writes `component/` as [`Repo::component`] does, plus a ConfigMap in sync wave 1: a sync of
/// it goes on until its Deployment (wave 0) is Healthy, `ready_after` after it changed.
fn two_wave_component(repo: &Repo, component: &str, version: &str, ready_after: &'static str) {
    repo.component(component, version, Pods::ready_after(ready_after));
    let later = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": format!("{component}-after-rollout"),
            "annotations": {"argocd.argoproj.io/sync-wave": "1"}
        },
        "data": {"version": version}
    });
    std::fs::write(
        repo.remote.work().join(component).join("later.json"),
        later.to_string(),
    )
    .expect("writes a manifest");
}

/// How many times the ApplicationSet's Events say `reason` (a repeated Event counts its series).
async fn event_count(ns: &TestNamespace, reason: &str) -> i32 {
    ns.api::<Event>()
        .list(&ListParams::default())
        .await
        .expect("lists Events")
        .items
        .iter()
        .filter(|e| {
            e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("platform-stack")
        })
        .map(|e| e.series.as_ref().map_or(1, |s| s.count))
        .sum()
}

/// `onFailure: rollback` with `rollbackCompletedSteps`, the controller SIGKILLed while the
/// rollback syncs the failed step's backend back (its sync takes 6 s: its Deployment gates a
/// second wave): the restarted controller finishes the rollback — backend, then database —
/// syncing each back exactly once (history: v1, v2, v1), with one `RolloutRolledBack` Event.
#[tokio::test]
async fn a_controller_killed_during_a_rollback_resumes_it_once() {
    let (ns, repo) = setup("rollout-rollback-kill").await;
    let write = |version: &str| {
        two_wave_component(&repo, "database", version, "6s");
        two_wave_component(&repo, "backend", version, "6s");
        repo.component("frontend", version, Pods::default());
    };
    write("v1");
    let v1 = repo.commit("v1");
    let with_analysis = |analysis: Value| {
        let mut appset = three_tier(&ns, &repo, false, None);
        if let Some(rolling) = appset
            .spec
            .strategy
            .as_mut()
            .and_then(|strategy| strategy.rolling_sync.as_mut())
        {
            rolling.steps[1].analysis =
                Some(serde_json::from_value(analysis).expect("an analysis"));
            rolling.on_failure = Some(OnFailure::Rollback);
            rolling.rollback_completed_steps = true;
        }
        appset
    };
    let (controller, appsets, _recording) = start_rollout(
        &ns,
        "rollback-kill-1",
        &with_analysis(analysis_job(Pods::default())),
    )
    .await;
    wait_complete(&appsets, "platform-stack", &TIERS, &v1).await;

    // v2 with a failing analysis on step 2: the backend, then the database, go back to v1.
    let failing = analysis_job(Pods {
        fail: true,
        ready_after: None,
    });
    apply(&appsets, &with_analysis(failing)).await;
    write("v2");
    let v2 = repo.commit("v2");
    let apps = ns.api::<Application>();
    eventually_within(
        ROLLOUT_TIMEOUT,
        "the backend's rollback sync running",
        async || {
            let status = stored_status(&appsets).await;
            let rollback = status.rollout_rollback.as_ref().ok_or("no rollback yet")?;
            if rollback.completed_at.is_some() {
                return Err("the rollback completed before the kill".to_owned());
            }
            let backend = apps.get(TIERS[1]).await.map_err(|e| e.to_string())?;
            let app_status = backend.status.clone().unwrap_or_default();
            let running = app_status
                .operation_state
                .as_ref()
                .is_some_and(|op| op.phase.running());
            if running && app_status.history.len() == 2 {
                Ok(())
            } else {
                Err(format!("{app_status:#?}"))
            }
        },
    )
    .await;
    // SIGKILL mid-rollback (Drop kills), then a new controller.
    drop(controller);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let controller = Controller::start(&ns, "rollback-kill-2");
    let status = wait_for_appset(
        &appsets,
        "platform-stack",
        "the rollback complete",
        ROLLOUT_TIMEOUT,
        |s| {
            s.rollout_rollback
                .as_ref()
                .is_some_and(|r| r.completed_at.is_some())
        },
    )
    .await;
    let rollback = status.rollout_rollback.as_ref().expect("the rollback");
    let order: Vec<&str> = rollback
        .applications
        .iter()
        .map(|a| a.application.as_str())
        .collect();
    assert_eq!(order, [TIERS[1], TIERS[0]], "failed step first");
    // Held: give the controller time to (wrongly) sync anything again.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let synced = histories(&ns).await;
    for (app, expected) in [
        (TIERS[0], vec![v1.clone(), v2.clone(), v1.clone()]),
        (TIERS[1], vec![v1.clone(), v2.clone(), v1.clone()]),
        (TIERS[2], vec![v1.clone()]),
    ] {
        let revisions: Vec<String> = synced[app].iter().map(|h| h.revision.clone()).collect();
        assert_eq!(revisions, expected, "{app} synced back exactly once");
    }
    let configs: Api<k8s_openapi::api::core::v1::ConfigMap> = ns.api();
    for name in ["database-after-rollout", "backend-after-rollout"] {
        let config = configs.get(name).await.expect("reads the ConfigMap");
        assert_eq!(
            config
                .data
                .unwrap_or_default()
                .get("version")
                .map(String::as_str),
            Some("v1"),
            "{name} is v1's again"
        );
    }
    assert_eq!(
        event_count(&ns, "RolloutRolledBack").await,
        1,
        "one RolloutRolledBack Event"
    );
    assert!(
        status
            .conditions
            .iter()
            .any(|c| c.type_ == ConditionType::RolloutRolledBack && c.reason == "RolledBack"),
        "{:#?}",
        status.conditions
    );
    controller.stop();
}

/// The web view shows a step whose analysis runs as Analysing, with what the analysis says,
/// while the next step stays closed; once the Job succeeded the page moves on to step 2
/// without a reload.
#[tokio::test]
async fn the_application_set_page_shows_a_step_analysing() {
    let (ns, repo) = setup("web-view-analysis").await;
    tier_components(&repo, "v1", Pods::default());
    repo.commit("v1");
    let appset = analysed_three_tier(&ns, &repo, &analysis_job(Pods::ready_after("12s")));
    let (controller, browser, _ui) = rollout_in_a_browser(&ns, &appset, "web-view-analysis").await;
    let seen = wait_for_steps(&browser, "step 1 Analysing on the page", |states| {
        states.first().is_some_and(|state| state == "Analysing")
    })
    .await;
    assert_eq!(seen, ["Analysing", "Closed", "Closed"]);
    let step = browser
        .script("return document.querySelector('section[data-step]').innerText;")
        .await;
    let step = step.as_str().unwrap_or_default();
    assert!(
        step.contains("Analysing") && step.contains("platform-stack-analysis-1-"),
        "the step names its state and its analysis Job: {step}"
    );
    browser
        .screenshot(&screenshot_path("application-set-analysing"))
        .await;
    let opened = wait_for_steps(&browser, "step 2 opening after the analysis", |states| {
        states.get(1).is_some_and(|state| state != "Closed")
    })
    .await;
    assert_eq!(opened[0], "Complete", "{opened:?}");
    assert_not_reloaded(&browser).await;
    browser.quit().await;
    controller.stop();
}

/// A loopback HTTP server answering `GET /ready`: 500 to the first request, then 200 with
/// `{"status": {"phase": "Ready"}}`; counts the requests.
async fn readiness_server() -> (std::net::SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::Ordering;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds a loopback port");
    let address = listener.local_addr().expect("an address");
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = Arc::clone(&count);
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = Vec::new();
            let mut buffer = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buffer[..n]),
                }
            }
            let n = counter.fetch_add(1, Ordering::SeqCst);
            let (status, body) = if n == 0 {
                (
                    "500 Internal Server Error",
                    r#"{"status": {"phase": "Starting"}}"#,
                )
            } else {
                ("200 OK", r#"{"status": {"phase": "Ready"}}"#)
            };
            let answer = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
            let _ = stream.shutdown().await;
        }
    });
    (address, count)
}

/// An HTTP analysis on the database against a loopback server that answers 500 first: the
/// failed attempt is counted, the retry 2 s later passes on the JSON field, and only then does
/// the backend sync.
#[tokio::test]
async fn an_http_analysis_passes_on_a_retry_and_then_opens_step_two() {
    let (ns, repo) = setup("rollout-analysis-http").await;
    tier_components(&repo, "v1", Pods::default());
    let v1 = repo.commit("v1");
    let (address, requests) = readiness_server().await;
    let http = json!({"http": {
        "url": format!("http://{address}/ready"),
        "jsonPath": "status.phase",
        "value": "Ready",
        "interval": "2s",
        "failureLimit": 3
    }});
    let (controller, appsets, _recording) = start_rollout(
        &ns,
        "analysis-http",
        &analysed_three_tier(&ns, &repo, &http),
    )
    .await;
    wait_complete(&appsets, "platform-stack", &TIERS, &v1).await;
    let status = stored_status(&appsets).await;
    let analysis = step_one(&status)
        .and_then(|record| record.analysis.clone())
        .expect("the analysis is in status");
    assert_eq!(analysis.failures, 1, "{analysis:?}");
    assert!(
        analysis
            .message
            .contains(r#"passed: HTTP 200, status.phase is "Ready""#),
        "{analysis:?}"
    );
    assert_eq!(requests.load(std::sync::atomic::Ordering::SeqCst), 2);
    let passed_at = analysis.passed_at.as_ref().expect("passed").0.as_second();
    let retried = passed_at - analysis.started_at.0.as_second();
    assert!(retried >= 2, "the retry waited the interval: {analysis:?}");
    let backend = first_sync(&histories(&ns).await, TIERS[1], &v1);
    assert!(backend.0 >= passed_at, "{backend:?} {passed_at}");
    controller.stop();
}
