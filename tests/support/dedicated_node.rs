//! A node simulator of the test's own beside the shared ones: `flotilla-node-sim --dedicated`
//! (built beside `flotilla`: `cargo build -p flotilla-node-sim`) registers a node that binds no
//! pod and is tainted against DaemonSets, so it runs only the pods that name it in
//! `spec.nodeName` — those of the test — and serves their logs on its kubelet endpoint. Dropping
//! it stops the simulator and deletes the Node (the pod garbage collector then removes what was
//! left on it).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use k8s_openapi::api::core::v1::Node;
use kube::Api;

use super::server_process::ServerProcess;
use super::{eventually, kubeconfig_path, kubectl};

/// The `flotilla-node-sim` built beside the `flotilla` binary under test.
fn binary() -> PathBuf {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_flotilla")).with_file_name("flotilla-node-sim");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p flotilla-node-sim` (tests/run-all.sh does)",
        path.display()
    );
    path
}

/// A running dedicated node simulator on cluster 1.
pub struct DedicatedNode {
    /// The Node's name (what a test's pods put in `spec.nodeName`).
    pub name: String,
    _process: ServerProcess,
}

impl DedicatedNode {
    /// Starts one for node `name` and waits until its Node is Ready with a kubelet endpoint.
    pub async fn start(client: &kube::Client, name: &str) -> Self {
        let log = std::fs::File::create(
            super::state_dir()
                .join("logs")
                .join(format!("node-sim-{name}.log")),
        )
        .expect("a log file for the node simulator");
        let process = ServerProcess::spawn(
            Command::new(binary())
                .arg("--kubeconfig")
                .arg(kubeconfig_path(1))
                .args(["--node-name", name, "--dedicated", "--ready-after", "200ms"])
                .env("RUST_LOG", "info")
                .env("NO_COLOR", "1")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log),
        )
        .expect("starts flotilla-node-sim");
        let nodes: Api<Node> = Api::all(client.clone());
        eventually(
            "the dedicated node to be Ready with a kubelet endpoint",
            async || {
                let node = nodes.get(name).await.map_err(|e| e.to_string())?;
                let port = node
                    .status
                    .as_ref()
                    .and_then(|s| s.daemon_endpoints.as_ref())
                    .and_then(|d| d.kubelet_endpoint.as_ref())
                    .map_or(0, |k| k.port);
                (port > 0)
                    .then_some(())
                    .ok_or(format!("kubelet port {port}"))
            },
        )
        .await;
        Self {
            name: name.to_owned(),
            _process: process,
        }
    }
}

impl Drop for DedicatedNode {
    fn drop(&mut self) {
        let _ = Command::new(kubectl())
            .arg("--kubeconfig")
            .arg(kubeconfig_path(1))
            .args(["delete", "node", &self.name, "--wait=false"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
