//! The two-tier RollingSync ApplicationSet the chart rollout tests share: `database` in step 1,
//! `backend` in step 2 (goTemplate list generator, `priority` labels), each Application deploying
//! its `source` (or `sources`) into one namespace with automated sync; and the wait for its
//! rollout to complete.

use std::time::Duration;

use flotilla_core::api::application::ApplicationStatus;
use flotilla_core::api::application_set_status::RolloutApplicationState;
use flotilla_core::api::{Application, ApplicationSet};
use kube::Api;
use serde_json::{Value, json};

use super::eventually_within;

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

/// Waits (up to `timeout`) until both Applications of the ApplicationSet `name` are Healthy on
/// `targets` in its rollout status and `each` accepts the status of each (`database`, then
/// `backend`); returns what `each` made of them.
pub async fn rolled_out<T>(
    appsets: &Api<ApplicationSet>,
    apps: &Api<Application>,
    name: &str,
    targets: &[String],
    timeout: Duration,
    each: impl Fn(&str, ApplicationStatus) -> Result<T, String>,
) -> Vec<T> {
    eventually_within(
        timeout,
        &format!("the rollout of {name} on {targets:?}"),
        async || {
            let appset = appsets.get(name).await.map_err(|e| e.to_string())?;
            let entries = appset
                .status
                .map(|s| s.application_status)
                .unwrap_or_default();
            let done = entries.len() == 2
                && entries.iter().all(|e| {
                    e.status == RolloutApplicationState::Healthy && e.target_revisions == targets
                });
            if !done {
                return Err(format!("{entries:#?}"));
            }
            let mut made = Vec::new();
            for app in ["database", "backend"] {
                let status = apps
                    .get(app)
                    .await
                    .map_err(|e| e.to_string())?
                    .status
                    .unwrap_or_default();
                made.push(each(app, status)?);
            }
            Ok(made)
        },
    )
    .await
}
