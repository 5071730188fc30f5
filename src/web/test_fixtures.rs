//! A snapshot for the page renderers' tests: a three-step RollingSync ApplicationSet whose
//! name, labels, messages and objects carry `<script>` markup, and its three Applications.

use std::sync::Arc;

use serde_json::{Value, json};

use super::snapshot::Snapshot;
use flotilla_core::api::{Application, ApplicationSet};

/// The name of the fixture's ApplicationSet.
pub const APPSET: &str = "shop<script>alert(1)</script>";

fn application(env: &str, sync: &str, health: &str, operation: Value) -> Arc<Application> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "flotilla.dev/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": format!("shop-{env}"),
                "generation": 1,
                "labels": {"flotilla.dev/application-set": APPSET, "env": env},
            },
            "spec": {
                "project": "default",
                "source": {"repoURL": "file:///repos/<script>shop", "path": "apps", "targetRevision": "main"},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": env},
            },
            "status": {
                "observedGeneration": 1,
                "sync": {"status": sync, "revision": "abc123"},
                "health": {"status": health, "message": "<script>health</script>"},
                "resources": [{
                    "kind": "Deployment", "namespace": env, "name": "web<script>",
                    "status": sync, "firstDifference": "/spec/<script>", "health": {"status": health},
                }],
                "conditions": [{"type": "SyncError", "message": "<script>condition</script>"}],
                "operationState": operation,
            },
        }))
        .expect("a valid Application fixture"),
    )
}

/// The fixture: step 1 (dev) Healthy, step 2 (staging) Progressing with a migration hook
/// running, step 3 (prod) Waiting.
#[must_use]
pub fn snapshot() -> Snapshot {
    let step = |env: &str| json!({"matchExpressions": [{"key": "env", "operator": "In", "values": [env]}]});
    let entry = |env: &str, status: &str, step: &str| {
        json!({"application": format!("shop-{env}"), "status": status, "step": step,
               "targetRevisions": ["abc123"], "message": "<script>entry</script>"})
    };
    let appset: ApplicationSet = serde_json::from_value(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": APPSET, "labels": {"team": "<script>payments"}},
        "spec": {
            "generators": [],
            "template": {"metadata": {"name": "x"}, "spec": {"project": "p", "source": {"repoURL": "r"}, "destination": {}}},
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": [step("dev"), step("staging"), step("prod")]}},
        },
        "status": {
            "conditions": [{"type": "RolloutProgressing", "status": "True", "reason": "StepProgressing",
                            "message": "<script>step 2</script>"}],
            "applicationStatus": [entry("dev", "Healthy", "1"), entry("staging", "Progressing", "2"), entry("prod", "Waiting", "3")],
        },
    }))
    .expect("a valid ApplicationSet fixture");
    let running = json!({
        "phase": "Running", "message": "<script>waiting</script>", "operationId": "op-1",
        "revision": "abc123", "startedAt": "2026-01-01T00:00:00Z",
        "resources": [
            {"group": "batch", "kind": "Job", "namespace": "staging", "name": "migrate<script>", "syncPhase": "PreSync", "wave": -1,
             "hookType": "PreSync", "status": "Synced", "hookPhase": "Running", "message": "<script>migrating</script>"},
            {"group": "apps", "kind": "Deployment", "namespace": "staging", "name": "web", "syncPhase": "Sync", "wave": 0,
             "status": "Synced", "action": "configured"},
        ],
    });
    Snapshot::new(
        "shop".to_owned(),
        "2026-01-01T00:01:00Z".parse().expect("a timestamp"),
        vec![Arc::new(appset)],
        vec![
            application("dev", "Synced", "Healthy", Value::Null),
            application("staging", "OutOfSync", "Progressing", running),
            application("prod", "OutOfSync", "Healthy", Value::Null),
        ],
    )
}

/// Asserts that `html` carries no markup from the fixture's strings, only their escaped form.
pub fn assert_escaped(html: &str) {
    assert!(!html.contains("<script"), "unescaped markup in {html}");
    assert!(html.contains("&lt;script&gt;"), "{html}");
}
