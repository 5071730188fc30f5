//! Shared helpers for integration tests against the test control plane started by
//! `tests/run-all.sh` (or `tests/controlplane/start.sh` plus one `flotilla-node-sim` per cluster):
//! clients for cluster 1 and 2, a fresh namespace per test, server-side apply, polling waits, and
//! the `flotilla` binary run against cluster 1.
//! A missing control plane or node simulator makes the calling test fail with instructions.
// Each integration test binary compiles this module and uses a subset of it.
#![allow(dead_code)]

pub mod admission;
pub mod appset_writes;
pub mod chart_repository;
pub mod dedicated_node;
pub mod fixture_dir;
pub mod git_remote;
pub mod git_ssh;
pub mod list_appset;
pub mod loopback_http;
pub mod namespaced_deploy;
pub mod oci_registry;
pub mod plugin_service;
pub mod private_plane;
pub mod prometheus;
pub mod recording_http;
pub mod scm_fake;
pub mod server_process;
pub mod smtp_server;
pub mod sync_times;
pub mod three_step_appset;
pub mod two_tier_appset;
pub mod webhook_payload;

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Namespace, Node, ServiceAccount};
use k8s_openapi::jiff::Timestamp;
use kube::api::{ApiResource, ListParams, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// How long a wait may take before the test fails.
pub const TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(100);
/// Field manager for objects the tests apply.
pub const FIELD_MANAGER: &str = "flotilla-tests";

const HOW_TO_START: &str = "run the whole suite with `tests/run-all.sh`, or start the control plane \
     with `tests/controlplane/start.sh` and one `flotilla-node-sim --kubeconfig <dir>/clusterN.kubeconfig` per cluster (`cargo build -p flotilla-node-sim`)";

/// The log file of a `flotilla controller` a test starts in namespace `namespace` as `identity`
/// (`<state dir>/logs/<namespace>-<identity>.log`), appended to by every start.
pub fn controller_log(namespace: &str, identity: &str) -> std::fs::File {
    let path = controller_log_path(namespace, identity);
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("creating {}: {e}", path.display()))
}

/// The `RUST_LOG` filter of the controllers tests start: `FLOTILLA_TEST_CONTROLLER_LOG` when set
/// (e.g. `info,flotilla::controller::application=debug` for a flake chased locally), else `info`.
#[must_use]
pub fn controller_log_filter() -> String {
    std::env::var("FLOTILLA_TEST_CONTROLLER_LOG").unwrap_or_else(|_| "info".to_owned())
}

/// Where [`controller_log`] writes the log of `identity`'s controller for `namespace`.
pub fn controller_log_path(namespace: &str, identity: &str) -> PathBuf {
    state_dir()
        .join("logs")
        .join(format!("{namespace}-{identity}.log"))
}

/// Prints the last `lines` lines of the log at `path` when the current thread is panicking (a
/// failed test shows what its controller did last; CI keeps no logs), and copies the whole log
/// into the directory `FLOTILLA_TEST_KEEP_LOGS` names, when set (for a flake chased locally).
pub fn print_log_tail_if_panicking(path: &Path, lines: usize) {
    if !std::thread::panicking() {
        return;
    }
    if let Some(keep) = std::env::var_os("FLOTILLA_TEST_KEEP_LOGS") {
        let name = format!(
            "{}-{}",
            std::thread::current()
                .name()
                .unwrap_or("test")
                .replace("::", "-"),
            path.file_name()
                .map_or("log".into(), |name| name.to_string_lossy())
        );
        let kept = Path::new(&keep).join(name);
        let copied = std::fs::create_dir_all(&keep).and_then(|()| std::fs::copy(path, &kept));
        eprintln!("--- the whole log: {} ({copied:?}) ---", kept.display());
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let tail = &all[all.len().saturating_sub(lines)..];
    eprintln!(
        "--- the last {} lines of {} ---\n{}",
        tail.len(),
        path.display(),
        tail.join("\n")
    );
}

/// `flotilla controller` (the binary) for one namespace on cluster 1 as `identity`, comparing
/// every 2 s and fetching repositories on every resolve; its log in [`controller_log`].
pub fn controller_process(ns: &TestNamespace, identity: &str) -> ControllerProcess {
    controller_process_with(ns, identity, &[])
}

/// [`controller_process`] with the further arguments `args`.
pub fn controller_process_with(
    ns: &TestNamespace,
    identity: &str,
    args: &[&str],
) -> ControllerProcess {
    let log = controller_log(&ns.name, identity);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .args([
            "controller",
            "--namespace",
            &ns.name,
            "--identity",
            identity,
        ])
        .args(["--app-resync", "2s", "--repo-refresh", "0s"])
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig_path(1))
        .env("RUST_LOG", controller_log_filter())
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("starts flotilla controller");
    ControllerProcess {
        child,
        log: controller_log_path(&ns.name, identity),
    }
}

