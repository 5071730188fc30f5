//! The AppProjects of the controller's namespace, kept by a watch started on first use, with the
//! repositories its project-scoped repository Secrets name (a watch of those Secrets): every
//! decision reads the projects as they are now, without a request, and their globs and windows
//! parsed once for the life of the watch.

use std::sync::Arc;

use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tokio::sync::OnceCell;

use flotilla_core::api::AppProject;
use flotilla_core::project::{ProjectMemos, Projects};

use super::listed_watch::{ListedWatch, NotListed};
use super::watched_secrets::WatchedSecrets;
use crate::cluster::generator_inputs::live_inventory::LiveInventoryError;
use flotilla_core::secrets::repository::scoped_repositories;

/// The projects cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ProjectsWatchError {
    #[error("AppProjects in namespace {namespace}: {source}")]
    Projects {
        namespace: String,
        #[source]
        source: NotListed,
    },
    #[error("the project-scoped repositories: {0}")]
    Repositories(#[source] LiveInventoryError),
}

/// The watched AppProjects of one namespace.
pub struct WatchedProjects {
    client: Client,
    namespace: String,
    watch: OnceCell<ListedWatch<AppProject>>,
    repository_secrets: WatchedSecrets,
    memos: Arc<ProjectMemos>,
}

impl WatchedProjects {
    /// The AppProjects of `namespace`.
    #[must_use]
    pub fn new(client: Client, namespace: &str) -> Self {
        Self {
            repository_secrets: WatchedSecrets::repository_credentials(client.clone(), namespace),
            client,
            namespace: namespace.to_owned(),
            watch: OnceCell::new(),
            memos: Arc::default(),
        }
    }

    /// The projects now, kept in this namespace, with their scoped repositories.
    ///
    /// # Errors
    /// A watch has not listed in time (say, it is forbidden or the CRD is not installed).
    pub async fn current(&self) -> Result<Projects, ProjectsWatchError> {
        let watch = self.watch.get_or_try_init(|| self.start()).await?;
        let secrets = self
            .repository_secrets
            .current()
            .await
            .map_err(ProjectsWatchError::Repositories)?;
        Ok(Projects::new(
            watch
                .store()
                .state()
                .iter()
                .map(|project| (project.name_any(), project.spec.clone())),
        )
        .in_namespace(&self.namespace)
        .with_scoped_repositories(scoped_repositories(secrets.iter().map(AsRef::as_ref)))
        .with_memos(Arc::clone(&self.memos)))
    }

    async fn start(&self) -> Result<ListedWatch<AppProject>, ProjectsWatchError> {
        let api: Api<AppProject> = Api::namespaced(self.client.clone(), &self.namespace);
        ListedWatch::start(api, watcher::Config::default(), "the AppProjects")
            .await
            .map_err(|source| ProjectsWatchError::Projects {
                namespace: self.namespace.clone(),
                source,
            })
    }
}
