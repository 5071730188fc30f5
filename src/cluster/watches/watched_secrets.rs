//! The Argo CD Secrets of the controller's namespace, kept by a watch (an informer, as Argo CD
//! keeps them) started on first use: cluster Secrets, which resolving an Application's
//! destination reads without a request (a list per reconcile was about 11 requests a second
//! with 2,000 Applications), and repository credential Secrets (`repository`, `repo-creds`),
//! which every fetch of a remote repository reads. A changed Secret applies as soon as the watch
//! delivers it.

use std::fmt;
use std::sync::Arc;

use flotilla_generators::cause::Cause;
use k8s_openapi::api::core::v1::Secret;
use kube::runtime::watcher;
use kube::{Api, Client};
use tokio::sync::OnceCell;

use flotilla_core::secrets::repository::{
    CredentialSource, CredentialsError, RepoCredentials, SECRET_TYPE_REPO_CREDS,
    SECRET_TYPE_REPOSITORY, credentials_for,
};

use super::listed_watch::ListedWatch;
use crate::cluster::destinations::destination::RegisteredCluster;
use crate::cluster::generator_inputs::live_inventory::{LiveInventoryError, registered_from};
use flotilla_core::secrets::cluster::{SECRET_TYPE_CLUSTER, SECRET_TYPE_LABEL};

/// The watched Secrets of one namespace with some `argocd.argoproj.io/secret-type`s.
pub struct WatchedSecrets {
    client: Client,
    namespace: String,
    selector: String,
    what: &'static str,
    /// The runtime a blocking caller starts the watch on (the one it was made in).
    runtime: Option<tokio::runtime::Handle>,
    watch: OnceCell<ListedWatch<Secret>>,
}

impl fmt::Debug for WatchedSecrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "WatchedSecrets({}, {})", self.namespace, self.selector)
    }
}

impl WatchedSecrets {
    /// The cluster Secrets of `namespace`.
    #[must_use]
    pub fn new(client: Client, namespace: &str) -> Self {
        Self::of_types(client, namespace, SECRET_TYPE_CLUSTER, "cluster Secrets")
    }

    /// The repository credential Secrets (`repository` and `repo-creds`) of `namespace`; made
    /// within a Tokio runtime, whose blocking threads then read them.
    #[must_use]
    pub fn repository_credentials(client: Client, namespace: &str) -> Self {
        let types = format!("{SECRET_TYPE_REPOSITORY},{SECRET_TYPE_REPO_CREDS}");
        Self::of_types(client, namespace, &types, "repository credential Secrets")
    }

    fn of_types(client: Client, namespace: &str, types: &str, what: &'static str) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            selector: format!("{SECRET_TYPE_LABEL} in ({types})"),
            what,
            runtime: tokio::runtime::Handle::try_current().ok(),
            watch: OnceCell::new(),
        }
    }

    /// The registered clusters, sorted by Secret name.
    ///
    /// # Errors
    /// The watch has not listed the Secrets in time (say, it is forbidden: the refusal is named), or
    /// a cluster Secret has no `server` or an unreadable `config`.
    pub async fn registered(&self) -> Result<Vec<RegisteredCluster>, LiveInventoryError> {
        let secrets = self.current().await?;
        registered_from(secrets.iter().map(AsRef::as_ref), &self.namespace)
    }

    /// The watched Secrets now, sorted by name.
    ///
    /// # Errors
    /// The watch has not listed the Secrets in time (say, it is forbidden: the refusal is named).
    pub async fn current(&self) -> Result<Vec<Arc<Secret>>, LiveInventoryError> {
        let watch = self.watch.get_or_try_init(|| self.start()).await?;
        let mut secrets = watch.store().state();
        secrets.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        Ok(secrets)
    }

    /// Starts the watch and waits until it has listed.
    async fn start(&self) -> Result<ListedWatch<Secret>, LiveInventoryError> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), &self.namespace);
        let config = watcher::Config::default().labels(&self.selector);
        ListedWatch::start(api, config, self.what)
            .await
            .map_err(|error| LiveInventoryError::Watch {
                namespace: self.namespace.clone(),
                message: format!("{}: {error}", self.what),
            })
    }
}

impl CredentialSource for WatchedSecrets {
    /// Blocks until the watch has listed on first use: call it on a blocking thread.
    fn credentials(
        &self,
        url: &str,
        project: Option<&str>,
    ) -> Result<Option<RepoCredentials>, CredentialsError> {
        let secrets = match (self.watch.get(), &self.runtime) {
            (Some(watch), _) => watch.store().state(),
            (None, Some(runtime)) => runtime
                .block_on(self.watch.get_or_try_init(|| self.start()))
                .map_err(|error| CredentialsError::Watch {
                    namespace: self.namespace.clone(),
                    cause: Cause::new(error),
                })?
                .store()
                .state(),
            (None, None) => {
                return Err(CredentialsError::Unavailable {
                    namespace: self.namespace.clone(),
                    message: "not made within a Tokio runtime".into(),
                });
            }
        };
        credentials_for(secrets.iter().map(AsRef::as_ref), url, project)
    }
}
