//! What the benchmarks that run the real `flotilla controller` share: a client of the test
//! control plane (`tests/controlplane/start.sh`), a fresh namespace with Flotilla's CRDs and the
//! release binary started as a process (their git repositories: `support/git.rs`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};

/// The kubeconfig of the control plane's cluster 1 (`FLOTILLA_CONTROLPLANE_DIR`).
pub fn kubeconfig() -> PathBuf {
    std::env::var_os("FLOTILLA_CONTROLPLANE_DIR")
        .map_or_else(
            || PathBuf::from("/tmp/flotilla-controlplane"),
            PathBuf::from,
        )
        .join("cluster1.kubeconfig")
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
    for (_, crd) in flotilla::api::crd::all() {
        let name = crd.metadata.name.clone().unwrap();
        Api::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>::all(client.clone())
            .patch(&name, &PatchParams::apply("bench").force(), &Patch::Apply(&crd))
            .await
            .expect("installing the CRDs");
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
}

/// Starts `flotilla controller` (`target/release/flotilla`, or the binary `FLOTILLA_BIN` names)
/// for `namespace`, serving `/metrics` on `endpoint`, logging (warnings) to `log`.
pub fn start_controller(
    kubeconfig: &Path,
    namespace: &str,
    endpoint: std::net::SocketAddr,
    log: &Path,
) -> Child {
    let binary = std::env::var_os("FLOTILLA_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/flotilla"),
        PathBuf::from,
    );
    assert!(
        binary.exists(),
        "run `cargo build --release --bin flotilla` first"
    );
    Command::new(binary)
        .args(["controller", "-n", namespace, "--kubeconfig"])
        .arg(kubeconfig)
        .arg("--metrics-addr")
        .arg(endpoint.to_string())
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("log file"))
        .spawn()
        .expect("starting the controller")
}

/// A loopback address free a moment ago.
pub fn free_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
}