/// A `flotilla controller` a test started: killed with SIGKILL and reaped when dropped, also
/// when the test panics (then the end of its log is printed).
pub struct ControllerProcess {
    child: std::process::Child,
    log: PathBuf,
}

impl ControllerProcess {
    /// The path of its log.
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// Kills the controller with SIGKILL and reaps it.
    pub fn kill(self) {
        drop(self);
    }
}

impl Drop for ControllerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        print_log_tail_if_panicking(&self.log, 60);
    }
}

/// The directory holding the control plane's kubeconfigs (`$FLOTILLA_CONTROLPLANE_DIR`, default
/// `/tmp/flotilla-controlplane`).
pub fn state_dir() -> PathBuf {
    std::env::var_os("FLOTILLA_CONTROLPLANE_DIR").map_or_else(
        || PathBuf::from("/tmp/flotilla-controlplane"),
        PathBuf::from,
    )
}

/// The `kubectl` that `tests/controlplane/build.sh` built, of the test clusters' version
/// (`start.sh` links the binaries' directory as `bin` in the state directory).
pub fn kubectl() -> PathBuf {
    state_dir().join("bin").join("kubectl")
}

/// The path of cluster `n`'s kubeconfig.
pub fn kubeconfig_path(cluster: u8) -> PathBuf {
    state_dir().join(format!("cluster{cluster}.kubeconfig"))
}

/// The server, CA data and token of cluster 1's or 2's kubeconfig, as a cluster Secret's
/// `config` gives them.
pub fn cluster_credentials(cluster: u8) -> (String, String, String) {
    let path = kubeconfig_path(cluster);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let config: serde_json::Value = serde_saphyr::from_str(&text).expect("kubeconfig YAML");
    let text = |pointer: &str| {
        config
            .pointer(pointer)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_else(|| panic!("{pointer} in the kubeconfig"))
            .to_owned()
    };
    (
        text("/clusters/0/cluster/server"),
        text("/clusters/0/cluster/certificate-authority-data"),
        text("/users/0/user/token"),
    )
}

/// Cluster 1's kubeconfig acting as `user` (`as:`), written into `dir`.
pub fn impersonating_kubeconfig(dir: &Path, user: &str) -> PathBuf {
    let admin = std::fs::read_to_string(kubeconfig_path(1)).expect("cluster 1 kubeconfig");
    let mut config: serde_json::Value = serde_saphyr::from_str(&admin).expect("kubeconfig YAML");
    for entry in config["users"].as_array_mut().expect("users") {
        entry["user"]["as"] = serde_json::json!(user);
    }
    let path = dir.join("impersonating.kubeconfig");
    std::fs::write(&path, serde_json::to_string(&config).unwrap()).expect("writing");
    path
}

/// A control plane of the test's own ([`private_plane::ControlPlane::start`] with `users`),
/// with Flotilla's CRDs installed and the namespace `namespace` created; and its admin client.
pub async fn plane_with_namespace(
    users: &[&str],
    namespace: &str,
) -> (private_plane::ControlPlane, Client) {
    let plane = private_plane::ControlPlane::start(users);
    let client = plane.client().await;
    install_flotilla_crds(&client).await;
    let created: Namespace = object(serde_json::json!({"metadata": {"name": namespace}}));
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &created)
        .await
        .expect("creating the namespace");
    (plane, client)
}

/// A client for cluster 1 or 2; panics with instructions when the cluster is not running.
pub async fn client(cluster: u8) -> Client {
    let path = kubeconfig_path(cluster);
    let kubeconfig = Kubeconfig::read_from(&path).unwrap_or_else(|error| {
        panic!(
            "test control plane not found ({}: {error}): {HOW_TO_START}",
            path.display()
        )
    });
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|error| panic!("unusable kubeconfig {}: {error}", path.display()));
    let client = Client::try_from(config).expect("building a kube client");
    if let Err(error) = client.apiserver_version().await {
        panic!("cluster {cluster} does not answer ({error}): {HOW_TO_START}");
    }
    client
}

