//! The offline suite stays offline: a test file that reaches the test control plane (it makes a
//! namespace, a client or a kubeconfig path of it through `support`) is built only with the
//! `controlplane` feature, declared as a `[[test]]` with `required-features` in Cargo.toml; plain
//! `cargo test` on a machine without the control plane then neither builds nor runs it.

use std::collections::BTreeSet;
use std::path::Path;

/// What a test file writes when it talks to the test control plane: a namespace or a client of
/// cluster 1 or 2, a kubeconfig path, the namespace type.
const CLUSTER_CALLS: [&str; 6] = [
    "namespace(1, ",
    "namespace(2, ",
    "client(1)",
    "client(2)",
    "kubeconfig_path(",
    "TestNamespace",
];

/// The `[[test]]` targets of `manifest` that require the `controlplane` feature.
fn gated(manifest: &str) -> BTreeSet<String> {
    manifest
        .split("[[")
        .filter(|section| section.starts_with("test]]"))
        .filter(|section| section.contains("required-features = [\"controlplane\"]"))
        .filter_map(|section| {
            let line = section
                .lines()
                .find(|l| l.trim_start().starts_with("name"))?;
            let name = line.split('"').nth(1)?;
            Some(name.to_owned())
        })
        .collect()
}

/// The test files under `tests` (by target name) whose text calls the control plane.
fn cluster_tests(tests: &Path) -> BTreeSet<String> {
    std::fs::read_dir(tests)
        .expect("reads tests/")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        // This file names the calls it looks for.
        .filter(|path| !path.ends_with("suite_features.rs"))
        .filter(|path| {
            let text = std::fs::read_to_string(path).expect("reads a test file");
            CLUSTER_CALLS.iter().any(|call| text.contains(call))
        })
        .filter_map(|path| Some(path.file_stem()?.to_str()?.to_owned()))
        .collect()
}

#[test]
fn every_test_file_that_reaches_the_control_plane_requires_the_controlplane_feature() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("reads Cargo.toml");
    let gated = gated(&manifest);
    let ungated: Vec<String> = cluster_tests(&root.join("tests"))
        .into_iter()
        .filter(|name| !gated.contains(name))
        .collect();
    assert!(
        ungated.is_empty(),
        "these test files reach the control plane but are built without the controlplane \
         feature; declare each in Cargo.toml as [[test]] name = \"…\" with \
         required-features = [\"controlplane\"]: {ungated:?}"
    );
}

#[test]
fn gated_targets_are_read_from_the_manifest() {
    let manifest = "[package]\nname = \"x\"\n\n[[test]]\nname = \"a\"\nrequired-features = [\"controlplane\"]\n\n[[test]]\nname = \"b\"\n\n[[bench]]\nname = \"c\"\nrequired-features = [\"controlplane\"]\n";
    assert_eq!(gated(manifest), BTreeSet::from(["a".to_owned()]));
}
