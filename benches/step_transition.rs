//! How soon a RollingSync opens its next step once the previous one is done, against a running
//! test control plane (`tests/controlplane/start.sh`) and the real `flotilla controller` process.
//! An ApplicationSet (list generator, RollingSync) has `STEPS` (default 8) steps of
//! `PER_STEP` (default 3) Applications; each Application deploys one `Widget` (a CRD of the
//! benchmark's own, as in `wave_transition.rs`) written with condition `Ready=Unknown`
//! (Progressing). The benchmark plays the Widgets' operator: it sees each Widget created (a
//! watch), waits 100 ms and sets `Ready=True` — the "last pod ready" of its step. The delay of a
//! step transition runs from the moment the status write of the step's last Widget returned to
//! the moment the watch of the Applications shows the first sync request of the next step (the
//! rollout's `spec.operation`, its first write); reported as p50, p95 and max over all
//! transitions.
//!
//! `cargo build --release --bin flotilla && cargo bench --bench step_transition`
//! (`FLOTILLA_CONTROLPLANE_DIR`, `STEPS`, `PER_STEP`).

#[path = "support/git.rs"]
mod git;
#[path = "support/controller.rs"]
mod harness;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use flotilla_core::api::{Application, ApplicationSet};
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The Application of step `step`, number `i`.
fn name(step: usize, i: usize) -> String {
    format!("s{step}-a{i}")
}

/// `apps/<name>/widget.yaml` for every Application.
fn repository(dir: &std::path::Path, steps: usize, per_step: usize) {
    for step in 0..steps {
        for i in 0..per_step {
            let app = dir.join(format!("apps/{}", name(step, i)));
            std::fs::create_dir_all(&app).expect("creating the repository");
            std::fs::write(
                app.join("widget.yaml"),
                format!(
                    "apiVersion: bench.flotilla.dev/v1\nkind: Widget\nmetadata:\n  name: {}\n\
                     spec:\n  size: 1\nstatus:\n  conditions:\n  - type: Ready\n    status: \"Unknown\"\n",
                    name(step, i)
                ),
            )
            .expect("writing a manifest");
        }
    }
    git::commit_all(dir);
}

fn application_set(
    namespace: &str,
    repo: &std::path::Path,
    steps: usize,
    per_step: usize,
) -> ApplicationSet {
    let elements: Vec<serde_json::Value> = (0..steps)
        .flat_map(|step| {
            (0..per_step).map(move |i| json!({"name": name(step, i), "step": step.to_string()}))
        })
        .collect();
    let rolling: Vec<serde_json::Value> = (0..steps)
        .map(|step| {
            json!({"matchExpressions": [
            {"key": "step", "operator": "In", "values": [step.to_string()]}]})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "steps", "namespace": namespace},
        "spec": {
            "generators": [{"list": {"elements": elements}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": rolling}},
            "template": {
                "metadata": {"name": "{{name}}", "labels": {"step": "{{step}}"}},
                "spec": {
                    "project": "default",
                    "source": {"repoURL": format!("file://{}", repo.display()),
                               "targetRevision": "main", "path": "apps/{{name}}"},
                    "destination": {"name": "in-cluster", "namespace": namespace},
                },
            },
        },
    }))
    .expect("an ApplicationSet")
}

/// What the benchmark saw, as it happened.
enum Seen {
    /// A Widget was created (its name).
    Widget(String),
    /// An Application's sync was requested (its name).
    Requested(String),
}

fn main() {
    let (steps, per_step) = (env_or("STEPS", 8), env_or("PER_STEP", 3));
    let kubeconfig = harness::kubeconfig();
    let work = tempfile::tempdir().expect("temporary directory");
    repository(work.path(), steps, per_step);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = harness::client(&kubeconfig).await;
        let namespace = format!("bench-steps-{}", std::process::id());
        harness::namespace_with_crds(&client, &namespace).await;
        let widgets = harness::widgets(&client, &namespace).await;
        let applications: Api<Application> = Api::namespaced(client.clone(), &namespace);
        let widget_events = watcher::watcher(widgets.clone(), watcher::Config::default())
            .filter_map(|event| async move {
                match event {
                    Ok(watcher::Event::Apply(w) | watcher::Event::InitApply(w)) => {
                        Some(Seen::Widget(w.metadata.name.unwrap_or_default()))
                    }
                    _ => None,
                }
            });
        let request_events = watcher::watcher(applications, watcher::Config::default())
            .filter_map(|event| async move {
                match event {
                    Ok(watcher::Event::Apply(app) | watcher::Event::InitApply(app))
                        if app.spec.operation.is_some() =>
                    {
                        Some(Seen::Requested(app.metadata.name.unwrap_or_default()))
                    }
                    _ => None,
                }
            });
        let events = futures::stream::select(widget_events, request_events);
        futures::pin_mut!(events);
        let log = work.path().join("controller.log");
        let mut controller =
            harness::start_controller(&kubeconfig, &namespace, harness::free_address(), &log);
        Api::<ApplicationSet>::namespaced(client.clone(), &namespace)
            .patch(
                "steps",
                &PatchParams::apply("bench"),
                &Patch::Apply(application_set(&namespace, work.path(), steps, per_step)),
            )
            .await
            .expect("creating the ApplicationSet");
        // Per step: when its last Widget was made ready, and its first sync request seen.
        let mut ready: BTreeMap<usize, Vec<Instant>> = BTreeMap::new();
        let mut requested: BTreeMap<usize, Instant> = BTreeMap::new();
        let mut made_ready = std::collections::BTreeSet::new();
        let step_of = |name: &str| -> Option<usize> {
            name.strip_prefix('s')?.split_once("-a")?.0.parse().ok()
        };
        let deadline = Instant::now() + Duration::from_secs(600);
        while ready.values().map(Vec::len).sum::<usize>() < steps * per_step {
            assert!(
                Instant::now() < deadline,
                "not every step done in 10 minutes; see {}",
                log.display()
            );
            let Some(seen) = events.next().await else {
                panic!("a watch ended");
            };
            match seen {
                Seen::Requested(app) => {
                    if let Some(step) = step_of(&app) {
                        requested.entry(step).or_insert_with(Instant::now);
                    }
                }
                Seen::Widget(widget) => {
                    let Some(step) = step_of(&widget) else {
                        continue;
                    };
                    if !made_ready.insert(widget.clone()) {
                        continue;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    widgets
                        .patch(
                            &widget,
                            &PatchParams::default(),
                            &Patch::Merge(json!({"status": {"conditions": [
                                {"type": "Ready", "status": "True", "reason": "Up"}]}})),
                        )
                        .await
                        .expect("setting Ready");
                    ready.entry(step).or_default().push(Instant::now());
                }
            }
        }
        assert!(
            controller.try_wait().expect("controller state").is_none(),
            "the controller exited; see {}",
            log.display()
        );
        drop(controller);
        let delays: Vec<Duration> = (1..steps)
            .map(|step| {
                let last_ready = ready[&(step - 1)].iter().max().copied().expect("a Widget");
                requested[&step].saturating_duration_since(last_ready)
            })
            .collect();
        println!(
            "step transitions (last Widget ready -> first sync request of the next step): {} over {steps} steps of {per_step}: {}",
            delays.len(),
            harness::percentiles(delays)
        );
        let _ = Api::<k8s_openapi::api::core::v1::Namespace>::all(client)
            .delete(&namespace, &Default::default())
            .await;
    });
}
