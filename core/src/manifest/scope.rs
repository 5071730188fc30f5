//! Which kinds are cluster-scoped, and defaulting the namespace of namespaced objects to the
//! destination namespace. A built-in table that an executor can refine with API discovery.

use std::collections::BTreeMap;

use serde_json::Value;

use super::resource::Resource;

/// Built-in cluster-scoped kinds as (group, kind).
const CLUSTER_SCOPED: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "ComponentStatus"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "IPAddress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("node.k8s.io", "RuntimeClass"),
    ("policy", "PodSecurityPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
];

/// Whether each (group, kind) is namespaced: the built-in table plus what was learned from CRDs
/// in the source or from discovery. Unknown kinds are taken as namespaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeTable {
    cluster_scoped: BTreeMap<(String, String), bool>,
}

impl Default for ScopeTable {
    fn default() -> Self {
        let cluster_scoped = CLUSTER_SCOPED
            .iter()
            .map(|(group, kind)| (((*group).to_owned(), (*kind).to_owned()), true))
            .collect();
        Self { cluster_scoped }
    }
}

impl ScopeTable {
    /// Records the scope of a kind (from discovery, or a CRD's `spec.scope`).
    pub fn set(&mut self, group: &str, kind: &str, cluster_scoped: bool) {
        self.cluster_scoped
            .insert((group.to_owned(), kind.to_owned()), cluster_scoped);
    }

    /// Learns the scope of every custom resource kind defined by a CRD among `resources`.
    pub fn learn_from_crds(&mut self, resources: &[Resource]) {
        for resource in resources {
            if resource.kind != "CustomResourceDefinition" {
                continue;
            }
            let spec = resource.body.get("spec");
            let text = |pointer: &str| {
                spec.and_then(|s| s.pointer(pointer))
                    .and_then(Value::as_str)
            };
            if let (Some(group), Some(kind), Some(scope)) =
                (text("/group"), text("/names/kind"), text("/scope"))
            {
                self.set(group, kind, scope == "Cluster");
            }
        }
    }

    /// Whether objects of this kind live outside namespaces.
    #[must_use]
    pub fn is_cluster_scoped(&self, group: &str, kind: &str) -> bool {
        self.cluster_scoped
            .get(&(group.to_owned(), kind.to_owned()))
            .copied()
            .unwrap_or(false)
    }
}

/// Gives namespaced objects without a namespace the destination namespace (when there is one)
/// and clears the namespace of cluster-scoped objects, so keys match what the server reports.
pub fn assign_namespaces(
    resources: &mut [Resource],
    scopes: &ScopeTable,
    destination: Option<&str>,
) {
    for resource in resources {
        if scopes.is_cluster_scoped(&resource.group, &resource.kind) {
            resource.namespace = None;
        } else if resource.namespace.is_none() {
            resource.namespace = destination.map(str::to_owned);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::manifest::Source;

    fn resource(api_version: &str, kind: &str, namespace: Option<&str>) -> Resource {
        let mut metadata = json!({"name": "x"});
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        let body = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata});
        Resource::from_value(
            body,
            Source {
                file: "f".into(),
                document: 0,
            },
        )
        .unwrap()
    }

    #[test]
    fn namespaces_follow_scope() {
        let crd = Resource::from_value(
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                   "metadata": {"name": "clusterwidgets.example.com"},
                   "spec": {"group": "example.com", "scope": "Cluster",
                            "names": {"kind": "ClusterWidget"}}}),
            Source {
                file: "f".into(),
                document: 0,
            },
        )
        .unwrap();
        let mut resources = vec![
            resource("v1", "ConfigMap", None),
            resource("v1", "ConfigMap", Some("other")),
            resource("v1", "Namespace", None),
            resource("rbac.authorization.k8s.io/v1", "ClusterRole", Some("stray")),
            resource("example.com/v1", "Widget", None),
            resource("example.com/v1", "ClusterWidget", None),
            crd,
        ];
        let mut scopes = ScopeTable::default();
        scopes.learn_from_crds(&resources);
        assign_namespaces(&mut resources, &scopes, Some("dest"));
        let namespaces: Vec<_> = resources.iter().map(|r| r.namespace.as_deref()).collect();
        assert_eq!(
            namespaces,
            [
                Some("dest"),
                Some("other"),
                None,
                None,
                Some("dest"),
                None,
                None
            ]
        );
    }

    #[test]
    fn without_destination_namespaced_objects_stay_unset() {
        let mut resources = vec![resource("apps/v1", "Deployment", None)];
        assign_namespaces(&mut resources, &ScopeTable::default(), None);
        assert_eq!(resources[0].namespace, None);
    }

    #[test]
    fn discovery_refines_the_table() {
        let mut scopes = ScopeTable::default();
        assert!(!scopes.is_cluster_scoped("example.com", "Thing"));
        scopes.set("example.com", "Thing", true);
        assert!(scopes.is_cluster_scoped("example.com", "Thing"));
        assert!(scopes.is_cluster_scoped("storage.k8s.io", "StorageClass"));
        assert!(!scopes.is_cluster_scoped("", "Service"));
    }
}
