//! Benchmark: the web view's Fleet page at 10,000 Applications (ten ApplicationSets of 1,000,
//! each with a three-step RollingSync status), rendered as a viewer's request renders it: the
//! snapshot of the watches' stores (sorted by name), the page for the address, and the whole
//! document. Three addresses: the first page unfiltered, page 2 of a label filter, and every
//! filter at once; and one ApplicationSet's page of 1,000 (its pipeline drawn). Then an
//! Application of 200 resources (50 Deployments, 50 Services, 100 ConfigMaps, its operation
//! over all of them): its page, and its resource tree page (the tree built from the objects
//! the page's reads return — each Deployment's ReplicaSet and two Pods, each Service's
//! EndpointSlice: 400 nodes — and drawn; the reads themselves are API round trips, not timed).
//! Wall time of each request, reported as p50, p95 and max over `SAMPLES` (default 200).
//! Targets: p95 < 150 ms at 10,000 Applications, < 100 ms for 200 resources (issue 49).
//!
//! Memory (the process's resident set, /proc/self/status): what the watches' stores of
//! 10,000 Applications hold, which the resource tree adds nothing to (it keeps no watch: its
//! objects are read when a tree is opened, and dropped once drawn), and the peak one opening
//! of the 200-resource tree adds while its objects are held.
//!
//! `cargo bench --bench web_fleet` (`APPS`, `SAMPLES`; `cargo test --bench web_fleet` runs
//! three samples of an unoptimised build)

#[path = "support/controller.rs"]
mod harness;

use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla::web::layout::Page;
use flotilla::web::layout::document;
use flotilla::web::routes::page;
use flotilla::web::snapshot::Snapshot;
use flotilla::web::tree_view;
use flotilla_core::api::{Application, ApplicationSet};
use flotilla_core::resource_tree::{Managed, build};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// Application `i` of ApplicationSet `fleet-{i % 10}`, in step `i % 3 + 1`.
fn application(i: usize) -> Arc<Application> {
    const HEALTH: [&str; 4] = ["Healthy", "Progressing", "Degraded", "Missing"];
    const SYNC: [&str; 3] = ["Synced", "OutOfSync", "Unknown"];
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "Application",
            "metadata": {"name": format!("svc-{i:05}"), "labels": {
                "flotilla.dev/application-set": format!("fleet-{}", i % 10),
                "team": format!("t{}", i % 10), "tier": format!("{}", i % 3 + 1)}},
            "spec": {
                "project": format!("p{}", i % 5),
                "source": {"repoURL": "https://git.example.com/fleet.git", "path": format!("svc/{i}"), "targetRevision": "main"},
                "destination": {"name": format!("cluster-{}", i % 7), "namespace": "svc"},
            },
            "status": {
                "health": {"status": HEALTH[i % 4], "message": ""},
                "sync": {"status": SYNC[i % 3], "revision": "0123456789abcdef0123456789abcdef01234567"},
            },
        }))
        .expect("a valid Application"),
    )
}

/// ApplicationSet `fleet-{k}` with a three-step RollingSync and the status of its Applications.
fn appset(k: usize, apps: usize) -> Arc<ApplicationSet> {
    let step = |tier: usize| json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": [tier.to_string()]}]});
    let entries: Vec<_> = (k..apps)
        .step_by(10)
        .map(|i| {
            json!({"application": format!("svc-{i:05}"), "status": "Healthy",
                   "step": (i % 3 + 1).to_string(), "message": "", "targetRevisions": ["0123456"]})
        })
        .collect();
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "ApplicationSet",
            "metadata": {"name": format!("fleet-{k}")},
            "spec": {
                "generators": [],
                "strategy": {"type": "RollingSync", "rollingSync": {"steps": [step(1), step(2), step(3)]}},
                "template": {"metadata": {"name": "x"}, "spec": {"project": "p", "source": {"repoURL": "r"}, "destination": {}}},
            },
            "status": {"applicationStatus": entries},
        }))
        .expect("a valid ApplicationSet"),
    )
}

