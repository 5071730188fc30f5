//! A RollingSync ApplicationSet over a list generator whose elements name an Application
//! (`app`), the directory it deploys (`component`) and its `step` label, which the steps
//! select, and how a step graph is applied: shared by the step graph and web view pipeline
//! tests.

use flotilla_core::api::ApplicationSet;
use kube::Api;
use serde_json::json;

use super::{TestNamespace, apply, eventually, install_flotilla_crds, object};

/// An ApplicationSet `name` over `elements` (each with `app`, `component` and `step`
/// labels), deploying `component` of `url` into `ns`, rolled out by `steps`.
pub fn appset(
    name: &str,
    url: &str,
    ns: &TestNamespace,
    elements: &serde_json::Value,
    steps: &serde_json::Value,
) -> ApplicationSet {
    object(json!({
        "apiVersion": "flotilla.dev/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name},
        "spec": {
            "goTemplate": true,
            "generators": [{"list": {"elements": elements}}],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": steps}},
            "template": {
                "metadata": {"name": "{{.app}}", "labels": {"step": "{{.step}}"}},
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

/// Applies `appset` with the Flotilla CRDs installed, and checks that the API server kept its
/// steps' `dependsOn` (the CRDs are shared with other tests, which may install an older copy
/// meanwhile: then they are installed and the ApplicationSet applied again).
pub async fn apply_graph(ns: &TestNamespace, appset: &ApplicationSet) {
    let appsets: Api<ApplicationSet> = ns.api();
    eventually("the ApplicationSet stored with its dependsOn", async || {
        install_flotilla_crds(&ns.client).await;
        let stored = apply(&appsets, appset).await;
        let kept = stored
            .spec
            .strategy
            .as_ref()
            .and_then(|s| s.rolling_sync.as_ref())
            .is_some_and(|r| r.steps.iter().skip(1).all(|s| s.depends_on.is_some()));
        if kept {
            Ok(())
        } else {
            Err("dependsOn pruned by an older CRD".to_owned())
        }
    })
    .await;
}
