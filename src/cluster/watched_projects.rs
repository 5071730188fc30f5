//! The AppProjects of the controller's namespace, kept by a watch started on first use: every
//! decision reads the projects as they are now, without a request.

use kube::runtime::watcher;
use kube::{Api, Client, ResourceExt};
use tokio::sync::OnceCell;

use crate::api::AppProject;
use crate::duration::format_duration;
use crate::project::Projects;

use super::listed_watch::{LIST_TIMEOUT, ListedWatch};

/// The projects cannot be read.
#[derive(Debug, thiserror::Error)]
#[error(
    "AppProjects in namespace {namespace}: the watch has not listed within {}",
    format_duration(LIST_TIMEOUT)
)]
pub struct ProjectsWatchError {
    pub namespace: String,
}

/// The watched AppProjects of one namespace.
pub struct WatchedProjects {
    client: Client,
    namespace: String,
    watch: OnceCell<ListedWatch<AppProject>>,
}

impl WatchedProjects {
    /// The AppProjects of `namespace`.
    #[must_use]
    pub fn new(client: Client, namespace: &str) -> Self {
        Self {
            client,
            namespace: namespace.to_owned(),
            watch: OnceCell::new(),
        }
    }

    /// The projects now.
    ///
    /// # Errors
    /// The watch has not listed in time (say, it is forbidden or the CRD is not installed).
    pub async fn current(&self) -> Result<Projects, ProjectsWatchError> {
        let watch = self.watch.get_or_try_init(|| self.start()).await?;
        Ok(Projects::new(
            watch
                .store()
                .state()
                .iter()
                .map(|project| (project.name_any(), project.spec.clone())),
        ))
    }

    async fn start(&self) -> Result<ListedWatch<AppProject>, ProjectsWatchError> {
        let api: Api<AppProject> = Api::namespaced(self.client.clone(), &self.namespace);
        ListedWatch::start(api, watcher::Config::default(), "the AppProjects")
            .await
            .ok_or_else(|| ProjectsWatchError {
                namespace: self.namespace.clone(),
            })
    }
}