/// The kind, group and name of resource `i` of the big Application: 50 Deployments, 50
/// Services, 100 ConfigMaps.
fn resource(i: usize) -> (&'static str, &'static str, String) {
    match i % 4 {
        0 => ("Deployment", "apps", format!("web-{i:03}")),
        1 => ("Service", "", format!("web-{i:03}")),
        _ => ("ConfigMap", "", format!("config-{i:03}")),
    }
}

/// Application `big` managing 200 resources, its last operation over all of them.
fn big_application() -> Arc<Application> {
    let resources: Vec<Value> = (0..200)
        .map(|i| {
            let (kind, group, name) = resource(i);
            json!({"group": group, "version": "v1", "kind": kind, "namespace": "big", "name": name,
                   "status": "Synced", "health": {"status": "Healthy"}})
        })
        .collect();
    let operated: Vec<Value> = (0..200)
        .map(|i| {
            let (kind, group, name) = resource(i);
            json!({"group": group, "kind": kind, "namespace": "big", "name": name, "syncPhase": "Sync",
                   "wave": i % 3, "status": "Synced", "action": "configured", "message": "configured"})
        })
        .collect();
    let history: Vec<Value> = (0..10)
        .map(|i| json!({"id": i, "revision": format!("{i:040}"), "deployedAt": "2026-01-01T00:00:00Z",
                        "source": {"repoURL": "https://git.example.com/big.git", "path": "big", "targetRevision": "main"}}))
        .collect();
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "Application",
            "metadata": {"name": "big", "labels": {"team": "t1"}},
            "spec": {
                "project": "p1",
                "source": {"repoURL": "https://git.example.com/big.git", "path": "big", "targetRevision": "main"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": "big"},
            },
            "status": {
                "health": {"status": "Healthy", "message": ""},
                "sync": {"status": "Synced", "revision": "0123456789abcdef0123456789abcdef01234567"},
                "resources": resources,
                "history": history,
                "operationState": {
                    "phase": "Succeeded", "message": "successfully synced", "operationId": "op-1",
                    "revision": "0123456789abcdef0123456789abcdef01234567",
                    "startedAt": "2026-01-01T00:00:00Z", "finishedAt": "2026-01-01T00:00:40Z",
                    "resources": operated,
                },
            },
        }))
        .expect("a valid Application"),
    )
}

/// The objects the tree page of `big` reads: its 200 managed objects, and per Deployment a
/// ReplicaSet with two Pods, per Service an EndpointSlice.
fn tree_objects() -> Vec<Value> {
    let meta = |name: &str, owner: Option<(&str, &str, &str)>| {
        let owners: Vec<Value> = owner
            .map(|(api, kind, name)| json!({"apiVersion": api, "kind": kind, "name": name, "uid": name}))
            .into_iter()
            .collect();
        json!({"name": name, "namespace": "big", "creationTimestamp": "2026-01-01T00:00:00Z",
               "ownerReferences": owners, "labels": {"app": name}})
    };
    let ready = json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]});
    let mut objects = Vec::new();
    for i in 0..200 {
        let (kind, _, name) = resource(i);
        match kind {
            "Deployment" => {
                let set = format!("{name}-5d4f8");
                objects.push(json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(&name, None),
                    "spec": {"replicas": 2}, "status": {"observedGeneration": 0, "replicas": 2, "updatedReplicas": 2,
                    "readyReplicas": 2, "availableReplicas": 2}}));
                objects.push(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": meta(&set, Some(("apps/v1", "Deployment", &name))),
                    "spec": {"replicas": 2}, "status": {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}}));
                for pod in ["a", "b"] {
                    objects.push(json!({"apiVersion": "v1", "kind": "Pod",
                        "metadata": meta(&format!("{set}-{pod}"), Some(("apps/v1", "ReplicaSet", &set))),
                        "status": ready}));
                }
            }
            "Service" => {
                objects.push(
                    json!({"apiVersion": "v1", "kind": "Service", "metadata": meta(&name, None),
                    "spec": {"type": "ClusterIP"}}),
                );
                objects.push(
                    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": meta(&format!("{name}-x1"), Some(("v1", "Service", &name)))}),
                );
            }
            _ => objects.push(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(&name, None),
                "data": {"key": "value"}}),
            ),
        }
    }
    objects
}

