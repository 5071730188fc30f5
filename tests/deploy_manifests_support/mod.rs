//! Helpers shared by tests/deploy_manifests.rs, tests/deploy_manifests_offline.rs and the Helm
//! chart's tests (tests/helm_chart*.rs): the files under `deploy/` and what kustomize renders.
// Each test binary compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn read(file: &str) -> String {
    let path = root().join("deploy").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `kubectl kustomize deploy/MODE`: every object `kubectl apply -k deploy/MODE` would send.
pub fn rendered(mode: &str) -> Vec<Value> {
    let kubectl = std::env::var_os("FLOTILLA_KUBECTL").unwrap_or_else(|| "kubectl".into());
    let output = Command::new(&kubectl)
        .arg("kustomize")
        .arg(root().join("deploy").join(mode))
        .output()
        .unwrap_or_else(|e| {
            panic!("{kubectl:?} kustomize: {e} (bash tests/tools/install.sh installs it; set FLOTILLA_KUBECTL)")
        });
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "kubectl kustomize deploy/{mode}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_saphyr::from_multiple(&text).expect("kustomize prints YAML documents")
}
