//! Cluster inventories for the clusters generator: a fixed list of registered clusters, read from
//! a YAML file of cluster Secrets (`--clusters FILE`) or listed from a Kubernetes namespace.

use flotilla_generators::source::{Cluster, ClusterInventory, InventoryError};
use k8s_openapi::api::core::v1::Secret;

use flotilla_core::yaml::YamlError;

use flotilla_core::secrets::cluster::{
    ClusterSecret, ClusterSecretError, SECRET_TYPE_CLUSTER, SECRET_TYPE_LABEL,
};

/// A cluster inventory file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InventoryFileError {
    #[error(transparent)]
    Yaml(#[from] YamlError),
    #[error("{file}: Secret {secret} is not labelled {SECRET_TYPE_LABEL}: {SECRET_TYPE_CLUSTER}")]
    NotAClusterSecret { file: String, secret: String },
    #[error("{file}: {error}")]
    Secret {
        file: String,
        #[source]
        error: ClusterSecretError,
    },
}

/// A fixed set of registered clusters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StaticInventory {
    clusters: Vec<ClusterSecret>,
}

impl StaticInventory {
    /// An inventory of already-read registrations.
    #[must_use]
    pub fn new(clusters: Vec<ClusterSecret>) -> Self {
        Self { clusters }
    }

    /// Parses a YAML list of cluster Secrets; `file` names the source in errors.
    ///
    /// # Errors
    /// Invalid YAML, a Secret without the cluster label, a Secret without `server`.
    pub fn from_yaml(file: &str, text: &str) -> Result<Self, InventoryFileError> {
        let secrets: Vec<Secret> =
            serde_saphyr::from_str(text).map_err(|error| YamlError::new(file, &error))?;
        let clusters = secrets
            .iter()
            .map(|secret| {
                if !ClusterSecret::is_cluster_secret(secret) {
                    return Err(InventoryFileError::NotAClusterSecret {
                        file: file.to_string(),
                        secret: secret.metadata.name.clone().unwrap_or_default(),
                    });
                }
                ClusterSecret::from_secret(secret).map_err(|error| InventoryFileError::Secret {
                    file: file.to_string(),
                    error,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { clusters })
    }

    /// The registrations, in file order.
    #[must_use]
    pub fn registrations(&self) -> &[ClusterSecret] {
        &self.clusters
    }
}

impl ClusterInventory for StaticInventory {
    fn clusters(&self) -> Result<Vec<Cluster>, InventoryError> {
        Ok(self
            .clusters
            .iter()
            .map(|c| Cluster {
                name: c.name.clone(),
                server: c.server.clone(),
                project: c.project.clone(),
                labels: c.labels.clone(),
                annotations: c.annotations.clone(),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_example_inventory() {
        let text = include_str!("../../../examples/clusters.yaml");
        let inventory = StaticInventory::from_yaml("examples/clusters.yaml", text).unwrap();
        let clusters = inventory.clusters().unwrap();
        assert_eq!(clusters.len(), 5);
        let last = clusters.last().unwrap();
        assert_eq!(
            (last.name.as_str(), last.server.as_str()),
            ("prod-us-2", "https://prod-us-2.k8s.example.com")
        );
    }

    #[test]
    fn errors_name_the_file_and_the_secret() {
        let err = StaticInventory::from_yaml(
            "c.yaml",
            "- metadata: {name: plain}\n  stringData: {server: x}\n",
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "c.yaml: Secret plain is not labelled argocd.argoproj.io/secret-type: cluster"
        );
        let err = StaticInventory::from_yaml("c.yaml", "- metadata: [oops\n").unwrap_err();
        assert!(err.to_string().contains("c.yaml:1:13"), "{err}");
    }
}
