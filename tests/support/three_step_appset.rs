//! The three-step RollingSync ApplicationSet `platform-stack` the webhook and notification tests
//! share: the components `database`, `backend` and `frontend` of a repository, one step each
//! (`tier` labels 1, 2, 3), automated sync with prune into one namespace, project `platform`;
//! and the wait for its rollout to complete in step order.
// Each integration test binary compiles this module and uses a subset of it.
#![allow(dead_code)]

use std::time::Duration;

use flotilla_core::api::application_set_status::RolloutApplicationState as State;
use flotilla_core::api::{Application, ApplicationSet};
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use serde_json::json;

use super::sync_times::sync_times;
use super::{TestNamespace, eventually_within, object};

/// The components, in step order.
pub const ORDER: [&str; 3] = ["database", "backend", "frontend"];

/// Waits (up to `within`) until `platform-stack` of `ns` has its three Applications Healthy, and
/// asserts that each step's sync started only after the previous step's finished; the
/// (started, finished) times of the components, in [`ORDER`].
pub async fn rolled_out_in_order(
    ns: &TestNamespace,
    within: Duration,
) -> Vec<(Timestamp, Timestamp)> {
    let appsets: Api<ApplicationSet> = ns.api();
    let apps: Api<Application> = ns.api();
    let times = eventually_within(within, "the rollout", async || {
        let mut times = Vec::new();
        for name in ORDER {
            times.push(sync_times(&apps, name).await?);
        }
        let appset = appsets
            .get("platform-stack")
            .await
            .map_err(|e| e.to_string())?;
        let status = appset.status.unwrap_or_default();
        let healthy = status.application_status.len() == 3
            && status
                .application_status
                .iter()
                .all(|entry| entry.status == State::Healthy);
        healthy
            .then_some(times)
            .ok_or(format!("{:?}", status.application_status))
    })
    .await;
    for pair in times.windows(2) {
        assert!(
            pair[0].1 <= pair[1].0,
            "a step's sync started before the previous step's finished: {times:?}"
        );
    }
    times
}

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
