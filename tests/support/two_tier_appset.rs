//! The two-tier RollingSync ApplicationSet the chart rollout tests share: `database` in step 1,
//! `backend` in step 2 (goTemplate list generator, `priority` labels), each Application deploying
//! its `source` (or `sources`) into one namespace with automated sync.

use serde_json::{Value, json};

/// The ApplicationSet `name` whose template's `field` (`source` or `sources`) is `value`.
pub fn two_tier_appset(name: &str, namespace: &str, field: &str, value: Value) -> Value {
    let step = |priority: &str| json!({"matchExpressions": [{"key": "priority", "operator": "In", "values": [priority]}]});
    let mut spec = json!({
        "project": "default",
        "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
        "syncPolicy": {"automated": {"prune": true}}
    });
    spec[field] = value;
    json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name},
        "spec": {
            "goTemplate": true,
            "generators": [{"list": {"elements": [
                {"component": "database", "priority": "1"},
                {"component": "backend", "priority": "2"}
            ]}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [step("1"), step("2")]}},
            "template": {
                "metadata": {"name": "{{.component}}", "labels": {"priority": "{{.priority}}"}},
                "spec": spec
            }
        }
    })
}
