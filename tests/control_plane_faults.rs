//! Faults of the controller's own control plane, each on a control plane of the test's own (one
//! etcd and one kube-apiserver started by `tests/controlplane/start.sh` on free ports, in a
//! temporary directory, with an audit log; `support::private_plane`), never the shared one:
//! the API server paused (SIGSTOP) for 45 s while a RollingSync bakes between two steps (the
//! replica's `/readyz` says it is not ready meanwhile, and ready again after); the API
//! server killed and started again on the same etcd while a sync is between its waves; etcd
//! compacted while the API server is away, so every watch resumes into 410 Gone. The tests run
//! one at a time (each starts servers and waits through a fault); everything they start is
//! stopped when they end, failed or not.

mod controller_support;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use flotilla_core::api::application_set_status::RolloutApplicationState as State;
use flotilla_core::api::operation_state::{OperationPhase, ResultStatus};
use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use kube::api::ListParams;
use serde_json::json;

use controller_support::{commit_apps, repository, web_application};
use support::private_plane::{
    ControlPlane, Replica, audited_lists, audited_writes, signal, writes_without_lease,
};
use support::sync_times::sync_times;
use support::{apply, eventually_within, object};

const NAMESPACE: &str = "faults";
const IDENTITY: &str = "solo";
const LEASE: &str = "flotilla-controller";
const RENEW_DEADLINE: Duration = Duration::from_secs(6);
/// The figure: far beyond the Lease duration (8 s).
const PAUSE: Duration = Duration::from_secs(45);
/// Generous: the tests must hold on a slow, shared 2-core machine.
const WAIT: Duration = Duration::from_secs(240);

/// One fault test at a time.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A private control plane with Flotilla's CRDs and the namespace [`NAMESPACE`].
async fn plane() -> (ControlPlane, kube::Client) {
    support::plane_with_namespace(&[IDENTITY], NAMESPACE).await
}

/// The one replica of a test, leading with short Lease timings (8 s, renew deadline 6 s), its
/// metrics at `metrics`, and `args`.
fn start_replica(plane: &ControlPlane, metrics: std::net::SocketAddr, args: &[&str]) -> Replica {
    let metrics = metrics.to_string();
    let mut all = vec![
        "--shards",
        "1",
        "--lease-duration",
        "8s",
        "--renew-deadline",
        "6s",
        "--retry-period",
        "1s",
        "--repo-refresh",
        "0s",
        "--metrics-addr",
        &metrics,
    ];
    all.extend_from_slice(args);
    Replica::start(plane, NAMESPACE, IDENTITY, &all)
}

/// A free port on loopback.
fn free_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
}

/// The sum of the samples of metric `name` the controller at `metrics` serves.
fn metric(metrics: std::net::SocketAddr, name: &str) -> Result<f64, String> {
    Ok(support::scrape_metrics(metrics)?
        .lines()
        .filter(|line| line.split([' ', '{']).next() == Some(name))
        .filter_map(|line| line.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum())
}

/// The manifests of component `name` at `version`: a PreSync hook ConfigMap `<name>-presync`
/// (kept after it succeeds, recreated by the next sync) and ConfigMaps `<name>-<wave>` in sync
/// waves 0 to `waves - 1`.
fn component(name: &str, version: &str, waves: u32) -> String {
    let mut manifests = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-presync\n  annotations:\n    \
         argocd.argoproj.io/hook: PreSync\n    argocd.argoproj.io/hook-delete-policy: BeforeHookCreation\n\
         data:\n  version: \"{version}\"\n"
    );
    for wave in 0..waves {
        manifests.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}-{wave}\n  annotations:\n    \
             argocd.argoproj.io/sync-wave: \"{wave}\"\ndata:\n  version: \"{version}\"\n"
        ));
    }
    manifests
}

/// How many times the replica created the ConfigMap `name` (a server-side apply answered 201
/// Created, not a dry run): how many times a hook of that name ran.
fn created(plane: &ControlPlane, name: &str) -> usize {
    audited_writes(&plane.path("logs/audit1.log"))
        .iter()
        .filter(|w| w.user == IDENTITY && w.what == format!("patch configmaps/{name}"))
        .filter(|w| w.code == 201 && !w.dry_run())
        .count()
}

