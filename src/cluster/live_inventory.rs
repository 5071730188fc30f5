//! The cluster inventory as registered in a Kubernetes namespace: every Secret labelled
//! `argocd.argoproj.io/secret-type: cluster`, read into a [`StaticInventory`] for one generation.

use k8s_openapi::api::core::v1::Secret;
use kube::api::ListParams;
use kube::{Api, Client};

use super::inventory::StaticInventory;
use super::secret::{ClusterSecret, ClusterSecretError, SECRET_TYPE_CLUSTER, SECRET_TYPE_LABEL};

/// The registrations could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LiveInventoryError {
    #[error("cannot list cluster Secrets in namespace {namespace}: {error}")]
    List {
        namespace: String,
        error: kube::Error,
    },
    #[error("namespace {namespace}: {error}")]
    Secret {
        namespace: String,
        error: ClusterSecretError,
    },
}

/// Lists the cluster Secrets of `namespace`, sorted by Secret name.
///
/// # Errors
/// The list call fails, or a cluster Secret has no `server`.
pub async fn read_inventory(
    client: &Client,
    namespace: &str,
) -> Result<StaticInventory, LiveInventoryError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{SECRET_TYPE_LABEL}={SECRET_TYPE_CLUSTER}");
    let list = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|error| LiveInventoryError::List {
            namespace: namespace.to_string(),
            error,
        })?;
    let mut clusters = list
        .items
        .iter()
        .map(ClusterSecret::from_secret)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| LiveInventoryError::Secret {
            namespace: namespace.to_string(),
            error,
        })?;
    clusters.sort_by(|a, b| a.secret_name.cmp(&b.secret_name));
    Ok(StaticInventory::new(clusters))
}
