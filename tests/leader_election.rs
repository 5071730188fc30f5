//! Leader election on a real control plane of its own (one etcd and one kube-apiserver started
//! by `tests/controlplane/start.sh` on free ports, in a temporary directory, with an audit log):
//! two `flotilla controller` processes, each authenticated as its own user, sync Applications
//! while the API server process is paused (SIGSTOP, SIGCONT) for twice the Lease duration, and
//! while the leading replica itself is paused until the other takes over. The audit log must then
//! show that successful writes never came from two identities in overlapping intervals, and that
//! every write of a replica followed its own Lease write by less than the renew deadline (no
//! write without a held Lease). The shared test control plane is never touched; everything started here is stopped even when the
//! test fails.

mod controller_support;
mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use serde_json::json;

use controller_support::{appset, commit_apps, repository};
use support::private_plane::{
    ControlPlane, Replica, Write, audited_writes, signal, writes_without_lease,
};
use support::{apply, eventually_within};

const NAMESPACE: &str = "leader";
const REPLICAS: [&str; 2] = ["replica-a", "replica-b"];
const LEASE_DURATION: Duration = Duration::from_secs(4);
const RENEW_DEADLINE: Duration = Duration::from_secs(3);
/// Longer than the Lease: every holder's renew deadline passes while the server is stopped.
const PAUSE: Duration = LEASE_DURATION.saturating_mul(2);
const WAIT: Duration = Duration::from_secs(40);

/// A replica of this test: one decider (`--shards 1`), short Lease timings.
fn start_replica(plane: &ControlPlane, identity: &'static str) -> Replica {
    Replica::start(
        plane,
        NAMESPACE,
        identity,
        &[
            // One decider: the leader reconciles every Application (tests/sharding.rs covers
            // replicas sharing them).
            "--shards",
            "1",
            "--lease-duration",
            &format!("{}s", LEASE_DURATION.as_secs()),
            "--renew-deadline",
            &format!("{}s", RENEW_DEADLINE.as_secs()),
            "--retry-period",
            "500ms",
            "--app-resync",
            "1s",
            "--repo-refresh",
            "0s",
        ],
    )
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt("flotilla-controller")
        .await
        .ok()
        .flatten()
        .and_then(|lease| lease.spec?.holder_identity)
}

async fn wait_for_holder(leases: &Api<Lease>, wanted: &str) {
    eventually_within(
        WAIT,
        &format!("{wanted} holding the Lease"),
        async || match holder(leases).await {
            Some(h) if h == wanted => Ok(()),
            other => Err(format!("{other:?}")),
        },
    )
    .await;
}

/// Waits until every Application is Synced at `revision`.
async fn synced(applications: &Api<Application>, names: &[&str], revision: &str) {
    eventually_within(
        WAIT,
        &format!("{names:?} Synced at {revision}"),
        async || {
            for name in names {
                let app = applications.get(name).await.map_err(|e| e.to_string())?;
                let sync = app.status.and_then(|s| s.sync).unwrap_or_default();
                if (sync.status.as_str(), sync.revision.as_str()) != ("Synced", revision) {
                    return Err(format!(
                        "{name}: {} at {}",
                        sync.status.as_str(),
                        sync.revision
                    ));
                }
            }
            Ok(())
        },
    )
    .await;
}

/// Commits a ConfigMap `<name>` with `version` for each of `names`.
fn commit_version(repo: &Path, names: &[&str], version: &str) -> String {
    commit_apps(repo, names, version, |name, version| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  version: \"{version}\"\n"
        )
    })
}

/// Consecutive writes of one identity.
struct Run {
    user: String,
    from: Timestamp,
    to: Timestamp,
    count: usize,
    first: String,
}

fn runs(writes: &[Write]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for write in writes {
        match runs.last_mut() {
            Some(run) if run.user == write.user => {
                run.to = run.to.max(write.completed);
                run.count += 1;
            }
            _ => runs.push(Run {
                user: write.user.clone(),
                from: write.received,
                to: write.completed,
                count: 1,
                first: write.what.clone(),
            }),
        }
    }
    runs
}