/// Every write of the replica was sent while it held the Lease (the API server was stopped
/// during `pauses`).
fn assert_every_write_held_the_lease(plane: &ControlPlane, pauses: &[(Timestamp, Timestamp)]) {
    let writes = audited_writes(&plane.path("logs/audit1.log"));
    let outside = writes_without_lease(&writes, &[IDENTITY], LEASE, RENEW_DEADLINE, pauses);
    assert!(
        outside.is_empty(),
        "writes more than the renew deadline after the replica's last Lease write: {outside:#?}"
    );
}

/// The three-step RollingSync `stack` over components `a`, `b`, `c` of `url`, step 1 baking for
/// `bake`.
fn rolling_stack(url: &str, bake: &str) -> ApplicationSet {
    let step =
        |n: &str| json!({"matchExpressions": [{"key": "step", "operator": "In", "values": [n]}]});
    let mut first = step("1");
    first["bakeTime"] = json!(bake);
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "stack"},
        "spec": {
            "generators": [{"list": {"elements": [
                {"name": "a", "step": "1"}, {"name": "b", "step": "2"}, {"name": "c", "step": "3"}
            ]}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [first, step("2"), step("3")]}},
            "template": {
                "metadata": {"name": "{{name}}", "labels": {"step": "{{step}}"}},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": url, "targetRevision": "main", "path": "apps/{{name}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": NAMESPACE},
                    "syncPolicy": {"automated": {"prune": true}}
                }
            }
        }
    }))
}

/// What a list request watches: its path and selectors (without its resourceVersion, limit or
/// timeout).
fn watched(uri: &str) -> String {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let selectors: Vec<&str> = query
        .split('&')
        .filter(|p| p.starts_with("labelSelector=") || p.starts_with("fieldSelector="))
        .collect();
    format!("{path}?{}", selectors.join("&"))
}

