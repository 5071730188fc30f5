//! The clusters registered in a Kubernetes namespace: every Secret labelled
//! `argocd.argoproj.io/secret-type: cluster`, read into a [`StaticInventory`] for one generation,
//! or completely (with connection settings) for the Application controller (from the Secrets
//! [`crate::cluster::watches::watched_secrets`] keeps).

use k8s_openapi::api::core::v1::Secret;
use kube::api::ListParams;
use kube::{Api, Client};

use super::inventory::StaticInventory;
use crate::cluster::api_server::api_error::ApiError;
use crate::cluster::destinations::connection::{ClusterConfig, ConnectionError};
use crate::cluster::destinations::destination::RegisteredCluster;
use flotilla_core::secrets::cluster::{
    ClusterSecret, ClusterSecretError, SECRET_TYPE_CLUSTER, SECRET_TYPE_LABEL,
};
use flotilla_core::secrets::cluster_scope::{ClusterScope, ClusterScopeError};

/// The registrations could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LiveInventoryError {
    #[error("cannot list cluster Secrets in namespace {namespace}: {error}")]
    List {
        namespace: String,
        #[source]
        error: ApiError,
    },
    #[error("namespace {namespace}: {error}")]
    Secret {
        namespace: String,
        #[source]
        error: ClusterSecretError,
    },
    #[error("namespace {namespace}: {error}")]
    Config {
        namespace: String,
        #[source]
        error: ConnectionError,
    },
    #[error("namespace {namespace}: {error}")]
    Scope {
        namespace: String,
        #[source]
        error: ClusterScopeError,
    },
    #[error("namespace {namespace}: {message}")]
    Watch { namespace: String, message: String },
}

/// Lists the cluster Secrets of `namespace`, sorted by Secret name.
///
/// # Errors
/// The list call fails, or a cluster Secret has no `server`.
pub async fn read_inventory(
    client: &Client,
    namespace: &str,
) -> Result<StaticInventory, LiveInventoryError> {
    let clusters = list_cluster_secrets(client, namespace)
        .await?
        .iter()
        .map(|secret| read_secret(secret, namespace))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(StaticInventory::new(clusters))
}

/// The clusters `secrets` (cluster Secrets of `namespace`) register, with their connection
/// settings, in the order given.
///
/// # Errors
/// A cluster Secret has no `server` or an unreadable `config`.
pub fn registered_from<'a>(
    secrets: impl Iterator<Item = &'a Secret>,
    namespace: &str,
) -> Result<Vec<RegisteredCluster>, LiveInventoryError> {
    secrets
        .map(|secret| {
            Ok(RegisteredCluster {
                secret: read_secret(secret, namespace)?,
                scope: ClusterScope::from_secret(secret).map_err(|error| {
                    LiveInventoryError::Scope {
                        namespace: namespace.to_string(),
                        error,
                    }
                })?,
                config: ClusterConfig::from_secret(secret).map_err(|error| {
                    LiveInventoryError::Config {
                        namespace: namespace.to_string(),
                        error,
                    }
                })?,
            })
        })
        .collect()
}

fn read_secret(secret: &Secret, namespace: &str) -> Result<ClusterSecret, LiveInventoryError> {
    ClusterSecret::from_secret(secret).map_err(|error| LiveInventoryError::Secret {
        namespace: namespace.to_string(),
        error,
    })
}

async fn list_cluster_secrets(
    client: &Client,
    namespace: &str,
) -> Result<Vec<Secret>, LiveInventoryError> {
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    let selector = format!("{SECRET_TYPE_LABEL}={SECRET_TYPE_CLUSTER}");
    let mut secrets = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|error| LiveInventoryError::List {
            namespace: namespace.to_string(),
            error: error.into(),
        })?
        .items;
    secrets.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(secrets)
}
