//! The web view's watches: one reflector each on the namespace's ApplicationSets, Applications
//! and AppProjects (managed fields dropped), and on the ApplicationSets' `RolloutEnded` Events
//! (the rollouts older than their status keeps), shared by every viewer, and a broadcast that ticks
//! whenever one changes. They run on every replica, leader or not, so a standby serves the
//! same pages; no viewer causes a request to the API server.

use std::sync::Arc;

use futures::{Future, StreamExt};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};
use tokio::sync::broadcast;

use super::snapshot::Snapshot;
use flotilla_core::api::{AppProject, Application, ApplicationSet};
use flotilla_core::controller::event_reason::EventReason;
use flotilla_core::project::{ProjectMemos, Projects};
use k8s_openapi::api::core::v1::Event;

/// How many change ticks a slow viewer may miss before it only learns that it lagged (it then
/// renders once, as for one tick).
const CHANGE_BACKLOG: usize = 16;

/// The watched ApplicationSets and Applications of one namespace.
pub struct FleetWatch {
    namespace: String,
    appsets: Store<ApplicationSet>,
    applications: Store<Application>,
    projects: Store<AppProject>,
    rollouts_ended: Store<Event>,
    /// The projects' globs and windows, parsed once for the life of the watch.
    memos: Arc<ProjectMemos>,
    changes: broadcast::Sender<()>,
}

impl FleetWatch {
    /// The watch of `namespace` through `client`, and the future that keeps it current (run it
    /// for as long as the view is served).
    pub fn start(
        client: &Client,
        namespace: &str,
    ) -> (Arc<Self>, impl Future<Output = ()> + Send + 'static) {
        let (appsets, appsets_writer) = reflector::store();
        let (applications, applications_writer) = reflector::store();
        let (projects, projects_writer) = reflector::store();
        let (rollouts_ended, rollouts_ended_writer) = reflector::store();
        let (changes, _) = broadcast::channel(CHANGE_BACKLOG);
        let watch = Arc::new(Self {
            namespace: namespace.to_owned(),
            appsets,
            applications,
            projects,
            rollouts_ended,
            memos: Arc::default(),
            changes: changes.clone(),
        });
        let every = watcher::Config::default;
        let appsets = reflect(
            appsets_writer,
            Api::namespaced(client.clone(), namespace),
            every(),
            changes.clone(),
        );
        let applications = reflect(
            applications_writer,
            Api::namespaced(client.clone(), namespace),
            every(),
            changes.clone(),
        );
        let projects = reflect(
            projects_writer,
            Api::namespaced(client.clone(), namespace),
            every(),
            changes.clone(),
        );
        let rollouts_ended = reflect(
            rollouts_ended_writer,
            Api::namespaced(client.clone(), namespace),
            every().fields(&format!(
                "involvedObject.kind=ApplicationSet,reason={}",
                EventReason::RolloutEnded.as_str()
            )),
            changes,
        );
        let running = async move {
            futures::future::join4(appsets, applications, projects, rollouts_ended).await;
        };
        (watch, running)
    }

    /// What the watches hold now.
    #[must_use]
    pub fn snapshot(&self) -> Snapshot {
        let projects = self
            .projects
            .state()
            .iter()
            .map(|project| (project.name_any(), project.spec.clone()))
            .collect::<Vec<_>>();
        Snapshot::new(
            self.namespace.clone(),
            Timestamp::now(),
            self.appsets.state(),
            self.applications.state(),
        )
        .with_projects(Projects::new(projects).with_memos(Arc::clone(&self.memos)))
        .with_rollouts_ended(self.rollouts_ended.state())
    }

    /// Ticks after every change the watches see.
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<()> {
        self.changes.subscribe()
    }

    /// The namespace watched.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
}

/// Keeps `writer`'s store in step with what `api` lists with `config` (retrying with backoff),
/// ticking `changes` after every event.
async fn reflect<K>(
    writer: reflector::store::Writer<K>,
    api: Api<K>,
    config: watcher::Config,
    changes: broadcast::Sender<()>,
) where
    K: Resource<DynamicType = ()>
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let events = watcher::watcher(api, config)
        .modify(|object| object.meta_mut().managed_fields = None)
        .default_backoff();
    reflector::reflector(writer, events)
        .for_each(|event| {
            match event {
                Ok(_) => {
                    // No viewer connected is not an error.
                    let _ = changes.send(());
                }
                Err(error) => tracing::debug!("web view watch: {error}"),
            }
            futures::future::ready(())
        })
        .await;
}
