//! The three-step RollingSync ApplicationSet `platform-stack` the webhook and notification tests
//! share: the components `database`, `backend` and `frontend` of a repository, one step each
//! (`tier` labels 1, 2, 3), automated sync with prune into one namespace, project `platform`.

use flotilla_core::api::ApplicationSet;
use serde_json::json;

use super::{TestNamespace, object};

/// The ApplicationSet over the components of `url`, deploying into `ns`.
pub fn three_steps(url: &str, ns: &TestNamespace) -> ApplicationSet {
    let step = |tier: &str| json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": [tier]}]});
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": "platform-stack"},
        "spec": {
            "goTemplate": true,
            "generators": [{"list": {"elements": [
                {"component": "database", "tier": "1"},
                {"component": "backend", "tier": "2"},
                {"component": "frontend", "tier": "3"}
            ]}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [step("1"), step("2"), step("3")]}},
            "template": {
                "metadata": {"name": "{{.component}}", "labels": {"tier": "{{.tier}}"}},
                "spec": {
                    "project": "platform",
                    "source": {"repoURL": url, "targetRevision": "main", "path": "{{.component}}"},
                    "destination": {"server": "https://kubernetes.default.svc", "namespace": ns.name},
                    "syncPolicy": {"automated": {"prune": true}}
                }
            }
        }
    }))
}
