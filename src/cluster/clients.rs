//! One [`KubeCluster`] per destination cluster, created on first use and reused (with its
//! discovered resource types) until its cluster Secret's connection settings change. The
//! controller's own cluster is reached through its own client; remote ones through clients made
//! by the same [`Connect`] (the controller's adds its leader write gate). Every cluster announces
//! changes of its tracked objects to one channel ([`ClusterClients::touched`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use kube::Client;

use crate::api::application::ApplicationDestination;
use crate::project::ClusterIdentity;

use super::connection::{ClusterConfig, ConnectionError};
use super::destination::{DestinationError, Target, identity, resolve};
use super::kube_cluster::KubeCluster;
use super::live_inventory::LiveInventoryError;
use super::tracked_cache::Touched;
use super::watched_secrets::WatchedSecrets;

/// A destination that cannot be reached.
#[derive(Debug, thiserror::Error)]
pub enum ClientsError {
    #[error(transparent)]
    Registry(#[from] LiveInventoryError),
    #[error(transparent)]
    Destination(#[from] DestinationError),
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

/// Makes a client from a configuration.
pub type Connect = Arc<dyn Fn(kube::Config) -> Result<Client, kube::Error> + Send + Sync>;

/// A [`Connect`] that adds nothing to kube's client.
#[must_use]
pub fn plain_connect() -> Connect {
    Arc::new(Client::try_from)
}

/// The clients of every destination the controller has used.
pub struct ClusterClients {
    secrets: WatchedSecrets,
    local: Arc<KubeCluster>,
    connect: Connect,
    remote: Mutex<BTreeMap<String, (ClusterConfig, Arc<KubeCluster>)>>,
    touched: Touched,
}

/// How many announcements of changed objects wait for a slow subscriber before it lags.
const TOUCHED_CAPACITY: usize = 4096;

impl ClusterClients {
    /// Clients for destinations registered in `namespace`, with `client` for the controller's
    /// own cluster and `connect` making the others.
    #[must_use]
    pub fn new(client: Client, namespace: &str, connect: Connect) -> Self {
        let (touched, _) = tokio::sync::broadcast::channel(TOUCHED_CAPACITY);
        Self {
            secrets: WatchedSecrets::new(client.clone(), namespace),
            local: Arc::new(KubeCluster::announcing(client, touched.clone())),
            connect,
            remote: Mutex::default(),
            touched,
        }
    }

    /// The tracking ids of tracked objects that change from now on, in every cluster used.
    #[must_use]
    pub fn touched(&self) -> tokio::sync::broadcast::Receiver<String> {
        self.touched.subscribe()
    }

    /// Both names (server URL and registered name) of the cluster `destination` names, as
    /// projects match it.
    ///
    /// # Errors
    /// Unreadable cluster Secrets.
    pub async fn identity(
        &self,
        destination: &ApplicationDestination,
    ) -> Result<ClusterIdentity, ClientsError> {
        let registered = self.secrets.registered().await?;
        Ok(identity(destination, registered.iter().map(|r| &r.secret)))
    }

    /// The cluster `destination` names (from the watched cluster Secrets, so a changed Secret
    /// applies as soon as the watch sees it).
    ///
    /// # Errors
    /// Unreadable cluster Secrets, an unknown destination, or unusable connection settings.
    pub async fn for_destination(
        &self,
        destination: &ApplicationDestination,
    ) -> Result<Arc<KubeCluster>, ClientsError> {
        let registered = self.secrets.registered().await?;
        let (server, config) = match resolve(destination, &registered)? {
            Target::InCluster => return Ok(Arc::clone(&self.local)),
            Target::Remote { server, config } => (server, *config),
        };
        if let Some(cluster) = self.cached(&server, &config) {
            return Ok(cluster);
        }
        let client =
            (self.connect)(config.config(&server).await?).map_err(|e| ConnectionError::Client {
                server: server.clone(),
                message: e.to_string(),
            })?;
        let cluster = Arc::new(KubeCluster::announcing(client, self.touched.clone()));
        if let Ok(mut remote) = self.remote.lock() {
            remote.insert(server, (config, Arc::clone(&cluster)));
        }
        Ok(cluster)
    }

    fn cached(&self, server: &str, config: &ClusterConfig) -> Option<Arc<KubeCluster>> {
        let remote = self.remote.lock().ok()?;
        let (cached_config, cluster) = remote.get(server)?;
        (cached_config == config).then(|| Arc::clone(cluster))
    }
}
