//! Helpers shared by tests/argocd_migration.rs and tests/argocd_migration_offline.rs.
// Each of the two test binaries compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jsonnet")
}

/// The guestbook's `source.directory` as Argo CD's YAML writes it.
pub fn guestbook_directory() -> Value {
    json!({"jsonnet": {
        "tlas": [
            {"name": "replicas", "value": "1 + 1", "code": true},
            // Argo CD's build environment: the Application's name.
            {"name": "name", "value": "${ARGOCD_APP_NAME}-ui"},
        ],
        "extVars": [{"name": "image", "value": "registry.local/guestbook-ui:0.2"}],
        "libs": ["lib"],
    }})
}
