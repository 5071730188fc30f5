//! The relist storm: what one `flotilla controller` asks of its API server when every watch it
//! holds is refused at once and it lists everything again, as after an API server restart or an
//! etcd compaction. On a control plane of its own (one etcd, one kube-apiserver started by
//! `tests/controlplane/start.sh` on free ports, with an audit log of the controller's writes and
//! lists; `tests/support/private_plane.rs`), `APPS` (default 10,000) Applications of one
//! ApplicationSet (a ConfigMap each, `support/fleet.rs`) are synced; once they are all Synced and
//! Healthy and its steady request rate has been measured over `SETTLE_SECS` (default 30), etcd
//! is compacted at its current revision and the API server killed and started again on the same
//! etcd: neither its new watch cache nor etcd (which serves watches while the cache fills) can
//! resume a watch from a resourceVersion the controller has seen, so each resumed watch gets
//! 410 Gone and relists.
//! Until the controller's requests in 10 s are back to its steady rate (Lease renewals,
//! resyncs; measured over `SETTLE_SECS` before the restart), counted:
//!
//! - the controller's requests (its `argocd_app_k8s_request_total`, every verb, retries too);
//! - the API server's requests by verb and resource (`apiserver_request_total` of the restarted
//!   server, which starts at zero; every client, the benchmark's own few reads included);
//! - from the audit log, the controller's lists (pages) per watched path and its writes.
//!
//! `cargo bench --bench relist_storm` (release) or `cargo test --release --bench relist_storm`;
//! `APPS=2000 cargo test --bench relist_storm` for a debug build. Not part of the test command.

#[path = "support/fleet.rs"]
mod fleet;
#[path = "support/git.rs"]
mod git;
#[path = "support/controller.rs"]
mod harness;
#[path = "../tests/support/private_plane.rs"]
#[allow(
    dead_code,
    reason = "the benchmark uses a part of the tests' private control plane"
)]
mod private_plane;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};

use fleet::{Source, application_set, repository};
use harness::env_or;
use private_plane::{ControlPlane, Replica, audited_lists, audited_writes};

const NAMESPACE: &str = "storm";
const IDENTITY: &str = "storm";

/// The `RUST_LOG` of the controller `private_plane::Replica` starts.
fn controller_log_filter() -> String {
    "warn".to_owned()
}

/// The controller's requests so far (its `argocd_app_k8s_request_total`, summed over its labels).
fn controller_requests(endpoint: std::net::SocketAddr) -> u64 {
    harness::counter(endpoint, "argocd_app_k8s_request_total")
}

/// The controller's requests a second over `window`.
async fn rate(endpoint: std::net::SocketAddr, window: Duration) -> f64 {
    let before = controller_requests(endpoint);
    tokio::time::sleep(window).await;
    (controller_requests(endpoint) - before) as f64 / window.as_secs_f64()
}

/// Waits until the controller's requests in `slice` are back to `baseline` a second (its Lease
/// renewals and resyncs; half as many again, plus two, allowed); the time that took.
async fn until_back_to(endpoint: std::net::SocketAddr, baseline: f64, slice: Duration) -> Duration {
    let started = Instant::now();
    let limit = baseline * slice.as_secs_f64() * 1.5 + 2.0;
    loop {
        let from = Instant::now();
        let counted = rate(endpoint, slice).await * slice.as_secs_f64();
        if counted <= limit {
            return from.duration_since(started);
        }
        assert!(
            started.elapsed() < Duration::from_secs(3600),
            "the controller's requests stayed above its steady rate for an hour"
        );
    }
}

fn main() {
    let apps = env_or("APPS", 10_000);
    let settle = Duration::from_secs(env_or("SETTLE_SECS", 30));
    let slice = Duration::from_secs(10);
    let work = tempfile::tempdir().expect("temporary directory");
    repository(work.path(), apps, Source::Directory);
    let mut plane = ControlPlane::start(&[IDENTITY]);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = plane.client().await;
        harness::namespace_with_crds(&client, NAMESPACE).await;
        let endpoint = harness::free_address();
        let replica = Replica::start(
            &plane,
            NAMESPACE,
            IDENTITY,
            &["--shards", "1", "--metrics-addr", &endpoint.to_string()],
        );
        let appset: ApplicationSet = serde_json::from_value(application_set(
            NAMESPACE,
            work.path(),
            apps,
            Source::Directory,
        ))
        .expect("an ApplicationSet");
        Api::<ApplicationSet>::namespaced(client.clone(), NAMESPACE)
            .patch("fleet", &PatchParams::apply("bench"), &Patch::Apply(&appset))
            .await
            .expect("creating the ApplicationSet");
        let applications: Api<Application> = Api::namespaced(client.clone(), NAMESPACE);
        let converged = harness::converge(&applications, apps).await;
        eprintln!(
            "{apps} Applications converged in {:.0} s",
            converged.as_secs_f64()
        );
        let baseline = rate(endpoint, settle).await;

        let before = controller_requests(endpoint);
        let restarted = Timestamp::now();
        plane = tokio::task::spawn_blocking(move || {
            plane.compact_etcd();
            plane.restart_apiserver();
            plane
        })
        .await
        .expect("the API server restarted");
        let storm = until_back_to(endpoint, baseline, slice).await;
        let requests = controller_requests(endpoint) - before;
        let above = requests as f64 - baseline * (storm + slice).as_secs_f64();
        let by_verb = harness::api_requests(&client).await;
        let lists = audited_lists(&plane.path("logs/audit1.log"));
        let mut pages: BTreeMap<String, u64> = BTreeMap::new();
        for list in lists
            .iter()
            .filter(|l| l.user == IDENTITY && l.received >= restarted)
        {
            let path = list.uri.split('?').next().unwrap_or_default().to_owned();
            *pages.entry(path).or_default() += 1;
        }
        let mut writes: BTreeMap<String, u64> = BTreeMap::new();
        for write in audited_writes(&plane.path("logs/audit1.log"))
            .iter()
            .filter(|w| w.user == IDENTITY && w.received >= restarted)
        {
            let what = write.what.rsplit_once('/').map_or(&*write.what, |(kind, _)| kind);
            *writes.entry(what.to_owned()).or_default() += 1;
        }
        println!("relist of {apps} Applications after an etcd compaction and an API server restart:");
        println!(
            "  the controller's requests until back to its steady {baseline:.1} a second ({:.0} s, and {} s at that rate): {requests}, {above:.0} above the steady rate = {:.3} per Application",
            storm.as_secs_f64(),
            slice.as_secs(),
            above / apps as f64
        );
        println!(
            "  the restarted API server's requests (every client), by verb and resource: {by_verb:#?}"
        );
        println!(
            "  the controller's lists (pages of 500): {} in all, {:?}",
            pages.values().sum::<u64>(),
            pages
                .iter()
                .filter(|(_, n)| **n > 1)
                .collect::<BTreeMap<_, _>>()
        );
        println!("  the controller's writes: {writes:?}");
        drop(replica);
    });
}
