//! The default apply order of kinds within a wave (Argo CD's), every other kind last.

/// Kinds in apply order.
const KIND_ORDER: &[&str] = &[
    "Namespace",
    "NetworkPolicy",
    "ResourceQuota",
    "LimitRange",
    "PodSecurityPolicy",
    "PodDisruptionBudget",
    "ServiceAccount",
    "Secret",
    "SecretList",
    "ConfigMap",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CustomResourceDefinition",
    "ClusterRole",
    "ClusterRoleList",
    "ClusterRoleBinding",
    "ClusterRoleBindingList",
    "Role",
    "RoleList",
    "RoleBinding",
    "RoleBindingList",
    "Service",
    "DaemonSet",
    "Pod",
    "ReplicationController",
    "ReplicaSet",
    "Deployment",
    "HorizontalPodAutoscaler",
    "StatefulSet",
    "Job",
    "CronJob",
    "IngressClass",
    "Ingress",
    "APIService",
];

/// The rank of a kind in the apply order; every unlisted kind shares the last rank.
#[must_use]
pub fn kind_rank(kind: &str) -> usize {
    KIND_ORDER
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(KIND_ORDER.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks() {
        let ordered = [
            "Namespace",
            "Secret",
            "ConfigMap",
            "CustomResourceDefinition",
            "Service",
            "Deployment",
            "Job",
            "Ingress",
            "APIService",
            "Widget",
        ];
        let ranks: Vec<_> = ordered.iter().map(|k| kind_rank(k)).collect();
        assert!(ranks.is_sorted_by(|a, b| a < b), "{ranks:?}");
        assert_eq!(kind_rank("Widget"), kind_rank("Certificate"));
    }
}
