//! How soon the controller's sync moves to the next wave once the previous one is healthy,
//! against a running test control plane (`tests/controlplane/start.sh`) and the real
//! `flotilla controller` process. Each of `SYNCS` (default 3) Applications syncs ten waves of one
//! `Widget` each (a CRD of the benchmark's own), written with condition `Ready=Unknown`
//! (Progressing, so the wave waits). The benchmark plays the Widgets' operator: it sees each
//! Widget created (a watch), waits 100 ms, and sets `Ready=True`. The delay of a wave transition
//! is from the moment that status write returned (the previous wave's last object becoming
//! Healthy) to the moment the watch shows the next wave's Widget created (its first write);
//! reported as median and max over all transitions.
//!
//! `cargo build --release --bin flotilla && cargo bench --bench wave_transition`
//! (`FLOTILLA_CONTROLPLANE_DIR`, `SYNCS`).

#[path = "support/git.rs"]
mod git;
#[path = "support/controller.rs"]
mod harness;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use flotilla_core::api::Application;
use futures::StreamExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher;
use serde_json::json;

const WAVES: usize = 10;

/// `apps/<sync>/widget-<wave>.yaml` for every sync and wave.
fn repository(dir: &std::path::Path, syncs: usize) {
    for sync in 0..syncs {
        let app = dir.join(format!("apps/s{sync}"));
        std::fs::create_dir_all(&app).expect("creating the repository");
        for wave in 0..WAVES {
            std::fs::write(
                app.join(format!("widget-{wave}.yaml")),
                format!(
                    "apiVersion: bench.flotilla.dev/v1\nkind: Widget\nmetadata:\n  name: s{sync}-w{wave}\n  \
                     annotations:\n    argocd.argoproj.io/sync-wave: \"{wave}\"\nspec:\n  size: {wave}\n\
                     status:\n  conditions:\n  - type: Ready\n    status: \"Unknown\"\n"
                ),
            )
            .expect("writing a manifest");
        }
    }
    git::commit_all(dir);
}

fn application(namespace: &str, repo: &std::path::Path, sync: usize) -> Application {
    serde_json::from_value(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "Application",
        "metadata": {"name": format!("waves-{sync}"), "namespace": namespace},
        "spec": {
            "project": "default",
            "source": {"repoURL": format!("file://{}", repo.display()), "targetRevision": "main",
                       "path": format!("apps/s{sync}")},
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": {"automated": {}}
        }
    }))
    .expect("an Application")
}

fn main() {
    let syncs: usize = std::env::var("SYNCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let kubeconfig = harness::kubeconfig();
    let work = tempfile::tempdir().expect("temporary directory");
    repository(work.path(), syncs);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let client = harness::client(&kubeconfig).await;
        let namespace = format!("bench-waves-{}", std::process::id());
        harness::namespace_with_crds(&client, &namespace).await;
        let widgets = harness::widgets(&client, &namespace).await;
        let log = work.path().join("controller.log");
        let controller =
            harness::start_controller(&kubeconfig, &namespace, harness::free_address(), &log);
        let applications: Api<Application> = Api::namespaced(client.clone(), &namespace);
        let events = watcher::watcher(widgets.clone(), watcher::Config::default());
        futures::pin_mut!(events);
        let mut delays = Vec::new();
        for sync in 0..syncs {
            applications
                .patch(
                    &format!("waves-{sync}"),
                    &PatchParams::apply("bench"),
                    &Patch::Apply(application(&namespace, work.path(), sync)),
                )
                .await
                .expect("creating the Application");
            // Wave → (created, ready) as the benchmark saw them.
            let mut created: BTreeMap<usize, Instant> = BTreeMap::new();
            let mut ready: BTreeMap<usize, Instant> = BTreeMap::new();
            let deadline = Instant::now() + Duration::from_secs(300);
            while ready.len() < WAVES {
                assert!(
                    Instant::now() < deadline,
                    "sync {sync} reached {} of {WAVES} waves in 5 minutes; see {}",
                    ready.len(),
                    log.display()
                );
                let Some(event) = events.next().await else {
                    panic!("the watch ended");
                };
                let (watcher::Event::Apply(widget) | watcher::Event::InitApply(widget)) =
                    event.expect("a watch event")
                else {
                    continue;
                };
                let name = widget.metadata.name.clone().unwrap_or_default();
                let Some(wave) = name
                    .strip_prefix(&format!("s{sync}-w"))
                    .and_then(|w| w.parse::<usize>().ok())
                else {
                    continue;
                };
                if created.contains_key(&wave) {
                    continue;
                }
                created.insert(wave, Instant::now());
                tokio::time::sleep(Duration::from_millis(100)).await;
                widgets
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": {"conditions": [
                            {"type": "Ready", "status": "True", "reason": "Up"}]}})),
                    )
                    .await
                    .expect("setting Ready");
                ready.insert(wave, Instant::now());
            }
            for wave in 1..WAVES {
                let delay = created[&wave].saturating_duration_since(ready[&(wave - 1)]);
                delays.push(delay);
            }
            eprintln!("sync {sync}: {} transitions measured", WAVES - 1);
        }
        drop(controller);
        delays.sort();
        let median = delays[delays.len() / 2];
        let max = delays[delays.len() - 1];
        println!(
            "wave transitions: {} over {syncs} syncs of {WAVES} waves: median {:.1} ms, max {:.1} ms",
            delays.len(),
            median.as_secs_f64() * 1000.0,
            max.as_secs_f64() * 1000.0
        );
    });
}