#[tokio::test]
async fn a_rolling_sync_baking_while_its_api_server_is_stopped_45s_completes_in_order_and_says_so()
{
    let _serial = SERIAL.lock().await;
    let (plane, client) = plane().await;
    let repo = repository();
    let names = ["a", "b", "c"];
    let revision = commit_apps(repo.path(), &names, "1", |n, v| component(n, v, 1));
    let url = format!("file://{}", repo.path().display());
    let metrics = free_address();
    let replica = start_replica(&plane, metrics, &["--app-resync", "2s"]);
    let appsets: Api<ApplicationSet> = Api::namespaced(client.clone(), NAMESPACE);
    let apps: Api<Application> = Api::namespaced(client.clone(), NAMESPACE);
    let bake = Duration::from_secs(20);
    apply(&appsets, &rolling_stack(&url, "20s")).await;

    // Step 1 is Healthy and baking: step 2 waits for its gate. The API server stops.
    eventually_within(WAIT, "step 1 baking", async || {
        let appset = appsets.get("stack").await.map_err(|e| e.to_string())?;
        let status = appset.status.unwrap_or_default();
        let baking = status
            .rollout_steps
            .iter()
            .any(|s| s.step == 1 && s.bake_started_at.is_some() && s.baked_at.is_none());
        baking
            .then_some(())
            .ok_or(format!("{:?}", status.rollout_steps))
    })
    .await;
    let stops_before = replica.stops();
    signal(plane.apiserver, libc::SIGSTOP);
    let paused_at = Timestamp::now();
    let pause = std::time::Instant::now();
    // While its Lease reads go unanswered, the replica says it is not ready, and why.
    let unready = eventually_within(PAUSE, "/readyz not ready while stopped", async || {
        match support::http_get(metrics, "/readyz").await {
            (503, body) => Ok(body),
            (status, body) => Err(format!("{status} {body}")),
        }
    })
    .await;
    tokio::time::sleep(PAUSE.saturating_sub(pause.elapsed())).await;
    signal(plane.apiserver, libc::SIGCONT);
    let resumed_at = Timestamp::now();
    println!("API server stopped {paused_at} .. {resumed_at}; /readyz meanwhile: {unready}");
    assert!(
        unready.contains("not ready: the API server has not answered a Lease read since "),
        "{unready}"
    );
    eventually_within(
        WAIT,
        "/readyz ready again",
        async || match support::http_get(metrics, "/readyz").await {
            (200, _) => Ok(()),
            (status, body) => Err(format!("{status} {body}")),
        },
    )
    .await;

    let (times, steps) = eventually_within(WAIT, "the rollout to complete", async || {
        let appset = appsets.get("stack").await.map_err(|e| e.to_string())?;
        let status = appset.status.unwrap_or_default();
        let healthy = status.application_status.len() == 3
            && status
                .application_status
                .iter()
                .all(|entry| entry.status == State::Healthy);
        if !healthy {
            return Err(format!("{:?}", status.application_status));
        }
        let mut times = Vec::new();
        for name in names {
            let app = apps.get(name).await.map_err(|e| e.to_string())?;
            let sync = app.status.and_then(|s| s.sync).unwrap_or_default();
            if sync.revision != revision {
                return Err(format!("{name} at {}", sync.revision));
            }
            times.push(sync_times(&apps, name).await?);
        }
        Ok((times, status.rollout_steps))
    })
    .await;
    println!("syncs (start, end) of a, b, c: {times:?}");

    // In order, each step after the one before it finished, step 2 after step 1's bake.
    for pair in times.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "a step's sync started before the previous one's finished: {times:?}"
        );
    }
    let first = steps.iter().find(|s| s.step == 1).expect("step 1's record");
    let (started, baked) = (
        first.bake_started_at.as_ref().expect("a bake start").0,
        first.baked_at.as_ref().expect("a bake end").0,
    );
    assert!(
        baked.duration_since(started).unsigned_abs() >= bake,
        "step 1 baked from {started} to {baked}, less than {bake:?}"
    );
    assert!(
        times[1].0 >= baked,
        "step 2 synced at {} before step 1's bake ended at {baked}",
        times[1].0
    );
    for name in names {
        assert_eq!(
            created(&plane, &format!("{name}-presync")),
            1,
            "{name}'s PreSync hook ran once"
        );
    }

    // It stopped acting when it could not renew, wrote nothing meanwhile, and says so.
    assert!(replica.stops() > stops_before, "the replica stopped acting");
    assert_every_write_held_the_lease(&plane, &[(paused_at, resumed_at)]);
    let lost = eventually_within(WAIT, "flotilla_leadership_lost_total", async || {
        let lost = metric(metrics, "flotilla_leadership_lost_total")?;
        (lost >= 1.0).then_some(lost).ok_or(format!("{lost}"))
    })
    .await;
    let events: Api<Event> = Api::namespaced(client.clone(), NAMESPACE);
    let note = eventually_within(WAIT, "a LeadershipLost Event on the Lease", async || {
        let listed = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        listed
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some("LeadershipLost")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(LEASE)
            })
            .and_then(|e| e.note)
            .ok_or("none".to_owned())
    })
    .await;
    println!("flotilla_leadership_lost_total {lost}; the Event: {note}");
    assert!(note.contains("solo stopped acting at"), "{note}");
}

