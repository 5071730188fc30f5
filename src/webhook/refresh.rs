//! What a verified push does: when an Application or ApplicationSet follows a revision it moves,
//! the repository cache forgets its fetches of the pushed repositories ([`RepoCache::expire`]),
//! so their next resolve fetches; then every Application of the managed namespaces with a source
//! in one of them whose `targetRevision` the push moves ([`PushedRefs::touches`]) gets the
//! annotation `flotilla.dev/refresh` set to the time of the push (by [`super::refresh_queue`],
//! after the webhook is answered), and every ApplicationSet with a git generator reading one of
//! them at a revision the push moves, or owning such an Application, gets it too, before the
//! answer (the ApplicationSet controller removes it once regenerated). The watches of both
//! controllers see those writes at once: the Applications compare with the new commit, the
//! ApplicationSets regenerate and move their rollouts to it. A push nothing follows changes
//! nothing, not even the cache. A verified pull-request event annotates the ApplicationSets with
//! a `pullRequest` generator listing its repository
//! ([`super::pull_request_generators::lists_pull_requests_of`]): they list the pull requests
//! again at once instead of after `requeueAfterSeconds`. The writes go through the Lease-free
//! client, so a standby replica that receives a webhook still announces it to the leader.

use std::collections::BTreeSet;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, Client, ResourceExt};
use serde_json::Value;
use tokio::sync::watch;

use super::pull_request_event::PullRequestEvent;
use super::pull_request_generators::lists_pull_requests_of;
use super::pushed_refs::PushedRefs;
use super::repo_url::RepoKey;
use crate::cluster::api_server::api_error::ApiError;
use crate::repo::cache::RepoCache;
use flotilla_core::api::REFRESH_ANNOTATION;
use flotilla_core::api::{APPLICATION_SET_LABEL, Application, ApplicationSet};

/// Annotation writes in flight at once.
const CONCURRENT_WRITES: usize = 16;

/// Where pushes are announced.
#[derive(Clone)]
pub struct Refresher {
    /// A client whose writes do not need the Lease.
    pub client: Client,
    /// The namespace of the ApplicationSets (and of Applications).
    pub namespace: String,
    /// The namespaces whose Applications are managed (the control namespace among them).
    pub app_namespaces: watch::Receiver<Vec<String>>,
    pub repos: Arc<RepoCache>,
}

/// What one push refreshed at once, and the Applications it has yet to annotate.
#[derive(Debug)]
pub struct Refreshing {
    /// ApplicationSets annotated.
    pub application_sets: Vec<String>,
    /// The Applications to annotate ([`Refresher::refresh_applications`]).
    pub applications: ApplicationRefresh,
}

/// The Applications one push moved, to be annotated with its time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplicationRefresh {
    stamp: String,
    /// The names, by namespace.
    names: Vec<(String, Vec<String>)>,
}

impl ApplicationRefresh {
    /// How many Applications.
    #[must_use]
    pub fn len(&self) -> usize {
        self.names.iter().map(|(_, names)| names.len()).sum()
    }

    /// Whether there are none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A list or an annotation write failed.
#[derive(Debug, thiserror::Error)]
pub enum RefreshError {
    #[error("listing the {kind}s of namespace {namespace}: {error}")]
    List {
        kind: &'static str,
        namespace: String,
        #[source]
        error: ApiError,
    },
    #[error("annotating {kind} {namespace}/{name}: {error}")]
    Annotate {
        kind: &'static str,
        namespace: String,
        name: String,
        #[source]
        error: ApiError,
    },
}

impl Refresher {
    /// Refreshes what reads the repositories `pushed` at a revision `refs` moves: forgets their
    /// fetches (when there is such a reader), annotates the ApplicationSets, and finds the Applications, which it leaves to
    /// [`Self::refresh_applications`] (a push may move thousands: a git host does not wait
    /// for as many writes).
    ///
    /// # Errors
    /// Listing or annotating failed; what was annotated before stays annotated.
    pub async fn refresh(
        &self,
        pushed: &[RepoKey],
        refs: &PushedRefs,
    ) -> Result<Refreshing, RefreshError> {
        let pushed: BTreeSet<&RepoKey> = pushed.iter().collect();
        let reads = |url: &str| RepoKey::of(url).is_some_and(|key| pushed.contains(&key));
        let moved = |url: &str, revision: &str| reads(url) && refs.touches(revision);
        let stamp = Timestamp::now().to_string();
        let mut owners = BTreeSet::new();
        let mut names = Vec::new();
        let namespaces = self.app_namespaces.borrow().clone();
        for namespace in namespaces {
            let api: Api<Application> = Api::namespaced(self.client.clone(), &namespace);
            let apps =
                api.list(&ListParams::default())
                    .await
                    .map_err(|error| RefreshError::List {
                        kind: "Application",
                        namespace: namespace.clone(),
                        error: error.into(),
                    })?;
            let moved_apps: Vec<String> = apps
                .items
                .iter()
                .filter(|app| {
                    std::iter::once(&app.spec.source)
                        .chain(&app.spec.sources)
                        .any(|source| moved(&source.repo_url, &source.target_revision))
                })
                .inspect(|app| {
                    if namespace == self.namespace
                        && let Some(owner) = app.labels().get(APPLICATION_SET_LABEL)
                    {
                        owners.insert(owner.clone());
                    }
                })
                .map(ResourceExt::name_any)
                .collect();
            if !moved_apps.is_empty() {
                names.push((namespace, moved_apps));
            }
        }
        let application_sets = self
            .application_sets_where(|appset| {
                owners.contains(&appset.name_any())
                    || git_generator_sources(appset)
                        .iter()
                        .any(|(url, revision)| moved(url, revision))
            })
            .await?;
        // A push nothing follows leaves the cache as it is: what reads the repositories at
        // other revisions keeps its fetches until `--repo-refresh` says.
        if !(names.is_empty() && application_sets.is_empty()) {
            self.repos.expire(reads);
        }
        // ApplicationSets first: their rollouts start from the new commit without waiting for
        // their Applications.
        self.annotate_application_sets(&stamp, &application_sets)
            .await?;
        Ok(Refreshing {
            application_sets,
            applications: ApplicationRefresh { stamp, names },
        })
    }

