//! One [`KubeCluster`] per destination cluster, created on first use and reused (with its
//! discovered resource types) until its cluster Secret's connection settings or scope
//! (`namespaces`, `clusterResources`) change. The controller's own cluster is reached through
//! its own client, scoped by a cluster Secret registering the in-cluster address if there is
//! one; remote ones through clients made by the same [`Connect`] (the controller's adds its
//! leader write gate). Every cluster announces changes of its tracked objects to one channel
//! ([`ClusterClients::touched`]). What each cluster used holds is summed up for the metrics
//! ([`ClusterFacts`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use kube::Client;

use flotilla_generators::source::{IN_CLUSTER_NAME, IN_CLUSTER_SERVER};

use flotilla_core::api::application::ApplicationDestination;
use flotilla_core::project::ClusterIdentity;
use flotilla_core::secrets::cluster_scope::ClusterScope;

use super::connection::{ClusterConfig, ConnectionError};
use super::destination::{
    DestinationError, Target, cluster_label, cluster_name, identity, resolve, scope,
};
use crate::cluster::api_server::kube_cluster::KubeCluster;
use crate::cluster::generator_inputs::live_inventory::LiveInventoryError;
use crate::cluster::tracked::tracked_cache::Touched;
use crate::cluster::watches::watched_secrets::WatchedSecrets;

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

/// One cluster the controller syncs to, as `argocd_cluster_*` show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterFacts {
    /// Its server URL.
    pub server: String,
    /// Its registered name (`in-cluster` for the controller's own).
    pub name: String,
    /// The Kubernetes version its API server reported, once read.
    pub k8s_version: String,
    /// The resource types whose objects the controller watches there.
    pub api_resources: u64,
    /// The tracked objects those watches hold.
    pub objects: u64,
    /// The watch events received from it.
    pub events: u64,
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
    /// The controller's own client, and its cluster as last scoped.
    client: Client,
    local: Mutex<Option<(ClusterScope, Arc<KubeCluster>)>>,
    connect: Connect,
    remote: Mutex<BTreeMap<String, Remote>>,
    touched: Touched,
}

/// A remote cluster as made: with the connection settings and scope it was made for, and its
/// name.
type Remote = (ClusterConfig, ClusterScope, Arc<KubeCluster>, String);

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
            client,
            local: Mutex::default(),
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
    /// applies as soon as the watch sees it), its Kubernetes version read once (for the
    /// metrics).
    ///
    /// # Errors
    /// Unreadable cluster Secrets, an unknown destination, or unusable connection settings.
    pub async fn for_destination(
        &self,
        destination: &ApplicationDestination,
    ) -> Result<Arc<KubeCluster>, ClientsError> {
        let cluster = self.cluster_for(destination).await?;
        cluster.read_version().await;
        Ok(cluster)
    }

    /// See [`Self::for_destination`].
    async fn cluster_for(
        &self,
        destination: &ApplicationDestination,
    ) -> Result<Arc<KubeCluster>, ClientsError> {
        let registered = self.secrets.registered().await?;
        let (server, config) = match resolve(destination, &registered)? {
            Target::InCluster => {
                let scope = scope(IN_CLUSTER_SERVER, &registered);
                let label = cluster_label(IN_CLUSTER_SERVER, &registered);
                return Ok(self.local(scope, &label));
            }
            Target::Remote { server, config } => (server, *config),
        };
        let scope = scope(&server, &registered);
        if let Some(cluster) = self.cached(&server, &config, &scope) {
            return Ok(cluster);
        }
        let client = (self.connect)(config.config(&server).await?).map_err(|error| {
            ConnectionError::Client {
                server: server.clone(),
                error: Box::new(error),
            }
        })?;
        let label = cluster_label(&server, &registered);
        let cluster = Arc::new(KubeCluster::announcing(
            client,
            self.touched.clone(),
            &label,
            scope.clone(),
        ));
        if let Ok(mut remote) = self.remote.lock() {
            let name = cluster_name(&server, &registered).to_owned();
            remote.insert(server, (config, scope, Arc::clone(&cluster), name));
        }
        Ok(cluster)
    }

    /// The clusters used so far (the controller's own as `in-cluster` at
    /// `https://kubernetes.default.svc`, unless a cluster Secret names it), with what is
    /// watched in each, for the metrics.
    #[must_use]
    pub fn facts(&self) -> Vec<ClusterFacts> {
        let fact = |server: &str, name: &str, cluster: &KubeCluster| {
            let size = cluster.watch_size();
            ClusterFacts {
                server: server.to_owned(),
                name: name.to_owned(),
                k8s_version: cluster.version().to_owned(),
                api_resources: size.resource_types,
                objects: size.objects,
                events: size.events,
            }
        };
        let mut facts = Vec::new();
        if let Some((_, cluster)) = self
            .local
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            facts.push(fact(IN_CLUSTER_SERVER, IN_CLUSTER_NAME, cluster));
        }
        let remote = self.remote.lock().unwrap_or_else(PoisonError::into_inner);
        for (server, (_, _, cluster, name)) in remote.iter() {
            facts.push(fact(server, name, cluster));
        }
        facts
    }

    /// The controller's own cluster with `scope`: the one made before while the scope is the
    /// same, a new one (with watches of its own) when it changed.
    fn local(&self, scope: ClusterScope, label: &str) -> Arc<KubeCluster> {
        let mut local = self.local.lock().unwrap_or_else(PoisonError::into_inner);
        match local.as_ref() {
            Some((cached, cluster)) if *cached == scope => Arc::clone(cluster),
            _ => {
                let cluster = Arc::new(KubeCluster::announcing(
                    self.client.clone(),
                    self.touched.clone(),
                    label,
                    scope.clone(),
                ));
                *local = Some((scope, Arc::clone(&cluster)));
                cluster
            }
        }
    }

    fn cached(
        &self,
        server: &str,
        config: &ClusterConfig,
        scope: &ClusterScope,
    ) -> Option<Arc<KubeCluster>> {
        let remote = self.remote.lock().ok()?;
        let (cached_config, cached_scope, cluster, _) = remote.get(server)?;
        (cached_config == config && cached_scope == scope).then(|| Arc::clone(cluster))
    }
}
