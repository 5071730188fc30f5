//! Benchmark: the web view's Fleet page at 10,000 Applications (ten ApplicationSets of 1,000,
//! each with a three-step RollingSync status), rendered as a viewer's request renders it: the
//! snapshot of the watches' stores (sorted by name), the page for the address, and the whole
//! document. Three addresses: the first page unfiltered, page 2 of a label filter, and every
//! filter at once; and one ApplicationSet's page of 1,000. Wall time of each request, reported
//! as p50, p95 and max over `SAMPLES` (default 200). Target: p95 < 150 ms (issue 49).
//!
//! `cargo bench --bench web_fleet` (`APPS`, `SAMPLES`; `cargo test --bench web_fleet` runs
//! three samples of an unoptimised build)

#[path = "support/controller.rs"]
mod harness;

use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla::web::layout::document;
use flotilla::web::routes::page;
use flotilla::web::snapshot::Snapshot;
use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

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

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not: a few samples then.
    let benching = std::env::args().any(|arg| arg == "--bench");
    let apps = env_or("APPS", 10_000);
    let samples = env_or("SAMPLES", if benching { 200 } else { 3 });
    let applications: Vec<Arc<Application>> = (0..apps).map(application).collect();
    let appsets: Vec<Arc<ApplicationSet>> = (0..10).map(|k| appset(k, apps)).collect();
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
    ];
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
}
