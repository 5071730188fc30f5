//! ApplicationSet objects for unit tests: a set named `stack` with an empty generator list, a
//! minimal template, the given strategy and status.

use serde_json::{Value, json};

use crate::api::ApplicationSet;

/// An ApplicationSet `stack` with `strategy` (JSON `null` for none) and `status`.
pub fn appset(strategy: Value, status: Value) -> ApplicationSet {
    serde_json::from_value(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "stack"},
        "spec": {
            "generators": [],
            "template": {"metadata": {"name": "x"}, "spec": {"project": "p", "source": {"repoURL": "r"}, "destination": {}}},
            "strategy": strategy
        },
        "status": status
    }))
    .expect("a valid ApplicationSet fixture")
}
