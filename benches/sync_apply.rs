//! Sync benchmark against a running test control plane (`tests/controlplane/start.sh` plus a
//! `flotilla-node-sim` for cluster 1): 200 ConfigMaps and 20 Deployments in one wave, synced by
//! the executor, side by side with `kubectl apply --server-side -f DIR` (+ `kubectl wait` for the
//! Deployments) of the same directory. Reports wall times and the executor's API requests.
//!
//! `cargo bench --bench sync_apply` (`FLOTILLA_CONTROLPLANE_DIR`, `FLOTILLA_KUBECTL`, `ROUNDS`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use flotilla::cluster::api_server::kube_cluster::KubeCluster;
use flotilla::cluster::api_server::operation_configmap::ConfigMapStore;
use flotilla::source::SourceOptions;
use flotilla::sync::execute::{
    ExecuteSettings, PruneConfirmation, SyncEvent, SyncParams, run_sync,
};
use flotilla::sync::load_plan;
use flotilla_core::sync::OperationPhase;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};

const CONFIG_MAPS: usize = 200;
const DEPLOYMENTS: usize = 20;

fn manifests(dir: &Path) {
    let mut text = String::new();
    for i in 0..CONFIG_MAPS {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: config-{i}\ndata:\n  key: value-{i}\n"
        ));
    }
    for i in 0..DEPLOYMENTS {
        text.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api-{i}\nspec:\n  replicas: 1\n  \
             selector:\n    matchLabels: {{app: api-{i}}}\n  template:\n    metadata:\n      labels: {{app: api-{i}}}\n    \
             spec:\n      containers:\n        - name: api\n          image: registry.example.com/api:1\n"
        ));
    }
    std::fs::write(dir.join("objects.yaml"), text).expect("writing manifests");
}

async fn namespace(client: &kube::Client, name: &str) {
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .expect("creating the namespace");
    // Give the service account controller time to create `default`, as kubectl would need too.
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// Waits, as `kubectl wait` does, until every Deployment of `ns` is Available.
fn wait_available(kubectl_path: &Path, kubeconfig: &Path, ns: &str) {
    kubectl(
        kubectl_path,
        kubeconfig,
        &[
            "wait",
            "-n",
            ns,
            "--for=condition=Available",
            "deployment",
            "--all",
            "--timeout=120s",
        ],
    );
}

fn kubectl(kubectl: &Path, kubeconfig: &Path, args: &[&str]) {
    let status = Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("running kubectl");
    assert!(status.success(), "kubectl {args:?} failed");
}

#[tokio::main]
async fn main() {
    let state = std::env::var_os("FLOTILLA_CONTROLPLANE_DIR").map_or_else(
        || PathBuf::from("/tmp/flotilla-controlplane"),
        PathBuf::from,
    );
    let kubeconfig = state.join("cluster1.kubeconfig");
    let kubectl_path = std::env::var_os("FLOTILLA_KUBECTL")
        .map_or_else(|| state.join("bin").join("kubectl"), PathBuf::from);
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let dir = std::env::temp_dir().join(format!("flotilla-bench-sync-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    manifests(&dir);
    let objects = CONFIG_MAPS + DEPLOYMENTS;
    let suffix = std::process::id();
    for round in 0..rounds {
        let cluster = KubeCluster::new(
            flotilla::cli::connect::client(Some(&kubeconfig), None)
                .await
                .expect("cluster 1"),
        );
        let client = cluster.client();
        let ns = format!("bench-sync-{suffix}-{round}");
        namespace(&client, &ns).await;
        let store = ConfigMapStore::new(client.clone(), &ns, "bench");
        let load = |id: &str| {
            load_plan(
                &Default::default(),
                &dir,
                &SourceOptions::default(),
                Some(&ns),
                id,
            )
        };
        let applied_at = std::sync::Mutex::new(None::<Instant>);
        let start = Instant::now();
        let events = |event: &SyncEvent| {
            if let SyncEvent::Waiting(_) = event {
                let mut applied = applied_at.lock().unwrap();
                applied.get_or_insert_with(Instant::now);
            }
        };
        let (_terminate, cancel) = tokio::sync::watch::channel(false);
        let request = SyncParams {
            app: &ns,
            revision: None,
            dry_run: false,
            prune_confirmation: PruneConfirmation::Absent,
        };
        let before = cluster.request_counts();
        let result = run_sync(
            &cluster,
            &store,
            &load,
            &request,
            &ExecuteSettings::default(),
            cancel,
            &events,
        )
        .await
        .expect("sync");
        let total = start.elapsed();
        assert_eq!(
            result.phase,
            OperationPhase::Succeeded,
            "{}",
            result.message
        );
        let applied = applied_at.lock().unwrap().map_or(total, |at| at - start);
        let counts = cluster.request_counts();
        let applies = counts.applies - before.applies;
        // The last wave is not health-gated (as in Argo CD), so the operation may end before the
        // Deployments are Available: wait for them the way the kubectl side does.
        wait_available(&kubectl_path, &kubeconfig, &ns);
        let available = start.elapsed();
        println!(
            "flotilla sync   round {round}: {objects} objects applied in {:>6.0} ms, operation Succeeded in {:>6.0} ms, Available in {:>6.0} ms (kubectl wait); {counts}; {:.2} apply requests per object, {} polls (get+list)",
            applied.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3,
            available.as_secs_f64() * 1e3,
            applies as f64 / objects as f64,
            counts.gets + counts.lists,
        );

        let ns = format!("bench-kubectl-{suffix}-{round}");
        namespace(&client, &ns).await;
        let start = Instant::now();
        kubectl(
            &kubectl_path,
            &kubeconfig,
            &[
                "apply",
                "--server-side",
                "-n",
                &ns,
                "-f",
                dir.to_str().unwrap(),
            ],
        );
        let applied = start.elapsed();
        wait_available(&kubectl_path, &kubeconfig, &ns);
        let total = start.elapsed();
        println!(
            "kubectl apply   round {round}: {objects} objects applied in {:>6.0} ms, Available in {:>6.0} ms (kubectl wait)",
            applied.as_secs_f64() * 1e3,
            total.as_secs_f64() * 1e3,
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
