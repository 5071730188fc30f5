//! Helpers shared by tests/deploy_manifests.rs and tests/deploy_manifests_offline.rs.
// Each of the two test binaries compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::PathBuf;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn read(file: &str) -> String {
    let path = root().join("deploy").join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