#[tokio::test]
async fn a_sync_whose_api_server_is_killed_and_started_again_finishes_with_every_object_applied() {
    let _serial = SERIAL.lock().await;
    let (mut plane, client) = plane().await;
    let repo = repository();
    let waves = 3;
    let first = commit_apps(repo.path(), &["web"], "1", |n, v| component(n, v, waves));
    let url = format!("file://{}", repo.path().display());
    let replica = start_replica(
        &plane,
        free_address(),
        &["--app-resync", "2s", "--sync-wave-delay", "5s"],
    );
    let apps: Api<Application> = Api::namespaced(client.clone(), NAMESPACE);
    apply(&apps, &web_application(NAMESPACE, &url, json!({}))).await;
    let synced = async |revision: &str| {
        eventually_within(WAIT, &format!("web Synced at {revision}"), async || {
            let app = apps.get("web").await.map_err(|e| e.to_string())?;
            let status = app.status.unwrap_or_default();
            let sync = status.sync.unwrap_or_default();
            let operation = status.operation_state.ok_or("no operation")?;
            let done = sync.revision == revision
                && sync.status.as_str() == "Synced"
                && operation.revision.as_deref() == Some(revision)
                && operation.finished_at.is_some();
            done.then_some(operation).ok_or(format!(
                "{} at {}",
                sync.status.as_str(),
                sync.revision
            ))
        })
        .await
    };
    synced(&first).await;

    // The second revision's sync has applied wave 0 and waits before wave 1: the API server
    // is killed and started again.
    let second = commit_apps(repo.path(), &["web"], "2", |n, v| component(n, v, waves));
    let running = eventually_within(WAIT, "the sync between waves 0 and 1", async || {
        let app = apps.get("web").await.map_err(|e| e.to_string())?;
        let operation = app
            .status
            .and_then(|s| s.operation_state)
            .ok_or("no operation")?;
        let applied = |name: &str| {
            operation
                .resources
                .iter()
                .any(|r| r.name == name && r.status == ResultStatus::Synced)
        };
        let between = operation.revision.as_deref() == Some(second.as_str())
            && operation.finished_at.is_none()
            && applied("web-0")
            && !applied("web-1");
        between
            .then(|| operation.operation_id.clone())
            .ok_or(format!("{:?} {:?}", operation.phase, operation.resources))
    })
    .await;
    let writes_before = audited_writes(&plane.path("logs/audit1.log")).len();
    plane = tokio::task::spawn_blocking(move || {
        plane.restart_apiserver();
        plane
    })
    .await
    .expect("restarted");
    println!("API server restarted during operation {running}");
    let operation = synced(&second).await;
    println!(
        "operation {} {:?}: {}",
        operation.operation_id, operation.phase, operation.message
    );
    assert_eq!(operation.phase, OperationPhase::Succeeded, "{operation:?}");

    // Every object is on the second revision, applied once (or once more, if the sync was
    // retried); the hook ran once for the revision.
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    for wave in 0..waves {
        let name = format!("web-{wave}");
        let live = config_maps.get(&name).await.expect("the ConfigMap");
        assert_eq!(
            live.data
                .unwrap_or_default()
                .get("version")
                .map(String::as_str),
            Some("2"),
            "{name} applied"
        );
    }
    let writes = audited_writes(&plane.path("logs/audit1.log"));
    let after: BTreeMap<&str, usize> = writes[writes_before..]
        .iter()
        .filter(|w| w.user == IDENTITY && !w.dry_run())
        .fold(BTreeMap::new(), |mut counts, w| {
            *counts.entry(w.what.as_str()).or_default() += 1;
            counts
        });
    println!("the replica's writes after the restart: {after:?}");
    let hook_runs = created(&plane, "web-presync");
    assert_eq!(hook_runs, 2, "the PreSync hook ran once per revision");
    for wave in 1..waves {
        let applies = after
            .get(format!("patch configmaps/web-{wave}").as_str())
            .copied()
            .unwrap_or_default();
        assert!(
            (1..=2).contains(&applies),
            "web-{wave} applied once, or once more on a retry: {applies}"
        );
    }
    assert_every_write_held_the_lease(&plane, &[]);
    drop(replica);
}