#[tokio::test]
async fn writes_never_come_from_two_replicas_at_once_across_a_paused_api_server_and_a_paused_leader()
 {
    let (plane, client) = support::plane_with_namespace(&REPLICAS, NAMESPACE).await;
    let leases: Api<Lease> = Api::namespaced(client.clone(), NAMESPACE);
    let applications: Api<Application> = Api::namespaced(client.clone(), NAMESPACE);
    let names = ["a", "b", "c"];
    let repo = repository();
    let mut revision = commit_version(repo.path(), &names, "1");
    let url = format!("file://{}", repo.path().display());

    let replicas = [
        start_replica(&plane, REPLICAS[0]),
        start_replica(&plane, REPLICAS[1]),
    ];
    let appsets: Api<ApplicationSet> = Api::namespaced(client.clone(), NAMESPACE);
    apply(&appsets, &appset(NAMESPACE, &url, &names, json!({}))).await;
    synced(&applications, &names, &revision).await;
    let first = holder(&leases).await.expect("a leader");
    println!("{first} leads; Applications synced at {revision}");

    // 1. The API server stops answering for longer than the Lease, while a new commit is due.
    revision = commit_version(repo.path(), &names, "2");
    let stops_before: usize = replicas.iter().map(Replica::stops).sum();
    signal(plane.apiserver, libc::SIGSTOP);
    let (paused, paused_at) = (Instant::now(), Timestamp::now());
    tokio::time::sleep(PAUSE).await;
    signal(plane.apiserver, libc::SIGCONT);
    let resumed_at = Timestamp::now();
    println!(
        "API server paused {paused_at} .. {resumed_at} ({:?})",
        paused.elapsed()
    );
    synced(&applications, &names, &revision).await;
    let stops_after: usize = replicas.iter().map(Replica::stops).sum();
    assert!(
        stops_after > stops_before,
        "the leader stopped acting when it could not renew within its deadline"
    );
    let second = holder(&leases).await.expect("a leader");
    println!("after the pause {second} leads; Applications synced at {revision}");

    // 2. The leader itself is paused until the other replica takes over, then resumed.
    let leader = replicas
        .iter()
        .find(|r| r.identity == second)
        .expect("a replica");
    let standby = replicas
        .iter()
        .find(|r| r.identity != second)
        .expect("a replica");
    signal(leader.pid(), libc::SIGSTOP);
    let (stopped, stopped_at) = (Instant::now(), Timestamp::now());
    wait_for_holder(&leases, standby.identity).await;
    println!(
        "{} paused at {stopped_at}; {} holds the Lease {:?} later",
        leader.identity,
        standby.identity,
        stopped.elapsed(),
    );
    revision = commit_version(repo.path(), &names, "3");
    synced(&applications, &names, &revision).await;
    let stops_before = leader.stops();
    signal(leader.pid(), libc::SIGCONT);
    println!("{} resumed at {}", leader.identity, Timestamp::now());
    eventually_within(
        WAIT,
        "the resumed replica noticing it lost the Lease",
        async || {
            if leader.stops() > stops_before {
                Ok(())
            } else {
                Err(format!("{} stops logged", leader.stops()))
            }
        },
    )
    .await;
    revision = commit_version(repo.path(), &names, "4");
    synced(&applications, &names, &revision).await;
    drop(replicas);
    for replica in &REPLICAS {
        let log =
            std::fs::read_to_string(plane.path(&format!("logs/{replica}.log"))).unwrap_or_default();
        for line in log
            .lines()
            .filter(|l| l.contains("leading") || l.contains("stopped acting"))
        {
            println!("  {line}");
        }
    }

    let writes = audited_writes(&plane.path("logs/audit1.log"));
    println!("who wrote when (from the audit log):");
    for run in runs(&writes) {
        let (user, from, to, count, first) = (run.user, run.from, run.to, run.count, run.first);
        println!("  {user}: {from} .. {to}, {count} writes, the first {first}");
    }
    let users: std::collections::BTreeSet<&str> = writes.iter().map(|w| w.user.as_str()).collect();
    assert_eq!(users.len(), 2, "both replicas led at some point: {users:?}");
    for (i, a) in writes.iter().enumerate() {
        for b in &writes[i + 1..] {
            assert!(
                a.user == b.user || a.completed < b.received || b.completed < a.received,
                "writes from two identities overlap: {a:?} and {b:?}"
            );
        }
    }
    let pauses = [(paused_at, resumed_at)];
    let outside = writes_without_lease(
        &writes,
        &REPLICAS,
        "flotilla-controller",
        RENEW_DEADLINE,
        &pauses,
    );
    assert!(
        outside.is_empty(),
        "writes more than the renew deadline after their replica's last Lease write: {outside:#?}"
    );
    for pair in runs(&writes).windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        assert!(
            before.to < after.from,
            "{} wrote until {} but {} started at {}",
            before.user,
            before.to,
            after.user,
            after.from
        );
    }
}
