//! A ValidatingAdmissionPolicy and its binding that refuse some writes in one test namespace, as
//! an API server refuses what its admission denies (a status too large for etcd, a policy of the
//! cluster's owners). Cluster-scoped, so named after the namespace; removed by
//! [`Refusal::remove`].

use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use serde_json::{Value, json};

use super::TestNamespace;

/// The installed policy and binding.
pub struct Refusal {
    name: String,
    apis: [Api<DynamicObject>; 2],
}

impl Refusal {
    /// Refuses, in `ns`, the writes `rules` (the policy's `matchConstraints.resourceRules`)
    /// match for which the CEL `expression` is false, with `message`; `name` is suffixed with the
    /// namespace.
    pub async fn install(
        ns: &TestNamespace,
        name: &str,
        rules: Value,
        expression: &str,
        message: &str,
    ) -> Self {
        let name = format!("{name}-{}", ns.name);
        let policy = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": rules},
                "validations": [{"expression": expression, "message": message}],
            },
        });
        let binding = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns.name}},
                },
            },
        });
        let cluster_scoped = |kind: &str| {
            let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(
                "admissionregistration.k8s.io",
                "v1",
                kind,
            ));
            Api::<DynamicObject>::all_with(ns.client.clone(), &resource)
        };
        let apis = [
            cluster_scoped("ValidatingAdmissionPolicy"),
            cluster_scoped("ValidatingAdmissionPolicyBinding"),
        ];
        for (api, object) in apis.iter().zip([policy, binding]) {
            api.patch(&name, &PatchParams::apply("test"), &Patch::Apply(object))
                .await
                .expect("applies the admission policy");
        }
        Self { name, apis }
    }

    /// Deletes the policy and its binding: the API server admits those writes again (once its
    /// policy cache sees the deletion).
    pub async fn remove(self) {
        for api in &self.apis {
            api.delete(&self.name, &Default::default())
                .await
                .expect("deletes the admission policy");
        }
    }
}