/// Waits (up to 15 s, the simulator may still be starting) for a node simulator on the cluster: a
/// simulated node with a recent heartbeat. Panics with instructions when there is none.
pub async fn require_node_sim(client: &Client, cluster: u8) {
    let nodes: Api<Node> = Api::all(client.clone());
    let what = format!("a running node simulator on cluster {cluster} ({HOW_TO_START})");
    eventually_within(Duration::from_secs(15), &what, async || {
        let listed = nodes
            .list(&ListParams::default().labels("sim.flotilla.dev/simulated=true"))
            .await
            .map_err(|error| error.to_string())?;
        if listed.items.iter().any(heartbeat_is_fresh) {
            Ok(())
        } else {
            Err(format!(
                "{} simulated node(s), none with a fresh Ready heartbeat",
                listed.items.len()
            ))
        }
    })
    .await;
}

/// True when the node's Ready condition was refreshed within three heartbeat periods.
fn heartbeat_is_fresh(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
    let ready =
        conditions.and_then(|c| c.iter().find(|c| c.type_ == "Ready" && c.status == "True"));
    ready
        .and_then(|c| c.last_heartbeat_time.as_ref())
        .is_some_and(|beat| Timestamp::now().duration_since(beat.0).as_secs() < 3 * 10 + 5)
}

/// A namespace created for one test.
pub struct TestNamespace {
    /// The cluster's client.
    pub client: Client,
    /// The namespace's name.
    pub name: String,
}

impl TestNamespace {
    /// An API for namespaced objects of kind `K` in this namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }
}

/// Creates a uniquely named namespace on `cluster` (prefix `label`) once the cluster and its node
/// simulator are up, and waits until pods can be created in it (its default service account
/// exists; tokens are issued per pod, there is no token Secret to wait for).
pub async fn namespace(cluster: u8, label: &str) -> TestNamespace {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let client = client(cluster).await;
    require_node_sim(&client, cluster).await;
    let name = format!(
        "{label}-{}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        Timestamp::now().as_millisecond() % 100_000
    );
    let namespace: Namespace = object(serde_json::json!({"metadata": {"name": name}}));
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .unwrap_or_else(|error| panic!("creating namespace {name}: {error}"));
    let test = TestNamespace { client, name };
    let accounts: Api<ServiceAccount> = test.api();
    wait_until(&accounts, "default", "the default service account", |_| {
        true
    })
    .await;
    test
}

/// Deserializes a JSON manifest into a typed object, panicking on a malformed test fixture.
pub fn object<K: DeserializeOwned>(value: serde_json::Value) -> K {
    serde_json::from_value(value).expect("test manifest matches its type")
}

/// Server-side applies `object` (forcing ownership) and returns the result.
pub async fn apply<K>(api: &Api<K>, object: &K) -> K
where
    K: Resource + Clone + DeserializeOwned + Serialize + Debug,
{
    let name = object
        .meta()
        .name
        .clone()
        .expect("applied objects have a name");
    api.patch(
        &name,
        &PatchParams::apply(FIELD_MANAGER).force(),
        &Patch::Apply(object),
    )
    .await
    .unwrap_or_else(|error| panic!("applying {name}: {error}"))
}

/// Polls `name` until `condition` holds and returns it; fails the test after [`TIMEOUT`] showing
/// the last state seen.
pub async fn wait_until<K>(
    api: &Api<K>,
    name: &str,
    what: &str,
    condition: impl Fn(&K) -> bool,
) -> K
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    eventually(what, async || {
        let current = api
            .get_opt(name)
            .await
            .unwrap_or_else(|error| panic!("reading {name}: {error}"));
        match current {
            Some(object) if condition(&object) => Ok(object),
            other => Err(format!("{name}: {other:#?}")),
        }
    })
    .await
}

/// Retries `attempt` every 100 ms until it returns `Ok`; after [`TIMEOUT`] fails the test with
/// the last `Err` description.
pub async fn eventually<T>(what: &str, attempt: impl AsyncFn() -> Result<T, String>) -> T {
    eventually_within(TIMEOUT, what, attempt).await
}

/// [`eventually`] with its own time limit.
pub async fn eventually_within<T>(
    timeout: Duration,
    what: &str,
    attempt: impl AsyncFn() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match attempt().await {
            Ok(value) => return value,
            Err(last) if Instant::now() >= deadline => {
                panic!("timed out after {timeout:?} waiting for {what}; last seen: {last}")
            }
            Err(_) => tokio::time::sleep(POLL).await,
        }
    }
}

/// Installs Flotilla's CRDs (server-side apply) and waits until each is Established.
pub async fn install_flotilla_crds(client: &Client) {
    for (_, crd) in flotilla_core::api::crd::all() {
        install_crd(client, &crd).await;
    }
}

