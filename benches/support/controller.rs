//! What the benchmarks that run the real `flotilla controller` share: a client of the test
//! control plane (`tests/controlplane/start.sh`), a fresh namespace with Flotilla's CRDs and the
//! release binary started as a process (their git repositories: `support/git.rs`), the process's
//! memory and CPU and the counters of its `/metrics`, the wait until a fleet is Synced and
//! Healthy, the API server's request counts, the `Widget` CRD whose readiness a benchmark sets
//! itself, and percentiles of measured delays.

#![allow(dead_code, reason = "each benchmark uses a part of the harness")]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};

/// The control plane's directory (`FLOTILLA_CONTROLPLANE_DIR`).
pub fn plane_dir() -> PathBuf {
    std::env::var_os("FLOTILLA_CONTROLPLANE_DIR").map_or_else(
        || PathBuf::from("/tmp/flotilla-controlplane"),
        PathBuf::from,
    )
}

/// The kubeconfig of the control plane's cluster 1.
pub fn kubeconfig() -> PathBuf {
    plane_dir().join("cluster1.kubeconfig")
}

/// A client of `kubeconfig`.
pub async fn client(kubeconfig: &Path) -> Client {
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig"),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("kubeconfig");
    Client::try_from(config).expect("client")
}

/// Creates namespace `name` and installs (or updates) Flotilla's CRDs.
pub async fn namespace_with_crds(client: &Client, name: &str) {
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("creating the namespace");
    for (_, crd) in flotilla_core::api::crd::all() {
        let name = crd.metadata.name.clone().unwrap();
        Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(client.clone())
            .patch(&name, &PatchParams::apply("bench").force(), &Patch::Apply(&crd))
            .await
            .expect("installing the CRDs");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// A `flotilla controller` process, killed when dropped (a benchmark that panics leaves none
/// running).
pub struct Controller(Child);

impl std::ops::Deref for Controller {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Controller {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `flotilla controller` (`target/release/flotilla`, or the binary `FLOTILLA_BIN` names)
/// for `namespace`, serving `/metrics` on `endpoint`, logging (warnings) to `log`.
pub fn start_controller(
    kubeconfig: &Path,
    namespace: &str,
    endpoint: std::net::SocketAddr,
    log: &Path,
) -> Controller {
    start_controller_with(kubeconfig, namespace, endpoint, log, &[])
}

/// [`start_controller`] with the further arguments `args`.
pub fn start_controller_with(
    kubeconfig: &Path,
    namespace: &str,
    endpoint: std::net::SocketAddr,
    log: &Path,
    args: &[&str],
) -> Controller {
    let child = Command::new(flotilla_binary())
        .args(["controller", "-n", namespace, "--kubeconfig"])
        .arg(kubeconfig)
        .arg("--metrics-addr")
        .arg(endpoint.to_string())
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("starting the controller");
    Controller(child)
}

/// `target/release/flotilla`, or the binary `FLOTILLA_BIN` names.
pub fn flotilla_binary() -> PathBuf {
    let binary = std::env::var_os("FLOTILLA_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/flotilla"),
        PathBuf::from,
    );
    assert!(
        binary.exists(),
        "run `cargo build --release --bin flotilla` first"
    );
    binary
}

/// The number the environment variable `name` holds, else `default`.
pub fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A loopback address free a moment ago.
pub fn free_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
}

/// The API server's requests so far (`apiserver_request_total`), by
/// `verb resource[/subresource][ (dry run)]`.
pub async fn api_requests(client: &Client) -> std::collections::BTreeMap<String, u64> {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("a request");
    let text = client
        .request_text(request)
        .await
        .expect("the API server's metrics");
    let mut requests = std::collections::BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|pair| pair.strip_prefix(name)?.strip_prefix("=\""))
                .map_or("", |v| v.trim_end_matches('"'))
        };
        let mut key = format!("{} {}", label("verb"), label("resource"));
        if !label("subresource").is_empty() {
            key = format!("{key}/{}", label("subresource"));
        }
        if !label("dry_run").is_empty() {
            key.push_str(" (dry run)");
        }
        *requests.entry(key).or_default() += value.parse::<f64>().unwrap_or(0.0) as u64;
    }
    requests
}

/// The API server's write requests so far: [`api_requests`] of every verb but `GET`, `LIST`,
/// `WATCH` and `CONNECT`.
pub async fn api_writes(client: &Client) -> std::collections::BTreeMap<String, u64> {
    let mut requests = api_requests(client).await;
    requests.retain(|key, _| {
        !matches!(
            key.split(' ').next(),
            Some("GET" | "LIST" | "WATCH" | "CONNECT")
        )
    });
    requests
}