#[tokio::test]
async fn watches_refused_after_an_etcd_compaction_relist_once_and_miss_nothing() {
    let _serial = SERIAL.lock().await;
    let (mut plane, client) = plane().await;
    let repo = repository();
    let names = ["a", "b", "c"];
    let revision = commit_apps(repo.path(), &names, "1", |n, v| component(n, v, 1));
    let url = format!("file://{}", repo.path().display());
    // A long Lease: the replica keeps leading through the fault, so its watchers are not
    // restarted and every list after it is a relist.
    let replica = Replica::start(
        &plane,
        NAMESPACE,
        IDENTITY,
        &[
            "--shards",
            "1",
            "--lease-duration",
            "120s",
            "--renew-deadline",
            "100s",
            "--retry-period",
            "2s",
            "--repo-refresh",
            "0s",
            "--app-resync",
            "600s",
        ],
    );
    let appsets: Api<ApplicationSet> = Api::namespaced(client.clone(), NAMESPACE);
    let apps: Api<Application> = Api::namespaced(client.clone(), NAMESPACE);
    let two = controller_support::appset(NAMESPACE, &url, &names[..2], json!({}));
    apply(&appsets, &two).await;
    let synced = async |name: &str| {
        eventually_within(WAIT, &format!("{name} Synced at {revision}"), async || {
            let app = apps.get(name).await.map_err(|e| e.to_string())?;
            let sync = app.status.and_then(|s| s.sync).unwrap_or_default();
            (sync.status.as_str() == "Synced" && sync.revision == revision)
                .then_some(())
                .ok_or(format!("{} at {}", sync.status.as_str(), sync.revision))
        })
        .await;
    };
    synced("a").await;
    synced("b").await;

    // While the replica is paused, the API server is killed and started again (its watch cache
    // starts after every resourceVersion the replica has seen), the ApplicationSet gains an
    // Application, and etcd is compacted past all of it: only a relist can tell the replica.
    signal(replica.pid(), libc::SIGSTOP);
    let plane = tokio::task::spawn_blocking(move || {
        plane.restart_apiserver();
        plane
    })
    .await
    .expect("restarted");
    let three = controller_support::appset(NAMESPACE, &url, &names, json!({}));
    apply(&appsets, &three).await;
    let compacted = plane.compact_etcd();
    let resumed = Timestamp::now();
    signal(replica.pid(), libc::SIGCONT);
    println!("etcd compacted at revision {compacted}; the replica resumed at {resumed}");
    synced("c").await;

    // Each watch was refused and listed again once: settle, then count the replica's watchers'
    // answered lists (paged, `limit=`; other lists are reads of a reconcile) of the API server
    // that came back against their lists at start (one per watcher). A list the restarted server
    // refused while its cache filled (and the watcher asked again) is not a second relist.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let lists = audited_lists(&plane.path("logs/audit1.log"));
    let count = |after: bool| {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for list in lists.iter().filter(|l| {
            l.user == IDENTITY
                && l.code == 200
                && (l.received >= resumed) == after
                && l.uri.contains("limit=")
                && !l.uri.contains("continue=")
        }) {
            *counts.entry(watched(&list.uri)).or_default() += 1;
        }
        counts
    };
    let (at_start, relists) = (count(false), count(true));
    let refused: Vec<(u64, &str)> = lists
        .iter()
        .filter(|l| l.user == IDENTITY && l.code != 200 && l.received >= resumed)
        .map(|l| (l.code, l.uri.as_str()))
        .collect();
    println!("lists the restarted server refused: {refused:?}");
    println!("the replica's lists at start: {at_start:#?}\nafter it resumed: {relists:#?}");
    for kind in ["applicationsets", "applications", "appprojects"] {
        let path = format!("/apis/flotilla.dev/v1alpha1/namespaces/{NAMESPACE}/{kind}?");
        assert!(
            relists.get(&path).is_some_and(|n| *n >= 1),
            "the {kind} watch was refused and listed again: {relists:?}"
        );
    }
    for (path, n) in &relists {
        let watchers = at_start.get(path).copied().unwrap_or_default();
        assert!(
            *n <= watchers,
            "{path} listed {n} times after the compaction, by {watchers} watchers: once each at most"
        );
    }
    assert_eq!(replica.stops(), 0, "the replica kept its Lease throughout");
    let refused = replica.logged("410") + replica.logged("too old resource version");
    println!("410s logged: {refused}");
    drop(replica);
}