/// Creates the AppProject `name` in `ns` permitting every repository, destination and kind,
/// as a platform team creates the project its ApplicationSets name (the controller refuses
/// Applications of a project that does not exist).
pub async fn permissive_project(ns: &TestNamespace, name: &str) {
    let project = object(serde_json::json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": name},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]
        }
    }));
    apply(&ns.api::<flotilla_core::api::AppProject>(), &project).await;
}

/// Installs `crd` (server-side apply) and waits until it is Established.
pub async fn install_crd(
    client: &Client,
    crd: &k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
) {
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> = Api::all(client.clone());
    let name = crd.metadata.name.clone().expect("named");
    apply(&crds, crd).await;
    wait_until(&crds, &name, "condition Established", |c| {
        c.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
            })
    })
    .await;
}

/// The operator's write: `status` on the custom resource `name` (a merge patch of its status
/// subresource).
pub async fn write_status(
    api: &Api<kube::api::DynamicObject>,
    name: &str,
    status: serde_json::Value,
) {
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({ "status": status })),
    )
    .await
    .unwrap_or_else(|e| panic!("writing the status of {name}: {e}"));
}

/// A namespaced custom resource definition of `kind` in `group` (v1), any fields, with a
/// status subresource — as operators define theirs (a group under `k8s.io`, such as the Gateway
/// API's, marked as the API server requires).
pub async fn install_kind(client: &Client, group: &str, kind: &str, plural: &str) -> ApiResource {
    let annotations = if group.ends_with(".k8s.io") {
        serde_json::json!({"api-approved.kubernetes.io": "unapproved, a test fixture"})
    } else {
        serde_json::json!({})
    };
    let crd = object(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}"), "annotations": annotations},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase()},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }));
    install_crd(client, &crd).await;
    ApiResource {
        group: group.to_owned(),
        version: "v1".to_owned(),
        api_version: format!("{group}/v1"),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    }
}

/// Runs the `flotilla` binary with `args` and no cluster: whether it succeeded, its stdout and
/// its stderr.
pub fn flotilla_offline(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .args(args)
        .output()
        .expect("flotilla runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `flotilla ARGS -n <the test's namespace> --kubeconfig <cluster 1>`, not yet run.
pub fn flotilla(ns: &TestNamespace, args: &[&str]) -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_flotilla"));
    command
        .args(args)
        .arg("-n")
        .arg(&ns.name)
        .arg("--kubeconfig")
        .arg(kubeconfig_path(1));
    command
}

/// Runs [`flotilla`] to its end.
pub async fn run_flotilla(ns: &TestNamespace, args: &[&str]) -> std::process::Output {
    let mut command = flotilla(ns, args);
    tokio::task::spawn_blocking(move || command.output().expect("flotilla runs"))
        .await
        .expect("joined")
}

/// `GET path` from the HTTP/1.1 server at `address` (the web view): the status and the body.
pub async fn http_get(address: std::net::SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("the server accepts connections");
    let request = format!("GET {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut response = String::new();
    stream.read_to_string(&mut response).await.expect("reads");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("an HTTP answer: {response}"));
    (status, body.to_owned())
}

/// Every Application, ApplicationSet and Event (both APIs) of the namespace, as JSON text: what
/// a person reads of what the controller wrote there.
pub async fn everything_written(ns: &TestNamespace) -> String {
    let params = ListParams::default();
    let apps = ns
        .api::<flotilla_core::api::Application>()
        .list(&params)
        .await
        .expect("lists");
    let appsets = ns
        .api::<flotilla_core::api::ApplicationSet>()
        .list(&params)
        .await
        .expect("lists");
    let events = ns
        .api::<k8s_openapi::api::events::v1::Event>()
        .list(&params)
        .await
        .expect("lists");
    let core_events = ns
        .api::<k8s_openapi::api::core::v1::Event>()
        .list(&params)
        .await
        .expect("lists");
    [
        serde_json::to_string(&apps.items),
        serde_json::to_string(&appsets.items),
        serde_json::to_string(&events.items),
        serde_json::to_string(&core_events.items),
    ]
    .into_iter()
    .map(|text| text.expect("serialises"))
    .collect::<Vec<_>>()
    .join("\n")
}

/// What the controller serving `/metrics` at `metrics` answers (the whole HTTP response).
pub fn scrape_metrics(metrics: std::net::SocketAddr) -> Result<String, String> {
    use std::io::{Read as _, Write as _};
    let mut stream = std::net::TcpStream::connect(metrics).map_err(|e| e.to_string())?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: flotilla\r\nconnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut scraped = String::new();
    stream
        .read_to_string(&mut scraped)
        .map_err(|e| e.to_string())?;
    Ok(scraped)
}