/// The tree page of `application` from the objects `read` returned.
fn tree_page(application: &Application, read: &[Value], now: Timestamp) -> Page {
    let managed = Managed::of(application);
    let tree = build(&managed, read);
    assert_eq!(tree.len(), 400, "the tree's nodes");
    Page {
        title: "Resource tree of big".to_owned(),
        main: tree_view::section("big", &tree, now),
    }
}

/// This process's resident set and its peak since the last reset, in KiB.
fn resident() -> (u64, u64) {
    let (rss, peak, _) = harness::process_usage(std::process::id());
    (rss, peak)
}

/// Resets the peak of the resident set to the current one (writing 5 to
/// /proc/self/clear_refs).
fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: a few samples then.
    let benching = std::env::args().any(|arg| arg == "--bench");
    let apps = env_or("APPS", 10_000);
    let samples = env_or("SAMPLES", if benching { 200 } else { 3 });
    let (before, _) = resident();
    let mut applications: Vec<Arc<Application>> = (0..apps).map(application).collect();
    let appsets: Vec<Arc<ApplicationSet>> = (0..10).map(|k| appset(k, apps)).collect();
    let (held, _) = resident();
    println!(
        "memory: the watches' stores of {apps} Applications and 10 ApplicationSets hold {} (resident set {} before, {} after); the resource tree holds nothing between openings",
        mib(held.saturating_sub(before)),
        mib(before),
        mib(held)
    );
    let addresses = [
        ("/", None),
        ("/", Some("label=team%3Dt3&page=2")),
        (
            "/",
            Some(
                "name=9&label=tier%3D1&health=Progressing&sync=Synced&project=p3&cluster=cluster-5&step=1",
            ),
        ),
        ("/applicationsets/fleet-3", Some("page=3")),
        ("/applications/big", None),
    ];
    applications.push(big_application());
    for (path, query) in addresses {
        let mut times: Vec<Duration> = Vec::with_capacity(samples);
        let mut length = 0;
        for _ in 0..samples {
            let started = Instant::now();
            let snapshot = Snapshot::new(
                "fleet".to_owned(),
                Timestamp::now(),
                appsets.clone(),
                applications.clone(),
            );
            let shown = page(path, query, &snapshot).expect("a page");
            length = document("fleet", &shown, "token").len();
            times.push(started.elapsed());
        }
        println!(
            "web view {path}?{} at {apps} Applications ({length} bytes): {} over {samples} requests",
            query.unwrap_or_default(),
            harness::percentiles(times)
        );
    }
    // The tree page of the 200 resources: its objects as the reads return them, the tree, the
    // document; and the peak memory one opening adds.
    let big = big_application();
    let now = Timestamp::now();
    let (base, _) = resident();
    reset_peak();
    let mut times: Vec<Duration> = Vec::with_capacity(samples);
    let mut length = 0;
    for _ in 0..samples {
        let started = Instant::now();
        let read = tree_objects();
        let shown = tree_page(&big, &read, now);
        length = document("fleet", &shown, "token").len();
        times.push(started.elapsed());
    }
    let (_, peak) = resident();
    println!(
        "web view /applications/big/tree, 200 resources, 400 nodes ({length} bytes): {} over {samples} requests; peak resident set {} above the {} before the openings",
        harness::percentiles(times),
        mib(peak.saturating_sub(base)),
        mib(base)
    );
}