/// `after - before` of [`api_writes`], without the keys that did not grow.
pub fn writes_between(
    before: &std::collections::BTreeMap<String, u64>,
    after: &std::collections::BTreeMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    after
        .iter()
        .map(|(key, n)| (key.clone(), n - before.get(key).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// Installs the `Widget` CRD ([`widget_crd`]) and returns the Widgets of `namespace`.
pub async fn widgets(client: &Client, namespace: &str) -> Api<kube::api::DynamicObject> {
    Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(client.clone())
        .patch(
            "widgets.bench.flotilla.dev",
            &PatchParams::apply("bench").force(),
            &Patch::Apply(widget_crd()),
        )
        .await
        .expect("installing the Widget CRD");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let resource = kube::discovery::ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk(
        "bench.flotilla.dev",
        "v1",
        "Widget",
    ));
    Api::namespaced_with(client.clone(), namespace, &resource)
}

/// The `Widget` CRD (`bench.flotilla.dev/v1`): an object a benchmark plays the operator of,
/// Healthy once it sets its condition `Ready=True`.
pub fn widget_crd()
-> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.bench.flotilla.dev"},
        "spec": {
            "group": "bench.flotilla.dev",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    }))
    .expect("a CRD")
}

/// `p50 … ms, p95 … ms, p99 … ms, max … ms` of `durations` (`none` when empty).
pub fn percentiles(mut durations: Vec<Duration>) -> String {
    if durations.is_empty() {
        return "none".to_owned();
    }
    durations.sort_unstable();
    let at = |q: f64| {
        let index = ((durations.len() as f64 - 1.0) * q).round() as usize;
        durations[index].as_secs_f64() * 1000.0
    };
    format!(
        "p50 {:.0} ms, p95 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        at(0.5),
        at(0.95),
        at(0.99),
        at(1.0)
    )
}

/// `(VmRSS, VmHWM)` in KiB and `utime + stime` in clock ticks of process `pid`.
pub fn process_usage(pid: u32) -> (u64, u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("process status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("process stat");
    let after_name = &stat[stat.rfind(')').expect("stat has a name") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    (field("VmRSS:"), field("VmHWM:"), ticks)
}

/// The sum of the counter `metric` over its labels, scraped from the controller's `/metrics` at
/// `endpoint`.
pub fn counter(endpoint: std::net::SocketAddr, metric: &str) -> u64 {
    scrape(endpoint)
        .lines()
        .filter(|line| {
            line.strip_prefix(metric)
                .is_some_and(|rest| rest.starts_with(['{', ' ']))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// The metrics `endpoint` serves, as scraped.
fn scrape(endpoint: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(endpoint).expect("the metrics endpoint");
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: bench\r\nconnection: close\r\n\r\n")
        .expect("a request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    response
}

/// The samples of the counter `metric` at `endpoint`, summed by the values of `labels`.
pub fn counters_by(
    endpoint: std::net::SocketAddr,
    metric: &str,
    labels: &[&str],
) -> std::collections::BTreeMap<Vec<String>, u64> {
    let mut sums = std::collections::BTreeMap::new();
    for line in scrape(endpoint).lines() {
        let Some(rest) = line.strip_prefix(metric).and_then(|r| r.strip_prefix('{')) else {
            continue;
        };
        let Some((set, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        let key = labels
            .iter()
            .map(|label| {
                set.split(',')
                    .find_map(|pair| pair.strip_prefix(&format!("{label}=\"")))
                    .map_or_else(String::new, |v| v.trim_end_matches('"').to_owned())
            })
            .collect();
        *sums.entry(key).or_insert(0) += value as u64;
    }
    sums
}

/// Waits until all `apps` Applications are Synced and Healthy, following them with a watch
/// (listing thousands every few seconds would load the API server being measured); the time
/// that took.
pub async fn converge(applications: &Api<flotilla_core::api::Application>, apps: u64) -> Duration {
    use flotilla_core::api::application_set_status::SyncStatusCode;
    use flotilla_core::health::HealthStatus;
    use futures::StreamExt as _;
    let started = std::time::Instant::now();
    let (seen, writer) = kube::runtime::reflector::store();
    let events = kube::runtime::reflector(
        writer,
        kube::runtime::watcher(applications.clone(), Default::default()),
    );
    let following = tokio::spawn(events.for_each(|_| async {}));
    loop {
        let ready = seen
            .state()
            .iter()
            .filter(|app| {
                app.status.as_ref().is_some_and(|s| {
                    s.sync
                        .as_ref()
                        .is_some_and(|s| s.status == SyncStatusCode::Synced)
                        && s.health
                            .as_ref()
                            .is_some_and(|h| h.status == HealthStatus::Healthy)
                })
            })
            .count() as u64;
        if ready == apps {
            break;
        }
        if started.elapsed().as_secs().is_multiple_of(30) {
            eprintln!(
                "{:>5.0} s: {ready}/{apps} Synced and Healthy",
                started.elapsed().as_secs_f64()
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(3600),
            "only {ready} of {apps} Applications Synced and Healthy after an hour"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    following.abort();
    started.elapsed()
}