    /// Annotates the Applications of `refresh`, a few at a time, each whatever became of the
    /// others; the writes that failed.
    pub async fn refresh_applications(&self, refresh: &ApplicationRefresh) -> Vec<RefreshError> {
        let mut failed = Vec::new();
        for (namespace, names) in &refresh.names {
            let api: Api<Application> = Api::namespaced(self.client.clone(), namespace);
            failed.extend(annotate(&api, "Application", namespace, names, &refresh.stamp).await);
        }
        failed
    }

    /// Refreshes the ApplicationSets whose `pullRequest` generators list the repository of
    /// `event`; their names.
    ///
    /// # Errors
    /// Listing or annotating failed; what was annotated before stays annotated.
    pub async fn refresh_pull_requests(
        &self,
        event: &PullRequestEvent,
    ) -> Result<Vec<String>, RefreshError> {
        let stamp = Timestamp::now().to_string();
        let names = self
            .application_sets_where(|appset| lists_pull_requests_of(&appset.spec.generators, event))
            .await?;
        self.annotate_application_sets(&stamp, &names).await?;
        Ok(names)
    }

    /// The names of the ApplicationSets of the namespace that `refreshes`.
    async fn application_sets_where(
        &self,
        refreshes: impl Fn(&ApplicationSet) -> bool,
    ) -> Result<Vec<String>, RefreshError> {
        let api: Api<ApplicationSet> = Api::namespaced(self.client.clone(), &self.namespace);
        let appsets =
            api.list(&ListParams::default())
                .await
                .map_err(|error| RefreshError::List {
                    kind: "ApplicationSet",
                    namespace: self.namespace.clone(),
                    error: error.into(),
                })?;
        Ok(appsets
            .items
            .iter()
            .filter(|appset| refreshes(appset))
            .map(ResourceExt::name_any)
            .collect())
    }

    /// Annotates with `stamp` the ApplicationSets `names` of the namespace.
    async fn annotate_application_sets(
        &self,
        stamp: &str,
        names: &[String],
    ) -> Result<(), RefreshError> {
        let api: Api<ApplicationSet> = Api::namespaced(self.client.clone(), &self.namespace);
        match annotate(&api, "ApplicationSet", &self.namespace, names, stamp)
            .await
            .into_iter()
            .next()
        {
            Some(failed) => Err(failed),
            None => Ok(()),
        }
    }
}

/// Sets [`REFRESH_ANNOTATION`] to `stamp` on the objects `names` of `api`, a few at a time; the
/// writes that failed.
async fn annotate<K>(
    api: &Api<K>,
    kind: &'static str,
    namespace: &str,
    names: &[String],
    stamp: &str,
) -> Vec<RefreshError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let patch = serde_json::json!({"metadata": {"annotations": {REFRESH_ANNOTATION: stamp}}});
    // Collected first: a stream over a closure of borrowed names is not `Send` to the compiler.
    let writes: Vec<_> = names
        .iter()
        .map(|name| {
            let (api, patch, name) = (api.clone(), patch.clone(), name.clone());
            let namespace = namespace.to_owned();
            async move {
                api.patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                    .map(drop)
                    .map_err(|error| RefreshError::Annotate {
                        kind,
                        namespace,
                        name,
                        error: error.into(),
                    })
            }
        })
        .collect();
    futures::stream::iter(writes)
        .buffer_unordered(CONCURRENT_WRITES)
        .filter_map(|written| std::future::ready(written.err()))
        .collect()
        .await
}

/// The `repoURL` and `revision` (empty when not set) of each git generator of `appset`,
/// nested in matrix and merge generators too.
fn git_generator_sources(appset: &ApplicationSet) -> Vec<(String, String)> {
    let mut sources = Vec::new();
    if let Ok(generators) = serde_json::to_value(&appset.spec.generators) {
        collect_git_sources(&generators, &mut sources);
    }
    sources
}

/// Every `git.repoURL` string under `value`, with its `git.revision`.
fn collect_git_sources(value: &Value, sources: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            let git = map.get("git");
            if let Some(url) = git
                .and_then(|git| git.get("repoURL"))
                .and_then(Value::as_str)
            {
                let revision = git
                    .and_then(|git| git.get("revision"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                sources.push((url.to_owned(), revision.to_owned()));
            }
            map.values()
                .for_each(|value| collect_git_sources(value, sources));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|value| collect_git_sources(value, sources)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn git_generators_are_found_inside_matrix_and_merge() {
        let generators = json!([
            {"list": {"elements": [{"repoURL": "https://not/a-generator"}]}},
            {"matrix": {"generators": [
                {"git": {"repoURL": "https://git.example.com/acme/apps.git", "revision": "main"}},
                {"merge": {"generators": [
                    {"git": {"repoURL": "git@git.example.com:acme/config", "files": []}}
                ]}}
            ]}}
        ]);
        let mut sources = Vec::new();
        collect_git_sources(&generators, &mut sources);
        assert_eq!(
            sources,
            [
                (
                    "https://git.example.com/acme/apps.git".to_owned(),
                    "main".to_owned()
                ),
                ("git@git.example.com:acme/config".to_owned(), String::new())
            ]
        );
    }
}
